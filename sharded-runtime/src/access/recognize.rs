//! Which items are the entity's: the one rule every read, point read, scan, collection and
//! migration goes through, and what happens to the items that are not.
//!
//! A table that `sharded` adopts is shared: other services write records into the same
//! partitions (another record type under the same key, items written before the adoption,
//! items with their keys spelled their own way). How an item says it is the entity's is the
//! table's [`Recognition`]:
//!
//! - **by its tag**: the tag attribute holds the entity's name. An item tagged with another
//!   entity's name is that entity's: a query of this one leaves it out, as a single-table
//!   design expects.
//! - **by its keys**, for an item without a tag (in a table that recognises untagged items,
//!   or at a previous layout's place: items written before the table adopted `sharded`):
//!   its partition key parses as the entity's template under the current or a previous
//!   layout, its sort key as the sort-key template, both in canonical form, and (where the
//!   whole item is read) the item reads as the entity, key fields taken from the keys when the
//!   item lacks them as attributes, and builds back exactly the keys it is stored under.
//!
//! Everything else in the entity's partitions is **foreign**: never returned as the entity,
//! never an error of a list, never dropped without trace. A query, count, scan or collection
//! skips it and counts it ([`Foreign`], in [`Answer`](crate::query::Answer),
//! [`Page`](crate::Page), [`Partial`](crate::query::Partial) and the migration's
//! [`Report`](crate::migrate::Report)), the metric `sharded.foreign_items` counts it by
//! reason, and a `DEBUG` event names its key. A point read (`get`) of a key that holds a
//! foreign item returns [`Error::ForeignItem`], since "no item" would not be true. The
//! migration leaves a foreign item exactly where it is and lists it.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::access::entity::{decode_as, ShardedEntity};
use crate::access::placement::Placement;
use crate::access::source::ShardedProjection;
pub use crate::error::foreign::{Foreign, ForeignItem, ForeignReason, MAX_FOREIGN_EXAMPLES};
use crate::error::Error;
use crate::item::describe_key;
use crate::item::Item;
use crate::keys::layout;
use crate::keys::schema::{EntitySchema, Recognition};
use crate::keys::template::{loosely_same_key, parse_key, KeyContext};

/// How much of an item a check can rely on. Not a public API (generated code names it).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The whole item: an untagged one must read as the entity and build back its keys.
    Whole,
    /// Some attributes (a projection, a count): an untagged item is checked by its keys.
    Keys,
}

/// Why an item is not the entity's. Not a public API (generated code names it).
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotOurs {
    /// Tagged as another entity (`name`): that entity's item, which a single-table design
    /// expects in a shared partition. Left out without counting.
    OtherEntity(String),
    /// Foreign: skipped and counted.
    Foreign(ForeignReason),
}

/// One entity's check, type-erased: what a query of a collection runs for each member.
pub type Recognize = fn(&mut Item, Depth) -> Result<(), NotOurs>;

/// The member of a collection `item` belongs to: the first whose check accepts it, or, when
/// none does, why it is not the collection's (another entity's, or foreign for the reason of
/// the member it came closest to).
pub fn recognize_member(
    item: &mut Item,
    depth: Depth,
    members: &[Recognize],
) -> Result<usize, NotOurs> {
    let mut refusal: Option<NotOurs> = None;
    for (i, check) in members.iter().enumerate() {
        match check(item, depth) {
            Ok(()) => return Ok(i),
            Err(not_ours) => {
                if refusal
                    .as_ref()
                    .is_none_or(|r| closeness(&not_ours) > closeness(r))
                {
                    refusal = Some(not_ours);
                }
            }
        }
    }
    Err(refusal.unwrap_or(NotOurs::OtherEntity(String::new())))
}

/// How close a refused item came to being the member's: the reason reported for a
/// collection is the closest member's.
fn closeness(not_ours: &NotOurs) -> u8 {
    match not_ours {
        NotOurs::OtherEntity(_) => 0,
        NotOurs::Foreign(ForeignReason::Untagged { .. } | ForeignReason::BadTag { .. }) => 1,
        NotOurs::Foreign(ForeignReason::OtherKeys { .. }) => 2,
        NotOurs::Foreign(ForeignReason::NotCanonical { .. }) => 3,
        NotOurs::Foreign(ForeignReason::Unreadable { .. }) => 4,
    }
}

/// Whether `item` is one of `E`'s, by the table's [`Recognition`]. An untagged item
/// recognised by its keys is completed in place: the key fields it lacks as attributes are
/// filled in from its keys, and it is tagged (in memory) when the table has a tag, so it reads
/// as the entity from here on.
pub(crate) fn recognize<E: ShardedEntity>(item: &mut Item, depth: Depth) -> Result<(), NotOurs> {
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

/// [`recognize`] for a projection `P` of the entity: an item no tag vouches for (untagged,
/// recognised by its keys) must also read as `P`. Recognised by its keys alone, another
/// service's record keyed like the entity but without the projected attributes would fail
/// the whole read when decoded; it is not the entity's, so it is skipped and counted as the
/// entity's own reads skip it (they decode the whole item). A tagged item that does not
/// read as `P` is the entity's, and its error is the caller's to see.
pub(crate) fn recognize_projected<P: ShardedProjection>(
    item: &mut Item,
    depth: Depth,
) -> Result<(), NotOurs> {
    let schema = <P::Entity as ShardedEntity>::SCHEMA;
    let vouched = schema.tag_attribute().is_some_and(
        |tag| matches!(item.get(tag), Some(AttributeValue::S(name)) if name == schema.entity),
    );
    recognize::<P::Entity>(item, depth)?;
    if !vouched {
        decode_as::<P>(schema, item.clone()).map_err(|e| {
            NotOurs::Foreign(ForeignReason::Unreadable {
                reason: e.to_string(),
            })
        })?;
    }
    Ok(())
}

/// Whether an untagged item in `schema`'s partitions may be the entity's: the table
/// recognises untagged items by their keys, or a previous layout's place holds items written
/// before the table adopted `sharded`. Where it may, deciding needs the whole item (it must
/// read as the entity), so a count cannot settle for the keys.
pub(crate) fn untagged_may_be_ours(schema: &EntitySchema) -> bool {
    !matches!(schema.table_schema.recognition, Recognition::Tag { .. })
        || schema.pk.previous.is_some()
}

/// How far a read can check the items it reads: a count reads the keys and the tag where the
/// tag decides, and whole items where an untagged item may be the entity's (only the whole
/// item tells: [`untagged_may_be_ours`]), so it counts exactly what the query returns; a
/// projection holds some attributes; anything else whole items.
pub(crate) fn read_depth(schema: &EntitySchema, count_only: bool, projection: bool) -> Depth {
    let keys_suffice = if count_only {
        !untagged_may_be_ours(schema)
    } else {
        projection
    };
    if keys_suffice {
        Depth::Keys
    } else {
        Depth::Whole
    }
}

/// The items of a page that `check` recognises (completed as recognised), in order; the rest
/// left out. A foreign one is skipped ([`skip`]: counted in the returned tally, the metric and
/// a `DEBUG` event) when `in_partitions` says it lies in the entity's partitions: a scan reads
/// every record of the table, and only those in the partitions are the read's to report.
pub(crate) fn keep_recognised<R>(
    items: Vec<Item>,
    depth: Depth,
    check: impl Fn(&mut Item, Depth) -> Result<R, NotOurs>,
    schema: &EntitySchema,
    in_partitions: impl Fn(&Item) -> bool,
) -> (Vec<Item>, Foreign) {
    let mut foreign = Foreign::default();
    let kept = items
        .into_iter()
        .filter_map(|mut item| match check(&mut item, depth) {
            Ok(_) => Some(item),
            Err(not_ours) => {
                if in_partitions(&item) {
                    skip(schema, &item, not_ours, &mut foreign);
                }
                None
            }
        })
        .collect();
    (kept, foreign)
}

/// Whether the item sits at a previous layout's place (a legacy key, a previous layout's
/// shard), where items written before the table adopted `sharded` carry no tag.
fn at_previous_place(schema: &EntitySchema, item: &Item) -> bool {
    item.get(schema.pk.attribute)
        .and_then(|v| v.as_s().ok())
        .is_some_and(|pk| is_previous_place(schema, pk))
}

/// Whether the partition key `pk` is a previous layout's place of the entity.
fn is_previous_place(schema: &EntitySchema, pk: &str) -> bool {
    layout::locate(schema.entity, &schema.pk, pk).is_some_and(|place| place.previous)
}

/// Whether an untagged item stored under partition key `pk` (at the entity's own key) is
/// the entity's: what a write's guard accepts there besides a tagged one. In a table that
/// tags, only at a previous layout's place (where items written before the adoption carry no
/// tag); in a table that recognises untagged items, anywhere.
pub(crate) fn untagged_is_ours_at(schema: &EntitySchema, pk: &str) -> bool {
    match schema.table_schema.recognition {
        Recognition::TagOrKey { .. } | Recognition::Key => true,
        // `Tag`, and any way of recognising the key model adds later (its enum is
        // `#[non_exhaustive]`): untagged items only where a tagging table accepts them.
        _ => is_previous_place(schema, pk),
    }
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
    let entity = crate::access::entity::decode::<E>(completed.clone()).map_err(|e| {
        ForeignReason::Unreadable {
            reason: e.to_string(),
        }
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
pub(crate) fn spelled_otherwise<E: ShardedEntity>(item: &Item, pk: &str, sk: Option<&str>) -> bool {
    let Ok(entity) = crate::access::entity::decode::<E>(item.clone()) else {
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
    let logical = |key: &str| match schema.pk.sharding.shard_count() {
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

/// What a read does with an item [`recognize`] refused: another entity's item is left out;
/// a foreign one is counted in `foreign`, in the metric, and named in a `DEBUG` event.
pub(crate) fn skip(schema: &EntitySchema, item: &Item, not_ours: NotOurs, foreign: &mut Foreign) {
    let NotOurs::Foreign(reason) = not_ours else {
        return;
    };
    let key = describe_key(schema, item);
    crate::telemetry::foreign_item(schema.entity, reason.label());
    tracing::debug!(
        entity = schema.entity,
        key = %key,
        reason = %reason,
        "sharded: skipped an item that is not the entity's"
    );
    foreign.add(ForeignItem { key, reason });
}

/// The error of a point read that found `item`, not one of `schema`'s, at its key.
pub(crate) fn point_read_error(schema: &EntitySchema, item: &Item, not_ours: NotOurs) -> Error {
    let key = describe_key(schema, item);
    match not_ours {
        NotOurs::OtherEntity(other) => Error::WrongEntity {
            expected: schema.entity,
            found: format!("a `{other}`"),
            attribute: schema.tag_attribute().unwrap_or_default(),
            key,
        },
        NotOurs::Foreign(reason) => {
            crate::telemetry::foreign_item(schema.entity, reason.label());
            Error::ForeignItem {
                entity: schema.entity,
                key,
                reason,
            }
        }
    }
}

/// Whether `item` (one a refused write returned, say) is one of `E`'s, its keys the
/// evidence where it has no tag.
pub(crate) fn is_ours<E: ShardedEntity>(item: &Item) -> bool {
    recognize::<E>(&mut item.clone(), Depth::Keys).is_ok()
}

/// The entity an item's tag names, for messages: `None` untagged, or in a table without a
/// tag.
pub(crate) fn tagged_as(schema: &EntitySchema, item: &Item) -> Option<String> {
    crate::access::entity::entity_of(schema, item).map(str::to_owned)
}
