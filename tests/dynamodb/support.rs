//! Shared setup: the backend (embedded, or DynamoDB Local), fresh tables, fault-injecting
//! clients.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::Client;
use sharded::{query::QuerySource, Cursor, Query, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend, Behaviour};
use sharded_testkit::faults::Faults;

/// The local DynamoDB every test runs on: `sharded_testkit::backend` chooses it once per
/// process (embedded by default, DynamoDB Local with `SHARDED_TEST_BACKEND=dynamodb-local`).
pub async fn local() -> &'static Backend {
    match Backend::shared().await {
        Ok(backend) => backend,
        Err(e) => panic!("these tests need a DynamoDB: {e}"),
    }
}

/// For a test that needs `behaviour` of DynamoDB: `true` (after saying why on stderr) when
/// this run's backend lacks it, so the test returns early.
pub async fn skip_if_lacking(behaviour: Behaviour) -> bool {
    local().await.skip_if_lacking(behaviour)
}

pub async fn client() -> Client {
    local().await.client().await
}

/// A new table with `E`'s keys and GSIs, and a repository of `E` in it.
pub async fn repo<E: ShardedEntity>(prefix: &str) -> Repo<E> {
    let repo = Repo::new(client().await, unique_table_name(prefix));
    repo.create_table().await.expect("create table");
    repo
}

/// A client whose requests go through `faults`, retrying at most `attempts` times in the SDK
/// (so injected failures surface quickly).
pub async fn faulty_client(faults: &Faults, attempts: u32) -> Client {
    let sdk = local().await.sdk_config().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .http_client(faults.http_client(&sdk))
        .retry_config(RetryConfig::standard().with_max_attempts(attempts))
        .build();
    Client::from_conf(config)
}

/// The same table as `repo`, through a fault-injecting client.
pub async fn faulty<E: ShardedEntity>(repo: &Repo<E>, faults: &Faults) -> Repo<E> {
    Repo::new(faulty_client(faults, 2).await, repo.table())
}

/// Every page of `query()` from the first to the one without a cursor, paged by `size`
/// (each page at most `size` items, checked).
pub async fn page_to_end<S: QuerySource, O>(
    query: impl Fn() -> Query<S, O>,
    size: usize,
) -> Vec<Vec<O>> {
    let mut pages = Vec::new();
    let mut cursor: Option<Cursor> = None;
    loop {
        let page = query().page(size, cursor.as_ref()).await.unwrap();
        assert!(
            page.items.len() <= size,
            "a page of {} items, asked for {size}",
            page.items.len()
        );
        pages.push(page.items);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return pages,
        }
    }
}

/// An item as the SDK holds it.
pub type RawItem = std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// `PutItem` of `item` as another service sends it: no condition, no tag unless given.
pub async fn raw_put(client: &Client, table: &str, item: RawItem) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .expect("raw put");
}

/// The item under `key`, read consistently through the raw SDK.
pub async fn raw_get(client: &Client, table: &str, key: RawItem) -> Option<RawItem> {
    client
        .get_item()
        .table_name(table)
        .set_key(Some(key))
        .consistent_read(true)
        .send()
        .await
        .expect("raw get")
        .item
}

/// Every item of the table, raw, read consistently.
pub async fn raw_scan(client: &Client, table: &str) -> Vec<RawItem> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("raw scan");
        items.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return items,
        }
    }
}
