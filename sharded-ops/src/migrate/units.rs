//! A migration cut into units any process can run: [`Unit`] (a range of a parallel scan's
//! segments, or one logical key) and [`Plan`] (the units of one migration, its fleet budget
//! and its estimate).
//!
//! DynamoDB's parallel scan is made to be spread over workers on many machines: each reads
//! its own `Segment` of `TotalSegments`. A plan fixes `TotalSegments`, cuts it into units,
//! and gives each unit its share of the migration's write budget, so an orchestrator (Step
//! Functions' Distributed Map, an AWS Batch array job, a Kubernetes indexed Job) can map over
//! the units with at most `workers` running at once and the fleet stays within the budget.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use sharded_runtime::__ops::MAX_SEGMENTS;
use sharded_runtime::capacity::{transactional_write_units, write_units};
use sharded_runtime::keys::Partitions;

use super::error::{MigrateError, MigrationRefusal};

/// One unit of a migration: a range of the segments of a parallel scan of the table, or the
/// previous partitions of one logical key. Run it with
/// [`Migration::unit`](super::Migration::unit); its progress is recorded in the table, so
/// any process can resume it and [`Migration::status`](super::Migration::status) can say where it is.
///
/// A unit's id ([`Display`](fmt::Display), [`FromStr`]) is `first..end/total` for segments
/// (`4..8/16`: segments 4 to 7 of a scan in 16) and `key:<logical key>` for a key.
///
/// ```
/// use sharded::migrate::Unit;
/// let unit = Unit::segments(4..8, 16)?;
/// assert_eq!(unit.to_string(), "4..8/16");
/// assert_eq!("4..8/16".parse::<Unit>()?, unit);
/// assert!(Unit::segments(8..4, 16).is_err());
/// # Ok::<(), sharded::migrate::MigrateError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unit {
    pub(crate) scope: UnitScope,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum UnitScope {
    /// Segments `first..end` of a scan in `total`.
    Segments { first: u32, end: u32, total: u32 },
    /// One logical key's previous partitions.
    Key {
        logical: String,
        partitions: Vec<String>,
    },
}

/// The id of the unit of segments `first..end` of `total`.
pub(crate) fn segments_id(first: u32, end: u32, total: u32) -> String {
    format!("{first}..{end}/{total}")
}

impl Unit {
    /// The segments `range` of a parallel scan of the table in `total` segments. `total` is
    /// 1 to 1,000,000 (DynamoDB's range), and `range` a non-empty range within it; anything
    /// else is [`MigrateError::Refused`](super::MigrateError::Refused).
    ///
    /// ```
    /// use sharded::migrate::Unit;
    /// let whole = Unit::segments(0..4, 4)?; // the whole scan, as one unit
    /// assert_eq!(whole.segment_range(), Some(0..4));
    /// # Ok::<(), sharded::migrate::MigrateError>(())
    /// ```
    pub fn segments(range: Range<u32>, total: u32) -> Result<Unit, MigrateError> {
        if !(1..=MAX_SEGMENTS).contains(&total) {
            let max = MAX_SEGMENTS;
            return Err(MigrationRefusal::UnitTotal { total, max }.into());
        }
        if range.start >= range.end || range.end > total {
            let (first, end) = (range.start, range.end);
            return Err(MigrationRefusal::UnitRange { first, end, total }.into());
        }
        Ok(Unit {
            scope: UnitScope::Segments {
                first: range.start,
                end: range.end,
                total,
            },
        })
    }

    /// One logical key's previous partitions (from the generated `Entity::pk_partitions(..)`),
    /// read with Queries: the unit of a migration [`only`](super::Migration::only) this key.
    /// Partitions that declare no previous layout are
    /// [`MigrateError::Refused`](super::MigrateError::Refused).
    ///
    /// ```
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::ShardedEntity;
    /// use sharded::migrate::Unit;
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
    /// # #[sk(template = "SCORE#{score}#{player_id}")]
    /// # struct Score { game_id: String, player_id: String, score: u64 }
    /// let unit = Unit::key(Score::pk_partitions("g1")?)?;
    /// assert_eq!(unit.to_string(), "key:GAME#g1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(partitions: Partitions) -> Result<Unit, MigrateError> {
        let logical = partitions.logical_key().to_owned();
        match partitions.previous() {
            Some(previous) => Ok(Unit {
                scope: UnitScope::Key {
                    logical,
                    partitions: previous.clone().collect(),
                },
            }),
            None => Err(MigrationRefusal::NoPreviousLayout { logical }.into()),
        }
    }

    /// The unit's segments, for a unit of segments.
    ///
    /// ```
    /// use sharded::migrate::Unit;
    /// assert_eq!("2..3/8".parse::<Unit>()?.segment_range(), Some(2..3));
    /// # Ok::<(), sharded::migrate::MigrateError>(())
    /// ```
    pub fn segment_range(&self) -> Option<Range<u32>> {
        match &self.scope {
            UnitScope::Segments { first, end, .. } => Some(*first..*end),
            UnitScope::Key { .. } => None,
        }
    }

    /// The scan's `TotalSegments`, for a unit of segments.
    ///
    /// ```
    /// use sharded::migrate::Unit;
    /// assert_eq!("2..3/8".parse::<Unit>()?.total_segments(), Some(8));
    /// # Ok::<(), sharded::migrate::MigrateError>(())
    /// ```
    pub fn total_segments(&self) -> Option<u32> {
        match &self.scope {
            UnitScope::Segments { total, .. } => Some(*total),
            UnitScope::Key { .. } => None,
        }
    }
}

impl fmt::Display for Unit {
    /// The unit's id: `4..8/16`, or `key:GAME#g1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scope {
            UnitScope::Segments { first, end, total } => {
                f.write_str(&segments_id(*first, *end, *total))
            }
            UnitScope::Key { logical, .. } => write!(f, "key:{logical}"),
        }
    }
}

impl FromStr for Unit {
    type Err = MigrateError;

    /// Reads a unit of segments from its id (`4..8/16`). A key's unit is made from its
    /// partitions ([`Unit::key`]), which its id alone does not name.
    fn from_str(id: &str) -> Result<Unit, MigrateError> {
        let id = id.trim();
        if id.starts_with("key:") {
            let id = id.to_owned();
            return Err(MigrationRefusal::KeyUnitId { id }.into());
        }
        let parsed = id.split_once('/').and_then(|(range, total)| {
            let (first, end) = range.split_once("..")?;
            Some((first.parse().ok()?, end.parse().ok()?, total.parse().ok()?))
        });
        match parsed {
            Some((first, end, total)) => Unit::segments(first..end, total),
            None => Err(MigrationRefusal::NotUnitId { id: id.to_owned() }.into()),
        }
    }
}

impl serde::Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Unit {
    /// A unit of segments from its id; a key's unit is made with [`Unit::key`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        id.parse().map_err(serde::de::Error::custom)
    }
}

/// What a migration is expected to take, from `DescribeTable` (refreshed by DynamoDB about
/// every six hours) and the layouts: every item of the table is assumed to be the entity's
/// and not yet migrated, so a table shared with other entities, or partly migrated, takes
/// less.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Estimate {
    /// Items in the table (`ItemCount`).
    pub items: u64,
    /// Their average size in bytes (`TableSizeBytes / ItemCount`).
    pub average_item_bytes: u64,
    /// The share of the items expected to move (the others are already where the current
    /// layout puts them): from 10 to 20 hashed shards, half; from a legacy key, all (and 1
    /// when a plan written without it is read back).
    #[serde(default = "all_of_them")]
    pub moving: f64,
    /// Write units one move costs on DynamoDB: the copy (a transaction: the put, and the mark
    /// of the old copy) and the delete of the old copy, and each of these again on every GSI
    /// (see [`indexes`](Self::indexes)).
    pub write_units_per_move: f64,
    /// Seconds at the plan's budget: items x moving x units per move / write units per
    /// second.
    pub seconds: f64,
}

impl Estimate {
    /// The estimate for `items` of `average_item_bytes` at `write_units_per_second`.
    ///
    /// ```
    /// use sharded::migrate::Estimate;
    /// // 100 million items of 300 bytes at 500 WCU/s: about 11.6 days.
    /// let e = Estimate::new(100_000_000, 300, 500.0);
    /// assert_eq!(e.write_units_per_move, 5.0);
    /// assert!((e.seconds / 86_400.0 - 11.57).abs() < 0.01);
    /// ```
    pub fn new(items: u64, average_item_bytes: u64, write_units_per_second: f64) -> Estimate {
        // The copy is a transaction of two writes (the put at the current place, the mark
        // of the old copy), each charged twice as a transactional write; the delete is one.
        let copy = 2 * transactional_write_units(average_item_bytes);
        let write_units_per_move = (copy + write_units(average_item_bytes)) as f64;
        Estimate {
            items,
            average_item_bytes,
            moving: 1.0,
            write_units_per_move,
            seconds: 0.0,
        }
        .at(write_units_per_second)
    }

    /// The estimate for an entity with `indexes` GSIs: each write of a move (the copy's
    /// put, the old copy's mark, its delete) also writes each index entry, one write unit per
    /// KB more each (a sparse index the item is not in costs nothing: then this overestimates).
    ///
    /// ```
    /// use sharded::migrate::Estimate;
    /// let e = Estimate::new(1_000, 300, 100.0).indexes(1);
    /// assert_eq!(e.write_units_per_move, 8.0);
    /// assert_eq!(e.seconds, 80.0);
    /// ```
    pub fn indexes(self, indexes: usize) -> Estimate {
        let rate = self.rate();
        let bytes = self.average_item_bytes;
        let copy = 2 * transactional_write_units(bytes);
        let per_index = 3 * write_units(bytes);
        Estimate {
            write_units_per_move: (copy + write_units(bytes) + indexes as u64 * per_index) as f64,
            ..self
        }
        .at(rate)
    }

    /// The write units per second the estimate's duration was computed at.
    fn rate(&self) -> f64 {
        let units = self.items as f64 * self.moving * self.write_units_per_move;
        if self.seconds > 0.0 {
            units / self.seconds
        } else {
            0.0
        }
    }

    /// The estimate with `share` of the items moving (0 to 1; see [`moving`](Self::moving)).
    ///
    /// ```
    /// use sharded::migrate::Estimate;
    /// let all = Estimate::new(1_000, 200, 100.0);
    /// assert_eq!(all.moving(0.5).seconds, all.seconds / 2.0);
    /// ```
    pub fn moving(mut self, share: f64) -> Estimate {
        let rate = self.rate();
        self.moving = if share.is_nan() {
            1.0
        } else {
            share.clamp(0.0, 1.0)
        };
        self.at(rate)
    }

    fn at(mut self, write_units_per_second: f64) -> Estimate {
        let units = self.items as f64 * self.moving * self.write_units_per_move;
        self.seconds = if write_units_per_second.is_finite() && write_units_per_second > 0.0 {
            units / write_units_per_second
        } else {
            0.0
        };
        self
    }
}

fn all_of_them() -> f64 {
    1.0
}

/// The share of an entity's items a migration to `pk`'s current layout moves, the items
/// spread evenly: an item stays where its previous partition key is its current one.
/// - from a legacy key, or a previous layout spelled with another suffix: all of them;
/// - from `m` shards placed by the current rule to `n`: those whose hash gives another shard
///   (`h mod m != h mod n`), counted over `lcm(m, n)` residues: 10 -> 20, a half;
/// - from `m` shards of unknown placement: all but those that happen to sit on their shard.
pub(crate) fn moving_share(pk: &sharded_runtime::schema::PartitionKeySchema) -> f64 {
    use sharded_runtime::schema::{PreviousLayout, PreviousPlacement};
    let n = u64::from(pk.sharding.shard_count().unwrap_or(1).max(1));
    match pk.previous {
        None => 0.0,
        Some(PreviousLayout::Legacy { .. }) => 1.0,
        Some(PreviousLayout::Shards { .. }) if pk.previous_suffix() != pk.suffix => 1.0,
        Some(PreviousLayout::Shards {
            n: m, placement, ..
        }) => {
            let m = u64::from(m.max(1));
            match placement {
                PreviousPlacement::Unknown => 1.0 - (n.min(m) as f64) / ((n * m) as f64),
                _ => {
                    let lcm = n / gcd(n, m) * m;
                    let same = (0..lcm).filter(|r| r % n == r % m).count();
                    1.0 - same as f64 / lcm as f64
                }
            }
        }
        // A layout of a later release: assume everything moves.
        Some(_) => 1.0,
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// One migration cut into units: `TotalSegments`, the units, the fleet's budget and how many
/// workers share it, made by [`Migration::plan`](super::Migration::plan).
///
/// The budget is the migration's, not a process's: each unit runs at
/// [`unit_write_units_per_second`](Self::unit_write_units_per_second) (the budget over
/// `workers`), so as long as the orchestrator runs at most `workers` units at once (Step
/// Functions' `MaxConcurrency`, a Kubernetes Job's `parallelism`), the fleet stays within it.
/// It serialises (serde) to the JSON `migrate --plan` prints, and reads back from it: units
/// as their ids.
///
/// ```
/// use sharded::migrate::{Plan, Unit};
/// let plan = Plan::new("leaderboard", "Score", "GAME#{game_id}#<shard 0..20>", 16, 4, 4, 400.0)?;
/// assert_eq!(plan.units.len(), 4);
/// assert_eq!(plan.units[1], Unit::segments(4..8, 16)?);
/// assert_eq!(plan.unit_write_units_per_second(), 100.0);
/// # Ok::<(), sharded::migrate::MigrateError>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Plan {
    /// The table.
    pub table: String,
    /// The entity migrated.
    pub entity: String,
    /// The entity's layout (its description with the previous layout), which the units'
    /// checkpoints carry: a unit recorded under another layout counts as not started.
    pub layout: String,
    /// The parallel scan's `TotalSegments`.
    pub total_segments: u32,
    /// The units, in order: together they cover every segment once.
    pub units: Vec<Unit>,
    /// The most units run at once: the budget's divisor.
    pub workers: u32,
    /// The write budget of the whole migration, over every worker.
    pub write_units_per_second: f64,
    /// What the migration is expected to take, when the table was described.
    pub estimate: Option<Estimate>,
}

impl Plan {
    /// Cuts a scan of `total_segments` into `units` units (as even as can be) to run at most
    /// `workers` at once within `write_units_per_second` together. `units` is 1 to
    /// `total_segments`, `workers` 1 to `units`, and the budget positive (`f64::INFINITY`
    /// for none); anything else is [`MigrateError::Refused`](super::MigrateError::Refused).
    ///
    /// ```
    /// use sharded::migrate::Plan;
    /// let plan = Plan::new("t", "Score", "L", 10, 3, 3, 300.0)?;
    /// let ids: Vec<String> = plan.units.iter().map(|u| u.to_string()).collect();
    /// assert_eq!(ids, ["0..3/10", "3..6/10", "6..10/10"]);
    /// assert!(Plan::new("t", "Score", "L", 10, 11, 1, 300.0).is_err());
    /// # Ok::<(), sharded::migrate::MigrateError>(())
    /// ```
    pub fn new(
        table: impl Into<String>,
        entity: impl Into<String>,
        layout: impl Into<String>,
        total_segments: u32,
        units: u32,
        workers: u32,
        write_units_per_second: f64,
    ) -> Result<Plan, MigrateError> {
        if !(1..=total_segments).contains(&units) {
            let segments = total_segments;
            return Err(MigrationRefusal::Units { units, segments }.into());
        }
        if !(1..=units).contains(&workers) {
            return Err(MigrationRefusal::Workers { workers, units }.into());
        }
        let w = write_units_per_second;
        if w.is_nan() || w <= 0.0 {
            return Err(MigrationRefusal::WriteRate { rate: w }.into());
        }
        let bound = |i: u32| (u64::from(i) * u64::from(total_segments) / u64::from(units)) as u32;
        let units = (0..units)
            .map(|i| Unit::segments(bound(i)..bound(i + 1), total_segments))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Plan {
            table: table.into(),
            entity: entity.into(),
            layout: layout.into(),
            total_segments,
            units,
            workers,
            write_units_per_second: w,
            estimate: None,
        })
    }

    /// The write budget each unit runs with: the migration's over `workers`.
    ///
    /// ```
    /// # let plan = sharded::migrate::Plan::new("t", "E", "L", 8, 8, 4, 1000.0)?;
    /// assert_eq!(plan.unit_write_units_per_second(), 250.0);
    /// # Ok::<(), sharded::migrate::MigrateError>(())
    /// ```
    pub fn unit_write_units_per_second(&self) -> f64 {
        self.write_units_per_second / f64::from(self.workers)
    }

    /// The plan with `estimate`: what the migration is expected to take (with
    /// [`Migration::plan`](super::Migration::plan), from `DescribeTable`).
    ///
    /// ```
    /// use sharded::migrate::{Estimate, Plan};
    /// let plan = Plan::new("t", "E", "L", 4, 4, 4, 100.0)?
    ///     .with_estimate(Estimate::new(1_000, 200, 100.0));
    /// assert_eq!(plan.estimate.map(|e| e.seconds), Some(50.0));
    /// # Ok::<(), sharded::migrate::MigrateError>(())
    /// ```
    pub fn with_estimate(mut self, estimate: Estimate) -> Plan {
        self.estimate = Some(estimate);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_cover_every_segment_once_in_order() {
        for total in [1, 2, 7, 16, 100] {
            for units in 1..=total.min(20) {
                let plan = Plan::new("t", "E", "L", total, units, 1, 1.0).unwrap();
                let mut next = 0;
                for unit in &plan.units {
                    let range = unit.segment_range().unwrap();
                    assert_eq!(range.start, next, "{total}/{units}");
                    assert!(range.end > range.start);
                    next = range.end;
                    assert_eq!(unit.to_string().parse::<Unit>().unwrap(), *unit);
                }
                assert_eq!(next, total);
            }
        }
    }

    #[test]
    fn a_plan_reads_back_from_its_json() {
        let plan = Plan::new("t", "Score", "L", 16, 4, 2, 400.0)
            .unwrap()
            .with_estimate(Estimate::new(1_000, 300, 400.0));
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains("\"4..8/16\""), "{json}");
        assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), plan);
    }

    #[test]
    fn the_moving_share_counts_the_hashes_that_change_shard() {
        use sharded_runtime::schema::{
            KeyTemplate, PartitionKeySchema, PreviousLayout, PreviousPlacement, Segment, Sharding,
        };
        static T: KeyTemplate =
            KeyTemplate::new("G#{g}", &[Segment::literal("G#"), Segment::field("g")]);
        static L: KeyTemplate =
            KeyTemplate::new("G#{g}", &[Segment::literal("G#"), Segment::field("g")]);
        let pk = |n: u32, previous: PreviousLayout| {
            PartitionKeySchema::new("pk", &T, Sharding::hash(&["p"], n)).with_previous(previous)
        };
        let share = |schema: PartitionKeySchema| moving_share(&schema);
        assert_eq!(share(pk(20, PreviousLayout::shards(10))), 0.5);
        // 10 -> 3: h mod 3 == h mod 10 for 3 of every 30 residues (0, 1, 2).
        assert!((share(pk(3, PreviousLayout::shards(10))) - 0.9).abs() < 1e-9);
        assert_eq!(share(pk(10, PreviousLayout::legacy(&L))), 1.0);
        let unknown = PreviousLayout::shards(4).with_placement(PreviousPlacement::Unknown);
        assert!((share(pk(8, unknown)) - (1.0 - 4.0 / 32.0)).abs() < 1e-9);
    }

    #[test]
    fn ids_that_are_not_units_are_refused_naming_the_form() {
        for id in [
            "", "4..8", "8..4/16", "0..17/16", "a..b/c", "0..0/1", "0..1/0",
        ] {
            let err = id.parse::<Unit>().unwrap_err().to_string();
            assert!(err.contains("unit"), "{id}: {err}");
        }
        let err = "key:GAME#g1".parse::<Unit>().unwrap_err().to_string();
        assert!(err.contains("Unit::key"), "{err}");
    }
}
