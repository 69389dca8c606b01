//! Request building: one logical query's `Query` request against one shard partition (key
//! condition, entity, user and expiry filters, projection, start key, limit), and the
//! counts built on it.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use futures::stream::{self, StreamExt};
use tracing::Instrument;

use crate::access::condition::values_of;
use crate::access::recognize::{keep_recognised, read_depth, Depth};
use crate::capacity::stats::record;
use crate::capacity::units::Consistency;
use crate::error::foreign::Foreign;
use crate::error::Error;
use crate::item::Item;
use crate::keys::attribute::KeyValue;
use crate::keys::shards::Partition;

use super::{shard_failed, Plan};

/// The expiry filter of an entity with a `#[sharded(ttl)]` field: an item is live when its
/// expiry is missing, `NULL` (an `Option` field set to `None`: serde_dynamo stores `None` as
/// `NULL`) or after `now`. The one place a query's expiry check is written: every request of
/// a query (items, pages, streams, counts, collections, ranges) carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expiry {
    /// The attribute of the `ttl` field.
    pub attribute: &'static str,
    /// Now, in epoch seconds.
    pub now: u64,
}

impl Expiry {
    /// The filter fragment, with its placeholders added to `names` and `values`.
    pub fn render(
        &self,
        names: &mut HashMap<String, String>,
        values: &mut HashMap<String, AttributeValue>,
    ) -> String {
        names.insert("#ttl".to_owned(), self.attribute.to_owned());
        values.insert(
            ":ttl_now".to_owned(),
            AttributeValue::N(self.now.to_string()),
        );
        values.insert(":ttl_null".to_owned(), AttributeValue::S("NULL".to_owned()));
        "attribute_not_exists(#ttl) OR attribute_type(#ttl, :ttl_null) OR #ttl > :ttl_now"
            .to_owned()
    }
}

/// The key condition of one partition, the one place it is written: an equality per
/// partition attribute (`#pk = :pk` for a string key, `#pk = :pk AND #pk1 = :pk1 ..` for a
/// multi-attribute key), an equality per held sort attribute, then the range of the sort
/// condition on the next sort attribute (`#sk`), its values typed as that attribute is.
fn key_condition(
    plan: &Plan,
    partition: &crate::keys::shards::Partition,
    names: &mut HashMap<String, String>,
    values: &mut HashMap<String, AttributeValue>,
) -> String {
    let mut terms = Vec::new();
    let mut equal = |placeholder: String, attribute: &str, value: AttributeValue| {
        names.insert(format!("#{placeholder}"), attribute.to_owned());
        values.insert(format!(":{placeholder}"), value);
        terms.push(format!("#{placeholder} = :{placeholder}"));
    };
    for (i, (attribute, value)) in partition.equalities().iter().enumerate() {
        let placeholder = if i == 0 {
            "pk".to_owned()
        } else {
            format!("pk{i}")
        };
        equal(placeholder, attribute, super::attribute_value(value));
    }
    for (i, (attribute, value)) in plan.sort_equalities.iter().enumerate() {
        equal(format!("sq{i}"), attribute, super::attribute_value(value));
    }
    let ranged = plan.sort_attributes.get(plan.sort_equalities.len());
    if let (Some(sort), Some(attribute)) = (&plan.condition, ranged) {
        names.insert("#sk".to_owned(), attribute.name.to_owned());
        for (i, v) in sort.values().into_iter().enumerate() {
            let value = KeyValue::of_type(attribute.kind, v.to_owned());
            values.insert(format!(":sk{i}"), super::attribute_value(&value));
        }
        terms.push(sort.expression().to_owned());
    }
    terms.join(" AND ")
}

/// One page of one shard: the source's items, and the foreign ones skipped.
pub(crate) struct ShardPage {
    pub items: Vec<Item>,
    pub last_evaluated_key: Option<Item>,
    /// The items kept.
    pub count: u64,
    pub foreign: Foreign,
    /// The read units DynamoDB reported for the request (every request asks: it costs
    /// nothing), zero when it reported none.
    pub read_units: f64,
}

/// One Query request against one shard.
pub(crate) async fn query_shard(
    plan: &Plan,
    shard: usize,
    start: Option<Item>,
    limit: Option<i32>,
    count_only: bool,
) -> Result<ShardPage, Error> {
    let partition = &plan.partitions[shard];
    let pk = partition.shown();
    let mut names = HashMap::new();
    let mut values = HashMap::new();
    let condition = key_condition(plan, partition, &mut names, &mut values);
    // DynamoDB refuses placeholders an expression does not use: each is added with its use.
    // Other entities' items are left out by their tag; an untagged item comes back, for the
    // engine to recognise by its keys or count as foreign (never dropped unseen).
    let entity = plan
        .tag
        .filter(|_| plan.filter_on_server || count_only)
        .map(|tag| {
            let filter = entity_filter(tag, plan.entities, &mut names, &mut values);
            format!("{filter} OR attribute_not_exists(#et)")
        });
    let user = match &plan.filter {
        Some(filter) => Some(filter.render(&mut names, &mut values)?),
        None => None,
    };
    let expiry = plan.expiry.map(|e| e.render(&mut names, &mut values));
    let parts: Vec<String> = [entity, user, expiry].into_iter().flatten().collect();
    let filter = match parts.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(
            many.iter()
                .map(|p| format!("({p})"))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
    };
    // A count reads what recognition needs: the keys and the tag, or whole items where only
    // the whole item tells (`read_depth`).
    let depth = read_depth(plan.layout, count_only, plan.projection.is_some());
    let counted;
    let projection = match &plan.projection {
        _ if count_only && depth == Depth::Keys => {
            counted = count_projection(plan, partition);
            Some(projection_expression(&counted, &mut names))
        }
        _ if count_only => None,
        Some(attributes) => Some(projection_expression(attributes, &mut names)),
        None => None,
    };
    let request = plan
        .client
        .query()
        .table_name(&plan.table)
        .set_index_name(plan.index.map(str::to_owned))
        .key_condition_expression(condition)
        // Single-table: other entities may share the partition; only this entity's items
        // come back (or, without the filter, are kept), so none is read as the wrong type.
        .set_filter_expression(filter)
        .set_projection_expression(projection)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(values_of(values))
        .scan_index_forward(!plan.descending)
        .set_limit(limit)
        .set_consistent_read(plan.consistent.then_some(true))
        .set_exclusive_start_key(start)
        .return_consumed_capacity(ReturnConsumedCapacity::Total);
    // Its span (with the shard, the limit and what it returned) is the request span every
    // request gets (`telemetry`), a child of the query's.
    let result = request
        .send()
        .await
        .map_err(|e| Error::dynamo("Query", &plan.table, e));
    let answer = result.as_ref().map(|o| o.consumed_capacity.as_ref());
    let consistency = Consistency::of_consistent_read(plan.consistent);
    record::read(
        plan.stats.as_ref(),
        plan.index,
        pk,
        plan.shards,
        consistency,
        answer,
    );
    let output = result?;
    let read_units = output
        .consumed_capacity
        .as_ref()
        .and_then(|c| c.capacity_units)
        .unwrap_or(0.0);
    // Every item read is recognised here, the one place pages come in: the source's items
    // are kept, another entity's left out, a foreign one skipped and counted.
    let (mut items, foreign) = keep_recognised(
        output.items.unwrap_or_default(),
        depth,
        plan.recognize,
        plan.layout,
        |_| true,
    );
    // And checked against a whole-key range, whose strict ends the key condition includes.
    if let Some(range) = &plan.range {
        items.retain(|item| range.admits(super::sort_value(plan, item).as_ref()));
    }
    Ok(ShardPage {
        count: items.len() as u64,
        last_evaluated_key: output.last_evaluated_key,
        items,
        foreign,
        read_units,
    })
}

/// What a count reads of each item: the partition's and the position's key attributes (the
/// table's keys among them, on an index too) and the tag.
fn count_projection(plan: &Plan, partition: &Partition) -> Vec<&'static str> {
    let mut attributes: Vec<&'static str> = partition
        .equalities()
        .iter()
        .map(|(name, _)| *name)
        .chain(plan.position_attributes.iter().copied())
        .chain(plan.tag)
        .chain([plan.layout.pk.attribute])
        .chain(plan.layout.sk.map(|sk| sk.attribute))
        .collect();
    let mut seen = std::collections::HashSet::new();
    attributes.retain(|a| seen.insert(*a));
    attributes
}

/// `#et = :et`, or `#et IN (:et0, ...)` for a collection, on the tag attribute `tag`, with
/// its placeholders.
fn entity_filter(
    tag: &str,
    entities: &[&str],
    names: &mut HashMap<String, String>,
    values: &mut HashMap<String, AttributeValue>,
) -> String {
    names.insert("#et".to_owned(), tag.to_owned());
    if let [entity] = entities {
        values.insert(":et".to_owned(), AttributeValue::S((*entity).to_owned()));
        return "#et = :et".to_owned();
    }
    let placeholders: Vec<String> = entities
        .iter()
        .enumerate()
        .map(|(i, entity)| {
            let placeholder = format!(":et{i}");
            values.insert(placeholder.clone(), AttributeValue::S((*entity).to_owned()));
            placeholder
        })
        .collect();
    format!("#et IN ({})", placeholders.join(", "))
}

/// `#a0, #a1, ...` naming `attributes` (placeholders, so reserved words such as `name` work).
fn projection_expression(attributes: &[&str], names: &mut HashMap<String, String>) -> String {
    let placeholders: Vec<String> = attributes
        .iter()
        .enumerate()
        .map(|(i, attribute)| {
            let placeholder = format!("#a{i}");
            names.insert(placeholder.clone(), (*attribute).to_owned());
            placeholder
        })
        .collect();
    placeholders.join(", ")
}

/// What counting read: the count of each partition, in order, the read units DynamoDB
/// reported for it and the requests sent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counted {
    pub by_shard: Vec<u64>,
    pub read_units: f64,
    pub requests: u32,
}

/// What counting one shard read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ShardCount {
    pub count: u64,
    pub read_units: f64,
    pub requests: u32,
}

/// Counts one shard's matching items, following its pages.
pub(crate) async fn count_shard(plan: &Plan, shard: usize) -> Result<ShardCount, Error> {
    let mut counted = ShardCount::default();
    let mut start = None;
    loop {
        let page = query_shard(plan, shard, start, None, true).await?;
        counted.count += page.count;
        counted.read_units += page.read_units;
        counted.requests += 1;
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => return Ok(counted),
        }
    }
}

/// A count on every shard (a read of the keys and tag of what it counts), concurrently and
/// bounded: the count of each shard, in shard order. A failed shard fails the count, naming
/// the shard: a partial sum would be a wrong number that looks right.
pub(crate) async fn count_by_shard(plan: &Plan) -> Result<Counted, Error> {
    let span = {
        use crate::telemetry::*;
        tracing::info_span!(
            "sharded.count",
            { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
            { TABLE_NAMES } = %plan.table,
            { INDEX_NAME } = plan.index,
            { ENTITY } = plan.entity,
            { SHARD_COUNT } = plan.partitions.len(),
            { FAN_OUT } = plan.concurrency.clamp(1, plan.partitions.len().max(1)),
            { TRANSITION } = plan.transition.is_some(),
        )
    };
    crate::telemetry::fan_out(plan.entity, plan.partitions.len());
    let counts: Vec<(usize, Result<ShardCount, Error>)> = stream::iter(0..plan.partitions.len())
        .map(|shard| {
            let within = crate::telemetry::within(span.clone(), Some(shard as u32), async move {
                count_shard(plan, shard).await
            });
            async move { (shard, within.await) }
        })
        .buffer_unordered(plan.concurrency.max(1))
        .collect()
        .instrument(span.clone())
        .await;
    let mut counted = Counted {
        by_shard: vec![0; plan.partitions.len()],
        ..Counted::default()
    };
    for (shard, result) in counts {
        let shard_count = result.map_err(|e| {
            // An invalid request is the query's error, not this shard's.
            if e.is_validation() {
                e
            } else {
                shard_failed(plan, shard, e)
            }
        })?;
        counted.by_shard[shard] = shard_count.count;
        counted.read_units += shard_count.read_units;
        counted.requests += shard_count.requests;
    }
    Ok(counted)
}
