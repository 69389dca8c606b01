//! Integration tests of the test kit's backend (`sharded_testkit::backend`), on whichever
//! backend the environment selects: the embedded one by default,
//! `SHARDED_TEST_BACKEND=dynamodb-local` for DynamoDB Local's harness (`sharded_testkit::local`,
//! which needs Java 17+ and npm on the first run), or `DYNAMODB_ENDPOINT`.
//!
//! Run with `cargo test -p sharded-testkit --test backend`.

use std::collections::HashSet;
use std::error::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::{BoxError, DisplayErrorContext};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use sharded_testkit::backend::{unique_table_name, Backend};

type TestResult = Result<(), Box<dyn Error>>;

/// The SDK's errors only say "service error" through `Display`; this shows the cause.
fn explain(error: impl Error) -> String {
    DisplayErrorContext(error).to_string()
}

/// The shared instance; fails the test with the harness's full explanation (its
/// `Display`, which says what to install, rather than the `Debug` a `?` would print).
async fn local() -> &'static Backend {
    match Backend::shared().await {
        Ok(local) => local,
        Err(error) => panic!("{error}"),
    }
}

fn is_valid_table_name(name: &str) -> bool {
    (3..=255).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

#[tokio::test]
async fn shared_returns_one_instance_that_answers() -> TestResult {
    let started = Instant::now();
    let first = local().await;
    eprintln!("{first} available after {:?}", started.elapsed());
    let second = local().await;
    assert!(
        std::ptr::eq(first, second),
        "shared() started two instances"
    );
    assert_eq!(first.endpoint(), second.endpoint());
    assert!(
        first.endpoint().starts_with("http://") || first.endpoint().starts_with("https://"),
        "not a URL: {}",
        first.endpoint()
    );

    let client = first.client().await;
    let tables = client.list_tables().send().await.map_err(explain)?;
    // Other tests create tables concurrently, so only the shape can be checked.
    assert!(tables
        .table_names()
        .iter()
        .all(|name| is_valid_table_name(name)));
    Ok(())
}

/// Every `#[tokio::test]` has its own runtime; the instance must be shared across them.
#[test]
fn shared_is_one_instance_across_runtimes() -> TestResult {
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| -> Result<(usize, String), String> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?;
                let local = runtime
                    .block_on(Backend::shared())
                    .map_err(|e| e.to_string())?;
                Ok((
                    std::ptr::from_ref(local) as usize,
                    local.endpoint().to_owned(),
                ))
            })
        })
        .collect();
    let mut instances = HashSet::new();
    for thread in threads {
        let instance = thread.join().map_err(|_| "a thread panicked")??;
        instances.insert(instance);
    }
    assert_eq!(instances.len(), 1, "different instances: {instances:?}");
    Ok(())
}

#[tokio::test]
async fn create_table_put_and_get_an_item() -> TestResult {
    let client = local().await.client().await;
    // The space is not allowed in table names: this also checks the sanitising against
    // the real thing.
    let table = unique_table_name("harness put/get");

    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()?,
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()?,
        )
        .send()
        .await
        .map_err(explain)?;

    client
        .put_item()
        .table_name(&table)
        .item("pk", AttributeValue::S("player-1".into()))
        .item("score", AttributeValue::N("42".into()))
        .send()
        .await
        .map_err(explain)?;

    let found = client
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S("player-1".into()))
        .consistent_read(true)
        .send()
        .await
        .map_err(explain)?;
    let item = found.item().ok_or("the item just written was not found")?;
    assert_eq!(item.get("score"), Some(&AttributeValue::N("42".into())));
    assert_eq!(item.len(), 2, "unexpected attributes: {item:?}");

    let missing = client
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S("player-2".into()))
        .consistent_read(true)
        .send()
        .await
        .map_err(explain)?;
    assert!(
        missing.item().is_none(),
        "an item that was never written was found"
    );

    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .map_err(explain)?;
    Ok(())
}

/// Counts requests sent, to show that clients built from `sdk_config` can be customised.
#[derive(Debug)]
struct CountRequests(Arc<AtomicUsize>);

impl Intercept for CountRequests {
    fn name(&self) -> &'static str {
        "CountRequests"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn sdk_config_can_be_customised() -> TestResult {
    let local = local().await;
    let sdk_config = local.sdk_config().await;
    assert_eq!(sdk_config.endpoint_url(), Some(local.endpoint()));
    assert_eq!(sdk_config.region().map(AsRef::as_ref), Some("us-east-1"));

    let sent = Arc::new(AtomicUsize::new(0));
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config)
        .interceptor(CountRequests(Arc::clone(&sent)))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    client.list_tables().send().await.map_err(explain)?;
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    Ok(())
}

#[test]
fn unique_table_names_are_unique_and_valid() -> TestResult {
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                (0..1_000)
                    .map(|_| unique_table_name("t"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut names = HashSet::new();
    for thread in threads {
        names.extend(thread.join().map_err(|_| "a thread panicked")?);
    }
    assert_eq!(names.len(), 8_000, "duplicate table names were generated");
    for name in &names {
        assert!(is_valid_table_name(name), "invalid table name {name:?}");
        assert!(name.starts_with("t-"), "prefix lost in {name:?}");
    }

    let sanitised = unique_table_name("my table/ü");
    assert!(sanitised.starts_with("my_table__-"), "{sanitised:?}");
    assert!(is_valid_table_name(&sanitised), "{sanitised:?}");

    let long = "x".repeat(400);
    let (a, b) = (unique_table_name(&long), unique_table_name(&long));
    assert!(is_valid_table_name(&a), "{} chars", a.len());
    assert_ne!(a, b, "truncation must keep the unique suffix");

    assert!(is_valid_table_name(&unique_table_name("")));
    Ok(())
}
