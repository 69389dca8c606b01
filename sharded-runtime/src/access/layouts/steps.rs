//! The steps of a change of one key's layout (see the module above for the protocol), and
//! the whole change run step by step.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::operation::put_item::PutItemError;

use super::cache::read_stored;
use super::moves::{migrate_key, KeyMigration};
use super::{to_item, KeyEntry, Phase, Stored};
use crate::access::entity::ShardedEntity;
use crate::access::handle::Handle;
use crate::error::layout::LayoutError;
use crate::error::Error;
use crate::keys::schema::KeyLayout;
use crate::keys::template::{parse_key_with, KeyContext};

/// How many times `change` migrates again when `finish` still finds items at the previous
/// count (writes that arrived late).
const FINISH_ATTEMPTS: usize = 5;

/// The per-key layouts of entity `E` (`max_n` on `#[pk]`): what the directory lists, and the
/// steps that widen or narrow one logical key online. From
/// [`Repo::layouts`](crate::Repo::layouts).
///
/// A change is [`begin`](Self::begin), [`advance`](Self::advance), [`migrate`](Self::migrate)
/// and [`finish`](Self::finish), each at least a lease and a margin after the one before
/// ([`LayoutTiming`](super::LayoutTiming)); [`change`](Self::change) runs them all, waiting as
/// needed, and resumes a change that stopped half way. Every step can be run again, by any
/// process: a step that does not follow the key's phase is refused, saying which step does.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// # async fn demo(repo: Repo<Score>) -> Result<(), Error> {
/// // The viral game: 20 shards, while writers and readers keep running.
/// let moved = repo.layouts().change("GAME#g1", 20).await?;
/// println!("{} items moved", moved.moved);
/// # Ok(()) }
/// ```
pub struct Layouts<E> {
    handle: Arc<Handle>,
    write_units_per_second: Option<f64>,
    _entity: PhantomData<fn() -> E>,
}

impl<E: ShardedEntity> Layouts<E> {
    pub(crate) fn new(handle: Arc<Handle>) -> Self {
        Layouts {
            handle,
            write_units_per_second: None,
            _entity: PhantomData,
        }
    }

    /// Keeps a key's migration under `units` write units per second (what its moves use,
    /// copies and deletes): a hot key's partitions are busy already. Unlimited by default.
    pub fn with_write_budget(mut self, units: f64) -> Self {
        self.write_units_per_second = Some(units);
        self
    }

    /// Every key the directory lists, read now: the keys whose count is not the declared
    /// `n`, and those changing.
    pub async fn entries(&self) -> Result<BTreeMap<String, KeyEntry>, Error> {
        Ok(self.stored().await?.entries)
    }

    /// The layout of logical key `key` (`GAME#g1`: the template without a shard), read now.
    pub async fn layout(&self, key: &str) -> Result<KeyLayout, Error> {
        self.check_key(key)?;
        let default = self.default_n();
        Ok(self
            .entries()
            .await?
            .get(key)
            .map_or(KeyLayout::steady(default), KeyEntry::layout))
    }

    /// Starts changing `key` to `to` shards: the `reading` phase (both counts read, the
    /// current one written). The key must be steady and `to` differ from its count.
    pub async fn begin(&self, key: &str, to: u32) -> Result<KeyEntry, Error> {
        self.check_key(key)?;
        let max_n = self.max_n()?;
        if !(1..=max_n).contains(&to) {
            return Err(LayoutError::OutOfRange {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                n: to,
                max_n,
            }
            .into());
        }
        let mut stored = self.stored().await?;
        let from = match stored.entries.get(key) {
            None => self.default_n(),
            Some(entry) if entry.phase == Phase::Steady => entry.to,
            Some(entry) => {
                return Err(LayoutError::CannotBegin {
                    entity: E::SCHEMA.entity,
                    key: key.to_owned(),
                    reason: format!(
                        "it is changing from {} to {} shards ({}); finish that change first",
                        entry.from,
                        entry.to,
                        entry.phase.name()
                    ),
                }
                .into())
            }
        };
        if from == to {
            return Err(LayoutError::CannotBegin {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                reason: format!("it has {to} shards already"),
            }
            .into());
        }
        let entry = KeyEntry {
            from,
            to,
            phase: Phase::Reading,
            since: self.handle.layouts.step_now(),
        };
        stored.entries.insert(key.to_owned(), entry);
        self.write(stored).await?;
        Ok(entry)
    }

    /// `reading` -> `writing`: writes go to the new count. Refused until `reading` is a lease
    /// and a margin old (every process reads both counts by then).
    pub async fn advance(&self, key: &str) -> Result<KeyEntry, Error> {
        self.check_key(key)?;
        let mut stored = self.stored().await?;
        let entry = self.in_phase(&stored, key, Phase::Reading, "advance")?;
        self.waited(key, &entry, "advance")?;
        let entry = KeyEntry {
            phase: Phase::Writing,
            since: self.handle.layouts.step_now(),
            ..entry
        };
        stored.entries.insert(key.to_owned(), entry);
        self.write(stored).await?;
        Ok(entry)
    }

    /// Moves every item of `key` still at the previous count to its place at the new one.
    /// Refused until `writing` is a lease and a margin old (no process writes at the previous
    /// count by then). Resumable: a run that stopped is run again, and finds what is left.
    pub async fn migrate(&self, key: &str) -> Result<KeyMigration, Error> {
        self.check_key(key)?;
        let stored = self.stored().await?;
        let entry = self.in_phase(&stored, key, Phase::Writing, "migrate")?;
        self.waited(key, &entry, "migrate")?;
        migrate_key::<E>(&self.handle, key, entry, self.write_units_per_second).await
    }

    /// Ends the change: the key is steady at its new count (its entry removed when that is
    /// the declared `n`). Refused while an item of the key is left at the previous count.
    pub async fn finish(&self, key: &str) -> Result<KeyLayout, Error> {
        self.check_key(key)?;
        let mut stored = self.stored().await?;
        let entry = self.in_phase(&stored, key, Phase::Writing, "finish")?;
        self.waited(key, &entry, "finish")?;
        let left = super::moves::remaining::<E>(&self.handle, key, entry).await?;
        if left > 0 {
            return Err(LayoutError::ItemsRemain {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                remaining: left,
            }
            .into());
        }
        if entry.to == self.default_n() {
            stored.entries.remove(key);
        } else {
            stored.entries.insert(
                key.to_owned(),
                KeyEntry {
                    phase: Phase::Steady,
                    since: self.handle.layouts.step_now(),
                    ..entry
                },
            );
        }
        self.write(stored).await?;
        Ok(KeyLayout::steady(entry.to))
    }

    /// Changes `key` to `to` shards online: every step, each when it may run (sleeping in
    /// between), the migration run until nothing is left. Resumes a change to `to` that
    /// stopped half way, and does nothing for a key already at `to`. Returns what the
    /// migration did.
    pub async fn change(&self, key: &str, to: u32) -> Result<KeyMigration, Error> {
        self.check_key(key)?;
        let mut entry = match self.entries().await?.get(key).copied() {
            Some(entry) if entry.phase != Phase::Steady && entry.to == to => entry,
            // Already there (a change that finished, run again): nothing to do.
            Some(entry) if entry.phase == Phase::Steady && entry.to == to => {
                return Ok(KeyMigration::default())
            }
            None if to == self.default_n() => return Ok(KeyMigration::default()),
            _ => self.begin(key, to).await?,
        };
        if entry.phase == Phase::Reading {
            self.sleep_until_due(&entry).await;
            entry = self.advance(key).await?;
        }
        self.sleep_until_due(&entry).await;
        let mut total = KeyMigration::default();
        for _ in 0..FINISH_ATTEMPTS {
            loop {
                let run = self.migrate(key).await?;
                total.add(&run);
                if run.blocked > 0 {
                    return Err(LayoutError::Blocked {
                        entity: E::SCHEMA.entity,
                        key: key.to_owned(),
                        blocked: run.blocked,
                    }
                    .into());
                }
                if run.left == 0 {
                    break;
                }
                // Items a writer changed while they moved, or throttled moves: again, a
                // little later.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            match self.finish(key).await {
                Ok(_) => return Ok(total),
                // A write placed under `reading` that arrived late (retried by the SDK past
                // the margin) left an item at the previous count: move it too.
                Err(Error::Layout(LayoutError::ItemsRemain { .. })) => {
                    tokio::time::sleep(self.handle.layouts.timing().margin).await;
                }
                Err(e) => return Err(e),
            }
        }
        self.finish(key).await?;
        Ok(total)
    }

    async fn sleep_until_due(&self, entry: &KeyEntry) {
        let due = entry.since + self.handle.layouts.timing().step_wait();
        let now = self.handle.layouts.step_now();
        if due > now {
            tokio::time::sleep(due - now).await;
        }
    }

    fn in_phase(
        &self,
        stored: &Stored,
        key: &str,
        phase: Phase,
        step: &'static str,
    ) -> Result<KeyEntry, Error> {
        match stored.entries.get(key) {
            Some(entry) if entry.phase == phase => Ok(*entry),
            found => {
                let (now, hint) = match found.map(|e| e.phase) {
                    None | Some(Phase::Steady) => ("steady", "start a change with `begin`"),
                    Some(Phase::Reading) => ("reading", "the next step is `advance`"),
                    Some(Phase::Writing) => {
                        ("writing", "the next steps are `migrate`, then `finish`")
                    }
                };
                Err(LayoutError::WrongPhase {
                    entity: E::SCHEMA.entity,
                    key: key.to_owned(),
                    phase: now,
                    step,
                    hint,
                }
                .into())
            }
        }
    }

    /// Refuses a step before the phase is a lease and a margin old.
    fn waited(&self, key: &str, entry: &KeyEntry, step: &'static str) -> Result<(), Error> {
        let due = entry.since + self.handle.layouts.timing().step_wait();
        let now = self.handle.layouts.step_now();
        if now < due {
            return Err(LayoutError::TooEarly {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                step,
                wait: due - now,
            }
            .into());
        }
        Ok(())
    }

    fn default_n(&self) -> u32 {
        E::SCHEMA.pk.sharding.shard_count().unwrap_or(1)
    }

    fn max_n(&self) -> Result<u32, Error> {
        E::SCHEMA.pk.per_key.map(|p| p.max_n).ok_or_else(|| {
            LayoutError::NotPerKey {
                entity: E::SCHEMA.entity,
            }
            .into()
        })
    }

    /// Refuses a text that is no logical key of the entity (and an entity without per-key
    /// layouts).
    fn check_key(&self, key: &str) -> Result<(), Error> {
        self.max_n()?;
        let pk = &E::SCHEMA.pk;
        let context = KeyContext {
            entity: E::SCHEMA.entity,
            attribute: pk.attribute,
        };
        parse_key_with(context, pk.template, key, None)
            .map(drop)
            .map_err(|reason| {
                LayoutError::NotALogicalKey {
                    entity: E::SCHEMA.entity,
                    key: key.to_owned(),
                    template: pk.template.source,
                    reason: reason.to_string(),
                }
                .into()
            })
    }

    async fn stored(&self) -> Result<Stored, Error> {
        self.max_n()?;
        read_stored(self.handle.client(), self.handle.table(), E::SCHEMA).await
    }

    /// Writes the directory, only if nobody wrote it since it was read; this process then
    /// reads it again before its next request.
    async fn write(&self, stored: Stored) -> Result<(), Error> {
        let read = stored.revision;
        let item = to_item(
            E::SCHEMA,
            &Stored {
                revision: read + 1,
                ..stored
            },
        );
        let request = self
            .handle
            .client()
            .put_item()
            .table_name(self.handle.table())
            .set_item(Some(item))
            .expression_attribute_names("#pk", E::SCHEMA.pk.attribute);
        let request = if read == 0 {
            request.condition_expression("attribute_not_exists(#pk)")
        } else {
            request
                .condition_expression("attribute_exists(#pk) AND revision = :read")
                .expression_attribute_values(
                    ":read",
                    aws_sdk_dynamodb::types::AttributeValue::N(read.to_string()),
                )
        };
        let result = request.send().await;
        self.handle.layouts.forget(E::SCHEMA.entity);
        match result {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.as_service_error(),
                    Some(PutItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Err(LayoutError::Conflict {
                    entity: E::SCHEMA.entity,
                }
                .into())
            }
            Err(e) => Err(Error::dynamo("PutItem", self.handle.table(), e)),
        }
    }
}
