//! Time-bucketed events and their range queries: an entity bucketed by the hour
//! (`EV#{stream}#{at:hour}`, 3 shards by `hash(id)`, sort key `{at}#{id}`), written by `put`,
//! `batch_put`, the generated `delete` and `delete_if` (the payload below a bound), and read
//! by `RangeQuery` in every way it is read (`collect`, `stream`, `count`, `count_by_bucket`,
//! `page` continued with plain or sealed cursors; either order, a limit, a page size,
//! consistent reads or not), each answer compared with the model's `events`, order included.
//!
//! The events live on a handful of instants over six hours: several on exact hour edges, one
//! a second and one half a second from an edge, none in the fourth hour (an empty bucket
//! inside most ranges); six ids, so that events of one instant land on several shards. Range
//! bounds are drawn from those instants and a few more (before, after, the empty hour, half
//! seconds): ranges start and end exactly on events, on edges, and in empty buckets.
//!
//! Declared once per table of the model ([`Flavour`]), as `layouts` declares its entities.

use std::collections::BTreeMap;
use std::future::Future;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use sharded::{query::RangeQuery, Error, Repo, ShardedEntity};

use super::exec::{cursor_key, failure, pages_sealed_or_not, Failure, Run};
use super::layouts::{AdoptedTable, Flavour};
use super::ops::{Generator, Op};
use super::reference::{Key, Model, Outcome};

/// The start of the events' six hours: 2026-11-22T00:00:00Z, in epoch seconds.
const T0: i64 = 1_795_305_600;
/// An hour, in milliseconds.
const HOUR: i64 = 3_600_000;
/// The instants events are written at, in milliseconds after [`T0`]: hours 0, 1, 2, 4 and 5
/// (hour 3 stays empty), with events exactly on the edges of hours 0, 1 and 4, a second
/// before hour 1, half a second after it and half a second before hour 3.
const TIMES: [i64; 11] = [
    0,
    1_000,
    1_800_000,
    3_599_000,
    HOUR,
    HOUR + 500,
    8_400_000,
    3 * HOUR - 500,
    4 * HOUR,
    15_000_000,
    6 * HOUR - 1_000,
];
/// Range bounds besides [`TIMES`]: before and after every event, the empty hour's edges,
/// half seconds next to events.
const BOUNDS: [i64; 7] = [
    -HOUR,
    500,
    HOUR - 500,
    3 * HOUR,
    5 * HOUR,
    6 * HOUR,
    7 * HOUR,
];
/// Ids per instant.
const IDS: u8 = 6;
const STREAMS: [&str; 2] = ["s", "t"];
/// Pages read before a paged read is declared endless.
const MAX_PAGES: usize = 500;

/// An event's logical key: its stream (an index of [`STREAMS`]), its time (milliseconds
/// after [`T0`]) and its id. Ordered as the sort key `{at}#{id}` orders one stream's events.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct EventKey {
    pub stream: u8,
    pub at: i64,
    pub id: u8,
}

/// The order a range query is read in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    /// Neither `ascending` nor `descending` called.
    Default,
    /// `.descending().ascending()`: the later call wins.
    Ascending,
    Descending,
}

/// How a range query is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RangeRead {
    Collect,
    Stream,
    Count,
    CountByBucket,
    /// `page(size, ..)` from the start to the end, each page continued with the previous
    /// page's cursor; cursors sealed with the model's cursor key or not.
    Pages {
        size: usize,
        sealed: bool,
    },
}

/// `query_range(stream, from, to)` with its settings, and how it is read.
#[derive(Clone, PartialEq, Debug)]
pub struct RangeOp {
    pub stream: u8,
    /// `from` and `to` in milliseconds after [`T0`]; `from > to` is an invalid range.
    pub from: i64,
    pub to: i64,
    pub order: Order,
    /// With `collect` and `stream` only (`count` and `page` do not take it).
    pub limit: Option<usize>,
    pub page_size: Option<u32>,
    /// `consistent_read(..)` called with this, or not called.
    pub consistent: Option<bool>,
    pub read: RangeRead,
}

impl RangeOp {
    /// The kind of read, for the figures of a run.
    pub fn name(&self) -> String {
        let how = match self.read {
            RangeRead::Collect => "collect".to_owned(),
            RangeRead::Stream => "stream".to_owned(),
            RangeRead::Count => "count".to_owned(),
            RangeRead::CountByBucket => "count_by_bucket".to_owned(),
            RangeRead::Pages { sealed: false, .. } => "page".to_owned(),
            RangeRead::Pages { sealed: true, .. } => "page (sealed)".to_owned(),
        };
        format!("RangeQuery {how}")
    }
}

/// The event entity in one table.
pub trait EventEntity: ShardedEntity + Clone + std::fmt::Debug + Send + Sync + 'static {
    fn from_model(key: &EventKey, payload: i64) -> Self;
    fn to_model(&self) -> (EventKey, i64);
    /// The generated `query_range(repo, stream, from, to)`.
    fn range(repo: &Repo<Self>, op: &RangeOp) -> RangeQuery<Self>;
    /// The generated `delete(repo, stream, at, id)`.
    fn delete(repo: &Repo<Self>, key: &EventKey) -> impl Future<Output = Result<(), Error>> + Send;
    /// `repo.delete_if(event, payload < below)`.
    fn delete_if(
        repo: &Repo<Self>,
        key: &EventKey,
        below: i64,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Whether `pk` is a partition key of the events.
    fn is_pk(pk: &str) -> bool;
}

fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(T0 * 1_000 + ms).expect("the events' times are valid")
}

macro_rules! event {
    ([$($table:tt)*], [$($suffix:tt)*]) => {
        /// An event of a stream, bucketed by the hour.
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "MEvent" $($table)*)]
        #[pk(template = "EV#{stream}#{at:hour}", shard = "hash(id)", n = 3 $($suffix)*)]
        #[sk(template = "{at}#{id}")]
        pub struct Event {
            pub stream: String,
            pub at: DateTime<Utc>,
            pub id: String,
            pub payload: i64,
        }

        impl super::EventEntity for Event {
            fn from_model(key: &super::EventKey, payload: i64) -> Self {
                Event {
                    stream: super::STREAMS[usize::from(key.stream)].to_owned(),
                    at: super::instant(key.at),
                    id: format!("e{}", key.id),
                    payload,
                }
            }
            fn to_model(&self) -> (super::EventKey, i64) {
                let key = super::EventKey {
                    stream: super::STREAMS
                        .iter()
                        .position(|s| *s == self.stream)
                        .map_or(u8::MAX, |s| s as u8),
                    at: self.at.timestamp_millis() - super::T0 * 1_000,
                    id: self.id[1..].parse().unwrap_or(u8::MAX),
                };
                (key, self.payload)
            }
            fn range(repo: &Repo<Self>, op: &super::RangeOp) -> RangeQuery<Self> {
                let stream = super::STREAMS[usize::from(op.stream)];
                Event::query_range(repo, stream, &super::instant(op.from), &super::instant(op.to))
            }
            fn delete(
                repo: &Repo<Self>,
                key: &super::EventKey,
            ) -> impl std::future::Future<Output = Result<(), Error>> + Send {
                let event = Self::from_model(key, 0);
                let repo = repo.clone();
                async move { Event::delete(&repo, &event.stream, &event.at, &event.id).await }
            }
            fn delete_if(
                repo: &Repo<Self>,
                key: &super::EventKey,
                below: i64,
            ) -> impl std::future::Future<Output = Result<(), Error>> + Send {
                let event = Self::from_model(key, 0);
                let repo = repo.clone();
                async move { repo.delete_if(&event, Event::fields().payload.lt(below)).await }
            }
            fn is_pk(pk: &str) -> bool {
                Event::parse_pk(pk).is_ok()
            }
        }
    };
}

/// The crate's defaults: `pk`/`sk`, the `_entity` tag, `#{shard}`.
pub mod tagged {
    use super::*;
    event!([], []);
}

/// [`AdoptedTable`]: `PK`/`SK`, no tag, `#SHARD_{shard}`.
pub mod adopted {
    use super::*;
    event!([, table = AdoptedTable], [, suffix = "#SHARD_{shard}"]);
}

/// Whether `pk`, a stored item's partition key in a table of `flavour`, is an event's.
pub fn is_event_pk(flavour: Flavour, pk: &str) -> bool {
    match flavour {
        Flavour::Tagged => <tagged::Event as EventEntity>::is_pk(pk),
        Flavour::Adopted => <adopted::Event as EventEntity>::is_pk(pk),
    }
}

// ---------------------------------------------------------------------------------------
// The model.

impl Model {
    /// Applies an operation of the events to the model's `events`.
    pub fn apply_event(&mut self, op: &Op) -> (Outcome, Vec<Key>) {
        match op {
            Op::EventPut(puts) => {
                for (key, payload) in puts {
                    self.events.insert(*key, *payload);
                }
            }
            Op::EventDelete { key, below } => match (below, self.events.get(key)) {
                (Some(below), stored) if stored.is_none_or(|p| p >= below) => {
                    return (Outcome::ConditionFailed, vec![]);
                }
                _ => {
                    self.events.remove(key);
                }
            },
            _ => {}
        }
        (Outcome::Ok, vec![])
    }

    /// The events of `op`'s range in its order, before any limit.
    fn range(&self, op: &RangeOp) -> Vec<(EventKey, i64)> {
        let mut events: Vec<(EventKey, i64)> = self
            .events
            .iter()
            .filter(|(k, _)| k.stream == op.stream && op.from <= k.at && k.at < op.to)
            .map(|(k, p)| (*k, *p))
            .collect();
        if op.order == Order::Descending {
            events.reverse();
        }
        events
    }

    /// Every hour bucket that intersects `op`'s range, labelled `YYYY-MM-DDThh`, in its
    /// order, with the events of the range it holds.
    fn buckets(&self, op: &RangeOp) -> Vec<(String, u64)> {
        if op.from >= op.to {
            return Vec::new();
        }
        let (first, last) = (op.from.div_euclid(HOUR), (op.to - 1).div_euclid(HOUR));
        let mut buckets: Vec<(String, u64)> = (first..=last)
            .map(|hour| {
                let (start, end) = (hour * HOUR, (hour + 1) * HOUR);
                let label = instant(start).format("%Y-%m-%dT%H").to_string();
                let held = self
                    .range(op)
                    .iter()
                    .filter(|(k, _)| start <= k.at && k.at < end)
                    .count();
                (label, held as u64)
            })
            .collect();
        if op.order == Order::Descending {
            buckets.reverse();
        }
        buckets
    }
}

// ---------------------------------------------------------------------------------------
// The generator.

impl Generator {
    /// An operation of the events: writes half the time, a range query the other half.
    pub fn event_op(&mut self, model: &Model) -> Op {
        match self.rng.u8(..10) {
            0..=2 => Op::EventPut(vec![(self.event_key(), self.rng.i64(0..1000))]),
            3 => {
                let n = self.rng.usize(2..=4);
                let mut puts: BTreeMap<EventKey, i64> = BTreeMap::new();
                for _ in 0..n {
                    puts.insert(self.event_key(), self.rng.i64(0..1000));
                }
                Op::EventPut(puts.into_iter().collect())
            }
            4 => {
                let held: Vec<EventKey> = model.events.keys().copied().collect();
                let key = if !held.is_empty() && self.rng.u8(..4) != 0 {
                    held[self.rng.usize(..held.len())]
                } else {
                    self.event_key()
                };
                Op::EventDelete {
                    key,
                    below: self.rng.bool().then(|| self.rng.i64(0..1000)),
                }
            }
            _ => Op::Range(self.range_op()),
        }
    }

    fn stream(&mut self) -> u8 {
        u8::from(self.rng.u8(..4) == 0)
    }

    fn event_key(&mut self) -> EventKey {
        EventKey {
            stream: self.stream(),
            at: TIMES[self.rng.usize(..TIMES.len())],
            id: self.rng.u8(..IDS),
        }
    }

    fn bound(&mut self) -> i64 {
        let i = self.rng.usize(..TIMES.len() + BOUNDS.len());
        TIMES
            .get(i)
            .copied()
            .unwrap_or_else(|| BOUNDS[i - TIMES.len()])
    }

    fn range_op(&mut self) -> RangeOp {
        let (mut from, mut to) = (self.bound(), self.bound());
        match self.rng.u8(..15) {
            // An empty range.
            0 => to = from,
            // An invalid one, when the bounds differ.
            1 => {}
            _ => (from, to) = (from.min(to), from.max(to)),
        }
        let read = match self.rng.u8(..6) {
            0 => RangeRead::Collect,
            1 => RangeRead::Stream,
            2 => RangeRead::Count,
            3 => RangeRead::CountByBucket,
            _ => RangeRead::Pages {
                size: [1, 2, 3, 5][self.rng.usize(..4)],
                sealed: self.rng.bool(),
            },
        };
        let limited = matches!(read, RangeRead::Collect | RangeRead::Stream);
        RangeOp {
            stream: self.stream(),
            from,
            to,
            order: [Order::Default, Order::Ascending, Order::Descending][self.rng.usize(..3)],
            limit: (limited && self.rng.bool()).then(|| self.rng.usize(1..=6)),
            page_size: self.rng.bool().then(|| [1, 2, 5][self.rng.usize(..3)]),
            consistent: self.rng.bool().then(|| self.rng.bool()),
            read,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Sending.

/// Sends an operation of the events, as the entity of the run's table, and compares a
/// range query's answer with `model` (the model before the operation).
pub async fn send(run: &Run, model: &Model, op: &Op) -> Result<Outcome, Failure> {
    match run.flavour() {
        Flavour::Tagged => send_as::<tagged::Event>(run, model, op).await,
        Flavour::Adopted => send_as::<adopted::Event>(run, model, op).await,
    }
}

async fn send_as<E: EventEntity>(run: &Run, model: &Model, op: &Op) -> Result<Outcome, Failure> {
    let repo = run.repo::<E>();
    let written = match op {
        Op::EventPut(puts) if puts.len() == 1 => {
            let (key, payload) = &puts[0];
            repo.put(&E::from_model(key, *payload)).await
        }
        Op::EventPut(puts) => {
            let events: Vec<E> = puts.iter().map(|(k, p)| E::from_model(k, *p)).collect();
            repo.batch_put(&events).await
        }
        Op::EventDelete { key, below: None } => E::delete(&repo, key).await,
        Op::EventDelete {
            key,
            below: Some(below),
        } => E::delete_if(&repo, key, *below).await,
        Op::Range(range) => {
            read(&repo, model, range).await?;
            Ok(())
        }
        _ => Ok(()),
    };
    match written {
        Ok(()) => Ok(Outcome::Ok),
        Err(Error::ConditionFailed { .. }) => Ok(Outcome::ConditionFailed),
        Err(e) => Err(e),
    }
    .map_err(|e| {
        failure(
            format!("outcome of {}", op.name()),
            format!("unexpected error: {e}"),
        )
    })
}

/// The range query of `op`, with its settings.
fn query<E: EventEntity>(repo: &Repo<E>, op: &RangeOp) -> RangeQuery<E> {
    let mut query = E::range(repo, op);
    query = match op.order {
        Order::Default => query,
        Order::Ascending => query.descending().ascending(),
        Order::Descending => query.descending(),
    };
    if let Some(n) = op.limit {
        query = query.limit(n);
    }
    if let Some(n) = op.page_size {
        query = query.page_size(n);
    }
    if let Some(consistent) = op.consistent {
        query = query.consistent_read(consistent);
    }
    query
}

async fn read<E: EventEntity>(repo: &Repo<E>, model: &Model, op: &RangeOp) -> Result<(), Failure> {
    let check = op.name();
    let unexpected = |e: Error| failure(&check, format!("unexpected error: {e}"));
    if op.from > op.to {
        return invalid(repo, op).await.map_err(|d| failure(&check, d));
    }
    let events = model.range(op);
    let limited = || {
        let n = op.limit.unwrap_or(usize::MAX);
        events.iter().take(n).copied().collect::<Vec<_>>()
    };
    let models = |items: Vec<E>| items.iter().map(E::to_model).collect::<Vec<_>>();
    match op.read {
        RangeRead::Collect => {
            let got = query(repo, op).collect().await.map_err(unexpected)?;
            same(&check, &models(got), &limited())
        }
        RangeRead::Stream => {
            let got: Vec<E> = query(repo, op)
                .stream()
                .try_collect()
                .await
                .map_err(unexpected)?;
            same(&check, &models(got), &limited())
        }
        RangeRead::Count => {
            let count = query(repo, op).count().await.map_err(unexpected)?;
            if count == events.len() as u64 {
                return Ok(());
            }
            Err(failure(
                check,
                format!("counted {count}, the model holds {}", events.len()),
            ))
        }
        RangeRead::CountByBucket => {
            let counts = query(repo, op)
                .count_by_bucket()
                .await
                .map_err(unexpected)?;
            let expected = model.buckets(op);
            if counts == expected {
                return Ok(());
            }
            Err(failure(
                check,
                format!("counted {counts:?}, the model holds {expected:?}"),
            ))
        }
        RangeRead::Pages { size, sealed } => {
            let got = pages(repo, op, size, sealed).await?;
            same(&check, &got, &events)
        }
    }
}

/// Every page of `op`'s query, paged by `size`, sealed or not (see
/// [`pages_sealed_or_not`]).
async fn pages<E: EventEntity>(
    repo: &Repo<E>,
    op: &RangeOp,
    size: usize,
    sealed: bool,
) -> Result<Vec<(EventKey, i64)>, Failure> {
    let pages = pages_sealed_or_not(&op.name(), size, sealed, MAX_PAGES, |sealed, cursor| {
        let query = query(repo, op);
        let query = if sealed {
            query.seal_cursors(&cursor_key())
        } else {
            query
        };
        async move { query.page(size, cursor.as_ref()).await }
    })
    .await?;
    Ok(pages.iter().map(E::to_model).collect())
}

/// A range whose `from` is after its `to`: `InvalidQuery` however it is read.
async fn invalid<E: EventEntity>(repo: &Repo<E>, op: &RangeOp) -> Result<(), String> {
    let refused = match op.read {
        RangeRead::Collect => query(repo, op).collect().await.err(),
        RangeRead::Stream => query(repo, op).stream().try_collect::<Vec<E>>().await.err(),
        RangeRead::Count => query(repo, op).count().await.err(),
        RangeRead::CountByBucket => query(repo, op).count_by_bucket().await.err(),
        RangeRead::Pages { size, sealed } => {
            let query = query(repo, op);
            let query = if sealed {
                query.seal_cursors(&cursor_key())
            } else {
                query
            };
            query.page(size, None).await.err()
        }
    };
    match refused {
        Some(Error::InvalidQuery(sharded::query::QueryRefusal::BoundsReversed { .. })) => Ok(()),
        other => Err(format!(
            "from after to: expected InvalidQuery, got {:?}",
            other.map(|e| e.to_string())
        )),
    }
}

fn short((key, payload): &(EventKey, i64)) -> String {
    format!(
        "{}@{}.{:03}#e{}={payload}",
        STREAMS.get(usize::from(key.stream)).unwrap_or(&"?"),
        key.at.div_euclid(1_000),
        key.at.rem_euclid(1_000),
        key.id
    )
}

fn same(check: &str, got: &[(EventKey, i64)], model: &[(EventKey, i64)]) -> Result<(), Failure> {
    if got == model {
        return Ok(());
    }
    let got: Vec<String> = got.iter().map(short).collect();
    let model: Vec<String> = model.iter().map(short).collect();
    Err(failure(
        check,
        format!("read {got:?}, the model holds {model:?} (stream@second.ms#id=payload)"),
    ))
}
