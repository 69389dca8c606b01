//! The static description of an entity's keys, emitted by the derive, and the table it needs.

use aws_sdk_dynamodb::operation::create_table::builders::CreateTableFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

use crate::keys::KeyTemplate;

/// The attribute that records which entity an item is, so a query over a shared partition
/// never reads one entity's item as another's.
pub const ENTITY_ATTRIBUTE: &str = "_entity";

/// The largest shard count the derive accepts.
///
/// Every read of a sharded key costs `n` requests; past a thousand, a key with more
/// cardinality (a finer template) serves better than more shards.
pub const MAX_SHARDS: u32 = 1000;

/// How a partition key is spread over shards.
///
/// ```
/// use sharded_runtime::schema::Sharding;
/// assert_eq!(Sharding::Random { n: 10 }.shard_count(), Some(10));
/// assert_eq!(Sharding::None.shard_count(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sharding {
    /// One physical key per logical key.
    None,
    /// `shard = "hash(a, b)"`: the shard is the spec hash of these fields, so a point lookup
    /// knows its shard.
    Hash {
        /// The hashed fields, in order.
        fields: &'static [&'static str],
        /// The shard count.
        n: u32,
    },
    /// `shard = "random"`: a fresh random shard per write; point lookups must ask every shard.
    Random {
        /// The shard count.
        n: u32,
    },
    /// GSI `shard = N`: the shard is the spec hash of the item's logical primary key, so
    /// re-putting an item keeps its GSI shard.
    Identity {
        /// The shard count.
        n: u32,
    },
}

impl Sharding {
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
/// use sharded_runtime::keys::{KeyTemplate, Segment};
/// use sharded_runtime::schema::{PartitionKeySchema, Sharding};
/// static T: KeyTemplate = KeyTemplate { source: "GAME#{game_id}", segments: &[
///     Segment::Literal("GAME#"), Segment::Field("game_id")] };
/// let pk = PartitionKeySchema { attribute: "pk", template: &T, sharding: Sharding::Random { n: 10 } };
/// assert_eq!(pk.physical_form(), "GAME#{game_id}#<shard 0..10>");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionKeySchema {
    /// The DynamoDB attribute holding the key.
    pub attribute: &'static str,
    /// The logical key template.
    pub template: &'static KeyTemplate,
    /// How the logical key is spread.
    pub sharding: Sharding,
}

impl PartitionKeySchema {
    /// The physical form for documentation and messages.
    pub fn physical_form(&self) -> String {
        match self.sharding.shard_count() {
            None => self.template.source.to_owned(),
            Some(n) => format!("{}#<shard 0..{n}>", self.template.source),
        }
    }
}

/// A sort key: attribute name and template.
///
/// ```
/// use sharded_runtime::keys::{KeyTemplate, Segment};
/// use sharded_runtime::schema::SortKeySchema;
/// static T: KeyTemplate = KeyTemplate { source: "META", segments: &[Segment::Literal("META")] };
/// let sk = SortKeySchema { attribute: "sk", template: &T };
/// assert_eq!(sk.attribute, "sk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKeySchema {
    /// The DynamoDB attribute holding the key.
    pub attribute: &'static str,
    /// The template.
    pub template: &'static KeyTemplate,
}

/// A global secondary index written by the entity.
///
/// ```
/// # use sharded_runtime::keys::{KeyTemplate, Segment};
/// use sharded_runtime::schema::{GsiSchema, PartitionKeySchema, Sharding};
/// static T: KeyTemplate = KeyTemplate { source: "PLAYER#{player_id}", segments: &[
///     Segment::Literal("PLAYER#"), Segment::Field("player_id")] };
/// let gsi = GsiSchema {
///     number: 1,
///     index_name: "gsi1",
///     pk: PartitionKeySchema { attribute: "gsi1pk", template: &T, sharding: Sharding::Identity { n: 4 } },
///     sk: None,
/// };
/// assert_eq!(gsi.index_name, "gsi1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Everything the derive knows about an entity's keys.
///
/// Generated as a `static` per entity and reachable as `<Entity as ShardedEntity>::SCHEMA`.
///
/// ```
/// # use sharded_runtime::keys::{KeyTemplate, Segment};
/// use sharded_runtime::schema::{EntitySchema, PartitionKeySchema, Sharding};
/// static T: KeyTemplate = KeyTemplate { source: "USER#{id}", segments: &[
///     Segment::Literal("USER#"), Segment::Field("id")] };
/// static USER: EntitySchema = EntitySchema {
///     entity: "User",
///     table: Some("app"),
///     pk: PartitionKeySchema { attribute: "pk", template: &T, sharding: Sharding::None },
///     sk: None,
///     gsis: &[],
/// };
/// assert_eq!(USER.table_definition().partition_key, "pk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// # use sharded_runtime::keys::{KeyTemplate, Segment};
    /// # use sharded_runtime::schema::*;
    /// # static T: KeyTemplate = KeyTemplate { source: "A", segments: &[Segment::Literal("A")] };
    /// # static S: EntitySchema = EntitySchema { entity: "A", table: None,
    /// #   pk: PartitionKeySchema { attribute: "pk", template: &T, sharding: Sharding::Random { n: 2 } }, sk: None, gsis: &[] };
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
/// # async fn demo(client: aws_sdk_dynamodb::Client, def: sharded_runtime::schema::TableDefinition) -> Result<(), Box<dyn std::error::Error>> {
/// def.create_table(&client, "leaderboard").send().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
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
/// let i = sharded_runtime::schema::IndexDefinition { name: "gsi1", partition_key: "gsi1pk", sort_key: None };
/// assert_eq!(i.name, "gsi1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDefinition {
    /// The index name.
    pub name: &'static str,
    /// Its partition key attribute.
    pub partition_key: &'static str,
    /// Its sort key attribute, if any.
    pub sort_key: Option<&'static str>,
}

/// Two entities disagree about a table's keys, so they cannot share it.
///
/// ```
/// # use sharded_runtime::schema::*;
/// let a = TableDefinition { partition_key: "pk", sort_key: Some("sk"), indexes: vec![] };
/// let b = TableDefinition { partition_key: "pk", sort_key: None, indexes: vec![] };
/// assert!(a.merge(&b).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entities cannot share a table: {0}")]
pub struct TableConflict(pub String);

impl TableDefinition {
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

    /// A `CreateTable` request for this definition: on-demand billing, every key a string,
    /// GSIs projecting all attributes (so index queries can return whole entities).
    pub fn create_table(&self, client: &Client, table_name: &str) -> CreateTableFluentBuilder {
        let mut attributes = vec![self.partition_key];
        attributes.extend(self.sort_key);
        for index in &self.indexes {
            attributes.push(index.partition_key);
            attributes.extend(index.sort_key);
        }
        attributes.sort_unstable();
        attributes.dedup();

        let mut request = client
            .create_table()
            .table_name(table_name)
            .billing_mode(BillingMode::PayPerRequest)
            .set_key_schema(Some(key_schema(self.partition_key, self.sort_key)));
        for name in attributes {
            request = request.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .expect("name and type are set"),
            );
        }
        for index in &self.indexes {
            request = request.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(index.name)
                    .set_key_schema(Some(key_schema(index.partition_key, index.sort_key)))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build()
                    .expect("name, key schema and projection are set"),
            );
        }
        request
    }
}

fn key_schema(partition_key: &str, sort_key: Option<&str>) -> Vec<KeySchemaElement> {
    let element = |name: &str, key_type| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(key_type)
            .build()
            .expect("name and key type are set")
    };
    let mut schema = vec![element(partition_key, KeyType::Hash)];
    schema.extend(sort_key.map(|sk| element(sk, KeyType::Range)));
    schema
}
