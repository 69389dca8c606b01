//! What `describe` prints: an entity's layout as data, and the `CreateTable` input a table
//! needs, in the AWS CLI's `--cli-input-json` form.

use serde_json::{json, Value};
use sharded::schema::{
    EntitySchema, KeyAttributeSchema, PreviousLayout, Recognition, ScalarType, TableDefinition,
};

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
    let table = schema.table_schema;
    let recognition = match table.recognition {
        Recognition::Tag { attribute } => format!("items tagged in `{attribute}`"),
        Recognition::TagOrKey { attribute } => {
            format!("items tagged in `{attribute}`, untagged ones recognised by their keys")
        }
        Recognition::Key => "items recognised by their keys (no tag)".to_owned(),
        _ => "a recognition this command line does not know".to_owned(),
    };
    json!({
        "entity": schema.entity,
        "table": {
            "declared_by": table.declared_by,
            "name": table.table,
            "tag": table.recognition.tag_attribute(),
            "recognition": recognition,
        },
        "pk": {
            "attribute": schema.pk.attribute,
            "template": schema.pk.template.source,
            "shards": schema.pk.sharding.shard_count(),
            "suffix": schema.pk.suffix.source,
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
            "key_attributes": g.attributes.map(|key| key.describe()),
        })).collect::<Vec<_>>(),
        "transition": transition,
    })
}

/// The `CreateTable` input of `definition` for `table`: on demand, the table's keys strings,
/// each GSI keyed as declared (a string key, or the typed attributes of a multi-attribute
/// key), every GSI projecting all attributes (what `Repo::create_table` sends).
pub(crate) fn create_table_json(definition: &TableDefinition, table: &str) -> Value {
    let base = [(
        KeyAttributeSchema::new(definition.partition_key, ScalarType::S),
        true,
    )]
    .into_iter()
    .chain(
        definition
            .sort_key
            .map(|sk| (KeyAttributeSchema::new(sk, ScalarType::S), false)),
    )
    .collect::<Vec<_>>();
    let mut attributes: Vec<KeyAttributeSchema> = base.iter().map(|(a, _)| *a).collect();
    for index in &definition.indexes {
        attributes.extend(index.key_attributes().map(|(a, _)| a));
    }
    let mut seen = std::collections::BTreeSet::new();
    attributes.retain(|a| seen.insert(a.name));
    let key_schema = |keys: &mut dyn Iterator<Item = (KeyAttributeSchema, bool)>| {
        keys.map(|(a, hash)| {
            json!({ "AttributeName": a.name, "KeyType": if hash { "HASH" } else { "RANGE" } })
        })
        .collect::<Vec<_>>()
    };
    let mut input = json!({
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": attributes
            .iter()
            .map(|a| json!({ "AttributeName": a.name, "AttributeType": a.kind.code() }))
            .collect::<Vec<_>>(),
        "KeySchema": key_schema(&mut base.into_iter()),
    });
    if !definition.indexes.is_empty() {
        input["GlobalSecondaryIndexes"] = definition
            .indexes
            .iter()
            .map(|i| {
                json!({
                    "IndexName": i.name,
                    "KeySchema": key_schema(&mut i.key_attributes()),
                    "Projection": { "ProjectionType": "ALL" },
                })
            })
            .collect();
    }
    input
}
