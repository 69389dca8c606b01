//! The scatter-gather engine: one logical Query over N shard partitions, merged in order.
//!
//! - **Concurrent, bounded.** The first page of every shard is requested concurrently, at
//!   most `concurrency` at a time (never N unbounded tasks, never one after another), so the
//!   latency of a top-K read is that of the slowest shard, not the sum.
//! - **Lazy.** Each shard request asks for `Limit` = what the merge can still use. A shard's
//!   next page is fetched only when the merge needs its next item (its buffer ran dry and its
//!   head could be the next smallest). The engine stops as soon as the requested number of
//!   items has been emitted.
//! - **Ordered.** A heap of shard heads ([`HeadHeap`]) emits items in DynamoDB's sort-key
//!   order; ties go to the lower shard.
//! - **Never late.** Nothing at or behind the merge position (the last emitted item) is
//!   emitted afterwards, within a page or after a cursor, so writes by other clients never
//!   make the order go back (see [`Engine`]).
//! - **Honest.** A failed shard fails the query, naming the shard, unless the caller opted
//!   into partial results, in which case every failure is listed. Never a silent zero.

use std::collections::{HashMap, VecDeque};

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity, Select};
use aws_sdk_dynamodb::Client;
use futures::stream::{self, StreamExt};
use tracing::Instrument;

use crate::access::cursor::{MergePosition, Resume, ShardPosition};
use crate::access::entity::Item;
use crate::access::merge::{HeadHeap, SortValue};
use crate::capacity::stats::record;
use crate::capacity::units::Consistency;
use crate::error::Error;

/// A sort-key condition of a query, applied by DynamoDB in the key condition.
///
/// Values are physical sort-key strings: build them with the entity's generated `sk` and
/// `sk_prefix_*` functions so they encode like the stored keys.
///
/// ```
/// use sharded::SortCondition;
/// let c = SortCondition::BeginsWith("SCORE#".into());
/// assert_eq!(c.expression(), "begins_with(#sk, :sk0)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortCondition {
    /// `begins_with(sk, prefix)`
    BeginsWith(String),
    /// `sk BETWEEN low AND high` (both inclusive)
    Between(String, String),
    /// `sk < value`
    Lt(String),
    /// `sk <= value`
    Le(String),
    /// `sk > value`
    Gt(String),
    /// `sk >= value`
    Ge(String),
}

impl SortCondition {
    /// The key-condition fragment, with `#sk` and `:sk0`/`:sk1` placeholders.
    pub fn expression(&self) -> &'static str {
        match self {
            SortCondition::BeginsWith(_) => "begins_with(#sk, :sk0)",
            SortCondition::Between(..) => "#sk BETWEEN :sk0 AND :sk1",
            SortCondition::Lt(_) => "#sk < :sk0",
            SortCondition::Le(_) => "#sk <= :sk0",
            SortCondition::Gt(_) => "#sk > :sk0",
            SortCondition::Ge(_) => "#sk >= :sk0",
        }
    }

    /// The placeholder values, in order.
    pub fn values(&self) -> Vec<&str> {
        match self {
            SortCondition::Between(a, b) => vec![a, b],
            SortCondition::BeginsWith(v)
            | SortCondition::Lt(v)
            | SortCondition::Le(v)
            | SortCondition::Gt(v)
            | SortCondition::Ge(v) => vec![v],
        }
    }

    /// A stable text form, for the cursor fingerprint.
    pub(crate) fn fingerprint(&self) -> String {
        format!("{}|{}", self.expression(), self.values().join("\u{0}"))
    }
}

/// One failed shard of a query run with partial results accepted.
///
/// ```
/// # fn show(f: &sharded::ShardFailure) -> String {
/// format!("shard {} ({}) failed: {}", f.shard, f.partition_key, f.error)
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ShardFailure {
    /// The shard number.
    pub shard: u32,
    /// Its physical partition key.
    pub partition_key: String,
    /// What went wrong (after the SDK's retries).
    pub error: Error,
}

/// Everything the engine needs to know about one query; fixed for its lifetime.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub client: Client,
    pub table: String,
    pub entity: &'static str,
    pub index: Option<&'static str>,
    /// The partition key attribute queried (`pk` or `gsi1pk`).
    pub pk_attribute: &'static str,
    /// The sort key attribute of the queried key schema, if any.
    pub sort_attribute: Option<&'static str>,
    /// Besides the partition key: the attributes of an `ExclusiveStartKey`, in cursor order.
    pub position_attributes: Vec<&'static str>,
    /// One physical partition key per shard.
    pub partitions: Vec<String>,
    pub condition: Option<SortCondition>,
    pub descending: bool,
    pub consistent: bool,
    /// Upper bound of a shard request's `Limit`.
    pub page_size: Option<u32>,
    pub concurrency: usize,
    /// Where shard requests record consumed capacity and throttles, if anywhere.
    pub stats: Option<std::sync::Arc<crate::capacity::stats::HotKeyStats>>,
    /// The shard count of the queried key, when it is sharded (for grouping in the stats).
    pub shards: Option<u32>,
}

#[derive(Debug)]
struct ShardState {
    buffer: VecDeque<Item>,
    /// Where the next request starts (DynamoDB's `LastEvaluatedKey`).
    next_start: Option<Item>,
    /// DynamoDB said there is nothing after `next_start`.
    exhausted: bool,
    /// The position this page started from, for the cursor of a shard that emitted nothing.
    start: ShardPosition,
    /// Key values of the last emitted item.
    last_emitted: Option<Vec<AttributeValue>>,
    failed: bool,
}

impl ShardState {
    fn needs_fetch(&self) -> bool {
        self.buffer.is_empty() && !self.exhausted && !self.failed
    }
}

/// The merge position: the last emitted item's sort key (`None` without a sort key), its
/// shard, and the sort-key attribute as it goes into a cursor.
#[derive(Debug)]
struct Position {
    key: Option<SortValue>,
    shard: usize,
    sort: Option<AttributeValue>,
}

/// A running scatter-gather.
///
/// # Resuming from the merge position
///
/// Items are emitted in the order of `(sort key, shard)`: the query's sort-key order, and on
/// equal sort keys the lower shard first. The merge position is that pair for the last item
/// emitted. The engine never emits an item at or behind it from another shard: an item of
/// shard `i` with sort key `k` is dropped when `k` comes before the position's key `p`, or
/// when `k = p` and `i` is a lower shard than the position's (that tie was due earlier). A
/// shard above the position's shard with `k = p` is still due, and is emitted. The position's
/// own shard resumes strictly after its own last item through `ExclusiveStartKey`, so its
/// equal keys (possible on a GSI) are neither lost nor repeated.
///
/// So an item written behind the position while pages are read (between pages, or while one
/// page is being merged) is never emitted late, out of order: a page-by-page listing never
/// goes back in the query's order (non-decreasing sort keys, non-increasing when descending),
/// as one DynamoDB Query read page by page does. Items present throughout are emitted exactly
/// once.
///
/// Where each shard's request starts (`ExclusiveStartKey`): after its own last emitted item
/// (the cheapest exact start: in a stable table nothing lies between it and the position),
/// or from its beginning if it has emitted nothing. On a base table, a shard below the
/// position's shard starts at the position's sort key itself, so the items written behind the
/// position are not even read. A shard above it cannot: DynamoDB's start key is exclusive and
/// its items equal to the position's key are still due, so it starts from its own position
/// and the engine drops what lies behind.
pub(crate) struct Engine {
    plan: Plan,
    shards: Vec<ShardState>,
    heads: HeadHeap<Option<SortValue>>,
    position: Option<Position>,
    remaining: Option<usize>,
    tolerate_failures: bool,
    failures: Vec<ShardFailure>,
    span: tracing::Span,
}

impl Engine {
    /// An engine resuming from `resume` ([`Resume::start`] for a fresh query).
    pub fn new(
        plan: Plan,
        resume: Resume,
        limit: Option<usize>,
        tolerate_failures: bool,
    ) -> Engine {
        let span = tracing::info_span!(
            "sharded.query",
            entity = plan.entity,
            table = %plan.table,
            index = plan.index.unwrap_or(""),
            shards = plan.partitions.len(),
            limit = limit.map(|l| l as u64),
        );
        let position = resume.merge.map(|merge| Position {
            key: merge.sort.as_ref().and_then(SortValue::from_attribute),
            shard: merge.shard as usize,
            sort: merge.sort,
        });
        // A base table's start key is the sort key alone, so a shard can start at the merge
        // position's key even when it holds no item there.
        let sort_only = plan.index.is_none()
            && plan.position_attributes.len() == 1
            && plan.sort_attribute == plan.position_attributes.first().copied();
        let shards = resume
            .shards
            .into_iter()
            .zip(&plan.partitions)
            .enumerate()
            .map(|(shard, (start, pk))| {
                let own = match &start {
                    ShardPosition::After(key) => Some(key.as_slice()),
                    _ => None,
                };
                let from_position = match &position {
                    Some(Position {
                        key: Some(key),
                        shard: at,
                        sort: Some(sort),
                    }) if sort_only && shard < *at => {
                        // Only move forward: a (forged) own position past it is kept.
                        let ahead = own
                            .and_then(|own| own.first())
                            .and_then(SortValue::from_attribute)
                            .is_some_and(|own| before(&plan, &Some(key.clone()), &Some(own)));
                        (!ahead).then(|| std::slice::from_ref(sort))
                    }
                    _ => None,
                };
                let next_start = from_position
                    .or(own)
                    .map(|values| start_key(&plan, pk, values));
                ShardState {
                    buffer: VecDeque::new(),
                    next_start,
                    exhausted: matches!(start, ShardPosition::Done),
                    start,
                    last_emitted: None,
                    failed: false,
                }
            })
            .collect();
        Engine {
            heads: HeadHeap::new(plan.descending),
            plan,
            shards,
            position,
            remaining: limit,
            tolerate_failures,
            failures: Vec::new(),
            span,
        }
    }

    /// Whether an item of `shard` with sort key `key` lies at or behind the merge position
    /// (and so was due earlier: it was written behind the position and must not come out late).
    fn behind_position(&self, key: &Option<SortValue>, shard: usize) -> bool {
        let Some(position) = &self.position else {
            return false;
        };
        if before(&self.plan, key, &position.key) {
            return true;
        }
        // Equal keys: lower shards were due first; the position's own shard resumes after
        // its own last item, so an equal key there is a later item (a GSI), not a repeat.
        key == &position.key && shard < position.shard
    }

    /// The next item in sort order, or `None` when the query is complete.
    pub async fn next_item(&mut self) -> Result<Option<Item>, Error> {
        if self.remaining == Some(0) {
            return Ok(None);
        }
        loop {
            self.fill().await?;
            let Some((key, shard)) = self.heads.pop() else {
                return Ok(None);
            };
            let state = &mut self.shards[shard];
            let Some(item) = state.buffer.pop_front() else {
                return Ok(None);
            };
            if let Some(head) = state.buffer.front() {
                self.heads.push(sort_value(&self.plan, head), shard);
            }
            if self.behind_position(&key, shard) {
                // Written behind the merge position after the position passed it.
                continue;
            }
            self.shards[shard].last_emitted = Some(position_values(&self.plan, &item));
            self.position = Some(Position {
                key,
                shard,
                sort: self
                    .plan
                    .sort_attribute
                    .and_then(|attr| item.get(attr))
                    .cloned(),
            });
            if let Some(remaining) = &mut self.remaining {
                *remaining -= 1;
            }
            return Ok(Some(item));
        }
    }

    /// Fetches every shard whose buffer ran dry and that may still hold items, concurrently,
    /// until each such shard has a head or is exhausted (filtered pages can come back empty).
    async fn fill(&mut self) -> Result<(), Error> {
        loop {
            let needed: Vec<usize> = (0..self.shards.len())
                .filter(|&s| self.shards[s].needs_fetch())
                .collect();
            if needed.is_empty() {
                return Ok(());
            }
            let limit = match (self.remaining, self.plan.page_size) {
                (Some(r), Some(p)) => Some(r.min(p as usize)),
                (Some(r), None) => Some(r),
                (None, p) => p.map(|p| p as usize),
            }
            .map(|l| l.clamp(1, i32::MAX as usize) as i32);
            let requests: Vec<(usize, Option<Item>)> = needed
                .iter()
                .map(|&s| (s, self.shards[s].next_start.clone()))
                .collect();
            let plan = &self.plan;
            let results: Vec<(usize, Result<ShardPage, Error>)> = stream::iter(requests)
                .map(|(shard, start)| async move {
                    (shard, query_shard(plan, shard, start, limit, false).await)
                })
                .buffer_unordered(plan.concurrency.max(1))
                .collect()
                .instrument(self.span.clone())
                .await;
            for (shard, result) in results {
                match result {
                    Ok(page) => {
                        let state = &mut self.shards[shard];
                        state.exhausted = page.last_evaluated_key.is_none();
                        state.next_start = page.last_evaluated_key;
                        state.buffer.extend(page.items);
                        if let Some(head) = state.buffer.front() {
                            self.heads.push(sort_value(&self.plan, head), shard);
                        }
                    }
                    Err(error) => {
                        let partition_key = self.plan.partitions[shard].clone();
                        if !self.tolerate_failures {
                            return Err(shard_failed(&self.plan, shard, error));
                        }
                        self.shards[shard].failed = true;
                        self.failures.push(ShardFailure {
                            shard: shard as u32,
                            partition_key,
                            error,
                        });
                    }
                }
            }
        }
    }

    /// Where the merge and each shard stand after the items emitted so far: what a cursor
    /// records (only keys of emitted items).
    pub fn positions(&self) -> Resume {
        let shards = self
            .shards
            .iter()
            .map(|s| {
                if s.buffer.is_empty() && s.exhausted {
                    return ShardPosition::Done;
                }
                match &s.last_emitted {
                    Some(key) => ShardPosition::After(key.clone()),
                    // Nothing emitted on this page: it stands where it stood.
                    None => s.start.clone(),
                }
            })
            .collect();
        Resume {
            merge: self.position.as_ref().map(|p| MergePosition {
                shard: p.shard as u32,
                sort: p.sort.clone(),
            }),
            shards,
        }
    }

    /// Whether every shard is finished (no cursor needed).
    pub fn is_complete(&self) -> bool {
        self.shards
            .iter()
            .all(|s| s.buffer.is_empty() && s.exhausted)
    }

    /// The shard failures recorded in partial mode.
    pub fn take_failures(&mut self) -> Vec<ShardFailure> {
        std::mem::take(&mut self.failures)
    }
}

fn shard_failed(plan: &Plan, shard: usize, error: Error) -> Error {
    Error::ShardFailed {
        shard: shard as u32,
        shards: plan.partitions.len() as u32,
        partition_key: plan.partitions[shard].clone(),
        index: plan.index,
        source: Box::new(error),
    }
}

/// One page of one shard.
pub(crate) struct ShardPage {
    pub items: Vec<Item>,
    pub last_evaluated_key: Option<Item>,
    pub count: u64,
}

/// One Query request against one shard.
pub(crate) async fn query_shard(
    plan: &Plan,
    shard: usize,
    start: Option<Item>,
    limit: Option<i32>,
    count_only: bool,
) -> Result<ShardPage, Error> {
    let pk = &plan.partitions[shard];
    let mut names = HashMap::from([
        ("#pk".to_owned(), plan.pk_attribute.to_owned()),
        (
            "#et".to_owned(),
            crate::keys::schema::ENTITY_ATTRIBUTE.to_owned(),
        ),
    ]);
    let mut values = HashMap::from([
        (":pk".to_owned(), AttributeValue::S(pk.clone())),
        (":et".to_owned(), AttributeValue::S(plan.entity.to_owned())),
    ]);
    let mut condition = "#pk = :pk".to_owned();
    if let (Some(sort), Some(sk_attr)) = (&plan.condition, plan.sort_attribute) {
        names.insert("#sk".to_owned(), sk_attr.to_owned());
        for (i, v) in sort.values().into_iter().enumerate() {
            values.insert(format!(":sk{i}"), AttributeValue::S(v.to_owned()));
        }
        condition.push_str(" AND ");
        condition.push_str(sort.expression());
    }
    let request = plan
        .client
        .query()
        .table_name(&plan.table)
        .set_index_name(plan.index.map(str::to_owned))
        .key_condition_expression(condition)
        // Single-table: other entities may share the partition; only this entity's items
        // come back, so none is ever deserialised as the wrong type.
        .filter_expression("#et = :et")
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .scan_index_forward(!plan.descending)
        .set_limit(limit)
        .set_consistent_read(plan.consistent.then_some(true))
        .set_exclusive_start_key(start)
        .set_select(count_only.then_some(Select::Count))
        .set_return_consumed_capacity(plan.stats.as_ref().map(|_| ReturnConsumedCapacity::Total));
    let span = tracing::debug_span!("sharded.shard_query", shard, partition_key = %pk, limit = limit.map(i64::from));
    let result = request
        .send()
        .instrument(span)
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
    Ok(ShardPage {
        count: output.count().max(0) as u64,
        last_evaluated_key: output.last_evaluated_key,
        items: output.items.unwrap_or_default(),
    })
}

/// Counts one shard's matching items, following its pages.
pub(crate) async fn count_shard(plan: &Plan, shard: usize) -> Result<u64, Error> {
    let mut total = 0;
    let mut start = None;
    loop {
        let page = query_shard(plan, shard, start, None, true).await?;
        total += page.count;
        match page.last_evaluated_key {
            Some(next) => start = Some(next),
            None => return Ok(total),
        }
    }
}

/// `Select=COUNT` on every shard, concurrently and bounded: the count of each shard, in
/// shard order. A failed shard fails the count, naming the shard: a partial sum would be a
/// wrong number that looks right.
pub(crate) async fn count_by_shard(plan: &Plan) -> Result<Vec<u64>, Error> {
    let span = tracing::info_span!(
        "sharded.count",
        entity = plan.entity,
        shards = plan.partitions.len()
    );
    let counts: Vec<(usize, Result<u64, Error>)> = stream::iter(0..plan.partitions.len())
        .map(|shard| async move { (shard, count_shard(plan, shard).await) })
        .buffer_unordered(plan.concurrency.max(1))
        .collect()
        .instrument(span)
        .await;
    let mut by_shard = vec![0; plan.partitions.len()];
    for (shard, result) in counts {
        by_shard[shard] = result.map_err(|e| shard_failed(plan, shard, e))?;
    }
    Ok(by_shard)
}

/// Whether sort key `a` comes strictly before `b` in the query's order.
fn before(plan: &Plan, a: &Option<SortValue>, b: &Option<SortValue>) -> bool {
    if plan.descending {
        a > b
    } else {
        a < b
    }
}

fn sort_value(plan: &Plan, item: &Item) -> Option<SortValue> {
    plan.sort_attribute
        .and_then(|attr| item.get(attr))
        .and_then(SortValue::from_attribute)
}

fn position_values(plan: &Plan, item: &Item) -> Vec<AttributeValue> {
    plan.position_attributes
        .iter()
        .map(|attr| {
            item.get(*attr)
                .cloned()
                .unwrap_or(AttributeValue::S(String::new()))
        })
        .collect()
}

/// The `ExclusiveStartKey` of a shard: its partition key (from the query, never from the
/// cursor) and the position values.
fn start_key(plan: &Plan, pk: &str, values: &[AttributeValue]) -> Item {
    let mut key: Item = plan
        .position_attributes
        .iter()
        .map(|a| a.to_string())
        .zip(values.iter().cloned())
        .collect();
    key.insert(
        plan.pk_attribute.to_owned(),
        AttributeValue::S(pk.to_owned()),
    );
    key
}
