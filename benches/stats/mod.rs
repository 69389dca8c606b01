//! The statistics the benchmarks report: one definition of the median for all of them.
//!
//! Not a benchmark target itself (cargo only discovers `benches/*.rs` and
//! `benches/*/main.rs`); a bench includes it with `mod stats;`.

/// The median of `values` (the upper one of the two middle values for an even count).
/// Panics on an empty slice: every benchmark measures at least one round.
pub fn median<T: Copy + PartialOrd>(values: &[T]) -> T {
    let mut sorted = values.to_vec();
    // Timings and sizes are never NaN; an incomparable pair would keep its order.
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    sorted[sorted.len() / 2]
}
