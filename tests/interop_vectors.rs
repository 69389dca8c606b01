//! The vectors of `interop/vectors.json`: what the TypeScript and Python key modules
//! (`interop/typescript/src/sharded-keys.ts`, `interop/python/sharded_keys.py`) must reproduce,
//! generated here from the Rust side itself (the derive's `to_item`, the generated partition
//! and counter functions, `KeyPart`, `KeyPartDecode`, `sharded::hash`, `sharded::bucket`).
//!
//! `cargo test --test interop_vectors` checks that the committed file is exactly what this
//! file generates, so it is always current; `SHARDED_WRITE_VECTORS=1 cargo test --test
//! interop_vectors` writes it. `interop/run` runs both modules against it.
//!
//! Extending it: the spec of an entity comes from its `EntitySchema` through one function,
//! [`spec`], and a counter's from the counter itself ([`counter_spec`]); a new schema property
//! is added there once, read from the schema, never spelled here. The entities are declared in
//! [`entities!`] below and listed in [`entities`].

use std::collections::BTreeMap;
use std::fmt::Debug;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sharded::aws_sdk_dynamodb::types::AttributeValue;
use sharded::bucket::{Bucket, Granularity};
use sharded::keys::{KeyPart, KeyPartDecode};
use sharded::schema::{
    EntitySchema, PartitionKeySchema, PreviousLayout, PreviousPlacement, Recognition, ScalarType,
    Sharding, TableDefinition, TableSchema,
};
use sharded::{Error, KeyError, Repo, ShardedCounter, ShardedEntity, ShardedTable};
use uuid::Uuid;

/// Where the vectors live, and the variable that rewrites them.
const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/vectors.json");
const WRITE_VARIABLE: &str = "SHARDED_WRITE_VECTORS";

// ---------------------------------------------------------------------------------------------
// Field types: their spec name, a seeded generator of interesting values, their typed JSON

/// A field type of the vectors: how the spec names it, how records are drawn, and how a value
/// is written into the vectors losslessly (integers as decimal text, times as their parts).
trait Field: KeyPart + Sized {
    const TYPE: &'static str;
    fn draw(rng: &mut fastrand::Rng) -> Self;
    fn typed(&self) -> Value;
}

macro_rules! integer_fields {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl Field for $t {
            const TYPE: &'static str = $name;
            fn draw(rng: &mut fastrand::Rng) -> Self {
                match rng.u8(0..10) {
                    0 => <$t>::MIN,
                    1 => <$t>::MAX,
                    2 => 0,
                    3 => 42 as $t,
                    // Mostly small values, so sort keys of a partition interleave.
                    4..=6 => (rng.u16(0..1000) % (<$t>::MAX as u128).min(1000) as u16) as $t,
                    _ => <$t>::MIN.wrapping_add((rng.u128(..) % ((<$t>::MAX as u128).wrapping_sub(<$t>::MIN as u128).wrapping_add(1)).max(1)) as $t),
                }
            }
            fn typed(&self) -> Value {
                json!(self.to_string())
            }
        }
    )*};
}

integer_fields!(
    u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64", usize => "usize",
    i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", isize => "isize",
);

// 128-bit integers have keys (vectors below) but no stored attribute: serde_dynamo cannot
// serialise them, so no entity here has such a field.
impl Field for u128 {
    const TYPE: &'static str = "u128";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        match rng.u8(0..4) {
            0 => u128::MAX,
            1 => 0,
            _ => rng.u128(..),
        }
    }
    fn typed(&self) -> Value {
        json!(self.to_string())
    }
}

impl Field for i128 {
    const TYPE: &'static str = "i128";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        match rng.u8(0..5) {
            0 => i128::MIN,
            1 => i128::MAX,
            2 => -1,
            _ => rng.i128(..),
        }
    }
    fn typed(&self) -> Value {
        json!(self.to_string())
    }
}

/// Strings every port gets wrong once: each escaped byte (`#`, `$`, space, controls, `!`,
/// `"`), the first unescaped ones (`%`, DEL), multi-byte UTF-8 of two, three and four bytes.
const STRINGS: &[&str] = &[
    "g1",
    "p1",
    "player-1",
    "p#1",
    "a b#c",
    "$",
    "$24",
    "%",
    "line\n",
    "über",
    "日本語",
    "🎮 game",
    "tab\there",
    "nul\u{0}byte",
    "!\"#$%&'",
    "~\u{7f}",
    "x#y#z",
    "é#",
    "\u{1f}\u{20}\u{21}\u{22}\u{23}\u{24}\u{25}",
    "\\back\\slash",
    "{braces}",
];

/// The characters random strings are made of: ids, and every kind above.
const ALPHABET: &[char] = &[
    'a', 'b', 'z', 'A', 'Z', '0', '9', '-', '_', '.', '#', '$', ' ', '\n', '\u{0}', '!', '"', '%',
    '~', 'é', 'ü', '日', '🎮', '\u{7f}', '\u{1f}',
];

impl Field for String {
    const TYPE: &'static str = "string";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        match rng.u8(0..60) {
            // Refused in a key: no key has an empty field; DynamoDB's limits on key sizes.
            0 => String::new(),
            1 => "x".repeat(2100),
            2..=24 => STRINGS[rng.usize(..STRINGS.len())].to_owned(),
            25..=40 => format!("id-{}", rng.u16(0..200)),
            _ => (0..rng.usize(1..8))
                .map(|_| ALPHABET[rng.usize(..ALPHABET.len())])
                .collect(),
        }
    }
    fn typed(&self) -> Value {
        json!(self)
    }
}

impl Field for bool {
    const TYPE: &'static str = "bool";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        rng.bool()
    }
    fn typed(&self) -> Value {
        json!(self)
    }
}

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in epoch seconds: the key form's years.
const FIRST_SECOND: i64 = -62_167_219_200;
const LAST_SECOND: i64 = 253_402_300_799;

impl Field for DateTime<Utc> {
    const TYPE: &'static str = "datetime";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        let nanos = match rng.u8(0..5) {
            0 => 0,
            1 => rng.u32(0..1000) * 1_000_000,
            2 => rng.u32(0..1_000_000) * 1000,
            _ => rng.u32(0..1_000_000_000),
        };
        let seconds = match rng.u8(0..40) {
            // Refused in a key: a year the four-digit form cannot hold.
            0 => LAST_SECOND + 1 + rng.i64(0..1_000_000),
            // A leap second, which chrono writes as `:60`.
            1 => {
                let minute = rng.i64(0..10_000_000) * 60;
                return DateTime::from_timestamp(minute + 59, 1_000_000_000 + nanos).unwrap();
            }
            2 => FIRST_SECOND,
            3 => LAST_SECOND,
            4..=20 => rng.i64(1_700_000_000..1_900_000_000),
            _ => rng.i64(FIRST_SECOND..=LAST_SECOND),
        };
        DateTime::from_timestamp(seconds, nanos).unwrap()
    }
    fn typed(&self) -> Value {
        json!({"seconds": self.timestamp().to_string(), "nanos": self.timestamp_subsec_nanos()})
    }
}

impl Field for NaiveDate {
    const TYPE: &'static str = "date";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        let year = match rng.u8(0..40) {
            0 => 10_000,
            1 => -1,
            2 => 0,
            3 => 9999,
            _ => rng.i32(0..=9999),
        };
        let month = rng.u32(1..=12);
        let day = rng.u32(1..=31);
        NaiveDate::from_ymd_opt(year, month, day)
            .or_else(|| NaiveDate::from_ymd_opt(year, month, 28))
            .unwrap()
    }
    fn typed(&self) -> Value {
        use chrono::Datelike;
        json!({"year": self.year(), "month": self.month(), "day": self.day()})
    }
}

impl Field for Uuid {
    const TYPE: &'static str = "uuid";
    fn draw(rng: &mut fastrand::Rng) -> Self {
        match rng.u8(0..8) {
            0 => Uuid::nil(),
            1 => Uuid::max(),
            _ => Uuid::from_u128(rng.u128(..)),
        }
    }
    fn typed(&self) -> Value {
        json!(self.hyphenated().to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// The entities

/// A field as the spec names it: its name in templates, the attribute serde stores it under,
/// its type.
struct FieldDecl {
    name: &'static str,
    attribute: &'static str,
    kind: &'static str,
}

/// What `entities!` knows of a struct besides its schema: its fields, a seeded record, the
/// record as typed JSON.
trait Declared: ShardedEntity + Debug {
    fn fields() -> Vec<FieldDecl>;
    fn draw(rng: &mut fastrand::Rng) -> Self;
    fn typed(&self) -> Value;
}

macro_rules! attribute_name {
    ($field:expr) => {
        $field
    };
    ($field:expr, $rename:literal) => {
        $rename
    };
}

/// Declares each entity as written (its attributes passed to the derive) and its `Declared`.
macro_rules! entities {
    ($(
        $(#[$meta:meta])*
        struct $name:ident { $( $(#[serde(rename = $rename:literal)])? $field:ident : $ty:ty ),* $(,)? }
    )*) => {$(
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
        $(#[$meta])*
        struct $name { $( $(#[serde(rename = $rename)])? $field: $ty ),* }

        impl Declared for $name {
            fn fields() -> Vec<FieldDecl> {
                vec![$(FieldDecl {
                    name: stringify!($field),
                    attribute: attribute_name!(stringify!($field) $(, $rename)?),
                    kind: <$ty as Field>::TYPE,
                }),*]
            }
            fn draw(rng: &mut fastrand::Rng) -> Self {
                $name { $($field: <$ty as Field>::draw(rng)),* }
            }
            fn typed(&self) -> Value {
                let mut fields = serde_json::Map::new();
                $(fields.insert(attribute_name!(stringify!($field) $(, $rename)?).to_owned(), Field::typed(&self.$field));)*
                Value::Object(fields)
            }
        }
    )*};
}

/// A table adopted as another library left it: keyed `PK`/`SK`, indexed by `GSI1` over
/// `GSI1PK`/`GSI1SK`, its items tagged by ElectroDB's attribute, untagged items of the same
/// shape read by their keys.
#[derive(ShardedTable)]
#[table(
    name = "ElectionData",
    pk = "PK",
    sk = "SK",
    tag = "__edb_e__",
    recognize = "tag_or_key"
)]
#[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
struct ElectionTable;

/// A table sharded by hand before it met `sharded`: keyed `PK`/`SK`, no tag at all, every
/// item recognised by its keys.
#[derive(ShardedTable)]
#[table(name = "Legacy", pk = "PK", sk = "SK", recognize = "key")]
struct KeyedTable;

entities! {
    /// The leaderboard: hashed base key, identity-sharded GSI, a counter.
    #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    #[sk(template = "SCORE#{score}#{player_id}")]
    #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
    #[counter(name = "likes", n = 4)]
    struct Score { game_id: String, player_id: String, score: u64, at: DateTime<Utc> }

    /// Every key type in one sort key, and hashed by three fields of mixed types.
    #[pk(template = "ALL#{s}", shard = "hash(id, day, flag)", n = 7)]
    #[sk(template = "{a}#{b}#{c}#{d}#{e}#{f}#{g}#{h}#{i}#{j}#{flag}#{at}#{day}#{id}")]
    struct AllTypes {
        s: String, a: u8, b: u16, c: u32, d: u64, e: usize,
        f: i8, g: i16, h: i32, i: i64, j: isize,
        flag: bool, at: DateTime<Utc>, day: NaiveDate, id: Uuid,
    }

    /// Randomly sharded (the item's identity hashed), a GSI hashed by a field, a counter.
    #[pk(template = "LOG#{day}", shard = "random", n = 6)]
    #[sk(template = "{at}#{id}")]
    #[gsi1(pk = "LEVEL#{level}", shard = "hash(id)", n = 3)]
    #[counter(name = "views", n = 3)]
    struct LogLine { day: String, at: i64, id: String, level: String, message: String }

    /// Unsharded, no sort key (the identity GSI hashes the partition key alone), a renamed
    /// field, a named index, an entity name that is not the struct's.
    #[sharded(entity = "Member")]
    #[pk(template = "USER#{user_id}")]
    #[gsi1(pk = "COUNTRY#{country}", shard = 4)]
    #[gsi2(pk = "TEAM#{team}#{rank}", shard = "hash(user_id)", n = 3, index = "by-team")]
    struct User { user_id: String, country: String, #[serde(rename = "teamName")] team: String, rank: i32, active: bool }

    /// Multi-attribute GSIs: the shard is a number attribute of its own.
    #[pk(template = "PLAYER#{player_id}")]
    #[sk(template = "MATCH#{match_id}")]
    #[gsi1(pk = [game_id, region], sk = [score, player_id], shard = 8)]
    #[gsi2(pk = [region], shard = 2, shard_attribute = "by_region_shard", index = "by-region")]
    struct Run { player_id: String, match_id: u32, game_id: String, region: String, score: i64 }

    /// Hour buckets of epoch seconds, hashed.
    #[pk(template = "METRIC#{name}#{at:hour}", shard = "hash(id)", n = 4)]
    #[sk(template = "{at}#{id}")]
    struct Metric { name: String, at: i32, id: String, value: i64 }

    /// Day buckets of a timestamp, randomly sharded.
    #[pk(template = "OPS#{region}#{at:day}", shard = "random", n = 3)]
    #[sk(template = "{at}#{id}")]
    struct OpsLine { region: String, at: DateTime<Utc>, id: String }

    /// ISO week buckets of a date.
    #[pk(template = "WEEK#{day:week}", shard = "hash(id)", n = 5)]
    #[sk(template = "{day}#{id}")]
    struct Weekly { day: NaiveDate, id: Uuid }

    /// Month buckets of unsigned epoch seconds.
    #[pk(template = "MONTH#{at:month}", shard = "hash(id)", n = 2)]
    #[sk(template = "{at}#{id}")]
    struct Monthly { at: u32, id: u16 }

    /// The vote counter: unsharded item, sharded counter.
    #[pk(template = "ELECTION#{election}")]
    #[sk(template = "CANDIDATE#{name}")]
    #[counter(name = "votes", n = 10)]
    struct Candidate { election: String, name: String }

    /// One shard: every key ends in `#0`.
    #[pk(template = "ONE#{k}", shard = "hash(id)", n = 1)]
    #[sk(template = "{id}")]
    struct Single { k: String, id: i16 }

    /// Resharding from 4 to 8 shards: queries read both.
    #[pk(template = "RESHARD#{game_id}", shard = "hash(player_id)", n = 8, previous_n = 4)]
    #[sk(template = "{player_id}")]
    struct Resharded { game_id: String, player_id: String }

    /// Adopting sharding: queries read the unsharded legacy key too.
    #[pk(template = "ADOPT#{game_id}", shard = "hash(player_id)", n = 3, legacy = "LEGACY#{game_id}")]
    #[sk(template = "{player_id}")]
    struct Adopted { game_id: String, player_id: String }

    /// The PK/SK table: `#SHARD_{shard}` on the base key, a zero-padded GSI over the table's
    /// `GSI1`, a counter whose items carry the table's tag.
    #[sharded(table = ElectionTable)]
    #[pk(template = "ELECTION#{election}", shard = "hash(voter)", n = 10, suffix = "#SHARD_{shard}")]
    #[sk(template = "BALLOT#{voter}")]
    #[gsi1(pk = "CANDIDATE#{candidate}", sk = "{cast_at}#{voter}", shard = "hash(voter)", n = 16, suffix = "#{shard:02}")]
    #[counter(name = "recounts", n = 3)]
    struct Ballot { election: String, voter: String, candidate: String, cast_at: DateTime<Utc>, weight: u16 }

    /// Resharding data placed by hand: 4 shards spelled `#{shard}`, items on any of them, to 8
    /// spelled `#SHARD_{shard}`.
    #[sharded(table = ElectionTable)]
    #[pk(template = "TALLY#{region}", shard = "hash(station)", n = 8, suffix = "#SHARD_{shard}", previous_n = 4, previous_suffix = "#{shard}", previous_shard = "unknown")]
    #[sk(template = "STATION#{station}")]
    struct Tally { region: String, station: String, total: u64 }

    /// The untagged table of the shared-table test (`tests/dynamodb/interop.rs` declares the
    /// same entity, and its services read this spec).
    #[sharded(table = KeyedTable)]
    #[pk(template = "ACTIVE_PLAYERS#{region}", shard = "hash(player_id)", n = 10, suffix = "#SHARD_{shard}")]
    #[sk(template = "SCORE#{score}#{player_id}")]
    struct ActivePlayer { region: String, player_id: String, score: u64, at: DateTime<Utc> }

    /// The untagged table, randomly sharded `#SHARD#{shard}`, with a counter: no tag anywhere.
    #[sharded(table = KeyedTable)]
    #[pk(template = "STATUS#{status}", shard = "random", n = 12, suffix = "#SHARD#{shard}")]
    #[sk(template = "{at}#{id}")]
    #[counter(name = "views", n = 2)]
    struct StatusEvent { status: String, at: i64, id: Uuid, note: String }
}

// ---------------------------------------------------------------------------------------------
// The spec of an entity: the one place that turns an `EntitySchema` into the spec JSON

/// The spec JSON of a table, as the modules read it: its key attribute names, the indexes it
/// names, its tag attribute (or `null`) and how its items are recognised.
fn table_spec(table: &TableSchema) -> Value {
    let recognition = match table.recognition {
        Recognition::Tag { .. } => "tag",
        Recognition::TagOrKey { .. } => "tag_or_key",
        Recognition::Key => "key",
        other => panic!("a new kind of recognition, {other:?}: describe it in the spec"),
    };
    json!({
        "declared_by": table.declared_by,
        "name": table.table,
        "partition_key": table.partition_key,
        "sort_key": table.sort_key,
        "tag": table.recognition.tag_attribute(),
        "recognition": recognition,
        "indexes": table
            .indexes
            .iter()
            .map(|i| json!({
                "number": i.number,
                "index": i.index,
                "partition_key": i.partition_key,
                "sort_key": i.sort_key,
            }))
            .collect::<Vec<_>>(),
    })
}

/// The spec JSON of an entity, as `Entity` of the TypeScript and Python modules reads it.
/// Everything comes from `schema` (its table's too), but for what the schema does not hold:
/// the fields' types and attribute names, and the counters, which come from the counters a
/// record's generated `<name>_counter` functions return ([`counter_spec`]).
fn spec(schema: &EntitySchema, fields: &[FieldDecl], counters: &[(String, Value)]) -> Value {
    fn sharding(sharding: Sharding) -> Value {
        match sharding {
            Sharding::None => json!({"kind": "none"}),
            Sharding::Hash { fields, n, .. } => json!({"kind": "hash", "fields": fields, "n": n}),
            Sharding::Random { n, .. } => json!({"kind": "random", "n": n}),
            Sharding::Identity { n, .. } => json!({"kind": "identity", "n": n}),
            other => panic!("a new kind of sharding, {other:?}: describe it in the spec"),
        }
    }
    fn partition(key: &PartitionKeySchema) -> Value {
        let previous = match key.previous {
            None => Value::Null,
            Some(PreviousLayout::Shards { n, placement, .. }) => json!({
                "n": n,
                "suffix": key.previous_suffix().source,
                "placement": match placement {
                    PreviousPlacement::Current => "current",
                    PreviousPlacement::Unknown => "unknown",
                    other => panic!("a new kind of previous placement, {other:?}: describe it"),
                },
            }),
            Some(PreviousLayout::Legacy { template, .. }) => json!({"legacy": template.source}),
            Some(other) => panic!("a new kind of previous layout, {other:?}: describe it"),
        };
        json!({
            "attribute": key.attribute,
            "template": key.template.source,
            "sharding": sharding(key.sharding),
            "suffix": key.suffix.source,
            "previous": previous,
        })
    }
    let scalar = |kind: ScalarType| match kind {
        ScalarType::S => "S",
        ScalarType::N => "N",
        other => panic!("a new scalar type, {other:?}"),
    };
    let gsis: Vec<Value> = schema
        .gsis
        .iter()
        .map(|gsi| match gsi.attributes {
            Some(key) => {
                let list = |attributes: &[sharded::schema::KeyAttributeSchema]| {
                    attributes
                        .iter()
                        .map(|a| json!({"attribute": a.name, "type": scalar(a.kind)}))
                        .collect::<Vec<_>>()
                };
                json!({
                    "kind": "attributes",
                    "number": gsi.number,
                    "index": gsi.index_name,
                    "partition": list(key.partition),
                    "sort": list(key.sort),
                    "shard_attribute": key.shard_attribute,
                    "n": gsi.pk.sharding.shard_count().unwrap_or(1),
                })
            }
            None => json!({
                "kind": "string",
                "number": gsi.number,
                "index": gsi.index_name,
                "pk": partition(&gsi.pk),
                "sk": gsi.sk.map(|sk| json!({"attribute": sk.attribute, "template": sk.template.source})),
            }),
        })
        .collect();
    json!({
        "entity": schema.entity,
        "table": table_spec(schema.table_schema),
        "fields": fields
            .iter()
            .map(|f| json!({"name": f.name, "attribute": f.attribute, "type": f.kind}))
            .collect::<Vec<_>>(),
        "pk": partition(&schema.pk),
        "sk": schema.sk.map(|sk| json!({"attribute": sk.attribute, "template": sk.template.source})),
        "gsis": gsis,
        "counters": counters
            .iter()
            .map(|(name, counter)| {
                let mut spec = counter.clone();
                spec["name"] = json!(name);
                spec
            })
            .collect::<Vec<_>>(),
    })
}

/// What keys a counter's items, read from the counter itself: its shard count and suffix,
/// the sort key value (`null` in a table without a sort key), the count's attribute, and the
/// tag an increment sets (`null` in a table without one).
fn counter_spec(counter: &ShardedCounter) -> Value {
    json!({
        "n": counter.shards(),
        "suffix": counter.suffix().source,
        "sort_key": counter.sort_key(),
        "attribute": counter.attribute(),
        "tag": counter.tag().map(|(attribute, value)| json!({"attribute": attribute, "value": value})),
    })
}

// ---------------------------------------------------------------------------------------------
// Records: the item `to_item` writes, the partitions and counters the generated functions give

/// What the generated functions say about one record: the partitions a query of its keys
/// reads (`"pk"` or the GSI number), and its counters.
struct Extras {
    partitions: Vec<(&'static str, Vec<String>)>,
    counters: Vec<(&'static str, ShardedCounter)>,
}

type ExtrasOf<E> = fn(&E, &Repo<E>) -> Result<Extras, KeyError>;

/// Records (and partitions, counters) of the first few: enough to cover, small enough to read.
const RECORDS: usize = 24;
const WITH_EXTRAS: usize = 4;
/// Records whose stored item is also read back in other shapes ([`readings`]).
const WITH_READINGS: usize = 3;

fn dynamo_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => json!({"S": s}),
        AttributeValue::N(n) => json!({"N": n}),
        AttributeValue::Bool(b) => json!({"BOOL": b}),
        AttributeValue::Null(_) => json!({"NULL": true}),
        other => panic!("an attribute value the key modules do not write: {other:?}"),
    }
}

fn item_json(item: &sharded::keys::Item) -> Value {
    let sorted: BTreeMap<&String, Value> = item.iter().map(|(k, v)| (k, dynamo_json(v))).collect();
    json!(sorted)
}

/// The counter a generated `<name>_counter` function gives: its logical key, its spec, and
/// the key of every shard, each read from the counter.
fn counter_vector(counter: &ShardedCounter) -> Value {
    let mut vector = counter_spec(counter);
    vector["logical_key"] = json!(counter.logical_key());
    vector["keys"] = counter.keys().iter().map(item_json).collect();
    vector
}

/// What reading `item` as `E` gives (`ShardedEntity::from_item`, the rule of every read): the
/// record, or why it is not one (`other_entity`, or the foreign reason's label).
fn reading<E: Declared>(what: &str, item: &sharded::keys::Item) -> Value {
    let mut vector = json!({"what": what, "item": item_json(item)});
    match E::from_item(item.clone()) {
        Ok(record) => vector["record"] = record.typed(),
        Err(Error::WrongEntity { .. }) => vector["refused"] = json!("other_entity"),
        Err(Error::ForeignItem { reason, .. }) => {
            vector["refused"] = json!(reason.label());
            vector["reason"] = json!(reason.to_string());
        }
        Err(other) => {
            vector["refused"] = json!("unreadable");
            vector["reason"] = json!(other.to_string());
        }
    }
    vector
}

/// The item `to_item` wrote for `record`, read back in the shapes a shared table holds: as
/// written; untagged; tagged as another entity; its tag not a string; untagged with the key
/// fields only in its keys; untagged at its previous layout's place; untagged with its shard
/// spelled otherwise; untagged with a field that disagrees with its keys.
fn readings<E: Declared>(record: &E, item: &sharded::keys::Item) -> Vec<Value> {
    let schema = E::SCHEMA;
    let pk = schema.pk.attribute;
    let tag = schema.tag_attribute();
    let mut out = vec![reading::<E>("as written", item)];
    let mut untagged = item.clone();
    if let Some(tag) = tag {
        untagged.remove(tag);
        out.push(reading::<E>("untagged", &untagged));
        let mut other = item.clone();
        other.insert(tag.to_owned(), AttributeValue::S("Other".to_owned()));
        out.push(reading::<E>("tagged as another entity", &other));
        let mut number = item.clone();
        number.insert(tag.to_owned(), AttributeValue::N("1".to_owned()));
        out.push(reading::<E>("a tag that is not a string", &number));
    }
    // The fields every key template names: an untagged item may hold them only in its keys.
    let mut keys_only = untagged.clone();
    let templates = [Some(schema.pk.template), schema.sk.map(|sk| sk.template)];
    for field in E::fields() {
        let named = templates
            .iter()
            .flatten()
            .any(|t| t.source.contains(&format!("{{{}}}", field.name)));
        if named {
            keys_only.remove(field.attribute);
        }
    }
    out.push(reading::<E>(
        "untagged, key fields only in its keys",
        &keys_only,
    ));
    if let Some(previous) = previous_place(record, item) {
        let mut moved = untagged.clone();
        moved.insert(pk.to_owned(), AttributeValue::S(previous));
        out.push(reading::<E>(
            "untagged, at the previous layout's place",
            &moved,
        ));
    }
    if let Some(AttributeValue::S(key)) = item.get(pk) {
        if schema.pk.sharding.shard_count().is_some() {
            let digits = key.bytes().rev().take_while(u8::is_ascii_digit).count();
            let (body, shard) = key.split_at(key.len() - digits);
            let mut respelled = untagged.clone();
            respelled.insert(pk.to_owned(), AttributeValue::S(format!("{body}0{shard}")));
            out.push(reading::<E>(
                "untagged, its shard spelled with a leading zero",
                &respelled,
            ));
        }
    }
    // A non-key field would not disagree; a key field changed in the attributes does.
    if let Some(field) = E::fields().iter().find(|f| {
        f.kind == "string"
            && schema
                .pk
                .template
                .source
                .contains(&format!("{{{}}}", f.name))
    }) {
        let mut disagreeing = untagged.clone();
        disagreeing.insert(
            field.attribute.to_owned(),
            AttributeValue::S("another-value".to_owned()),
        );
        out.push(reading::<E>(
            "untagged, a key field disagreeing with its key",
            &disagreeing,
        ));
    }
    out
}

/// A previous layout's place of `record` (stored as `item`): the one its placement gives,
/// or, where the previous layout placed items some other way, its last previous shard.
fn previous_place<E: Declared>(record: &E, item: &sharded::keys::Item) -> Option<String> {
    if let Ok(Some(previous)) = record.previous_pk() {
        return Some(previous);
    }
    let key = &E::SCHEMA.pk;
    let Some(PreviousLayout::Shards {
        n,
        placement: PreviousPlacement::Unknown,
        ..
    }) = key.previous
    else {
        return None;
    };
    let stored = item.get(key.attribute)?.as_s().ok()?;
    let (logical, _) = key.suffix.split(stored, key.sharding.shard_count()?).ok()?;
    let mut previous = logical.to_owned();
    key.previous_suffix().write(&mut previous, n - 1);
    Some(previous)
}

/// The spec and records of entity `E`: each record's typed fields, and the exact item
/// `to_item` writes or its refusal; the first few with their partitions and counters, and
/// their items read back in other shapes.
fn entity_vectors<E: Declared>(seed: u64, extras: ExtrasOf<E>) -> Value {
    let mut rng = fastrand::Rng::with_seed(seed);
    let repo = Repo::<E>::new(offline_client(), "vectors");
    let mut counters: Option<Vec<(String, Value)>> = None;
    let mut records = Vec::new();
    let mut readings_left = WITH_READINGS;
    for i in 0..RECORDS {
        let record = E::draw(&mut rng);
        let mut vector = json!({"fields": record.typed()});
        match record.to_item() {
            Ok(item) => {
                vector["item"] = item_json(&item);
                let extra = extras(&record, &repo).expect("an item's keys build");
                counters.get_or_insert_with(|| {
                    extra
                        .counters
                        .iter()
                        .map(|(name, c)| ((*name).to_owned(), counter_spec(c)))
                        .collect()
                });
                if i < WITH_EXTRAS {
                    let partitions: BTreeMap<_, _> = extra.partitions.into_iter().collect();
                    vector["partitions"] = json!(partitions);
                    let counters: BTreeMap<_, _> = extra
                        .counters
                        .iter()
                        .map(|(name, c)| (*name, counter_vector(c)))
                        .collect();
                    vector["counters"] = json!(counters);
                }
                if readings_left > 0 {
                    readings_left -= 1;
                    vector["readings"] = json!(readings(&record, &item));
                }
            }
            Err(refusal) => vector["refused"] = json!(refusal.to_string()),
        }
        records.push(vector);
    }
    let counters = counters.expect("at least one record of each entity is stored");
    json!({"spec": spec(E::SCHEMA, &E::fields(), &counters), "records": records})
}

/// A client that is never sent anything: the generated counter functions take a repository.
fn offline_client() -> sharded::aws_sdk_dynamodb::Client {
    use sharded::aws_sdk_dynamodb::config::{BehaviorVersion, Region};
    let config = sharded::aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .build();
    sharded::aws_sdk_dynamodb::Client::from_conf(config)
}

/// Every entity's vectors, each with the generated functions of its partitions and counters.
fn entities() -> Vec<Value> {
    vec![
        entity_vectors::<Score>(1, |s, repo| {
            Ok(Extras {
                partitions: vec![
                    ("pk", Score::pk_partitions(&s.game_id)?.all()),
                    ("1", Score::gsi1_pk_all_shards(&s.player_id)?.collect()),
                ],
                counters: vec![(
                    "likes",
                    Score::likes_counter(repo, &s.game_id, &s.player_id, s.score)?,
                )],
            })
        }),
        entity_vectors::<AllTypes>(2, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", AllTypes::pk_partitions(&s.s)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<LogLine>(3, |s, repo| {
            Ok(Extras {
                partitions: vec![
                    ("pk", LogLine::pk_partitions(&s.day)?.all()),
                    ("1", LogLine::gsi1_pk_all_shards(&s.level)?.collect()),
                ],
                counters: vec![("views", LogLine::views_counter(repo, &s.day, s.at, &s.id)?)],
            })
        }),
        entity_vectors::<User>(4, |s, _| {
            Ok(Extras {
                partitions: vec![
                    ("pk", User::pk_partitions(&s.user_id)?.all()),
                    ("1", User::gsi1_pk_all_shards(&s.country)?.collect()),
                    ("2", User::gsi2_pk_all_shards(&s.team, s.rank)?.collect()),
                ],
                counters: vec![],
            })
        }),
        entity_vectors::<Run>(5, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Run::pk_partitions(&s.player_id)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Metric>(6, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Metric::pk_partitions(&s.name, s.at)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<OpsLine>(7, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", OpsLine::pk_partitions(&s.region, &s.at)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Weekly>(8, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Weekly::pk_partitions(&s.day)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Monthly>(9, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Monthly::pk_partitions(s.at)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Candidate>(10, |s, repo| {
            Ok(Extras {
                partitions: vec![("pk", Candidate::pk_partitions(&s.election)?.all())],
                counters: vec![(
                    "votes",
                    Candidate::votes_counter(repo, &s.election, &s.name)?,
                )],
            })
        }),
        entity_vectors::<Single>(11, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Single::pk_partitions(&s.k)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Resharded>(12, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Resharded::pk_partitions(&s.game_id)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Adopted>(13, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Adopted::pk_partitions(&s.game_id)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<Ballot>(14, |s, repo| {
            Ok(Extras {
                partitions: vec![
                    ("pk", Ballot::pk_partitions(&s.election)?.all()),
                    ("1", Ballot::gsi1_pk_all_shards(&s.candidate)?.collect()),
                ],
                counters: vec![(
                    "recounts",
                    Ballot::recounts_counter(repo, &s.election, &s.voter)?,
                )],
            })
        }),
        entity_vectors::<Tally>(15, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", Tally::pk_partitions(&s.region)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<ActivePlayer>(16, |s, _| {
            Ok(Extras {
                partitions: vec![("pk", ActivePlayer::pk_partitions(&s.region)?.all())],
                counters: vec![],
            })
        }),
        entity_vectors::<StatusEvent>(17, |s, repo| {
            Ok(Extras {
                partitions: vec![("pk", StatusEvent::pk_partitions(&s.status)?.all())],
                counters: vec![(
                    "views",
                    StatusEvent::views_counter(repo, &s.status, s.at, &s.id)?,
                )],
            })
        }),
    ]
}

/// Counters made with `ShardedCounter::new`: the default table with a sort key and without
/// one, the default attribute and another; the vote counter of the PK/SK table (`CANDIDATE#A`,
/// sort key `METADATA`, `ADD votes :inc`), tagged there, and in the untagged table with
/// another suffix.
fn standalone_counters() -> Vec<Value> {
    let counter = |definition: &TableDefinition, logical: &str, n: u32| {
        ShardedCounter::new(offline_client(), "t", definition, logical, n).expect("a counter")
    };
    let votes = |definition: &TableDefinition| {
        counter(definition, "CANDIDATE#A", 10)
            .with_sort_key("METADATA")
            .with_attribute("votes")
    };
    let spelled = sharded::keys::ShardSuffix::parse("#SHARD_{shard}").expect("a suffix");
    [
        (
            Score::SCHEMA.table_schema,
            counter(&Score::table_definition(), "VOTES#candidate-a", 10),
        ),
        (
            User::SCHEMA.table_schema,
            counter(&User::table_definition(), "HITS#page $1", 3).with_attribute("hits"),
        ),
        (
            ElectionTable::SCHEMA,
            votes(&TableDefinition::of::<ElectionTable>()),
        ),
        (
            KeyedTable::SCHEMA,
            votes(&TableDefinition::of::<KeyedTable>()).with_suffix(spelled),
        ),
    ]
    .iter()
    .map(|(table, c)| {
        let mut vector = counter_vector(c);
        vector["table"] = table_spec(table);
        vector
    })
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Standalone vectors: encodings, refusals, hashes, bucket labels

/// The key text of a value, as a template writes it.
fn key_of<T: KeyPart + ?Sized>(value: &T) -> Result<String, String> {
    let mut out = String::new();
    value
        .write_key(&mut out)
        .map(|()| out)
        .map_err(|e| e.to_string())
}

/// `value`'s encoding vector: its key, or its refusal.
fn encoding<T: Field>(value: &T) -> Value {
    match key_of(value) {
        Ok(key) => json!({"type": T::TYPE, "value": value.typed(), "key": key}),
        Err(refusal) => json!({"type": T::TYPE, "value": value.typed(), "refused": refusal}),
    }
}

/// Whether `text` parses as a `T`, as the generated parsers decide: `decode_key`, then the
/// canonical check (the value must write `text` back).
fn decoding<T: Field + KeyPartDecode>(text: &str) -> Value {
    match T::decode_key(text) {
        Ok(value) if key_of(&value).as_deref() == Ok(text) => {
            json!({"type": T::TYPE, "text": text, "value": value.typed()})
        }
        Ok(_) => json!({"type": T::TYPE, "text": text, "refused": "not canonical"}),
        Err(e) => json!({"type": T::TYPE, "text": text, "refused": e.to_string()}),
    }
}

/// What other writers put where a key belongs: the characters of every key form and of the
/// spellings other parsers accept.
const EDITS: &[char] = &[
    '0', '1', '9', 'a', 'A', 'f', 'F', 't', 'T', 'z', 'Z', '-', '+', ':', '.', ' ', '{', '}', '$',
    '#', '_', 'é',
];

/// Texts one edit away from `key` (a character removed, doubled, case-flipped, replaced or
/// inserted), `count` of them drawn by `rng`.
fn near_misses(rng: &mut fastrand::Rng, key: &str, count: usize) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
    (0..count)
        .map(|_| {
            let mut edited = chars.clone();
            let at = rng
                .usize(..=chars.len().max(1) - 1)
                .min(chars.len().saturating_sub(1));
            let edit = EDITS[rng.usize(..EDITS.len())];
            match rng.u8(0..5) {
                _ if chars.is_empty() => edited.push(edit),
                0 => {
                    edited.remove(at);
                }
                1 => edited.insert(at, chars[at]),
                2 => {
                    let c = chars[at];
                    edited[at] = if c.is_ascii_lowercase() {
                        c.to_ascii_uppercase()
                    } else {
                        c.to_ascii_lowercase()
                    };
                }
                3 => edited[at] = edit,
                _ => edited.insert(rng.usize(..=chars.len()), edit),
            }
            edited.into_iter().collect()
        })
        .collect()
}

/// Encodings and decodings of type `T`: `draws` drawn values with their keys, and texts near
/// their keys, plus `spellings`, each accepted or refused as Rust decides.
fn type_vectors<T: Field + KeyPartDecode>(
    rng: &mut fastrand::Rng,
    draws: usize,
    spellings: &[&str],
    encodings: &mut Vec<Value>,
    decodings: &mut Vec<Value>,
) {
    for _ in 0..draws {
        let value = T::draw(rng);
        encodings.push(encoding(&value));
        if let Ok(key) = key_of(&value) {
            decodings.push(decoding::<T>(&key));
            for text in near_misses(rng, &key, 4) {
                decodings.push(decoding::<T>(&text));
            }
        }
    }
    for text in spellings {
        decodings.push(decoding::<T>(text));
    }
}

fn encoding_vectors() -> (Vec<Value>, Vec<Value>) {
    let mut rng = fastrand::Rng::with_seed(100);
    let (mut enc, mut dec) = (Vec::new(), Vec::new());
    let integer = [
        "42",
        "+0000000000000000042",
        "-1",
        "",
        " 42",
        "0x2a",
        "4.2e1",
    ];
    type_vectors::<u8>(&mut rng, 6, &integer, &mut enc, &mut dec);
    type_vectors::<u16>(&mut rng, 6, &integer, &mut enc, &mut dec);
    type_vectors::<u32>(&mut rng, 6, &integer, &mut enc, &mut dec);
    type_vectors::<u64>(&mut rng, 8, &integer, &mut enc, &mut dec);
    type_vectors::<usize>(&mut rng, 4, &integer, &mut enc, &mut dec);
    type_vectors::<u128>(&mut rng, 6, &integer, &mut enc, &mut dec);
    let signed = [
        "-128",
        "-000",
        "0127",
        "0128",
        "-0000000000000000000",
        "+0000000000000000001",
    ];
    type_vectors::<i8>(&mut rng, 8, &signed, &mut enc, &mut dec);
    type_vectors::<i16>(&mut rng, 6, &signed, &mut enc, &mut dec);
    type_vectors::<i32>(&mut rng, 6, &signed, &mut enc, &mut dec);
    type_vectors::<i64>(&mut rng, 10, &signed, &mut enc, &mut dec);
    type_vectors::<isize>(&mut rng, 4, &signed, &mut enc, &mut dec);
    type_vectors::<i128>(&mut rng, 6, &signed, &mut enc, &mut dec);
    let strings = [
        "a$2a", "a$41", "a$2", "a#b", "a b", "$", "$$24", "$24$23", "$1F$20", "$25", "\u{7f}",
        "ü$0A", "", "a\"b", "!",
    ];
    type_vectors::<String>(&mut rng, 30, &strings, &mut enc, &mut dec);
    let bools = ["True", "TRUE", "1", "0", "yes", "", "false "];
    type_vectors::<bool>(&mut rng, 2, &bools, &mut enc, &mut dec);
    let timestamps = [
        "2026-06-22T01:00:00.000000000Z",
        "2026-06-22T01:00:00Z",
        "2026-06-22T01:00:00.000Z",
        "2026-06-22T01:00:00.000000000+00:00",
        "2026-06-22t01:00:00.000000000z",
        "2026-06-22 01:00:00.000000000Z",
        "2026-02-30T01:00:00.000000000Z",
        "2016-12-31T23:59:60.500000000Z",
        "2026-06-22T12:34:60.000000000Z",
        "2026-06-22T24:00:00.000000000Z",
        "0000-01-01T00:00:00.000000000Z",
        "9999-12-31T23:59:59.999999999Z",
        "+2026-06-22T01:00:00.000000000Z",
        "2026-06-22T01:00:00.0000000000Z",
    ];
    type_vectors::<DateTime<Utc>>(&mut rng, 16, &timestamps, &mut enc, &mut dec);
    let dates = [
        "2026-1-2",
        "2026-01-02",
        "2026-02-29",
        "2024-02-29",
        "0000-02-29",
        "1900-02-29",
        "+2026-01-02",
        "20260102",
        "2026-13-01",
        "2026-00-10",
        "9999-12-31",
        "10000-01-01",
    ];
    type_vectors::<NaiveDate>(&mut rng, 12, &dates, &mut enc, &mut dec);
    let uuids = [
        "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "67E55044-10B1-426F-9247-BB680E5FE0C8",
        "{67e55044-10b1-426f-9247-bb680e5fe0c8}",
        "67e5504410b1426f9247bb680e5fe0c8",
        "urn:uuid:67e55044-10b1-426f-9247-bb680e5fe0c8",
        "67e55044-10b1-426f-9247-bb680e5fe0c",
        "g7e55044-10b1-426f-9247-bb680e5fe0c8",
    ];
    type_vectors::<Uuid>(&mut rng, 6, &uuids, &mut enc, &mut dec);
    (enc, dec)
}

/// One hashed value: its type, its typed value, its key.
fn part<T: Field>(value: T) -> (&'static str, Value, String) {
    let key = key_of(&value).expect("hashed values have keys");
    (T::TYPE, value.typed(), key)
}

/// Shard hash vectors: the values hashed (rule 3 joins several with `#`), their canonical
/// text, FNV-1a 64 and the shard for a few `n`.
fn hash_vectors() -> Vec<Value> {
    let mut rng = fastrand::Rng::with_seed(200);
    let mut inputs: Vec<Vec<(&'static str, Value, String)>> = vec![
        vec![],
        vec![part("a".to_owned())],
        vec![part("player-1".to_owned())],
        vec![part("p1".to_owned())],
        vec![part("a b#c".to_owned())],
        vec![part("über".to_owned())],
        vec![part(42u64)],
        vec![part(-1i64)],
        vec![part(i64::MIN)],
        vec![part(-1i128)],
        vec![part(true)],
        vec![part("g1".to_owned()), part("p#1".to_owned())],
        vec![part("p#1".to_owned()), part("g1".to_owned())],
        vec![part("g1".to_owned()), part(42u64)],
        vec![part(Uuid::from_u128(0x67e5504410b1426f9247bb680e5fe0c8))],
    ];
    for _ in 0..40 {
        let mut values = Vec::new();
        for _ in 0..rng.usize(1..4) {
            values.push(match rng.u8(0..6) {
                0 => part(
                    DateTime::<Utc>::from_timestamp(
                        rng.i64(0..4_000_000_000),
                        rng.u32(0..1_000_000_000),
                    )
                    .unwrap(),
                ),
                1 => part(u32::draw(&mut rng)),
                2 => part(i16::draw(&mut rng)),
                3 => part(Uuid::draw(&mut rng)),
                _ => part(format!(
                    "{}{}",
                    STRINGS[rng.usize(..STRINGS.len())],
                    rng.u16(..)
                )),
            });
        }
        inputs.push(values);
    }
    let mut vectors = Vec::new();
    for values in inputs {
        let canonical = values
            .iter()
            .map(|(_, _, k)| k.as_str())
            .collect::<Vec<_>>()
            .join("#");
        let fnv = sharded::hash::fnv1a64(canonical.as_bytes());
        let shards: BTreeMap<String, u32> = [1u32, 2, 4, 7, 10, 100, 1000]
            .into_iter()
            .map(|n| {
                (
                    n.to_string(),
                    sharded::hash::shard_of_bytes(canonical.as_bytes(), n),
                )
            })
            .collect();
        let typed: Vec<Value> = values.iter().map(|(t, v, _)| json!([t, v])).collect();
        vectors.push(json!({
            "values": typed,
            "canonical": canonical,
            "fnv1a64": format!("{fnv:#018x}"),
            "shards": shards,
        }));
    }
    vectors
}

/// Bucket labels of instants (around the edges: before 1970, ISO weeks across new year, the
/// first and last years), and texts parsed as labels, accepted or refused.
fn bucket_vectors() -> (Vec<Value>, Vec<Value>) {
    let mut rng = fastrand::Rng::with_seed(300);
    let granularities = [
        Granularity::Hour,
        Granularity::Day,
        Granularity::Week,
        Granularity::Month,
    ];
    let mut instants: Vec<i64> = vec![
        0,
        -1,
        1_795_355_100,
        1_735_516_800, // 2024-12-30, in 2025-W01
        1_609_632_000, // 2021-01-03, in 2020-W53
        FIRST_SECOND,
        FIRST_SECOND - 1,
        LAST_SECOND,
        LAST_SECOND + 1,
        i64::MIN,
        i64::MAX,
    ];
    instants.extend((0..40).map(|_| rng.i64(FIRST_SECOND - 86_400 * 8..LAST_SECOND + 86_400 * 8)));
    instants.extend((0..20).map(|_| rng.i64(1_600_000_000..2_000_000_000)));
    let mut labels = Vec::new();
    let mut parses = Vec::new();
    for g in granularities {
        for &t in &instants {
            match Bucket::containing(g, t) {
                Ok(bucket) => {
                    labels.push(json!({"granularity": g.name(), "seconds": t.to_string(), "label": bucket.label()}));
                    if rng.u8(0..4) == 0 {
                        for text in near_misses(&mut rng, &bucket.label(), 3) {
                            parses.push(parse_vector(g, &text));
                        }
                    }
                    parses.push(parse_vector(g, &bucket.label()));
                }
                Err(e) => labels.push(json!({"granularity": g.name(), "seconds": t.to_string(), "refused": e.to_string()})),
            }
        }
    }
    for (g, text) in [
        (Granularity::Week, "2026-W53"),
        (Granularity::Week, "2025-W53"),
        (Granularity::Week, "2026-W00"),
        (Granularity::Week, "2026-w07"),
        (Granularity::Week, "2026-W7"),
        (Granularity::Day, "2026-1-2"),
        (Granularity::Day, "2024-02-29"),
        (Granularity::Day, "2023-02-29"),
        (Granularity::Hour, "2026-11-22T24"),
        (Granularity::Hour, "2026-11-22T1"),
        (Granularity::Month, "2026-13"),
        (Granularity::Month, "2026-11-01"),
        (Granularity::Week, "0000-W01"),
        (Granularity::Week, "9999-W52"),
    ] {
        parses.push(parse_vector(g, text));
    }
    (labels, parses)
}

fn parse_vector(g: Granularity, text: &str) -> Value {
    match Bucket::parse(g, text) {
        Ok(bucket) => {
            json!({"granularity": g.name(), "label": text, "start": bucket.start().to_string()})
        }
        Err(e) => json!({"granularity": g.name(), "label": text, "refused": e.to_string()}),
    }
}

// ---------------------------------------------------------------------------------------------
// The file

/// Writes `value` as JSON with one vector per line: nested objects and arrays are laid out
/// down to `depth`, deeper ones written on one line.
fn layout(value: &Value, indent: usize, depth: usize, out: &mut String) {
    let pad = "  ".repeat(indent + 1);
    match value {
        Value::Object(map) if depth > 0 && !map.is_empty() => {
            out.push_str("{\n");
            for (i, (key, v)) in map.iter().enumerate() {
                out.push_str(&pad);
                out.push_str(&serde_json::to_string(key).unwrap());
                out.push_str(": ");
                let deeper = if key == "entities" { depth + 2 } else { depth };
                layout(v, indent + 1, deeper - 1, out);
                out.push_str(if i + 1 < map.len() { ",\n" } else { "\n" });
            }
            out.push_str(&"  ".repeat(indent));
            out.push('}');
        }
        Value::Array(items) if depth > 0 && !items.is_empty() => {
            out.push_str("[\n");
            for (i, v) in items.iter().enumerate() {
                out.push_str(&pad);
                layout(v, indent + 1, depth - 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            out.push_str(&"  ".repeat(indent));
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap()),
    }
}

fn generate() -> String {
    let (encodings, decodings) = encoding_vectors();
    let (bucket_labels, bucket_parses) = bucket_vectors();
    let vectors = json!({
        "about": "Generated by tests/interop_vectors.rs (SHARDED_WRITE_VECTORS=1 cargo test --test interop_vectors); checked by interop/run. Do not edit.",
        "version": 2,
        "encodings": encodings,
        "decodings": decodings,
        "hashes": hash_vectors(),
        "bucket_labels": bucket_labels,
        "bucket_parses": bucket_parses,
        "entities": entities(),
        "counters": standalone_counters(),
    });
    let mut out = String::new();
    layout(&vectors, 0, 2, &mut out);
    out.push('\n');
    out
}

#[test]
fn interop_vectors_are_current() {
    let generated = generate();
    assert!(
        generated.len() < 1_000_000,
        "the vectors grew to {} bytes: keep them well under 1 MB",
        generated.len()
    );
    if std::env::var(WRITE_VARIABLE).is_ok_and(|v| v == "1") {
        std::fs::write(VECTORS, &generated).expect("write interop/vectors.json");
        return;
    }
    let committed = std::fs::read_to_string(VECTORS).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or(
                committed.lines().count().min(generated.lines().count()),
                |i| i,
            );
        panic!(
            "interop/vectors.json is not what the Rust side generates (first difference at line \
             {}): regenerate it with `{WRITE_VARIABLE}=1 cargo test --test interop_vectors` and \
             run `interop/run`",
            line + 1
        );
    }
}

/// The vectors hold what they claim to: refusals of each kind, stored items of every entity.
#[test]
fn vectors_cover_refusals_and_items() {
    let vectors: Value = serde_json::from_str(&generate()).unwrap();
    for entity in vectors["entities"].as_array().unwrap() {
        let records = entity["records"].as_array().unwrap();
        let stored = records.iter().filter(|r| r.get("item").is_some()).count();
        assert!(
            stored * 2 >= records.len(),
            "{}: most records are stored",
            entity["spec"]["entity"]
        );
    }
    let refused = |list: &str| {
        vectors[list]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.get("refused").is_some())
            .count()
    };
    // Items read back: each verdict appears, and untagged items are read in the tables
    // that recognise them by their keys.
    let readings: Vec<&Value> = vectors["entities"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["records"].as_array().unwrap())
        .flat_map(|r| r["readings"].as_array().into_iter().flatten())
        .collect();
    for verdict in [
        "other_entity",
        "untagged",
        "bad_tag",
        "other_keys",
        "unreadable",
    ] {
        assert!(
            readings.iter().any(|r| r["refused"] == verdict),
            "a reading refused as {verdict}"
        );
    }
    assert!(
        readings
            .iter()
            .any(|r| r["what"] == "untagged" && r.get("record").is_some()),
        "an untagged item read by its keys"
    );
    assert!(refused("decodings") > 100, "texts near keys are refused");
    assert!(refused("bucket_labels") > 4 && refused("bucket_parses") > 10);
}
