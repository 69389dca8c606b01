//! Reads: point reads (through the layouts of a transition), the entry points of queries and
//! scans, and the migration.

use std::sync::Arc;

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;

use crate::access::entity::ShardedEntity;
use crate::access::placement::Placement;
use crate::access::read::batch;
use crate::access::read::query::Query;
use crate::access::read::range::RangeQuery;
use crate::access::read::scan::Scan;
use crate::access::write::moves::is_marked;
use crate::access::write::transaction::{ItemKey, TransactGet};
use crate::capacity::stats::record;
use crate::capacity::units::Consistency;
use crate::error::{Error, KeyError};
use crate::item::Item;
use crate::keys::encoding::KeyPart;
use crate::keys::generated::RangeBound;
use crate::keys::shards::{Partitions, ShardKeys};

use super::Repo;

impl<E> Repo<E> {
    /// An empty transactional read on this repository's table: up to 100 items of any
    /// entities and shards in one snapshot. See [`TransactGet`].
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
    /// let (alice, bob) = (Wallet::key("alice")?, Wallet::key("bob")?);
    /// let mut answer = repo.transact_get().get(&alice).get(&bob).send().await?;
    /// let total = answer.take(&alice)?.map_or(0, |w| w.coins) + answer.take(&bob)?.map_or(0, |w| w.coins);
    /// # Ok(()) }
    /// ```
    pub fn transact_get(&self) -> TransactGet {
        TransactGet::new(Arc::clone(&self.handle))
    }
}

impl<E: ShardedEntity> Repo<E> {
    /// One `GetItem` by physical key. The generated `Entity::get(&repo, ...)` builds the key
    /// (for a hash-sharded key, on the right shard) and calls this.
    pub(crate) async fn get_by_key(
        &self,
        pk: String,
        sk: Option<String>,
    ) -> Result<Option<E>, Error> {
        let placement = Placement::fixed(E::SCHEMA, pk, sk);
        self.handle
            .item_operation::<E, _>("get", &placement, self.get_at(&placement))
            .await
    }

    /// One `GetItem` at the current place of `placement`, recorded when stats are on.
    async fn get_at(&self, placement: &Placement) -> Result<Option<E>, Error> {
        self.get_stored_at(placement)
            .await?
            .map(E::from_item)
            .transpose()
    }

    /// [`get_at`](Self::get_at), the item as stored.
    async fn get_stored_at(&self, placement: &Placement) -> Result<Option<Item>, Error> {
        let key = placement.current_key()?;
        let result = self
            .handle
            .client
            .get_item()
            .table_name(self.handle.table())
            .set_key(Some(key))
            .set_return_consumed_capacity(
                self.handle
                    .stats
                    .as_ref()
                    .map(|_| ReturnConsumedCapacity::Total),
            )
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", self.handle.table(), e));
        let answer = result.as_ref().map(|o| o.consumed_capacity.as_ref());
        let shards = record::spelled_base(E::SCHEMA, placement.layout().map(|l| l.n));
        record::read(
            self.stats(),
            None,
            placement.pk(),
            shards,
            Consistency::Eventual,
            answer,
        );
        Ok(result?.item)
    }

    /// Reads the item with sort key `sk` on every shard of a logical key, in one
    /// `BatchGetItem` per 100 shards: how a randomly sharded item is found, since its shard
    /// is not known. Returns every shard's copy, in shard order.
    pub(crate) async fn get_from_all_shards(
        &self,
        shards: ShardKeys,
        sk: Option<String>,
    ) -> Result<Vec<E>, Error> {
        // A per-key layout: the key's shards under its entry in the layout directory (both
        // counts while it changes).
        let shards: Vec<String> = match self.handle.layouts_of(E::SCHEMA).await? {
            Some(layouts) => {
                let logical = shards.logical_key().to_owned();
                let layout = layouts.layout(&logical);
                let suffix = E::SCHEMA.pk.suffix;
                let mut all: Vec<String> = ShardKeys::new(logical.clone(), Some(layout.n))
                    .with_suffix(suffix)
                    .collect();
                for previous in layout
                    .previous
                    .into_iter()
                    .flat_map(|n| ShardKeys::new(logical.clone(), Some(n)).with_suffix(suffix))
                {
                    if !all.contains(&previous) {
                        all.push(previous);
                    }
                }
                all
            }
            None => shards.collect(),
        };
        let keys: Vec<Item> = shards
            .into_iter()
            .map(|pk| Placement::fixed(E::SCHEMA, pk, sk.clone()).current_key())
            .collect::<Result<_, _>>()?;
        let order: Vec<String> = keys
            .iter()
            .filter_map(|k| {
                k.get(E::SCHEMA.pk.attribute)
                    .and_then(|v| v.as_s().ok())
                    .cloned()
            })
            .collect();
        let mut items = batch::get(
            self.handle.client(),
            self.handle.table(),
            keys,
            self.handle.retry(),
            self.concurrency(),
        )
        .await?;
        let position = |item: &Item| {
            item.get(E::SCHEMA.pk.attribute)
                .and_then(|v| v.as_s().ok())
                .and_then(|pk| order.iter().position(|o| o == pk))
        };
        items.sort_by_key(|item| position(item));
        items.into_iter().map(E::from_item).collect()
    }

    /// A point read through the layout: the item at its current place, or, when there is none
    /// and a transition is declared, at its previous place: a not-yet-migrated item is found
    /// where it is (the current copy wins).
    pub(crate) async fn get_in_layout(&self, key: &ItemKey<E>) -> Result<Option<E>, Error> {
        let placement = self.handle.place_key(key).await?;
        self.handle
            .item_operation::<E, _>("get", &placement, self.get_through_layout(&placement))
            .await
    }

    /// [`get_in_layout`](Self::get_in_layout) within its span.
    async fn get_through_layout(&self, placement: &Placement) -> Result<Option<E>, Error> {
        if placement.prefers_previous() {
            // A per-key layout in `reading`: the target's copy (the previous place) wins.
            return Box::pin(self.get_through_layout(&placement.swapped())).await;
        }
        match self.get_stored_at(placement).await? {
            // While a key's layout changes per key, processes a phase apart write at either
            // count (see `layouts`): a copy marked `moved` here had its item at the other
            // place when it was marked, so that place (read consistently) answers.
            Some(found) if placement.has_previous() && is_marked(E::SCHEMA, &found) => {
                let Some(key) = placement.previous_key()? else {
                    return Ok(None);
                };
                let other = self
                    .handle
                    .client
                    .get_item()
                    .table_name(self.handle.table())
                    .set_key(Some(key))
                    .consistent_read(true)
                    .send()
                    .await
                    .map_err(|e| Error::dynamo("GetItem", self.handle.table(), e))?
                    .item;
                return other
                    .filter(|item| !is_marked(E::SCHEMA, item))
                    .map(E::from_item)
                    .transpose();
            }
            Some(found) => return E::from_item(found).map(Some),
            None => {}
        }
        if placement.previous_unknown() {
            // Any previous shard may hold it: one `BatchGetItem` of them all, the first
            // shard's copy first.
            let found = batch::get(
                self.handle.client(),
                self.handle.table(),
                placement.candidate_keys()?,
                self.handle.retry(),
                self.concurrency(),
            )
            .await?;
            let shard_of = |item: &Item| {
                let pk = item.get(E::SCHEMA.pk.attribute).and_then(|v| v.as_s().ok());
                placement.candidates().iter().position(|c| Some(c) == pk)
            };
            let first = found.into_iter().min_by_key(shard_of);
            return self.old_copy_read(placement, first).await;
        }
        let Some(key) = placement.previous_key()? else {
            return Ok(None);
        };
        let found = self
            .handle
            .client
            .get_item()
            .table_name(self.handle.table())
            .set_key(Some(key))
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", self.handle.table(), e))?
            .item;
        self.old_copy_read(placement, found).await
    }

    /// The item a point read found at a previous place (its current place held none). An old
    /// copy marked as moved had its item at its current place when it was marked: that place
    /// is read again, consistently (the copy may have been made after the first read), and
    /// when it is empty the item was deleted since, so there is none.
    async fn old_copy_read(
        &self,
        placement: &Placement,
        found: Option<Item>,
    ) -> Result<Option<E>, Error> {
        match found {
            Some(old) if is_marked(E::SCHEMA, &old) => self
                .handle
                .client
                .get_item()
                .table_name(self.handle.table())
                .set_key(Some(placement.current_key()?))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| Error::dynamo("GetItem", self.handle.table(), e))?
                .item
                .map(E::from_item)
                .transpose(),
            found => found.map(E::from_item).transpose(),
        }
    }

    /// A scatter-gather query of the base table (`index = None`) or GSI `gsiN` (`Some(N)`)
    /// over `partitions`: every shard of a logical key, the previous layout's too during a
    /// transition, or the shards of an index keyed by the item's attributes. The one entry of
    /// the generated `query*` functions (through `__private`); a key error is the query's,
    /// returned when it runs.
    pub(crate) fn query_of(
        &self,
        index: Option<u8>,
        partitions: Result<Partitions, KeyError>,
    ) -> Query<E> {
        Query::new(Arc::clone(self.handle()), index, partitions)
    }

    /// A parallel scan of every item of `E` in the table (other entities are filtered out):
    /// for exports, backfills and analytics jobs, not for serving requests.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// # async fn demo(repo: &Repo<Score>) -> Result<(), Error> {
    /// let scores: Vec<Score> = repo.scan().segments(8).read_units_per_second(100.0).collect().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// See [`Scan`] for the settings (segments, concurrency, consistency, rate limit, page
    /// size) and how items come out. A scan returns what is stored: items past their
    /// `#[sharded(ttl)]` expiry that DynamoDB has not deleted yet (a query hides them), and,
    /// during a layout transition, both copies of an item the migration is moving.
    pub fn scan(&self) -> Scan<E> {
        Scan::new(Arc::clone(self.handle()))
    }
}

/// The range query of the generated `<query>_range` functions: the partition key of `index`
/// (`None`: the table's), its fields other than the bucketed one (`fields`, in template
/// order), and the bounds.
#[doc(hidden)]
pub fn range_query<E: ShardedEntity>(
    repo: &Repo<E>,
    index: Option<u8>,
    fields: &[&dyn KeyPart],
    from: RangeBound,
    to: RangeBound,
) -> RangeQuery<E> {
    RangeQuery::new(Arc::clone(repo.handle()), index, fields, from, to)
}
