//! Range queries over time-bucketed partition keys: every item whose time lies in `[from, to)`,
//! bucket after bucket, each bucket a scatter-gather over its shards.
//!
//! An entity keyed `#[pk(template = "OPS#{at:day}", shard = "random", n = 4)]` with
//! `#[sk(template = "{at}#{id}")]` writes each day into its own four partitions. The generated
//! `Ops::query_range(&repo, from, to)` returns a [`RangeQuery`]; this module runs it:
//!
//! - **Buckets** are the ones that intersect `[from, to)`, walked lazily in time order (newest
//!   first with `.descending()`); inside a bucket the scatter-gather engine merges the shards
//!   in sort-key order, and since the sort key starts with the bucketed time (the derive
//!   requires it), bucket after bucket is global time order.
//! - **Edge buckets are cut on the sort key.** The first bucket gets `sk >= <prefix><from>`,
//!   the last `sk < <prefix><to>`, a bucket holding both `BETWEEN` the two: no item outside
//!   the range is returned. When the time ends the sort-key template (`{at}`), `BETWEEN` is
//!   closed and would include an item at exactly `to`; such an item (at most one per shard
//!   and key) is dropped here, and counted out of `count`.
//! - **Read-ahead, bounded.** A window of `W = max(1, concurrency / shards)` buckets is in
//!   flight at once: the current bucket, and the first pages of the next ones, fetched
//!   concurrently while the current bucket is emitted. Each bucket has at most one request per
//!   shard in flight, so requests in flight never exceed the repository's concurrency. With a
//!   limit, the window opens only once the current bucket's fetched items cannot cover what
//!   is still needed, and only as wide as the items per bucket seen so far say is needed
//!   (with half again as margin); nothing more is fetched once the limit is met.
//! - **One cursor** across buckets and shards: the bucket label and the position of that
//!   bucket's scatter-gather (format version 5, documented on [`Cursor`]).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use futures::future::Either;
use futures::stream::{self, FuturesUnordered, StreamExt, TryStreamExt};
use futures::Stream;

use crate::access::engine::cursor::{self, Cursor, CursorError, Resume};
use crate::access::engine::description::{Description, KeyShape, QueryShape};
use crate::access::engine::scatter::Engine;
use crate::access::entity::ShardedEntity;
use crate::access::handle::Handle;
use crate::access::options::{read_setters, ReadOptions};
use crate::access::read::query::{Page, Query, STREAM_PAGE_ITEMS};
use crate::access::sort_condition::SortCondition;
use crate::access::sort_condition::{sort_key_condition, SortOp};
use crate::error::foreign::Foreign;
use crate::error::{Error, KeyError, QueryRefusal};
use crate::item::Item;
use crate::keys::bucket::Granularity;
use crate::keys::bucket::{buckets_in_range, Bucket, BucketRange};
use crate::keys::encoding::{KeyPart, KeyPartError};
use crate::keys::generated::RangeBound;
use crate::keys::schema::{PartitionKeySchema, PreviousLayout, ShardSuffix, SortKeySchema};
use crate::keys::shards::{Partitions, ShardKeys};
use crate::keys::template::{build_around_bucket, build_key_prefix, KeyContext, Segment};

/// Items with their bucketed time in `[from, to)`, read bucket after bucket over every shard:
/// what the generated `<query>_range` functions return for a time-bucketed partition key.
///
/// ```no_run
/// use serde::{Deserialize, Serialize};
/// use sharded::{Error, Repo, ShardedEntity};
///
/// // `at` in epoch seconds; a chrono `DateTime<Utc>` or `NaiveDate` works the same way.
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
/// #[sk(template = "{at}#{id}")]
/// struct OpsEntry { at: i64, id: String, agent: String }
///
/// # async fn demo(repo: &Repo<OpsEntry>, now: i64) -> Result<(), Error> {
/// let from = now - 3 * 86_400;
/// // The last three days, newest first: 3 or 4 day buckets x 4 shards, merged.
/// let latest: Vec<OpsEntry> = OpsEntry::query_range(repo, from, now)
///     .descending()
///     .limit(50)
///     .collect()
///     .await?;
/// // Per day: `[("2026-11-19", 1204), ("2026-11-20", 1876), ...]`.
/// let per_day = OpsEntry::query_range(repo, from, now).count_by_bucket().await?;
/// # Ok(()) }
/// ```
///
/// # What is read
///
/// Every bucket that intersects `[from, to)`, each over all its shards. Items come back in the
/// order of the sort key, which starts with the bucketed time: time order across buckets,
/// shards merged inside each. The first and last buckets carry a sort-key condition, so only
/// items with `from <= time < to` are returned.
///
/// # Cost
///
/// - Each bucket costs at least one Query per shard, **an empty bucket too** (DynamoDB bills
///   at least 0.5 read units per Query): a 90-day range over day buckets and 4 shards is at
///   least 360 Queries. Choose the granularity so that a bucket holds a useful number of
///   items for the ranges you read; `count` and `count_by_bucket` show how they are filled.
/// - Buckets are not walked one after another: a window of `W = max(1, concurrency /
///   shards)` buckets (`Repo::with_concurrency`, default 32: eight buckets of four shards) is
///   read concurrently, the current bucket being emitted while the first pages of the next
///   ones arrive. A bucket has at most one request per shard in flight, so the requests in
///   flight never exceed the repository's concurrency, and a 90-day range never sends 90 x n
///   requests at once.
/// - With a [`limit`](Self::limit), the next buckets are read ahead only once the current
///   one's fetched items cannot cover what is still needed, and only as many as the items per
///   bucket seen so far say are needed (with half again as margin); nothing more is sent once
///   the limit is met: the newest 50 entries of a busy day cost about one Query per shard.
///
/// Consistency, filters on the entity attribute and per-shard `Limit` sizing are those of
/// [`Query`]: inside a bucket this is exactly the scatter-gather query of that bucket.
#[must_use = "a range query does nothing until it is run with collect, stream, page or count"]
pub struct RangeQuery<E> {
    handle: Arc<Handle>,
    _entity: PhantomData<fn() -> E>,
    index: Option<u8>,
    /// The range, or why it cannot run (reported when it runs).
    range: Result<Range, Error>,
    /// Limit, order, page size, consistency, cursor seal: the settings `Query` shares.
    options: ReadOptions,
}

/// A key part that is already encoded.
struct Encoded<'a>(&'a str);

impl KeyPart for Encoded<'_> {
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        out.push_str(self.0);
        Ok(())
    }
}

/// Everything fixed about a range: where its buckets are and how their edges are cut.
#[derive(Debug, Clone)]
struct Range {
    granularity: Granularity,
    /// The logical partition key before and after the bucket label.
    before: String,
    after: String,
    shards: Option<u32>,
    /// How the queried key spells its shards.
    suffix: ShardSuffix,
    /// The partitions of one bucket a query reads: the shards, and during a resharding
    /// (`previous_n`) the previous layout's other shards too. A cursor records one position
    /// per partition read.
    partitions_read: usize,
    /// `from` and `to` as (epoch seconds, sub-second nanoseconds).
    from: (i64, u32),
    to: (i64, u32),
    /// `from` and `to` encoded as the time field is in the sort key.
    from_key: String,
    to_key: String,
    sk: SortKeySchema,
    /// The sort key's segment holding the time field, and whether it ends the template.
    at_segment: usize,
    ends_sort_key: bool,
    /// `from == to`: nothing to read.
    empty: bool,
    /// The name of the time field, for messages.
    field: &'static str,
}

impl<E: ShardedEntity> RangeQuery<E> {
    /// The range query of the generated `<query>_range` functions (see `__private`): the
    /// partition key of `index` (`None`: the table's), its fields other than the bucketed one
    /// (`fields`, in template order), and the bounds.
    pub(crate) fn new(
        handle: Arc<Handle>,
        index: Option<u8>,
        fields: &[&dyn KeyPart],
        from: RangeBound,
        to: RangeBound,
    ) -> Self {
        RangeQuery {
            handle,
            _entity: PhantomData,
            index,
            range: Range::new::<E>(index, fields, from, to),
            options: ReadOptions::default(),
        }
    }
}

/// The previous layout's keys of a bucket's logical key during a resharding (`previous_n`)
/// of the base table's `pk`, read with its current keys.
fn previous_keys(logical: String, pk: Option<&PartitionKeySchema>) -> Option<ShardKeys> {
    let pk = pk?;
    match pk.previous {
        Some(PreviousLayout::Shards { n, .. }) => {
            Some(ShardKeys::new(logical, Some(n)).with_suffix(pk.previous_suffix()))
        }
        _ => None,
    }
}

/// The partitions a bucket's query reads, as [`Partitions::all`] lists them: the current
/// shards, then the previous layout's other shards during a resharding.
fn bucket_partitions(key: &PartitionKeySchema, base: Option<&PartitionKeySchema>) -> usize {
    let bucket = "B".to_owned();
    Partitions::new(
        ShardKeys::new(bucket.clone(), key.sharding.shard_count()).with_suffix(key.suffix),
        previous_keys(bucket, base),
    )
    .all()
    .len()
}

impl Range {
    fn new<E: ShardedEntity>(
        index: Option<u8>,
        fields: &[&dyn KeyPart],
        from: RangeBound,
        to: RangeBound,
    ) -> Result<Range, Error> {
        let schema = E::SCHEMA;
        let (pk, sk) = match index {
            None => (schema.pk, schema.sk),
            Some(number) => {
                let gsi = schema.gsi(number).ok_or(QueryRefusal::NoGsi {
                    entity: schema.entity,
                    number,
                })?;
                (gsi.pk, gsi.sk)
            }
        };
        let not_bucketed = || QueryRefusal::NotBucketed {
            entity: schema.entity,
            attribute: pk.attribute,
            template: pk.template.source,
        };
        let (_, field, granularity) = pk.template.bucket().ok_or_else(not_bucketed)?;
        let sk = sk.ok_or_else(not_bucketed)?;
        let (at_segment, first) = sk
            .template
            .segments
            .iter()
            .enumerate()
            .find(|(_, s)| !matches!(s, Segment::Literal(_)))
            .ok_or_else(not_bucketed)?;
        if *first != Segment::Field(field) {
            return Err(not_bucketed().into());
        }
        let pk_ctx = KeyContext {
            entity: schema.entity,
            attribute: pk.attribute,
        };
        let (before, after) = build_around_bucket(pk_ctx, pk.template, fields)?;
        let bound = |b: RangeBound| -> Result<((i64, u32), String), Error> {
            let unencodable = |reason: String| {
                Error::Key(KeyError::Unencodable {
                    entity: schema.entity,
                    attribute: pk.attribute,
                    field,
                    reason,
                })
            };
            let (seconds, key) = b.into_parts();
            let seconds = seconds.map_err(|e| unencodable(e.to_string()))?;
            let key = key.map_err(|e| match e {
                KeyPartError::Empty => Error::Key(KeyError::EmptyValue {
                    entity: schema.entity,
                    attribute: sk.attribute,
                    field,
                }),
                KeyPartError::Invalid(reason) => unencodable(reason),
            })?;
            Ok((seconds, key))
        };
        let (from, from_key) = bound(from)?;
        let (to, to_key) = bound(to)?;
        // Keys sort as their values do: comparing the encodings compares the times exactly.
        if from_key > to_key {
            let (from, to) = (from_key, to_key);
            return Err(QueryRefusal::BoundsReversed { field, from, to }.into());
        }
        Ok(Range {
            granularity,
            before,
            after,
            shards: pk.sharding.shard_count(),
            suffix: pk.suffix,
            partitions_read: bucket_partitions(&pk, index.is_none().then_some(&schema.pk)),
            empty: from_key == to_key,
            from,
            to,
            from_key,
            to_key,
            sk,
            at_segment,
            ends_sort_key: at_segment + 1 == sk.template.segments.len(),
            field,
        })
    }

    /// The partitions one bucket's query reads (see `partitions_read`).
    fn partitions_read(&self) -> usize {
        self.partitions_read.max(1)
    }

    /// The end of the range in whole seconds: the first second no item of the range starts
    /// in (`to` itself, or the second after it when `to` has a sub-second part).
    fn end_second(&self) -> i64 {
        let (seconds, nanos) = self.to;
        seconds.saturating_add(i64::from(nanos > 0))
    }

    /// Every bucket of the range, in the query's order.
    fn buckets(&self, descending: bool) -> BucketRange {
        if self.empty {
            return buckets_in_range(self.granularity, 0, 0, descending);
        }
        buckets_in_range(self.granularity, self.from.0, self.end_second(), descending)
    }

    /// The buckets from `bucket` (a cursor's) to the end of the range, in the query's order,
    /// or `None` when `bucket` is not in the range.
    fn buckets_from(&self, bucket: &Bucket, descending: bool) -> Option<BucketRange> {
        let end = self.end_second();
        let inside = !self.empty
            && bucket.granularity() == self.granularity
            && bucket.start() < end
            && bucket.end() > self.from.0;
        if !inside {
            return None;
        }
        Some(if descending {
            buckets_in_range(self.granularity, self.from.0, end.min(bucket.end()), true)
        } else {
            buckets_in_range(
                self.granularity,
                self.from.0.max(bucket.start()),
                end,
                false,
            )
        })
    }

    /// The sort key of an item whose time is the encoded `value`, cut after the time field:
    /// `<literal prefix><value>`.
    fn sort_prefix(&self, ctx: KeyContext, value: &str) -> Result<String, KeyError> {
        build_key_prefix(
            ctx,
            self.sk.template,
            &[&Encoded(value)],
            self.at_segment + 1,
        )
    }

    /// The sort-key condition of `bucket`, and the one sort key to drop from its answer, if
    /// any: the first bucket starts at `from`, the last ends before `to`.
    fn condition(
        &self,
        entity: &'static str,
        bucket: &Bucket,
    ) -> Result<(Option<SortCondition>, Option<String>), KeyError> {
        let ctx = KeyContext {
            entity,
            attribute: self.sk.attribute,
        };
        let lower = bucket.start() <= self.from.0;
        let upper = self.to.0 < bucket.end();
        let one_sided = |op: SortOp<'_>| {
            let (_, _, condition) = sort_key_condition(ctx, self.sk.template, &[], op).into_parts();
            condition.map(Some)
        };
        Ok(match (lower, upper) {
            (false, false) => (None, None),
            (true, false) => (one_sided(SortOp::Ge(&Encoded(&self.from_key)))?, None),
            (false, true) => (one_sided(SortOp::Lt(&Encoded(&self.to_key)))?, None),
            (true, true) => {
                let low = self.sort_prefix(ctx, &self.from_key)?;
                let high = self.sort_prefix(ctx, &self.to_key)?;
                // With a field after the time, `<prefix><to>` is never a key (keys of `to`
                // continue with `#`): `BETWEEN` is exact. When the time ends the sort key, it
                // is the key of an item at exactly `to`, which `BETWEEN` includes: drop it.
                let skip = self.ends_sort_key.then(|| high.clone());
                (Some(SortCondition::Between(low, high)), skip)
            }
        })
    }

    /// The description of a range query's cursors (see [`Cursor`], "The query
    /// description"): kind `range`, with the range as its key. A range query has no filter
    /// and no projection; its expired items are hidden as a query's are (by the entity's
    /// `ttl` field, when it has one), and during a resharding (`previous_n`) of the table's
    /// key its layout is the transition.
    fn description(
        &self,
        entity: &str,
        index: &str,
        descending: bool,
        expiry: Option<&str>,
        layout: &str,
    ) -> Result<Description, Error> {
        QueryShape {
            entity,
            index,
            key: KeyShape::Buckets {
                before: &self.before,
                after: &self.after,
                granularity: self.granularity.name(),
                from: &self.from_key,
                to: &self.to_key,
            },
            sort: None,
            filter: None,
            projection: None,
            descending,
            expiry,
            layout,
        }
        .describe()
    }
}

/// What builds one bucket's query: shared by the walk, the counts and the pages.
struct Spec<E> {
    handle: Arc<Handle>,
    _entity: PhantomData<fn() -> E>,
    index: Option<u8>,
    range: Range,
    descending: bool,
    page_size: Option<u32>,
    consistent: bool,
}

impl<E> Clone for Spec<E> {
    fn clone(&self) -> Self {
        Spec {
            handle: Arc::clone(&self.handle),
            _entity: PhantomData,
            index: self.index,
            range: self.range.clone(),
            descending: self.descending,
            page_size: self.page_size,
            consistent: self.consistent,
        }
    }
}

impl<E: ShardedEntity> Spec<E> {
    /// The scatter-gather query of one bucket, and the sort key to drop from its answer.
    fn bucket_query(&self, bucket: &Bucket) -> Result<(Query<E>, Option<String>), Error> {
        let range = &self.range;
        let mut logical = String::with_capacity(range.before.len() + 16 + range.after.len());
        logical.push_str(&range.before);
        bucket.write_label(&mut logical);
        logical.push_str(&range.after);
        // During a resharding (`previous_n`), a bucket's previous shards are read too, and
        // each item comes out once (see `scatter`, "Layout transitions").
        let previous = previous_keys(
            logical.clone(),
            self.index.is_none().then_some(&E::SCHEMA.pk),
        );
        let partitions = Partitions::new(
            ShardKeys::new(logical, range.shards).with_suffix(range.suffix),
            previous,
        );
        let mut query = Query::new(Arc::clone(&self.handle), self.index, Ok(partitions))
            .consistent_read(self.consistent);
        let (condition, skip) = range.condition(E::SCHEMA.entity, bucket)?;
        if let Some(condition) = condition {
            query = query.with_sort_condition(condition);
        }
        if self.descending {
            query = query.descending();
        }
        if let Some(p) = self.page_size {
            query = query.page_size(p);
        }
        Ok((query, skip))
    }

    /// The items of `bucket` in the range (counted on every shard).
    async fn count_bucket(&self, bucket: Bucket) -> Result<(String, u64), Error> {
        let (query, skip) = self.bucket_query(&bucket)?;
        let mut count = query.count().await?;
        if let Some(skip) = skip {
            // `BETWEEN` counted the items at exactly `to` as well.
            let (query, _) = self.bucket_query(&bucket)?;
            let at_to = query.with_sort_condition(SortCondition::Between(skip.clone(), skip));
            count = count.saturating_sub(at_to.count().await?);
        }
        Ok((bucket.label(), count))
    }

    /// Buckets read at once: `max(1, concurrency / shards)`, so that requests in flight (at
    /// most one per shard and bucket) stay within the repository's concurrency.
    fn window(&self) -> usize {
        (self.handle.concurrency() / self.range.partitions_read()).max(1)
    }
}

type Prefetch = Pin<Box<dyn Future<Output = (u64, Engine, Result<(), Error>)> + Send>>;

/// A bucket whose engine is started: its first pages are being fetched, or have arrived.
struct Started {
    seq: u64,
    bucket: Bucket,
    skip: Option<String>,
}

/// The bucket being emitted.
struct Current {
    bucket: Bucket,
    skip: Option<String>,
    engine: Engine,
    /// Items of this bucket returned so far.
    emitted: usize,
}

/// A running range query: the buckets not started yet, the window of started ones, and the
/// one being emitted.
struct Walk<E> {
    spec: Spec<E>,
    buckets: BucketRange,
    /// Where the first bucket resumes (from a cursor).
    resume: Option<Resume>,
    width: usize,
    limit: Option<usize>,
    emitted: usize,
    /// Buckets finished, and the items they gave: what a limit's read-ahead is sized by.
    finished_buckets: usize,
    finished_items: usize,
    next_seq: u64,
    current: Option<Current>,
    started: VecDeque<Started>,
    arrived: HashMap<u64, (Engine, Result<(), Error>)>,
    pending: FuturesUnordered<Prefetch>,
    /// The foreign items the engines of finished buckets skipped.
    foreign: Foreign,
}

impl<E: ShardedEntity> Walk<E> {
    fn new(
        spec: Spec<E>,
        buckets: BucketRange,
        resume: Option<Resume>,
        limit: Option<usize>,
    ) -> Self {
        Walk {
            width: spec.window(),
            spec,
            buckets,
            resume,
            limit,
            emitted: 0,
            finished_buckets: 0,
            finished_items: 0,
            next_seq: 0,
            current: None,
            started: VecDeque::new(),
            arrived: HashMap::new(),
            pending: FuturesUnordered::new(),
            foreign: Foreign::default(),
        }
    }

    /// The foreign items the buckets read so far skipped.
    fn foreign(&self) -> Foreign {
        let mut foreign = self.foreign.clone();
        if let Some(current) = &self.current {
            foreign.merge(current.engine.foreign().clone());
        }
        foreign
    }

    fn remaining(&self) -> Option<usize> {
        self.limit.map(|l| l.saturating_sub(self.emitted))
    }

    /// How many buckets may be in flight now: the whole window without a limit. With one,
    /// only the current bucket while its fetched items cover what is still needed; otherwise
    /// as many more as the buckets read so far say are needed (their items per bucket, with
    /// half again as margin), up to the window.
    fn allowed(&self) -> usize {
        let (remaining, current) = match (self.remaining(), &self.current) {
            (None, _) => return self.width,
            (Some(_), None) => return 1,
            (Some(remaining), Some(current)) => (remaining, current),
        };
        let buffered = current.engine.buffered();
        if buffered >= remaining {
            return 1;
        }
        let yielded = self.finished_items + current.emitted + buffered;
        let per_bucket = (yielded / (self.finished_buckets + 1)).max(1);
        let more = ((remaining - buffered) * 3).div_ceil(per_bucket * 2);
        more.saturating_add(1).min(self.width)
    }

    /// Starts the next buckets, up to the window: each fetches its first page of every shard.
    fn top_up(&mut self) -> Result<(), Error> {
        while usize::from(self.current.is_some()) + self.started.len() < self.allowed() {
            let Some(bucket) = self.buckets.next() else {
                return Ok(());
            };
            let (query, skip) = self.spec.bucket_query(&bucket)?;
            let mut engine = query.bucket_engine(self.resume.take(), self.remaining())?;
            let seq = self.next_seq;
            self.next_seq += 1;
            self.pending.push(Box::pin(async move {
                let result = engine.prefetch().await;
                (seq, engine, result)
            }));
            self.started.push_back(Started { seq, bucket, skip });
        }
        Ok(())
    }

    /// The next item in the range and the bucket it came from, or `None` at the end (or at the
    /// limit).
    async fn next(&mut self) -> Result<Option<(Bucket, Item)>, Error> {
        loop {
            if self.remaining() == Some(0) {
                return Ok(None);
            }
            self.top_up()?;
            let Some(current) = &mut self.current else {
                let Some(next) = self.started.pop_front() else {
                    return Ok(None);
                };
                let engine = wait_for(&mut self.pending, &mut self.arrived, next.seq).await?;
                self.current = Some(Current {
                    bucket: next.bucket,
                    skip: next.skip,
                    engine,
                    emitted: 0,
                });
                continue;
            };
            match drive(&mut current.engine, &mut self.pending, &mut self.arrived).await? {
                Some(item) => {
                    let sk = self.spec.range.sk.attribute;
                    let at_to = match (&current.skip, item.get(sk)) {
                        (Some(skip), Some(AttributeValue::S(key))) => key == skip,
                        _ => false,
                    };
                    if at_to {
                        continue;
                    }
                    self.emitted += 1;
                    current.emitted += 1;
                    return Ok(Some((current.bucket, item)));
                }
                None if !current.engine.is_complete() => {
                    // The engine met its own limit, which counted items dropped at `to`:
                    // resume this bucket where it stands for what is still needed.
                    let remaining = self.limit.map(|l| l.saturating_sub(self.emitted));
                    let (query, _) = self.spec.bucket_query(&current.bucket)?;
                    let positions = current.engine.positions();
                    let finished = std::mem::replace(
                        &mut current.engine,
                        query.bucket_engine(Some(positions), remaining)?,
                    );
                    self.foreign.merge(finished.foreign().clone());
                }
                None => {
                    self.finished_buckets += 1;
                    self.finished_items += current.emitted;
                    self.foreign.merge(current.engine.foreign().clone());
                    self.current = None;
                }
            }
        }
    }

    /// Where a page that ended here resumes: the current bucket's position, or the start of
    /// the next bucket when the current one is finished; `None` when nothing follows.
    async fn cursor_position(&mut self) -> Result<Option<(Bucket, Resume)>, Error> {
        if let Some(current) = &mut self.current {
            current.engine.settle().await?;
            if !current.engine.is_complete() {
                return Ok(Some((current.bucket, current.engine.positions())));
            }
        }
        let next = match self.started.front() {
            Some(started) => Some(started.bucket),
            None => self.buckets.next(),
        };
        let shards = self.spec.range.partitions_read();
        Ok(next.map(|bucket| (bucket, Resume::start(shards))))
    }
}

/// The engine of started bucket `seq`, once its first pages are in.
async fn wait_for(
    pending: &mut FuturesUnordered<Prefetch>,
    arrived: &mut HashMap<u64, (Engine, Result<(), Error>)>,
    seq: u64,
) -> Result<Engine, Error> {
    loop {
        if let Some((engine, result)) = arrived.remove(&seq) {
            result?;
            return Ok(engine);
        }
        match pending.next().await {
            Some((done, engine, result)) => {
                arrived.insert(done, (engine, result));
            }
            None => {
                return Err(Error::Bug(format!(
                    "range query: bucket {seq} was never started"
                )))
            }
        }
    }
}

/// The current bucket's next item, while the buckets read ahead keep fetching.
///
/// The read-ahead is polled first, on every item: a bucket started since the last item sends
/// its requests now, not only when the current bucket next waits for DynamoDB.
async fn drive(
    engine: &mut Engine,
    pending: &mut FuturesUnordered<Prefetch>,
    arrived: &mut HashMap<u64, (Engine, Result<(), Error>)>,
) -> Result<Option<Item>, Error> {
    let next = engine.next_item();
    futures::pin_mut!(next);
    loop {
        if pending.is_empty() {
            return next.await;
        }
        match futures::future::select(pending.next(), next.as_mut()).await {
            Either::Left((Some((seq, engine, result)), _)) => {
                arrived.insert(seq, (engine, result));
            }
            Either::Left((None, _)) => return next.await,
            Either::Right((item, _)) => return item,
        }
    }
}

impl<E: ShardedEntity> RangeQuery<E> {
    read_setters! {
        demo = "# async fn demo<E: sharded::ShardedEntity>(q: sharded::query::RangeQuery<E>) -> Result<(), sharded::Error> {",
        limit = [],
        descending = [
            ///
            /// Newest first: the last bucket first, each bucket's items by descending sort key.
        ],
        page_size = [
            ///
            /// Per-shard `Limit` sizing is [`Query::page_size`]'s; a bucket's first pages use it
            /// too.
        ],
        consistent_read = [],
        seal_cursors = [],
    }

    fn spec(&mut self) -> Result<Spec<E>, Error> {
        let range = std::mem::replace(
            &mut self.range,
            Err(Error::Bug("a range query runs once".to_owned())),
        )?;
        Ok(Spec {
            handle: Arc::clone(&self.handle),
            _entity: PhantomData,
            index: self.index,
            range,
            descending: self.options.descending,
            page_size: self.options.page_size,
            consistent: self.options.consistent,
        })
    }

    fn walk(&mut self) -> Result<Walk<E>, Error> {
        let spec = self.spec()?;
        let buckets = spec.range.buckets(self.options.descending);
        Ok(Walk::new(spec, buckets, None, self.options.limit))
    }

    /// Every item of the range (up to the limit), in the query's order.
    ///
    /// ```no_run
    /// # use sharded::{Error, query::RangeQuery, ShardedEntity};
    /// # async fn demo<E: ShardedEntity>(range: RangeQuery<E>) -> Result<(), Error> {
    /// let items: Vec<E> = range.collect().await?;
    /// # Ok(()) }
    /// ```
    pub async fn collect(mut self) -> Result<Vec<E>, Error> {
        let mut walk = self.walk()?;
        let mut items = Vec::with_capacity(self.options.limit.unwrap_or(0).min(1024));
        while let Some((_, item)) = walk.next().await? {
            items.push(E::from_item(item)?);
        }
        Ok(items)
    }

    /// The items as a stream, in the query's order, fetching as the stream is read. The first
    /// error ends the stream.
    ///
    /// Memory is bounded by the window: at most `W` buckets of one page per shard. Without a
    /// limit or a [`page_size`](Self::page_size), each request asks for
    /// [`STREAM_PAGE_ITEMS`] items, as [`Query::stream`] does.
    ///
    /// ```no_run
    /// # use futures::TryStreamExt;
    /// # use sharded::{Error, query::RangeQuery, ShardedEntity};
    /// # async fn demo<E: ShardedEntity + Send + 'static>(range: RangeQuery<E>) -> Result<(), Error> {
    /// let mut items = std::pin::pin!(range.stream());
    /// while let Some(item) = items.try_next().await? {
    ///     // ...
    /// #   let _ = item;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(mut self) -> impl Stream<Item = Result<E, Error>> + Send + 'static
    where
        E: Send + 'static,
    {
        if self.options.limit.is_none() && self.options.page_size.is_none() {
            self.options.page_size = Some(STREAM_PAGE_ITEMS);
        }
        let walk = self.walk();
        stream::try_unfold(Some(walk), move |state| async move {
            let mut walk = match state {
                None => return Ok(None),
                Some(walk) => walk?,
            };
            match walk.next().await? {
                Some((_, item)) => Ok(Some((E::from_item(item)?, Some(Ok(walk))))),
                None => Ok(None),
            }
        })
    }

    /// One page of `size` items after `cursor` (from the start when `None`), and the cursor of
    /// the next page: paging with any size yields every item of the range exactly once, in
    /// order, across buckets and shards.
    ///
    /// The cursor holds the label of the bucket the page stopped in and the position of that
    /// bucket's scatter-gather, as a [`Query`] cursor does (the range cursor, format version 5
    /// where a query's is 4, documented on [`Cursor`]).
    /// It is accepted only by the same range query: another entity, index, logical key,
    /// granularity, `from`, `to`, order or layout is [`CursorError::WrongQuery`]. Sealing works as for
    /// a [`Query`] ([`seal_cursors`](Self::seal_cursors)).
    ///
    /// The cursor is `None` when the page ended in the range's last bucket with every shard
    /// finished. When the buckets after a page are empty, the next page holds no items (and
    /// costs one Query per shard of each such bucket). `size` 0 is an [`Error::InvalidQuery`].
    ///
    /// ```no_run
    /// # use sharded::{Cursor, Error, query::RangeQuery, ShardedEntity};
    /// # async fn demo<E: ShardedEntity>(make: impl Fn() -> RangeQuery<E>) -> Result<(), Error> {
    /// let mut cursor: Option<Cursor> = None;
    /// loop {
    ///     let page = make().page(100, cursor.as_ref()).await?;
    ///     // ... show page.items ...
    ///     match page.cursor {
    ///         Some(next) => cursor = Some(next),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn page(mut self, size: usize, cursor: Option<&Cursor>) -> Result<Page<E>, Error> {
        cursor::page_size(size)?;
        let seal = self.options.seal.take();
        let descending = self.options.descending;
        let spec = self.spec()?;
        let index = spec
            .index
            .and_then(|n| E::SCHEMA.gsi(n))
            .map_or("", |g| g.index_name);
        let schema = E::SCHEMA;
        // What each bucket's query hides (`Query::expiry`) and reads (`Query::plan`).
        let expiry = schema.ttl;
        let layout = match (spec.index, schema.pk.previous) {
            (None, Some(PreviousLayout::Shards { .. })) => schema.pk.layout_description(),
            _ => String::new(),
        };
        let description =
            spec.range
                .description(schema.entity, index, descending, expiry, &layout)?;
        let shards = spec.range.partitions_read() as u32;
        let (buckets, resume) = match cursor {
            None => (spec.range.buckets(descending), None),
            Some(cursor) => {
                let (label, resume) =
                    cursor::decode_labeled(cursor, &description, shards, seal.as_ref())?;
                let bucket = Bucket::parse(spec.range.granularity, &label)
                    .map_err(|e| CursorError::Malformed(format!("the cursor's bucket: {e}")))?;
                let buckets = spec
                    .range
                    .buckets_from(&bucket, descending)
                    .ok_or(CursorError::WrongQuery)?;
                (buckets, Some(resume))
            }
        };
        let mut walk = Walk::new(spec, buckets, resume, Some(size));
        let mut items = Vec::with_capacity(size.min(1024));
        while let Some((_, item)) = walk.next().await? {
            items.push(E::from_item(item)?);
        }
        let cursor = walk.cursor_position().await?.map(|(bucket, position)| {
            cursor::encode_labeled(&description, &bucket.label(), &position, seal.as_ref())
        });
        Ok(Page {
            items,
            cursor,
            foreign: walk.foreign(),
        })
    }

    /// Counts the items of the range: counted on every shard of every bucket, summed.
    ///
    /// ```no_run
    /// # use sharded::{Error, query::RangeQuery, ShardedEntity};
    /// # async fn demo<E: ShardedEntity>(range: RangeQuery<E>) -> Result<(), Error> {
    /// let total: u64 = range.count().await?;
    /// # Ok(()) }
    /// ```
    pub async fn count(self) -> Result<u64, Error> {
        Ok(self
            .count_by_bucket()
            .await?
            .into_iter()
            .map(|(_, n)| n)
            .sum())
    }

    /// The count of each bucket of the range, as `(label, count)` in the query's order, empty
    /// buckets included (`("2026-11-22", 0)`): how the buckets are filled.
    ///
    /// Each bucket is one counting Query per shard (following DynamoDB's pages), the
    /// edge buckets with the range's sort-key condition; `W` buckets are counted at once, so
    /// requests in flight stay within the repository's concurrency. A failed shard fails the
    /// count.
    ///
    /// ```no_run
    /// # use sharded::{Error, query::RangeQuery, ShardedEntity};
    /// # async fn demo<E: ShardedEntity>(range: RangeQuery<E>) -> Result<(), Error> {
    /// for (day, count) in range.count_by_bucket().await? {
    ///     println!("{day}: {count}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn count_by_bucket(mut self) -> Result<Vec<(String, u64)>, Error> {
        let spec = self.spec()?;
        let width = spec.window();
        let buckets = spec.range.buckets(self.options.descending);
        let spec = &spec;
        stream::iter(buckets)
            .map(|bucket| spec.count_bucket(bucket))
            .buffered(width)
            .try_collect()
            .await
    }
}

impl<E> std::fmt::Debug for RangeQuery<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("RangeQuery");
        if let Ok(range) = &self.range {
            d.field("from", &range.from_key)
                .field("to", &range.to_key)
                .field("granularity", &range.granularity)
                .field("field", &range.field);
        }
        d.field("descending", &self.options.descending)
            .field("limit", &self.options.limit)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::template::KeyTemplate;

    static AT_ID: KeyTemplate = KeyTemplate::new(
        "{at}#{id}",
        &[
            Segment::Field("at"),
            Segment::Literal("#"),
            Segment::Field("id"),
        ],
    );
    static LOG_AT: KeyTemplate = KeyTemplate::new(
        "LOG#{at}",
        &[Segment::Literal("LOG#"), Segment::Field("at")],
    );

    const DAY: i64 = 86_400;
    /// 2026-11-22T00:00:00Z
    const D22: i64 = 1_795_305_600;

    fn enc(v: i64) -> String {
        let mut s = String::new();
        v.write_key(&mut s).unwrap();
        s
    }

    fn range(sk: &'static KeyTemplate, from: (i64, u32), to: (i64, u32)) -> Range {
        let at_segment = sk
            .segments
            .iter()
            .position(|s| *s == Segment::Field("at"))
            .unwrap();
        Range {
            granularity: Granularity::Day,
            before: "OPS#".into(),
            after: String::new(),
            shards: Some(4),
            suffix: ShardSuffix::DEFAULT,
            partitions_read: 4,
            from,
            to,
            from_key: enc(from.0),
            to_key: enc(to.0),
            sk: SortKeySchema::new("sk", sk),
            at_segment,
            ends_sort_key: at_segment + 1 == sk.segments.len(),
            empty: from == to,
            field: "at",
        }
    }

    fn labels(buckets: impl Iterator<Item = Bucket>) -> Vec<String> {
        buckets.map(|b| b.label()).collect()
    }

    #[test]
    fn edge_buckets_are_cut_at_the_exact_time() {
        let r = range(&AT_ID, (D22 + DAY / 2, 0), (D22 + 2 * DAY + 3600, 0));
        let buckets: Vec<Bucket> = r.buckets(false).collect();
        assert_eq!(
            labels(buckets.iter().copied()),
            ["2026-11-22", "2026-11-23", "2026-11-24"]
        );
        let from = enc(D22 + DAY / 2);
        let to = enc(D22 + 2 * DAY + 3600);
        assert_eq!(
            r.condition("Ops", &buckets[0]).unwrap(),
            (Some(SortCondition::Ge(from)), None)
        );
        assert_eq!(r.condition("Ops", &buckets[1]).unwrap(), (None, None));
        // `<to>` is never a key: every key of `to` continues with `#`.
        assert_eq!(
            r.condition("Ops", &buckets[2]).unwrap(),
            (Some(SortCondition::Le(to)), None)
        );
        assert_eq!(
            labels(r.buckets(true)),
            ["2026-11-24", "2026-11-23", "2026-11-22"]
        );
        // One bucket holding both bounds: one BETWEEN, exact.
        let one = range(&AT_ID, (D22 + 60, 0), (D22 + 120, 0));
        let bucket = one.buckets(false).next().unwrap();
        assert_eq!(
            one.condition("Ops", &bucket).unwrap(),
            (
                Some(SortCondition::Between(enc(D22 + 60), enc(D22 + 120))),
                None
            )
        );
    }

    #[test]
    fn a_time_ending_the_sort_key_drops_the_item_at_to() {
        let r = range(&LOG_AT, (D22 + 60, 0), (D22 + 120, 0));
        let bucket = r.buckets(false).next().unwrap();
        let (low, high) = (
            format!("LOG#{}", enc(D22 + 60)),
            format!("LOG#{}", enc(D22 + 120)),
        );
        assert_eq!(
            r.condition("Ops", &bucket).unwrap(),
            (Some(SortCondition::Between(low, high.clone())), Some(high))
        );
        // Apart, each edge is one exact condition: `>=` below the literal's end, strict `<`.
        let r = range(&LOG_AT, (D22 + 60, 0), (D22 + DAY + 120, 0));
        let buckets: Vec<Bucket> = r.buckets(false).collect();
        assert_eq!(
            r.condition("Ops", &buckets[0]).unwrap(),
            (
                Some(SortCondition::Between(
                    format!("LOG#{}", enc(D22 + 60)),
                    "LOG$".into()
                )),
                None
            )
        );
        assert_eq!(
            r.condition("Ops", &buckets[1]).unwrap(),
            (
                Some(SortCondition::Lt(format!("LOG#{}", enc(D22 + DAY + 120)))),
                None
            )
        );
    }

    #[test]
    fn the_last_bucket_is_the_one_before_to() {
        // `to` at midnight exactly: the day that starts there holds nothing of the range.
        let whole = range(&AT_ID, (D22, 0), (D22 + DAY, 0));
        assert_eq!(labels(whole.buckets(false)), ["2026-11-22"]);
        // Half a second after midnight: items of that half second are in the range.
        let after = range(&AT_ID, (D22, 0), (D22 + DAY, 500_000_000));
        assert_eq!(labels(after.buckets(false)), ["2026-11-22", "2026-11-23"]);
        let empty = range(&AT_ID, (D22, 0), (D22, 0));
        assert_eq!(empty.buckets(false).count(), 0);
    }

    #[test]
    fn a_cursor_bucket_resumes_the_walk_inside_the_range_only() {
        let r = range(&AT_ID, (D22 + 10, 0), (D22 + 3 * DAY - 10, 0));
        let d23 = Bucket::parse(Granularity::Day, "2026-11-23").unwrap();
        assert_eq!(
            labels(r.buckets_from(&d23, false).unwrap()),
            ["2026-11-23", "2026-11-24"]
        );
        assert_eq!(
            labels(r.buckets_from(&d23, true).unwrap()),
            ["2026-11-23", "2026-11-22"]
        );
        let d25 = Bucket::parse(Granularity::Day, "2026-11-25").unwrap();
        assert!(r.buckets_from(&d25, false).is_none());
        let hour = Bucket::parse(Granularity::Hour, "2026-11-23T10").unwrap();
        assert!(r.buckets_from(&hour, false).is_none());
    }

    #[test]
    fn descriptions_tell_ranges_apart() {
        let a = range(&AT_ID, (D22, 0), (D22 + DAY, 0));
        let b = range(&AT_ID, (D22, 0), (D22 + DAY + 1, 0));
        let of = |r: &Range, entity: &str, descending: bool, expiry: Option<&str>, layout: &str| {
            r.description(entity, "", descending, expiry, layout)
                .unwrap()
        };
        let base = of(&a, "Ops", false, None, "");
        assert_eq!(base, of(&a, "Ops", false, None, ""), "the same range");
        assert_ne!(base, of(&a, "Ops", true, None, ""), "another order");
        assert_ne!(base, of(&b, "Ops", false, None, ""), "another `to`");
        assert_ne!(base, of(&a, "Other", false, None, ""), "another entity");
        assert_ne!(
            base,
            of(&a, "Ops", false, Some("exp"), ""),
            "expired items hidden"
        );
        assert_ne!(
            base,
            of(
                &a,
                "Ops",
                false,
                None,
                "OPS#{at:day}#<shard 0..4>, previously #<shard 0..2>"
            ),
            "a transition"
        );
    }
}
