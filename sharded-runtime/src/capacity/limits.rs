//! What one partition key value can take: DynamoDB's per-partition limits.

/// The throughput one partition key value can take, in capacity units per second.
///
/// DynamoDB caps every partition key value at 1,000 write units and 3,000 read units per
/// second, whatever the table's capacity; that is what sharding works around. The planner
/// plans against these limits, the hot-key report measures utilisation against them, and the
/// test kit's per-key emulator enforces them: give all three the same value and they agree.
///
/// ```
/// use sharded::capacity::PerKeyLimits;
/// let limits = PerKeyLimits::default();
/// assert_eq!((limits.write_units_per_second, limits.read_units_per_second), (1_000.0, 3_000.0));
/// let tenth = PerKeyLimits::scaled(0.1);
/// assert_eq!((tenth.write_units_per_second, tenth.read_units_per_second), (100.0, 300.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerKeyLimits {
    /// Write units per second one key takes (DynamoDB: 1,000).
    pub write_units_per_second: f64,
    /// Read units per second one key takes (DynamoDB: 3,000).
    pub read_units_per_second: f64,
}

impl PerKeyLimits {
    /// DynamoDB's per-partition limits: 1,000 WCU/s and 3,000 RCU/s.
    pub const DYNAMODB: PerKeyLimits = PerKeyLimits {
        write_units_per_second: 1_000.0,
        read_units_per_second: 3_000.0,
    };

    /// Limits of `write_units_per_second` and `read_units_per_second`.
    ///
    /// ```
    /// let l = sharded::capacity::PerKeyLimits::new(10.0, 30.0);
    /// assert_eq!(l.write_units_per_second, 10.0);
    /// ```
    pub const fn new(write_units_per_second: f64, read_units_per_second: f64) -> Self {
        PerKeyLimits {
            write_units_per_second,
            read_units_per_second,
        }
    }

    /// DynamoDB's limits times `factor`: a scaled-down table where a small load shows the
    /// same behaviour as a large one on real DynamoDB.
    pub fn scaled(factor: f64) -> Self {
        PerKeyLimits::new(
            Self::DYNAMODB.write_units_per_second * factor,
            Self::DYNAMODB.read_units_per_second * factor,
        )
    }
}

impl Default for PerKeyLimits {
    fn default() -> Self {
        Self::DYNAMODB
    }
}
