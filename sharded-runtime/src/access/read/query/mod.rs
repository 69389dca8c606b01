//! The typed query builder over a sharded logical key: what the generated `query*` functions
//! return.

mod plan;

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream};

use crate::access::condition::Condition;
use crate::access::engine::cursor::{self, Cursor, Resume};
use crate::access::engine::scatter::{self, Engine, ShardFailure};
use crate::access::entity::ShardedEntity;
use crate::access::handle::Handle;
use crate::access::layouts::Snapshot;
use crate::access::options::{read_setters, ReadOptions};
use crate::access::read::bounds::{Bounds, WholeSortKey};
use crate::access::read::read_cache::{Gathered, ReadPolicy};
use crate::access::recognize::{Depth, NotOurs};
use crate::access::sort_condition::{SortCondition, SortKeyCondition};
use crate::access::source::{
    recognize_projected, CollectionMember, QuerySource, ShardedCollection, ShardedProjection,
};
use crate::error::foreign::Foreign;
use crate::error::{Error, KeyError, QueryRefusal};
use crate::item::Item;
use crate::keys::attribute::KeyValue;
use crate::keys::shards::Partitions;
use plan::Planned;

/// A scatter-gather query over every shard of one logical partition key, merged by sort key.
///
/// Built by the entity's generated query functions (`Score::query(&repo, "g1")`,
/// `Score::query_gsi1(&repo, "p1")`), then refined and run:
///
/// ```no_run
/// # use sharded::{Repo, ShardedEntity, Query, Error};
/// # async fn demo<E: ShardedEntity + Send + 'static>(q: Query<E>) -> Result<(), Error> {
/// let top10: Vec<E> = q.descending().limit(10).collect().await?;
/// # Ok(()) }
/// ```
///
/// Results come back in global sort-key order: `.collect()`, `.stream()`, or `.page(size,
/// cursor)` for cursor paging. `.count()` counts matching items across shards.
///
/// `S` is what is read (an entity, or a collection after [`collection`](Query::collection)),
/// `O` what comes back: `S` itself, or a projection after [`project`](Query::project).
#[must_use = "a query does nothing until it is run with collect, stream, page or count"]
pub struct Query<S, O = S> {
    handle: Arc<Handle>,
    _entity: PhantomData<fn() -> S>,
    index: Option<u8>,
    partitions: Result<Partitions, KeyError>,
    condition: Option<SortCondition>,
    /// A multi-attribute sort key's leading attributes held equal; `condition` applies to
    /// the next one.
    sort_equalities: Vec<(&'static str, KeyValue)>,
    /// Limit, order, page size, consistency, cursor seal: the settings `RangeQuery` shares.
    options: ReadOptions,
    /// How an item becomes an `O`.
    decode: fn(Item) -> Result<O, Error>,
    /// Whether an item read is the source's (and which member): `S`'s own check, or a
    /// projection's, which also asks an item no tag vouches for to read as the projection.
    recognize: fn(&mut Item, Depth) -> Result<usize, NotOurs>,
    /// The projected attributes, when `O` is a projection.
    projection: Option<&'static [&'static str]>,
    /// Why the query cannot run, found while it was built (reported when it runs).
    invalid: Option<QueryRefusal>,
    /// The caller's filter.
    filter: Option<Condition<()>>,
    /// Return items past their `#[sharded(ttl)]` too (DynamoDB deletes them lazily).
    include_expired: bool,
    /// The age of a cached answer this query accepts (`max_staleness`), over the repository's.
    max_staleness: Option<Duration>,
    /// Whole-key bounds (`after`, `before`, `from`, `to`).
    bounds: Bounds,
}

impl<S, O> Clone for Query<S, O> {
    fn clone(&self) -> Self {
        Query {
            handle: self.handle.clone(),
            _entity: PhantomData,
            index: self.index,
            partitions: self.partitions.clone(),
            condition: self.condition.clone(),
            sort_equalities: self.sort_equalities.clone(),
            options: self.options.clone(),
            decode: self.decode,
            recognize: self.recognize,
            projection: self.projection,
            invalid: self.invalid.clone(),
            filter: self.filter.clone(),
            include_expired: self.include_expired,
            max_staleness: self.max_staleness,
            bounds: self.bounds.clone(),
        }
    }
}

/// The `Limit` of each shard request of an unlimited [`Query::stream`] without a
/// `page_size`: a bound on what the stream buffers per shard.
pub const STREAM_PAGE_ITEMS: u32 = 1000;

/// What [`Query::collect_answer`] returns: the items, and where they came from.
///
/// ```no_run
/// # fn demo<E>(answer: sharded::query::Answer<E>) {
/// if answer.shared {
///     println!("{} items from another query's read, {:?} old", answer.items.len(), answer.age);
/// }
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Answer<O> {
    /// The items, in sort-key order.
    pub items: Vec<O>,
    /// How old the answer is: how long before this query was called its reads began. Zero
    /// when the query ran its own scatter-gather; for an identical query in flight that it
    /// joined, or a cached answer, the time since that scatter-gather started (at most the
    /// query's `max_staleness` when it has one). A write completed after that moment may be
    /// missing from it.
    pub age: Duration,
    /// Whether another query's scatter-gather produced it (joined in flight, or cached).
    pub shared: bool,
    /// Items read in the entity's partitions that are not the entity's (another service's
    /// records, keys not in canonical form): skipped, counted here (see
    /// [`ForeignReason`](crate::query::ForeignReason)).
    pub foreign: Foreign,
}

/// One page of a cursor-paged query.
///
/// ```no_run
/// # use sharded::{Page, Cursor};
/// # fn demo<E>(page: Page<E>) {
/// match page.cursor {
///     Some(next) => println!("{} items, more after {next}", page.items.len()),
///     None => println!("{} items, the end", page.items.len()),
/// }
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Page<E> {
    /// The items of this page, in sort order.
    pub items: Vec<E>,
    /// Where the next page starts; `None` when every shard is finished.
    pub cursor: Option<Cursor>,
    /// Items this page's reads met that are not the entity's: skipped, counted here.
    pub foreign: Foreign,
}

/// Where an item stands in a query's order, from [`Query::rank`], and what finding out cost.
///
/// ```no_run
/// # async fn demo(rank: sharded::query::Rank) {
/// println!("#{}: {} read units over {} requests", rank.position, rank.read_units, rank.requests);
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Rank {
    /// 1 for the first item: one more than the items ahead.
    pub position: u64,
    /// The read units DynamoDB reported for the counts (0 where a backend reports none).
    pub read_units: f64,
    /// The `Query` requests sent: at least one per shard, one more per 1 MB page counted.
    pub requests: u32,
}

/// The items just ahead of and just after an item in a query's order, from
/// [`Query::around`]; both in the query's order, the item itself in neither.
///
/// ```no_run
/// # fn demo(near: sharded::query::Around<String>) {
/// println!("{} above, {} below", near.above.len(), near.below.len());
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Around<O> {
    /// The items ahead of it, the nearest last.
    pub above: Vec<O>,
    /// The items after it, the nearest first.
    pub below: Vec<O>,
}

/// The results of a query run with partial results accepted, and the shards that failed.
///
/// ```no_run
/// # fn demo<E>(p: sharded::query::Partial<E>) {
/// if !p.failures.is_empty() {
///     eprintln!("{} shard(s) missing from this answer", p.failures.len());
/// }
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Partial<E> {
    /// Items of every shard that answered, merged in order.
    pub items: Vec<E>,
    /// Every shard that failed, with its error. Empty when the answer is complete.
    pub failures: Vec<ShardFailure>,
    /// Items read that are not the entity's: skipped, counted here.
    pub foreign: Foreign,
}

impl<S: QuerySource> Query<S> {
    pub(crate) fn new(
        handle: Arc<Handle>,
        index: Option<u8>,
        partitions: Result<Partitions, KeyError>,
    ) -> Self {
        Query {
            handle,
            _entity: PhantomData,
            index,
            partitions,
            condition: None,
            sort_equalities: Vec::new(),
            options: ReadOptions::default(),
            decode: S::from_source_item,
            recognize: S::recognize,
            projection: None,
            invalid: None,
            filter: None,
            include_expired: false,
            max_staleness: None,
            bounds: Bounds::default(),
        }
    }
}

impl<E: ShardedEntity> Query<E> {
    /// Reads the collection `C` instead of `E` alone: every entity `C` holds, from the same
    /// partitions, merged in sort-key order across shards and entity types. Conditions set
    /// so far are kept (a sort-key range applies to every member's keys).
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedCollection, ShardedEntity};
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
    /// #[sk(template = "SCORE#{score}#{player_id}")]
    /// struct Score { game_id: String, player_id: String, score: u64 }
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "GAME#{game_id}", shard = "hash(comment_id)", n = 4)]
    /// #[sk(template = "COMMENT#{comment_id}")]
    /// struct Comment { game_id: String, comment_id: String, text: String }
    ///
    /// #[derive(ShardedCollection)]
    /// enum GamePage { Score(Score), Comment(Comment) }
    ///
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// // Every comment and score of game g1, merged by sort key: COMMENT#.. before SCORE#..
    /// for item in Score::query(repo, "g1").collection::<GamePage>().collect().await? {
    ///     match item {
    ///         GamePage::Comment(comment) => println!("{}", comment.text),
    ///         GamePage::Score(score) => println!("{} {}", score.player_id, score.score),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// The members share the partition layout (checked at compile time by the derive); a
    /// query of a GSI becomes a collection query only when every member writes that GSI with
    /// the same partition layout, otherwise the query returns [`Error::InvalidQuery`] when run.
    pub fn collection<C>(self) -> Query<C>
    where
        C: ShardedCollection,
        E: CollectionMember<C>,
    {
        let mut query = self.retarget(C::from_source_item, C::recognize, None);
        if query.invalid.is_none() {
            query.invalid = query.index.and_then(|n| gsi_shared(C::MEMBERS, n).err());
        }
        query
    }

    /// Returns the projection `P` of each item instead of the whole entity: DynamoDB is sent a
    /// `ProjectionExpression` of `P`'s attributes (plus the keys and the entity attribute the
    /// merge and its checks need), so the other attributes never cross the network. Read
    /// units are the same: DynamoDB charges the whole item either way.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity, ShardedProjection};
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// #[sk(template = "SCORE#{score}#{player_id}")]
    /// struct Score { game_id: String, player_id: String, score: u64, replay: Vec<u8> }
    ///
    /// #[derive(ShardedProjection, Deserialize)]
    /// #[projection(of = Score)]
    /// struct ScoreLine { player_id: String, score: u64 }
    ///
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let top: Vec<ScoreLine> = Score::query(repo, "g1").project::<ScoreLine>().descending().limit(10).collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn project<P: ShardedProjection<Entity = E>>(self) -> Query<E, P> {
        self.retarget(
            P::from_item,
            |item, depth| recognize_projected::<P>(item, depth).map(|()| 0),
            Some(P::ATTRIBUTES),
        )
    }

    /// The same query, reading `S` and returning `O` (what `collection` and `project` change).
    fn retarget<S, O>(
        self,
        decode: fn(Item) -> Result<O, Error>,
        recognize: fn(&mut Item, Depth) -> Result<usize, NotOurs>,
        projection: Option<&'static [&'static str]>,
    ) -> Query<S, O> {
        Query {
            handle: self.handle,
            _entity: PhantomData,
            index: self.index,
            partitions: self.partitions,
            condition: self.condition,
            sort_equalities: self.sort_equalities,
            options: self.options,
            decode,
            recognize,
            projection,
            invalid: self.invalid,
            filter: self.filter,
            include_expired: self.include_expired,
            max_staleness: self.max_staleness,
            bounds: self.bounds,
        }
    }
}

/// Whether every member writes GSI `number` with the partition layout of the first.
fn gsi_shared(
    members: &[&'static crate::keys::schema::EntitySchema],
    number: u8,
) -> Result<(), QueryRefusal> {
    let first = members.first().and_then(|m| m.gsi(number));
    for member in members {
        match (first, member.gsi(number)) {
            (Some(a), Some(b)) if crate::keys::schema::same_partition_layout(&a.pk, &b.pk) => {}
            _ => {
                return Err(QueryRefusal::CollectionGsi {
                    number,
                    member: member.entity,
                })
            }
        }
    }
    Ok(())
}

impl<S: QuerySource, O> Query<S, O> {
    read_setters! {
        demo = "# async fn demo<E: sharded::ShardedEntity + Send + 'static>(q: sharded::Query<E>) -> Result<(), sharded::Error> {",
        limit = [],
        descending = [],
        page_size = [
            ///
            /// Without it, a query with a `limit` of `k` over `n` shards asks each shard first for
            /// about its share, `ceil(1.5·k/n) + 2` (at most `k`), then lazily for twice as much as
            /// the merge reaches the end of a shard's page (capped at what the merge can still use);
            /// without a `limit`, each request takes DynamoDB's 1 MB page (a
            /// [`stream`](Self::stream), [`STREAM_PAGE_ITEMS`]). `.page_size(k)` reproduces
            /// the old default of asking every shard for all `k` at once (one round even when one
            /// shard holds every winner, for `n·k` items read).
        ],
        consistent_read = [],
        seal_cursors = [],
    }

    /// Only items whose sort key satisfies a typed condition, built from the entity's generated
    /// `sk_sort()` (`gsiN_sort()` for a GSI query, see [`TemplateSort`](crate::query::TemplateSort)):
    /// a range on one field of the sort-key template, with the fields before it held equal. `sk_all()`
    /// (every key of the entity: its template's leading literal) picks one member's items out
    /// of a [`collection`](Self::collection). This is the one way to set a sort-key condition.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// // 100 <= score <= 200, best first.
    /// let band = Score::query(repo, "g1").sk(Score::sk_sort().between(100, 200)).descending().collect().await?;
    /// // score == 100 and player_id >= "p5".
    /// let from_p5 = Score::query(repo, "g1").sk(Score::sk_sort().eq(100).ge("p5")).collect().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// A value that cannot be written into a key (an empty string), bounds the wrong way
    /// round, or a condition built for another index's sort key make the query return
    /// [`Error::Key`] when it runs, without sending a request. Replaces any earlier condition.
    pub fn sk(mut self, condition: impl Into<SortKeyCondition>) -> Self {
        let (attribute, equalities, condition) = condition.into().into_parts();
        // The attribute the condition's range must be on, after its held attributes.
        let expected = match self.index {
            None => S::LAYOUT.sk.map(|sk| sk.attribute),
            Some(number) => S::LAYOUT.gsi(number).and_then(|g| match g.attributes {
                Some(key) => {
                    let held = equalities.iter().map(|(name, _)| *name);
                    let prefix = key.sort.iter().map(|a| a.name);
                    prefix
                        .clone()
                        .take(equalities.len())
                        .eq(held)
                        .then(|| key.sort.get(equalities.len()).map(|a| a.name))
                        .flatten()
                }
                None => g.sk.map(|sk| sk.attribute),
            }),
        };
        let expected = if equalities.is_empty() || expected.is_some() {
            expected
        } else {
            None
        };
        let condition = match condition {
            Ok(_) if expected != Some(attribute) => Err(KeyError::WrongSortKey {
                entity: S::NAME,
                expected: expected.unwrap_or(""),
                given: attribute,
            }),
            other => other,
        };
        match condition {
            Ok(condition) => {
                self.sort_equalities = equalities;
                self.with_sort_condition(condition)
            }
            Err(error) => {
                // The query already carries the result of building its keys: the first error
                // is the one it reports when run.
                if self.partitions.is_ok() {
                    self.partitions = Err(error);
                }
                self
            }
        }
    }

    /// Only items that satisfy `condition`, a typed condition on the entity's fields
    /// (`Score::fields()`), sent as DynamoDB's `FilterExpression`. Several calls combine with
    /// AND. After `.collection()`, the filter applies to every member's items by attribute name.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64, country: String }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let f = Score::fields();
    /// let top_fr = Score::query(repo, "g1").filter(f.country.eq("FR")).descending().limit(10).collect().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// DynamoDB applies a filter after reading (`Limit` counts the items read, and read units
    /// are charged for them): a shard whose page the filter emptied is asked again for 4x as
    /// many, up to 1,000 per request, so a rare match costs a few requests, not one per item.
    /// A value that cannot be stored (serde_dynamo refuses it) makes the query return
    /// [`Error::InvalidQuery`] when run.
    pub fn filter(mut self, condition: Condition<S>) -> Self {
        let condition = condition.erase();
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// Also returns items whose `#[sharded(ttl)]` time has passed.
    ///
    /// DynamoDB deletes expired items lazily (typically within days of their expiry), so a
    /// query of an entity with a `ttl` field hides them by default: it filters on
    /// `attribute_not_exists(ttl) OR attribute_type(ttl, NULL) OR ttl > now` (the time the
    /// query runs), so an item without an expiry (an `Option` field set to `None`, which is
    /// stored as `NULL`) never expires. Point reads (`get`) return what is stored.
    pub fn include_expired(mut self) -> Self {
        self.include_expired = true;
        self
    }

    /// Only items whose sort key is above `bound`'s, in the sort key's order: an item (its
    /// key on the queried index) or a whole key (every field held:
    /// `Score::sk_sort().eq(100).eq("p1000")`). "Every score after (100, p1000)".
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>, mine: &Score) -> Result<(), Error> {
    /// // Every score after (100, p1000), ascending.
    /// let after = Score::query(repo, "g1").after(Score::sk_sort().eq(100).eq("p1000")).collect().await?;
    /// // Between (10, p0500) and (20, p1000), both included, best first, 20 a page.
    /// let page = Score::query(repo, "g1")
    ///     .from(Score::sk_sort().eq(10).eq("p0500"))
    ///     .to(Score::sk_sort().eq(20).eq("p1000"))
    ///     .descending()
    ///     .page(20, None)
    ///     .await?;
    /// // The scores ranked above mine.
    /// let above_me = Score::query(repo, "g1").after(mine).count().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// Bounds are on the key's order whatever the query's: `.descending()` reads the same
    /// range from its top. They combine with each other (several on one side: the tightest
    /// applies), with [`sk`](Self::sk), filters, projections and collections (a range across
    /// members: `from` a `Badge` key `to` a `Comment` key), and pages, counts and cursors
    /// see only the range (a cursor is bound to it).
    ///
    /// DynamoDB's `BETWEEN` is closed at both ends, so a strict end is sent included and the
    /// item that equals it is left out as each page comes in: reading it costs at most one
    /// item per shard (the items sharing that index key, on a GSI). A bound that cannot be
    /// resolved (an item of another entity, an item not in the queried index, a key of
    /// another sort key) makes the query return [`Error::InvalidQuery`] or [`Error::Key`]
    /// when run, without sending a request.
    pub fn after(mut self, bound: impl WholeSortKey) -> Self {
        self.bounds.low.push((bound.into_bound(), false));
        self
    }

    /// Only items whose sort key is at or above `bound`'s (see [`after`](Self::after)).
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let n = Score::query(repo, "g1").from(Score::sk_sort().eq(10).eq("p0500")).count().await?;
    /// # Ok(()) }
    /// ```
    pub fn from(mut self, bound: impl WholeSortKey) -> Self {
        self.bounds.low.push((bound.into_bound(), true));
        self
    }

    /// Only items whose sort key is below `bound`'s (see [`after`](Self::after)).
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>, mine: &Score) -> Result<(), Error> {
    /// // The 5 scores just below mine, nearest first.
    /// let below = Score::query(repo, "g1").before(mine).descending().limit(5).collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn before(mut self, bound: impl WholeSortKey) -> Self {
        self.bounds.high.push((bound.into_bound(), false));
        self
    }

    /// Only items whose sort key is at or below `bound`'s (see [`after`](Self::after)).
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let upto = Score::query(repo, "g1").to(Score::sk_sort().eq(20).eq("p1000")).collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn to(mut self, bound: impl WholeSortKey) -> Self {
        self.bounds.high.push((bound.into_bound(), true));
        self
    }

    /// The sort-key condition of a typed [`sk`](Self::sk) condition or a range query's bucket.
    pub(crate) fn with_sort_condition(mut self, condition: SortCondition) -> Self {
        self.condition = Some(condition);
        self
    }

    /// Lets [`collect`](Self::collect) answer from an answer of this query at most `bound`
    /// old, kept by the repository (and stores this query's answer for the next callers):
    /// for hot reads that tolerate a little staleness, such as a viral game's top 100 read by
    /// thousands of clients. Overrides the repository's
    /// [`with_max_staleness`](crate::Repo::with_max_staleness), and applies to a strongly
    /// consistent query too (only when asked for here: a consistent query never reads the
    /// cache otherwise). [`collect_answer`](Self::collect_answer) says how old the answer is.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # use std::time::Duration;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let top = Score::query(repo, "g1")
    ///     .descending()
    ///     .limit(100)
    ///     .max_staleness(Duration::from_millis(250))
    ///     .collect_answer()
    ///     .await?;
    /// println!("{} scores, {:?} old", top.items.len(), top.age);
    /// # Ok(()) }
    /// ```
    ///
    /// What it promises: the answer's reads began at most `bound` before this call (on the
    /// repository's clock; a slow scatter-gather's answer is as old as its start, not its
    /// end), and no write through the same `Repo` (its clones, `for_entity` siblings and
    /// `transaction()`s included) completed between that start and now on the partitions it
    /// read (a write drops the answers it could change; every write drops the GSI answers).
    /// What it cannot: writes by other processes or other `Repo` values are seen only once the
    /// answer is older than `bound`; an item whose `ttl` passed within the bound may still be
    /// in it.
    pub fn max_staleness(mut self, bound: Duration) -> Self {
        self.max_staleness = Some(bound);
        self
    }

    /// How [`collect`](Self::collect) may use the repository's single flight and cache.
    fn read_policy(&self) -> ReadPolicy {
        if self.options.consistent {
            // Read-your-writes: only an explicit bound on this query shares a consistent read.
            ReadPolicy {
                coalesce: self.max_staleness.is_some(),
                max_staleness: self.max_staleness,
            }
        } else {
            ReadPolicy {
                coalesce: self.handle.single_flight(),
                max_staleness: self.max_staleness.or(self.handle.max_staleness()),
            }
        }
    }

    /// The layout directory the query plans with: an entity whose layout is decided per key
    /// reads its key's layout there (read at most a lease ago); `None` for any other.
    async fn layouts(&self) -> Result<Option<Arc<Snapshot>>, Error> {
        self.handle.layouts_of(S::LAYOUT).await
    }

    async fn engine(&self, limit: Option<usize>, partial: bool) -> Result<Engine, Error> {
        let plan = self.plan(self.layouts().await?.as_ref())?.plan;
        let resume = Resume::start(plan.partitions.len());
        // A stream and a collect read the whole listing (or up to a limit, where read-ahead
        // stays off): their shards read ahead.
        Ok(Engine::new(plan, resume, limit, partial).reading_ahead())
    }

    /// The engine of this query resumed from `resume` (from the start when `None`), for a
    /// range query, which runs one per time bucket. A resume point that does not fit this
    /// query is another query's cursor.
    pub(crate) fn bucket_engine(
        self,
        resume: Option<Resume>,
        limit: Option<usize>,
    ) -> Result<Engine, Error> {
        if S::LAYOUT.pk.per_key.is_some() {
            return Err(QueryRefusal::PerKeyRange { entity: S::NAME }.into());
        }
        let planned = self.plan(None)?;
        let resume = match resume {
            Some(resume) => planned.check(resume)?,
            None => Resume::start(planned.plan.partitions.len()),
        };
        Ok(Engine::new(planned.plan, resume, limit, false))
    }

    /// Runs the query and returns every item (up to `limit`) in sort-key order. A failed
    /// shard fails the query with [`Error::ShardFailed`] (inside [`Error::Coalesced`] when the
    /// answer was shared with an identical query: match on [`Error::unshared`]).
    ///
    /// **Hot reads.** An eventually consistent query joins an identical query of the same
    /// repository already in flight (same entity, index, key, sort condition, filter,
    /// projection, order, expiry mode, `limit` and `page_size`) instead of sending its own
    /// scatter-gather, unless no write through the repository completed since that one
    /// started (then it sends its own); [`Repo::with_single_flight`](crate::Repo::with_single_flight) turns this off. A
    /// strongly consistent query never joins another (read-your-writes), unless it asks for
    /// [`max_staleness`](Self::max_staleness).
    pub async fn collect(self) -> Result<Vec<O>, Error> {
        Ok(self.collect_answer().await?.items)
    }

    /// [`collect`](Self::collect), saying how old the answer is and whether another query's
    /// scatter-gather (one in flight, or a cached answer under
    /// [`max_staleness`](Self::max_staleness)) produced it.
    pub async fn collect_answer(self) -> Result<Answer<O>, Error> {
        let limit = self.options.limit;
        let policy = self.read_policy();
        let planned = self.plan(self.layouts().await?.as_ref())?;
        let plan = planned.plan;
        // The answer depends on the description (what the cursors are bound to), on the
        // limit, and, for its requests only, on the page size.
        let mut key = planned.description.bytes().to_vec();
        key.extend_from_slice(&(limit.map_or(u64::MAX, |l| l as u64)).to_be_bytes());
        key.extend_from_slice(&plan.page_size.unwrap_or(0).to_be_bytes());
        key.push(u8::from(self.options.consistent));
        // A base-table answer is dropped by writes to the partitions it read.
        let partitions = plan.index.is_none().then(|| {
            plan.partitions
                .iter()
                .map(|p| p.shown().to_owned())
                .collect()
        });
        let resume = Resume::start(plan.partitions.len());
        let cache = std::sync::Arc::clone(self.handle.read_cache());
        // A top-k learns where its answer came from: the next run asks a shard that held
        // more than its share for that much at once (skewed data costs one round, not two).
        let learn_key = limit.map(|_| key.clone());
        let mut plan = plan;
        if let Some(learn_key) = &learn_key {
            plan.learned_shares = cache.learned_shares(learn_key);
        }
        let mut engine = Engine::new(plan, resume, limit, false).reading_ahead();
        let learner = std::sync::Arc::clone(&cache);
        let run = async move {
            let mut items = Vec::with_capacity(limit.unwrap_or(0).min(1024));
            while let Some(item) = engine.next_item().await? {
                items.push(item);
            }
            if let Some(learn_key) = learn_key.filter(|_| !items.is_empty()) {
                learner.learn_shares(learn_key, engine.shares());
            }
            Ok(Gathered {
                items,
                foreign: engine.foreign().clone(),
            })
        }
        .boxed();
        let served = cache.serve(key, partitions, policy, run).await?;
        Ok(Answer {
            items: served
                .items
                .into_iter()
                .map(self.decode)
                .collect::<Result<_, _>>()?,
            age: served.age,
            shared: served.shared,
            foreign: served.foreign,
        })
    }

    /// Like [`collect`](Self::collect), but a failed shard is left out and listed in
    /// [`Partial::failures`] instead of failing the query.
    pub async fn collect_partial(self) -> Result<Partial<O>, Error> {
        let limit = self.options.limit;
        let mut engine = self.engine(limit, true).await?;
        let mut items = Vec::new();
        while let Some(item) = engine.next_item().await? {
            items.push((self.decode)(item)?);
        }
        Ok(Partial {
            items,
            failures: engine.take_failures(),
            foreign: engine.foreign().clone(),
        })
    }

    /// The items as a stream in sort-key order, fetching shard pages as the stream is read.
    /// The first error ends the stream.
    ///
    /// # Memory
    ///
    /// A merge holds every unfinished shard's current page (it needs each shard's next item),
    /// and, reading ahead, at most one more page per shard on its way (a shard down to half of
    /// its last page is asked for the next one while the merge goes on), so a stream's memory
    /// is bounded by `shards x page x 2`, whatever the result's size. Without
    /// a `limit` or a [`page_size`](Self::page_size), a stream asks each shard for
    /// [`STREAM_PAGE_ITEMS`] items per request (not DynamoDB's 1 MB page, which over 100
    /// shards would hold 100 MB): measured over 100,000 items on 10 shards in BENCHMARKS.md
    /// ("Scale"), the stream's peak does not grow with the result, where `collect` holds it
    /// all. `.page_size(p)` sets the bound yourself.
    pub fn stream(mut self) -> impl Stream<Item = Result<O, Error>> + Send + 'static
    where
        S: 'static,
        O: Send + 'static,
    {
        let limit = self.options.limit;
        if limit.is_none() && self.options.page_size.is_none() {
            self.options.page_size = Some(STREAM_PAGE_ITEMS);
        }
        let decode = self.decode;
        // The engine is built on the first read: planning may read the layout directory.
        let start = Streamed::Start(Box::new(self));
        futures::stream::try_unfold(start, move |state| async move {
            let mut engine = match state {
                Streamed::Start(query) => Box::new(query.engine(limit, false).await?),
                Streamed::Reading(engine) => engine,
            };
            match engine.next_item().await? {
                Some(item) => Ok(Some((decode(item)?, Streamed::Reading(engine)))),
                None => Ok(None),
            }
        })
    }

    /// One page of `size` items after `cursor` (from the start when `None`), and the cursor of
    /// the next page. Paging with any size yields every item exactly once, in order.
    ///
    /// While other clients write, paging behaves as one DynamoDB Query read page by page: the
    /// items emitted are always in order (non-decreasing sort keys, non-increasing when
    /// descending); an item present throughout is emitted exactly once; an item written
    /// behind the last emitted item is never emitted (it would come out of order); one written
    /// ahead of it is emitted in its place; a deleted one is not emitted once deleted.
    ///
    /// The cursor is `None` exactly when nothing follows: a page that ends where every shard
    /// ends carries no cursor (a shard whose last page ended at `Limit` may cost one more small
    /// request to find that out). `size` 0 is an [`Error::InvalidQuery`]: such a page could
    /// never advance.
    ///
    /// # Cost
    ///
    /// A cursor records only keys the caller has seen, never the next item of a shard, so the
    /// next page cannot know which shards hold its items without asking them: a resumed page
    /// sends **one Query to every shard** (concurrently), plus a further Query to a shard
    /// whose returned items the merge used up while it may hold more. A first page costs the
    /// same. Measured over 10 shards (BENCHMARKS.md, "Cursor paging"): about 10 requests per
    /// page for page sizes 1, 5 and 20. A shard that ended on an earlier page is asked again
    /// (one small request, from where it stood): an item written there since, ahead of the
    /// last returned item, is returned in its place, in a steady layout as during a
    /// transition, where a migration moves items into shards that were empty.
    pub async fn page(mut self, size: usize, cursor: Option<&Cursor>) -> Result<Page<O>, Error> {
        cursor::page_size(size)?;
        let planned = self.plan(self.layouts().await?.as_ref())?;
        let seal = self.options.seal.take();
        let resume = match cursor {
            Some(c) => planned.resume(c, seal.as_ref())?,
            None => Resume::start(planned.plan.partitions.len()),
        };
        let Planned {
            plan, description, ..
        } = planned;
        let mut engine = Engine::new(plan, resume, Some(size), false);
        let mut items = Vec::with_capacity(size.min(1024));
        while let Some(item) = engine.next_item().await? {
            items.push((self.decode)(item)?);
        }
        engine.settle().await?;
        let cursor = (!engine.is_complete())
            .then(|| cursor::encode(&description, &engine.positions(), seal.as_ref()));
        Ok(Page {
            items,
            cursor,
            foreign: engine.foreign().clone(),
        })
    }

    /// Counts the matching items over every shard (per shard, summed; each shard reads the
    /// keys and tag of what it counts, so only the entity's items are counted). A failed
    /// shard fails the count.
    ///
    /// During a layout transition (`previous_n` or `legacy` declared) a base-table count
    /// reads the items instead, so that an item present in both layouts counts once.
    pub async fn count(self) -> Result<u64, Error> {
        Ok(self.count_by_shard().await?.into_iter().sum())
    }

    /// Where `item` stands in the query's order: 1 for the first, one more than the number of
    /// items ahead of it (in a `descending` query, the items with a greater sort key), with
    /// what the count cost. One scatter-gather of counts over the shards, in parallel. `item`
    /// need not be stored: its rank is where it would stand. Everything the query says (its
    /// [`sk`](Self::sk) condition, bounds, filter) applies; ties are broken by the sort key,
    /// which for a template like `SCORE#{score}#{player_id}` orders equal scores by player.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>, mine: &Score) -> Result<(), Error> {
    /// let rank = Score::query(repo, "g1").descending().rank(mine).await?;
    /// println!("#{} ({} read units, {} requests)", rank.position, rank.read_units, rank.requests);
    /// # Ok(()) }
    /// ```
    ///
    /// # Cost
    ///
    /// A count reads every item ahead of `item`: DynamoDB charges for the items it reads,
    /// returned or not, so a rank costs read units in proportion to itself (about one unit
    /// per 4 KB ahead, halved for eventually consistent reads), plus one request per shard
    /// and per 1 MB page. Measured in `BENCHMARKS.md` ("Rank cost"). The top of a board is
    /// cheap; rank 900,000 of a million reads 900,000 items.
    pub async fn rank(self, item: impl WholeSortKey) -> Result<Rank, Error> {
        let bound = item.into_bound();
        let ahead = if self.options.descending {
            self.after(bound)
        } else {
            self.before(bound)
        };
        let counted = ahead.count_with_cost().await?;
        Ok(Rank {
            position: counted.by_shard.iter().sum::<u64>() + 1,
            read_units: counted.read_units,
            requests: counted.requests,
        })
    }

    /// The `above` items just ahead of `item` in the query's order and the `below` items just
    /// after it, across every shard: "the 5 players above and below me". Each side is one
    /// bounded scatter-gather (`limit` items, merged), the two sent concurrently; `item` itself
    /// is in neither, and need not be stored. Both lists are in the query's order.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity, Error};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>, mine: &Score) -> Result<(), Error> {
    /// let near = Score::query(repo, "g1").descending().around(mine, 5, 5).await?;
    /// for s in near.above.iter().chain(&near.below) {
    ///     println!("{} {}", s.player_id, s.score);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// A `limit` set on the query is replaced by `above` and `below`.
    pub async fn around(
        self,
        item: impl WholeSortKey,
        above: usize,
        below: usize,
    ) -> Result<Around<O>, Error> {
        let bound = item.into_bound();
        let descending = self.options.descending;
        let (ahead, behind) = if descending {
            (self.clone().after(bound.clone()), self.before(bound))
        } else {
            (self.clone().before(bound.clone()), self.after(bound))
        };
        let side = |query: Query<S, O>, reverse: bool, n: usize| async move {
            if n == 0 {
                return Ok(Vec::new());
            }
            let mut query = query.limit(n);
            query.options.descending = descending != reverse;
            let mut items = query.collect().await?;
            if reverse {
                items.reverse();
            }
            Ok::<_, Error>(items)
        };
        let (above, below) =
            futures::try_join!(side(ahead, true, above), side(behind, false, below))?;
        Ok(Around { above, below })
    }

    /// The count of each shard, in shard order: how evenly the logical key is spread. During
    /// a transition: one entry per partition read (the current shards, then the previous
    /// layout's other keys), each item counted once, where it is authoritative.
    pub async fn count_by_shard(self) -> Result<Vec<u64>, Error> {
        Ok(self.count_with_cost().await?.by_shard)
    }

    /// The count of each shard, with the read units and requests it took.
    async fn count_with_cost(self) -> Result<scatter::Counted, Error> {
        let plan = self.plan(self.layouts().await?.as_ref())?.plan;
        if plan.transition.is_none() {
            return scatter::count_by_shard(&plan).await;
        }
        let mut counts = vec![0; plan.partitions.len()];
        let mut engine = Engine::new(
            plan.clone(),
            Resume::start(plan.partitions.len()),
            None,
            false,
        );
        while let Some(item) = engine.next_item().await? {
            let at = plan
                .partitions
                .iter()
                .position(|p| scatter::in_partition(p, &item));
            if let Some(at) = at {
                counts[at] += 1;
            }
        }
        let (read_units, requests) = engine.cost();
        Ok(scatter::Counted {
            by_shard: counts,
            read_units,
            requests,
        })
    }
}

/// Where a streamed query stands: not planned yet, or reading (the engine boxed once, when
/// the stream starts: the state moves once per item read).
enum Streamed<S, O> {
    Start(Box<Query<S, O>>),
    Reading(Box<Engine>),
}
