//! Multi-attribute keys: an index keyed by the item's own attributes (up to four partition
//! attributes, the shard among them, and up to four sort attributes), each a string or a
//! number, instead of one synthetic key string.
//!
//! A field can be such an attribute when its type implements [`KeyAttribute`]; the value a
//! query compares it with is a [`KeyValue`].

use std::fmt;

use crate::schema::ScalarType;

/// A key attribute's value as DynamoDB compares it: a string (by its UTF-8 bytes) or a
/// number (by value, written as decimal text).
///
/// ```
/// use sharded::keys::{KeyAttribute, KeyValue};
/// assert_eq!(42u32.key_value(), KeyValue::N("42".into()));
/// assert_eq!("g1".to_string().key_value(), KeyValue::S("g1".into()));
/// assert_eq!(KeyValue::N("-7".into()).to_string(), "-7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyValue {
    /// A string attribute.
    S(String),
    /// A number attribute, as decimal text.
    N(String),
}

impl KeyValue {
    /// The value as text: the string itself, or the number's decimal text.
    pub fn text(&self) -> &str {
        match self {
            KeyValue::S(text) | KeyValue::N(text) => text,
        }
    }

    /// The DynamoDB type of the value.
    pub fn scalar_type(&self) -> ScalarType {
        match self {
            KeyValue::S(_) => ScalarType::S,
            KeyValue::N(_) => ScalarType::N,
        }
    }

    /// A value of `kind` written as `text` (a number's decimal text).
    #[doc(hidden)]
    pub fn of_type(kind: ScalarType, text: String) -> KeyValue {
        match kind {
            ScalarType::N => KeyValue::N(text),
            ScalarType::S => KeyValue::S(text),
        }
    }
}

impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// A type whose values can be an attribute of a multi-attribute key (`#[gsiN(pk = [..],
/// sk = [..])]`): serde stores it as a DynamoDB string or number, and the key compares it as
/// that. Implemented for `String` and the integer types.
///
/// ```
/// use sharded::keys::KeyAttribute;
/// use sharded::schema::ScalarType;
/// assert_eq!(<u64 as KeyAttribute>::TYPE, ScalarType::N);
/// assert_eq!(<String as KeyAttribute>::TYPE, ScalarType::S);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an attribute of a multi-attribute index key",
    label = "an index key attribute must be a string or an integer",
    note = "DynamoDB keys are strings, numbers or binary: use a `String` or integer field, or \
            keep this field out of the `pk = [..]` / `sk = [..]` lists (an `Option` field \
            would leave items out of the index; `#[gsiN(pk = \"..\")]` writes a key string \
            from any `KeyPart` field)"
)]
pub trait KeyAttribute {
    /// How DynamoDB stores and compares the attribute.
    const TYPE: ScalarType;

    /// The value as the key holds it.
    fn key_value(&self) -> KeyValue;
}

impl KeyAttribute for String {
    const TYPE: ScalarType = ScalarType::S;

    fn key_value(&self) -> KeyValue {
        KeyValue::S(self.clone())
    }
}

macro_rules! integer_key_attributes {
    ($($ty:ty),*) => {$(
        impl KeyAttribute for $ty {
            const TYPE: ScalarType = ScalarType::N;

            fn key_value(&self) -> KeyValue {
                KeyValue::N(self.to_string())
            }
        }
    )*};
}
integer_key_attributes!(u8, u16, u32, u64, i8, i16, i32, i64, usize, isize);

/// What a query function or a sort condition accepts for an attribute of type `T`: a `T`,
/// or a `&str` / `&String` for a `String` attribute.
///
/// ```
/// use sharded::keys::{KeyArg, KeyValue};
/// fn value<T, A: KeyArg<T>>(a: A) -> KeyValue { a.key_value() }
/// assert_eq!(value::<String, _>("g1"), KeyValue::S("g1".into()));
/// assert_eq!(value::<u64, _>(7), KeyValue::N("7".into()));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a value of the key attribute's type `{T}`",
    label = "expected a `{T}` here",
    note = "a multi-attribute key condition takes the field's own type (a `&str` for a `String` field)"
)]
pub trait KeyArg<T> {
    /// The value as the key holds it.
    fn key_value(&self) -> KeyValue;
}

impl<T: KeyAttribute> KeyArg<T> for T {
    fn key_value(&self) -> KeyValue {
        KeyAttribute::key_value(self)
    }
}

impl KeyArg<String> for &str {
    fn key_value(&self) -> KeyValue {
        KeyValue::S((*self).to_owned())
    }
}

impl KeyArg<String> for &String {
    fn key_value(&self) -> KeyValue {
        KeyValue::S((*self).clone())
    }
}
