//! An item as DynamoDB stores it, and its key as error messages show it: the vocabulary the
//! error type, the capacity arithmetic and data access share. A leaf: it imports only the key
//! model, so `error`, `capacity/` and `access/` can all use it without importing each other.

use std::collections::HashMap;
use std::fmt;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::keys::schema::EntitySchema;

/// A DynamoDB item: attribute names to values.
pub type Item = HashMap<String, AttributeValue>;

/// The key attributes of an item, printed as `pk=..., sk=...` in error messages.
///
/// ```
/// use sharded::keys::ItemKeyDisplay;
/// let k = ItemKeyDisplay { pk: Some("GAME#g1#3".into()), sk: Some("SCORE#1".into()) };
/// assert_eq!(k.to_string(), "(pk=GAME#g1#3, sk=SCORE#1)");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemKeyDisplay {
    /// The partition key value, when the item had one.
    pub pk: Option<String>,
    /// The sort key value, when the item had one.
    pub sk: Option<String>,
}

impl fmt::Display for ItemKeyDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pk = self.pk.as_deref().unwrap_or("?");
        match &self.sk {
            Some(sk) => write!(f, "(pk={pk}, sk={sk})"),
            // An entity without a sort key (or an item that lacked one).
            None => write!(f, "(pk={pk})"),
        }
    }
}

/// The key of an item as text, for error messages.
pub(crate) fn describe_key(schema: &EntitySchema, item: &Item) -> ItemKeyDisplay {
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    ItemKeyDisplay {
        pk: text(schema.pk.attribute),
        sk: schema.sk.and_then(|sk| text(sk.attribute)),
    }
}
