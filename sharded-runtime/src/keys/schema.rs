//! The static description of an entity's keys, emitted by the derive, and the table it needs.
//!
//! `#[derive(ShardedEntity)]` describes each entity as an [`EntitySchema`], reachable as
//! `<Entity as ShardedEntity>::SCHEMA`. The types are `#[non_exhaustive]`: their fields can be
//! read, and new kinds of layout can be added to them without breaking code that reads them;
//! generated code builds them with their `const fn` constructors.

use crate::keys::error::KeyError;
pub use crate::keys::template::{KeyTemplate, Segment};

// The literals behind `ENTITY_ATTRIBUTE` and `MAX_SHARDS`, as macros so the compile-time
// messages below can quote them (`concat!` takes only literals): one definition each.
macro_rules! entity_attribute {
    () => {
        "_entity"
    };
}
macro_rules! max_shards {
    () => {
        1000
    };
}
pub(crate) use {entity_attribute, max_shards};

/// The attribute that records which entity an item is, so a query over a shared partition
/// never reads one entity's item as another's.
pub const ENTITY_ATTRIBUTE: &str = entity_attribute!();

/// The largest shard count the derive accepts.
///
/// Every read of a sharded key costs `n` requests; past a thousand, a key with more
/// cardinality (a finer template) serves better than more shards.
pub const MAX_SHARDS: u32 = max_shards!();

/// DynamoDB's largest partition key value: 2,048 bytes of UTF-8, on the table and on every
/// index. Longer keys are refused before sending ([`KeyError::KeyTooLong`]).
///
/// ```
/// assert_eq!(sharded::schema::MAX_PARTITION_KEY_BYTES, 2048);
/// ```
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;

/// DynamoDB's largest sort key value: 1,024 bytes of UTF-8, on the table and on every index.
/// Longer keys are refused before sending ([`KeyError::KeyTooLong`]).
///
/// ```
/// assert_eq!(sharded::schema::MAX_SORT_KEY_BYTES, 1024);
/// ```
pub const MAX_SORT_KEY_BYTES: usize = 1024;

/// Refuses a key `value` of `attribute` longer than `limit` bytes.
fn check_key_size(
    entity: &'static str,
    attribute: &'static str,
    value: &str,
    limit: usize,
) -> Result<(), KeyError> {
    if value.len() > limit {
        return Err(KeyError::KeyTooLong {
            entity,
            attribute,
            size: value.len(),
            limit,
        });
    }
    Ok(())
}

/// How a partition key is spread over shards.
///
/// ```
/// use sharded::schema::Sharding;
/// assert_eq!(Sharding::random(10).shard_count(), Some(10));
/// assert_eq!(Sharding::hash(&["player_id"], 4).shard_count(), Some(4));
/// assert_eq!(Sharding::None.shard_count(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sharding {
    /// One physical key per logical key.
    None,
    /// `shard = "hash(a, b)"`: the shard is the spec hash of these fields, so a point lookup
    /// knows its shard.
    #[non_exhaustive]
    Hash {
        /// The hashed fields, in order.
        fields: &'static [&'static str],
        /// The shard count.
        n: u32,
    },
    /// `shard = "random"`: a fresh random shard per write; point lookups must ask every shard.
    #[non_exhaustive]
    Random {
        /// The shard count.
        n: u32,
    },
    /// GSI `shard = N`: the shard is the spec hash of the item's logical primary key (its
    /// partition key without the shard suffix, `#`, its sort key; rule 4 of
    /// [`hash`](crate::hash)), so re-putting an item keeps its GSI shard.
    #[non_exhaustive]
    Identity {
        /// The shard count.
        n: u32,
    },
}

impl Sharding {
    /// `shard = "hash(fields..)"` over `n` shards.
    pub const fn hash(fields: &'static [&'static str], n: u32) -> Sharding {
        Sharding::Hash { fields, n }
    }

    /// `shard = "random"` over `n` shards.
    pub const fn random(n: u32) -> Sharding {
        Sharding::Random { n }
    }

    /// A GSI's `shard = n`: the item's logical primary key hashed over `n` shards (rule 4 of
    /// [`hash`](crate::hash)).
    pub const fn identity(n: u32) -> Sharding {
        Sharding::Identity { n }
    }

    /// The shard count, or `None` when unsharded.
    pub fn shard_count(&self) -> Option<u32> {
        match *self {
            Sharding::None => None,
            Sharding::Hash { n, .. } | Sharding::Random { n } | Sharding::Identity { n } => Some(n),
        }
    }
}

/// A partition key: attribute name, template, sharding.
///
/// ```
/// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
/// static T: KeyTemplate = KeyTemplate::new(
///     "GAME#{game_id}",
///     &[Segment::literal("GAME#"), Segment::field("game_id")],
/// );
/// let pk = PartitionKeySchema::new("pk", &T, Sharding::random(10));
/// assert_eq!(pk.physical_form(), "GAME#{game_id}#<shard 0..10>");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionKeySchema {
    /// The DynamoDB attribute holding the key.
    pub attribute: &'static str,
    /// The logical key template.
    pub template: &'static KeyTemplate,
    /// How the logical key is spread.
    pub sharding: Sharding,
}

impl PartitionKeySchema {
    /// The key held in `attribute`, built from `template` and spread by `sharding`.
    pub const fn new(
        attribute: &'static str,
        template: &'static KeyTemplate,
        sharding: Sharding,
    ) -> Self {
        PartitionKeySchema {
            attribute,
            template,
            sharding,
        }
    }

    /// Refuses a `value` of this key over [`MAX_PARTITION_KEY_BYTES`], naming `entity` and
    /// the attribute.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
    /// static T: KeyTemplate = KeyTemplate::new("U#{id}", &[Segment::literal("U#"), Segment::field("id")]);
    /// let pk = PartitionKeySchema::new("pk", &T, Sharding::None);
    /// assert!(pk.check_size("User", "U#1").is_ok());
    /// assert!(pk.check_size("User", &"x".repeat(2049)).is_err());
    /// ```
    pub fn check_size(&self, entity: &'static str, value: &str) -> Result<(), KeyError> {
        check_key_size(entity, self.attribute, value, MAX_PARTITION_KEY_BYTES)
    }

    /// The physical form for documentation and messages.
    pub fn physical_form(&self) -> String {
        match self.sharding.shard_count() {
            None => self.template.source.to_owned(),
            Some(n) => format!("{}#<shard 0..{n}>", self.template.source),
        }
    }
}

/// Whether two partition keys put the same logical key in the same physical partitions: the
/// same attribute, templates with the same literals and fields at the same places (field
/// names may differ; their types are checked by the derive), and the same shard count. How an
/// item picks its shard may differ: a query reads every shard.
pub(crate) const fn same_partition_layout(a: &PartitionKeySchema, b: &PartitionKeySchema) -> bool {
    str_eq(a.attribute, b.attribute)
        && same_template_shape(a.template, b.template)
        && shard_count(a.sharding) == shard_count(b.sharding)
}

/// Whether two templates have the same literals and fields at the same places.
pub(crate) const fn same_template_shape(a: &KeyTemplate, b: &KeyTemplate) -> bool {
    let (a, b) = (a.segments, b.segments);
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        match (&a[i], &b[i]) {
            (Segment::Literal(x), Segment::Literal(y)) if str_eq(x, y) => {}
            (Segment::Field(_), Segment::Field(_)) => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// [`Sharding::shard_count`] as a `const fn`: 0 when unsharded.
pub(crate) const fn shard_count(sharding: Sharding) -> u32 {
    match sharding {
        Sharding::None => 0,
        Sharding::Hash { n, .. } | Sharding::Random { n } | Sharding::Identity { n } => n,
    }
}

/// `a == b` for `&str` in a `const fn`.
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A sort key: attribute name and template.
///
/// ```
/// use sharded::schema::{KeyTemplate, Segment, SortKeySchema};
/// static T: KeyTemplate = KeyTemplate::new("META", &[Segment::literal("META")]);
/// let sk = SortKeySchema::new("sk", &T);
/// assert_eq!(sk.attribute, "sk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SortKeySchema {
    /// The DynamoDB attribute holding the key.
    pub attribute: &'static str,
    /// The template.
    pub template: &'static KeyTemplate,
}

impl SortKeySchema {
    /// The key held in `attribute`, built from `template`.
    pub const fn new(attribute: &'static str, template: &'static KeyTemplate) -> Self {
        SortKeySchema {
            attribute,
            template,
        }
    }

    /// Refuses a `value` of this key over [`MAX_SORT_KEY_BYTES`], naming `entity` and the
    /// attribute.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, Segment, SortKeySchema};
    /// static T: KeyTemplate = KeyTemplate::new("{at}", &[Segment::field("at")]);
    /// let sk = SortKeySchema::new("sk", &T);
    /// assert!(sk.check_size("Event", &"x".repeat(1024)).is_ok());
    /// assert!(sk.check_size("Event", &"x".repeat(1025)).is_err());
    /// ```
    pub fn check_size(&self, entity: &'static str, value: &str) -> Result<(), KeyError> {
        check_key_size(entity, self.attribute, value, MAX_SORT_KEY_BYTES)
    }
}

/// A global secondary index written by the entity.
///
/// ```
/// use sharded::schema::{GsiSchema, KeyTemplate, PartitionKeySchema, Segment, Sharding};
/// static T: KeyTemplate = KeyTemplate::new(
///     "PLAYER#{player_id}",
///     &[Segment::literal("PLAYER#"), Segment::field("player_id")],
/// );
/// let gsi = GsiSchema::new(1, "gsi1", PartitionKeySchema::new("gsi1pk", &T, Sharding::identity(4)), None);
/// assert_eq!(gsi.index_name, "gsi1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GsiSchema {
    /// `1` for `#[gsi1(...)]`.
    pub number: u8,
    /// The index name in DynamoDB.
    pub index_name: &'static str,
    /// The index partition key.
    pub pk: PartitionKeySchema,
    /// The index sort key, if any.
    pub sk: Option<SortKeySchema>,
}

impl GsiSchema {
    /// Index `number` (`1` for `#[gsi1]`), named `index_name` in DynamoDB.
    pub const fn new(
        number: u8,
        index_name: &'static str,
        pk: PartitionKeySchema,
        sk: Option<SortKeySchema>,
    ) -> Self {
        GsiSchema {
            number,
            index_name,
            pk,
            sk,
        }
    }
}

/// Everything the derive knows about an entity's keys.
///
/// Generated as a `static` per entity and reachable as `<Entity as ShardedEntity>::SCHEMA`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[sharded(table = "app")]
/// #[pk(template = "ORG#{org}", shard = "hash(id)", n = 4)]
/// struct User { org: String, id: String }
///
/// let schema = <User as ShardedEntity>::SCHEMA;
/// assert_eq!((schema.entity, schema.table), ("User", Some("app")));
/// assert_eq!(schema.pk.sharding.shard_count(), Some(4));
/// assert_eq!(User::table_definition().partition_key, "pk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntitySchema {
    /// The entity name written into [`ENTITY_ATTRIBUTE`].
    pub entity: &'static str,
    /// The default table, from `#[sharded(table = "...")]`.
    pub table: Option<&'static str>,
    /// The base table partition key.
    pub pk: PartitionKeySchema,
    /// The base table sort key.
    pub sk: Option<SortKeySchema>,
    /// The GSIs, in the order of their numbers.
    pub gsis: &'static [GsiSchema],
}

impl EntitySchema {
    /// Entity `entity` (the value of [`ENTITY_ATTRIBUTE`]) with these keys.
    pub const fn new(
        entity: &'static str,
        table: Option<&'static str>,
        pk: PartitionKeySchema,
        sk: Option<SortKeySchema>,
        gsis: &'static [GsiSchema],
    ) -> Self {
        EntitySchema {
            entity,
            table,
            pk,
            sk,
            gsis,
        }
    }

    /// The table this entity needs (key schema and GSIs).
    pub fn table_definition(&self) -> TableDefinition {
        TableDefinition {
            partition_key: self.pk.attribute,
            sort_key: self.sk.map(|s| s.attribute),
            indexes: self
                .gsis
                .iter()
                .map(|g| IndexDefinition {
                    name: g.index_name,
                    partition_key: g.pk.attribute,
                    sort_key: g.sk.map(|s| s.attribute),
                })
                .collect(),
        }
    }

    /// The GSI with the given number (`1` for `gsi1`).
    ///
    /// ```
    /// # use sharded::schema::*;
    /// # static T: KeyTemplate = KeyTemplate::new("A", &[Segment::literal("A")]);
    /// # static S: EntitySchema = EntitySchema::new("A", None,
    /// #   PartitionKeySchema::new("pk", &T, Sharding::random(2)), None, &[]);
    /// assert!(S.gsi(1).is_none());
    /// ```
    pub fn gsi(&self, number: u8) -> Option<&'static GsiSchema> {
        self.gsis.iter().find(|g| g.number == number)
    }
}

/// A table's keys and indexes, all string-typed, ready for `CreateTable`.
///
/// Several entities share one table in a single-table design: [`TableDefinition::merge`]
/// combines their definitions and refuses ones that disagree.
///
/// ```no_run
/// # async fn demo(client: sharded::aws_sdk_dynamodb::Client, def: sharded::schema::TableDefinition) -> Result<(), Box<dyn std::error::Error>> {
/// def.create_table(&client, "leaderboard").send().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableDefinition {
    /// The partition key attribute.
    pub partition_key: &'static str,
    /// The sort key attribute, if any.
    pub sort_key: Option<&'static str>,
    /// The GSIs.
    pub indexes: Vec<IndexDefinition>,
}

/// One GSI of a [`TableDefinition`].
///
/// ```
/// let i = sharded::schema::IndexDefinition::new("gsi1", "gsi1pk", None);
/// assert_eq!(i.name, "gsi1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexDefinition {
    /// The index name.
    pub name: &'static str,
    /// Its partition key attribute.
    pub partition_key: &'static str,
    /// Its sort key attribute, if any.
    pub sort_key: Option<&'static str>,
}

impl IndexDefinition {
    /// Index `name` keyed by `partition_key` and `sort_key`.
    pub fn new(
        name: &'static str,
        partition_key: &'static str,
        sort_key: Option<&'static str>,
    ) -> Self {
        IndexDefinition {
            name,
            partition_key,
            sort_key,
        }
    }
}

/// Two entities disagree about a table's keys, so they cannot share it.
///
/// ```
/// use sharded::schema::TableDefinition;
/// let a = TableDefinition::new("pk", Some("sk"));
/// let b = TableDefinition::new("pk", None);
/// assert!(a.merge(&b).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entities cannot share a table: {0}")]
pub struct TableConflict(pub String);

impl TableDefinition {
    /// A table keyed by `partition_key` and `sort_key`, with no indexes yet.
    pub fn new(partition_key: &'static str, sort_key: Option<&'static str>) -> Self {
        TableDefinition {
            partition_key,
            sort_key,
            indexes: Vec::new(),
        }
    }

    /// The same table with one more index.
    ///
    /// ```
    /// use sharded::schema::{IndexDefinition, TableDefinition};
    /// let t = TableDefinition::new("pk", Some("sk")).with_index(IndexDefinition::new("gsi1", "gsi1pk", None));
    /// assert_eq!(t.indexes.len(), 1);
    /// ```
    pub fn with_index(mut self, index: IndexDefinition) -> Self {
        self.indexes.push(index);
        self
    }

    /// The union of two definitions, or why they cannot share a table.
    pub fn merge(&self, other: &TableDefinition) -> Result<TableDefinition, TableConflict> {
        if self.partition_key != other.partition_key || self.sort_key != other.sort_key {
            return Err(TableConflict(format!(
                "base keys ({}, {:?}) and ({}, {:?}) differ",
                self.partition_key, self.sort_key, other.partition_key, other.sort_key
            )));
        }
        let mut indexes = self.indexes.clone();
        for index in &other.indexes {
            match indexes.iter().find(|i| i.name == index.name) {
                Some(existing) if existing != index => {
                    return Err(TableConflict(format!(
                        "index `{}` is keyed differently: {existing:?} vs {index:?}",
                        index.name
                    )))
                }
                Some(_) => {}
                None => indexes.push(index.clone()),
            }
        }
        Ok(TableDefinition {
            partition_key: self.partition_key,
            sort_key: self.sort_key,
            indexes,
        })
    }
}
