import Foundation
import Testing
@testable import IngestCore
import IngestTestSupport

@Suite struct Decimal128Tests {
    @Test func parsesAndPrintsExactly() throws {
        let cases: [(String, String)] = [
            ("19.90", "19.90"),
            ("2.000", "2.000"),
            ("-0", "-0"),
            ("-.0", "-0.0"),
            ("+12.76", "12.76"),
            ("0.000001", "0.000001"),  // adjusted exponent -6: plain
            ("0.0000001", "1E-7"),  // adjusted exponent -7: scientific
            ("0.00000012", "1.2E-7"),
            ("1E3", "1E+3"),
            ("1050E+1", "1.050E+4"),
            ("0E+3", "0E+3"),
            ("1E6112", "1.0E+6112"),  // clamped by appending a zero
            ("0E+2147483647", "0E+6111"),  // zero exponent clamped
            ("10E-6177", "1E-6176"),  // trailing zero removed
            ("inf", "Infinity"),
            ("-Infinity", "-Infinity"),
            ("nAn", "NaN"),
        ]
        for (input, printed) in cases {
            let value = try Decimal128(parsing: input)
            #expect(value.description == printed, "\(input)")
            #expect(try Decimal128(parsing: printed) == value, "\(printed) reparses to the same bits")
        }
    }

    @Test func bitsFollowTheBIDLayout() throws {
        let one = try Decimal128(parsing: "1")
        #expect(one.high == 0x3040_0000_0000_0000 && one.low == 1)
        #expect(one == Decimal128(1) && one == Decimal128.init(1 as Int64))
        let minusOneTenth = try Decimal128(parsing: "-0.1")
        #expect(minusOneTenth.high == 0xB03E_0000_0000_0000 && minusOneTenth.low == 1)
        #expect(Decimal128(-7).description == "-7")
        let largest = try Decimal128(parsing: "9.999999999999999999999999999999999E+6144")
        #expect(largest.finiteComponents?.coefficient == Decimal128.maxCoefficient)
        #expect(largest.finiteComponents?.exponent == Decimal128.maxExponent)
        #expect(Decimal128.nan.isNaN && !Decimal128.nan.isFinite)
        #expect(Decimal128.negativeInfinity.isInfinite && Decimal128.negativeInfinity.isSignMinus)
        // A non-canonical coefficient (above 34 nines) reads as zero.
        let nonCanonical = Decimal128(high: 0x3041_ED09_BEAD_87C0, low: 0x378D_8E64_0000_0000)
        #expect(nonCanonical.finiteComponents?.coefficient == 0)
    }

    @Test func hashingAndEqualityAreByBits() throws {
        let two = try Decimal128(parsing: "2")
        let twoPointZero = try Decimal128(parsing: "2.000")
        #expect(two != twoPointZero)
        #expect(Set([two, twoPointZero, try Decimal128(parsing: "2")]).count == 2)
    }

    @Test func rejectsWhatWouldRoundOrIsNotANumber() {
        let cases: [(String, Decimal128Error.Code)] = [
            ("", .syntax), ("1e", .syntax), (" 1", .syntax), ("1 ", .syntax), ("1..2", .syntax),
            ("Infinit", .syntax), ("-9Inf", .syntax), ("0x10", .syntax), ("1,5", .syntax),
            ("1E-6177", .inexact),
            ("1.11111111111111111111111111111234549", .inexact),
            ("100000000000000000000000000000000000000000000000000000000001", .inexact),
            ("7e10000", .overflow), ("-7e10000", .overflow),
        ]
        for (input, code) in cases {
            #expect(throws: Decimal128Error.self, "\(input)") { try Decimal128(parsing: input) }
            do {
                _ = try Decimal128(parsing: input)
            } catch {
                #expect(error.code == code, "\(input): \(error)")
            }
        }
    }

    @Test func componentsInitializerIsExact() throws {
        let cents = try Decimal128(isNegative: false, coefficient: 1990, exponent: -2)
        #expect(cents.description == "19.90")
        let clamped = try Decimal128(isNegative: true, coefficient: 1, exponent: 6112)
        #expect(clamped.description == "-1.0E+6112")
        #expect(throws: Decimal128Error.self) {
            try Decimal128(isNegative: false, coefficient: 12_345, exponent: -6180)
        }
        #expect(throws: Decimal128Error.self) {
            try Decimal128(isNegative: false, coefficient: Decimal128.maxCoefficient, exponent: 6112)
        }
    }

    @Test func randomFiniteValuesRoundTripThroughText() throws {
        var random = SplitMix64(state: 0xDEC1_28)
        for _ in 0..<3000 {
            let digits = Int.random(in: 1...34, using: &random)
            var coefficient: UInt128 = 0
            for _ in 0..<digits { coefficient = coefficient * 10 + UInt128(Int.random(in: 0...9, using: &random)) }
            let exponent = Int.random(in: Decimal128.minExponent...Decimal128.maxExponent, using: &random)
            let value = try Decimal128(isNegative: Bool.random(using: &random), coefficient: coefficient, exponent: exponent)
            let text = value.description
            #expect(try Decimal128(parsing: text) == value, "\(text)")
        }
    }

    @Test func convertsToAndFromFoundationDecimalWhereExact() throws {
        for text in ["123.45", "-0.001", "1050", "0", "99999999999999999999999999999999.99"] {
            let decimal = try #require(Decimal(string: text))
            let converted = try Decimal128(exactly: decimal)
            #expect(try Decimal(exactly: converted) == decimal, "\(text)")
        }
        #expect(try Decimal128(exactly: Decimal(string: "123.45")!).description == "123.45")
        #expect(try Decimal(exactly: Decimal128(parsing: "1.05E+3")) == Decimal(1050))
        #expect(try Decimal(exactly: Decimal128(parsing: "-1.00E-8")) == Decimal(string: "-0.00000001"))
        #expect(try Decimal(exactly: Decimal128(parsing: "1E+127")) == Decimal(sign: .plus, exponent: 127, significand: 1))
        #expect(try Decimal(exactly: Decimal128(parsing: "1.234567890123456789012345678901234E+160")).exponent == 127)
        // Trailing zeros are dropped to bring the exponent into range.
        #expect(try Decimal(exactly: Decimal128(parsing: "100E-130")) == Decimal(sign: .plus, exponent: -128, significand: 1))
        #expect(try Decimal(exactly: Decimal128(parsing: "NaN")).isNaN)
        #expect(try Decimal128(exactly: Decimal.nan).isNaN)

        // Not representable: infinity, exponents Decimal cannot reach.
        for text in ["Infinity", "-Infinity", "1E+6000", "1E-6000", "1E+130", "1.234567890123456789012345678901234E+170"] {
            #expect(throws: Decimal128Error.self, "\(text)") { try Decimal(exactly: Decimal128(parsing: text)) }
        }
        // 38 significant digits do not fit 34.
        let wide = try #require(Decimal(string: "12345678901234567890123456789012345678"))
        #expect(throws: Decimal128Error.self) { try Decimal128(exactly: wide) }
    }
}

@Suite struct Decimal128CodableTests {
    struct Invoice: Codable, Equatable {
        var total: Decimal128
        var quantity: Decimal128
    }

    @Test func codesAsTheExactDecimalString() throws {
        let invoice = Invoice(total: try Decimal128(parsing: "19.90"), quantity: 12)
        let data = try JSONEncoder().encode(invoice)
        #expect(String(decoding: data, as: UTF8.self).contains(#""19.90""#))
        #expect(try JSONDecoder().decode(Invoice.self, from: data) == invoice)
        let bad = Data(#"{"total": "19.9.0", "quantity": "1"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Invoice.self, from: bad) }
    }
}
