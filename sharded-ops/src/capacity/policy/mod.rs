//! The layout policy: an opt-in loop that widens a per-key entity's hot keys and narrows them
//! back once they stay cold, from the load a hot-key collector measures.
//!
//! Layout: this file is the policy's settings and how it is started; `decide` is what it
//! decides at one look (a pure function, tested exhaustively), `runner` the loop that looks,
//! records each decision in telemetry and runs the changes.

mod decide;
mod runner;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use sharded_runtime::capacity::HotKeyStats;
use sharded_runtime::{Repo, ShardedEntity};

use crate::capacity::planner::DEFAULT_HEADROOM;

/// Widens a per-key entity's hot keys and narrows them back once cold, on its own: off until
/// you start it with [`run`](Self::run).
///
/// At every `interval` it reads the write load of the entity's logical keys in a
/// [`HotKeyStats`] collector and the layout directory (`repo.layouts()`), and for each key:
///
/// - **hot** (its busiest physical key's peak second reaches `widen_at` x the per-key write
///   limit): widens it to the count the shard planner gives for the key's peak (each shard
///   under the limit less `headroom`), capped at `max_n`, never below its count now;
/// - **cold** (a widened key whose peak second, spread over the declared `n`, stays under
///   `narrow_below` x the limit) for `narrow_after`: narrows it back to the declared `n`;
/// - **changing** already (here or in another process): leaves it alone.
///
/// A change is [`ChangeLayout::change`](crate::layouts::ChangeLayout::change) run in the
/// background, one per key at a time; one that fails is resumed at the next look. Every
/// decision is a `tracing` event and a count in a metric (`sharded::telemetry`'s
/// `LAYOUT_POLICY_EVENT` and `LAYOUT_DECISIONS`).
///
/// Reads do not widen a key: the collector does not tell a point read (which more shards
/// spread) from a query (which reads every shard, so more shards only cost more).
///
/// ```
/// use std::time::Duration;
/// use sharded::capacity::LayoutPolicy;
///
/// let policy = LayoutPolicy::default()
///     .with_widen_at(0.7)
///     .with_narrow_after(Duration::from_secs(3_600));
/// assert_eq!(policy.widen_at, 0.7);
/// assert_eq!(policy.narrow_below, 0.25);
/// assert_eq!(policy.headroom, 0.3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct LayoutPolicy {
    /// The fraction of the per-key write limit at which a key is hot (0.8 by default).
    pub widen_at: f64,
    /// The fraction of the per-key write limit each of the declared `n` shards would stay
    /// under for a widened key to be cold (0.25 by default); below `widen_at`, so a key
    /// narrowed back is not hot.
    pub narrow_below: f64,
    /// How long a widened key stays cold before it is narrowed (15 minutes by default).
    pub narrow_after: Duration,
    /// What a widening keeps free on each shard, as the planner does (0.3 by default: each
    /// shard planned for 70% of the limit).
    pub headroom: f64,
    /// How often the policy looks (30 seconds by default).
    pub interval: Duration,
    /// The write units per second a change's migration may use (unlimited by default).
    pub migration_write_units: Option<f64>,
}

impl Default for LayoutPolicy {
    fn default() -> Self {
        LayoutPolicy {
            widen_at: 0.8,
            narrow_below: 0.25,
            narrow_after: Duration::from_secs(15 * 60),
            headroom: DEFAULT_HEADROOM,
            interval: Duration::from_secs(30),
            migration_write_units: None,
        }
    }
}

/// Why a policy did not start.
///
/// ```
/// use sharded::capacity::{LayoutPolicy, PolicyError};
/// let error = LayoutPolicy::default().with_widen_at(1.5).validate().unwrap_err();
/// assert!(matches!(error, PolicyError::InvalidNumber { field: "widen_at", .. }));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The entity has one layout for every key.
    #[error(
        "{entity} has one layout for every key, so the layout policy has nothing to widen: \
         declare `max_n` on its #[pk] (see the guide, \"Shard only what is hot\")"
    )]
    NotPerKey {
        /// The entity.
        entity: &'static str,
    },
    /// A setting is out of its range.
    #[error("the layout policy's `{field}` is {value}; expected {expected}")]
    InvalidNumber {
        /// The setting.
        field: &'static str,
        /// Its value.
        value: f64,
        /// What it may be.
        expected: &'static str,
    },
    /// `run` was called outside a Tokio runtime.
    #[error(
        "the layout policy runs on a Tokio runtime: call `run` from within one (inside \
         `#[tokio::main]` or `Runtime::enter`)"
    )]
    NoRuntime,
}

impl LayoutPolicy {
    /// Sets the fraction of the per-key write limit at which a key is hot.
    pub fn with_widen_at(mut self, fraction: f64) -> Self {
        self.widen_at = fraction;
        self
    }

    /// Sets the fraction of the per-key write limit under which a widened key is cold.
    pub fn with_narrow_below(mut self, fraction: f64) -> Self {
        self.narrow_below = fraction;
        self
    }

    /// Sets how long a widened key stays cold before it is narrowed.
    pub fn with_narrow_after(mut self, after: Duration) -> Self {
        self.narrow_after = after;
        self
    }

    /// Sets what a widening keeps free on each shard (a fraction of the limit).
    pub fn with_headroom(mut self, headroom: f64) -> Self {
        self.headroom = headroom;
        self
    }

    /// Sets how often the policy looks.
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Keeps each change's migration under `units` write units per second
    /// ([`ChangeLayout::with_write_budget`](crate::layouts::ChangeLayout::with_write_budget)).
    pub fn with_migration_write_units(mut self, units: f64) -> Self {
        self.migration_write_units = Some(units);
        self
    }

    /// Checks the settings: the first out of range, named.
    ///
    /// ```
    /// use sharded::capacity::LayoutPolicy;
    /// assert!(LayoutPolicy::default().validate().is_ok());
    /// assert!(LayoutPolicy::default().with_narrow_below(0.9).validate().is_err()); // above widen_at
    /// ```
    pub fn validate(&self) -> Result<(), PolicyError> {
        let invalid = |field, value, expected| {
            Err(PolicyError::InvalidNumber {
                field,
                value,
                expected,
            })
        };
        if !(self.widen_at > 0.0 && self.widen_at <= 1.0) {
            return invalid(
                "widen_at",
                self.widen_at,
                "a fraction of the per-key limit above 0.0, up to 1.0",
            );
        }
        if !(self.narrow_below >= 0.0 && self.narrow_below < self.widen_at) {
            return invalid(
                "narrow_below",
                self.narrow_below,
                "a fraction of 0.0 or more, below widen_at (or a narrowed key would be hot)",
            );
        }
        if !(0.0..1.0).contains(&self.headroom) {
            return invalid(
                "headroom",
                self.headroom,
                "a fraction from 0.0 up to (not including) 1.0",
            );
        }
        if self.interval.is_zero() {
            return invalid("interval", 0.0, "a duration above zero");
        }
        if let Some(units) = self.migration_write_units {
            if !(units.is_finite() && units > 0.0) {
                return invalid(
                    "migration_write_units",
                    units,
                    "a finite number of write units per second above 0",
                );
            }
        }
        Ok(())
    }

    /// Starts the policy for `repo`'s entity, reading the load from `stats` (the collector the
    /// repositories of the table record into: `Repo::with_stats`). It runs until the
    /// [`PolicyTask`] is stopped or dropped.
    ///
    /// Refused for an entity without `max_n` ([`PolicyError::NotPerKey`]), for settings out of
    /// range, and outside a Tokio runtime.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Repo, ShardedEntity};
    /// use sharded::capacity::{HotKeyStats, LayoutPolicy};
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
    /// #[sk(template = "SCORE#{score}#{player_id}")]
    /// struct Score { game_id: String, player_id: String, score: u64 }
    ///
    /// # async fn demo(client: sharded::aws_sdk_dynamodb::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let stats = Arc::new(HotKeyStats::new(Duration::from_secs(60)));
    /// let repo = Repo::<Score>::new(client, "scores").with_stats(Arc::clone(&stats));
    /// let task = LayoutPolicy::default().run(repo.clone(), stats)?;
    /// // ... serve requests with `repo` ...
    /// task.stop();
    /// # Ok(()) }
    /// ```
    pub fn run<E>(&self, repo: Repo<E>, stats: Arc<HotKeyStats>) -> Result<PolicyTask, PolicyError>
    where
        E: ShardedEntity + Send + Sync + 'static,
    {
        self.validate()?;
        if E::SCHEMA.pk.per_key.is_none() {
            return Err(PolicyError::NotPerKey {
                entity: E::SCHEMA.entity,
            });
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| PolicyError::NoRuntime)?;
        let looks = runtime.spawn(runner::run_policy(*self, repo, stats));
        Ok(PolicyTask { looks })
    }
}

/// A running [`LayoutPolicy`]: it looks until [`stop`](Self::stop)ped or dropped.
///
/// Stopping ends the looks; a change already started runs to its end (a key is never left
/// half-changed by a stop: the steps go on in the background). A change cut short anyway
/// (the process ends) resumes with `repo.layouts().change(key, to)` (`ChangeLayout::change`).
#[derive(Debug)]
#[must_use = "the policy stops when its task is dropped: keep it while the policy should run"]
pub struct PolicyTask {
    looks: tokio::task::JoinHandle<()>,
}

impl PolicyTask {
    /// Stops the looks (changes under way finish).
    pub fn stop(self) {
        self.looks.abort();
    }

    /// Whether it still looks.
    pub fn is_running(&self) -> bool {
        !self.looks.is_finished()
    }
}

impl Drop for PolicyTask {
    fn drop(&mut self) {
        self.looks.abort();
    }
}
