//! The scatter-gather engine: one logical Query over N shard partitions, merged in order.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the plan and the merge/paging engine: heads, limits, the merge position, cursors' positions |
//! | `request` | one shard's `Query` request (conditions, filters, expiry, projection) and counts |
//! | `transition` | reading through a layout transition: old copies, lookups, legacy adoption |
//!
//! - **Concurrent, bounded.** The first page of every shard is requested concurrently, at
//!   most `concurrency` at a time (never N unbounded tasks, never one after another), so the
//!   latency of a top-K read is that of the slowest shard, not the sum.
//! - **Lazy, and sized to the shard's share.** With a limit `k` over `n` shards, a shard's first
//!   request asks for about what it is expected to contribute, [`first_share`]
//!   (`ceil(1.5·k/n) + 2`, at most `k`), not for `k`: a top-100 over 10 shards reads ~170
//!   items, not 1,000. A shard's next page is fetched only when the merge needs its next item
//!   (its buffer ran dry and its head could be the next smallest; a stream or a collect
//!   without a limit reads ahead: a shard down to half its last page is asked for the next
//!   one at once, see [`Engine::fill`]), asking for twice its last
//!   `Limit`, or its share of what is still needed as the merge has seen it so far if that is
//!   more (a shard that supplied every item is asked for all the rest), capped at what the
//!   merge can still use: a shard holding all the winners costs one refill. Results are exact
//!   whatever the limits: the merge never pops while a shard that may hold a smaller item has
//!   an empty buffer. The engine stops as soon as the requested number of items is emitted.
//! - **Through a layout transition, sized by where the items sit.** While `previous_n` or
//!   `legacy` is declared, a base-table top-k reads both layouts' partitions, but its first
//!   requests are sized as if only the partitions holding items existed
//!   ([`Engine::first_limit`]): before anything is learned, the previous layout's (the items
//!   are not migrated yet), each asked for its share of them; a partition only the new layout
//!   has is asked for a probe of [`PROBE_LIMIT`] item. Once the repository has learned what
//!   each partition supplied of the same query, that decides instead: a partition that
//!   supplied nothing is probed. A 10 -> 20 top-100 before its migration is then a 10-shard
//!   top-100 plus 10 one-item probes of empty partitions, one round. A wrong guess costs a
//!   round, never an item: a probe that found items is refilled with its fair share when
//!   the merge reaches it, and the other probes that found items are refilled in the same
//!   round.
//! - **Filters never stall.** DynamoDB applies `Limit` before the filter (the entity filter
//!   of a single-table design), so a page can come back empty with a `LastEvaluatedKey`. The
//!   shard's next `Limit` then grows x4, up to [`MAX_FILTERED_LIMIT`], independent of what the
//!   merge can use: 10,000 other items cost ~10 requests, not 10,000.
//! - **`.page_size(p)` is the caller's choice.** Every request then asks for `p` (less when
//!   the merge can use less; the filter growth stops at `p`): `.page_size(k)` is the old
//!   default of asking each shard for all `k` at once.
//! - **Ordered.** A heap of shard heads ([`HeadHeap`]) emits items in DynamoDB's sort-key
//!   order; ties go to the lower shard.
//! - **Never late.** Nothing at or behind the merge position (the last emitted item) is
//!   emitted afterwards, within a page or after a cursor, so writes by other clients never
//!   make the order go back (see [`Engine`]).
//! - **Honest.** A failed shard fails the query, naming the shard, unless the caller opted
//!   into partial results, in which case every failure is listed. Never a silent zero.

use std::collections::VecDeque;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use std::sync::Arc;

use futures::future::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use tracing::Instrument;

use crate::telemetry;

mod request;
mod transition;

pub(crate) use request::{count_by_shard, Counted, Expiry};
pub(crate) use transition::{Placement, Transition};

use request::{query_shard, ShardPage};

use crate::access::read::bounds::KeyRange;

use crate::access::condition::Condition;
use crate::access::engine::cursor::{MergePosition, Resume, ShardPosition};
use crate::access::engine::merge::{HeadHeap, SortValue};
use crate::access::placement::marked_moved;
use crate::access::recognize::{Depth, NotOurs};
use crate::access::sort_condition::SortCondition;
use crate::error::foreign::Foreign;
use crate::error::{Error, QueryRefusal};
use crate::item::Item;
use crate::keys::attribute::KeyValue;
use crate::keys::schema::{EntitySchema, KeyAttributeSchema, ScalarType};
use crate::keys::shards::Partition;

/// One failed shard of a query run with partial results accepted.
///
/// ```
/// # fn show(f: &sharded::query::ShardFailure) -> String {
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
    /// The entity or collection queried, for spans.
    pub entity: &'static str,
    /// The entities whose items the query keeps (the values of the table's tag).
    pub entities: &'static [&'static str],
    /// The table's tag attribute, if it has one.
    pub tag: Option<&'static str>,
    /// Whether DynamoDB leaves out other entities' items by their tag (`FilterExpression`:
    /// the queried entities' tags, or none). When the key condition already confines the
    /// query to the entity's literal sort-key prefix, nothing is sent: the same items come
    /// out (DynamoDB applies a filter after `Limit` and charges the read either way), for
    /// less work per request. Counting always filters on the server.
    pub filter_on_server: bool,
    /// The check every item read goes through ([`QuerySource::recognize`]): what the query
    /// keeps, and what it skips as foreign (counted, see
    /// [`recognize`](crate::access::recognize)).
    ///
    /// [`QuerySource::recognize`]: crate::access::source::QuerySource::recognize
    pub recognize: fn(&mut Item, Depth) -> Result<usize, NotOurs>,
    /// The key layout queried: what a foreign item's key is shown by.
    pub layout: &'static EntitySchema,
    /// The attributes of a projection (with the keys and the entity attribute the engine
    /// needs), or `None` for whole items.
    pub projection: Option<Vec<&'static str>>,
    /// The caller's filter (`Query::filter`), applied by DynamoDB after `Limit`.
    pub filter: Option<Condition<()>>,
    /// The expiry filter of an entity with a `#[sharded(ttl)]` field.
    pub expiry: Option<Expiry>,
    pub index: Option<&'static str>,
    /// The sort attributes of the queried key schema, in order: none, the one sort key of a
    /// string key (`sk`, `gsi1sk`), or a multi-attribute key's (merged as a tuple).
    pub sort_attributes: Vec<KeyAttributeSchema>,
    /// Equalities on a left prefix of `sort_attributes` (a multi-attribute key's sort
    /// condition; a string key holds its prefix inside the string). The range of `condition`
    /// applies to the next sort attribute.
    pub sort_equalities: Vec<(&'static str, KeyValue)>,
    /// Besides the partition's attributes: the attributes of an `ExclusiveStartKey`, in
    /// cursor order.
    pub position_attributes: Vec<&'static str>,
    /// One physical partition per shard, each the attribute equalities of its key
    /// condition: the current layout's, then, during a transition, the previous layout's
    /// other keys.
    pub partitions: Vec<Partition>,
    /// During a layout transition (`previous_n`, `legacy`), how old copies are told from
    /// the item (see [`transition`]); `None` in a steady layout.
    pub transition: Option<Transition>,
    pub condition: Option<SortCondition>,
    /// The whole-key range every item read must lie in (`Query::after` and the other
    /// bounds), when the key condition alone cannot say it (see `bounds`).
    pub range: Option<KeyRange>,
    pub descending: bool,
    pub consistent: bool,
    /// Upper bound of a shard request's `Limit`.
    pub page_size: Option<u32>,
    pub concurrency: usize,
    /// Where shard requests record consumed capacity and throttles, if anywhere.
    pub stats: Option<std::sync::Arc<crate::capacity::stats::HotKeyStats>>,
    /// The shard count and suffix of the queried key, when it is sharded (for grouping in
    /// the stats).
    pub shards: crate::capacity::stats::Shards,
    /// What each shard supplied of the same query's answer last time (a fraction per
    /// partition), when the repository has seen it: a shard that held more than its share of
    /// the top `k` is asked for that much in its first request (see `request_limit`).
    pub learned_shares: Option<Arc<[f64]>>,
}

/// Whether streams and collects read ahead: always, unless the project's own benchmarks
/// turned it off to measure the difference side by side (feature `bench-internals`,
/// `__bench::set_read_ahead`).
#[cfg(feature = "bench-internals")]
pub(crate) static READ_AHEAD: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(true);

fn read_ahead_enabled() -> bool {
    #[cfg(feature = "bench-internals")]
    {
        READ_AHEAD.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "bench-internals"))]
    {
        true
    }
}

/// Extra room of a shard's first request over its fair share of the limit: a shard's share of
/// a top-`k` over `n` hash-spread shards is binomial (mean `k/n`, deviation about
/// `sqrt(k/n)`), so `1.5·k/n + 2` covers about two deviations at `k/n = 10` and all of them
/// at small shares; the rare shard that holds more is refilled lazily.
const FIRST_SHARE_FACTOR: (usize, usize) = (3, 2);
const FIRST_SHARE_EXTRA: usize = 2;
/// The first `Limit` of a partition expected to hold nothing during a layout transition: enough
/// to learn whether it is empty (DynamoDB then answers without a `LastEvaluatedKey`) and, if it
/// is not, its head, so the merge stays exact.
const PROBE_LIMIT: usize = 1;
/// How much a refill asks for over the shard's previous `Limit` (capped by what the merge can
/// still use).
const REFILL_GROWTH: usize = 2;
/// How much the `Limit` grows after a page that the filter emptied.
const FILTERED_GROWTH: usize = 4;
/// The largest `Limit` the filter growth reaches (DynamoDB's 1 MB page bounds each page anyway).
pub(crate) const MAX_FILTERED_LIMIT: usize = 1000;

/// The first `Limit` of each of `shards` shards for a query that wants `limit` items:
/// `ceil(1.5·limit/shards) + 2`, at most `limit`, at least 1.
///
/// ```text
/// top-100 over 10 shards: 17 per shard (170 items read, not 1,000)
/// top-10 over 10 shards: 4 per shard; top-1: 1
/// ```
pub(crate) fn first_share(limit: usize, shards: usize) -> usize {
    let (num, den) = FIRST_SHARE_FACTOR;
    let share = (limit.saturating_mul(num)).div_ceil(den * shards.max(1)) + FIRST_SHARE_EXTRA;
    share.min(limit).max(1)
}

#[derive(Debug)]
struct ShardState {
    buffer: VecDeque<Item>,
    /// The `Limit` of this shard's last request (`None` before the first, or without a limit).
    last_limit: Option<usize>,
    /// The last page was emptied by the filter but DynamoDB has more: grow the `Limit` x4.
    filtered_empty: bool,
    /// Items the merge emitted from this shard (this page).
    emitted: usize,
    /// Where the next request starts (DynamoDB's `LastEvaluatedKey`).
    next_start: Option<Item>,
    /// DynamoDB said there is nothing after `next_start`.
    exhausted: bool,
    /// The position this page started from, for the cursor of a shard that emitted nothing.
    start: ShardPosition,
    /// Key values of the last emitted item.
    last_emitted: Option<Vec<AttributeValue>>,
    /// The last item passed was a copy marked `moved` (skipped): it stands for nothing.
    last_marked: bool,
    failed: bool,
    /// A request for this shard's next page is in flight.
    requested: bool,
    /// Items in this shard's last page (after its filters): the read-ahead threshold's base.
    last_page_items: usize,
    /// The last request was a probe: during a layout transition, a partition expected to hold
    /// nothing is first asked for [`PROBE_LIMIT`] items (see [`Engine::first_limit`]).
    probed: bool,
}

impl ShardState {
    /// The merge cannot pop before this shard has a head: it may hold the next item.
    fn needs_fetch(&self) -> bool {
        self.buffer.is_empty() && !self.exhausted && !self.failed
    }

    /// Worth reading ahead: it has a next page, none is on its way, and its buffer is down
    /// to half of its last page or less.
    fn runs_low(&self) -> bool {
        !self.exhausted
            && !self.failed
            && !self.requested
            && !self.buffer.is_empty()
            && self.buffer.len() * 2 <= self.last_page_items
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
///
/// # Layout transitions
///
/// While a transition is declared (`previous_n`, `legacy`), the partitions are the current
/// layout's and the previous layout's, and one logical item may be in two of them: copied to
/// its new shard by a migration (or rewritten there by a put) and not yet deleted from its old
/// place. The copy in the current place is authoritative: every write since the transition
/// went there. So an item read from partition `p` whose current place is another partition
/// `t` (`Transition::placement`) is an old copy, and is hidden when `t` holds an item with the same
/// sort key: `t`'s head (every unfinished shard has one when the merge pops), its last item
/// consumed, or, after a cursor, the item it resumes after. An old copy whose current place
/// holds nothing is the item (not migrated yet) and comes out. Hidden copies are consumed
/// like emitted ones (a cursor resumes after them), but never move the merge position.
///
/// Items move between pages: a migration copies an item to a shard that was empty (and so
/// finished) on an earlier page. So a cursor never records a shard as finished; every page
/// reads every shard again from where it stood, and a current copy with the merge position's
/// own sort key whose previous place is the position's partition is the item emitted last,
/// copied since: it is dropped, not repeated.
pub(crate) struct Engine {
    /// Shared with the shard requests in flight.
    plan: Arc<Plan>,
    shards: Vec<ShardState>,
    /// Shard requests sent and not yet applied: those the merge waits for, and, in a query
    /// without a limit (a stream, a large collect), the read-ahead of shards running low.
    in_flight: FuturesUnordered<ShardRequest>,
    /// Read ahead (see [`Engine::fill`]): set for streams and collects without a limit.
    read_ahead: bool,
    heads: HeadHeap<Option<SortValue>>,
    position: Option<Position>,
    remaining: Option<usize>,
    tolerate_failures: bool,
    failures: Vec<ShardFailure>,
    span: tracing::Span,
    /// What the scatter-gather did, recorded when the engine is dropped.
    telemetry: Tally,
    /// The foreign items the shards' pages held, skipped.
    foreign: Foreign,
    /// The read units DynamoDB reported for the pages applied so far.
    read_units: f64,
}

/// What one scatter-gather read, emitted and sent, recorded on its span and in the metrics
/// when it is dropped (with the engine: however the query ended).
struct Tally {
    span: tracing::Span,
    entity: &'static str,
    /// Whether the engine resumed from a cursor.
    resumed: bool,
    items_read: u64,
    items_emitted: u64,
    requests_sent: u64,
}

/// The span of one scatter-gather (a page, a collect, a stream): [`telemetry::QUERY_SPAN`]
/// with the OpenTelemetry table and index and the `sharded.*` shape of the read. The items
/// read and emitted are recorded when the engine is dropped.
fn query_span(plan: &Plan, limit: Option<usize>, resumed: bool) -> tracing::Span {
    use telemetry::*;
    tracing::info_span!(
        "sharded.query",
        { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
        { TABLE_NAMES } = %plan.table,
        { INDEX_NAME } = plan.index,
        { LIMIT } = limit.map(|l| l as u64),
        { SCAN_FORWARD } = !plan.descending,
        { ENTITY } = plan.entity,
        { SHARD_COUNT } = plan.partitions.len(),
        { FAN_OUT } = plan.concurrency.clamp(1, plan.partitions.len().max(1)),
        { TRANSITION } = plan.transition.is_some(),
        { RESUMED } = resumed,
        { ITEMS_READ } = tracing::field::Empty,
        { ITEMS_EMITTED } = tracing::field::Empty,
    )
}

impl Drop for Tally {
    /// Records items read and emitted on the span, the merge waste and, for a page resumed
    /// from a cursor, the requests the resume cost.
    fn drop(&mut self) {
        self.span
            .record(telemetry::ITEMS_READ, self.items_read)
            .record(telemetry::ITEMS_EMITTED, self.items_emitted);
        telemetry::merge_waste(self.entity, self.items_read, self.items_emitted);
        if self.resumed {
            telemetry::cursor_resume(self.entity, self.requests_sent);
        }
    }
}

impl Engine {
    /// An engine resuming from `resume` ([`Resume::start`] for a fresh query).
    pub fn new(
        plan: Plan,
        resume: Resume,
        limit: Option<usize>,
        tolerate_failures: bool,
    ) -> Engine {
        let resumed = resume.merge.is_some()
            || resume
                .shards
                .iter()
                .any(|s| !matches!(s, ShardPosition::Start));
        let span = query_span(&plan, limit, resumed);
        let plan_entity = plan.entity;
        telemetry::fan_out(plan.entity, plan.partitions.len());
        let position = resume.merge.map(|merge| Position {
            key: merge.sort.as_ref().and_then(SortValue::from_attribute),
            shard: merge.shard as usize,
            sort: merge.sort,
        });
        // A base table's start key is the sort key alone, so a shard can start at the merge
        // position's key even when it holds no item there.
        let sort_only = plan.index.is_none()
            && plan.position_attributes.len() == 1
            && plan.sort_attributes.len() == 1
            && plan.sort_attributes.first().map(|a| a.name)
                == plan.position_attributes.first().copied();
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
                let resume_at = from_position.or(own);
                // A shard that stands at the end of the sort-key condition holds nothing more
                // in it (DynamoDB refuses a start key on the condition's last key). On an
                // index, items share sort keys: one standing on the last key may have more
                // items with it, so only a shard past it is at the end.
                let at_end = resume_at
                    .and_then(|values| values.first())
                    .is_some_and(|sort| at_condition_end(&plan, sort, !sort_only));
                let next_start = resume_at.map(|values| start_key(&plan, pk, values));
                ShardState {
                    buffer: VecDeque::new(),
                    last_limit: None,
                    filtered_empty: false,
                    emitted: 0,
                    next_start,
                    // A shard is never skipped for good: one that ended on an earlier page is
                    // read again from where it stood, for items written there since.
                    exhausted: at_end,
                    start,
                    last_emitted: None,
                    last_marked: false,
                    failed: false,
                    requested: false,
                    last_page_items: 0,
                    probed: false,
                }
            })
            .collect();
        Engine {
            heads: HeadHeap::new(plan.descending),
            plan: Arc::new(plan),
            shards,
            in_flight: FuturesUnordered::new(),
            read_ahead: false,
            position,
            remaining: limit,
            tolerate_failures,
            failures: Vec::new(),
            telemetry: Tally {
                span: span.clone(),
                entity: plan_entity,
                resumed,
                items_read: 0,
                items_emitted: 0,
                requests_sent: 0,
            },
            span,
            foreign: Foreign::default(),
            read_units: 0.0,
        }
    }

    /// Reads ahead (see [`fill`](Self::fill)) when the query has no limit: what a stream and
    /// a collect of a whole listing ask for. Engines run side by side under one concurrency
    /// (a range query's buckets) do not, so that their requests stay within it.
    pub fn reading_ahead(mut self) -> Self {
        self.read_ahead = read_ahead_enabled();
        self
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
        // its own last item, so an equal key there is a later item (a GSI), not a repeat;
        // unless the shard resumes from an old cursor's "finished" mark, read again from
        // its start: then its item at the position is the one emitted last.
        let restarted = matches!(self.shards[shard].start, ShardPosition::Done)
            && self.shards[shard].last_emitted.is_none();
        key == &position.key && (shard < position.shard || (shard == position.shard && restarted))
    }

    /// Whether `item`, read from `shard` at its current place with the merge position's sort
    /// key, is the item the merge emitted last, copied there since from its previous place
    /// (the position's partition): emitted again it would be a repeat.
    fn repeats_position(&self, item: &Item, shard: usize, key: &Option<SortValue>) -> bool {
        let (Some(transition), Some(position)) = (&self.plan.transition, &self.position) else {
            return false;
        };
        if *key != position.key || shard == position.shard {
            return false;
        }
        let Some((current, Some(previous))) = transition.placement.place(item) else {
            return false;
        };
        self.plan.partitions[shard] == current && self.plan.partitions[position.shard] == previous
    }

    /// Whether `item`, read from `shard` with sort key `key`, is an old copy of an item whose
    /// current place holds an item with the same sort key (see "Layout transitions").
    fn superseded(&self, item: &Item, shard: usize, key: &Option<SortValue>) -> bool {
        let Some(transition) = &self.plan.transition else {
            return false;
        };
        let Some((target, _)) = transition.placement.place(item) else {
            return false;
        };
        if self.plan.partitions[shard] == target {
            return false;
        }
        let Some(at) = self.plan.partitions[..transition.current_partitions]
            .iter()
            .position(|p| *p == target)
        else {
            // Its current place is not among the partitions read (an item written under
            // another logical key): nothing can stand for it, so it is shown.
            return false;
        };
        let state = &self.shards[at];
        let sorted = !self.plan.sort_attributes.is_empty();
        // Without a sort key, a partition holds one item: any item there is the occupant.
        let holds = |values: &[AttributeValue]| {
            !sorted || values.first().and_then(SortValue::from_attribute) == *key
        };
        // A copy marked `moved` holds nothing: its item lives at its other place (a key whose
        // layout changes per key is written at either count for a while; see `layouts`).
        let marked = |item: &Item| marked_moved(transition.move_attribute, item);
        let head = state
            .buffer
            .front()
            .is_some_and(|head| !marked(head) && (!sorted || sort_value(&self.plan, head) == *key));
        let consumed = match &state.last_emitted {
            Some(_) if state.last_marked => false,
            Some(values) => holds(values),
            None => matches!(&state.start, ShardPosition::After(values) if holds(values)),
        };
        head || consumed
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
            if self.behind_position(&key, shard) || self.repeats_position(&item, shard, &key) {
                // Written behind the merge position after the position passed it, or a copy
                // of the item emitted last.
                continue;
            }
            if self.superseded(&item, shard, &key) {
                let marked = self
                    .plan
                    .transition
                    .as_ref()
                    .is_some_and(|t| marked_moved(t.move_attribute, &item));
                let state = &mut self.shards[shard];
                state.last_emitted = Some(position_values(&self.plan, &item));
                state.last_marked = marked;
                continue;
            }
            let state = &mut self.shards[shard];
            state.last_emitted = Some(position_values(&self.plan, &item));
            state.last_marked = false;
            state.emitted += 1;
            self.telemetry.items_emitted += 1;
            self.position = Some(Position {
                key,
                shard,
                sort: sort_attribute_value(&self.plan, &item),
            });
            if let Some(remaining) = &mut self.remaining {
                *remaining -= 1;
            }
            return Ok(Some(item));
        }
    }

    /// Fetches the first page of every shard (at most one request per shard, concurrently),
    /// without emitting anything: a range query reads its next buckets ahead this way.
    pub(crate) async fn prefetch(&mut self) -> Result<(), Error> {
        self.fill().await
    }

    /// Items fetched and not yet emitted, over every shard.
    pub(crate) fn buffered(&self) -> usize {
        self.shards.iter().map(|s| s.buffer.len()).sum()
    }

    /// Fetches every shard whose buffer ran dry and that may still hold items, concurrently
    /// (at most `concurrency` requests in flight), until each such shard has a head or is
    /// exhausted (filtered pages can come back empty).
    ///
    /// **Read-ahead** ([`reading_ahead`](Self::reading_ahead)). In a query without a limit (a
    /// stream, a large collect), a shard whose
    /// buffer is down to half of its last page is asked for its next page at once, within the
    /// same concurrency, and the merge goes on with what is buffered: the page is usually
    /// there before the merge needs it. A shard holds at most its buffer and one page on its
    /// way, so the memory bound is shards x page size x 2 (pages of
    /// [`STREAM_PAGE_ITEMS`](crate::query::STREAM_PAGE_ITEMS) in a stream by default).
    async fn fill(&mut self) -> Result<(), Error> {
        loop {
            self.send_requests();
            if !self.shards.iter().any(ShardState::needs_fetch) {
                // Nothing to wait for: apply the read-ahead pages that already arrived.
                while let Some(Some((shard, result))) = self.in_flight.next().now_or_never() {
                    self.apply(shard, result)?;
                }
                return Ok(());
            }
            let Some((shard, result)) = self.in_flight.next().instrument(self.span.clone()).await
            else {
                // Unreachable: a shard that needs a page has one requested.
                return Ok(());
            };
            self.apply(shard, result)?;
        }
    }

    /// Sends the requests there is room for: first for the shards the merge waits for, then,
    /// in a query without a limit, the read-ahead of shards running low.
    fn send_requests(&mut self) {
        let concurrency = self.plan.concurrency.max(1);
        let open = self.shards.iter().filter(|s| !s.exhausted).count();
        let mut waiting: Vec<usize> = (0..self.shards.len())
            .filter(|&s| self.shards[s].needs_fetch() && !self.shards[s].requested)
            .collect();
        // A probe the merge ran through proves the transition's guess wrong (the migration
        // ran, or items were written there): the other probes that found items are refilled
        // in the same round, not one round trip after another as the merge reaches each.
        if waiting
            .iter()
            .any(|&s| self.shards[s].probed && !self.shards[s].filtered_empty)
        {
            let missed = (0..self.shards.len()).filter(|&s| {
                let state = &self.shards[s];
                state.probed
                    && !state.requested
                    && !state.exhausted
                    && !state.failed
                    && !state.buffer.is_empty()
            });
            waiting.extend(missed.collect::<Vec<_>>());
        }
        let ahead: Vec<usize> = if self.read_ahead && self.remaining.is_none() {
            (0..self.shards.len())
                .filter(|&s| self.shards[s].runs_low())
                .collect()
        } else {
            Vec::new()
        };
        for s in waiting.into_iter().chain(ahead) {
            if self.in_flight.len() >= concurrency {
                return;
            }
            let limit = self.request_limit(s, open);
            let probe = self.shards[s].last_limit.is_none() && self.probes(s);
            let state = &mut self.shards[s];
            state.last_limit = limit;
            state.probed = probe && limit.is_some();
            state.requested = true;
            let limit = limit.map(|l| l.clamp(1, i32::MAX as usize) as i32);
            let start = state.next_start.clone();
            let plan = Arc::clone(&self.plan);
            // Spawned, so that a page read ahead arrives while the caller is busy with the
            // items it has (a future in the engine would only move when the engine is polled).
            // Within the query's span: the shard's request span is its child, with its shard.
            let task = tokio::spawn(telemetry::within(
                self.span.clone(),
                Some(s as u32),
                async move { fetch_page(&plan, s, start, limit).await },
            ));
            self.telemetry.requests_sent += 1;
            self.in_flight.push(ShardRequest { shard: s, task });
        }
    }

    /// Applies the answer of one shard request: its page goes into the shard's buffer (and
    /// its head into the heap if the buffer was empty), or its error fails the query (or, for
    /// partial results, the shard).
    fn apply(&mut self, shard: usize, result: Result<ShardPage, Error>) -> Result<(), Error> {
        self.shards[shard].requested = false;
        match result {
            Ok(page) => {
                let state = &mut self.shards[shard];
                let was_empty = state.buffer.is_empty();
                state.exhausted = page.last_evaluated_key.is_none();
                state.filtered_empty = page.items.is_empty() && !state.exhausted;
                state.next_start = page.last_evaluated_key;
                state.last_page_items = page.items.len();
                self.telemetry.items_read += page.items.len() as u64;
                self.read_units += page.read_units;
                self.foreign.merge(page.foreign);
                state.buffer.extend(page.items);
                if was_empty {
                    if let Some(head) = state.buffer.front() {
                        self.heads.push(sort_value(&self.plan, head), shard);
                    }
                }
                Ok(())
            }
            // DynamoDB refused the request itself (an invalid expression or key): every
            // shard would say the same, so it is the query's error, reported once.
            Err(error) if error.is_validation() => Err(error),
            Err(error) => {
                let partition_key = self.plan.partitions[shard].shown().to_owned();
                if !self.tolerate_failures {
                    return Err(shard_failed(&self.plan, shard, error));
                }
                self.shards[shard].failed = true;
                self.failures.push(ShardFailure {
                    shard: shard as u32,
                    partition_key,
                    error,
                });
                Ok(())
            }
        }
    }

    /// The `Limit` of shard `s`'s next request, with `open` shards not yet exhausted.
    ///
    /// After a page the filter emptied: x4 the last `Limit`, up to [`MAX_FILTERED_LIMIT`] (the
    /// filter, not the merge, decides how much is needed). Otherwise, with `.page_size(p)`:
    /// `p`, or what the merge can still use if less (the caller chose the size; `p` also caps
    /// the filter growth). Without it and without a query limit: none (DynamoDB's 1 MB page).
    /// With a limit: the shard's [`first_share`] first; then x2 the last `Limit`, or more when
    /// the shard has supplied a larger part of the merge so far (its share of the emitted
    /// items, applied to what is still needed, with the first request's margin: a shard that
    /// holds every winner is asked for all the rest at once), capped at what the merge can
    /// still use.
    fn request_limit(&self, s: usize, open: usize) -> Option<usize> {
        let state = &self.shards[s];
        let page_size = self.plan.page_size.map(|p| p as usize);
        let limit = match (state.last_limit, page_size, self.remaining) {
            (Some(last), _, _) if state.filtered_empty => Some(
                last.saturating_mul(FILTERED_GROWTH)
                    .min(
                        page_size
                            .unwrap_or(MAX_FILTERED_LIMIT)
                            .min(MAX_FILTERED_LIMIT),
                    )
                    .max(last),
            ),
            (_, Some(p), remaining) => Some(remaining.map_or(p, |r| r.min(p))),
            (_, None, None) => None,
            (None, None, Some(remaining)) => Some(self.first_limit(s, remaining, open)),
            (Some(last), None, Some(remaining)) => {
                let emitted = self.emitted();
                let by_share = if state.probed {
                    // A probe that found items, refilled as soon as the merge reaches it (one
                    // item emitted of a few: too little to extrapolate from): the shard holds
                    // its fair share after all.
                    first_share(remaining, open)
                } else if emitted == 0 {
                    0
                } else {
                    first_share(remaining.saturating_mul(state.emitted), emitted)
                };
                Some(
                    last.saturating_mul(REFILL_GROWTH)
                        .max(by_share)
                        .min(remaining),
                )
            }
        };
        limit.map(|l| l.max(1))
    }

    /// What shard `s` supplied of the same query's last answer, per partition, when the
    /// repository learned it for this plan's partitions.
    fn learned(&self) -> Option<&[f64]> {
        self.plan
            .learned_shares
            .as_deref()
            .filter(|shares| shares.len() == self.shards.len())
    }

    /// Whether shard `s`'s first request in a top-k is a probe ([`PROBE_LIMIT`]): during a
    /// layout transition, a partition that supplied nothing of the same query's last answer,
    /// or, before anything is learned, one the items have not been migrated to yet
    /// ([`Transition::expects_items`]).
    fn probes(&self, s: usize) -> bool {
        let Some(transition) = self
            .plan
            .transition
            .as_ref()
            .filter(|t| t.sizes_first_requests())
        else {
            return false;
        };
        if self.remaining.is_none() || self.plan.page_size.is_some() {
            return false;
        }
        match self.learned() {
            Some(shares) => shares[s] == 0.0,
            None => !transition.expects_items(s),
        }
    }

    /// The first `Limit` of shard `s` in a query that still wants `remaining` items, `open`
    /// shards unfinished, without a page size.
    ///
    /// Steady layout: the shard's [`first_share`], or, when the shard supplied a large part
    /// of the same query's last answer (skewed data: the top 100 all on one shard), that part
    /// with the first request's margin, so it costs one round, not several refills.
    ///
    /// During a layout transition (base table), sized by where the items sit: a partition
    /// that [`probes`](Self::probes) asks for [`PROBE_LIMIT`]; the others for their share of
    /// the partitions that hold items (those that supplied part of the last answer, or, before
    /// anything is learned, the previous layout's), as in a steady layout of that many shards.
    /// A 10 -> 20 transition before its migration reads like 10 shards plus 10 empty probes.
    fn first_limit(&self, s: usize, remaining: usize, open: usize) -> usize {
        if self.probes(s) {
            return PROBE_LIMIT.min(remaining);
        }
        let learned = self.learned();
        let holding = match &self.plan.transition {
            Some(t) if t.sizes_first_requests() => {
                let holds = |i: usize| match learned {
                    Some(shares) => shares[i] > 0.0,
                    None => t.expects_items(i),
                };
                (0..self.shards.len())
                    .filter(|&i| holds(i) && !self.shards[i].exhausted)
                    .count()
            }
            _ => open,
        };
        let by_learned = learned.map_or(0, |shares| {
            let expected = shares[s] * remaining as f64;
            (expected * 1.5).ceil() as usize + FIRST_SHARE_EXTRA
        });
        first_share(remaining, holding)
            .max(by_learned)
            .min(remaining)
    }

    /// Makes sure a shard that looks unfinished really holds more, so a last page carries no
    /// cursor (none that would lead to an empty page).
    ///
    /// A shard whose page ended exactly at its last item still has a `LastEvaluatedKey`
    /// (DynamoDB stops at `Limit` without looking further). When every other shard is done
    /// and nothing is buffered, such shards are asked once more (one concurrent round, the
    /// usual request sizes; a filtered-empty answer keeps asking, with the filter growth):
    /// an empty answer without a `LastEvaluatedKey` marks them done. When some shard still
    /// holds a buffered or known next item, the cursor is needed anyway and nothing is sent.
    pub async fn settle(&mut self) -> Result<(), Error> {
        let unknown = |s: &ShardState| s.needs_fetch();
        let finished = |s: &ShardState| s.failed || (s.exhausted && s.buffer.is_empty());
        if self.shards.iter().all(|s| finished(s) || unknown(s)) && self.shards.iter().any(unknown)
        {
            // One item is enough to know; `fill` keeps going only while pages come back
            // filtered to nothing.
            let remaining = self.remaining.replace(1);
            let result = self.fill().await;
            self.remaining = remaining;
            result?;
        }
        Ok(())
    }

    /// Where the merge and each shard stand after the items emitted so far: what a cursor
    /// records (only keys of emitted items).
    pub fn positions(&self) -> Resume {
        let shards = self
            .shards
            .iter()
            .map(|s| match &s.last_emitted {
                // A finished shard is recorded where it stands too, never as finished: a
                // later page reads it again, for items written or moved there since.
                Some(key) => ShardPosition::After(key.clone()),
                // Nothing emitted on this page: it stands where it stood.
                None => s.start.clone(),
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

    /// What each shard supplied of the items emitted so far, as fractions (all zero when
    /// nothing was emitted): what a repository learns of a query's skew.
    pub fn shares(&self) -> Vec<f64> {
        let total = self.emitted().max(1) as f64;
        self.shards
            .iter()
            .map(|s| s.emitted as f64 / total)
            .collect()
    }

    /// Items emitted so far (this page), over every shard.
    fn emitted(&self) -> usize {
        self.shards.iter().map(|s| s.emitted).sum()
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

    /// The foreign items the pages read so far held, skipped (see
    /// [`recognize`](crate::access::recognize)).
    pub fn foreign(&self) -> &Foreign {
        &self.foreign
    }

    /// The read units DynamoDB reported for the pages read so far, and the requests sent.
    pub fn cost(&self) -> (f64, u32) {
        (self.read_units, self.telemetry.requests_sent as u32)
    }
}

/// One shard request running as its own task: aborted when the engine is dropped (a query
/// abandoned, a limit reached), so no request outlives its query.
struct ShardRequest {
    shard: usize,
    task: tokio::task::JoinHandle<Result<ShardPage, Error>>,
}

impl std::future::Future for ShardRequest {
    type Output = (usize, Result<ShardPage, Error>);

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let shard = self.shard;
        std::pin::Pin::new(&mut self.task).poll(cx).map(|joined| {
            let page = joined.unwrap_or_else(|stopped| {
                let reason = stopped.to_string();
                Err(QueryRefusal::ShardStopped { shard, reason }.into())
            });
            (shard, page)
        })
    }
}

impl Drop for ShardRequest {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One shard's page as the merge takes it: requested, its items recognised (the foreign
/// ones counted, see [`query_shard`]), and old copies whose current place was looked up
/// dropped.
async fn fetch_page(
    plan: &Plan,
    shard: usize,
    start: Option<Item>,
    limit: Option<i32>,
) -> Result<ShardPage, Error> {
    let mut page = query_shard(plan, shard, start, limit, false).await?;
    transition::drop_looked_up_copies(plan, &mut page.items).await?;
    Ok(page)
}

fn shard_failed(plan: &Plan, shard: usize, error: Error) -> Error {
    Error::ShardFailed {
        shard: shard as u32,
        shards: plan.partitions.len() as u32,
        partition_key: plan.partitions[shard].shown().to_owned(),
        index: plan.index,
        source: Box::new(error),
    }
}

/// Whether sort key `a` comes strictly before `b` in the query's order.
fn before(plan: &Plan, a: &Option<SortValue>, b: &Option<SortValue>) -> bool {
    if plan.descending {
        a > b
    } else {
        a < b
    }
}

/// The item's sort key as the merge orders it, and as a whole-key range checks it.
fn sort_value(plan: &Plan, item: &Item) -> Option<SortValue> {
    sort_attribute_value(plan, item)
        .as_ref()
        .and_then(SortValue::from_attribute)
}

/// The item's sort key as one value: the sort attribute's value, or, for a multi-attribute
/// sort key, the list of its attributes' values (ordered as a tuple by the merge, and kept
/// as one value in a cursor's merge position).
fn sort_attribute_value(plan: &Plan, item: &Item) -> Option<AttributeValue> {
    match plan.sort_attributes.as_slice() {
        [] => None,
        [one] => item.get(one.name).cloned(),
        many => many
            .iter()
            .map(|a| item.get(a.name).cloned())
            .collect::<Option<Vec<_>>>()
            .map(AttributeValue::L),
    }
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

/// Whether a shard standing after the item with sort key `sort` has nothing left in the
/// query's sort-key condition: `sort` is its last key in the query's order (the upper end of
/// an ascending range, the lower end of a descending one) or past it; with `ties` (an index,
/// where items share sort keys), only past it.
fn at_condition_end(plan: &Plan, sort: &AttributeValue, ties: bool) -> bool {
    // A multi-attribute sort key's range is on one of several attributes: nothing to tell
    // from the first position value alone.
    if plan.sort_attributes.len() != 1 {
        return false;
    }
    let (Some(condition), Ok(sort)) = (&plan.condition, sort.as_s()) else {
        return false;
    };
    let sort = sort.as_str();
    match (condition, plan.descending) {
        (SortCondition::Between(_, high), false) | (SortCondition::Le(high), false) => {
            sort > high.as_str() || (!ties && sort == high.as_str())
        }
        (SortCondition::Lt(end), false) => sort >= end.as_str(),
        (SortCondition::Between(low, _), true) | (SortCondition::Ge(low), true) => {
            sort < low.as_str() || (!ties && sort == low.as_str())
        }
        _ => false,
    }
}

/// The `ExclusiveStartKey` of a shard: its partition's attributes (from the query, never
/// from the cursor) and the position values.
fn start_key(plan: &Plan, partition: &Partition, values: &[AttributeValue]) -> Item {
    let mut key: Item = plan
        .position_attributes
        .iter()
        .map(|a| a.to_string())
        .zip(values.iter().cloned())
        .collect();
    for (attribute, value) in partition.equalities() {
        key.insert((*attribute).to_owned(), attribute_value(value));
    }
    key
}

/// Whether `item` is in `partition`: each of its attribute equalities holds.
pub(crate) fn in_partition(partition: &Partition, item: &Item) -> bool {
    partition
        .equalities()
        .iter()
        .all(|(attribute, value)| item.get(*attribute) == Some(&attribute_value(value)))
}

/// A key value as the SDK sends it.
pub(crate) fn attribute_value(value: &KeyValue) -> AttributeValue {
    // `KeyValue` is the key model's (`#[non_exhaustive]`): its type decides, numbers as `N`.
    match value.scalar_type() {
        ScalarType::N => AttributeValue::N(value.text().to_owned()),
        _ => AttributeValue::S(value.text().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_share_is_the_fair_share_with_a_margin_never_more_than_the_limit() {
        assert_eq!(first_share(100, 10), 17);
        assert_eq!(first_share(10, 10), 4);
        assert_eq!(first_share(1, 10), 1);
        assert_eq!(first_share(5, 1), 5);
        assert_eq!(first_share(1000, 100), 17);
        assert_eq!(first_share(0, 10), 1);
        // No overflow on absurd limits.
        assert!(first_share(usize::MAX, 10) > 1);
    }

    static TEST_TEMPLATE: crate::keys::schema::KeyTemplate =
        crate::keys::schema::KeyTemplate::new("GAME#{g}", &[]);
    static TEST_SCHEMA: EntitySchema = EntitySchema::new(
        "Score",
        None,
        crate::keys::schema::PartitionKeySchema::new(
            "pk",
            &TEST_TEMPLATE,
            crate::keys::schema::Sharding::random(4),
        ),
        None,
        &[],
    );

    fn engine(shards: usize, limit: Option<usize>, page_size: Option<u32>) -> Engine {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .build();
        let plan = Plan {
            client: Client::from_conf(config),
            table: "t".into(),
            entity: "Score",
            entities: &["Score"],
            tag: Some(crate::keys::schema::ENTITY_ATTRIBUTE),
            filter_on_server: true,
            recognize: |_, _| Ok(0),
            layout: &TEST_SCHEMA,
            projection: None,
            filter: None,
            expiry: None,
            index: None,
            sort_attributes: vec![KeyAttributeSchema::new(
                "sk",
                crate::keys::schema::ScalarType::S,
            )],
            sort_equalities: Vec::new(),
            position_attributes: vec!["sk"],
            partitions: (0..shards)
                .map(|s| Partition::key("pk", format!("GAME#g1#{s}")))
                .collect(),
            transition: None,
            condition: None,
            range: None,
            descending: false,
            consistent: false,
            page_size,
            concurrency: 32,
            stats: None,
            shards: Some(crate::capacity::stats::window::Spelling {
                n: Some(shards as u32),
                suffix: crate::keys::suffix::ShardSuffix::DEFAULT,
                per_key: None,
            }),
            learned_shares: None,
        };
        Engine::new(plan, Resume::start(shards), limit, false)
    }

    /// Records a request of `limit` on shard 0 and its answer, as `fill` does.
    fn answered(e: &mut Engine, limit: Option<usize>, items: usize, more: bool) {
        let state = &mut e.shards[0];
        state.last_limit = limit;
        state.exhausted = !more;
        state.filtered_empty = items == 0 && more;
    }

    /// Shard 0 has emitted `own` items of the page's `total`; the rest came from shard 1.
    fn emitted(e: &mut Engine, own: usize, total: usize) {
        e.shards[0].emitted = own;
        e.shards[1].emitted = total - own;
    }

    #[test]
    fn refills_double_up_to_what_the_merge_can_use() {
        let mut e = engine(10, Some(1000), None);
        let first = e.request_limit(0, 10);
        assert_eq!(first, Some(152));
        // Shard 0 supplied its fair part (152 of 900 emitted): twice its last Limit, capped.
        answered(&mut e, first, 152, true);
        emitted(&mut e, 152, 900);
        e.remaining = Some(100);
        assert_eq!(
            e.request_limit(0, 10),
            Some(100),
            "capped at what is still needed"
        );
        emitted(&mut e, 152, 500);
        e.remaining = Some(500);
        assert_eq!(e.request_limit(0, 10), Some(304), "twice 152");
    }

    #[test]
    fn a_shard_holding_every_winner_is_asked_for_the_rest_at_once() {
        let mut e = engine(10, Some(100), None);
        let first = e.request_limit(0, 10);
        assert_eq!(first, Some(17));
        answered(&mut e, first, 17, true);
        emitted(&mut e, 17, 17);
        e.remaining = Some(83);
        assert_eq!(e.request_limit(0, 10), Some(83));
        // Half of the winners so far: 1.5 x 50 x 1/2 + 2 = 40 (more than twice 17).
        emitted(&mut e, 17, 34);
        e.remaining = Some(50);
        assert_eq!(e.request_limit(0, 10), Some(40));
    }

    #[test]
    fn a_shard_that_held_the_winners_last_time_is_asked_for_them_first() {
        let e = engine(10, Some(100), None);
        let mut plan = Arc::try_unwrap(e.plan).unwrap_or_else(|_| unreachable!());
        let mut shares = vec![0.0; 10];
        shares[3] = 1.0;
        plan.learned_shares = Some(shares.into());
        let e = Engine::new(plan, Resume::start(10), Some(100), false);
        assert_eq!(
            e.request_limit(3, 10),
            Some(100),
            "all of them, in one round"
        );
        assert_eq!(
            e.request_limit(0, 10),
            Some(17),
            "the others keep their share"
        );
        // What another shard count learned does not apply.
        let mut plan = Arc::try_unwrap(e.plan).unwrap_or_else(|_| unreachable!());
        plan.learned_shares = Some(vec![1.0; 4].into());
        let e = Engine::new(plan, Resume::start(10), Some(100), false);
        assert_eq!(e.request_limit(0, 10), Some(17));
    }

    /// An engine over `shards` partitions during a layout transition whose previous layout
    /// has the partitions marked `true` in `in_previous` (empty: a GSI query), with `learned`
    /// shares if any.
    fn transition_engine(
        shards: usize,
        in_previous: Vec<bool>,
        limit: Option<usize>,
        page_size: Option<u32>,
        learned: Option<Vec<f64>>,
    ) -> Engine {
        let e = engine(shards, limit, page_size);
        let mut plan = Arc::try_unwrap(e.plan).unwrap_or_else(|_| unreachable!());
        plan.transition = Some(Transition {
            placement: transition::Placement::Declared(|_| None),
            current_partitions: shards,
            base_keys: ("pk", Some("sk")),
            lookup: false,
            move_attribute: crate::keys::schema::MOVE_ATTRIBUTE,
            in_previous,
        });
        plan.learned_shares = learned.map(Into::into);
        Engine::new(plan, Resume::start(shards), limit, false)
    }

    /// 10 -> 20: the first 10 partitions are in both layouts.
    fn ten_to_twenty() -> Vec<bool> {
        (0..20).map(|s| s < 10).collect()
    }

    #[test]
    fn a_transition_asks_where_the_items_sit_and_probes_the_rest() {
        let e = transition_engine(20, ten_to_twenty(), Some(100), None, None);
        // The previous layout's 10 partitions: a steady 10-shard top-100's first request.
        for s in 0..10 {
            assert_eq!(e.request_limit(s, 20), Some(17), "partition {s}");
            assert!(!e.probes(s));
        }
        // Partitions only the new layout has: a probe.
        for s in 10..20 {
            assert_eq!(e.request_limit(s, 20), Some(PROBE_LIMIT), "partition {s}");
            assert!(e.probes(s));
        }
        // Adopting shards over a legacy key: the legacy partition holds everything.
        let legacy: Vec<bool> = (0..11).map(|s| s == 10).collect();
        let e = transition_engine(11, legacy, Some(100), None, None);
        assert_eq!(e.request_limit(10, 11), Some(100));
        assert_eq!(e.request_limit(0, 11), Some(PROBE_LIMIT));
        // A shrinking layout: every partition is the previous layout's, all share alike.
        let e = transition_engine(20, vec![true; 20], Some(100), None, None);
        assert_eq!(e.request_limit(15, 20), Some(10));
    }

    #[test]
    fn without_a_limit_with_a_page_size_or_on_a_gsi_nothing_is_probed() {
        let e = transition_engine(20, ten_to_twenty(), None, None, None);
        assert_eq!(e.request_limit(15, 20), None, "a stream reads pages");
        assert!(!e.probes(15));
        let e = transition_engine(20, ten_to_twenty(), Some(100), Some(100), None);
        assert_eq!(e.request_limit(15, 20), Some(100), "the caller's page size");
        assert!(!e.probes(15));
        // A GSI's partitions do not move with the base layout: the steady share over all.
        let e = transition_engine(20, Vec::new(), Some(100), None, None);
        assert_eq!(e.request_limit(15, 20), Some(10));
        assert!(!e.probes(15));
    }

    #[test]
    fn learned_shares_overrule_the_prior_during_a_transition() {
        // Migrated: every partition supplied its part last time; none is probed.
        let e = transition_engine(20, ten_to_twenty(), Some(100), None, Some(vec![0.05; 20]));
        for s in 0..20 {
            assert_eq!(e.request_limit(s, 20), Some(10), "partition {s}");
        }
        // Items written since the transition on partition 12 only, none left on 4.
        let mut shares = vec![0.1; 20];
        shares[4] = 0.0;
        for share in &mut shares[10..] {
            *share = 0.0;
        }
        shares[12] = 0.1;
        let e = transition_engine(20, ten_to_twenty(), Some(100), None, Some(shares));
        assert_eq!(
            e.request_limit(4, 20),
            Some(PROBE_LIMIT),
            "answered nothing"
        );
        assert_eq!(e.request_limit(12, 20), Some(17), "its share of 10");
        assert_eq!(e.request_limit(15, 20), Some(PROBE_LIMIT));
        // Nothing learned in a steady layout is probed.
        let mut shares = vec![0.0; 10];
        shares[3] = 1.0;
        let e = engine(10, Some(100), None);
        let mut plan = Arc::try_unwrap(e.plan).unwrap_or_else(|_| unreachable!());
        plan.learned_shares = Some(shares.into());
        let e = Engine::new(plan, Resume::start(10), Some(100), false);
        assert_eq!(e.request_limit(0, 10), Some(17));
    }

    #[test]
    fn a_probe_that_found_items_is_refilled_with_its_share() {
        let mut e = transition_engine(20, ten_to_twenty(), Some(100), None, None);
        let first = e.request_limit(15, 20);
        let state = &mut e.shards[15];
        state.last_limit = first;
        state.probed = true;
        state.exhausted = false;
        state.emitted = 1;
        e.shards[0].emitted = 4;
        e.remaining = Some(95);
        // Its fair share of the open partitions (1.5 x 95 / 20 + 2 = 10), not twice 1, nor
        // its share of the 5 items emitted so far (1.5 x 95 / 5 + 2 = 31): one item of five
        // says little.
        assert_eq!(e.request_limit(15, 20), Some(10));
        e.shards[15].emitted = 0;
        assert_eq!(e.request_limit(15, 20), Some(10));
        // Not a probe: doubling, or its share of what was emitted, as before.
        e.shards[15].probed = false;
        assert_eq!(e.request_limit(15, 20), Some(2));
        e.shards[15].emitted = 1;
        assert_eq!(e.request_limit(15, 20), Some(31));
    }

    #[test]
    fn filtered_pages_grow_x4_to_the_bound_whatever_the_merge_needs() {
        let mut e = engine(10, Some(1), None);
        let mut limits = Vec::new();
        let mut limit = e.request_limit(0, 10);
        for _ in 0..7 {
            limits.push(limit.unwrap());
            answered(&mut e, limit, 0, true);
            limit = e.request_limit(0, 10);
        }
        assert_eq!(limits, [1, 4, 16, 64, 256, 1000, 1000]);
        // A page with items ends the growth: back to what the merge can use.
        answered(&mut e, Some(1000), 1, true);
        assert_eq!(e.request_limit(0, 10), Some(1));
    }

    #[test]
    fn page_size_sets_every_request_and_caps_the_growth() {
        let mut e = engine(10, Some(100), Some(100));
        assert_eq!(e.request_limit(0, 10), Some(100), "the old default");
        e.remaining = Some(30);
        assert_eq!(e.request_limit(0, 10), Some(30));
        let mut e = engine(10, Some(1), Some(20));
        answered(&mut e, Some(1), 0, true);
        assert_eq!(e.request_limit(0, 10), Some(4));
        answered(&mut e, Some(4), 0, true);
        assert_eq!(e.request_limit(0, 10), Some(16));
        answered(&mut e, Some(16), 0, true);
        assert_eq!(e.request_limit(0, 10), Some(20));
        // No limit: the page size, or DynamoDB's 1 MB page.
        assert_eq!(engine(10, None, Some(7)).request_limit(0, 10), Some(7));
        assert_eq!(engine(10, None, None).request_limit(0, 10), None);
    }
}
