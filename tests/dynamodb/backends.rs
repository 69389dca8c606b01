//! Where a backend differs from DynamoDB, as facts: one test per
//! `sharded_testkit::backend::Behaviour`, each checking, with the raw SDK, that DynamoDB's
//! behaviour holds on the backends said to have it and that the named difference still holds
//! on the ones said to lack it. When a backend learns the behaviour, its test fails and names
//! the variant to retire; the tests that need the behaviour then run there too.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;
use sharded_testkit::backend::{unique_table_name, Behaviour};

use crate::support::local;

/// A table keyed by `pk` (string) and `sk` (number), holding one item with `score = 15`.
async fn table_with_one_score(client: &Client) -> String {
    let table = unique_table_name("backends");
    let attribute = |name: &str, kind| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(kind)
            .build()
            .expect("attribute definition")
    };
    let key = |name: &str, kind| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .expect("key schema element")
    };
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk", ScalarAttributeType::S))
        .attribute_definitions(attribute("sk", ScalarAttributeType::N))
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .send()
        .await
        .expect("create table");
    client
        .put_item()
        .table_name(&table)
        .item("pk", AttributeValue::S("g1".into()))
        .item("sk", AttributeValue::N("1".into()))
        .item("score", AttributeValue::N("15".into()))
        .send()
        .await
        .expect("put item");
    table
}

/// `Query` with `FilterExpression = "score BETWEEN :lo AND :hi"`, `:lo = 20`, `:hi = 10`.
#[tokio::test]
async fn a_filters_inverted_between_is_refused() {
    let behaviour = Behaviour::BetweenBoundsCheckedInFilters;
    let backend = local().await;
    let client = backend.client().await;
    let table = table_with_one_score(&client).await;
    let answer = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk")
        .filter_expression("score BETWEEN :lo AND :hi")
        .expression_attribute_values(":pk", AttributeValue::S("g1".into()))
        .expression_attribute_values(":lo", AttributeValue::N("20".into()))
        .expression_attribute_values(":hi", AttributeValue::N("10".into()))
        .send()
        .await;
    if backend.lacks(behaviour) {
        let output = answer.unwrap_or_else(|e| {
            panic!(
                "{backend} now refuses the inverted filter ({}: {}), as DynamoDB does: retire \
                 Behaviour::{behaviour:?} for it",
                e.code().unwrap_or("?"),
                e.message().unwrap_or("")
            )
        });
        assert_eq!(
            output.count(),
            0,
            "{backend}: {}",
            behaviour.what_lacking_backends_do()
        );
    } else {
        let error = answer.expect_err(behaviour.what_dynamodb_does());
        assert_eq!(
            error.code(),
            Some("ValidationException"),
            "{backend}: {}",
            behaviour.what_dynamodb_does()
        );
    }
}
