//! Where a backend differs from DynamoDB, as facts: one test per
//! `sharded_testkit::backend::Behaviour`, each checking, with the raw SDK, that DynamoDB's
//! behaviour holds on the backends said to have it and that the named difference still holds
//! on the ones said to lack it. When a backend learns the behaviour, its test fails and names
//! the variant to retire; the tests that need the behaviour then run there too.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, KeySchemaElement, KeyType,
    ScalarAttributeType, TransactWriteItem,
};
use aws_sdk_dynamodb::Client;
use sharded_testkit::backend::{unique_table_name, Backend, Behaviour};

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

/// What a request came back with: the number of items, or the error's code and message.
type Outcome = Result<i32, (Option<String>, String)>;

fn outcome<E: ProvideErrorMetadata>(answer: Result<i32, E>) -> Outcome {
    answer.map_err(|e| {
        (
            e.code().map(str::to_owned),
            e.message().unwrap_or_default().to_owned(),
        )
    })
}

/// Checks `behaviour` on `operation`'s `outcome`: DynamoDB's `ValidationException` where the
/// backend has it; where it lacks it, the outcome `lacking` accepts (the difference as named).
fn check(
    backend: &Backend,
    behaviour: Behaviour,
    operation: &str,
    outcome: Outcome,
    lacking: impl Fn(&Outcome) -> bool,
) {
    if backend.lacks(behaviour) {
        assert!(
            lacking(&outcome),
            "{backend}, {operation}: expected the difference ({}), got {outcome:?}; if it now \
             answers as DynamoDB does, retire Behaviour::{behaviour:?} for it",
            behaviour.what_lacking_backends_do()
        );
    } else {
        match outcome {
            Err((code, _)) => assert_eq!(
                code.as_deref(),
                Some("ValidationException"),
                "{backend}, {operation}: {behaviour}"
            ),
            Ok(count) => panic!("{backend} answered the {operation} ({count}): {behaviour}"),
        }
    }
}

/// `Query` and `Scan` with `FilterExpression = "score BETWEEN :lo AND :hi"`, `:lo = 20`,
/// `:hi = 10`: DynamoDB answers `ValidationException` ("Invalid FilterExpression: The BETWEEN
/// operator requires upper bound to be greater than or equal to lower bound; ...").
#[tokio::test]
async fn a_filters_inverted_between_is_refused() {
    let behaviour = Behaviour::BetweenBoundsCheckedInFilters;
    let backend = local().await;
    let client = backend.client().await;
    let table = table_with_one_score(&client).await;
    let lo = AttributeValue::N("20".into());
    let hi = AttributeValue::N("10".into());
    let query = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk")
        .filter_expression("score BETWEEN :lo AND :hi")
        .expression_attribute_values(":pk", AttributeValue::S("g1".into()))
        .expression_attribute_values(":lo", lo.clone())
        .expression_attribute_values(":hi", hi.clone())
        .send()
        .await
        .map(|out| out.count());
    let matches_nothing = |outcome: &Outcome| outcome == &Ok(0);
    check(backend, behaviour, "Query", outcome(query), matches_nothing);
    let scan = client
        .scan()
        .table_name(&table)
        .filter_expression("score BETWEEN :lo AND :hi")
        .expression_attribute_values(":lo", lo)
        .expression_attribute_values(":hi", hi)
        .send()
        .await
        .map(|out| out.count());
    check(backend, behaviour, "Scan", outcome(scan), matches_nothing);
}

/// `TransactWriteItems` with a `ConditionCheck` whose condition is `score BETWEEN :lo AND :hi`,
/// `:lo = 20`, `:hi = 10`: DynamoDB answers `ValidationException` ("Invalid
/// ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to
/// lower bound; ..."), as for a single write's condition.
#[tokio::test]
async fn a_transactions_inverted_between_is_refused() {
    let behaviour = Behaviour::BetweenBoundsCheckedInTransactions;
    let backend = local().await;
    let client = backend.client().await;
    let table = table_with_one_score(&client).await;
    let condition = ConditionCheck::builder()
        .table_name(&table)
        .key("pk", AttributeValue::S("g1".into()))
        .key("sk", AttributeValue::N("1".into()))
        .condition_expression("score BETWEEN :lo AND :hi")
        .expression_attribute_values(":lo", AttributeValue::N("20".into()))
        .expression_attribute_values(":hi", AttributeValue::N("10".into()))
        .build()
        .expect("condition check");
    let answer = client
        .transact_write_items()
        .transact_items(
            TransactWriteItem::builder()
                .condition_check(condition)
                .build(),
        )
        .send()
        .await
        .map(|_| 0);
    let cancelled = |outcome: &Outcome| matches!(outcome, Err((Some(code), _)) if code == "TransactionCanceledException");
    check(
        backend,
        behaviour,
        "TransactWriteItems",
        outcome(answer),
        cancelled,
    );
}
