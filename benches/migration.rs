//! The migration runner (`repo.migrate()`), measured on DynamoDB Local in one run:
//!
//! - **(a) the write budget**: a legacy -> 10-shard migration at each budget (100, 200 and 400
//!   write units/s by default), sized to run about 20 s each: the write units it used per
//!   second (what DynamoDB reported, as the budget charges them), over the whole run and in
//!   the steady middle of it (20% to 80% of the run), against the budget; and items moved per
//!   second. A first run with no budget shows what DynamoDB Local itself allows.
//! - **(b) reads during a transition**: a top-100 (descending) read by each declaration of
//!   the same 2,000 scores, side by side, interleaved: requests and read units per top-100
//!   (on a repository's first run of the query, and on its second, once it has learned
//!   where the answer came from), the most requests in flight, and the median latency with
//!   10 ms injected per request. Steady state (n = 10, n = 20) against a transition before
//!   and after its migration (10 -> 20, and legacy -> 10).
//!
//! ```text
//! cargo bench --bench migration                          # budgets 100 200 400
//! cargo bench --bench migration -- 50 150                # other budgets
//! MIGRATION_SECONDS=30 MIGRATION_READ_ROUNDS=40 cargo bench --bench migration
//! MIGRATION_PARTS=b cargo bench --bench migration        # (b) only
//! ```
//!
//! The machine has 2 cores shared with builds and with DynamoDB Local itself: rates are what
//! the budget allows when DynamoDB Local can take more, and the uncapped row says when it
//! cannot. DynamoDB Local reports 2 units for a transaction's put and none for its condition
//! check (DynamoDB charges 2 for each), so a move of a small item is charged 3 here and 5 on
//! DynamoDB; the budget charges what the endpoint reports either way. This binary reports;
//! it never fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use serde::{Deserialize, Serialize};
use sharded::capacity::{HotKeyStats, ReportHotKeys};
use sharded::migrate::Migrate;
use sharded::{Query, Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

mod common;
mod stats;
use stats::median;

const GAME: &str = "g1";
const DEFAULT_BUDGETS: [f64; 3] = [100.0, 200.0, 400.0];
const DEFAULT_SECONDS: f64 = 20.0;
const READ_SCORES: usize = 2_000;
const DEFAULT_READ_ROUNDS: usize = 25;
const TOP: usize = 100;
const LATENCY: Duration = Duration::from_millis(10);

macro_rules! score {
    ($(#[$doc:meta])* $name:ident, $($pk:tt)*) => {
        $(#[$doc])*
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "Score")]
        #[pk($($pk)*)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct $name {
            game_id: String,
            player_id: String,
            score: u64,
            at: String,
        }

        impl $name {
            #[allow(dead_code)] // not every declaration is written through
            fn of(player: &str, score: u64) -> Self {
                $name {
                    game_id: GAME.into(),
                    player_id: player.into(),
                    score,
                    at: "2026-06-22T01:00:00Z".into(),
                }
            }
        }
    };
}

score!(
    /// Steady at 10 shards.
    At10, template = "GAME#{game_id}", shard = "hash(player_id)", n = 10
);
score!(
    /// Steady at 20 shards.
    At20, template = "GAME#{game_id}", shard = "hash(player_id)", n = 20
);
score!(
    /// Resharding 10 -> 20.
    To20, template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10
);
score!(
    /// Adopting 10 shards over the unsharded legacy key.
    Adopted, template = "GAME#{game_id}", shard = "hash(player_id)", n = 10, legacy = "GAME#{game_id}"
);

fn scores(count: usize) -> Vec<(String, u64)> {
    let mut seed = 0x5EED_0008_u64;
    (0..count)
        .map(|i| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (format!("player-{i:05}"), (seed >> 33) % 1_000_000)
        })
        .collect()
}

/// Writes `scores` as a pre-`sharded` service did: one unsharded key, no entity attribute.
async fn seed_legacy(repo: &Repo<Adopted>, scores: &[(String, u64)]) {
    let requests: Vec<WriteRequest> = scores
        .iter()
        .map(|(player, score)| {
            let item = HashMap::from([
                ("pk".to_owned(), AttributeValue::S(format!("GAME#{GAME}"))),
                (
                    "sk".to_owned(),
                    AttributeValue::S(Adopted::sk(*score, player).expect("sort key")),
                ),
                ("game_id".to_owned(), AttributeValue::S(GAME.into())),
                ("player_id".to_owned(), AttributeValue::S(player.clone())),
                ("score".to_owned(), AttributeValue::N(score.to_string())),
                (
                    "at".to_owned(),
                    AttributeValue::S("2026-06-22T01:00:00Z".into()),
                ),
            ]);
            WriteRequest::builder()
                .put_request(
                    PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .expect("put"),
                )
                .build()
        })
        .collect();
    for chunk in requests.chunks(25) {
        let mut pending = chunk.to_vec();
        while !pending.is_empty() {
            let out = repo
                .client()
                .batch_write_item()
                .request_items(repo.table(), pending)
                .send()
                .await
                .expect("batch write");
            pending = out
                .unprocessed_items
                .and_then(|mut u| u.remove(repo.table()))
                .unwrap_or_default();
        }
    }
}

/// One budgeted migration's figures.
struct Measured {
    items: usize,
    moved: u64,
    seconds: f64,
    units: f64,
    /// Write units per second between 20% and 80% of the run.
    steady: f64,
}

/// Migrates `count` legacy scores to 10 shards at `budget` write units/s (none when infinite).
async fn migrate_at(client: &aws_sdk_dynamodb::Client, budget: f64, count: usize) -> Measured {
    let repo: Repo<Adopted> = Repo::new(client.clone(), unique_table_name("bench-migrate"));
    repo.create_table().await.expect("create table");
    seed_legacy(&repo, &scores(count)).await;
    let samples: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
    let seen = samples.clone();
    let report = repo
        .migrate()
        .write_units_per_second(budget)
        .on_progress(move |p| {
            seen.lock()
                .unwrap()
                .push((p.elapsed.as_secs_f64(), p.write_units))
        })
        .run()
        .await
        .expect("migration");
    let p = &report.progress;
    let seconds = p.elapsed.as_secs_f64();
    let samples = samples.lock().unwrap();
    let at = |fraction: f64| {
        samples
            .iter()
            .find(|(t, _)| *t >= seconds * fraction)
            .copied()
            .unwrap_or((seconds, p.write_units))
    };
    let ((t0, u0), (t1, u1)) = (at(0.2), at(0.8));
    Measured {
        items: count,
        moved: p.moved,
        seconds,
        units: p.write_units,
        steady: if t1 > t0 { (u1 - u0) / (t1 - t0) } else { 0.0 },
    }
}

async fn write_budget(client: &aws_sdk_dynamodb::Client, budgets: &[f64], seconds: f64) {
    println!("\n## (a) the write budget: legacy -> 10 shards, 8 concurrent, delete delay 1 s\n");
    // Uncapped first: DynamoDB Local's own ceiling, and the units one move is charged.
    let ceiling = migrate_at(client, f64::INFINITY, 1_000).await;
    let per_move = ceiling.units / ceiling.moved.max(1) as f64;
    println!(
        "| budget WCU/s | items | s | write units | WCU/s (whole run) | / budget | WCU/s (20%..80%) | / budget | items/s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let row = |budget: Option<f64>, m: &Measured| {
        let ratio = |rate: f64| budget.map_or("-".to_owned(), |b| format!("{:.2}", rate / b));
        let whole = m.units / m.seconds;
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.0} | {} | {:.0} | {} | {:.0} |",
            budget.map_or("none".to_owned(), |b| format!("{b:.0}")),
            m.items,
            m.seconds,
            m.units,
            whole,
            ratio(whole),
            m.steady,
            ratio(m.steady),
            m.moved as f64 / m.seconds
        );
    };
    row(None, &ceiling);
    for &budget in budgets {
        // Sized to last about `seconds` at the budget.
        let count = ((budget * seconds / per_move).ceil() as usize).max(100);
        let m = migrate_at(client, budget, count).await;
        row(Some(budget), &m);
    }
    println!(
        "\n{per_move:.2} write units per move as this endpoint reports them (uncapped run: {:.0} \
         WCU/s, {:.0} items/s)",
        ceiling.units / ceiling.seconds,
        ceiling.moved as f64 / ceiling.seconds
    );
}

/// A top-100 read of some declaration, through a repository recording into `stats`.
type Read = Box<
    dyn Fn(Option<Arc<HotKeyStats>>) -> futures::future::BoxFuture<'static, Vec<(u64, String)>>,
>;

fn read_of<E: ShardedEntity + Send + 'static>(
    repo: Repo<E>,
    query: fn(&Repo<E>) -> Query<E>,
    key: fn(&E) -> (u64, String),
) -> Read {
    Box::new(move |stats| {
        let repo = match stats {
            Some(stats) => repo.clone().with_stats(stats),
            None => repo.clone(),
        };
        Box::pin(async move {
            query(&repo)
                .descending()
                .limit(TOP)
                .collect()
                .await
                .expect("top 100")
                .iter()
                .map(key)
                .collect()
        })
    })
}

async fn reads(sdk: &aws_config::SdkConfig, rounds: usize) {
    println!(
        "\n## (b) a top-100 during a transition and in steady state: {READ_SCORES} scores, {} ms \
         injected per request, {rounds} interleaved rounds\n",
        LATENCY.as_millis()
    );
    let faults = Faults::new();
    let client = faults.client(sdk);
    let all = scores(READ_SCORES);
    let make = |prefix: &'static str| {
        let client = client.clone();
        async move {
            let repo: Repo<At10> = Repo::new(client, unique_table_name(prefix));
            repo.create_table().await.expect("create table");
            repo
        }
    };
    // Items at their 10-shard places: steady n = 10, and 10 -> 20 before its migration.
    let at10 = make("bench-reads-10").await;
    let items: Vec<At10> = all.iter().map(|(p, s)| At10::of(p, *s)).collect();
    at10.batch_put(&items).await.expect("seed");
    // Items at their 20-shard places: steady n = 20, and 10 -> 20 after its migration.
    let at20: Repo<At20> = make("bench-reads-20").await.for_entity();
    let items: Vec<At20> = all.iter().map(|(p, s)| At20::of(p, *s)).collect();
    at20.batch_put(&items).await.expect("seed");
    // Items under the legacy key: legacy -> 10 before its migration; and after it.
    let legacy: Repo<Adopted> = make("bench-reads-legacy").await.for_entity();
    seed_legacy(&legacy, &all).await;
    let adopted: Repo<Adopted> = make("bench-reads-adopted").await.for_entity();
    seed_legacy(&adopted, &all).await;
    adopted
        .migrate()
        .write_units_per_second(f64::INFINITY)
        .run()
        .await
        .expect("migration");

    let variants: Vec<(&str, Read)> = vec![
        (
            "(1) steady, n = 10",
            read_of(
                at10.clone(),
                |r| At10::query(r, GAME),
                |s| (s.score, s.player_id.clone()),
            ),
        ),
        (
            "(2) 10 -> 20, before the migration",
            read_of(
                at10.for_entity::<To20>(),
                |r| To20::query(r, GAME),
                |s| (s.score, s.player_id.clone()),
            ),
        ),
        (
            "(3) 10 -> 20, after the migration (still declared)",
            read_of(
                at20.for_entity::<To20>(),
                |r| To20::query(r, GAME),
                |s| (s.score, s.player_id.clone()),
            ),
        ),
        (
            "(4) steady, n = 20",
            read_of(
                at20.clone(),
                |r| At20::query(r, GAME),
                |s| (s.score, s.player_id.clone()),
            ),
        ),
        (
            "(5) legacy -> 10, before the migration",
            read_of(
                legacy.clone(),
                |r| Adopted::query(r, GAME),
                |s| (s.score, s.player_id.clone()),
            ),
        ),
        (
            "(6) legacy -> 10, after the migration (still declared)",
            read_of(
                adopted.clone(),
                |r| Adopted::query(r, GAME),
                |s| (s.score, s.player_id.clone()),
            ),
        ),
    ];
    let mut expected = all.iter().map(|(p, s)| (*s, p.clone())).collect::<Vec<_>>();
    expected.sort_by(|a, b| b.cmp(a));
    expected.truncate(TOP);

    faults.set_latency(LATENCY);
    // Two checked, counted runs of each: requests and read units per top-100, on the
    // repository's first run of the query (nothing learned) and on its second.
    let mut requests = Vec::new();
    let mut first_requests = Vec::new();
    let mut in_flight = Vec::new();
    let mut units = Vec::new();
    for (name, read) in &variants {
        faults.reset_counts();
        let got = read(None).await;
        assert_eq!(
            got, expected,
            "{name} disagrees with the brute-force top 100 (first run)"
        );
        first_requests.push(faults.requests("Query"));
        faults.reset_counts();
        let stats = Arc::new(HotKeyStats::new(Duration::from_secs(3600)));
        let got = read(Some(stats.clone())).await;
        assert_eq!(
            got, expected,
            "{name} disagrees with the brute-force top 100"
        );
        requests.push(faults.requests("Query"));
        in_flight.push(faults.max_in_flight());
        units.push(
            stats
                .report()
                .keys
                .iter()
                .map(|k| k.read_units)
                .sum::<f64>(),
        );
    }
    // Warm-up, then interleaved timed rounds, the first variant rotating.
    for _ in 0..3 {
        for (_, read) in &variants {
            std::hint::black_box(read(None).await);
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        for i in 0..variants.len() {
            let v = (round + i) % variants.len();
            let started = Instant::now();
            std::hint::black_box((variants[v].1)(None).await);
            times[v].push(started.elapsed().as_secs_f64() * 1_000.0);
        }
    }
    println!(
        "| declaration read | Query requests, first run | Query requests, learned | max in flight | read units | median ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (v, (name, _)) in variants.iter().enumerate() {
        println!(
            "| {name} | {} | {} | {} | {:.1} | {:.1} |",
            first_requests[v],
            requests[v],
            in_flight[v],
            units[v],
            median(&times[v])
        );
    }
    let ratio = |a: usize, b: usize| median(&times[a]) / median(&times[b]);
    println!("\n| ratio | requests | read units | median latency |");
    println!("|---|---:|---:|---:|");
    for (a, b, name) in [
        (1, 0, "(2) 10 -> 20 before / (1) steady 10"),
        (2, 3, "(3) 10 -> 20 after / (4) steady 20"),
        (4, 0, "(5) legacy before / (1) steady 10"),
        (5, 0, "(6) legacy after / (1) steady 10"),
    ] {
        println!(
            "| {name} | {:.2}x | {:.2}x | {:.2}x |",
            requests[a] as f64 / requests[b] as f64,
            units[a] / units[b],
            ratio(a, b)
        );
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .filter(|b: &f64| b.is_finite() && *b > 0.0)
        .collect();
    let budgets = if args.is_empty() {
        DEFAULT_BUDGETS.to_vec()
    } else {
        args
    };
    let seconds = std::env::var("MIGRATION_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SECONDS);
    let rounds = std::env::var("MIGRATION_READ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_READ_ROUNDS);
    // `MIGRATION_PARTS=b` runs (b) only (`a` for (a) only).
    let parts = std::env::var("MIGRATION_PARTS").unwrap_or_else(|_| "ab".to_owned());
    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let client = local.client().await;
    if parts.contains('a') {
        write_budget(&client, &budgets, seconds).await;
    }
    if parts.contains('b') {
        reads(&sdk, rounds).await;
    }
}
