//! Stream sequence numbers: decimal strings of up to 40 digits, compared by value.

use std::cmp::Ordering;
use std::fmt;

use crate::error::RecordError;

/// The most digits a sequence number may have (DynamoDB's are 21 to 40 digits long).
pub const MAX_SEQUENCE_DIGITS: usize = 40;

/// A stream record's sequence number: a decimal string of 1 to [`MAX_SEQUENCE_DIGITS`]
/// digits, ordered by value (`"9" < "10"`), not as text.
///
/// DynamoDB issues them increasing over time for one item: the order of two records of the
/// same item is the order of their sequence numbers. Records of different items are not
/// ordered by them.
///
/// ```
/// use sharded_streams::SequenceNumber;
/// let a = SequenceNumber::parse("900000000000000000001")?;
/// let b = SequenceNumber::parse("1000000000000000000000")?;
/// assert!(a < b);
/// assert_eq!(b.as_str(), "1000000000000000000000");
/// // The fixed-width form stored beside a total compares as text in the same order.
/// assert!(a.padded() < b.padded());
/// assert!(SequenceNumber::parse("12a").is_err());
/// # Ok::<(), sharded_streams::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SequenceNumber(String);

impl SequenceNumber {
    /// Reads a sequence number, refusing anything but 1 to [`MAX_SEQUENCE_DIGITS`] ASCII
    /// digits.
    ///
    /// ```
    /// use sharded_streams::SequenceNumber;
    /// assert!(SequenceNumber::parse("4421584500000000017450439091").is_ok());
    /// assert!(SequenceNumber::parse("").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, RecordError> {
        if text.is_empty()
            || text.len() > MAX_SEQUENCE_DIGITS
            || !text.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(RecordError::SequenceNumber {
                found: text.chars().take(60).collect(),
            });
        }
        Ok(SequenceNumber(text.to_owned()))
    }

    /// The sequence number as the stream wrote it.
    ///
    /// ```
    /// # use sharded_streams::SequenceNumber;
    /// assert_eq!(SequenceNumber::parse("0042")?.as_str(), "0042");
    /// # Ok::<(), sharded_streams::RecordError>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value left-padded with zeros to [`MAX_SEQUENCE_DIGITS`] digits: a text whose
    /// order as a string (DynamoDB's `<` on strings) is the order of the values, which is how
    /// a total stores the last sequence number it applied.
    ///
    /// ```
    /// # use sharded_streams::SequenceNumber;
    /// assert_eq!(SequenceNumber::parse("42")?.padded().len(), 40);
    /// # Ok::<(), sharded_streams::RecordError>(())
    /// ```
    pub fn padded(&self) -> String {
        format!("{:0>width$}", self.digits(), width = MAX_SEQUENCE_DIGITS)
    }

    /// The digits without leading zeros ("0" for zero).
    fn digits(&self) -> &str {
        let trimmed = self.0.trim_start_matches('0');
        if trimmed.is_empty() {
            "0"
        } else {
            trimmed
        }
    }
}

impl Ord for SequenceNumber {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (self.digits(), other.digits());
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    }
}

impl PartialOrd for SequenceNumber {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for SequenceNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> SequenceNumber {
        SequenceNumber::parse(text).expect("digits")
    }

    #[test]
    fn sequence_numbers_are_ordered_by_value_in_both_forms() {
        let ordered = [
            "0",
            "7",
            "09",
            "10",
            "100000000000000000000",
            "100000000000000000001",
            "999999999999999999999",
            "1000000000000000000000",
            &"9".repeat(40),
        ];
        for pair in ordered.windows(2) {
            let (a, b) = (n(pair[0]), n(pair[1]));
            assert!(a < b, "{a} < {b}");
            assert!(a.padded() < b.padded(), "padded {a} < {b}");
        }
        assert_eq!(n("009").cmp(&n("9")), Ordering::Equal);
        assert_eq!(n("009").padded(), n("9").padded());
    }

    #[test]
    fn anything_but_digits_is_refused() {
        for bad in ["", "-1", "1.5", "1e3", " 1", "١٢", &"1".repeat(41)] {
            assert!(SequenceNumber::parse(bad).is_err(), "{bad:?}");
        }
    }
}
