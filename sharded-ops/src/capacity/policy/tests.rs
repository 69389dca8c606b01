//! The policy's decisions, rule by rule, on figures made by hand and a clock that is a number.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use sharded_runtime::capacity::HotKeyStats;
use sharded_runtime::layouts::{KeyEntry, Phase};

use super::decide::{decide, Action, Decision, KeyLoad, Memory, Observed};
use super::{LayoutPolicy, PolicyError};

const LIMIT: f64 = 1_000.0;
const DECLARED_N: u32 = 1;
const MAX_N: u32 = 16;

/// What one look sees: loads and entries by key, the changes of this process.
#[derive(Default)]
struct Look {
    loads: BTreeMap<String, KeyLoad>,
    entries: BTreeMap<String, KeyEntry>,
    running: BTreeSet<String>,
    failed: BTreeMap<String, u32>,
}

impl Look {
    fn load(mut self, key: &str, peak: f64, hottest: f64) -> Self {
        self.loads.insert(key.into(), KeyLoad { peak, hottest });
        self
    }

    fn entry(mut self, key: &str, from: u32, to: u32, phase: Phase) -> Self {
        let since = Duration::ZERO;
        let entry = KeyEntry {
            from,
            to,
            phase,
            since,
        };
        self.entries.insert(key.into(), entry);
        self
    }

    fn decide_at(&self, now_secs: u64, memory: &mut Memory) -> Vec<Decision> {
        let seen = Observed {
            now: Duration::from_secs(now_secs),
            limit: LIMIT,
            declared_n: DECLARED_N,
            max_n: MAX_N,
            loads: &self.loads,
            entries: &self.entries,
            running: &self.running,
            failed: &self.failed,
        };
        decide(&policy(), &seen, memory)
    }

    fn decide(&self) -> Vec<Decision> {
        self.decide_at(0, &mut Memory::default())
    }
}

fn policy() -> LayoutPolicy {
    LayoutPolicy::default().with_narrow_after(Duration::from_secs(600))
}

fn only(decisions: Vec<Decision>) -> Decision {
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    decisions.into_iter().next().unwrap()
}

#[test]
fn a_hot_key_widens_to_the_planners_count() {
    // 5,000 WCU/s on one partition: 5,000 / (1,000 x 0.7) -> 8 shards.
    let d = only(Look::default().load("GAME#g1", 5_000.0, 5_000.0).decide());
    assert_eq!(
        d,
        Decision {
            key: "GAME#g1".into(),
            action: Action::Widen,
            from: 1,
            to: 8,
            load: 5_000.0,
            threshold: 800.0,
        }
    );
}

#[test]
fn a_key_under_the_threshold_is_left_without_a_decision() {
    let look = Look::default().load("GAME#g1", 799.0, 799.0);
    assert!(look.decide().is_empty());
}

#[test]
fn the_threshold_is_reached_at_widen_at_times_the_limit() {
    let d = only(Look::default().load("GAME#g1", 800.0, 800.0).decide());
    assert_eq!((d.action, d.to), (Action::Widen, 2));
}

#[test]
fn a_widening_is_capped_at_max_n() {
    let d = only(Look::default().load("GAME#g1", 50_000.0, 50_000.0).decide());
    assert_eq!((d.action, d.from, d.to), (Action::Widen, 1, MAX_N));
}

#[test]
fn a_hot_key_at_max_n_is_left_alone() {
    let look = Look::default().load("GAME#g1", 16_000.0, 1_000.0).entry(
        "GAME#g1",
        1,
        MAX_N,
        Phase::Steady,
    );
    let d = only(look.decide());
    assert_eq!((d.action, d.from, d.to), (Action::AtMax, MAX_N, MAX_N));
}

#[test]
fn a_widening_never_goes_below_the_keys_count() {
    // One shard of 8 is hot (an uneven hash), but 3,000 WCU/s need 5 shards, not more than 8.
    let look =
        Look::default()
            .load("GAME#g1", 3_000.0, 850.0)
            .entry("GAME#g1", 1, 8, Phase::Steady);
    let d = only(look.decide());
    assert_eq!((d.action, d.from, d.to), (Action::CountHolds, 8, 8));
    // The same key with more load widens from 8, to the planner's count.
    let look =
        Look::default()
            .load("GAME#g1", 9_000.0, 1_100.0)
            .entry("GAME#g1", 1, 8, Phase::Steady);
    let d = only(look.decide());
    assert_eq!((d.action, d.from, d.to), (Action::Widen, 8, 13));
}

#[test]
fn a_cold_key_narrows_only_after_narrow_after() {
    let look = Look::default()
        .load("GAME#g1", 100.0, 20.0)
        .entry("GAME#g1", 1, 8, Phase::Steady);
    let mut memory = Memory::default();
    assert!(
        look.decide_at(1_000, &mut memory).is_empty(),
        "cold from now"
    );
    assert!(
        look.decide_at(1_599, &mut memory).is_empty(),
        "cold 599 s of 600"
    );
    let d = only(look.decide_at(1_600, &mut memory));
    assert_eq!(
        d,
        Decision {
            key: "GAME#g1".into(),
            action: Action::Narrow,
            from: 8,
            to: DECLARED_N,
            load: 100.0,
            threshold: 250.0,
        }
    );
}

#[test]
fn a_widened_key_without_any_traffic_is_cold() {
    let look = Look::default().entry("GAME#g1", 1, 8, Phase::Steady);
    let mut memory = Memory::default();
    assert!(look.decide_at(0, &mut memory).is_empty());
    let d = only(look.decide_at(600, &mut memory));
    assert_eq!((d.action, d.to, d.load), (Action::Narrow, 1, 0.0));
}

#[test]
fn load_coming_back_restarts_the_cold_time() {
    let cold = Look::default()
        .load("GAME#g1", 100.0, 20.0)
        .entry("GAME#g1", 1, 8, Phase::Steady);
    let warm =
        Look::default()
            .load("GAME#g1", 2_000.0, 300.0)
            .entry("GAME#g1", 1, 8, Phase::Steady);
    let mut memory = Memory::default();
    assert!(cold.decide_at(0, &mut memory).is_empty());
    assert!(warm.decide_at(300, &mut memory).is_empty(), "warm, not hot");
    assert!(cold.decide_at(400, &mut memory).is_empty());
    assert!(
        cold.decide_at(900, &mut memory).is_empty(),
        "cold since 400"
    );
    assert_eq!(
        only(cold.decide_at(1_000, &mut memory)).action,
        Action::Narrow
    );
}

#[test]
fn a_key_at_its_declared_count_is_never_narrowed() {
    let look = Look::default().load("GAME#g1", 10.0, 10.0);
    let mut memory = Memory::default();
    assert!(look.decide_at(0, &mut memory).is_empty());
    assert!(look.decide_at(100_000, &mut memory).is_empty());
}

#[test]
fn a_changing_key_is_left_alone() {
    for phase in [Phase::Reading, Phase::Writing] {
        let look = Look::default()
            .load("GAME#g1", 9_000.0, 9_000.0)
            .entry("GAME#g1", 1, 4, phase);
        let d = only(look.decide());
        assert_eq!((d.action, d.from, d.to), (Action::Changing, 1, 4));
    }
    // Changing and cold: nothing, and no cold time kept.
    let look = Look::default().entry("GAME#g1", 8, 1, Phase::Writing);
    let mut memory = Memory::default();
    assert!(look.decide_at(0, &mut memory).is_empty());
    assert!(look.decide_at(10_000, &mut memory).is_empty());
    assert!(memory.cold_since.is_empty());
}

#[test]
fn a_key_this_process_changes_is_left_alone() {
    // Its change started, its first step not yet written.
    let mut look = Look::default().load("GAME#g1", 9_000.0, 9_000.0);
    look.running.insert("GAME#g1".into());
    let d = only(look.decide());
    assert_eq!((d.action, d.from, d.to), (Action::Changing, 1, 1));
    let mut look = Look::default().entry("GAME#g1", 1, 8, Phase::Steady);
    look.running.insert("GAME#g1".into());
    let mut memory = Memory::default();
    assert!(look.decide_at(0, &mut memory).is_empty());
    assert!(
        look.decide_at(10_000, &mut memory).is_empty(),
        "not narrowed"
    );
}

#[test]
fn a_failed_change_of_ours_is_resumed_to_its_target() {
    let mut look = Look::default().entry("GAME#g1", 1, 8, Phase::Writing);
    look.failed.insert("GAME#g1".into(), 8);
    let d = only(look.decide());
    assert_eq!((d.action, d.from, d.to), (Action::Resume, 1, 8));
    // Another process's change (another target) is not ours to resume.
    let mut look =
        Look::default()
            .load("GAME#g1", 9_000.0, 9_000.0)
            .entry("GAME#g1", 1, 4, Phase::Reading);
    look.failed.insert("GAME#g1".into(), 8);
    assert_eq!(only(look.decide()).action, Action::Changing);
}

#[test]
fn every_hot_key_gets_its_own_decision() {
    let look = Look::default()
        .load("GAME#a", 5_000.0, 5_000.0)
        .load("GAME#b", 10.0, 10.0)
        .load("GAME#c", 2_000.0, 900.0)
        .entry("GAME#c", 1, 4, Phase::Steady);
    let decisions = look.decide();
    let got: Vec<(&str, Action, u32)> = decisions
        .iter()
        .map(|d| (d.key.as_str(), d.action, d.to))
        .collect();
    assert_eq!(
        got,
        [
            ("GAME#a", Action::Widen, 8),
            ("GAME#c", Action::CountHolds, 4)
        ]
    );
}

#[test]
fn settings_out_of_range_are_refused_naming_them() {
    let field = |p: LayoutPolicy| match p.validate() {
        Err(PolicyError::InvalidNumber { field, .. }) => field,
        other => panic!("refused, not {other:?}"),
    };
    assert_eq!(field(policy().with_widen_at(0.0)), "widen_at");
    assert_eq!(field(policy().with_widen_at(f64::NAN)), "widen_at");
    assert_eq!(field(policy().with_narrow_below(0.8)), "narrow_below");
    assert_eq!(field(policy().with_headroom(1.0)), "headroom");
    assert_eq!(field(policy().with_interval(Duration::ZERO)), "interval");
    assert_eq!(
        field(policy().with_migration_write_units(-1.0)),
        "migration_write_units"
    );
    let message = policy().with_narrow_below(0.9).validate().unwrap_err();
    assert!(message.to_string().contains("below widen_at"), "{message}");
}

mod entities {
    use serde::{Deserialize, Serialize};
    use sharded::ShardedEntity;

    /// One layout for every key.
    #[derive(ShardedEntity, Serialize, Deserialize)]
    #[pk(template = "FIXED#{id}", shard = "hash(player)", n = 4)]
    #[sk(template = "P#{player}")]
    pub struct Fixed {
        pub id: String,
        pub player: String,
    }
}

#[test]
fn an_entity_without_per_key_layouts_is_refused() {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Config, Region};
    let client = aws_sdk_dynamodb::Client::from_conf(
        Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .build(),
    );
    let repo = sharded_runtime::Repo::<entities::Fixed>::new(client, "t");
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(10)));
    let error = policy().run(repo, stats).unwrap_err();
    assert_eq!(error, PolicyError::NotPerKey { entity: "Fixed" });
    assert!(error.to_string().contains("declare `max_n`"), "{error}");
}
