//! The names of every span, span field and metric `sharded` emits: one home for each, so a
//! dashboard, an alert or a test names them from here, never from a copied string.
//!
//! Fields in the `db.*`, `aws.dynamodb.*` and `error.type` namespaces follow OpenTelemetry's
//! semantic conventions for DynamoDB; `sharded.*` are ours.

// ---- Spans ----

/// The span of one physical request (one SDK `.send()`, its retries included): a child of
/// the logical operation's span, with the OpenTelemetry DynamoDB attributes.
pub const REQUEST_SPAN: &str = "sharded.request";
/// The span of one item operation of a repository (`put`, `put_if`, `put_new`, `get`,
/// `delete`, `delete_if`, `update`), with the item's logical key and shard.
pub const ITEM_SPAN: &str = "sharded.item";
/// The span of one scatter-gather query page or collect (`Query` builders).
pub const QUERY_SPAN: &str = "sharded.query";
/// The span of one scatter-gather count (a keys read on every shard).
pub const COUNT_SPAN: &str = "sharded.count";
/// The span of one `repo.scan()` (a collect, a count, a stream), the parent of every
/// segment's requests.
pub const SCAN_SPAN: &str = "sharded.scan";
/// The span of one batch write (`batch_put`, `batch_delete`), all its requests and retries.
pub const BATCH_WRITE_SPAN: &str = "sharded.batch_write";
/// The span of one batch read (`batch_get`), all its requests and retries.
pub const BATCH_GET_SPAN: &str = "sharded.batch_get";
/// The span of one write transaction's commit, its resends included.
pub const TRANSACTION_SPAN: &str = "sharded.transaction";
/// The span of one migration run (`repo.migrate()..run()`).
pub const MIGRATION_SPAN: &str = "sharded.migration";

// ---- Events ----

/// The event of each decision of the layout policy (`sharded::capacity::LayoutPolicy`), and
/// of each end of a change it started: with [`ENTITY`], [`LOGICAL_KEY`], [`DECISION`],
/// [`FROM_SHARDS`], [`TO_SHARDS`], [`LOAD`] and [`THRESHOLD`] (and [`ERROR_MESSAGE`] when a
/// change failed). Its name and target.
pub const LAYOUT_POLICY_EVENT: &str = "sharded.layout_policy";

// ---- OpenTelemetry attributes (span fields and metric labels) ----

/// `"aws.dynamodb"`, on every request span and duration sample.
pub const DB_SYSTEM_NAME: &str = "db.system.name";
/// The value of [`DB_SYSTEM_NAME`].
pub const DB_SYSTEM_NAME_VALUE: &str = "aws.dynamodb";
/// The DynamoDB operation: `Query`, `PutItem`, `BatchWriteItem`, `TransactWriteItems`, ...
pub const DB_OPERATION_NAME: &str = "db.operation.name";
/// The low-cardinality error code of a failed request (DynamoDB's exception name, such as
/// `ProvisionedThroughputExceededException`, or `timeout`, `io`, `response`, `_OTHER`).
pub const ERROR_TYPE: &str = "error.type";
/// The tables a request names (comma-separated when a batch or transaction names several).
pub const TABLE_NAMES: &str = "aws.dynamodb.table_names";
/// The index a `Query` or `Scan` reads.
pub const INDEX_NAME: &str = "aws.dynamodb.index_name";
/// The capacity units DynamoDB reported for the request (when asked for: with hot-key stats).
pub const CONSUMED_CAPACITY: &str = "aws.dynamodb.consumed_capacity";
/// The `Limit` of a `Query` or `Scan`.
pub const LIMIT: &str = "aws.dynamodb.limit";
/// The `ScanIndexForward` of a `Query`.
pub const SCAN_FORWARD: &str = "aws.dynamodb.scan_forward";
/// The `Segment` of a parallel `Scan`.
pub const SEGMENT: &str = "aws.dynamodb.segment";
/// The `TotalSegments` of a parallel `Scan`.
pub const TOTAL_SEGMENTS: &str = "aws.dynamodb.total_segments";
/// The `Count` of a `Query` or `Scan` answer (items matched after the filter).
pub const COUNT: &str = "aws.dynamodb.count";
/// The `ScannedCount` of a `Query` or `Scan` answer (items read before the filter).
pub const SCANNED_COUNT: &str = "aws.dynamodb.scanned_count";
/// `true` when the read is strongly consistent.
pub const CONSISTENT_READ: &str = "aws.dynamodb.consistent_read";

// ---- sharded attributes ----

/// The repository operation of an [`ITEM_SPAN`] (`put`, `get`, `update`, ...).
pub const OPERATION: &str = "sharded.operation";
/// The entity a logical operation reads or writes.
pub const ENTITY: &str = "sharded.entity";
/// A logical key (the partition key without its shard suffix). As a metric label only when
/// the repository records hot-key stats ([`Repo::with_stats`](crate::Repo::with_stats)).
pub const LOGICAL_KEY: &str = "sharded.logical_key";
/// The shard a physical request reads (on request spans under a scatter-gather).
pub const SHARD: &str = "sharded.shard";
/// The number of partitions a query reads (its shards, twice during a layout transition).
pub const SHARD_COUNT: &str = "sharded.shard_count";
/// How many shard requests a scatter-gather keeps in flight at once.
pub const FAN_OUT: &str = "sharded.fan_out";
/// `true` while the query reads a layout transition (current and previous layouts).
pub const TRANSITION: &str = "sharded.transition";
/// The items a logical operation read from DynamoDB.
pub const ITEMS_READ: &str = "sharded.items_read";
/// The items a logical operation returned to its caller.
pub const ITEMS_EMITTED: &str = "sharded.items_emitted";
/// The number of physical attempts of a request (1 without SDK retries).
pub const ATTEMPTS: &str = "sharded.attempts";
/// DynamoDB's `ThrottlingReasons` reason (or the throttling exception's name).
pub const THROTTLING_REASON: &str = "sharded.throttling_reason";
/// `true` when the query page resumed from a cursor.
pub const RESUMED: &str = "sharded.resumed";
/// The index a key was read or written on (`""` for the base table), a metric label.
pub const INDEX: &str = "sharded.index";
/// `"read"` or `"write"`, a metric label.
pub const ACCESS: &str = "sharded.access";
/// A migration count (`scanned`, `moved`, `superseded`, `in_place`, `gone`, `conflicts`,
/// `failed`: the fields of `migrate::Progress`), a metric label.
pub const OUTCOME: &str = "sharded.outcome";
/// Why an item read is not the entity's (`untagged`, `bad_tag`, `other_keys`,
/// `not_canonical`, `unreadable`: `query::ForeignReason::label`), a metric label.
pub const FOREIGN_REASON: &str = "sharded.foreign_reason";

/// What the layout policy decided for a key (`widen`, `narrow`, `resume`, `changing`,
/// `at_max`, `count_holds`) or how a change it started ended (`changed`, `failed`), or
/// `unread` when a look could not read the layout directory: an event field and a metric
/// label.
pub const DECISION: &str = "sharded.decision";
/// The shard count a key had when the layout policy decided.
pub const FROM_SHARDS: &str = "sharded.from_shards";
/// The shard count the layout policy changes a key to (its count, when left alone).
pub const TO_SHARDS: &str = "sharded.to_shards";
/// The write units per second a layout policy decision measured: the busiest physical
/// key's peak second to widen, the logical key's to narrow.
pub const LOAD: &str = "sharded.load_units_per_sec";
/// What the layout policy compared [`LOAD`] with, in write units per second.
pub const THRESHOLD: &str = "sharded.threshold_units_per_sec";
/// What went wrong, in words (a failed change of the layout policy).
pub const ERROR_MESSAGE: &str = "sharded.error";

// ---- Metrics ----

/// Histogram, seconds: the duration of each DynamoDB request (one SDK call, its retries
/// included). Labels: [`DB_SYSTEM_NAME`], [`DB_OPERATION_NAME`], and [`ERROR_TYPE`] when it
/// failed. The stable OpenTelemetry database client histogram.
pub const OPERATION_DURATION: &str = "db.client.operation.duration";
/// Histogram, capacity units: what DynamoDB reported each request consumed (reported only
/// when asked for, that is with hot-key stats on). Labels: [`DB_OPERATION_NAME`].
pub const REQUEST_UNITS: &str = "sharded.request.consumed_units";
/// Counter: throttled requests. Labels: [`DB_OPERATION_NAME`], [`THROTTLING_REASON`].
pub const THROTTLES: &str = "sharded.throttles";
/// Histogram, capacity units: units per logical key, recorded only by repositories with
/// hot-key stats. Labels: [`LOGICAL_KEY`], [`INDEX`], [`ACCESS`].
pub const KEY_UNITS: &str = "sharded.key.consumed_units";
/// Counter: throttles per logical key, recorded only by repositories with hot-key stats.
/// Labels: [`LOGICAL_KEY`], [`INDEX`], [`THROTTLING_REASON`].
pub const KEY_THROTTLES: &str = "sharded.key.throttles";
/// Histogram, partitions: how many partitions each scatter-gather reads. Labels: [`ENTITY`].
pub const FAN_OUT_WIDTH: &str = "sharded.fan_out.width";
/// Counter, items: items a scatter-gather read from DynamoDB and did not return (read past
/// the page's end on other shards, or duplicates of a layout transition). Labels: [`ENTITY`].
pub const MERGE_WASTE: &str = "sharded.merge.wasted_items";
/// Histogram, requests: the shard requests a page resumed from a cursor sent (every shard is
/// read again from where it stood). Labels: [`ENTITY`].
pub const CURSOR_RESUME_REQUESTS: &str = "sharded.cursor.resume_requests";
/// Counter, items: a migration run's progress, counted as it goes (the counts of
/// `migrate::Progress`). Labels: [`ENTITY`], [`OUTCOME`].
pub const MIGRATION_ITEMS: &str = "sharded.migration.items";
/// Counter, items: items read in an entity's partitions that are not the entity's (another
/// service's records, keys not in canonical form, unreadable), skipped by reads and left
/// alone by the migration, never returned as the entity. Labels: [`ENTITY`],
/// [`FOREIGN_REASON`].
pub const FOREIGN_ITEMS: &str = "sharded.foreign_items";
/// Counter: the layout policy's decisions and the ends of the changes it started. Labels:
/// [`ENTITY`], [`DECISION`].
pub const LAYOUT_DECISIONS: &str = "sharded.layout_policy.decisions";
