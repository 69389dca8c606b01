//! The hot-key report on a per-key layout (`max_n` on `#[pk]`): a key is reported with its
//! own shard count, and the advice names the change that widens it, or narrows it back.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sharded::capacity::{
    HotKeyPattern, HotKeyStats, LogicalKeyReport, ManualClock, PerKeyLimits, ReportHotKeys,
};
use sharded::layouts::{ChangeLayout, LayoutTiming};
use sharded::{Repo, ShardedEntity};

use crate::support::repo;

/// A game's plays: one partition per game until one goes viral.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[sharded(entity = "Round")]
#[pk(
    template = "ROUND#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 16
)]
#[sk(template = "PLAY#{player_id}#{at}")]
struct Round {
    game_id: String,
    player_id: String,
    at: u64,
}

/// Limits of 10 write units a second per key, so that 20 small puts a second are hot.
fn stats(clock: &ManualClock) -> Arc<HotKeyStats> {
    Arc::new(
        HotKeyStats::new(Duration::from_secs(10))
            .with_clock(Arc::new(clock.clone()))
            .with_limits(PerKeyLimits {
                write_units_per_second: 10.0,
                read_units_per_second: 30.0,
            }),
    )
}

/// `per_second` puts on game `game` each second for ten seconds of `clock`.
async fn write(repo: &Repo<Round>, clock: &ManualClock, game: &str, per_second: u64) {
    for second in 0..10 {
        for p in 0..per_second {
            let round = Round {
                game_id: game.into(),
                player_id: format!("p{p}"),
                at: second,
            };
            repo.put(&round).await.unwrap();
        }
        clock.advance(Duration::from_secs(1));
    }
}

fn row(stats: &HotKeyStats, key: &str) -> LogicalKeyReport {
    let report = stats.report();
    report
        .logical_keys
        .iter()
        .find(|r| r.logical_key == key)
        .unwrap_or_else(|| panic!("no row for {key}: {report}"))
        .clone()
}

#[tokio::test]
async fn a_hot_per_key_key_reports_its_own_count_and_the_change_that_widens_it() {
    let timing = LayoutTiming::new(Duration::from_millis(150), Duration::from_millis(100));
    let plain = repo::<Round>("perkey_report")
        .await
        .with_layout_timing(timing);

    let clock = ManualClock::new();
    let hot = stats(&clock);
    let repo = plain.clone().with_stats(hot.clone());
    write(&repo, &clock, "viral", 20).await;
    let viral = row(&hot, "ROUND#viral");
    assert_eq!(viral.shards, Some(1), "its own count, not max_n: {viral:?}");
    assert_eq!(viral.per_key.as_ref().map(|p| p.max_n), Some(16));
    assert_eq!(viral.pattern, HotKeyPattern::SustainedHotKey);
    let n = viral.advice.recommended_n.expect("a count");
    assert!(n > 1 && n <= 16, "{:?}", viral.advice);
    let command =
        format!("layouts change --entity Round --table <table> --key ROUND#viral --n {n}");
    assert!(
        viral.advice.action.contains(&command),
        "{}",
        viral.advice.action
    );
    assert!(viral
        .advice
        .action
        .contains(&format!("repo.layouts().change(\"ROUND#viral\", {n})")));

    plain.layouts().change("ROUND#viral", n).await.unwrap();
    let clock = ManualClock::new();
    let widened = stats(&clock);
    let repo = plain.clone().with_stats(widened.clone());
    write(&repo, &clock, "viral", 20).await;
    let viral = row(&widened, "ROUND#viral");
    assert_eq!(viral.shards, Some(n), "{viral:?}");
    assert!(viral.physical_keys > 1, "its writes spread: {viral:?}");

    // Cold again: the advice narrows it back to the declared n.
    let clock = ManualClock::new();
    let cold = stats(&clock);
    let repo = plain.clone().with_stats(cold.clone());
    write(&repo, &clock, "viral", 1).await;
    let viral = row(&cold, "ROUND#viral");
    assert_eq!(viral.shards, Some(n));
    assert_eq!(viral.pattern, HotKeyPattern::NotHot);
    assert_eq!(viral.advice.recommended_n, Some(1), "{:?}", viral.advice);
    assert!(
        viral
            .advice
            .action
            .contains("layouts change --entity Round --table <table> --key ROUND#viral --n 1"),
        "{}",
        viral.advice.action
    );
}
