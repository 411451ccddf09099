extension Int64 {
    /// `self + other`, clamped to `Int64.min...Int64.max` instead of trapping.
    ///
    /// Token claims (`exp`, `iat`, `nbf`) are numbers the sender chooses; time
    /// arithmetic on them must not overflow, e.g. `exp` = 2^63 - 1 plus the leeway.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, clamped to `Int64.min...Int64.max` instead of trapping.
    func saturatingSubtract(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}
