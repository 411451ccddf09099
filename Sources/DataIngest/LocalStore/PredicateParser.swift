import IngestCore

/// Parses the predicate syntax of ``LocalPredicate`` into a
/// ``PredicateNode``. Recursive descent with a depth bound, so a hostile
/// string cannot exhaust the stack.
struct PredicateParser {
    enum Token: Equatable {
        case word(String)  // a key path or a keyword
        case string(String)
        case integer(Int64)
        case double(Double)
        case argument  // %@
        case keyPathArgument  // %K
        case symbol(String)  // operators and punctuation
        case modifier(String)  // [c]
        case end
    }

    static let maximumDepth = 64

    private let format: String
    private var tokens: [(token: Token, position: Int)] = []
    private var index = 0
    private var arguments: [Any]
    private var nextArgument = 0
    private var depth = 0

    init(format: String, arguments: [Any]) throws(LocalStoreError) {
        self.format = format
        self.arguments = arguments
        tokens = try Self.tokenize(format)
    }

    mutating func parse() throws(LocalStoreError) -> PredicateNode {
        let node = try parseOr()
        guard case .end = current else { throw failure("unexpected \(describe(current)) after a complete predicate") }
        if nextArgument < arguments.count {
            throw failure(
                "\(arguments.count) arguments were given but the predicate uses \(nextArgument); remove the extra arguments or add %@ placeholders"
            )
        }
        return node
    }

    // MARK: Grammar

    private var current: Token { tokens[index].token }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func keyword(_ token: Token) -> String? {
        if case .word(let word) = token { return word.uppercased() }
        return nil
    }

    private mutating func parseOr() throws(LocalStoreError) -> PredicateNode {
        var node = try parseAnd()
        while keyword(current) == "OR" || current == .symbol("||") {
            advance()
            node = .or(node, try parseAnd())
        }
        return node
    }

    private mutating func parseAnd() throws(LocalStoreError) -> PredicateNode {
        var node = try parseNot()
        while keyword(current) == "AND" || current == .symbol("&&") {
            advance()
            node = .and(node, try parseNot())
        }
        return node
    }

    private mutating func parseNot() throws(LocalStoreError) -> PredicateNode {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw failure("the predicate is nested more than \(Self.maximumDepth) levels deep; simplify it")
        }
        if keyword(current) == "NOT" || current == .symbol("!") {
            advance()
            return .not(try parseNot())
        }
        if current == .symbol("(") {
            advance()
            let inner = try parseOr()
            guard current == .symbol(")") else { throw failure("expected ')' but found \(describe(current))") }
            advance()
            return inner
        }
        switch keyword(current) {
        case "TRUEPREDICATE":
            advance()
            return .constant(true)
        case "FALSEPREDICATE":
            advance()
            return .constant(false)
        default:
            return try parseComparison()
        }
    }

    private mutating func parseComparison() throws(LocalStoreError) -> PredicateNode {
        let keyPath: String
        switch current {
        case .word(let word) where !Self.reserved.contains(word.uppercased()):
            keyPath = word
        case .keyPathArgument:
            guard case .string(let name)? = try takeArgument() else {
                throw failure("the argument for %K must be a String naming a property")
            }
            keyPath = name
        default:
            throw failure("expected a property name but found \(describe(current)); a comparison is written 'property == value'")
        }
        advance()

        let op: PredicateNode.Operator
        switch current {
        case .symbol("=="), .symbol("="): op = .equal
        case .symbol("!="), .symbol("<>"): op = .notEqual
        case .symbol("<"): op = .less
        case .symbol("<="), .symbol("=<"): op = .lessOrEqual
        case .symbol(">"): op = .greater
        case .symbol(">="), .symbol("=>"): op = .greaterOrEqual
        default:
            switch keyword(current) {
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            case "LIKE": op = .like
            case "IN": op = .in
            default:
                throw failure(
                    "expected an operator after '\(keyPath)' but found \(describe(current)); use ==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE or IN"
                )
            }
        }
        advance()

        var caseInsensitive = false
        if case .modifier(let options) = current {
            guard options == "c" else {
                throw failure("the modifier [\(options)] is not supported; only [c] (case-insensitive) is")
            }
            guard op.isStringOperator || op == .equal || op == .notEqual else {
                throw failure("[c] applies to ==, !=, BEGINSWITH, ENDSWITH, CONTAINS and LIKE, not \(op.rawValue)")
            }
            caseInsensitive = true
            advance()
        }

        let value: BSON
        if op == .in, current == .symbol("{") {
            value = try parseList()
        } else {
            value = try parseValue()
        }
        if op == .in, case .array = value {
        } else if op == .in {
            throw failure("IN needs a list: write '\(keyPath) IN {1, 2}' or pass an array for %@")
        }
        return .comparison(keyPath: keyPath, op: op, caseInsensitive: caseInsensitive, value: value)
    }

    private mutating func parseList() throws(LocalStoreError) -> BSON {
        advance()  // {
        var elements: [BSON] = []
        if current == .symbol("}") {
            advance()
            return .array([])
        }
        while true {
            elements.append(try parseValue())
            if current == .symbol(",") { advance(); continue }
            guard current == .symbol("}") else { throw failure("expected ',' or '}' in a list but found \(describe(current))") }
            advance()
            return .array(elements)
        }
    }

    private mutating func parseValue() throws(LocalStoreError) -> BSON {
        let value: BSON
        switch current {
        case .argument:
            guard let argument = try takeArgument() else {
                throw failure(
                    "argument \(nextArgument) has a type that cannot be compared: pass a String, Bool, integer, Float, Double, Date, Data, ObjectId, UUID, Decimal128 or nil"
                )
            }
            value = argument
        case .string(let text): value = .string(text)
        case .integer(let number): value = .int64(number)
        case .double(let number): value = .double(number)
        default:
            switch keyword(current) {
            case "TRUE", "YES": value = .bool(true)
            case "FALSE", "NO": value = .bool(false)
            case "NIL", "NULL": value = .null
            default: throw failure("expected a value but found \(describe(current)); quote text ('text') or pass it as %@")
            }
        }
        advance()
        return value
    }

    private mutating func takeArgument() throws(LocalStoreError) -> BSON? {
        guard nextArgument < arguments.count else {
            throw failure(
                "the predicate uses more placeholders than the \(arguments.count) arguments given; pass one argument per %@ or %K")
        }
        defer { nextArgument += 1 }
        return BSON.localArgument(arguments[nextArgument])
    }

    private static let reserved: Set<String> = [
        "AND", "OR", "NOT", "TRUEPREDICATE", "FALSEPREDICATE", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "IN",
        "TRUE", "FALSE", "YES", "NO", "NIL", "NULL",
    ]

    // MARK: Errors

    private func describe(_ token: Token) -> String {
        switch token {
        case .word(let word): return "'\(word)'"
        case .string: return "a string"
        case .integer(let number): return "the number \(number)"
        case .double(let number): return "the number \(number)"
        case .argument: return "%@"
        case .keyPathArgument: return "%K"
        case .symbol(let symbol): return "'\(symbol)'"
        case .modifier(let options): return "[\(options)]"
        case .end: return "the end of the predicate"
        }
    }

    private func failure(_ reason: String) -> LocalStoreError {
        Self.failure(format, position: tokens.isEmpty ? 0 : tokens[index].position, reason)
    }

    private static func failure(_ format: String, position: Int, _ reason: String) -> LocalStoreError {
        LocalStoreError(.invalidPredicate, message: "invalid predicate \"\(format)\" at character \(position): \(reason)")
    }

    // MARK: Tokens

    private static func tokenize(_ format: String) throws(LocalStoreError) -> [(token: Token, position: Int)] {
        let characters = Array(format.unicodeScalars)
        var tokens: [(token: Token, position: Int)] = []
        var position = 0
        func isWordStart(_ c: Unicode.Scalar) -> Bool { c == "_" || c.properties.isAlphabetic }
        func isWordPart(_ c: Unicode.Scalar) -> Bool { isWordStart(c) || ("0"..."9").contains(c) || c == "." }
        while position < characters.count {
            let c = characters[position]
            let start = position
            if c.properties.isWhitespace {
                position += 1
                continue
            }
            if isWordStart(c) {
                while position < characters.count && isWordPart(characters[position]) { position += 1 }
                tokens.append((.word(String(String.UnicodeScalarView(characters[start..<position]))), start))
                continue
            }
            if ("0"..."9").contains(c) || (c == "-" && position + 1 < characters.count && ("0"..."9").contains(characters[position + 1])) {
                func isDigit(_ at: Int) -> Bool { at < characters.count && ("0"..."9").contains(characters[at]) }
                position += 1
                var isDouble = false
                while isDigit(position) { position += 1 }
                if position < characters.count && characters[position] == "." && isDigit(position + 1) {
                    isDouble = true
                    position += 1
                    while isDigit(position) { position += 1 }
                }
                if position < characters.count && (characters[position] == "e" || characters[position] == "E") {
                    let sign = position + 1 < characters.count && (characters[position + 1] == "+" || characters[position + 1] == "-")
                    if isDigit(position + (sign ? 2 : 1)) {
                        isDouble = true
                        position += sign ? 2 : 1
                        while isDigit(position) { position += 1 }
                    }
                }
                let text = String(String.UnicodeScalarView(characters[start..<position]))
                if !isDouble, let number = Int64(text) {
                    tokens.append((.integer(number), start))
                } else if let number = Double(text) {
                    tokens.append((.double(number), start))
                } else {
                    throw failure(format, position: start, "'\(text)' is not a number")
                }
                continue
            }
            if c == "'" || c == "\"" {
                position += 1
                var text = String.UnicodeScalarView()
                var closed = false
                while position < characters.count {
                    let d = characters[position]
                    position += 1
                    if d == c { closed = true; break }
                    if d == "\\" && position < characters.count {
                        let escaped = characters[position]
                        position += 1
                        switch escaped {
                        case "n": text.append("\n")
                        case "t": text.append("\t")
                        case "r": text.append("\r")
                        default: text.append(escaped)
                        }
                        continue
                    }
                    text.append(d)
                }
                guard closed else { throw failure(format, position: start, "the string is not closed; end it with \(c)") }
                tokens.append((.string(String(text)), start))
                continue
            }
            if c == "%" {
                guard position + 1 < characters.count else { throw failure(format, position: start, "'%' must be followed by @ or K") }
                switch characters[position + 1] {
                case "@": tokens.append((.argument, start))
                case "K": tokens.append((.keyPathArgument, start))
                default:
                    throw failure(
                        format, position: start,
                        "'%\(characters[position + 1])' is not a placeholder; use %@ for values and %K for property names")
                }
                position += 2
                continue
            }
            if c == "[" {
                var options = String.UnicodeScalarView()
                position += 1
                while position < characters.count && characters[position] != "]" {
                    options.append(characters[position])
                    position += 1
                }
                guard position < characters.count else { throw failure(format, position: start, "'[' is not closed") }
                position += 1
                tokens.append((.modifier(String(options).lowercased()), start))
                continue
            }
            let twoCharacter = position + 1 < characters.count ? String(String.UnicodeScalarView([c, characters[position + 1]])) : ""
            if ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||"].contains(twoCharacter) {
                tokens.append((.symbol(twoCharacter), start))
                position += 2
                continue
            }
            if "=<>!(){},".unicodeScalars.contains(c) {
                tokens.append((.symbol(String(c)), start))
                position += 1
                continue
            }
            throw failure(format, position: start, "unexpected character '\(c)'")
        }
        tokens.append((.end, characters.count))
        return tokens
    }
}
