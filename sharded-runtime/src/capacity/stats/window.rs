//! The sliding window: one bucket of units and throttles per key and second, pruned as time
//! passes.
//!
//! Public only for sharded-ops (re-exported hidden as `sharded_runtime::__ops`): the report,
//! the rollup by logical key and recordings read these buckets. Not an API.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::capacity::limits::PerKeyLimits;
use crate::capacity::stats::thresholds::HotKeyThresholds;
use crate::keys::suffix::ShardSuffix;

/// A collector's window as [`HotKeyStats::__window`](crate::capacity::HotKeyStats::__window)
/// lends it: the buckets, locked, and what a report measures them by.
#[derive(Debug)]
pub struct Window<'a> {
    /// Every key's buckets (not swept: [`State::sweep`] first to drop what is too old).
    pub state: &'a mut State,
    /// The collector's clock now.
    pub now: Duration,
    /// When the collector started (or its clock was set).
    pub start: Duration,
    /// The window, in whole seconds (at least 1).
    pub window_secs: u64,
    /// The per-key limits utilisation is measured against.
    pub limits: PerKeyLimits,
    /// When flags are raised.
    pub thresholds: HotKeyThresholds,
}

/// The base table's name inside the collector; DynamoDB index names have at least 3
/// characters, so it never clashes with a GSI.
pub const BASE: &str = "";

/// One second of one key's traffic.
#[derive(Debug, Default)]
pub struct Bucket {
    /// The second (on the collector's clock) this bucket counts.
    pub second: u64,
    /// Read units in that second.
    pub read: f64,
    /// Write units in that second.
    pub write: f64,
    /// Read requests behind `read` (units per request is the item size's cost).
    pub reads: u64,
    /// Write requests behind `write`.
    pub writes: u64,
    /// Throttled requests in that second, by reason.
    pub throttles: Vec<(String, u64)>,
}

impl Bucket {
    /// Counts `count` throttled requests for `reason`.
    pub fn add_throttles(&mut self, reason: &str, count: u64) {
        match self.throttles.iter_mut().find(|(r, _)| r == reason) {
            Some((_, c)) => *c += count,
            None => self.throttles.push((reason.to_owned(), count)),
        }
    }
}

/// Which items a key's writes touched in the window, as far as it matters: one item taking
/// every write (a counter, a "latest" row) is a pattern sharding the key does not fix.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub enum ItemsWritten {
    /// No write named its item (writes recorded through the public API).
    #[default]
    Unknown,
    /// Every write that named its item named this one (a hash of its key).
    One(u64),
    /// At least two different items.
    Many,
}

impl ItemsWritten {
    /// Counts a write of the item whose key hashes to `item`.
    pub fn add(&mut self, item: u64) {
        *self = self.merge(ItemsWritten::One(item));
    }

    /// What two keys' (or two moments') writes touched together.
    pub fn merge(self, other: ItemsWritten) -> ItemsWritten {
        match (self, other) {
            (ItemsWritten::Unknown, seen) | (seen, ItemsWritten::Unknown) => seen,
            (ItemsWritten::One(a), ItemsWritten::One(b)) if a == b => self,
            _ => ItemsWritten::Many,
        }
    }
}

/// How a recorded key spells its shard: what [`State::add`] needs to roll the key up under
/// its logical key.
#[derive(Debug, Clone, Copy)]
pub struct Spelling {
    /// The shard count of its logical key, when the recording knows it (a per-key layout's
    /// count is its key's, from the layout directory; a write that does not read it, a
    /// transaction's, leaves it unknown).
    pub n: Option<u32>,
    /// How the key spells its shard after the logical key.
    pub suffix: ShardSuffix,
    /// For an entity whose layout is decided per key, what the report needs to name the
    /// change: a shard below its `max_n` is split off whatever the key's count.
    pub per_key: Option<PerKeyOrigin>,
}

/// The per-key layout a recorded key belongs to (`max_n` on `#[pk]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerKeyOrigin {
    /// The entity's name (`Score`).
    pub entity: &'static str,
    /// The declared `n`: the count of every key the layout directory does not list.
    pub declared_n: u32,
    /// The most shards one of its keys may have.
    pub max_n: u32,
}

/// One key's traffic in the window, oldest second first.
#[derive(Debug, Default)]
pub struct KeyEntry {
    /// The shard count of its logical key, as last recorded.
    pub shards: Option<u32>,
    /// The per-key layout it belongs to, if its entity's layout is decided per key.
    pub per_key: Option<PerKeyOrigin>,
    /// How the key spells its shard (`#{shard}` unless its entity declares another).
    pub suffix: ShardSuffix,
    /// Since the key entered the window (not pruned per second: one item hot for part of
    /// the window still reads as one item, which is what the label means).
    pub items: ItemsWritten,
    /// One bucket per second with traffic, oldest first.
    pub buckets: VecDeque<Bucket>,
}

impl KeyEntry {
    /// The count a shard of this key is split off below: `max_n` for a per-key layout (a
    /// key's count changes, its shards stay below it), else its shard count.
    pub fn split_bound(&self) -> Option<u32> {
        self.per_key.map(|p| p.max_n).or(self.shards)
    }

    /// Drops buckets older than the window: the bucket of second `s` (traffic in `[s, s+1)`)
    /// counts while `s >= now - window`, so a window read at a whole second holds exactly
    /// the last `window` seconds.
    pub fn prune(&mut self, now_sec: u64, window_secs: u64) {
        while self
            .buckets
            .front()
            .is_some_and(|b| b.second.saturating_add(window_secs) < now_sec)
        {
            self.buckets.pop_front();
        }
    }
}

/// Every key with traffic in the window, by index.
#[derive(Debug, Default)]
pub struct State {
    /// index name (`""` = base table) -> physical key -> traffic.
    pub indexes: HashMap<String, HashMap<String, KeyEntry>>,
    /// When idle keys were last dropped (a second on the collector's clock).
    pub last_sweep: u64,
}

impl State {
    /// Prunes every key and drops the keys and indexes left without traffic.
    pub fn sweep(&mut self, now_sec: u64, window_secs: u64) {
        for keys in self.indexes.values_mut() {
            keys.retain(|_, entry| {
                entry.prune(now_sec, window_secs);
                !entry.buckets.is_empty()
            });
        }
        self.indexes.retain(|_, keys| !keys.is_empty());
        self.last_sweep = now_sec;
    }

    /// Applies `apply` to the bucket of second `now_sec` of `key` in `index` (`None` = the
    /// base table), creating key and bucket if needed; sweeps idle keys once a window.
    pub fn add(
        &mut self,
        index: Option<&str>,
        key: &str,
        shards: Option<Spelling>,
        (now_sec, window_secs): (u64, u64),
        apply: impl FnOnce(&mut KeyEntry, &mut Bucket),
    ) {
        if now_sec >= self.last_sweep.saturating_add(window_secs) {
            self.sweep(now_sec, window_secs);
        }
        with_slot(&mut self.indexes, index.unwrap_or(BASE), |keys| {
            with_slot(keys, key, |entry| {
                if let Some(spelling) = shards {
                    entry.shards = spelling.n.or(entry.shards);
                    entry.suffix = spelling.suffix;
                    entry.per_key = spelling.per_key;
                }
                entry.prune(now_sec, window_secs);
                // A clock that went backwards adds to the newest bucket.
                let mut bucket = match entry.buckets.pop_back() {
                    Some(last) if last.second >= now_sec => last,
                    last => {
                        entry.buckets.extend(last);
                        Bucket {
                            second: now_sec,
                            ..Bucket::default()
                        }
                    }
                };
                apply(entry, &mut bucket);
                entry.buckets.push_back(bucket);
            });
        });
    }
}

/// Runs `f` on the value under `key`, inserting a default first; allocates the key only when
/// it is new.
fn with_slot<V: Default, R>(
    map: &mut HashMap<String, V>,
    key: &str,
    f: impl FnOnce(&mut V) -> R,
) -> R {
    if let Some(value) = map.get_mut(key) {
        return f(value);
    }
    f(map.entry(key.to_owned()).or_default())
}
