//! The k-way merge: N sorted shard results into one ordered answer, in DynamoDB's own order.
//!
//! Each shard's Query returns items already sorted by the sort key, so the merge only ever
//! compares the N shard heads: a binary heap of N entries, `O(log N)` per emitted item.
//! Concatenating and sorting everything (the common hand-written way) costs
//! `O(N·k·log(N·k))` and must wait for every page of every shard.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use aws_sdk_dynamodb::types::AttributeValue;

/// A sort key value, ordered as DynamoDB orders it: strings by their UTF-8 bytes, numbers by
/// numeric value, binary by bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortValue {
    /// A string key.
    S(String),
    /// A number key, kept as its decimal text and compared numerically.
    N(String),
    /// A binary key.
    B(Vec<u8>),
    /// A multi-attribute sort key: its attributes' values, compared in order (as a tuple).
    Composite(Vec<SortValue>),
}

impl SortValue {
    /// The sort value of a key attribute, or `None` for a type that cannot be a key.
    pub fn from_attribute(value: &AttributeValue) -> Option<SortValue> {
        match value {
            AttributeValue::S(s) => Some(SortValue::S(s.clone())),
            AttributeValue::N(n) => Some(SortValue::N(n.clone())),
            AttributeValue::B(b) => Some(SortValue::B(b.as_ref().to_vec())),
            AttributeValue::L(values) => values
                .iter()
                .map(SortValue::from_attribute)
                .collect::<Option<Vec<_>>>()
                .map(SortValue::Composite),
            _ => None,
        }
    }
}

impl Ord for SortValue {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (SortValue::S(a), SortValue::S(b)) => a.as_bytes().cmp(b.as_bytes()),
            (SortValue::N(a), SortValue::N(b)) => compare_decimal(a, b),
            (SortValue::B(a), SortValue::B(b)) => a.cmp(b),
            (SortValue::Composite(a), SortValue::Composite(b)) => a.cmp(b),
            // A key attribute has one type per table; order mixed types by type only so the
            // order is still total.
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for SortValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl SortValue {
    fn rank(&self) -> u8 {
        match self {
            SortValue::B(_) => 0,
            SortValue::N(_) => 1,
            SortValue::S(_) => 2,
            SortValue::Composite(_) => 3,
        }
    }
}

/// Compares two DynamoDB number texts numerically, exactly (up to DynamoDB's 38 digits and
/// beyond), without going through floating point.
///
/// Total on any input, including text no DynamoDB number has (a forged cursor can carry
/// anything): exponents beyond `i64` saturate at `i64::MIN` / `i64::MAX` and the exponent
/// arithmetic is done in `i128`, so nothing overflows; text that is not a number compares as
/// the digits it contains. The result is always a total order: it compares the key
/// `(sign, exponent, digits)`.
pub(crate) fn compare_decimal(a: &str, b: &str) -> Ordering {
    let (a, b) = (Decimal::parse(a), Decimal::parse(b));
    match (a.negative, b.negative) {
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
        (false, false) => a.magnitude_cmp(&b),
        (true, true) => b.magnitude_cmp(&a),
    }
}

/// A number as sign, significant digits and the decimal exponent of its first digit.
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    /// Position of the decimal point relative to the first significant digit. `i128`: the
    /// integer part's length (a `usize`) plus a saturated `i64` exponent never overflows it.
    exponent: i128,
}

impl Decimal {
    fn parse(text: &str) -> Decimal {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], saturating_exponent(&rest[i + 1..])),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut digits: Vec<u8> = int
            .bytes()
            .chain(frac.bytes())
            .filter(u8::is_ascii_digit)
            .map(|d| d - b'0')
            .collect();
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        while digits.last() == Some(&0) {
            digits.pop();
        }
        let exponent = int.len() as i128 - leading as i128 + i128::from(exp);
        let negative = negative && !digits.is_empty();
        Decimal {
            negative,
            digits,
            exponent,
        }
    }

    fn magnitude_cmp(&self, other: &Decimal) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        self.exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits.cmp(&other.digits))
    }
}

/// The exponent after `e`, saturated to `i64::MIN..=i64::MAX`; `0` when it is not an integer
/// (`e`, `e+`, `e1x`). Never overflows, whatever its length.
fn saturating_exponent(text: &str) -> i64 {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    let magnitude = digits.bytes().fold(0i64, |acc, d| {
        acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    if negative {
        // -i64::MAX saturates one short of i64::MIN; both are far past any real number.
        -magnitude
    } else {
        magnitude
    }
}

/// One shard head in the merge heap.
#[derive(Debug)]
struct Head<K> {
    key: K,
    run: usize,
    descending: bool,
}

impl<K: Ord> Ord for Head<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap pops the greatest: make "next to emit" the greatest. Ties go to the
        // lower run (shard) number, so the output is deterministic.
        let by_key = if self.descending {
            self.key.cmp(&other.key)
        } else {
            other.key.cmp(&self.key)
        };
        by_key.then_with(|| other.run.cmp(&self.run))
    }
}

impl<K: Ord> PartialOrd for Head<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> PartialEq for Head<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord> Eq for Head<K> {}

/// The heap of run heads: tells which run (shard) holds the next item to emit.
///
/// The scatter-gather engine pushes a run's head key whenever the run has a buffered item,
/// and pops the run to emit from; a run whose buffer ran dry is refilled before the next pop.
#[derive(Debug)]
pub(crate) struct HeadHeap<K> {
    heap: BinaryHeap<Head<K>>,
    descending: bool,
}

impl<K: Ord> HeadHeap<K> {
    /// An empty heap emitting ascending (or descending) keys.
    pub fn new(descending: bool) -> Self {
        HeadHeap {
            heap: BinaryHeap::new(),
            descending,
        }
    }

    /// Adds the head key of `run`.
    pub fn push(&mut self, key: K, run: usize) {
        self.heap.push(Head {
            key,
            run,
            descending: self.descending,
        });
    }

    /// Removes and returns the next key and its run.
    pub fn pop(&mut self) -> Option<(K, usize)> {
        self.heap.pop().map(|h| (h.key, h.run))
    }
}

/// The first `k` items of several sorted runs, merged: what a top-K scatter-gather does once
/// the shard pages are in.
// The engine merges lazily with `HeadHeap`; this eager form is its property-tested model and
// what the merge benchmark measures (feature `bench-internals`).
#[cfg_attr(not(feature = "bench-internals"), allow(dead_code))]
pub fn top_k<T, K: Ord>(
    runs: Vec<Vec<T>>,
    k: usize,
    key: impl Fn(&T) -> K,
    descending: bool,
) -> Vec<T> {
    let mut heads = HeadHeap::new(descending);
    let mut iters: Vec<std::vec::IntoIter<T>> = runs.into_iter().map(Vec::into_iter).collect();
    let mut pending: Vec<Option<T>> = Vec::with_capacity(iters.len());
    for (run, iter) in iters.iter_mut().enumerate() {
        let first = iter.next();
        if let Some(item) = &first {
            heads.push(key(item), run);
        }
        pending.push(first);
    }
    let mut out = Vec::with_capacity(k);
    while out.len() < k {
        let Some((_, run)) = heads.pop() else { break };
        if let Some(item) = pending[run].take() {
            out.push(item);
        }
        if let Some(next) = iters[run].next() {
            heads.push(key(&next), run);
            pending[run] = Some(next);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decimals_compare_numerically() {
        let ordered = [
            "-1e3", "-10", "-2.5", "-0.001", "0", "0.000", "1E-3", "1", "1.0", "2", "10", "1e2",
            "123.45",
        ];
        for w in ordered.windows(2) {
            assert_ne!(
                compare_decimal(w[0], w[1]),
                Ordering::Greater,
                "{} vs {}",
                w[0],
                w[1]
            );
        }
        assert_eq!(compare_decimal("0", "-0"), Ordering::Equal);
        assert_eq!(
            compare_decimal(
                "99999999999999999999999999999999999998",
                "99999999999999999999999999999999999999"
            ),
            Ordering::Less
        );
    }

    /// Exponents no DynamoDB number has (a forged cursor can carry them): no overflow, no
    /// panic, and still a total order.
    #[test]
    fn extreme_exponents_compare_without_overflow() {
        let max = i64::MAX.to_string();
        let min = i64::MIN.to_string();
        let huge = "9".repeat(400);
        let ordered = [
            format!("-1e{max}"),
            format!("-1e{huge}"),
            "-1".to_owned(),
            format!("-1e-{huge}"),
            "0".to_owned(),
            format!("1e{min}"),
            format!("1e-{huge}"),
            "1e-400".to_owned(),
            "1".to_owned(),
            format!("1{}", "0".repeat(100)),
            format!("1e{max}"),
            format!("9e{huge}"),
        ];
        for w in ordered.windows(2) {
            assert_ne!(
                compare_decimal(&w[0], &w[1]),
                Ordering::Greater,
                "{} vs {}",
                w[0],
                w[1]
            );
        }
        // The integer part's length plus an exponent at i64::MAX: the sum that overflowed.
        let long_int = format!("{}e{max}", "1".repeat(50));
        assert_eq!(
            compare_decimal(&long_int, &format!("1e{max}")),
            Ordering::Greater
        );
        assert_eq!(compare_decimal(&format!("0e{max}"), "0"), Ordering::Equal);
        for a in &ordered {
            assert_eq!(compare_decimal(a, a), Ordering::Equal, "{a}");
        }
    }

    proptest! {
        /// Any two texts, numbers or not: no panic, and antisymmetric.
        #[test]
        fn decimal_compare_is_total_on_any_text(a in "[-+0-9.eE]{0,30}", b in "[-+0-9.eE]{0,30}") {
            prop_assert_eq!(compare_decimal(&a, &b), compare_decimal(&b, &a).reverse());
        }

        #[test]
        fn decimal_order_matches_integers(a: i64, b: i64) {
            prop_assert_eq!(compare_decimal(&a.to_string(), &b.to_string()), a.cmp(&b));
        }

        #[test]
        fn decimal_order_matches_scaled_values(a in -100000i64..100000, b in -100000i64..100000) {
            let (x, y) = (format!("{}.{:03}", a / 1000, (a % 1000).abs()), format!("{}.{:03}", b / 1000, (b % 1000).abs()));
            // Only compare when the text form is faithful (the sign of -0.xxx is lost by a / 1000).
            prop_assume!(a >= 0 && b >= 0);
            prop_assert_eq!(compare_decimal(&x, &y), a.cmp(&b));
        }

        /// top_k equals concatenate + sort + truncate, ascending and descending, with ties.
        #[test]
        fn top_k_equals_brute_force(runs in prop::collection::vec(prop::collection::vec(0u8..20, 0..30), 1..12), k in 0usize..100, desc: bool) {
            let runs: Vec<Vec<(u8, usize)>> = runs.into_iter().enumerate().map(|(r, mut v)| {
                v.sort_unstable();
                if desc { v.reverse(); }
                v.into_iter().map(|x| (x, r)).collect()
            }).collect();
            let mut all: Vec<(u8, usize)> = runs.iter().flatten().copied().collect();
            // Ties: lower run first, and within a run the run's own order (stable sort).
            all.sort_by(|a, b| if desc { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) }.then(a.1.cmp(&b.1)));
            all.truncate(k);
            prop_assert_eq!(top_k(runs, k, |x| x.0, desc), all);
        }
    }
}

#[cfg(test)]
mod doc_examples {
    //! Examples of crate-internal items, kept as tests.
    use super::*;

    #[test]
    fn example_sortvalue() {
        use aws_sdk_dynamodb::types::AttributeValue;

        let a = SortValue::from_attribute(&AttributeValue::N("9".into())).unwrap();
        let b = SortValue::from_attribute(&AttributeValue::N("10".into())).unwrap();
        assert!(a < b, "numbers compare numerically, not as text");
        let z = SortValue::from_attribute(&AttributeValue::S("Z".into())).unwrap();
        let a = SortValue::from_attribute(&AttributeValue::S("a".into())).unwrap();
        assert!(z < a, "strings compare by bytes: 'Z' (0x5A) < 'a' (0x61)");
    }

    #[test]
    fn example_compare_decimal() {
        use std::cmp::Ordering;
        assert_eq!(compare_decimal("-2.5", "-10"), Ordering::Greater);
        assert_eq!(compare_decimal("1.50", "1.5"), Ordering::Equal);
        assert_eq!(compare_decimal("1e3", "999"), Ordering::Greater);
    }

    #[test]
    fn example_headheap() {
        let mut heap = HeadHeap::new(false);
        heap.push(30, 0);
        heap.push(10, 1);
        heap.push(20, 2);
        assert_eq!(heap.pop(), Some((10, 1)));
        assert_eq!(heap.pop(), Some((20, 2)));
    }

    #[test]
    fn example_top_k() {
        let runs = vec![vec![1, 4, 7], vec![2, 5, 8], vec![3, 6, 9]];
        assert_eq!(top_k(runs, 4, |x| *x, false), [1, 2, 3, 4]);
    }
}
