//! The trait the derive implements, and the item conversion every entity shares.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::access::placement::Placement;
use crate::access::recognize::{at_previous_place, point_read_error, Depth, NotOurs};
use crate::error::foreign::ForeignReason;
use crate::error::{Error, KeyError};
pub(crate) use crate::item::describe_key;
pub use crate::item::Item;
use crate::keys::layout;
use crate::keys::schema::{EntitySchema, Recognition, TableDefinition};
use crate::keys::template::{loosely_same_key, parse_key, KeyContext};
pub use crate::keys::ItemKeys;

/// An entity stored with sharded keys. Implemented by `#[derive(ShardedEntity)]`.
///
/// The derive generates the schema and `item_keys`; item conversion is shared runtime code.
/// Besides this trait, the derive generates typed key builders as inherent functions
/// (`Score::pk(..)`, `Score::sk(..)`, `Score::shard_for(..)`, `Score::pk_all_shards(..)`,
/// `Score::parse_pk(..)`, `Score::gsi1_pk(..)`, ...): see the `sharded` crate docs.
///
/// ```ignore
/// let item = score.to_item()?;                 // fields + pk, sk, gsi keys, `_entity`
/// let back = Score::from_item(item)?;          // refuses items of other entities
/// Score::table_definition().create_table(&client, "scores").send().await?; // use sharded::schema::CreateTable
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a sharded entity",
    label = "`{Self}` does not derive `ShardedEntity`",
    note = "derive it: `#[derive(ShardedEntity, Serialize, Deserialize)]` with a `#[pk(template = \"...\")]`"
)]
pub trait ShardedEntity: Serialize + DeserializeOwned + Sized {
    /// The static description of the entity's keys.
    const SCHEMA: &'static EntitySchema;

    /// The types of the base partition key's template fields, in template order: members of
    /// a collection must agree on them (the collection derive checks it). Written by the
    /// derive; not a public API.
    #[doc(hidden)]
    type __PartitionTypes;

    /// The attributes the struct stores (serde names, after renames; skipped fields left
    /// out): what a projection may name (the projection derive checks it). Not a public API.
    #[doc(hidden)]
    const __ATTRIBUTES: &'static [&'static str] = &[];

    /// A `#[serde(flatten)]` field can store attributes [`Self::__ATTRIBUTES`] does not list.
    /// Not a public API.
    #[doc(hidden)]
    const __OPEN: bool = true;

    /// The physical key attributes of this item.
    fn item_keys(&self) -> Result<ItemKeys, KeyError>;

    /// The partition key this item had under the previous layout, while a transition is
    /// declared (`previous_n` or `legacy` on `#[pk]`); `None` otherwise. Deletes remove that
    /// copy too, and `put_new` checks it.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use sharded::ShardedEntity;
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4, legacy = "GAME#{game_id}")]
    /// #[sk(template = "SCORE#{score}#{player_id}")]
    /// struct Score { game_id: String, player_id: String, score: u64 }
    ///
    /// let s = Score { game_id: "g1".into(), player_id: "p1".into(), score: 7 };
    /// assert_eq!(s.previous_pk()?, Some("GAME#g1".to_string()));
    /// assert!(s.item_keys()?.pk.starts_with("GAME#g1#"));
    /// # Ok::<(), sharded::KeyError>(())
    /// ```
    fn previous_pk(&self) -> Result<Option<String>, KeyError> {
        Ok(None)
    }

    /// What places this item under any shard count, for an entity whose layout is decided
    /// per logical key (`max_n` on `#[pk]`): its logical key and the text its shard hashes.
    /// `None` for every other entity. Written by the derive; not a public API.
    #[doc(hidden)]
    fn __shard_input(&self) -> Result<Option<layout::ShardInput>, KeyError> {
        Ok(None)
    }

    /// The key fields of the item stored under `pk` and `sk`, decoded from the keys (each
    /// only from its canonical form) and written as the attributes serde stores them as: what
    /// completes an untagged item that carries its key fields only in its keys. Written by
    /// the derive; not a public API.
    #[doc(hidden)]
    fn __key_attributes(pk: &str, sk: Option<&str>) -> Result<Item, KeyError> {
        let _ = (pk, sk);
        Ok(Item::new())
    }

    /// Whether `item` is one of this entity's (see [`recognize`](crate::access::recognize)),
    /// completed in place when it is recognised by its keys. What a collection asks of each
    /// member; not a public API.
    #[doc(hidden)]
    fn __recognize(item: &mut Item, depth: Depth) -> Result<(), NotOurs> {
        recognize::<Self>(item, depth)
    }

    /// Where `item` belongs (see `QuerySource::placement`):
    /// what a collection asks of the member an item is. Not a public API.
    #[doc(hidden)]
    fn __placement(item: &Item) -> Option<(String, Option<String>)> {
        let entity = Self::from_item(item.clone()).ok()?;
        // Where the item lives, as every point operation asks it.
        let placement = Placement::of(&entity).ok()?;
        Some((
            placement.pk().to_owned(),
            placement.previous().map(str::to_owned),
        ))
    }

    /// Reads an item already recognised as this entity's. Not a public API.
    #[doc(hidden)]
    fn __decode(item: Item) -> Result<Self, Error> {
        decode::<Self>(item)
    }

    /// The DynamoDB item: the struct's fields (through serde_dynamo), its key attributes and
    /// the entity attribute.
    fn to_item(&self) -> Result<Item, Error> {
        to_item(self)
    }

    /// Reads an item back, refusing an item that belongs to another entity.
    fn from_item(item: Item) -> Result<Self, Error> {
        from_item(item)
    }

    /// The table (keys and GSIs) this entity needs.
    fn table_definition() -> TableDefinition {
        Self::SCHEMA.table_definition()
    }
}

/// The shared implementation of [`ShardedEntity::to_item`].
///
/// Refuses (rather than overwrites) a serialised attribute that has the name of a key
/// attribute: the derive catches named fields at compile time, this catches `flatten`ed maps.
pub(crate) fn to_item<E: ShardedEntity>(entity: &E) -> Result<Item, Error> {
    let schema = E::SCHEMA;
    let keys = entity.item_keys()?;
    check_key_sizes(schema, &keys)?;
    let mut item: Item = serde_dynamo::to_item(entity).map_err(|source| Error::Serialize {
        entity: schema.entity,
        source,
    })?;
    check_index_attributes(schema, &item)?;
    let mut set_value = |name: &'static str, value: AttributeValue| -> Result<(), Error> {
        match item.insert(name.to_owned(), value) {
            None => Ok(()),
            Some(_) => Err(Error::AttributeClash {
                entity: schema.entity,
                attribute: name.to_owned(),
            }),
        }
    };
    let s = AttributeValue::S;
    set_value(schema.pk.attribute, s(keys.pk))?;
    if let (Some(sk), Some(value)) = (schema.sk, keys.sk) {
        set_value(sk.attribute, s(value))?;
    }
    for (gsi, (pk, sk)) in schema.gsis.iter().zip(keys.gsis) {
        // An index keyed by the item's own attributes needs only its shard, a number (the
        // other key attributes are the fields serde wrote).
        if gsi.attributes.is_some() {
            set_value(gsi.pk.attribute, AttributeValue::N(pk))?;
            continue;
        }
        set_value(gsi.pk.attribute, s(pk))?;
        if let (Some(sk_schema), Some(value)) = (gsi.sk, sk) {
            set_value(sk_schema.attribute, s(value))?;
        }
    }
    if let Some(tag) = schema.tag_attribute() {
        set_value(tag, s(schema.entity.to_owned()))?;
    }
    Ok(item)
}

/// Refuses an empty string in an index key attribute (DynamoDB would refuse the write with a
/// `ValidationException` naming no field), as a string key refuses an empty field.
fn check_index_attributes(schema: &EntitySchema, item: &Item) -> Result<(), KeyError> {
    for gsi in schema.gsis {
        let Some(key) = gsi.attributes else { continue };
        let empty = key
            .partition
            .iter()
            .chain(key.sort)
            .find(|a| matches!(item.get(a.name), Some(AttributeValue::S(s)) if s.is_empty()));
        if let Some(a) = empty {
            return Err(KeyError::EmptyValue {
                entity: schema.entity,
                attribute: gsi.index_name,
                field: a.name,
            });
        }
    }
    Ok(())
}

/// Refuses keys over DynamoDB's size limits, on the table and on every index, before
/// anything is sent: DynamoDB would refuse them with a `ValidationException` naming no field.
fn check_key_sizes(schema: &EntitySchema, keys: &ItemKeys) -> Result<(), KeyError> {
    schema.pk.check_size(schema.entity, &keys.pk)?;
    if let (Some(sk), Some(value)) = (schema.sk, &keys.sk) {
        sk.check_size(schema.entity, value)?;
    }
    for (gsi, (pk, sk)) in schema.gsis.iter().zip(&keys.gsis) {
        gsi.pk.check_size(schema.entity, pk)?;
        if let (Some(sk_schema), Some(value)) = (gsi.sk, sk) {
            sk_schema.check_size(schema.entity, value)?;
        }
    }
    Ok(())
}

/// Whether two items hold the same data as DynamoDB stores it: the same attributes, with
/// numbers compared by value (DynamoDB may write `1.50` back as `1.5`) and sets compared as
/// sets (DynamoDB keeps no order in them).
pub(crate) fn same_item(a: &Item, b: &Item) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(name, value)| b.get(name).is_some_and(|other| same_value(value, other)))
}

fn same_value(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as V;
    fn same_set<T: Clone + Ord>(a: &[T], b: &[T]) -> bool {
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        a.sort();
        b.sort();
        a == b
    }
    match (a, b) {
        (V::N(x), V::N(y)) => same_number(x, y),
        (V::Ns(x), V::Ns(y)) => {
            let normal = |v: &[String]| v.iter().map(|n| normal_number(n)).collect::<Vec<_>>();
            same_set(&normal(x), &normal(y))
        }
        (V::Ss(x), V::Ss(y)) => same_set(x, y),
        (V::Bs(x), V::Bs(y)) => {
            let bytes = |v: &[aws_sdk_dynamodb::primitives::Blob]| {
                v.iter().map(|b| b.as_ref().to_vec()).collect::<Vec<_>>()
            };
            same_set(&bytes(x), &bytes(y))
        }
        (V::L(x), V::L(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b)),
        (V::M(x), V::M(y)) => same_item(x, y),
        _ => a == b,
    }
}

fn same_number(a: &str, b: &str) -> bool {
    a == b || normal_number(a) == normal_number(b)
}

/// A number in one spelling per value: sign, significant digits, exponent (`1.50`, `15E-1`
/// and `+1.5` are all `(false, "15", 1)`: 0.15 times 10^1). Text that is not a number is
/// kept as it is, so it only equals itself.
fn normal_number(n: &str) -> Result<(bool, String, i64), String> {
    let not_a_number = || n.to_owned();
    let (negative, rest) = match n.as_bytes().first() {
        Some(b'-') => (true, &n[1..]),
        Some(b'+') => (false, &n[1..]),
        _ => (false, n),
    };
    let (mantissa, exponent) = match rest.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().map_err(|_| not_a_number())?),
        None => (rest, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err(not_a_number());
    }
    let digits = format!("{whole}{fraction}");
    let leading = digits.bytes().take_while(|&b| b == b'0').count();
    let significant = digits[leading..].trim_end_matches('0');
    if significant.is_empty() {
        return Ok((false, "0".to_owned(), 0));
    }
    // digits = 0.<digits> * 10^(whole.len()); dropping `leading` zeros shifts the point.
    let exponent = exponent
        .checked_add(whole.len() as i64 - leading as i64)
        .ok_or_else(not_a_number)?;
    Ok((negative, significant.to_owned(), exponent))
}

/// The shared implementation of [`ShardedEntity::from_item`]: the item is recognised as
/// `E`'s (see [`recognize`](crate::access::recognize)), then read.
pub(crate) fn from_item<E: ShardedEntity>(mut item: Item) -> Result<E, Error> {
    recognize::<E>(&mut item, Depth::Whole)
        .map_err(|not_ours| point_read_error(E::SCHEMA, &item, not_ours))?;
    decode::<E>(item)
}

/// Reads an item of `E` as the entity without asking whose it is: for an item already
/// recognised.
pub fn decode<E: ShardedEntity>(item: Item) -> Result<E, Error> {
    decode_as(E::SCHEMA, item)
}

/// Reads an item of the entity `schema` describes as `T` (the entity itself, or a projection
/// of it) after it was recognised as the entity's.
pub(crate) fn decode_as<T: DeserializeOwned>(
    schema: &'static EntitySchema,
    mut item: Item,
) -> Result<T, Error> {
    let key = describe_key(schema, &item);
    // Key attributes are derived data, and the tag and the move marker the crate's own;
    // removing them lets `#[serde(deny_unknown_fields)]` structs read their own items.
    if let Some(tag) = schema.tag_attribute() {
        item.remove(tag);
    }
    item.remove(schema.move_attribute());
    item.remove(schema.pk.attribute);
    if let Some(sk) = schema.sk {
        item.remove(sk.attribute);
    }
    for gsi in schema.gsis {
        item.remove(gsi.pk.attribute);
        if let Some(sk) = gsi.sk {
            item.remove(sk.attribute);
        }
    }
    serde_dynamo::from_item(item).map_err(|source| Error::Deserialize {
        entity: schema.entity,
        key,
        source,
    })
}

// The entity's side of the rule of which items are its own (the vocabulary, the read policies
// and the module docs are in `recognize`): what needs the entity's type.

/// Whether `item` is one of `E`'s, by the table's [`Recognition`]. An untagged item
/// recognised by its keys is completed in place: the key fields it lacks as attributes are
/// filled in from its keys, and it is tagged (in memory) when the table has a tag, so it reads
/// as the entity from here on.
pub fn recognize<E: ShardedEntity>(item: &mut Item, depth: Depth) -> Result<(), NotOurs> {
    let schema = E::SCHEMA;
    let recognition = schema.table_schema.recognition;
    if let Some(tag) = recognition.tag_attribute() {
        match item.get(tag) {
            Some(AttributeValue::S(name)) if name == schema.entity => return Ok(()),
            Some(AttributeValue::S(other)) => return Err(NotOurs::OtherEntity(other.clone())),
            Some(_) => {
                return Err(NotOurs::Foreign(ForeignReason::BadTag { attribute: tag }));
            }
            None => {
                // Untagged: by its keys where the table says so, or where items written
                // before the table adopted `sharded` are (a previous layout's place).
                if !matches!(recognition, Recognition::TagOrKey { .. })
                    && !at_previous_place(schema, item)
                {
                    return Err(NotOurs::Foreign(ForeignReason::Untagged { attribute: tag }));
                }
            }
        }
    }
    by_keys::<E>(item, depth).map_err(NotOurs::Foreign)?;
    if let Some(tag) = recognition.tag_attribute() {
        item.insert(tag.to_owned(), AttributeValue::S(schema.entity.to_owned()));
    }
    Ok(())
}

/// The check of an untagged item: see the module docs.
fn by_keys<E: ShardedEntity>(item: &mut Item, depth: Depth) -> Result<(), ForeignReason> {
    let schema = E::SCHEMA;
    let text = |item: &Item, attribute: &str| -> Result<String, ForeignReason> {
        item.get(attribute)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .ok_or_else(|| ForeignReason::OtherKeys {
                reason: format!("it has no string `{attribute}` key attribute"),
            })
    };
    let pk = text(item, schema.pk.attribute)?;
    let sk = schema.sk.map(|sk| text(item, sk.attribute)).transpose()?;
    // The shape first: another record type is told apart here, before any field is decoded.
    let place =
        layout::locate(schema.entity, &schema.pk, &pk).ok_or_else(|| ForeignReason::OtherKeys {
            reason: format!(
                "`{pk}` is no `{}` key of {} ({})",
                schema.pk.attribute,
                schema.entity,
                schema.pk.layout_description()
            ),
        })?;
    if let (Some(sk_schema), Some(sk)) = (schema.sk, &sk) {
        let ctx = KeyContext {
            entity: schema.entity,
            attribute: sk_schema.attribute,
        };
        parse_key(ctx, sk_schema.template, sk, None).map_err(|e| ForeignReason::OtherKeys {
            reason: e.to_string(),
        })?;
    }
    // Then every field, decoded only from its canonical form. A key that is not is another
    // service's spelling of the entity's key only when the item's own attributes give the
    // same values, canonically written (re-keyable); otherwise another record's.
    let fields = E::__key_attributes(&pk, sk.as_deref()).map_err(|e| {
        if spelled_otherwise::<E>(item, &pk, sk.as_deref()) {
            ForeignReason::NotCanonical {
                reason: e.to_string(),
            }
        } else {
            ForeignReason::OtherKeys {
                reason: e.to_string(),
            }
        }
    })?;
    // Completed apart: a refused item is left as it was read (a collection asks its next
    // member).
    let mut completed = item.clone();
    for (name, value) in fields {
        completed.entry(name).or_insert(value);
    }
    if depth == Depth::Keys {
        *item = completed;
        return Ok(());
    }
    // Then the whole item: it reads as the entity and builds back where it is stored.
    let entity = decode::<E>(completed.clone()).map_err(|e| ForeignReason::Unreadable {
        reason: e.to_string(),
    })?;
    let placement = Placement::of(&entity).map_err(|e| ForeignReason::Unreadable {
        reason: e.to_string(),
    })?;
    if placement.sk() != sk.as_deref() {
        return Err(ForeignReason::Unreadable {
            reason: format!(
                "its fields give the sort key `{}`, not `{}`: its attributes disagree with its key",
                placement.sk().unwrap_or_default(),
                sk.unwrap_or_default()
            ),
        });
    }
    if !placement.may_be_at(&pk, place) {
        return Err(ForeignReason::Unreadable {
            reason: format!(
                "its fields give the partition key `{}`, not `{pk}`: its attributes disagree \
                 with its key",
                placement.pk()
            ),
        });
    }
    *item = completed;
    Ok(())
}

/// Whether `item`, whose keys are not in canonical form, reads as the entity from its
/// attributes and the keys it would have spell the same values as the stored ones
/// ([`loosely_same_key`]): the entity's item, keyed by another service its own way.
pub fn spelled_otherwise<E: ShardedEntity>(item: &Item, pk: &str, sk: Option<&str>) -> bool {
    let Ok(entity) = decode::<E>(item.clone()) else {
        return false;
    };
    let Ok(placement) = Placement::of(&entity) else {
        return false;
    };
    let sk_matches = match (placement.sk(), sk) {
        (Some(canonical), Some(stored)) => loosely_same_key(stored, canonical),
        (None, None) => true,
        _ => false,
    };
    let schema = E::SCHEMA;
    let logical = |key: &str| match schema.pk.shard_bound() {
        Some(n) => schema
            .pk
            .suffix
            .split(key, n)
            .map_or_else(|_| key.to_owned(), |(l, _)| l.to_owned()),
        None => key.to_owned(),
    };
    let pk_matches = loosely_same_key(&logical(pk), &logical(placement.pk()))
        || placement
            .previous()
            .is_some_and(|previous| loosely_same_key(pk, previous));
    sk_matches && pk_matches
}

/// Whether `item` (one a refused write returned, say) is one of `E`'s, its keys the
/// evidence where it has no tag.
pub(crate) fn is_ours<E: ShardedEntity>(item: &Item) -> bool {
    recognize::<E>(&mut item.clone(), Depth::Keys).is_ok()
}

impl Placement {
    /// The placement of `entity`.
    pub fn of<E: ShardedEntity>(entity: &E) -> Result<Self, Error> {
        let keys = entity.item_keys()?;
        let previous = entity.previous_pk()?;
        Ok(Placement::of_key(E::SCHEMA, keys.pk, previous, keys.sk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::primitives::Blob;
    use AttributeValue as V;

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn numbers_are_compared_by_value() {
        for (a, b) in [
            ("1.5", "1.50"),
            ("15E-1", "+1.5"),
            ("100", "1e2"),
            ("0", "-0.000"),
            ("0.001", "1E-3"),
            ("-12", "-12.0"),
        ] {
            assert!(same_number(a, b), "{a} = {b}");
        }
        for (a, b) in [
            ("1.5", "15"),
            ("-1", "1"),
            ("1e2", "1e3"),
            ("x", "y"),
            ("", "0"),
        ] {
            assert!(!same_number(a, b), "{a} != {b}");
        }
        assert!(same_number("x", "x"), "unparsable text equals itself");
    }

    #[test]
    fn items_are_equal_as_dynamodb_stores_them() {
        let a = item(&[
            ("n", V::N("1.50".into())),
            ("ss", V::Ss(vec!["b".into(), "a".into()])),
            ("ns", V::Ns(vec!["2".into(), "1.0".into()])),
            ("bs", V::Bs(vec![Blob::new(*b"y"), Blob::new(*b"x")])),
            ("l", V::L(vec![V::S("z".into()), V::N("3".into())])),
            ("m", V::M(item(&[("k", V::N("7.0".into()))]))),
        ]);
        let b = item(&[
            ("n", V::N("1.5".into())),
            ("ss", V::Ss(vec!["a".into(), "b".into()])),
            ("ns", V::Ns(vec!["1".into(), "2".into()])),
            ("bs", V::Bs(vec![Blob::new(*b"x"), Blob::new(*b"y")])),
            ("l", V::L(vec![V::S("z".into()), V::N("3.0".into())])),
            ("m", V::M(item(&[("k", V::N("7".into()))]))),
        ]);
        assert!(same_item(&a, &b));
        let mut extra = b.clone();
        extra.insert("more".into(), V::Bool(true));
        assert!(!same_item(&a, &extra), "an attribute more");
        let mut reordered = b.clone();
        reordered.insert("l".into(), V::L(vec![V::N("3".into()), V::S("z".into())]));
        assert!(!same_item(&a, &reordered), "lists keep their order");
        let mut changed = b;
        changed.insert("n".into(), V::S("1.5".into()));
        assert!(!same_item(&a, &changed), "a string is not a number");
    }
}
