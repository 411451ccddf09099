import Foundation

/// Prints figures as a table or as JSON.
struct Report {
    var figures: [Figure]

    func print(json: Bool) {
        if json {
            printJSON()
        } else {
            printTable()
        }
    }

    private func printTable() {
        var rows: [[String]] = [["group", "measure", "value", "baseline", "ratio", "target", ""]]
        for figure in figures {
            let baseline = figure.baseline.map { "\($0.name): \(Figure.format($0.value)) \(figure.unit)" } ?? ""
            let ratio = figure.ratio.map { Figure.format($0) + "×" } ?? ""
            let verdict: String
            switch figure.meetsTarget {
            case .some(true): verdict = "ok"
            case .some(false): verdict = "MISSED"
            case .none: verdict = ""
            }
            rows.append([
                figure.group, figure.name, "\(Figure.format(figure.value)) \(figure.unit)",
                baseline, ratio, figure.targetText, verdict,
            ])
        }
        let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let line = zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }
            Swift.print(line.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
    }

    private func printJSON() {
        let objects: [[String: Any]] = figures.map { figure in
            var object: [String: Any] = [
                "group": figure.group, "name": figure.name,
                "value": figure.value, "unit": figure.unit,
            ]
            if let baseline = figure.baseline {
                object["baseline"] = ["name": baseline.name, "value": baseline.value]
            }
            if let ratio = figure.ratio { object["ratio"] = ratio }
            if figure.target != nil {
                object["target"] = figure.targetText
                object["meets_target"] = figure.meetsTarget ?? false
            }
            return object
        }
        let data = try! JSONSerialization.data(
            withJSONObject: ["figures": objects], options: [.prettyPrinted, .sortedKeys])
        Swift.print(String(decoding: data, as: UTF8.self))
    }
}
