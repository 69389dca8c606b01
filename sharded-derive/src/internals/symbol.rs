//! Attribute names and keys, named once (as serde_derive's `symbol.rs`).

pub const SHARDED: &str = "sharded";
pub const PK: &str = "pk";
pub const SK: &str = "sk";
/// GSI attributes are `gsi1` ..= `gsi20` (DynamoDB allows 20 GSIs per table).
pub const GSI_PREFIX: &str = "gsi";
pub const MAX_GSIS: u8 = 20;

pub const TEMPLATE: &str = "template";
pub const SHARD: &str = "shard";
pub const N: &str = "n";
pub const SINGLE_PARTITION: &str = "single_partition";
pub const QUERY: &str = "query";
/// `previous_n = 10`: the shard count being moved away from (resharding N -> M).
pub const PREVIOUS_N: &str = "previous_n";
/// `legacy = "GAME#{game_id}"`: the unsharded key a table's existing items are under.
pub const LEGACY: &str = "legacy";
/// `max_n = 64`: the layout is decided per logical key, `n` the default of every key and
/// `max_n` the most one key may be widened to.
pub const MAX_N: &str = "max_n";
/// `suffix = "#SHARD_{shard}"`: how the shard is spelled after the logical key.
pub const SUFFIX: &str = "suffix";
/// `previous_suffix = "#SHARD_{shard}"`: the previous layout's spelling.
pub const PREVIOUS_SUFFIX: &str = "previous_suffix";
/// `previous_shard = "unknown"`: where the previous layout put an item (random, another hash).
pub const PREVIOUS_SHARD: &str = "previous_shard";
/// The one value of `previous_shard`.
pub const UNKNOWN: &str = "unknown";
pub const INDEX: &str = "index";
pub const TABLE: &str = "table";
pub const ENTITY: &str = "entity";
/// `#[sharded(crate = "path")]`, serde's spelling.
pub const CRATE: &str = "crate";

/// Keys accepted by each attribute, for "unknown key" messages and suggestions.
pub const PK_KEYS: &[&str] = &[
    TEMPLATE,
    SHARD,
    N,
    MAX_N,
    SUFFIX,
    SINGLE_PARTITION,
    QUERY,
    PREVIOUS_N,
    PREVIOUS_SHARD,
    PREVIOUS_SUFFIX,
    LEGACY,
];
pub const SK_KEYS: &[&str] = &[TEMPLATE];
pub const GSI_KEYS: &[&str] = &[PK, SK, SHARD, N, SUFFIX, SINGLE_PARTITION, QUERY, INDEX];
/// `shard_attribute = ".."`: the number attribute of a multi-attribute index's shard.
pub const SHARD_ATTRIBUTE: &str = "shard_attribute";
/// The keys of `#[gsiN(pk = [..], ..)]`, an index keyed by the fields' own attributes.
pub const ATTRIBUTE_GSI_KEYS: &[&str] = &[PK, SK, SHARD, SHARD_ATTRIBUTE, QUERY, INDEX];
pub const CONTAINER_KEYS: &[&str] = &[TABLE, ENTITY, CRATE];

// `#[derive(ShardedTable)]`: `#[table(..)]` and `#[gsiN(..)]` on a unit struct.
/// The table attribute.
pub const TABLE_ATTR: &str = "table";
/// `name = "Leaderboards"`: the table's name in DynamoDB.
pub const TABLE_NAME: &str = "name";
/// `tag = "_type"`: the attribute holding the entity's name.
pub const TAG: &str = "tag";
/// `recognize = "tag" | "tag_or_key" | "key"`: how an item says which entity it is.
pub const RECOGNIZE: &str = "recognize";
/// The values of `recognize`.
pub const RECOGNIZE_VALUES: &[&str] = &["tag", "tag_or_key", "key"];
/// `move_attribute = "_mv"`: the attribute that marks the writes of a layout move.
pub const MOVE_ATTRIBUTE: &str = "move_attribute";
pub const TABLE_KEYS: &[&str] = &[TABLE_NAME, PK, SK, TAG, RECOGNIZE, MOVE_ATTRIBUTE];
/// The keys of `#[gsiN(..)]` on a table: the index name and its key attributes.
pub const TABLE_GSI_KEYS: &[&str] = &[INDEX, PK, SK];
/// `#[sharded(...)]` on a field: what the runtime maintains in it.
pub const FIELD_KEYS: &[&str] = &["version", "ttl", "created_at", "updated_at"];

// The entity attribute's name and the shard maximum are the runtime's facts: generated code
// checks them against `sharded::schema`, so the derive holds no copy (see `expand::runtime_fact_checks`).

/// `#[counter(name = "votes", n = 10)]`: a sharded counter per item.
pub const COUNTER: &str = "counter";
pub const NAME: &str = "name";
pub const COUNTER_KEYS: &[&str] = &[NAME, N];
