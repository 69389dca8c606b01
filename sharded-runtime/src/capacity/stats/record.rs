//! Recording what a request cost: the one place the repository and the scatter-gather engine
//! turn DynamoDB's answer into [`HotKeyStats`] calls.
//!
//! Each function does nothing without stats attached. Units come from the
//! `ConsumedCapacity` DynamoDB returned or, when it returned none, from
//! [`crate::capacity::units`]; a throttling error is recorded once per reason, on the key
//! it names.

use std::sync::Arc;

use aws_sdk_dynamodb::types::{AttributeValue, ConsumedCapacity, TransactWriteItem};

use crate::capacity::stats::split_shard;
use crate::capacity::stats::window::{PerKeyOrigin, Spelling};
use crate::capacity::stats::{HotKeyStats, Shards, Side};
use crate::capacity::units::{item_size, read_units, write_units, Consistency};
use crate::error::{Error, UNPROCESSED_ITEMS};
use crate::item::{describe_key, Item};
use crate::keys::attribute::KeyValue;
use crate::keys::schema::{EntitySchema, GsiSchema, PartitionKeySchema};
use crate::keys::shards::render_attributes;
use crate::telemetry;

/// DynamoDB's answer to one request: the capacity it reports (if asked), or the error.
pub(crate) type Answer<'a> = Result<Option<&'a ConsumedCapacity>, &'a Error>;

/// Records one write of a successful transaction on its base key: DynamoDB reports a
/// transaction's capacity per table, not per key, so its units come from the size of what
/// it sends (the item of a put, the key of an update, a delete or a condition check, which
/// DynamoDB charges as a write of the item it checks), twice, as a transactional write costs.
pub(crate) fn transaction_write(
    stats: Option<&Arc<HotKeyStats>>,
    schema: &EntitySchema,
    write: &TransactWriteItem,
) {
    let Some(stats) = stats else {
        return;
    };
    // A condition check is charged as a write of the item it checks.
    let sent = match (
        write.put(),
        write.update(),
        write.delete(),
        write.condition_check(),
    ) {
        (Some(put), ..) => put.item(),
        (_, Some(update), ..) => update.key(),
        (_, _, Some(delete), _) => delete.key(),
        (.., Some(check)) => check.key(),
        _ => return,
    };
    let text = |attr: &str| sent.get(attr).and_then(|v| v.as_s().ok());
    let Some(key) = text(schema.pk.attribute) else {
        return;
    };
    let units = 2.0 * write_units(item_size(sent) as u64) as f64;
    // A transaction's action does not carry its key's layout: a per-key count stays as
    // the key's other requests recorded it.
    let shards = spelled_base(schema, None);
    let sort_key = schema.sk.as_ref().and_then(|sk| text(sk.attribute));
    let item = item_identity(key, sort_key.map(String::as_str));
    stats.record_spelled(Side::Write, None, key, units, shards, Some(item));
    key_units(None, key, shards, WRITE, units);
}

/// Records a write of `item` (an item of `schema`) on its base key and each GSI key it has,
/// or, on a throttling error, a throttle on the base key or the GSI key the reason names.
/// `count`: the shard count of the item's logical key under its per-key layout, when the
/// write was placed by it (`Placement::layout`).
pub(crate) fn write(
    stats: Option<&Arc<HotKeyStats>>,
    schema: &EntitySchema,
    count: Option<u32>,
    item: &Item,
    answer: Answer<'_>,
) {
    let Some(stats) = stats else {
        return;
    };
    let text = |attr: &str| item.get(attr).and_then(|v| v.as_s().ok()).cloned();
    let consumed = match answer {
        Ok(consumed) => consumed,
        Err(error) => {
            for (reason, index) in error.throttling_reasons() {
                let gsi = index
                    .as_deref()
                    .and_then(|name| schema.gsis.iter().find(|g| g.index_name == name));
                let pk = gsi.map_or(&schema.pk, |g| &g.pk);
                let key = match gsi {
                    Some(gsi) if gsi.attributes.is_some() => index_partition(gsi, item),
                    _ => text(pk.attribute),
                };
                if let Some(key) = key {
                    let index = gsi.map(|g| g.index_name);
                    let shards = match gsi {
                        None => spelled_base(schema, count),
                        Some(_) => spelled(pk),
                    };
                    stats.record_throttle_spelled(index, &key, &reason, shards);
                    key_throttle(index, &key, shards, &reason);
                }
            }
            return;
        }
    };
    let by_size = write_units(item_size(item) as u64) as f64;
    if let Some(key) = text(schema.pk.attribute) {
        let units = consumed
            .and_then(|c| c.table.as_ref())
            .and_then(|t| t.capacity_units);
        let shards = spelled_base(schema, count);
        let sort_key = schema.sk.as_ref().and_then(|sk| text(sk.attribute));
        let item_id = item_identity(&key, sort_key.as_deref());
        stats.record_spelled(
            Side::Write,
            None,
            &key,
            units.unwrap_or(by_size),
            shards,
            Some(item_id),
        );
        key_units(None, &key, shards, WRITE, units.unwrap_or(by_size));
    }
    for gsi in schema.gsis {
        let key = match gsi.attributes {
            Some(_) => index_partition(gsi, item),
            None => text(gsi.pk.attribute),
        };
        let Some(key) = key else {
            continue;
        };
        let units = consumed
            .and_then(|c| c.global_secondary_indexes.as_ref())
            .and_then(|m| m.get(gsi.index_name))
            .and_then(|c| c.capacity_units);
        let (index, shards) = (Some(gsi.index_name), spelled(&gsi.pk));
        stats.record_spelled(
            Side::Write,
            index,
            &key,
            units.unwrap_or(by_size),
            shards,
            None,
        );
        key_units(index, &key, shards, WRITE, units.unwrap_or(by_size));
    }
}

/// The partition of `item` in `gsi`, an index keyed by attributes, as stats and queries
/// name it (`game_id=g1#3`, see `Partition`), or `None` when the item is not in the index.
fn index_partition(gsi: &GsiSchema, item: &Item) -> Option<String> {
    let key = gsi.attributes?;
    let equalities = key
        .partition
        .iter()
        .map(|a| {
            let value = match item.get(a.name)? {
                AttributeValue::S(s) => KeyValue::S(s.clone()),
                AttributeValue::N(n) => KeyValue::N(n.clone()),
                _ => return None,
            };
            Some((a.name, value))
        })
        .collect::<Option<Vec<_>>>()?;
    let shard = item.get(key.shard_attribute)?.as_n().ok()?;
    Some(format!("{}#{shard}", render_attributes(&equalities)))
}

/// Records a read of partition key `pk` of `index` (`None` = the base table; `shards` its
/// shard count, if sharded) made with `consistency`, or its throttles. Without reported
/// capacity, a read is counted at the least a read of that consistency costs.
pub(crate) fn read(
    stats: Option<&Arc<HotKeyStats>>,
    index: Option<&str>,
    pk: &str,
    shards: Shards,
    consistency: Consistency,
    answer: Answer<'_>,
) {
    let Some(stats) = stats else {
        return;
    };
    match answer {
        Ok(consumed) => {
            let units = consumed.and_then(|c| c.capacity_units);
            let units = units.unwrap_or_else(|| read_units(0, consistency));
            stats.record_spelled(Side::Read, index, pk, units, shards, None);
            key_units(index, pk, shards, READ, units);
        }
        Err(error) => {
            for (reason, _) in error.throttling_reasons() {
                stats.record_throttle_spelled(index, pk, &reason, shards);
                key_throttle(index, pk, shards, &reason);
            }
        }
    }
}

/// Records the puts of a `BatchWriteItem` run (`items`, items of `schema`) from its
/// `result`: what it left unprocessed as throttled (`UnprocessedItems`) on the base key when
/// capacity was the cause (not when, say, the table is missing: those items were neither
/// written nor throttled), the rest as writes by item size (`BatchWriteItem` reports capacity
/// per table, not per key).
pub(crate) fn batch_writes(
    stats: Option<&Arc<HotKeyStats>>,
    schema: &EntitySchema,
    items: &[Item],
    result: &Result<(), Error>,
) {
    let Some(stats) = stats else {
        return;
    };
    let (unprocessed, throttled): (Vec<_>, bool) = match result {
        Err(error @ Error::BatchIncomplete { unprocessed, .. }) => (
            unprocessed
                .iter()
                .map(|item| describe_key(schema, item))
                .collect(),
            error.is_throttling(),
        ),
        _ => (Vec::new(), false),
    };
    let shards = spelled_base(schema, None);
    for item in items {
        let key = describe_key(schema, item);
        match (&key.pk, unprocessed.contains(&key)) {
            (Some(pk), true) if throttled => {
                stats.record_throttle_spelled(None, pk, UNPROCESSED_ITEMS, shards);
                key_throttle(None, pk, shards, UNPROCESSED_ITEMS);
            }
            (_, true) => {}
            _ => write(Some(stats), schema, None, item, Ok(None)),
        }
    }
}

const READ: &str = "read";
const WRITE: &str = "write";

/// The logical key of physical key `key` (the shard suffix stripped when it has `shards`).
fn logical(key: &str, shards: Shards) -> &str {
    shards
        .and_then(|s| {
            let bound = s.per_key.map(|p| p.max_n).or(s.n)?;
            split_shard(key, bound, &s.suffix)
        })
        .map_or(key, |(logical, _)| logical)
}

/// The shard count and suffix of a key's declared layout, as stats record them (a GSI's key,
/// or the base key of an entity whose layout is not decided per key).
pub(crate) fn spelled(key: &PartitionKeySchema) -> Shards {
    key.sharding.shard_count().map(|n| Spelling {
        n: Some(n),
        suffix: key.suffix,
        per_key: None,
    })
}

/// The spelling of `entity`'s base key: for a per-key layout, `count` is the logical key's
/// count under its layout (`None` when the request did not read it) and the key is split
/// below `max_n`; otherwise the declared count.
pub(crate) fn spelled_base(entity: &EntitySchema, count: Option<u32>) -> Shards {
    let key = &entity.pk;
    match key.per_key {
        Some(per_key) => Some(Spelling {
            n: count,
            suffix: key.suffix,
            per_key: Some(PerKeyOrigin {
                entity: entity.entity,
                declared_n: key.sharding.shard_count().unwrap_or(1),
                max_n: per_key.max_n,
            }),
        }),
        None => spelled(key),
    }
}

/// The per-logical-key metrics: recorded here, where a repository with hot-key stats turns
/// an answer into stats, so a logical key becomes a metric label only with stats on.
fn key_units(index: Option<&str>, key: &str, shards: Shards, access: &'static str, units: f64) {
    telemetry::key_units(index, logical(key, shards), access, units);
}

fn key_throttle(index: Option<&str>, key: &str, shards: Shards, reason: &str) {
    telemetry::key_throttle(index, logical(key, shards), reason);
}

/// A hash of an item's primary key, to tell "every write went to one item" from "many items
/// of one key" without keeping the keys.
fn item_identity(pk: &str, sk: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (pk, sk).hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use aws_sdk_dynamodb::types::error::ProvisionedThroughputExceededException;
    use aws_sdk_dynamodb::types::{AttributeValue, Capacity, ThrottlingReason};

    use super::*;
    use crate::capacity::stats::window::BASE;
    use crate::keys::schema::{GsiSchema, PartitionKeySchema, Sharding};
    use crate::keys::template::{KeyTemplate, Segment};

    static T: KeyTemplate = KeyTemplate::new("K", &[Segment::literal("K")]);
    static GSIS: [GsiSchema; 1] = [GsiSchema::new(
        1,
        "gsi1",
        PartitionKeySchema::new("gsi1pk", &T, Sharding::None),
        None,
    )];
    static SCHEMA: EntitySchema = EntitySchema::new(
        "Score",
        None,
        PartitionKeySchema::new("pk", &T, Sharding::random(4)),
        None,
        &GSIS,
    );

    fn stats() -> Arc<HotKeyStats> {
        Arc::new(HotKeyStats::new(Duration::from_secs(60)))
    }

    /// What the window holds of one key (the report that sums it is sharded-ops').
    #[derive(Debug)]
    struct Totals {
        write_units: f64,
        read_units: f64,
        shards: Option<u32>,
        throttles: std::collections::BTreeMap<String, u64>,
    }

    /// The window's totals of `key` of `index`, `None` if it had no traffic.
    fn key(stats: &HotKeyStats, index: Option<&str>, key: &str) -> Option<Totals> {
        stats.__window(|w| {
            let entry = w.state.indexes.get(index.unwrap_or(BASE))?.get(key)?;
            let mut totals = Totals {
                write_units: 0.0,
                read_units: 0.0,
                shards: entry.shards,
                throttles: Default::default(),
            };
            for b in &entry.buckets {
                totals.write_units += b.write;
                totals.read_units += b.read;
                for (reason, count) in &b.throttles {
                    *totals.throttles.entry(reason.clone()).or_default() += count;
                }
            }
            Some(totals)
        })
    }

    fn item(pk: &str, bytes: usize) -> Item {
        [
            ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
            ("gsi1pk".to_owned(), AttributeValue::S("DAY#1".to_owned())),
            ("data".to_owned(), AttributeValue::S("x".repeat(bytes))),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn writes_use_reported_units_per_index_or_the_item_size() {
        let stats = stats();
        let consumed = ConsumedCapacity::builder()
            .table(Capacity::builder().capacity_units(3.0).build())
            .global_secondary_indexes("gsi1", Capacity::builder().capacity_units(2.0).build())
            .build();
        write(
            Some(&stats),
            &SCHEMA,
            None,
            &item("G#0", 10),
            Ok(Some(&consumed)),
        );
        write(Some(&stats), &SCHEMA, None, &item("G#1", 2_000), Ok(None));
        let units = |index, k| key(&stats, index, k).map(|k| k.write_units);
        assert_eq!(units(None, "G#0"), Some(3.0));
        assert_eq!(units(None, "G#1"), Some(2.0), "2,000 B -> 2 write units");
        assert_eq!(
            units(Some("gsi1"), "DAY#1"),
            Some(4.0),
            "2 reported + 2 by size"
        );
        assert_eq!(key(&stats, None, "G#0").unwrap().shards, Some(4));
    }

    #[test]
    fn a_throttle_lands_on_the_key_its_reason_names() {
        let stats = stats();
        let throttled = Error::Dynamo {
            operation: "PutItem",
            table: "t".to_owned(),
            source: Box::new(
                aws_sdk_dynamodb::Error::ProvisionedThroughputExceededException(
                    ProvisionedThroughputExceededException::builder()
                        .throttling_reasons(
                            ThrottlingReason::builder()
                                .reason("IndexWriteKeyRangeThroughputExceeded")
                                .resource("arn:aws:dynamodb:eu-west-1:1:table/t/index/gsi1")
                                .build(),
                        )
                        .build(),
                ),
            ),
        };
        write(
            Some(&stats),
            &SCHEMA,
            None,
            &item("G#0", 10),
            Err(&throttled),
        );
        read(
            Some(&stats),
            None,
            "G#2",
            spelled(&SCHEMA.pk),
            Consistency::Strong,
            Err(&throttled),
        );
        let reason = "IndexWriteKeyRangeThroughputExceeded";
        let throttles = |index, k| {
            key(&stats, index, k)
                .unwrap()
                .throttles
                .get(reason)
                .copied()
        };
        assert_eq!(throttles(Some("gsi1"), "DAY#1"), Some(1));
        assert_eq!(
            throttles(None, "G#2"),
            Some(1),
            "a read is throttled on the key read"
        );
        assert!(key(&stats, None, "G#0").is_none());
    }

    #[test]
    fn reads_use_reported_units_or_the_least_a_read_costs() {
        let stats = stats();
        let consumed = ConsumedCapacity::builder().capacity_units(25.0).build();
        read(
            Some(&stats),
            Some("gsi1"),
            "DAY#1",
            None,
            Consistency::Strong,
            Ok(Some(&consumed)),
        );
        read(
            Some(&stats),
            None,
            "G#0",
            spelled(&SCHEMA.pk),
            Consistency::Eventual,
            Ok(None),
        );
        assert_eq!(key(&stats, Some("gsi1"), "DAY#1").unwrap().read_units, 25.0);
        assert_eq!(key(&stats, None, "G#0").unwrap().read_units, 0.5);
        // Without stats, nothing happens.
        read(None, None, "G#0", None, Consistency::Strong, Ok(None));
    }

    #[test]
    fn unprocessed_batch_items_are_throttles_the_rest_writes() {
        let stats = stats();
        let items = [item("G#0", 10), item("G#1", 10)];
        let result = Err(Error::BatchIncomplete {
            operation: "BatchWriteItem",
            unprocessed: vec![items[1].clone()],
            retrieved: Vec::new(),
            attempts: 3,
            source: None,
        });
        batch_writes(Some(&stats), &SCHEMA, &items, &result);
        assert_eq!(key(&stats, None, "G#0").unwrap().write_units, 1.0);
        let g1 = key(&stats, None, "G#1").unwrap();
        assert_eq!(
            (g1.write_units, g1.throttles.get("UnprocessedItems")),
            (0.0, Some(&1))
        );
    }

    #[test]
    fn unprocessed_items_of_a_failed_request_are_neither_writes_nor_throttles() {
        let stats = stats();
        let items = [item("G#0", 10), item("G#1", 10)];
        let missing_table = Error::Dynamo {
            operation: "BatchWriteItem",
            table: "t".to_owned(),
            source: Box::new(aws_sdk_dynamodb::Error::ResourceNotFoundException(
                aws_sdk_dynamodb::types::error::ResourceNotFoundException::builder()
                    .message("no table")
                    .build(),
            )),
        };
        let result = Err(Error::BatchIncomplete {
            operation: "BatchWriteItem",
            unprocessed: vec![items[1].clone()],
            retrieved: Vec::new(),
            attempts: 1,
            source: Some(Box::new(missing_table)),
        });
        batch_writes(Some(&stats), &SCHEMA, &items, &result);
        assert_eq!(key(&stats, None, "G#0").unwrap().write_units, 1.0);
        assert!(key(&stats, None, "G#1")
            .is_none_or(|g1| g1.write_units == 0.0 && g1.throttles.is_empty()));
    }
}
