//! What `describe` prints: an entity's layout as data, and the `CreateTable` input a table
//! needs, in the AWS CLI's `--cli-input-json` form.

use serde_json::{json, Value};
use sharded::schema::{EntitySchema, PreviousLayout, TableDefinition};

/// One entity's keys, GSIs and transition.
pub(crate) fn describe_entity(schema: &EntitySchema) -> Value {
    let transition = schema.pk.previous.map(|previous| match previous {
        PreviousLayout::Shards { n, .. } => format!(
            "from {n} to {} shards: reads cover both layouts until `migrate` finishes",
            schema.pk.sharding.shard_count().unwrap_or(1)
        ),
        PreviousLayout::Legacy { template, .. } => format!(
            "from the unsharded key {}: reads cover both until `migrate` finishes",
            template.source
        ),
        _ => "a transition this command line does not know".to_owned(),
    });
    json!({
        "entity": schema.entity,
        "pk": {
            "attribute": schema.pk.attribute,
            "template": schema.pk.template.source,
            "shards": schema.pk.sharding.shard_count(),
            "layout": schema.pk.layout_description(),
        },
        "sk": schema.sk.map(|sk| json!({
            "attribute": sk.attribute,
            "template": sk.template.source,
        })),
        "gsis": schema.gsis.iter().map(|g| json!({
            "index": g.index_name,
            "pk_attribute": g.pk.attribute,
            "pk_layout": g.pk.layout_description(),
            "shards": g.pk.sharding.shard_count(),
            "sk_attribute": g.sk.map(|sk| sk.attribute),
            "sk_template": g.sk.map(|sk| sk.template.source),
        })).collect::<Vec<_>>(),
        "transition": transition,
    })
}

/// The `CreateTable` input of `definition` for `table`: on demand, every key a string, every
/// GSI projecting all attributes (what `Repo::create_table` sends).
pub(crate) fn create_table_json(definition: &TableDefinition, table: &str) -> Value {
    let mut attributes: Vec<&str> = vec![definition.partition_key];
    attributes.extend(definition.sort_key);
    for index in &definition.indexes {
        attributes.push(index.partition_key);
        attributes.extend(index.sort_key);
    }
    let mut seen = std::collections::BTreeSet::new();
    attributes.retain(|a| seen.insert(*a));
    let key_schema = |pk: &str, sk: Option<&str>| {
        let mut keys = vec![json!({ "AttributeName": pk, "KeyType": "HASH" })];
        if let Some(sk) = sk {
            keys.push(json!({ "AttributeName": sk, "KeyType": "RANGE" }));
        }
        keys
    };
    let mut input = json!({
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": attributes
            .iter()
            .map(|a| json!({ "AttributeName": a, "AttributeType": "S" }))
            .collect::<Vec<_>>(),
        "KeySchema": key_schema(definition.partition_key, definition.sort_key),
    });
    if !definition.indexes.is_empty() {
        input["GlobalSecondaryIndexes"] = definition
            .indexes
            .iter()
            .map(|i| {
                json!({
                    "IndexName": i.name,
                    "KeySchema": key_schema(i.partition_key, i.sort_key),
                    "Projection": { "ProjectionType": "ALL" },
                })
            })
            .collect();
    }
    input
}
