//! A stream record decoded as a change of an entity or a collection: the move markers read,
//! the item recognised as reads recognise it, its shard and logical key from its keys.

use aws_sdk_dynamodb::types::AttributeValue;
use sharded_keys::layout;
use sharded_keys::schema::{EntitySchema, PreviousLayout};
use sharded_keys::table::TableSchema;
use sharded_runtime::__ops::{Depth, NotOurs as Refused};
use sharded_runtime::keys::Item;
use sharded_runtime::query::QuerySource;

use crate::change::{
    ChangeKind, Decoded, LogicalKey, Move, NeedsImage, NotOurs, NotOursReason, PhysicalKey,
};
use crate::record::{EventName, Record};

/// The attribute a layout move writes into the copies it makes and marks: the table's
/// `move_attribute`.
pub(crate) fn move_attribute(table: &TableSchema) -> &'static str {
    table.move_attribute
}

/// The marker of a move's copy at the new place: the same logical item, unchanged.
pub(crate) const MARK_COPY: &str = sharded_keys::table::MOVE_COPY;
/// The marker of a write that replaced an item at its new place: a modification.
pub(crate) const MARK_REPLACE: &str = sharded_keys::table::MOVE_REPLACE;
/// The marker of the old copy of a moved item, set before its delete.
pub(crate) const MARK_MOVED: &str = sharded_keys::table::MOVE_MOVED;

/// What a record's markers say it is, before any image is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Insert,
    /// An `INSERT` that replaced the item at its new place: a modification, old unknown.
    Replace,
    Modify,
    Remove,
    Arrival,
    Mark,
    Departure,
}

/// Whether `record` carries the images its event needs: the new one of an `INSERT`, the old
/// one of a `REMOVE`, both of a `MODIFY` (a move's mark is told apart by the old one).
pub(crate) fn has_images(record: &Record) -> bool {
    match record.event {
        EventName::Insert => record.new_image.is_some(),
        EventName::Modify => record.new_image.is_some() && record.old_image.is_some(),
        EventName::Remove => record.old_image.is_some(),
    }
}

/// What `record` is, by its event and the move markers of its images (`table`'s move
/// attribute): `None` when it lacks an image its class needs.
pub(crate) fn classify(record: &Record, table: &TableSchema) -> Option<Class> {
    if !has_images(record) {
        return None;
    }
    let attribute = move_attribute(table);
    fn mark<'a>(image: &'a Option<Item>, attribute: &str) -> Option<&'a str> {
        image
            .as_ref()
            .and_then(|i| i.get(attribute))
            .and_then(|v| v.as_s().ok())
            .map(String::as_str)
    }
    Some(match record.event {
        EventName::Insert => match mark(&record.new_image, attribute) {
            Some(MARK_COPY) => Class::Arrival,
            Some(MARK_REPLACE) => Class::Replace,
            // An old copy already marked and written back where it was (a stale copy's
            // delete that found it changed puts it back): part of a move, no change.
            Some(MARK_MOVED) => Class::Mark,
            _ => Class::Insert,
        },
        EventName::Modify => {
            let new_moved = mark(&record.new_image, attribute) == Some(MARK_MOVED);
            let old_moved = mark(&record.old_image, attribute) == Some(MARK_MOVED);
            if new_moved && !old_moved {
                Class::Mark
            } else {
                Class::Modify
            }
        }
        EventName::Remove => {
            if mark(&record.old_image, attribute) == Some(MARK_MOVED) {
                Class::Departure
            } else {
                Class::Remove
            }
        }
    })
}

/// Decodes a stream record as a change of `S`, an entity (`decode::<Score>`) or a collection
/// of entities (`decode::<GamePage>`, the enum `#[derive(ShardedCollection)]` reads).
///
/// The item is recognised as every read recognises it (the table's tag, or its keys where
/// it has none), the move attribute stripped first (it is no field of the entity); its shard
/// is parsed from its stored partition key and its [`LogicalKey`] is the partition key its
/// fields give under the current layout with the shard stripped, so every copy of one item
/// has the same one. A layout move is [`ChangeKind::Move`], told from the markers the write
/// paths set (no state is kept between records):
///
/// | record | is |
/// |---|---|
/// | `INSERT` whose new image's move attribute is `copy` | [`Move::Arrival`] |
/// | `INSERT` with `replace` | [`ChangeKind::Modify`] with `old: None` |
/// | `MODIFY` whose new image has `moved` and whose old image does not | [`Move::Mark`] |
/// | `REMOVE` whose old image has `moved` | [`Move::Departure`] |
/// | any other | by its event name |
///
/// A record whose item is not `S`'s is [`Decoded::NotOurs`], saying why; one without the
/// image it needs (a stream of view type `KEYS_ONLY`, `NEW_IMAGE` or `OLD_IMAGE`) is
/// [`Decoded::NeedsImage`]. Nothing is dropped, nothing panics.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::aws_sdk_dynamodb::types::AttributeValue;
/// use sharded::ShardedEntity;
/// use sharded_streams::{decode, ChangeKind, Decoded, EventName, Move, Record, SequenceNumber};
///
/// #[derive(ShardedEntity, Serialize, Deserialize, Debug, PartialEq)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// #[sk(template = "SCORE#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// let score = Score { game_id: "g1".into(), player_id: "p1".into(), score: 7 };
/// let item = score.to_item()?;
/// let keys = item.iter().filter(|(k, _)| *k == "pk" || *k == "sk").map(|(k, v)| (k.clone(), v.clone())).collect();
/// let insert = Record::new(EventName::Insert, SequenceNumber::parse("1")?, keys)
///     .with_images(None, Some(item.clone()));
/// let Decoded::Change(change) = decode::<Score>(&insert) else { panic!("a change") };
/// assert_eq!(change.key.pk, "GAME#g1");
/// assert_eq!(change.physical_pk, Score::pk("g1", "p1")?);
/// assert!(matches!(change.kind, ChangeKind::Insert { new } if new == score));
///
/// // The same item copied by a layout move: a move, not a new score.
/// let mut copy = item;
/// copy.insert("_sharded_move".into(), AttributeValue::S("copy".into()));
/// let arrival = insert.with_images(None, Some(copy));
/// let Decoded::Change(change) = decode::<Score>(&arrival) else { panic!("a change") };
/// assert!(matches!(change.kind, ChangeKind::Move(Move::Arrival { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decode<S: QuerySource>(record: &Record) -> Decoded<S> {
    let schema = S::LAYOUT;
    let key = physical_key(schema, record);
    let Some(class) = classify(record, schema.table_schema) else {
        return Decoded::NeedsImage(NeedsImage {
            sequence_number: record.sequence_number.clone(),
            event: record.event,
            key,
            view_type: record.view_type.clone(),
        });
    };
    let not_ours = |reason| {
        Decoded::NotOurs(NotOurs {
            sequence_number: record.sequence_number.clone(),
            event: record.event,
            key: key.clone(),
            reason,
        })
    };
    // `classify` checked the images its class reads.
    let read = |image: &Option<Item>| match image {
        Some(image) => read_image::<S>(image),
        None => Err(NotOursReason::Undecodable {
            reason: "the record has no such image".to_owned(),
        }),
    };
    let (old, new) = (&record.old_image, &record.new_image);
    let decoded = match class {
        Class::Insert => read(new).map(|(new, place)| (ChangeKind::Insert { new }, place)),
        Class::Replace => {
            read(new).map(|(new, place)| (ChangeKind::Modify { old: None, new }, place))
        }
        Class::Arrival => {
            read(new).map(|(new, place)| (ChangeKind::Move(Move::Arrival { new }), place))
        }
        Class::Modify | Class::Mark => read(old).and_then(|(old, _)| {
            read(new).map(|(new, place)| match class {
                Class::Mark => (ChangeKind::Move(Move::Mark { old, new }), place),
                _ => (
                    ChangeKind::Modify {
                        old: Some(old),
                        new,
                    },
                    place,
                ),
            })
        }),
        Class::Remove => read(old).map(|(old, place)| (ChangeKind::Remove { old }, place)),
        Class::Departure => {
            read(old).map(|(old, place)| (ChangeKind::Move(Move::Departure { old }), place))
        }
    };
    let (kind, logical_pk) = match decoded {
        Ok(decoded) => decoded,
        Err(reason) => return not_ours(reason),
    };
    let physical_pk = key.pk.clone().unwrap_or_default();
    let (shard, previous_layout) = shard_of(schema, &physical_pk);
    Decoded::Change(crate::change::Change {
        sequence_number: record.sequence_number.clone(),
        key: LogicalKey {
            pk: logical_pk,
            sk: key.sk.clone(),
        },
        physical_pk,
        shard,
        previous_layout,
        kind,
    })
}

/// One image read as `S`: recognised (the move attribute stripped first), decoded, and the
/// logical partition key its fields give.
fn read_image<S: QuerySource>(image: &Item) -> Result<(S, String), NotOursReason> {
    let schema = S::LAYOUT;
    let mut item = image.clone();
    item.remove(move_attribute(schema.table_schema));
    S::recognize(&mut item, Depth::Whole).map_err(|refused| match refused {
        Refused::OtherEntity(entity) => NotOursReason::OtherEntity { entity },
        Refused::Foreign(reason) => NotOursReason::Foreign(reason),
    })?;
    let logical = S::placement(&item).map(|(current, _)| logical_pk(schema, &current));
    let value = S::from_source_item(item).map_err(|e| NotOursReason::Undecodable {
        reason: e.to_string(),
    })?;
    let logical = logical.ok_or_else(|| NotOursReason::Undecodable {
        reason: "its fields give no key under the current layout".to_owned(),
    })?;
    Ok((value, logical))
}

/// The key attributes of the record (from its keys, or an image where they lack one).
fn physical_key(schema: &EntitySchema, record: &Record) -> PhysicalKey {
    let text = |attribute: &str| {
        [
            Some(&record.keys),
            record.new_image.as_ref(),
            record.old_image.as_ref(),
        ]
        .into_iter()
        .flatten()
        .find_map(|item| match item.get(attribute) {
            Some(AttributeValue::S(s)) => Some(s.clone()),
            _ => None,
        })
    };
    PhysicalKey {
        pk: text(schema.pk.attribute),
        sk: schema.sk.and_then(|sk| text(sk.attribute)),
    }
}

/// `current` (a partition key of the current layout) without its shard.
fn logical_pk(schema: &EntitySchema, current: &str) -> String {
    match schema.pk.shard_bound() {
        Some(n) => schema
            .pk
            .suffix
            .split(current, n)
            .map_or_else(|_| current.to_owned(), |(logical, _)| logical.to_owned()),
        None => current.to_owned(),
    }
}

/// The shard a stored partition key is on, and whether it is the previous layout's place,
/// parsed as reads locate an item: the current layout first.
fn shard_of(schema: &EntitySchema, pk: &str) -> (Option<u32>, bool) {
    let key = &schema.pk;
    let Some(place) = layout::locate(schema.entity, key, pk) else {
        return (None, false);
    };
    if place.current {
        let shard = key
            .shard_bound()
            .and_then(|n| key.suffix.split(pk, n).ok())
            .map(|(_, shard)| shard);
        return (shard, false);
    }
    let shard = match key.previous {
        Some(PreviousLayout::Shards { n, .. }) => {
            key.previous_suffix().split(pk, n).ok().map(|(_, s)| s)
        }
        _ => None,
    };
    (shard, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::SequenceNumber;
    use serde::{Deserialize, Serialize};
    use sharded::ShardedEntity;

    #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[pk(
        template = "GAME#{game_id}",
        shard = "hash(player_id)",
        n = 8,
        previous_n = 4
    )]
    #[sk(template = "SCORE#{player_id}")]
    #[serde(deny_unknown_fields)]
    struct Score {
        game_id: String,
        player_id: String,
        points: u64,
    }

    #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[pk(
        template = "GAME#{game_id}",
        shard = "hash(comment_id)",
        n = 8,
        previous_n = 4
    )]
    #[sk(template = "COMMENT#{comment_id}")]
    struct Comment {
        game_id: String,
        comment_id: String,
        text: String,
    }

    #[derive(sharded::ShardedCollection, Debug)]
    enum GamePage {
        Score(Score),
        Comment(Comment),
    }

    fn score(points: u64) -> Score {
        Score {
            game_id: "g1".into(),
            player_id: "p1".into(),
            points,
        }
    }

    fn marked(item: &Item, mark: &str) -> Item {
        let mut item = item.clone();
        item.insert("_sharded_move".into(), AttributeValue::S(mark.to_owned()));
        item
    }

    fn record(event: EventName, old: Option<Item>, new: Option<Item>) -> Record {
        let keys = new
            .as_ref()
            .or(old.as_ref())
            .map(|i| {
                i.iter()
                    .filter(|(k, _)| *k == "pk" || *k == "sk")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        Record::new(event, SequenceNumber::parse("100").unwrap(), keys).with_images(old, new)
    }

    fn kind(record: &Record) -> ChangeKind<Score> {
        match decode::<Score>(record) {
            Decoded::Change(change) => {
                assert_eq!(change.key.pk, "GAME#g1");
                assert_eq!(change.key.sk.as_deref(), Some("SCORE#p1"));
                change.kind
            }
            other => panic!("not a change: {other:?}"),
        }
    }

    #[test]
    fn the_markers_tell_moves_from_changes() {
        let (a, b) = (score(1).to_item().unwrap(), score(2).to_item().unwrap());
        use EventName::*;
        assert_eq!(
            kind(&record(Insert, None, Some(a.clone()))),
            ChangeKind::Insert { new: score(1) }
        );
        assert_eq!(
            kind(&record(Insert, None, Some(marked(&a, "copy")))),
            ChangeKind::Move(Move::Arrival { new: score(1) })
        );
        assert_eq!(
            kind(&record(Insert, None, Some(marked(&b, "replace")))),
            ChangeKind::Modify {
                old: None,
                new: score(2)
            }
        );
        assert_eq!(
            kind(&record(Modify, Some(a.clone()), Some(b.clone()))),
            ChangeKind::Modify {
                old: Some(score(1)),
                new: score(2)
            }
        );
        assert_eq!(
            kind(&record(Modify, Some(a.clone()), Some(marked(&a, "moved")))),
            ChangeKind::Move(Move::Mark {
                old: score(1),
                new: score(1)
            })
        );
        // Already marked before: a change of the marked copy, by its event name.
        assert_eq!(
            kind(&record(
                Modify,
                Some(marked(&a, "moved")),
                Some(marked(&b, "moved"))
            )),
            ChangeKind::Modify {
                old: Some(score(1)),
                new: score(2)
            }
        );
        assert_eq!(
            kind(&record(Remove, Some(marked(&a, "moved")), None)),
            ChangeKind::Move(Move::Departure { old: score(1) })
        );
        assert_eq!(
            kind(&record(Remove, Some(a), None)),
            ChangeKind::Remove { old: score(1) }
        );
    }

    #[test]
    fn the_shard_and_layout_come_from_the_stored_key() {
        let item = score(1).to_item().unwrap();
        let current = Score::pk("g1", "p1").unwrap();
        let Decoded::Change(change) =
            decode::<Score>(&record(EventName::Insert, None, Some(item.clone())))
        else {
            panic!("a change")
        };
        assert_eq!(change.physical_pk, current);
        assert_eq!(change.shard, Some(Score::shard_for("p1").unwrap()));
        assert!(!change.previous_layout);
        // The same item at a previous layout's shard past the current count: not possible
        // (4 < 8), so a shard the previous layout alone has does not exist here; a key at
        // shard 3 parses under both and is read as the current layout's.
        let mut old = item;
        old.insert("pk".into(), AttributeValue::S("GAME#g1#3".into()));
        let Decoded::Change(change) = decode::<Score>(&record(EventName::Remove, Some(old), None))
        else {
            panic!("a change")
        };
        assert_eq!((change.shard, change.previous_layout), (Some(3), false));
        assert_eq!(change.key.pk, "GAME#g1", "the logical key is the same");
    }

    #[test]
    fn records_that_are_not_the_entitys_say_why() {
        let comment = Comment {
            game_id: "g1".into(),
            comment_id: "c1".into(),
            text: "gg".into(),
        }
        .to_item()
        .unwrap();
        let other = decode::<Score>(&record(EventName::Insert, None, Some(comment.clone())));
        assert!(
            matches!(&other, Decoded::NotOurs(n) if n.reason == NotOursReason::OtherEntity { entity: "Comment".into() }),
            "{other:?}"
        );
        let mut untagged = comment;
        untagged.remove("_entity");
        let foreign = decode::<Score>(&record(EventName::Insert, None, Some(untagged)));
        assert!(
            matches!(&foreign, Decoded::NotOurs(n) if matches!(n.reason, NotOursReason::Foreign(_))),
            "{foreign:?}"
        );
        let mut broken = score(1).to_item().unwrap();
        broken.insert("points".into(), AttributeValue::S("many".into()));
        let undecodable = decode::<Score>(&record(EventName::Insert, None, Some(broken)));
        assert!(
            matches!(&undecodable, Decoded::NotOurs(n) if matches!(n.reason, NotOursReason::Undecodable { .. })),
            "{undecodable:?}"
        );
    }

    #[test]
    fn a_record_without_its_images_names_the_view_type_needed() {
        let item = score(1).to_item().unwrap();
        for (event, old, new) in [
            (EventName::Insert, Some(item.clone()), None),
            (EventName::Modify, None, Some(item.clone())),
            (EventName::Remove, None, None),
        ] {
            let r = record(event, old, new).with_view_type("KEYS_ONLY");
            let Decoded::NeedsImage(missing) = decode::<Score>(&r) else {
                panic!("{event:?} needs an image")
            };
            assert_eq!(missing.view_type.as_deref(), Some("KEYS_ONLY"));
            assert!(missing.to_string().contains("NEW_AND_OLD_IMAGES"));
        }
    }

    #[test]
    fn a_collection_decodes_each_member_and_its_moves() {
        let comment = Comment {
            game_id: "g1".into(),
            comment_id: "c1".into(),
            text: "gg".into(),
        };
        let item = comment.to_item().unwrap();
        let Decoded::Change(change) = decode::<GamePage>(&record(
            EventName::Insert,
            None,
            Some(marked(&item, "copy")),
        )) else {
            panic!("a change")
        };
        assert!(
            matches!(change.kind, ChangeKind::Move(Move::Arrival { new: GamePage::Comment(c) }) if c == comment)
        );
        let Decoded::Change(change) = decode::<GamePage>(&record(
            EventName::Insert,
            None,
            Some(score(3).to_item().unwrap()),
        )) else {
            panic!("a change")
        };
        assert!(
            matches!(change.kind, ChangeKind::Insert { new: GamePage::Score(s) } if s == score(3))
        );
    }
}
