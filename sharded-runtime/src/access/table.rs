//! Creating a table from a [`TableDefinition`].

use aws_sdk_dynamodb::operation::create_table::builders::CreateTableFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

use crate::keys::schema::{KeyAttributeSchema, ScalarType, TableDefinition};

/// The `CreateTable` request of a [`TableDefinition`]. The definition is key-model data (the
/// `sharded-keys` crate, free of AWS types); the request is data access, so it is a trait of
/// the runtime's: import it to call `create_table` on a definition. A repository creates its
/// own table with [`Repo::create_table`](crate::Repo::create_table).
///
/// ```no_run
/// use serde::{Deserialize, Serialize};
/// use sharded::schema::CreateTable;
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// # async fn demo(client: aws_sdk_dynamodb::Client) -> Result<(), Box<dyn std::error::Error>> {
/// Score::table_definition().create_table(&client, "scores").send().await?;
/// # Ok(()) }
/// ```
pub trait CreateTable {
    /// A `CreateTable` request for this definition: on-demand billing, the table's keys
    /// strings, each index keyed as declared (a string key, or the typed attributes of a
    /// multi-attribute key, several `HASH` and `RANGE` elements), GSIs projecting all
    /// attributes (so index queries can return whole entities).
    fn create_table(&self, client: &Client, table_name: &str) -> CreateTableFluentBuilder;
}

impl CreateTable for TableDefinition {
    fn create_table(&self, client: &Client, table_name: &str) -> CreateTableFluentBuilder {
        let string = |name| KeyAttributeSchema::new(name, ScalarType::S);
        let mut attributes = vec![string(self.partition_key)];
        attributes.extend(self.sort_key.map(string));
        for index in &self.indexes {
            attributes.extend(index.key_attributes().map(|(a, _)| a));
        }
        // One definition per name: the first one's type (entities sharing a table agree on
        // their indexes, `TableDefinition::merge` checks it).
        let mut seen = std::collections::HashSet::new();
        attributes.retain(|a| seen.insert(a.name));
        attributes.sort_unstable_by_key(|a| a.name);

        let base = [(string(self.partition_key), true)]
            .into_iter()
            .chain(self.sort_key.map(|s| (string(s), false)));
        let mut request = client
            .create_table()
            .table_name(table_name)
            .billing_mode(BillingMode::PayPerRequest)
            .set_key_schema(Some(key_schema(base)));
        for attribute in attributes {
            let kind = match attribute.kind {
                ScalarType::N => ScalarAttributeType::N,
                _ => ScalarAttributeType::S,
            };
            request = request.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(attribute.name)
                    .attribute_type(kind)
                    .build()
                    .expect("name and type are set"),
            );
        }
        for index in &self.indexes {
            request = request.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(index.name)
                    .set_key_schema(Some(key_schema(index.key_attributes())))
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

/// The key schema of `(attribute, is a partition attribute)` pairs, in order: `HASH`
/// elements, then `RANGE` elements.
fn key_schema(
    attributes: impl Iterator<Item = (KeyAttributeSchema, bool)>,
) -> Vec<KeySchemaElement> {
    attributes
        .map(|(attribute, hash)| {
            KeySchemaElement::builder()
                .attribute_name(attribute.name)
                .key_type(if hash { KeyType::Hash } else { KeyType::Range })
                .build()
                .expect("name and key type are set")
        })
        .collect()
}
