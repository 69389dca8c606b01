//! An item as DynamoDB stores it, and its key as error messages show it: the vocabulary the
//! error type, the capacity arithmetic and data access share. A leaf: it imports only the key
//! model, so `error`, `capacity/` and `access/` can all use it without importing each other.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::keys::schema::EntitySchema;
pub use crate::keys::ItemKeyDisplay;

/// A DynamoDB item: attribute names to values.
pub type Item = HashMap<String, AttributeValue>;

/// The key of an item as text, for error messages.
pub fn describe_key(schema: &EntitySchema, item: &Item) -> ItemKeyDisplay {
    let text = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
    ItemKeyDisplay {
        pk: text(schema.pk.attribute),
        sk: schema.sk.and_then(|sk| text(sk.attribute)),
    }
}
