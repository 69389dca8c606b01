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
//! `sharded::migrate::Report`), the metric `sharded.foreign_items` counts it by
//! reason, and a `DEBUG` event names its key. A point read (`get`) of a key that holds a
//! foreign item returns [`Error::ForeignItem`], since "no item" would not be true. The
//! migration leaves a foreign item exactly where it is and lists it.

pub use crate::error::foreign::{Foreign, ForeignItem, ForeignReason, MAX_FOREIGN_EXAMPLES};
use crate::error::Error;
use crate::item::describe_key;
use crate::item::Item;
use crate::keys::layout;
use crate::keys::schema::{EntitySchema, Recognition};

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
pub(crate) fn at_previous_place(schema: &EntitySchema, item: &Item) -> bool {
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

/// What a read does with an item [`recognize`](crate::access::entity::recognize) refused: another entity's item is left out;
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

/// The entity an item's tag names, for messages: `None` untagged, or in a table without a
/// tag.
pub(crate) fn tagged_as(schema: &EntitySchema, item: &Item) -> Option<String> {
    entity_of(schema, item).map(str::to_owned)
}

/// The entity an item of `schema`'s table says it is, from the table's tag attribute (none
/// in a table without a tag).
pub(crate) fn entity_of<'a>(schema: &EntitySchema, item: &'a Item) -> Option<&'a str> {
    item.get(schema.tag_attribute()?)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}
