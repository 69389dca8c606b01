//! What the migration makes of an item it reads: the entity's, to move, tag or leave in place;
//! another record, not its concern; or an item in the entity's partitions that is not the
//! entity's, left alone and listed. The rule every read follows, held to before anything is
//! written.

use sharded_keys::layout;
use sharded_runtime::__ops::{
    decode, not_canonical, recognize, spelled_otherwise, unreadable, Depth, NotOurs, Placement,
};
use sharded_runtime::keys::{Item, ItemKeyDisplay};
use sharded_runtime::query::ForeignReason;
use sharded_runtime::{Error, ShardedEntity};

/// What an item read is, for the migration.
#[derive(Debug)]
pub(crate) enum Found {
    /// Not in the entity's partitions at all (a whole-table scan reads every record of the
    /// table), or another entity's.
    NotOurs,
    /// At its current place.
    InPlace,
    /// At its current place, untagged, in a table that tags: another service's item of the
    /// entity, to be tagged where it is.
    Tag,
    /// Elsewhere: to be moved.
    Move,
    /// Its keys are not in canonical form and the run re-keys such items: to be moved to
    /// the key its attributes give.
    Rekey,
    /// In the entity's partitions but not the entity's (see
    /// the runtime's `recognize`): left exactly where it is, and reported.
    Foreign(ForeignReason),
}

/// What `item` is: see [`Found`]. An item is adopted (moved as the entity) only when its
/// keys parse, the item reads as the entity (its key fields taken from its keys where it
/// lacks them) and builds back exactly the keys it is stored under, at a place of the
/// entity's layouts: the rule every read follows, held to here before anything is written.
pub(crate) fn classify<E: ShardedEntity>(item: &Item, rekey: bool) -> Found {
    let schema = E::SCHEMA;
    let text = |attribute: &str| item.get(attribute).and_then(|v| v.as_s().ok());
    let Some(stored) = text(schema.pk.attribute) else {
        return Found::NotOurs;
    };
    let place = layout::locate(schema.entity, &schema.pk, stored);
    let mut completed = item.clone();
    match recognize::<E>(&mut completed, Depth::Whole) {
        Ok(()) => {}
        Err(NotOurs::OtherEntity(_)) => return Found::NotOurs,
        // Not a key of the entity's partitions: another record of the table, not ours to
        // report.
        Err(NotOurs::Foreign(_)) if place.is_none() => return Found::NotOurs,
        // The entity's item, its key spelled another way (the item reads as the entity and
        // its canonical key spells the same values): moved only when asked.
        Err(NotOurs::Foreign(ForeignReason::NotCanonical { .. })) if rekey => return Found::Rekey,
        Err(NotOurs::Foreign(reason)) => return Found::Foreign(reason),
    }
    // A tagged item was taken at its word: it is held to the same keys now.
    let unreadable_for = |e: Error| Found::Foreign(unreadable(e.to_string()));
    let entity = match decode::<E>(completed) {
        Ok(entity) => entity,
        Err(e) => return unreadable_for(e),
    };
    let placement = match Placement::of(&entity) {
        Ok(placement) => placement,
        Err(e) => return unreadable_for(e),
    };
    let sort_key = schema.sk.and_then(|sk| text(sk.attribute));
    let canonical = placement.sk() == sort_key.map(String::as_str)
        && place.is_some_and(|place| placement.may_be_at(stored, place));
    if !canonical {
        let reason = format!(
            "its fields give the key {}, not the one it is stored under",
            ItemKeyDisplay {
                pk: Some(placement.pk().to_owned()),
                sk: placement.sk().map(str::to_owned),
            }
        );
        // Tagged as the entity's: the same values spelled otherwise are re-keyable; other
        // values are an item whose attributes disagree with its key.
        return match spelled_otherwise::<E>(item, stored, sort_key.map(String::as_str)) {
            true if rekey => Found::Rekey,
            true => Found::Foreign(not_canonical(reason)),
            false => Found::Foreign(unreadable(reason)),
        };
    }
    if stored != placement.pk() {
        Found::Move
    } else if schema
        .tag_attribute()
        .is_some_and(|tag| !item.contains_key(tag))
    {
        Found::Tag
    } else {
        Found::InPlace
    }
}
