//! Per-key layouts, side by side in one run: a table of 1,000 games where one went viral,
//! under the per-key limit emulator.
//!
//! `cargo bench --bench per_key` (the backend is `common::backend()`: DynamoDB Local unless
//! `SHARDED_TEST_BACKEND` says otherwise; `PER_KEY_SECONDS` sets each write phase, 4 s by
//! default). Three entities of the same leaderboard, each in its own table:
//!
//! - **per key**: `n = 1, max_n = 20`, 1,000 games of 120 scores (the viral game one of them);
//! - **unsharded**: `#[pk(template = "GAME#{game_id}")]`, the cold game's 120 scores;
//! - **fixed n = 20**: the cold game and the viral game, 120 scores each.
//!
//! Reads: the top-100 of the cold game and of the viral game (after it was widened to 20),
//! `ROUNDS` times each, sides interleaved; the table shows the `Query` requests and the read
//! units DynamoDB reported per read (an SDK interceptor on the `QueryOutput`s), and the median
//! time. Writes: new scores of the viral game at 5x the per-key write limit (limits scaled to
//! 100 WCU/s and 15 RCU/s per key, 1 s of burst), through the emulator: while the game is one
//! partition, while `layouts().change(.., 20)` runs, and after it; each phase counts the
//! writes offered, accepted and throttled (the emulator's throttles, before the SDK's
//! retries), and at the end every accepted score is read back: lost = accepted and not
//! stored. The machine has 2 cores shared with the database: compare rows of one run.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sharded::capacity::PerKeyLimits;
use sharded::layouts::{ChangeLayout, LayoutTiming};
use sharded::{Query, Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::emulator::KeyLimitEmulator;

mod common;
mod stats;
use common::meter::{Meter, Metering};
use stats::median;

/// The leaderboard entry, unsharded until hot.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 20
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct PerKey {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The same entry, unsharded.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug)]
#[sharded(entity = "Unsharded")]
#[pk(template = "GAME#{game_id}")]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Unsharded {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The same entry, every game at 20 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug)]
#[sharded(entity = "Fixed20")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Fixed20 {
    game_id: String,
    player_id: String,
    score: u64,
}

const GAMES: usize = 1_000;
const SCORES: usize = 120;
const ROUNDS: usize = 31;
const LIMITS: PerKeyLimits = PerKeyLimits {
    write_units_per_second: 100.0,
    read_units_per_second: 15.0,
};
const OVERLOAD: f64 = 5.0;

fn score(game: &str, player: usize) -> (String, String, u64) {
    let mut rng = common::SplitMix64::new(player as u64 ^ 0x9E37);
    (
        game.to_owned(),
        format!("p{player:06}"),
        rng.next_u64() % 1_000_000,
    )
}

fn per_key(game: &str, player: usize) -> PerKey {
    let (game_id, player_id, score) = score(game, player);
    PerKey {
        game_id,
        player_id,
        score,
    }
}

async fn load<E: ShardedEntity + Sync>(repo: &Repo<E>, items: Vec<E>) {
    futures::stream::iter(items.chunks(500))
        .map(|chunk| repo.batch_put(chunk))
        .buffer_unordered(8)
        .for_each(|r| async move { r.expect("load") })
        .await;
}

/// One read side: its requests, read units and times per top-100.
#[derive(Default)]
struct Side {
    times: Vec<Duration>,
    requests: u64,
    units: f64,
    items: usize,
}

async fn top100<E: ShardedEntity>(meter: &Meter, side: &mut Side, query: Query<E>) {
    let before = meter.read();
    let started = Instant::now();
    let top = query
        .descending()
        .limit(100)
        .collect()
        .await
        .expect("top-100");
    side.times.push(started.elapsed());
    let after = meter.read();
    side.requests = after.0 - before.0;
    side.units = after.1 - before.1;
    side.items = top.len();
}

/// One write phase: scores of the viral game at `OVERLOAD` x the per-key write limit for
/// `seconds`, players from `first`. Returns (offered, accepted players, throttles seen by
/// the emulator).
async fn write_phase(
    repo: &Repo<PerKey>,
    emulator: &KeyLimitEmulator,
    first: usize,
    seconds: f64,
) -> (usize, Vec<String>, u64) {
    let rate = LIMITS.write_units_per_second * OVERLOAD;
    let total = (rate * seconds) as usize;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let throttled_before = emulator.counts().throttled;
    let started = tokio::time::Instant::now();
    let mut running = futures::stream::FuturesUnordered::new();
    let mut accepted = Vec::new();
    for i in 0..total {
        tokio::time::sleep_until(started + interval * i as u32).await;
        let repo = repo.clone();
        let item = per_key("viral", first + i);
        running.push(tokio::spawn(async move {
            let ok = repo.put(&item).await.is_ok();
            (item.player_id, ok)
        }));
        while let Some(Some(done)) = futures::FutureExt::now_or_never(running.next()) {
            let (player, ok) = done.expect("write task");
            if ok {
                accepted.push(player);
            }
        }
    }
    while let Some(done) = running.next().await {
        let (player, ok) = done.expect("write task");
        if ok {
            accepted.push(player);
        }
    }
    (
        total,
        accepted,
        emulator.counts().throttled - throttled_before,
    )
}

#[tokio::main]
async fn main() {
    let seconds: f64 = std::env::var("PER_KEY_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4.0);
    let backend = common::backend().await;
    let sdk = backend.sdk_config().await;
    let meter = Arc::new(Meter::default());
    let metered = || {
        Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&sdk)
                .interceptor(Metering(meter.clone()))
                .build(),
        )
    };
    let timing = LayoutTiming::new(Duration::from_millis(500), Duration::from_millis(500));
    let per_key_table = unique_table_name("bench-perkey");
    let per_key_repo: Repo<PerKey> =
        Repo::new(metered(), &per_key_table).with_layout_timing(timing);
    let unsharded: Repo<Unsharded> = per_key_repo.for_entity();
    let fixed: Repo<Fixed20> = per_key_repo.for_entity();
    per_key_repo.create_table().await.expect("create table");

    let load_started = Instant::now();
    let games: Vec<String> = (0..GAMES).map(|g| format!("g{g:04}")).collect();
    let mut all = Vec::with_capacity(GAMES * SCORES);
    for game in games.iter().map(String::as_str).chain(["viral"]) {
        all.extend((0..SCORES).map(|p| per_key(game, p)));
    }
    load(&per_key_repo, all).await;
    let cold = "g0042";
    load(
        &unsharded,
        (0..SCORES)
            .map(|p| {
                let (game_id, player_id, score) = score(cold, p);
                Unsharded {
                    game_id,
                    player_id,
                    score,
                }
            })
            .collect(),
    )
    .await;
    load(
        &fixed,
        [("fixed-viral", "viral"), ("fixed-cold", cold)]
            .iter()
            .flat_map(|&(id, game)| {
                (0..SCORES).map(move |p| {
                    let (_, player_id, score) = score(game, p);
                    Fixed20 {
                        game_id: id.to_owned(),
                        player_id,
                        score,
                    }
                })
            })
            .collect(),
    )
    .await;
    eprintln!(
        "loaded {} games of {SCORES} scores in {:?}",
        GAMES + 1,
        load_started.elapsed()
    );

    // Writes: the viral game at 5x its per-key limit, through the emulator.
    let emulator = KeyLimitEmulator::new(LIMITS).with_burst_seconds(1.0);
    emulator.register_table(&per_key_table, &PerKey::table_definition());
    let hot: Repo<PerKey> =
        Repo::new(emulator.client(&sdk), &per_key_table).with_layout_timing(timing);
    let (offered_one, accepted_one, throttled_one) =
        write_phase(&hot, &emulator, 1_000_000, seconds).await;
    let change = {
        let layouts = per_key_repo.layouts();
        tokio::spawn(async move {
            let started = Instant::now();
            let moved = layouts.change("GAME#viral", 20).await.expect("widen");
            (moved, started.elapsed())
        })
    };
    let (offered_during, accepted_during, throttled_during) =
        write_phase(&hot, &emulator, 2_000_000, seconds).await;
    let (moved, change_took) = change.await.expect("change task");
    let (offered_after, accepted_after, throttled_after) =
        write_phase(&hot, &emulator, 3_000_000, seconds).await;
    let stored: HashSet<String> = PerKey::query(&per_key_repo, "viral")
        .consistent_read(true)
        .collect()
        .await
        .expect("read back")
        .into_iter()
        .map(|s| s.player_id)
        .collect();
    let lost = |accepted: &[String]| accepted.iter().filter(|p| !stored.contains(*p)).count();

    // Reads: top-100 of the cold game and of the (widened) viral game, sides interleaved.
    let mut sides: Vec<(&str, &str, Side)> = vec![
        ("cold game", "unsharded", Side::default()),
        ("cold game", "per key (n = 1)", Side::default()),
        ("cold game", "fixed n = 20", Side::default()),
        ("viral game", "per key (widened to 20)", Side::default()),
        ("viral game", "fixed n = 20", Side::default()),
    ];
    for round in 0..ROUNDS {
        for i in 0..sides.len() {
            let at = (i + round) % sides.len();
            let side = &mut sides[at].2;
            match at {
                0 => top100(&meter, side, Unsharded::query(&unsharded, cold)).await,
                1 => top100(&meter, side, PerKey::query(&per_key_repo, cold)).await,
                2 => top100(&meter, side, Fixed20::query(&fixed, "fixed-cold")).await,
                3 => top100(&meter, side, PerKey::query(&per_key_repo, "viral")).await,
                _ => top100(&meter, side, Fixed20::query(&fixed, "fixed-viral")).await,
            }
        }
    }
    println!("\n| read (top-100) | layout | items | Query requests | read units | median time |");
    println!("|---|---|---|---|---|---|");
    for (what, layout, side) in &mut sides {
        println!(
            "| {what} | {layout} | {} | {} | {:.1} | {:.2?} |",
            side.items,
            side.requests,
            side.units,
            median(&side.times)
        );
    }
    println!(
        "\n| viral game writes at {OVERLOAD}x the per-key limit ({} /s) | offered | accepted | throttled (emulator) | lost |",
        LIMITS.write_units_per_second * OVERLOAD
    );
    println!("|---|---|---|---|---|");
    for (phase, offered, accepted, throttled) in [
        (
            "one partition (n = 1)",
            offered_one,
            &accepted_one,
            throttled_one,
        ),
        (
            "while widening 1 -> 20",
            offered_during,
            &accepted_during,
            throttled_during,
        ),
        (
            "after widening (20)",
            offered_after,
            &accepted_after,
            throttled_after,
        ),
    ] {
        println!(
            "| {phase} | {offered} | {} | {throttled} | {} |",
            accepted.len(),
            lost(accepted)
        );
    }
    println!(
        "\nthe change took {change_took:.2?} (lease 500 ms + margin 500 ms per step): {} moved, {} in place, {} left",
        moved.moved, moved.in_place, moved.left
    );
}
