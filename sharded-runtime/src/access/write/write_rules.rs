//! The rules every write obeys, whatever sends it (`Repo::put`, an `Update`, a batch, a
//! `Transaction` action, a migration's move): the physical item and its key sizes, the entity
//! guard, the version check and bump, and the `created_at`/`updated_at` stamps (the idempotency
//! token of a `TransactWriteItems` and its resends are [`idempotent`](super::idempotent)'s). Each operation states only what is its own
//! (which guard, which condition); where an item lives is [`placement`](crate::access::placement)'s.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::access::clock_values::now_value;
use crate::access::condition::{Condition, Names, Values};
use crate::access::entity::ShardedEntity;
use crate::access::placement::Placement;
use crate::access::recognize::untagged_is_ours_at;
use crate::capacity::units::check_item_size;
use crate::error::{Error, UpdateRefusal};
use crate::item::Item;
use crate::keys::schema::EntitySchema;

/// The item `entity` is stored as (its fields, key attributes and entity attribute), refused
/// before sending when over DynamoDB's 400 KB or when a key is over its size limits.
/// Written at `placement`: an entity whose layout is decided per key has its key's place
/// there, where `to_item` has its place under the declared `n`.
pub(crate) fn physical_item<E: ShardedEntity>(
    entity: &E,
    placement: &Placement,
) -> Result<Item, Error> {
    let mut item = entity.to_item()?;
    if placement.layout().is_some() {
        item.insert(
            E::SCHEMA.pk.attribute.to_owned(),
            AttributeValue::S(placement.pk().to_owned()),
        );
    }
    check_item_size(E::SCHEMA, &item)?;
    Ok(item)
}

/// The primary key attributes of a stored (or about to be stored) item.
pub fn key_of(schema: &EntitySchema, item: &Item) -> Item {
    let mut key = Item::new();
    for attribute in [Some(schema.pk.attribute), schema.sk.map(|s| s.attribute)]
        .into_iter()
        .flatten()
    {
        if let Some(value) = item.get(attribute) {
            key.insert(attribute.to_owned(), value.clone());
        }
    }
    key
}

/// The condition "the item stored under partition key `pk` is this entity's", in the
/// table's terms (see [`recognize`](crate::access::recognize)), for an update, a `delete_if`, a check,
/// the old half of a move: its tag is the entity's name, or it has none where an untagged
/// item at the entity's own key is the entity's ([`untagged_is_ours_at`]: a table that
/// recognises untagged items, or a previous layout's place); in a table without a tag, an
/// item at the entity's key is the entity's. Registers its placeholders (`#pk`, `#et`, `:et`).
pub(crate) fn own_entity(
    schema: &EntitySchema,
    pk: &str,
    names: &mut Names,
    values: &mut Values,
) -> String {
    let Some(attribute) = schema.table_schema.recognition.tag_attribute() else {
        names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
        return "attribute_exists(#pk)".to_owned();
    };
    names.insert("#et".to_owned(), attribute.to_owned());
    values.insert(
        ":et".to_owned(),
        AttributeValue::S(schema.entity.to_owned()),
    );
    if untagged_is_ours_at(schema, pk) {
        // Untagged, but there: `attribute_not_exists(#et)` alone holds for no item at all.
        names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
        "#et = :et OR (attribute_exists(#pk) AND attribute_not_exists(#et))".to_owned()
    } else {
        "#et = :et".to_owned()
    }
}

/// `condition` ready to be and-ed: parenthesised when it is an OR. Never twice: DynamoDB
/// refuses redundant parentheses.
fn grouped(condition: &str) -> String {
    if condition.contains(" OR ") {
        format!("({condition})")
    } else {
        condition.to_owned()
    }
}

/// The guard of `put` and `delete` at partition key `pk`: the key holds no item, or one of
/// this entity (see [`own_entity`]), so a write never overwrites or deletes another record.
/// Registers its placeholders.
pub(crate) fn entity_guard(
    schema: &EntitySchema,
    pk: &str,
    names: &mut Names,
    values: &mut Values,
) -> String {
    names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
    let own = own_entity(schema, pk, names, values);
    format!("attribute_not_exists(#pk) OR {own}")
}

/// The guard of an update at partition key `pk`: the item exists and is of this entity (an
/// update never creates a partial item). Registers its placeholders.
pub(crate) fn existing_entity(
    schema: &EntitySchema,
    pk: &str,
    names: &mut Names,
    values: &mut Values,
) -> String {
    names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
    let own = own_entity(schema, pk, names, values);
    format!("attribute_exists(#pk) AND {}", grouped(&own))
}

/// The guard of a write that creates its item (`put_new`, the new half of a move): the key
/// holds nothing. Registers `#pk`.
pub(crate) fn no_item(schema: &EntitySchema, names: &mut Names) -> &'static str {
    names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
    "attribute_not_exists(#pk)"
}

/// The condition of a guarded put (`Repo::put`, `put_if`, a transaction's `put`) at
/// partition key `pk`: the key holds no item or one of this entity and, for a versioned entity, the version read (a new
/// item only from version 0). Registers its placeholders (and, versioned, `#ver`, `:ver`).
pub(crate) fn put_guard(
    schema: &EntitySchema,
    pk: &str,
    read_version: Option<u64>,
    names: &mut Names,
    values: &mut Values,
) -> String {
    match schema.version.zip(read_version) {
        None => entity_guard(schema, pk, names, values),
        Some((attribute, read)) => {
            names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
            let own = grouped(&own_entity(schema, pk, names, values));
            names.insert("#ver".to_owned(), attribute.to_owned());
            values.insert(":ver".to_owned(), AttributeValue::N(read.to_string()));
            if read == 0 {
                format!("attribute_not_exists(#pk) OR ({own} AND #ver = :ver)")
            } else {
                format!("attribute_exists(#pk) AND {own} AND #ver = :ver")
            }
        }
    }
}

/// `base` and-ed with the user's condition, rendered into the same placeholders; `base` alone
/// without one. The base may be an OR: parenthesised, so the AND applies to all of it.
pub(crate) fn with_condition<E>(
    base: &str,
    condition: Option<Condition<E>>,
    names: &mut Names,
    values: &mut Values,
) -> Result<String, Error> {
    Ok(match condition {
        Some(c) => format!("({base}) AND ({})", c.erase().render(names, values)?),
        None => base.to_owned(),
    })
}

/// What a put maintains in the item: the version (bumped from the struct's, which is
/// returned as the version read), `updated_at` (now) and `created_at` (now, unless the struct
/// carries one).
pub(crate) fn stamp_write(schema: &EntitySchema, item: &mut Item) -> Result<Option<u64>, Error> {
    let mut read = None;
    if let Some(attribute) = schema.version {
        let entity = schema.entity;
        let version = stored_version(Some(item), attribute)
            .ok_or(UpdateRefusal::VersionNotWhole { entity, attribute })?;
        let next =
            (version.checked_add(1)).ok_or(UpdateRefusal::VersionOverflow { entity, attribute })?;
        item.insert(attribute.to_owned(), AttributeValue::N(next.to_string()));
        read = Some(version);
    }
    if let Some(updated) = schema.updated_at {
        item.insert(updated.attribute.to_owned(), now_value(updated.format));
    }
    if let Some(created) = schema.created_at {
        let unset = matches!(
            item.get(created.attribute),
            None | Some(AttributeValue::Null(_))
        );
        if unset {
            item.insert(created.attribute.to_owned(), now_value(created.format));
        }
    }
    Ok(read)
}

/// What an update maintains, as clauses of its expression: `ADD version 1` (refusing an
/// update that sets the version itself) and `SET updated_at = now` (unless the update sets
/// it). `changed` lists the attributes the update changes.
pub(crate) fn stamp_update(
    schema: &EntitySchema,
    changed: &[&'static str],
    names: &mut Names,
    values: &mut Values,
    sets: &mut Vec<String>,
    adds: &mut Vec<String>,
) -> Result<(), Error> {
    if let Some(version) = schema.version {
        if changed.contains(&version) {
            let (entity, attribute) = (schema.entity, version);
            return Err(UpdateRefusal::VersionChanged { entity, attribute }.into());
        }
        names.insert("#uver".to_owned(), version.to_owned());
        values.insert(":uone".to_owned(), AttributeValue::N("1".to_owned()));
        adds.push("#uver :uone".to_owned());
    }
    // An untagged item of the entity's (another service's, adopted) is tagged by the first
    // update, as a put would write it: the tag is the same placeholders as the guard's.
    if let Some(tag) = schema.table_schema.recognition.tag_attribute() {
        names.insert("#et".to_owned(), tag.to_owned());
        values.insert(
            ":et".to_owned(),
            AttributeValue::S(schema.entity.to_owned()),
        );
        sets.push("#et = :et".to_owned());
    }
    if let Some(updated) = schema.updated_at {
        if !changed.contains(&updated.attribute) {
            names.insert("#uupd".to_owned(), updated.attribute.to_owned());
            values.insert(":uupd".to_owned(), now_value(updated.format));
            sets.push("#uupd = :uupd".to_owned());
        }
    }
    Ok(())
}

/// The condition that the stored version is `expected` (an update's `if_version`), once
/// [`stamp_update`] registered `#uver`; `None` for an entity without a version.
pub(crate) fn expect_version(
    schema: &EntitySchema,
    expected: Option<u64>,
    values: &mut Values,
) -> Option<&'static str> {
    schema.version?;
    values.insert(":uexp".to_owned(), AttributeValue::N(expected?.to_string()));
    Some("#uver = :uexp")
}

/// The version stored in `item`, if it has one.
pub(crate) fn stored_version(item: Option<&Item>, attribute: &str) -> Option<u64> {
    item?.get(attribute)?.as_n().ok()?.parse().ok()
}
