//! Creating a table from a [`TableDefinition`].

use aws_sdk_dynamodb::operation::create_table::builders::CreateTableFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

use crate::keys::schema::TableDefinition;

// The definition is key-model data; the request that creates it is data access, so it lives
// here and the key model stays free of AWS types.
impl TableDefinition {
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
