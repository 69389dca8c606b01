//! DynamoDB's item size, computed before sending, so an oversized item is refused with a
//! message naming it instead of a `ValidationException` from the service.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::entity::{describe_key, Item, ShardedEntity};
use crate::error::Error;

/// DynamoDB's maximum item size: 400 KB, counting attribute names and values.
pub const ITEM_SIZE_LIMIT: usize = 400 * 1024;

/// The size of an item as DynamoDB counts it: each attribute's name (UTF-8 bytes) plus its
/// value (strings and binary by bytes; numbers about one byte per two significant digits plus
/// one; booleans and null one byte; lists and maps three bytes plus one per element plus the
/// elements (and, for maps, their names); sets the sum of their elements).
///
/// ```
/// use aws_sdk_dynamodb::types::AttributeValue;
/// use sharded_runtime::size::item_size;
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

/// Write units of an item of `bytes`: 1 per KB, rounded up, at least 1; doubled in a
/// transaction.
///
/// ```
/// use sharded_runtime::size::write_units;
/// assert_eq!(write_units(3000, false), 3.0);
/// assert_eq!(write_units(100, true), 2.0);
/// ```
pub fn write_units(bytes: usize, transactional: bool) -> f64 {
    let units = bytes.div_ceil(1024).max(1) as f64;
    if transactional {
        units * 2.0
    } else {
        units
    }
}

/// Read units of `bytes` read: 1 per 4 KB, rounded up, at least 1; half when eventually
/// consistent; doubled in a transaction.
///
/// ```
/// use sharded_runtime::size::read_units;
/// assert_eq!(read_units(5000, true, false), 2.0);
/// assert_eq!(read_units(5000, false, false), 1.0);
/// ```
pub fn read_units(bytes: usize, consistent: bool, transactional: bool) -> f64 {
    let units = bytes.div_ceil(4096).max(1) as f64;
    let units = if consistent { units } else { units / 2.0 };
    if transactional {
        units * 2.0
    } else {
        units
    }
}

/// Refuses an item over [`ITEM_SIZE_LIMIT`] with [`Error::ItemTooLarge`].
pub(crate) fn check_item_size<E: ShardedEntity>(item: &Item) -> Result<(), Error> {
    let size = item_size(item);
    if size > ITEM_SIZE_LIMIT {
        return Err(Error::ItemTooLarge {
            entity: E::SCHEMA.entity,
            key: describe_key(E::SCHEMA, item),
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
}
