//! One partition key's layout applied to values: the physical key of one item, its shard,
//! every shard of a logical key, the key an item had under the previous layout, and parsing a
//! physical key back.
//!
//! The generated key builders call these with their key's schema (`&__SCHEMA.pk`,
//! `&__SCHEMA.gsis[i].pk`), so the shard count, the hashed fields, the template and the
//! previous layout are read from the schema, the one place the attribute declares them, and
//! never copied into generated bodies as literals.

use crate::attribute::KeyValue;
use crate::encoding::KeyPart;
use crate::error::KeyError;
use crate::schema::{
    EntitySchema, PartitionKeySchema, PreviousLayout, PreviousPlacement, Sharding,
};
use crate::shards::{identity, Partitions, ShardKeys};
use crate::suffix::ShardSuffix;
use crate::template::{
    build_hashed_key, build_key, build_key_on_shard, parse_key_with, shard_of, shard_of_text,
    KeyContext, ParsedKey,
};

/// What decides an item's shard, as a key builder has it.
#[derive(Clone, Copy)]
pub enum ShardBy<'a> {
    /// `shard = "hash(..)"`: the values of the hashed fields, in their declared order.
    Fields(&'a [&'a dyn KeyPart]),
    /// `shard = "random"`: the item's sort key; the shard is the hash of the item's own
    /// identity (logical key, `#`, sort key).
    SortKey(&'a str),
    /// An unsharded key, or a previous layout that is an unsharded legacy key.
    Unsharded,
}

#[inline(always)]
fn context(entity: &'static str, key: &PartitionKeySchema) -> KeyContext {
    KeyContext {
        entity,
        attribute: key.attribute,
    }
}

/// The physical partition key of one item under `key`'s current layout.
///
/// ```
/// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
/// use sharded::keys::KeyPart;
/// static T: KeyTemplate = KeyTemplate::new("GAME#{game_id}", &[Segment::literal("GAME#"), Segment::field("game_id")]);
/// static PK: PartitionKeySchema = PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 10));
/// let key = sharded::__private::layout::item_key(
///     "Score",
///     &PK,
///     &[&"g1" as &dyn KeyPart],
///     sharded::__private::ShardBy::Fields(&[&"player-1"]),
/// )?;
/// assert_eq!(key, "GAME#g1#0");
/// # Ok::<(), sharded::KeyError>(())
/// ```
// Always inlined into the generated builder, with `place`: there the schema is an immutable
// static, so the shard count and the sharding kind fold to constants and `hash % n` becomes a
// multiply, as it was when the count was a literal (BENCHMARKS.md, "Key building").
#[inline(always)]
pub fn item_key(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
    by: ShardBy<'_>,
) -> Result<String, KeyError> {
    place(
        entity,
        key,
        values,
        by,
        key.sharding.shard_count().map(|n| (n, &key.suffix)),
    )
}

/// The partition key one item had under the previous layout, while a transition is declared
/// (`None` otherwise, and for a previous layout whose placement is unknown: then any of its
/// shards may hold the item, see [`previous_shards`]). `legacy_values` are the values of the
/// legacy template's fields.
pub fn previous_item_key(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
    by: ShardBy<'_>,
    legacy_values: &[&dyn KeyPart],
) -> Result<Option<String>, KeyError> {
    match key.previous {
        None
        | Some(PreviousLayout::Shards {
            placement: PreviousPlacement::Unknown,
            ..
        }) => Ok(None),
        Some(PreviousLayout::Shards { n, .. }) => {
            let suffix = key.previous_suffix();
            place(entity, key, values, by, Some((n, &suffix))).map(Some)
        }
        Some(PreviousLayout::Legacy { template }) => {
            build_key(context(entity, key), template, legacy_values).map(Some)
        }
    }
}

/// Every previous shard that may hold the item whose current partition key is `current`,
/// while a previous layout of unknown placement is declared (`previous_shard = "unknown"`):
/// the logical key of `current` over the previous count and spelling. `None` for any other
/// layout, or when `current` is no key of the current layout.
///
/// ```
/// use sharded::schema::*;
/// static T: KeyTemplate = KeyTemplate::new("CANDIDATE#{id}", &[Segment::literal("CANDIDATE#"), Segment::field("id")]);
/// static PK: PartitionKeySchema = PartitionKeySchema::new("PK", &T, Sharding::hash(&["voter"], 4))
///     .with_previous(PreviousLayout::shards(3).with_suffix(ShardSuffix::declared("#SHARD_{shard}"))
///         .with_placement(PreviousPlacement::Unknown));
/// let shards = sharded::__private::layout::previous_shards(&PK, "CANDIDATE#A#2").unwrap();
/// assert_eq!(shards.collect::<Vec<_>>(), ["CANDIDATE#A#SHARD_0", "CANDIDATE#A#SHARD_1", "CANDIDATE#A#SHARD_2"]);
/// ```
pub fn previous_shards(key: &PartitionKeySchema, current: &str) -> Option<ShardKeys> {
    let Some(PreviousLayout::Shards {
        n,
        placement: PreviousPlacement::Unknown,
        ..
    }) = key.previous
    else {
        return None;
    };
    let logical = match key.sharding.shard_count() {
        Some(current_n) => key.suffix.split(current, current_n).ok()?.0,
        None => current,
    };
    Some(ShardKeys::new(logical.to_owned(), Some(n)).with_suffix(key.previous_suffix()))
}

/// The key of `values` placed by `by` over `shards` shards spelled by their suffix (`None`:
/// unsharded).
#[inline(always)]
fn place(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
    by: ShardBy<'_>,
    shards: Option<(u32, &ShardSuffix)>,
) -> Result<String, KeyError> {
    let ctx = context(entity, key);
    let (Some((n, suffix)), Sharding::Hash { fields, .. }, ShardBy::Fields(shard_values)) =
        (shards, key.sharding, by)
    else {
        let mut out = build_key(ctx, key.template, values)?;
        let Some((n, suffix)) = shards else {
            return Ok(out);
        };
        let shard = match by {
            ShardBy::SortKey(sk) => shard_of_text(&identity(&out, Some(sk)), n),
            // A hashed key's fields always come with it (above); without them only shard 0
            // is defined.
            ShardBy::Fields(_) | ShardBy::Unsharded => 0,
        };
        suffix.write(&mut out, shard);
        return Ok(out);
    };
    build_hashed_key(ctx, key.template, values, fields, shard_values, n, suffix)
}

/// The shard (`0..n`) the hashed fields' values give under `key`'s current layout (0 for a
/// key that is not hash-sharded).
#[inline(always)]
pub fn shard_for(
    entity: &'static str,
    key: &PartitionKeySchema,
    shard_values: &[&dyn KeyPart],
) -> Result<u32, KeyError> {
    match key.sharding {
        Sharding::Hash { fields, n } => shard_of(context(entity, key), fields, shard_values, n),
        _ => Ok(0),
    }
}

/// The shard of an identity-sharded GSI key: the hash of the base item's identity (its
/// logical partition key, `#`, its sort key; rule 4 of the hash spec) over the key's shard
/// count.
#[inline]
pub fn identity_shard(key: &PartitionKeySchema, identity: &str) -> u32 {
    shard_of_text(identity, key.sharding.shard_count().unwrap_or(1))
}

/// The physical key of a logical key on an explicit shard; [`KeyError::ShardOutOfRange`] past
/// the current shard count (past `max_n` for a per-key layout, whose widened keys have more
/// shards than the declared `n`).
pub fn key_on_shard(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
    shard: u32,
) -> Result<String, KeyError> {
    let n = key.shard_bound().unwrap_or(1);
    build_key_on_shard(
        context(entity, key),
        key.template,
        values,
        shard,
        n,
        &key.suffix,
    )
}

/// Every physical key of a logical key under the current layout.
pub fn all_shards(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
) -> Result<ShardKeys, KeyError> {
    let logical = build_key(context(entity, key), key.template, values)?;
    Ok(ShardKeys::new(logical, key.sharding.shard_count()).with_suffix(key.suffix))
}

/// Every partition that may hold a logical key's items: the current layout's shards and,
/// while a transition is declared, the previous layout's.
pub fn partitions(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
    legacy_values: &[&dyn KeyPart],
) -> Result<Partitions, KeyError> {
    let ctx = context(entity, key);
    let logical = build_key(ctx, key.template, values)?;
    let previous = match key.previous {
        None => None,
        Some(PreviousLayout::Shards { n, .. }) => {
            Some(ShardKeys::new(logical.clone(), Some(n)).with_suffix(key.previous_suffix()))
        }
        Some(PreviousLayout::Legacy { template }) => Some(ShardKeys::new(
            build_key(ctx, template, legacy_values)?,
            None,
        )),
    };
    let current = ShardKeys::new(logical, key.sharding.shard_count()).with_suffix(key.suffix);
    Ok(Partitions::new(current, previous))
}

/// Which of `key`'s layouts a stored partition key parses under (a shard below `n`
/// parses under both layouts of a resharding that keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// It is a key of the current layout.
    pub current: bool,
    /// It is a key of the previous layout, while a transition is declared.
    pub previous: bool,
}

/// The partition key prefix of the items `sharded` keeps in a table for itself: a per-key
/// layout directory (`_sharded#layouts#<Entity>`), a migration unit's record
/// (`_sharded#migration#<Entity>#<unit>`). Such a key is never an entity's, whatever its
/// template: a bare `{field}` template would otherwise read one as an item of the entity.
pub const OWN_ITEMS_PREFIX: &str = "_sharded#";

/// Where the stored partition key `text` sits among `key`'s layouts, or `None` when it is no
/// key of any of them (its template, suffix and shard range checked, not its fields' types),
/// or is one of `sharded`'s own items ([`OWN_ITEMS_PREFIX`]). Every check of an untagged
/// item's keys starts here.
///
/// ```
/// use sharded::schema::*;
/// static T: KeyTemplate = KeyTemplate::new("G#{g}", &[Segment::literal("G#"), Segment::field("g")]);
/// static PK: PartitionKeySchema = PartitionKeySchema::new("pk", &T, Sharding::random(4))
///     .with_previous(PreviousLayout::legacy(&T));
/// use sharded::__private::layout::locate;
/// assert!(locate("E", &PK, "G#a#3").is_some_and(|p| p.current && !p.previous));
/// assert!(locate("E", &PK, "G#a").is_some_and(|p| p.previous && !p.current));
/// assert!(locate("E", &PK, "H#a").is_none());
/// ```
pub fn locate(entity: &'static str, key: &PartitionKeySchema, text: &str) -> Option<Place> {
    if text.starts_with(OWN_ITEMS_PREFIX) {
        return None;
    }
    let ctx = context(entity, key);
    let current = parse(entity, key, text).is_ok();
    let previous = match key.previous {
        None => false,
        Some(PreviousLayout::Shards { n, .. }) => {
            parse_key_with(ctx, key.template, text, Some((n, key.previous_suffix()))).is_ok()
        }
        Some(PreviousLayout::Legacy { template }) => {
            parse_key_with(ctx, template, text, None).is_ok()
        }
    };
    (current || previous).then_some(Place { current, previous })
}

/// Parses a stored partition key under whichever of `key`'s layouts it belongs to: the
/// current one first, then the previous one (its shards, or its legacy template). What an
/// untagged item's key fields are read from.
pub fn parse_stored<'a>(
    entity: &'static str,
    key: &PartitionKeySchema,
    text: &'a str,
) -> Result<ParsedKey<'a>, KeyError> {
    let current = parse(entity, key, text);
    if current.is_ok() {
        return current;
    }
    let ctx = context(entity, key);
    let previous = match key.previous {
        Some(PreviousLayout::Shards { n, .. }) => Some(parse_key_with(
            ctx,
            key.template,
            text,
            Some((n, key.previous_suffix())),
        )),
        Some(PreviousLayout::Legacy { template }) => {
            Some(parse_key_with(ctx, template, text, None))
        }
        None => None,
    };
    match previous {
        Some(Ok(parsed)) => Ok(parsed),
        _ => current,
    }
}

/// Whether two keys of the current layout are shards of one logical key.
pub fn same_logical_key(key: &PartitionKeySchema, a: &str, b: &str) -> bool {
    let logical = |k| match key.shard_bound() {
        Some(n) => key.suffix.split(k, n).ok().map(|(l, _)| l),
        None => Some(k),
    };
    matches!((logical(a), logical(b)), (Some(x), Some(y)) if x == y)
}

/// Parses a physical key of the current layout back into its template parts and shard.
pub fn parse<'a>(
    entity: &'static str,
    key: &PartitionKeySchema,
    text: &'a str,
) -> Result<ParsedKey<'a>, KeyError> {
    parse_key_with(
        context(entity, key),
        key.template,
        text,
        key.shard_bound().map(|n| (n, key.suffix)),
    )
}

/// What places one item of a [per-key](crate::schema::PerKeyLayout) partition key under any
/// shard count: its logical key and the text its shard is the hash of (the hashed fields'
/// canonical text, or the item's identity for `shard = "random"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardInput {
    /// The logical partition key (the template, no shard).
    pub logical: String,
    /// The text whose [spec hash](crate::hash) over `n` is the item's shard.
    pub hashed: String,
}

impl ShardInput {
    /// The item's partition key under `n` shards spelled by `key`'s suffix: the key
    /// [`item_key`] builds under a layout of `n` shards.
    pub fn key_under(&self, key: &PartitionKeySchema, n: u32) -> String {
        let mut out = String::with_capacity(self.logical.len() + 6);
        out.push_str(&self.logical);
        key.suffix.write(&mut out, shard_of_text(&self.hashed, n));
        out
    }
}

/// The [`ShardInput`] of one item of `key`: called by the generated builders of a per-key
/// partition key.
pub fn shard_input(
    entity: &'static str,
    key: &PartitionKeySchema,
    values: &[&dyn KeyPart],
    by: ShardBy<'_>,
) -> Result<ShardInput, KeyError> {
    let ctx = context(entity, key);
    let logical = build_key(ctx, key.template, values)?;
    let hashed = match (key.sharding, by) {
        (Sharding::Hash { fields, .. }, ShardBy::Fields(shard_values)) => {
            crate::template::canonical(ctx, fields, shard_values)?
        }
        (_, ShardBy::SortKey(sk)) => identity(&logical, Some(sk)),
        _ => String::new(),
    };
    Ok(ShardInput { logical, hashed })
}

/// The partitions of index `index` of `schema`, keyed by the item's own attributes, whose
/// attributes have these values: every shard of that partition. A value that is empty is
/// refused (DynamoDB stores no empty key attribute); an index not keyed by attributes
/// (generated code never asks for one) gives partitions the query's plan refuses, naming the
/// function to call.
pub fn attribute_partitions(
    schema: &EntitySchema,
    index: u8,
    equalities: Vec<(&'static str, KeyValue)>,
) -> Result<Partitions, KeyError> {
    let gsi = schema.gsi(index);
    let shard_attribute = gsi
        .and_then(|g| g.attributes)
        .map_or("", |k| k.shard_attribute);
    let n = gsi.and_then(|g| g.pk.sharding.shard_count()).unwrap_or(1);
    match equalities.iter().find(|(_, v)| v.text().is_empty()) {
        Some((field, _)) => Err(KeyError::EmptyValue {
            entity: schema.entity,
            attribute: gsi.map_or("", |g| g.index_name),
            field,
        }),
        None => Ok(Partitions::attributes(equalities, shard_attribute, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::PreviousLayout;
    use crate::template::{KeyTemplate, Segment};

    static T: KeyTemplate = KeyTemplate::new(
        "GAME#{game_id}",
        &[Segment::literal("GAME#"), Segment::field("game_id")],
    );
    static LEGACY: KeyTemplate = KeyTemplate::new(
        "G#{game_id}",
        &[Segment::literal("G#"), Segment::field("game_id")],
    );

    fn ctx() -> KeyContext {
        KeyContext {
            entity: "Score",
            attribute: "pk",
        }
    }

    #[test]
    fn a_shard_input_places_an_item_where_the_key_builder_of_that_layout_does(
    ) -> Result<(), KeyError> {
        let hashed =
            PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 1)).with_per_key(64);
        let random = PartitionKeySchema::new("pk", &T, Sharding::random(1)).with_per_key(64);
        let values: [&dyn KeyPart; 1] = [&"g#1"];
        for player in ["p1", "player-1", "$x", ""] {
            let shard_values: [&dyn KeyPart; 1] = [&player];
            let by_fields = ShardBy::Fields(&shard_values);
            let by_sort = ShardBy::SortKey(player);
            let from_fields = shard_input("Score", &hashed, &values, by_fields);
            if player.is_empty() {
                // An empty hashed string is refused by both, alike.
                assert!(from_fields.is_err());
                continue;
            }
            let from_fields = from_fields?;
            let from_sort = shard_input("Score", &random, &values, by_sort)?;
            for n in [1, 2, 7, 20, 64] {
                let layout = crate::schema::KeyLayout::steady(n);
                assert_eq!(
                    from_fields.key_under(&hashed, n),
                    item_key("Score", &hashed.in_layout(layout), &values, by_fields)?
                );
                assert_eq!(
                    from_sort.key_under(&random, n),
                    item_key("Score", &random.in_layout(layout), &values, by_sort)?
                );
            }
        }
        Ok(())
    }

    #[test]
    fn sharded_s_own_items_are_no_entity_s_whatever_its_template() {
        // Legacy layouts of bare fields, as a table adopted from another service may have.
        static THREE: KeyTemplate = KeyTemplate::new(
            "{a}#{b}#{c}",
            &[
                Segment::field("a"),
                Segment::literal("#"),
                Segment::field("b"),
                Segment::literal("#"),
                Segment::field("c"),
            ],
        );
        static FOUR: KeyTemplate = KeyTemplate::new(
            "{a}#{b}#{c}#{d}",
            &[
                Segment::field("a"),
                Segment::literal("#"),
                Segment::field("b"),
                Segment::literal("#"),
                Segment::field("c"),
                Segment::literal("#"),
                Segment::field("d"),
            ],
        );
        for (template, theirs, own) in [
            (&THREE, "x#y#z", "_sharded#layouts#Score"),
            (&FOUR, "x#y#z#w", "_sharded#migration#Score#0..4/16"),
        ] {
            let pk = PartitionKeySchema::new("pk", &T, Sharding::random(4))
                .with_previous(PreviousLayout::legacy(template));
            assert!(
                locate("Score", &pk, theirs).is_some_and(|p| p.previous),
                "{theirs} is at the legacy place"
            );
            assert!(
                parse_key_with(ctx(), template, own, None).is_ok(),
                "the template alone takes {own}"
            );
            assert!(
                locate("Score", &pk, own).is_none(),
                "{own} is sharded's own"
            );
        }
    }

    #[test]
    fn a_per_key_partition_key_recognises_every_shard_up_to_its_maximum() {
        let pk =
            PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 1)).with_per_key(40);
        assert!(parse("Score", &pk, "GAME#g1#0").is_ok());
        assert!(parse("Score", &pk, "GAME#g1#39").is_ok());
        assert!(parse("Score", &pk, "GAME#g1#40").is_err());
        assert!(same_logical_key(&pk, "GAME#g1#0", "GAME#g1#17"));
    }

    #[test]
    fn hashed_keys_are_the_template_functions_with_the_schema_count() -> Result<(), KeyError> {
        let pk = PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 10))
            .with_previous(PreviousLayout::shards(4));
        for player in ["p1", "player-1", "x", "someone else"] {
            let values: [&dyn KeyPart; 1] = [&"g1"];
            let shard_values: [&dyn KeyPart; 1] = [&player];
            let expected = build_hashed_key(
                ctx(),
                &T,
                &values,
                &["player_id"],
                &shard_values,
                10,
                &ShardSuffix::DEFAULT,
            )?;
            let got = item_key("Score", &pk, &values, ShardBy::Fields(&shard_values))?;
            assert_eq!(got, expected);
            let previous = build_hashed_key(
                ctx(),
                &T,
                &values,
                &["player_id"],
                &shard_values,
                4,
                &ShardSuffix::DEFAULT,
            )?;
            let got =
                previous_item_key("Score", &pk, &values, ShardBy::Fields(&shard_values), &[])?;
            assert_eq!(got, Some(previous));
            let shard = shard_for("Score", &pk, &shard_values)?;
            assert_eq!(shard, shard_of(ctx(), &["player_id"], &shard_values, 10)?);
            assert_eq!(expected, format!("GAME#g1#{shard}"));
        }
        Ok(())
    }

    #[test]
    fn random_and_identity_keys_hash_the_identity() -> Result<(), KeyError> {
        let pk = PartitionKeySchema::new("pk", &T, Sharding::random(6));
        let values: [&dyn KeyPart; 1] = [&"g1"];
        let sk = "SCORE#7#p1";
        let shard = shard_of_text(&identity("GAME#g1", Some(sk)), 6);
        assert_eq!(
            item_key("Score", &pk, &values, ShardBy::SortKey(sk))?,
            format!("GAME#g1#{shard}")
        );
        let gsi = PartitionKeySchema::new("gsi1pk", &T, Sharding::identity(3));
        assert_eq!(identity_shard(&gsi, "ID"), shard_of_text("ID", 3));
        Ok(())
    }

    #[test]
    fn partitions_and_previous_keys_follow_the_declared_transition() -> Result<(), KeyError> {
        let values: [&dyn KeyPart; 1] = [&"g1"];
        let steady = PartitionKeySchema::new("pk", &T, Sharding::random(2));
        assert_eq!(
            partitions("S", &steady, &values, &[])?.all(),
            ["GAME#g1#0", "GAME#g1#1"]
        );
        assert_eq!(
            previous_item_key("S", &steady, &values, ShardBy::SortKey("a"), &[])?,
            None
        );

        let legacy = steady.with_previous(PreviousLayout::legacy(&LEGACY));
        assert_eq!(
            partitions("S", &legacy, &values, &values)?.all(),
            ["GAME#g1#0", "GAME#g1#1", "G#g1"]
        );
        assert_eq!(
            previous_item_key("S", &legacy, &values, ShardBy::SortKey("a"), &values)?,
            Some("G#g1".to_owned())
        );

        let unsharded = PartitionKeySchema::new("pk", &T, Sharding::None);
        assert_eq!(
            item_key("S", &unsharded, &values, ShardBy::Unsharded)?,
            "GAME#g1"
        );
        assert_eq!(
            all_shards("S", &unsharded, &values)?.collect::<Vec<_>>(),
            ["GAME#g1"]
        );
        Ok(())
    }

    #[test]
    fn shards_past_the_count_are_refused_and_keys_parse_back() {
        let pk = PartitionKeySchema::new("pk", &T, Sharding::random(4));
        let values: [&dyn KeyPart; 1] = [&"g1"];
        assert_eq!(
            key_on_shard("S", &pk, &values, 3).as_deref(),
            Ok("GAME#g1#3")
        );
        assert!(matches!(
            key_on_shard("S", &pk, &values, 4),
            Err(KeyError::ShardOutOfRange { shard: 4, n: 4, .. })
        ));
        let parsed = parse("S", &pk, "GAME#g1#3").expect("a key of the layout parses");
        assert_eq!(parsed.shard, Some(3));
        assert!(parse("S", &pk, "GAME#g1").is_err(), "no shard suffix");
    }
}
