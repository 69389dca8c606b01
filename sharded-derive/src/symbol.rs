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
    SINGLE_PARTITION,
    QUERY,
    PREVIOUS_N,
    LEGACY,
];
pub const SK_KEYS: &[&str] = &[TEMPLATE];
pub const GSI_KEYS: &[&str] = &[PK, SK, SHARD, N, SINGLE_PARTITION, QUERY, INDEX];
/// `shard_attribute = ".."`: the number attribute of a multi-attribute index's shard.
pub const SHARD_ATTRIBUTE: &str = "shard_attribute";
/// The keys of `#[gsiN(pk = [..], ..)]`, an index keyed by the fields' own attributes.
pub const ATTRIBUTE_GSI_KEYS: &[&str] = &[PK, SK, SHARD, SHARD_ATTRIBUTE, QUERY, INDEX];
pub const CONTAINER_KEYS: &[&str] = &[TABLE, ENTITY, CRATE];
/// `#[sharded(...)]` on a field: what the runtime maintains in it.
pub const FIELD_KEYS: &[&str] = &["version", "ttl", "created_at", "updated_at"];

// The entity attribute's name and the shard maximum are the runtime's facts: generated code
// checks them against `sharded::schema`, so the derive holds no copy (see `expand::runtime_fact_checks`).

/// `#[counter(name = "votes", n = 10)]`: a sharded counter per item.
pub const COUNTER: &str = "counter";
pub const NAME: &str = "name";
pub const COUNTER_KEYS: &[&str] = &[NAME, N];
