#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A path or a glob of files to follow: `*` and `?` match within one path
/// component, `**` any number of components (`/var/log/**/*.log`), `[...]`
/// a character class. A pattern without wildcards names one file.
struct PathPattern {
    let pattern: String
    /// The longest leading directory without wildcards, where the walk starts.
    let base: String
    private let regex: NSRegularExpression?
    /// Components below `base` the walk descends (unbounded with `**`, up to 32).
    private let depth: Int

    init(_ pattern: String) {
        self.pattern = pattern
        let components = pattern.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let wild = components.firstIndex { $0.contains(where: { "*?[".contains($0) }) }
        guard let wild else {
            base = (pattern as NSString).deletingLastPathComponent
            regex = nil
            depth = 0
            return
        }
        let prefix = components[..<wild].joined(separator: "/")
        base = prefix.isEmpty ? (pattern.hasPrefix("/") ? "/" : ".") : prefix
        depth = components[wild...].contains("**") ? 32 : components.count - wild
        var expression = "^"
        var characters = Array(pattern)
        var i = 0
        while i < characters.count {
            let c = characters[i]
            if c == "*" && i + 1 < characters.count && characters[i + 1] == "*" {
                if i + 2 < characters.count && characters[i + 2] == "/" {
                    expression += "(?:.*/)?"
                    i += 3
                } else {
                    expression += ".*"
                    i += 2
                }
                continue
            }
            switch c {
            case "*": expression += "[^/]*"
            case "?": expression += "[^/]"
            case "[":
                if let close = characters[(i + 1)...].firstIndex(of: "]") {
                    var set = String(characters[(i + 1)..<close])
                    if set.hasPrefix("!") { set = "^" + set.dropFirst() }
                    expression += "[" + set.replacingOccurrences(of: "\\", with: "\\\\") + "]"
                    i = close + 1
                    continue
                }
                expression += "\\["
            default: expression += NSRegularExpression.escapedPattern(for: String(c))
            }
            i += 1
        }
        characters.removeAll()
        regex = try? NSRegularExpression(pattern: expression + "$")
    }

    var hasWildcards: Bool { regex != nil }

    func matches(_ path: String) -> Bool {
        guard let regex else { return path == pattern }
        return regex.firstMatch(in: path, range: NSRange(path.startIndex..., in: path)) != nil
    }

    /// The regular files the pattern names now, sorted.
    func expand() -> [String] {
        var directories: Set<String> = []
        return expand(directories: &directories)
    }

    /// The regular files the pattern names now, sorted; adds to
    /// `directories` those a new file could appear in (for inotify watches).
    func expand(directories: inout Set<String>) -> [String] {
        guard hasWildcards else {
            directories.insert(base.isEmpty ? "." : base)
            return [pattern]
        }
        var found: [String] = []
        walk(base, remaining: depth, into: &found, directories: &directories)
        return found.sorted()
    }

    private func walk(_ directory: String, remaining: Int, into found: inout [String], directories: inout Set<String>) {
        guard remaining > 0, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        directories.insert(directory)
        for name in names {
            let path = directory == "/" ? "/" + name : directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR {
                walk(path, remaining: remaining - 1, into: &found, directories: &directories)
            } else if info.st_mode & S_IFMT == S_IFREG, matches(path) {
                found.append(path)
            }
        }
    }
}
