//! The typed parallel scan of one entity: what `Repo::scan` returns, for exports, backfills and
//! analytics jobs.
//!
//! - **Parallel, bounded.** DynamoDB splits the table into `TotalSegments` segments; each
//!   segment is read page by page (`ExclusiveStartKey` = the previous `LastEvaluatedKey`), at
//!   most `concurrency` segments at a time. No task is spawned: requests run while the stream
//!   is polled, so a slow consumer slows the scan instead of filling memory.
//! - **One entity.** A single table holds other entities: a `FilterExpression` on the entity
//!   attribute returns only this entity's items (DynamoDB still reads, and charges for, the
//!   others).
//! - **Rate limited, if asked.** A shared budget of read units per second (`UnitBudget`),
//!   charged with the `ConsumedCapacity` DynamoDB reports, holds back the next request of
//!   every segment while the budget is spent.
//! - **Honest.** A failed segment ends the scan with [`Error::SegmentFailed`] naming it; a
//!   partial export that looks complete would be worse than none.

use std::marker::PhantomData;
use std::sync::Arc;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use aws_sdk_dynamodb::Client;
use futures::stream::{self, Stream, StreamExt, TryStreamExt};

use crate::access::entity::recognize;
use crate::access::entity::ShardedEntity;
use crate::access::handle::Handle;
use crate::access::options::{scan_setters, ScanOptions};
use crate::access::recognize::{keep_recognised, read_depth, Depth, Recognize};
use crate::access::source::{recognize_projected, ShardedProjection};
use crate::capacity::budget::UnitBudget;
use crate::capacity::units::{item_size, read_units, Consistency};
use crate::capacity::SystemClock;
use crate::error::{Error, QueryRefusal};
use crate::item::Item;
use crate::keys::layout;
use crate::keys::schema::EntitySchema;

/// Segments of a scan unless `.segments(n)` says otherwise: enough to overlap the round trips
/// of a small job without opening many connections.
pub(crate) const DEFAULT_SEGMENTS: u32 = 4;

/// DynamoDB's bound on `TotalSegments`.
pub const MAX_SEGMENTS: u32 = 1_000_000;

/// A parallel scan of every item of entity `E` in the repository's table.
///
/// Built by [`Repo::scan`](crate::Repo::scan), refined, then run with [`stream`](Self::stream),
/// [`collect`](Self::collect) or [`count`](Self::count). DynamoDB splits the table into
/// [`segments`](Self::segments) and each one is read page by page, at most
/// [`concurrency`](Self::concurrency) segments at a time. Items of other entities in the same
/// table are filtered out by DynamoDB (on the table's tag) and never decoded; an item in the
/// entity's partitions that is not the entity's (untagged in a tagged table, keys of another
/// shape or not in canonical form: see [`ForeignReason`](crate::query::ForeignReason)) is
/// skipped and counted in the `sharded.foreign_items` metric, with a `DEBUG` event naming
/// its key.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
/// use futures::TryStreamExt;
///
/// // An export: 8 segments, 4 in flight, at most 200 read units/s on average.
/// let mut scores = repo.scan().segments(8).concurrency(4).read_units_per_second(200.0).stream();
/// while let Some(score) = scores.try_next().await? {
///     println!("{} {}", score.player_id, score.score);
/// }
/// # Ok(()) }
/// ```
///
/// Items come in no particular order: each segment's pages in key order, the segments
/// interleaved as their pages arrive.
///
/// A scan reads items where they are stored: during a layout transition (`previous_n`,
/// `legacy`) an item that was copied to its new shard and not yet removed from its old one
/// comes out twice. Queries return each item once; the migration runner is the tool that
/// moves the previous layout's items.
#[must_use = "a scan does nothing until it is run with stream, collect or count"]
pub struct Scan<E, O = E> {
    handle: Arc<Handle>,
    _entity: PhantomData<fn() -> E>,
    /// Segments, concurrency, page size, read-unit rate: the settings `Migration` shares.
    options: ScanOptions,
    consistent: bool,
    /// How an item becomes an `O`: the entity itself, or a projection.
    decode: fn(Item) -> Result<O, Error>,
    /// Whether an item read is the entity's: its own check, or a projection's.
    recognize: Recognize,
    /// The projected attributes (with the entity attribute), when `O` is a projection.
    projection: Option<&'static [&'static str]>,
}

impl<E, O> std::fmt::Debug for Scan<E, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("table", &self.handle.table())
            .field("options", &self.options)
            .field("consistent", &self.consistent)
            .finish_non_exhaustive()
    }
}

impl<E: ShardedEntity> Scan<E> {
    pub(crate) fn new(handle: Arc<Handle>) -> Self {
        Scan {
            handle,
            _entity: PhantomData,
            options: ScanOptions::default(),
            consistent: false,
            decode: E::from_item,
            recognize: recognize::<E>,
            projection: None,
        }
    }

    /// Returns the projection `P` of each item instead of the whole entity, reading only
    /// `P`'s attributes (a `ProjectionExpression`; DynamoDB charges the same read units, and
    /// the rest never crosses the network): an export of two columns of a wide entity.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity, ShardedProjection};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64, replay: Vec<u8> }
    /// #[derive(ShardedProjection, Deserialize)]
    /// #[projection(of = Score)]
    /// struct ScoreLine { player_id: String, score: u64 }
    ///
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let lines: Vec<ScoreLine> = repo.scan().project::<ScoreLine>().collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn project<P: ShardedProjection<Entity = E>>(self) -> Scan<E, P> {
        Scan {
            handle: self.handle,
            _entity: PhantomData,
            options: self.options,
            consistent: self.consistent,
            decode: P::from_item,
            recognize: recognize_projected::<P>,
            projection: Some(P::ATTRIBUTES),
        }
    }
}

impl<E: ShardedEntity, O> Scan<E, O> {
    scan_setters! {
        demo = "# async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::Error> {",
        start = "let n = repo.scan()",
        run = ".count().await?",
        segments = [
            ///
            /// 4 by default.
        ],
        concurrency = [
            ///
            /// By default as many as there are segments, up to the repository's concurrency
            /// ([`Repo::with_concurrency`](crate::Repo::with_concurrency), 32 unless set).
        ],
        page_size = [
            ///
            /// By default DynamoDB's 1 MB page.
        ],
        read_units_per_second = [
            ///
            /// Unlimited by default. Every request asks for `ConsumedCapacity` and is charged
            /// what DynamoDB reports (items the entity filter drops are read, so they count).
            /// The budget refills at `r` units/s and holds at most one second's worth, saved
            /// while the scan was idle. A segment's next request waits while the budget is
            /// spent; it is then reserved with the cost of the last page, and corrected when
            /// its own cost is known.
            ///
            /// What is promised is the average, not each instant: a request's cost is only
            /// known after it has run, so one response can overshoot the budget, and requests
            /// in flight together can each do so. Over a scan, the units consumed stay within
            /// `r × elapsed seconds + concurrency × one page's units`. To keep each step small,
            /// set [`page_size`](Self::page_size) with it (a 1 MB page costs up to 128 units
            /// eventually consistent). Where the endpoint reports no `ConsumedCapacity`, a
            /// request is charged by the size of the items it returned: a lower bound, since
            /// filtered items are not seen.
        ],
    }

    /// Strongly consistent reads (`ConsistentRead = true`): every item written before the
    /// scan started is seen, at twice the read units. Off by default.
    ///
    /// ```no_run
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::Error> {
    /// let all: Vec<E> = repo.scan().consistent_read(true).collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn consistent_read(mut self, consistent: bool) -> Self {
        self.consistent = consistent;
        self
    }

    /// Every item of the entity, as a stream, decoded as its pages arrive.
    ///
    /// Items come in **no particular order** across segments. Memory is bounded by
    /// `concurrency × one page`: a segment asks for its next page only when the stream has
    /// handed out its current one, so a slow consumer slows the scan rather than buffering
    /// the table. The first error ends the stream: a failed segment ([`Error::SegmentFailed`],
    /// after the SDK's retries), a request DynamoDB refuses as invalid (returned as
    /// [`Error::Dynamo`], the scan's error rather than a segment's), an item that cannot be
    /// decoded, or an invalid setting ([`Error::InvalidQuery`], before any request). Items
    /// already yielded are valid, but the scan is then incomplete: run it again.
    ///
    /// ```no_run
    /// # async fn demo<E: sharded::ShardedEntity + Send + 'static>(repo: &sharded::Repo<E>) -> Result<(), sharded::Error> {
    /// use futures::TryStreamExt;
    /// let mut exported = 0;
    /// let mut items = repo.scan().segments(8).stream();
    /// while let Some(item) = items.try_next().await? {
    ///     // write `item` somewhere
    ///     exported += 1;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(self) -> impl Stream<Item = Result<O, Error>> + Send + 'static
    where
        O: Send + 'static,
    {
        let decode = self.decode;
        self.items()
            .and_then(move |item| std::future::ready(decode(item)))
    }

    /// Runs the scan and returns every item of the entity, in no particular order; the first
    /// error fails it (see [`stream`](Self::stream)).
    ///
    /// Holds the whole result in memory: for large tables, use [`stream`](Self::stream).
    ///
    /// ```no_run
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::Error> {
    /// let all: Vec<E> = repo.scan().collect().await?;
    /// println!("{} items", all.len());
    /// # Ok(()) }
    /// ```
    pub async fn collect(self) -> Result<Vec<O>, Error> {
        let decode = self.decode;
        self.items()
            .and_then(move |item| std::future::ready(decode(item)))
            .try_collect()
            .await
    }

    /// Counts the entity's items over every segment, exactly the items a scan returns: it
    /// reads their keys and tag where the tag tells the entity's items from the rest, whole
    /// items where an untagged item may be the entity's (only the whole item tells). Records
    /// that are not the entity's are not counted; those in its partitions are reported as a
    /// scan reports them (the metric `sharded.foreign_items`, a `DEBUG` event). A failed
    /// segment fails the count.
    ///
    /// The count reads the whole table as a scan does, and costs the same read units (the
    /// rate limit applies).
    ///
    /// ```no_run
    /// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::Error> {
    /// let n: u64 = repo.scan().segments(8).count().await?;
    /// # Ok(()) }
    /// ```
    pub async fn count(self) -> Result<u64, Error> {
        self.pages(true)
            .try_fold(0_u64, |total, page| {
                std::future::ready(Ok::<_, Error>(total.saturating_add(page.count)))
            })
            .await
    }

    /// Every item of the entity as DynamoDB returned it, undecoded: for jobs that rewrite
    /// items whose stored form may not match the struct (a migration).
    pub(crate) fn items(self) -> impl Stream<Item = Result<Item, Error>> + Send + 'static {
        self.pages(false)
            .map_ok(|page| stream::iter(page.items.into_iter().map(Ok)))
            .try_flatten()
    }

    /// The pages of every segment, `concurrency` segments at a time, ended by the first
    /// error; an invalid setting is the only item.
    fn pages(
        self,
        count_only: bool,
    ) -> impl Stream<Item = Result<ScanPage, Error>> + Send + 'static {
        let plan = match self.plan(count_only) {
            Ok(plan) => Arc::new(plan),
            Err(error) => return stream::once(std::future::ready(Err(error))).left_stream(),
        };
        let concurrency = plan.concurrency;
        let segments = stream::iter(0..plan.segments)
            .map(move |segment| segment_pages(Arc::clone(&plan), segment).boxed())
            .flatten_unordered(concurrency);
        until_first_error(segments).right_stream()
    }

    /// Validates the settings into what every request needs.
    fn plan(self, count_only: bool) -> Result<Plan, Error> {
        let checked = self.options.check(self.handle.concurrency())?;
        let span = {
            use crate::telemetry::*;
            tracing::info_span!(
                "sharded.scan",
                { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
                { TABLE_NAMES } = self.handle.table(),
                { ENTITY } = E::SCHEMA.entity,
                { TOTAL_SEGMENTS } = checked.segments,
            )
        };
        Ok(Plan {
            client: self.handle.client().clone(),
            table: self.handle.table().to_owned(),
            entity: E::SCHEMA.entity,
            layout: E::SCHEMA,
            recognize: self.recognize,
            span,
            // What recognition reads besides the projection: the tag and the table's keys.
            projection: self.projection.map(|attributes| {
                let mut all = attributes.to_vec();
                all.extend(E::SCHEMA.tag_attribute());
                all.push(E::SCHEMA.pk.attribute);
                all.extend(E::SCHEMA.sk.map(|sk| sk.attribute));
                let mut seen = std::collections::HashSet::new();
                all.retain(|a| seen.insert(*a));
                all
            }),
            segments: checked.segments,
            concurrency: checked.concurrency,
            consistent: self.consistent,
            page_size: checked.page_size,
            budget: checked
                .read_units_per_second
                .map(|r| UnitBudget::new(r, Arc::new(SystemClock::new()))),
            count_only,
        })
    }
}

/// The settings once checked, in the types DynamoDB takes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Checked {
    segments: u32,
    concurrency: usize,
    page_size: Option<i32>,
    read_units_per_second: Option<f64>,
}

impl ScanOptions {
    /// Refuses what DynamoDB (or the scan itself) could not run, naming the call and the
    /// range; fills the defaults: the segments, and the concurrency from the repository's.
    fn check(self, repo_concurrency: usize) -> Result<Checked, Error> {
        let invalid = |refusal: QueryRefusal| Err(refusal.into());
        let segments = self.segments.unwrap_or(DEFAULT_SEGMENTS);
        if !(1..=MAX_SEGMENTS).contains(&segments) {
            let max = MAX_SEGMENTS;
            return invalid(QueryRefusal::ScanSegments { segments, max });
        }
        let concurrency = match self.concurrency {
            Some(0) => return invalid(QueryRefusal::ScanConcurrency),
            Some(c) => c,
            None => repo_concurrency.clamp(1, segments as usize),
        };
        let page_size = match self.page_size {
            None => None,
            Some(p) => match i32::try_from(p) {
                Ok(limit) if limit > 0 => Some(limit),
                _ => {
                    let (page_size, max) = (p, i32::MAX);
                    return invalid(QueryRefusal::ScanPageSize { page_size, max });
                }
            },
        };
        let read_units_per_second = match self.read_units_per_second {
            Some(r) if !(r.is_finite() && r > 0.0) => {
                return invalid(QueryRefusal::ReadRate { rate: r })
            }
            rate => rate,
        };
        Ok(Checked {
            segments,
            concurrency,
            page_size,
            read_units_per_second,
        })
    }
}

/// Everything the requests of one scan need; fixed for its lifetime.
#[derive(Debug)]
struct Plan {
    client: Client,
    table: String,
    entity: &'static str,
    /// The entity's layout: what tells an item of its partitions from another key's.
    layout: &'static EntitySchema,
    /// The check every item read goes through.
    recognize: Recognize,
    /// The scan's span ([`SCAN_SPAN`](crate::telemetry::SCAN_SPAN)), the parent of its requests.
    span: tracing::Span,
    /// The attributes of a projection, with the entity attribute.
    projection: Option<Vec<&'static str>>,
    segments: u32,
    concurrency: usize,
    consistent: bool,
    page_size: Option<i32>,
    budget: Option<UnitBudget>,
    count_only: bool,
}

/// One page of one segment.
pub(crate) struct ScanPage {
    /// The items (none with `Select = COUNT`).
    pub items: Vec<Item>,
    /// How many items matched the filter on this page.
    pub count: u64,
}

/// The pages of one segment, in order, until DynamoDB returns no `LastEvaluatedKey` or a
/// request fails.
fn segment_pages(
    plan: Arc<Plan>,
    segment: u32,
) -> impl Stream<Item = Result<ScanPage, Error>> + Send + 'static {
    // `Some(start)` while the segment has more (`Some(None)`: from its beginning).
    stream::try_unfold(Some(None), move |next: Option<Option<Item>>| {
        let plan = Arc::clone(&plan);
        async move {
            let Some(start) = next else {
                return Ok(None);
            };
            let page = scan_page(&plan, segment, start);
            let (page, last_evaluated_key) =
                crate::telemetry::within(plan.span.clone(), None, page).await?;
            Ok(Some((page, last_evaluated_key.map(Some))))
        }
    })
}

/// One Scan request of one segment, paced by the budget.
async fn scan_page(
    plan: &Plan,
    segment: u32,
    start: Option<Item>,
) -> Result<(ScanPage, Option<Item>), Error> {
    let reserved = match &plan.budget {
        Some(budget) => budget.acquire().await,
        None => 0.0,
    };
    // Projected attributes go through placeholders (`#a0`, ...) so reserved words work.
    let mut request_names = std::collections::HashMap::new();
    let tag = plan.layout.tag_attribute();
    if let Some(tag) = tag {
        request_names.insert("#et".to_owned(), tag.to_owned());
    }
    // A count reads what recognition needs: the keys and the tag, or whole items where only
    // the whole item tells (`read_depth`).
    let depth = read_depth(plan.layout, plan.count_only, plan.projection.is_some());
    let counted: Vec<&'static str>;
    let attributes = match &plan.projection {
        _ if plan.count_only && depth == Depth::Whole => None,
        _ if plan.count_only => {
            counted = [
                Some(plan.layout.pk.attribute),
                plan.layout.sk.map(|sk| sk.attribute),
                tag,
            ]
            .into_iter()
            .flatten()
            .collect();
            Some(counted.as_slice())
        }
        Some(attributes) => Some(attributes.as_slice()),
        None => None,
    };
    let projection = attributes.map(|attributes| {
        attributes
            .iter()
            .enumerate()
            .map(|(i, attribute)| {
                let placeholder = format!("#a{i}");
                request_names.insert(placeholder.clone(), (*attribute).to_owned());
                placeholder
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
    let request = plan
        .client
        .scan()
        .table_name(&plan.table)
        // Both fit in i32: `plan` checked segments <= MAX_SEGMENTS.
        .segment(segment as i32)
        .total_segments(plan.segments as i32)
        // Single-table: other entities' items stay on the server (DynamoDB applies the filter
        // after reading, and charges for what it read); untagged ones come back to be
        // recognised. A table without a tag has nothing to filter by.
        .set_filter_expression(tag.map(|_| "#et = :et OR attribute_not_exists(#et)".to_owned()))
        .set_expression_attribute_names((!request_names.is_empty()).then_some(request_names))
        .set_expression_attribute_values(tag.map(|_| {
            std::collections::HashMap::from([(
                ":et".to_owned(),
                AttributeValue::S(plan.entity.to_owned()),
            )])
        }))
        .set_projection_expression(projection)
        .set_consistent_read(plan.consistent.then_some(true))
        .set_limit(plan.page_size)
        .set_exclusive_start_key(start)
        .set_return_consumed_capacity(plan.budget.as_ref().map(|_| ReturnConsumedCapacity::Total));
    // The request span (`telemetry`) carries the segment and the counts.
    let output = match request.send().await {
        Ok(output) => output,
        Err(error) => {
            if let Some(budget) = &plan.budget {
                // A refused request reads nothing.
                budget.settle(reserved, 0.0);
            }
            let error = Error::dynamo("Scan", &plan.table, error);
            return Err(segment_failed(plan, segment, error));
        }
    };
    if let Some(budget) = &plan.budget {
        let consistency = Consistency::of_consistent_read(plan.consistent);
        let used = output
            .consumed_capacity
            .as_ref()
            .and_then(|c| c.capacity_units)
            .unwrap_or_else(|| {
                let bytes: usize = output.items().iter().map(item_size).sum();
                read_units(bytes as u64, consistency)
            });
        budget.settle(reserved, used);
    }
    // Every item is recognised: the entity's kept, another entity's or another key's left
    // out, a foreign one in the entity's partitions skipped and counted (the scan reads every
    // record of the table; only those are the entity's to report).
    let in_partitions = |item: &Item| {
        item.get(plan.layout.pk.attribute)
            .and_then(|v| v.as_s().ok())
            .and_then(|pk| layout::locate(plan.entity, &plan.layout.pk, pk))
            .is_some()
    };
    let (items, _foreign) = keep_recognised(
        output.items.unwrap_or_default(),
        depth,
        plan.recognize,
        plan.layout,
        in_partitions,
    );
    let page = ScanPage {
        count: items.len() as u64,
        items,
    };
    Ok((page, output.last_evaluated_key))
}

/// A failed request as the scan reports it: what every segment would meet alike (an invalid
/// request, a table that does not exist) is the scan's error; anything else names the segment.
fn segment_failed(plan: &Plan, segment: u32, error: Error) -> Error {
    if error.is_validation() || error.is_missing_table() {
        return error;
    }
    Error::SegmentFailed {
        segment,
        segments: plan.segments,
        table: plan.table.clone(),
        source: Box::new(error),
    }
}

/// Ends `stream` after its first error: the other segments are dropped (their requests
/// cancelled) instead of being read for an answer that is already incomplete.
fn until_first_error<T>(
    stream: impl Stream<Item = Result<T, Error>>,
) -> impl Stream<Item = Result<T, Error>> {
    stream.scan(false, |failed, item| {
        let next = if *failed {
            None
        } else {
            *failed = item.is_err();
            Some(item)
        };
        std::future::ready(next)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(segments: u32) -> ScanOptions {
        ScanOptions {
            segments: Some(segments),
            ..ScanOptions::default()
        }
    }

    fn refusal(settings: ScanOptions) -> QueryRefusal {
        match settings.check(32) {
            Err(Error::InvalidQuery(refusal)) => refusal,
            other => panic!("expected InvalidQuery, got {other:?}"),
        }
    }

    #[test]
    fn segments_are_dynamodbs_1_to_1_000_000() {
        assert_eq!(settings(1).check(32).unwrap().segments, 1);
        assert_eq!(
            settings(MAX_SEGMENTS).check(32).unwrap().segments,
            1_000_000
        );
        let max = MAX_SEGMENTS;
        assert_eq!(
            refusal(settings(0)),
            QueryRefusal::ScanSegments { segments: 0, max }
        );
        assert!(refusal(settings(0))
            .to_string()
            .starts_with("segments(0): DynamoDB splits a scan into 1 to 1000000"));
        assert_eq!(
            refusal(settings(1_000_001)),
            QueryRefusal::ScanSegments {
                segments: 1_000_001,
                max
            }
        );
    }

    #[test]
    fn concurrency_defaults_to_the_segments_up_to_the_repositorys() {
        assert_eq!(settings(4).check(32).unwrap().concurrency, 4);
        assert_eq!(settings(100).check(32).unwrap().concurrency, 32);
        assert_eq!(settings(4).check(0).unwrap().concurrency, 1);
        let mut set = settings(4);
        set.concurrency = Some(64);
        assert_eq!(
            set.check(32).unwrap().concurrency,
            64,
            "the caller's choice"
        );
        set.concurrency = Some(0);
        assert_eq!(refusal(set), QueryRefusal::ScanConcurrency);
        assert!(refusal(set).to_string().starts_with("concurrency(0)"));
    }

    #[test]
    fn page_size_and_rate_must_be_something_dynamodb_and_a_clock_can_use() {
        let mut set = settings(4);
        set.page_size = Some(i32::MAX as u32);
        assert_eq!(set.check(32).unwrap().page_size, Some(i32::MAX));
        for p in [0, i32::MAX as u32 + 1, u32::MAX] {
            set.page_size = Some(p);
            let max = i32::MAX;
            assert_eq!(
                refusal(set),
                QueryRefusal::ScanPageSize { page_size: p, max }
            );
        }
        let mut set = settings(4);
        set.read_units_per_second = Some(0.5);
        assert_eq!(set.check(32).unwrap().read_units_per_second, Some(0.5));
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            set.read_units_per_second = Some(r);
            assert!(
                matches!(refusal(set), QueryRefusal::ReadRate { rate } if rate.to_bits() == r.to_bits())
            );
        }
    }
}
