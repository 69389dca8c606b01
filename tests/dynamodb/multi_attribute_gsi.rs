//! Multi-attribute sharded GSIs against DynamoDB Local.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType,
};
use sharded_testkit::local::unique_table_name;

use crate::support::client;

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .unwrap()
}

fn attr(name: &str, kind: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .unwrap()
}

/// DynamoDB Local takes a GSI of two HASH and two RANGE attributes and a Query naming both
/// partition attributes with `=` and a range on the last sort attribute (checked by hand,
/// without the library).
#[tokio::test]
async fn dynamodb_local_takes_multi_attribute_gsi_keys() {
    let client = client().await;
    let table = unique_table_name("ma-raw");
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .attribute_definitions(attr("pk", ScalarAttributeType::S))
        .attribute_definitions(attr("game_id", ScalarAttributeType::S))
        .attribute_definitions(attr("shard", ScalarAttributeType::N))
        .attribute_definitions(attr("score", ScalarAttributeType::N))
        .attribute_definitions(attr("player", ScalarAttributeType::S))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("gsi1")
                .key_schema(key("game_id", KeyType::Hash))
                .key_schema(key("shard", KeyType::Hash))
                .key_schema(key("score", KeyType::Range))
                .key_schema(key("player", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("create a table with a multi-attribute GSI");
    for i in 0..20 {
        client
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S(format!("p{i}")))
            .item("game_id", AttributeValue::S("g1".into()))
            .item("shard", AttributeValue::N((i % 2).to_string()))
            .item("score", AttributeValue::N((i % 5).to_string()))
            .item("player", AttributeValue::S(format!("p{i:02}")))
            .send()
            .await
            .unwrap();
    }
    let out = client
        .query()
        .table_name(&table)
        .index_name("gsi1")
        .key_condition_expression("#g = :g AND #s = :s AND #score = :score AND #p > :p")
        .expression_attribute_names("#g", "game_id")
        .expression_attribute_names("#s", "shard")
        .expression_attribute_names("#score", "score")
        .expression_attribute_names("#p", "player")
        .expression_attribute_values(":g", AttributeValue::S("g1".into()))
        .expression_attribute_values(":s", AttributeValue::N("0".into()))
        .expression_attribute_values(":score", AttributeValue::N("2".into()))
        .expression_attribute_values(":p", AttributeValue::S("p05".into()))
        .scan_index_forward(false)
        .send()
        .await
        .expect("query a multi-attribute GSI");
    let players: Vec<String> = out
        .items()
        .iter()
        .map(|item| item["player"].as_s().unwrap().clone())
        .collect();
    // shard 0 = even i; score 2 = i % 5 == 2: i in {2, 12}; player > p05: p12.
    assert_eq!(players, ["p12"]);
    let described = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let gsi = &described.table().unwrap().global_secondary_indexes()[0];
    let names: Vec<_> = gsi
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name().to_string(), k.key_type().clone()))
        .collect();
    println!("{names:?}");
    assert_eq!(names.len(), 4);
}
