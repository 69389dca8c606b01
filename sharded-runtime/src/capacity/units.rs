//! Item size and capacity units, as DynamoDB counts them: the one definition the repository,
//! the hot-key statistics, the planner and the per-key emulator all use.
//!
//! Item size is computed before sending, so an oversized item is refused with a message
//! naming it instead of a `ValidationException` from the service.

use std::fmt;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::Error;
use crate::item::{describe_key, Item};
use crate::keys::schema::EntitySchema;

/// DynamoDB's maximum item size: 400 KB, counting attribute names and values.
pub const ITEM_SIZE_LIMIT: usize = 400 * 1024;

/// The size of an item as DynamoDB counts it: each attribute's name (UTF-8 bytes) plus its
/// value (strings and binary by bytes; numbers about one byte per two significant digits plus
/// one; booleans and null one byte; lists and maps three bytes plus one per element plus the
/// elements (and, for maps, their names); sets the sum of their elements).
///
/// ```
/// use aws_sdk_dynamodb::types::AttributeValue;
/// use sharded::capacity::item_size;
/// let item = [("pk".to_string(), AttributeValue::S("GAME#g1#3".into()))].into_iter().collect();
/// assert_eq!(item_size(&item), 2 + 9);
/// ```
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// Bytes of a number: one per two significant digits, plus one.
pub(crate) fn number_size(n: &str) -> usize {
    let digits = n
        .split(['e', 'E'])
        .next()
        .unwrap_or("")
        .bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&d| d == b'0')
        .count();
    digits.div_ceil(2) + 1
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(String::len).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(v) => 3 + v.iter().map(|e| 1 + value_size(e)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() + value_size(e))
                .sum::<usize>()
        }
        // Unknown future types: count nothing rather than guess; DynamoDB still checks.
        _ => 0,
    }
}

/// Bytes per write unit: one write unit writes up to 1 KB.
pub const WRITE_UNIT_BYTES: u64 = 1024;
/// Bytes per read unit: one strongly consistent read unit reads up to 4 KB.
pub const READ_UNIT_BYTES: u64 = 4096;

/// How a read is made, which sets its price per 4 KB: half a unit eventually consistent, one
/// strongly consistent, two in a transaction.
///
/// ```
/// use sharded::capacity::Consistency;
/// assert_eq!(Consistency::default(), Consistency::Strong);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Consistency {
    /// `ConsistentRead = true`: one read unit per 4 KB.
    #[default]
    Strong,
    /// The default of `GetItem`/`Query`: half a read unit per 4 KB.
    Eventual,
    /// A read inside `TransactGetItems`: two read units per 4 KB.
    Transactional,
}

impl Consistency {
    /// The consistency of a request sent with `ConsistentRead = consistent`.
    ///
    /// ```
    /// use sharded::capacity::Consistency;
    /// assert_eq!(Consistency::of_consistent_read(false), Consistency::Eventual);
    /// ```
    pub fn of_consistent_read(consistent: bool) -> Self {
        if consistent {
            Consistency::Strong
        } else {
            Consistency::Eventual
        }
    }
}

/// Read or write units, for warnings and flags that concern one of them.
///
/// ```
/// use sharded::capacity::UnitKind;
/// assert_eq!(UnitKind::Write.to_string(), "write");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnitKind {
    /// Read capacity units.
    Read,
    /// Write capacity units.
    Write,
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitKind::Read => "read",
            UnitKind::Write => "write",
        })
    }
}

/// Write units one write of a `bytes`-byte item costs: `ceil(bytes / 1,024)`, at least 1.
///
/// An overwrite or delete is charged on the larger of the old and the new item.
///
/// ```
/// use sharded::capacity::write_units;
/// assert_eq!((write_units(1), write_units(1_024), write_units(1_025), write_units(3_000)), (1, 1, 2, 3));
/// ```
pub fn write_units(bytes: u64) -> u64 {
    bytes.div_ceil(WRITE_UNIT_BYTES).max(1)
}

/// Write units of one write of a `bytes`-byte item inside `TransactWriteItems`: twice
/// [`write_units`].
///
/// ```
/// assert_eq!(sharded::capacity::transactional_write_units(100), 2);
/// ```
pub fn transactional_write_units(bytes: u64) -> u64 {
    2 * write_units(bytes)
}

/// Read units one read of `bytes` bytes costs: `ceil(bytes / 4,096)` (at least 1), halved for
/// eventually consistent reads, doubled in a transaction. A `Query` sums the sizes of the
/// items it returns first.
///
/// ```
/// use sharded::capacity::{read_units, Consistency};
/// assert_eq!(read_units(1_024, Consistency::Strong), 1.0);
/// assert_eq!(read_units(1_024, Consistency::Eventual), 0.5);
/// assert_eq!(read_units(1_024, Consistency::Transactional), 2.0);
/// assert_eq!(read_units(100 * 1_024, Consistency::Strong), 25.0);
/// ```
pub fn read_units(bytes: u64, consistency: Consistency) -> f64 {
    let strong = bytes.div_ceil(READ_UNIT_BYTES).max(1) as f64;
    match consistency {
        Consistency::Strong => strong,
        Consistency::Eventual => strong / 2.0,
        Consistency::Transactional => strong * 2.0,
    }
}

/// Refuses an item over [`ITEM_SIZE_LIMIT`] with [`Error::ItemTooLarge`].
pub(crate) fn check_item_size(schema: &EntitySchema, item: &Item) -> Result<(), Error> {
    let size = item_size(item);
    if size > ITEM_SIZE_LIMIT {
        return Err(Error::ItemTooLarge {
            entity: schema.entity,
            key: describe_key(schema, item),
            size,
            limit: ITEM_SIZE_LIMIT,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_dynamodb_rules() {
        let item: Item = [
            ("s".to_string(), AttributeValue::S("héllo".into())),
            ("n".to_string(), AttributeValue::N("12345".into())),
            ("b".to_string(), AttributeValue::Bool(true)),
            (
                "l".to_string(),
                AttributeValue::L(vec![AttributeValue::S("ab".into())]),
            ),
        ]
        .into_iter()
        .collect();
        // s: 1 + 6, n: 1 + (3 + 1), b: 1 + 1, l: 1 + (3 + 1 + 2)
        assert_eq!(item_size(&item), 7 + 5 + 2 + 7);
    }

    #[test]
    fn units_follow_dynamodb_rounding() {
        assert_eq!(write_units(1), 1);
        assert_eq!(write_units(1_024), 1);
        assert_eq!(write_units(1_025), 2);
        assert_eq!(write_units(0), 1);
        assert_eq!(read_units(4_096, Consistency::Strong), 1.0);
        assert_eq!(read_units(4_097, Consistency::Strong), 2.0);
        assert_eq!(read_units(4_097, Consistency::Eventual), 1.0);
        assert_eq!(read_units(1, Consistency::Eventual), 0.5);
    }
}
