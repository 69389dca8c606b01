//! The layout policy (`sharded::capacity::LayoutPolicy`) on a real table: a key whose
//! collector shows it hot is widened to the planner's count on its own, its items spread;
//! once the collector's clock (simulated) has moved past `narrow_after` without load, it is
//! narrowed back, its items at the declared place again; each decision is an event and a
//! count.
//!
//! The subscriber and recorder are scoped to this thread, and the policy, its changes and
//! the writes run on a current-thread runtime on it (as in `telemetry`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde::{Deserialize, Serialize};
use sharded::capacity::{HotKeyStats, LayoutPolicy, ManualClock};
use sharded::layouts::LayoutTiming;
use sharded::schema::KeyLayout;
use sharded::telemetry as t;
use sharded::{Repo, ShardedEntity};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use crate::support::{raw_scan, repo};

/// Scores of games that are one partition until the policy widens one.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Surge")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 16
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Surge {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The same stored entity at a fixed 8 shards: where a widened key's items belong.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Surge")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 8)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct SurgeAt8 {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The fields of every layout policy event.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<BTreeMap<String, String>>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber> Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().name() != t::LAYOUT_POLICY_EVENT {
            return;
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(fields);
    }
}

impl Events {
    /// The events of `decision` on `key`.
    fn of(&self, decision: &str, key: &str) -> Vec<BTreeMap<String, String>> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| {
                e.get(t::DECISION).map(String::as_str) == Some(decision)
                    && e.get(t::LOGICAL_KEY).map(String::as_str) == Some(key)
            })
            .cloned()
            .collect()
    }
}

/// The partition keys of `game`'s items as stored.
async fn stored_partitions(repo: &Repo<Surge>, game: &str) -> BTreeSet<String> {
    raw_scan(repo.client(), repo.table())
        .await
        .into_iter()
        .filter_map(|item| match item.get("pk") {
            Some(AttributeValue::S(pk)) if pk.starts_with(&format!("GAME#{game}#")) => {
                Some(pk.clone())
            }
            _ => None,
        })
        .collect()
}

/// Waits (at most a minute) until `done` says so, moving the collector's clock by `step` at
/// each turn so that the policy's looks see time pass.
async fn until<F, Fut>(clock: &ManualClock, step: Duration, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..600 {
        if done().await {
            return;
        }
        clock.advance(step);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within a minute");
}

#[test]
fn a_hot_key_is_widened_and_narrowed_back_on_its_own() {
    // See `telemetry::spans_and_metrics_cover_every_request` for why a second dispatcher.
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let events = Events::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(events.clone()));
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(widen_and_narrow(&events)));

    let decisions: BTreeMap<String, u64> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == t::LAYOUT_DECISIONS)
        .map(|(key, _, _, value)| {
            let label = |name: &str| {
                key.key()
                    .labels()
                    .find(|l| l.key() == name)
                    .map(|l| l.value().to_owned())
                    .unwrap_or_default()
            };
            assert_eq!(label(t::ENTITY), "Surge");
            let DebugValue::Counter(n) = value else {
                panic!("a counter, not {value:?}");
            };
            (label(t::DECISION), n)
        })
        .collect();
    for decision in ["widen", "narrow", "changed"] {
        assert!(
            decisions.get(decision).is_some_and(|n| *n >= 1),
            "{decision} counted: {decisions:?}"
        );
    }
    assert!(!decisions.contains_key("failed"), "{decisions:?}");
}

async fn widen_and_narrow(events: &Events) {
    let clock = ManualClock::new();
    let stats =
        Arc::new(HotKeyStats::new(Duration::from_secs(10)).with_clock(Arc::new(clock.clone())));
    let repo = repo::<Surge>("layout_policy")
        .await
        .with_layout_timing(LayoutTiming::new(
            Duration::from_millis(100),
            Duration::from_millis(100),
        ))
        .with_stats(Arc::clone(&stats));
    let score = |game: &str, p: u64| Surge {
        game_id: game.into(),
        player_id: format!("p{p}"),
        score: p * 7,
    };
    for p in 0..40 {
        repo.put(&score("viral", p)).await.unwrap();
    }
    for p in 0..5 {
        repo.put(&score("quiet", p)).await.unwrap();
    }
    // The viral game's one partition took 5,000 WCU/s more in that second (the repository
    // records its keys with `max_n` as their shard bound): 5,040 / (1,000 x 0.7) -> 8 shards.
    stats.record_write(None, "GAME#viral#0", 5_000.0, Some(16));

    let policy = LayoutPolicy::default()
        .with_interval(Duration::from_millis(50))
        .with_narrow_after(Duration::from_secs(60));
    let task = policy.run(repo.clone(), Arc::clone(&stats)).unwrap();

    let layouts = repo.layouts();
    until(&clock, Duration::ZERO, "widened to 8", || async {
        layouts.layout("GAME#viral").await.unwrap() == KeyLayout::steady(8)
    })
    .await;
    let widen = events.of("widen", "GAME#viral");
    assert_eq!(widen.len(), 1, "one widening: {widen:?}");
    assert_eq!(widen[0][t::ENTITY], "Surge");
    assert_eq!(widen[0][t::FROM_SHARDS], "1");
    assert_eq!(widen[0][t::TO_SHARDS], "8");
    // The 5,000 recorded and the 40 puts of one write unit each, in the same second.
    assert_eq!(widen[0][t::LOAD], "5040.0");
    assert_eq!(widen[0][t::THRESHOLD], "800.0");
    let expected: BTreeSet<String> = (0..40)
        .map(|p| SurgeAt8::pk("viral", &format!("p{p}")).unwrap())
        .collect();
    assert!(expected.len() > 1, "8 shards hold 40 players' scores apart");
    assert_eq!(stored_partitions(&repo, "viral").await, expected);
    assert_eq!(
        layouts.layout("GAME#quiet").await.unwrap(),
        KeyLayout::steady(1),
        "a cold key keeps n"
    );
    let answer: Vec<Surge> = Surge::query(&repo, "viral").collect().await.unwrap();
    assert_eq!(answer.len(), 40, "every score read back from 8 shards");

    // No load: the window empties, the key is cold, and after `narrow_after` it narrows.
    until(&clock, Duration::from_secs(10), "narrowed back", || async {
        layouts.entries().await.unwrap().is_empty()
    })
    .await;
    let narrow = events.of("narrow", "GAME#viral");
    assert_eq!(narrow.len(), 1, "one narrowing: {narrow:?}");
    assert_eq!(
        (
            narrow[0][t::FROM_SHARDS].as_str(),
            narrow[0][t::TO_SHARDS].as_str()
        ),
        ("8", "1")
    );
    assert_eq!(narrow[0][t::THRESHOLD], "250.0");
    assert_eq!(
        stored_partitions(&repo, "viral").await,
        BTreeSet::from(["GAME#viral#0".to_owned()])
    );
    assert_eq!(events.of("changed", "GAME#viral").len(), 2);
    assert!(events.of("widen", "GAME#quiet").is_empty());
    task.stop();
}
