//! `TableCaps::describe` reads what DynamoDB Local reports for a table's on-demand maximum
//! and billing mode, and the hot-key report names the `UpdateTable` that lifts it.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, OnDemandThroughput,
    ScalarAttributeType,
};
use sharded::capacity::TableCaps;
use sharded_testkit::local::unique_table_name;

use crate::support::client;

#[tokio::test]
async fn describe_reads_the_on_demand_maximum_and_the_billing_mode() {
    let client = client().await;
    let table = unique_table_name("caps");
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .on_demand_throughput(
            OnDemandThroughput::builder()
                .max_write_request_units(500)
                .max_read_request_units(2_000)
                .build(),
        )
        .send()
        .await
        .expect("create table");

    let caps = TableCaps::describe(&client, &table)
        .await
        .expect("describe");
    assert_eq!(caps.table, table);
    assert_eq!(caps.on_demand, Some(true));
    assert_eq!(caps.max_write_units_per_sec, Some(500.0));
    assert_eq!(caps.max_read_units_per_sec, Some(2_000.0));
    let gap = caps
        .gap(700.0, 100.0)
        .expect("700 WCU/s is above the 500 maximum");
    assert!(
        gap.contains(&format!(
            "update-table --table-name {table} --on-demand-throughput MaxWriteRequestUnits=700"
        )),
        "{gap}"
    );
    assert_eq!(caps.gap(400.0, 1_000.0), None);

    let missing = TableCaps::describe(&client, "no-such-table").await;
    assert!(
        missing.is_err(),
        "a missing table is an error, not empty caps"
    );
}
