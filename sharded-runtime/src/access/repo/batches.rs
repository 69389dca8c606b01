//! Batches: `batch_put`, `batch_delete` and `batch_get`, split into DynamoDB's request
//! sizes, unprocessed items retried.

use std::collections::HashSet;

use crate::access::entity::ShardedEntity;
use crate::access::placement::Placement;
use crate::access::read::batch;
use crate::access::write::write_rules::physical_item;
use crate::capacity::stats::record;
use crate::error::Error;
use crate::item::Item;

use super::Repo;

impl<E: ShardedEntity> Repo<E> {
    /// Writes many entities with `BatchWriteItem` (25 per request, concurrently), retrying
    /// unprocessed items with exponential backoff and full jitter. If the retry budget runs
    /// out, [`Error::BatchIncomplete`] carries every item not written.
    ///
    /// When a key is given more than once, only its last item is written: the last write per
    /// key (partition and sort key) wins, every time, and no request is spent on writes
    /// that would be overwritten.
    ///
    /// The unguarded fast path: `BatchWriteItem` takes no conditions, so unlike
    /// [`put`](Self::put) a batch put overwrites whatever item has the key, another entity's
    /// included. Keep templates of different entities apart
    /// ([`TableDefinition::merge`](crate::schema::TableDefinition::merge) checks them), or use
    /// `put` where the table holds entities whose keys can meet. Items over 400 KB and keys
    /// over DynamoDB's size limits are refused before anything is sent.
    ///
    /// A versioned entity (`#[sharded(version)]`) is refused before anything is sent
    /// ([`Error::VersionedBatch`]): a batch can neither check the version read nor bump it, so
    /// it would undo a racing writer's change. Write those with `put`, or in a
    /// [`Transaction`](crate::transaction::Transaction).
    ///
    /// During a layout transition (`previous_n`, `legacy`), each item still at its previous
    /// place is moved to its current one first (one consistent `GetItem` per item, plus the
    /// move of an item not yet migrated: a batch cannot mark the old copy a move deletes, see
    /// [`TableSchema::move_attribute`](crate::keys::schema::TableSchema::move_attribute)),
    /// then the puts are written, then the previous places are deleted (a second round of
    /// `BatchWriteItem`, for the puts that were written, which finds them empty unless a
    /// writer of the previous layout wrote there meanwhile): no copy stays behind. Items whose
    /// previous delete stays unprocessed are in the error.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, scores: Vec<Score>) -> Result<(), Error> {
    /// repo.batch_put(&scores).await?;
    /// # Ok(()) }
    /// ```
    pub async fn batch_put<'a>(
        &self,
        entities: impl IntoIterator<Item = &'a E>,
    ) -> Result<(), Error>
    where
        E: 'a,
    {
        if E::SCHEMA.version.is_some() {
            return Err(Error::VersionedBatch {
                operation: "batch_put",
                entity: E::SCHEMA.entity,
            });
        }
        let mut puts = Vec::new();
        let mut previous = Vec::new();
        let mut settled = Vec::new();
        for entity in entities {
            let placement = self.handle.place(entity).await?;
            puts.push(batch::Write::Put(physical_item(entity, &placement)?));
            // A per-key layout in `writing` puts at the target alone, as `put` does: a copy
            // left at the previous count is older, and the target's wins.
            if !placement.put_checks_previous() {
                continue;
            }
            if let Some(key) = placement.previous_key()? {
                previous.push((placement.current_key()?, key));
            }
            if placement.has_previous() || placement.previous_unknown() {
                settled.push(placement);
            }
        }
        self.settle_all(&settled).await?;
        let written = self.run_batch(puts).await;
        // Failed outright: what was written is not known; the previous copies stay.
        let Some(unwritten) = unprocessed_keys::<E>(&written) else {
            return written;
        };
        let deletes: Vec<batch::Write> = previous
            .into_iter()
            .filter(|(current, _)| !unwritten.contains(&key_of::<E>(current)))
            .map(|(_, previous)| batch::Write::Delete(previous))
            .collect();
        let deleted = self.run_batch(deletes).await;
        incomplete(written, Vec::new(), deleted)
    }

    /// Deletes many entities with `BatchWriteItem`, as [`batch_put`](Self::batch_put): one
    /// delete per key, unguarded (an item of another entity at one of the keys is deleted
    /// too).
    ///
    /// During a layout transition (`previous_n`, `legacy`), the copies at the items' previous
    /// places are deleted first, in a round of their own, and only then the current ones: an
    /// item whose previous delete stays unprocessed keeps its current copy too (its current
    /// delete is not sent), so a concurrent copy from the previous place (the migration, an
    /// update) cannot bring it back. [`Error::BatchIncomplete`] then lists both of its keys.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, scores: Vec<Score>) -> Result<(), Error> {
    /// repo.batch_delete(&scores).await?;
    /// # Ok(()) }
    /// ```
    pub async fn batch_delete<'a>(
        &self,
        entities: impl IntoIterator<Item = &'a E>,
    ) -> Result<(), Error>
    where
        E: 'a,
    {
        let mut items = Vec::new();
        let mut unknown = Vec::new();
        for entity in entities {
            let placement = self.handle.place(entity).await?;
            items.push((placement.current_key()?, placement.previous_key()?));
            if placement.previous_unknown() {
                unknown.push(placement);
            }
        }
        // Old copies at previous shards of unknown placement are moved to their current
        // place first, so deleting it deletes them.
        self.settle_all(&unknown).await?;
        let previous: Vec<batch::Write> = items
            .iter()
            .filter_map(|(_, previous)| previous.clone().map(batch::Write::Delete))
            .collect();
        let first = self.run_batch(previous).await;
        // Failed outright: no current copy is deleted.
        let Some(held) = unprocessed_keys::<E>(&first) else {
            return first;
        };
        let (skipped, current): (Vec<_>, Vec<_>) = items.into_iter().partition(|(_, previous)| {
            previous
                .as_ref()
                .is_some_and(|p| held.contains(&key_of::<E>(p)))
        });
        let skipped: Vec<Item> = skipped.into_iter().map(|(current, _)| current).collect();
        let current: Vec<batch::Write> = current
            .into_iter()
            .map(|(current, _)| batch::Write::Delete(current))
            .collect();
        let second = self.run_batch(current).await;
        incomplete(first, skipped, second)
    }

    /// Runs batch writes, the last per key, then records what they wrote (units from the
    /// size of the item or key sent: `BatchWriteItem` reports capacity per table, not per
    /// key) and, as throttled, what they returned unprocessed.
    async fn run_batch(&self, writes: Vec<batch::Write>) -> Result<(), Error> {
        // A round with nothing to write (no item in a transition, say) sends nothing.
        if writes.is_empty() {
            return Ok(());
        }
        let writes = batch::last_write_per_key(writes, key_of::<E>);
        let _written = self.handle.writing_to(
            writes
                .iter()
                .filter_map(|w| w.item().get(E::SCHEMA.pk.attribute))
                .filter_map(|v| v.as_s().ok())
                .map(String::as_str),
        );
        // A put is recorded with its item, a delete with its key (its item unknown: at
        // least the one unit every write costs).
        let recorded: Option<Vec<Item>> = self
            .handle
            .stats
            .as_ref()
            .map(|_| writes.iter().map(|w| w.item().clone()).collect());
        let result = batch::write(
            self.handle.client(),
            self.handle.table(),
            writes,
            self.handle.retry(),
            self.concurrency(),
        )
        .await;
        let items = recorded.as_deref().unwrap_or_default();
        record::batch_writes(self.stats(), E::SCHEMA, items, &result);
        result
    }

    /// Reads many items by physical key with `BatchGetItem` (100 per request), retrying
    /// unprocessed keys; keys with no item are simply absent from the result.
    ///
    /// When some keys cannot be read within the retry budget (or a request fails for good),
    /// [`Error::BatchIncomplete`] carries the keys not read (`unprocessed`) and the items that
    /// were (`retrieved`, read with `E::from_item`): a read that fails part-way loses nothing
    /// it got. Empty keys and keys over DynamoDB's size limits are refused before sending.
    ///
    /// It reads exactly the physical keys given: during a layout transition, an item not yet
    /// migrated is at its previous place, which only `get` (or a key of both places) finds. An
    /// untagged item the legacy service wrote at a key given (during a `legacy` transition) is
    /// read as this entity when its keys parse as the legacy template's and the entity's, as
    /// `get` reads it.
    ///
    /// ```no_run
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # async fn demo<Score: ShardedEntity>(repo: Repo<Score>, keys: Vec<(String, Option<String>)>) -> Result<(), Error> {
    /// let found: Vec<Score> = match repo.batch_get(keys).await {
    ///     Ok(found) => found,
    ///     Err(Error::BatchIncomplete { retrieved, .. }) => {
    ///         retrieved.into_iter().map(Score::from_item).collect::<Result<_, _>>()?
    ///     }
    ///     Err(e) => return Err(e),
    /// };
    /// # Ok(()) }
    /// ```
    pub async fn batch_get(
        &self,
        keys: impl IntoIterator<Item = (String, Option<String>)>,
    ) -> Result<Vec<E>, Error> {
        let keys: Vec<Item> = keys
            .into_iter()
            .map(|(pk, sk)| Placement::fixed(E::SCHEMA, pk, sk).current_key())
            .collect::<Result<_, _>>()?;
        let items = batch::get(
            self.handle.client(),
            self.handle.table(),
            keys,
            self.handle.retry(),
            self.concurrency(),
        )
        .await?;
        items.into_iter().map(E::from_item).collect()
    }
}

/// The outcome of a batch of two rounds: `first`'s, with `skipped` (writes of the second
/// round not sent because their first-round write stayed unprocessed) and `second`'s
/// unprocessed items added to one [`Error::BatchIncomplete`].
fn incomplete(
    first: Result<(), Error>,
    skipped: Vec<Item>,
    second: Result<(), Error>,
) -> Result<(), Error> {
    match (first, second) {
        (Ok(()), Ok(())) if skipped.is_empty() => Ok(()),
        (
            Err(Error::BatchIncomplete {
                operation,
                mut unprocessed,
                retrieved,
                attempts,
                source,
            }),
            second,
        ) => {
            unprocessed.extend(skipped);
            match second {
                Err(Error::BatchIncomplete {
                    unprocessed: more, ..
                }) => unprocessed.extend(more),
                Err(other) => return Err(other),
                Ok(()) => {}
            }
            Err(Error::BatchIncomplete {
                operation,
                unprocessed,
                retrieved,
                attempts,
                source,
            })
        }
        (
            Ok(()),
            Err(Error::BatchIncomplete {
                operation,
                mut unprocessed,
                retrieved,
                attempts,
                source,
            }),
        ) => {
            unprocessed.extend(skipped);
            Err(Error::BatchIncomplete {
                operation,
                unprocessed,
                retrieved,
                attempts,
                source,
            })
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(()), Ok(())) => Err(Error::BatchIncomplete {
            operation: "BatchWriteItem",
            unprocessed: skipped,
            retrieved: Vec::new(),
            attempts: 0,
            source: None,
        }),
    }
}

/// The keys a round of batch writes left unprocessed (none when it wrote everything), or
/// `None` when it failed outright, so what it wrote is not known.
fn unprocessed_keys<E: ShardedEntity>(round: &Result<(), Error>) -> Option<HashSet<BatchKey>> {
    match round {
        Ok(()) => Some(HashSet::new()),
        Err(Error::BatchIncomplete { unprocessed, .. }) => {
            Some(unprocessed.iter().map(key_of::<E>).collect())
        }
        Err(_) => None,
    }
}

/// The partition and sort key of an item, as a batch compares them.
type BatchKey = (Option<String>, Option<String>);

/// The primary key attributes of an item of `E`, for de-duplicating batch requests.
fn key_of<E: ShardedEntity>(item: &Item) -> BatchKey {
    let text = |attr: &str| item.get(attr).and_then(|v| v.as_s().ok()).cloned();
    (
        text(E::SCHEMA.pk.attribute),
        E::SCHEMA.sk.and_then(|sk| text(sk.attribute)),
    )
}
