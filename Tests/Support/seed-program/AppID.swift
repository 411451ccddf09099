// The seed page's placeholder for the app id, defined here so that
// main.swift is the page's code exactly (Stream Data to Atlas - Swift SDK),
// with `import DataIngest` as its only addition: the one line a port changes.
// The tests set APP_ID to the development server's app id.
import Foundation

let INSERT_APP_ID_HERE = ProcessInfo.processInfo.environment["APP_ID"] ?? "missing-APP_ID"
