//! A migration past one machine, measured in one run: the same 10 -> 20 migration of the same
//! table content, on the same fleet budget, run by 1 worker process and by 4 worker processes
//! (the ops command line's `migrate --plan-file --unit-index`, started by this binary as an
//! orchestrator would: at most `workers` at once), every request through the per-key limit
//! emulator (DynamoDB's 1,000 WCU/s per key) in front of the backend.
//!
//! ```text
//! cargo bench --bench fleet                       # DynamoDB Local, 4,000 items, 600 WCU/s
//! FLEET_ITEMS=8000 FLEET_BUDGET=1000 cargo bench --bench fleet
//! ```
//!
//! For each fleet: the duration, the write units per second the fleet spent (every unit's
//! record in the table: the units DynamoDB reported, over the fleet's time) against the
//! budget, items moved per second in all and per worker, the plan's estimate against the
//! measured duration, and whether both tables end with the same content (every item at its
//! current place once). The machine has 2 cores shared with DynamoDB Local: compare rows of
//! one run. This binary reports; it never fails.

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sharded::capacity::PerKeyLimits;
use sharded::migrate::{Migrate, Plan};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
use sharded_testkit::emulator::KeyLimitEmulator;
use sharded_testkit::proxy::FaultProxy;

mod common;

/// The ops example's `Score` before its 10 -> 20 transition.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug)]
#[sharded(entity = "Score")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct At10 {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The ops example's `Score` as the workers know it: 10 -> 20.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct To20 {
    game_id: String,
    player_id: String,
    score: u64,
}

const SEGMENTS: u32 = 16;
const UNITS: u32 = 8;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The ops example, built in release for this run.
fn ops_binary() -> PathBuf {
    let root = env!("CARGO_MANIFEST_DIR");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--release", "--example", "ops"])
        .current_dir(root)
        .status()
        .expect("cargo build --release --example ops");
    assert!(built.success(), "building the ops example failed");
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| format!("{root}/target"));
    PathBuf::from(target).join("release/examples/ops")
}

fn ops(binary: &PathBuf, endpoint: &str, args: &[&str]) -> Command {
    let mut command = Command::new(binary);
    command
        .args(args)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", REGION)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
        .env_remove("AWS_PROFILE");
    command
}

/// One fleet's figures.
struct Fleet {
    workers: usize,
    seconds: f64,
    moved: u64,
    write_units: f64,
    /// Each unit run's items moved per second, as its worker reported.
    per_worker: Vec<f64>,
    estimate_seconds: f64,
    /// The estimate again with the units per move the backend reported.
    estimate_measured_units: f64,
    throttled: u64,
    content: BTreeSet<String>,
}

async fn run_fleet(
    binary: &PathBuf,
    proxy: &FaultProxy,
    emulator: &KeyLimitEmulator,
    repo: &Repo<To20>,
    workers: usize,
    budget: f64,
) -> Fleet {
    let table = repo.table().to_owned();
    let printed = ops(
        binary,
        proxy.endpoint(),
        &[
            "migrate",
            "--entity",
            "Score",
            "--table",
            &table,
            "--segments",
            &SEGMENTS.to_string(),
            "--write-units-per-second",
            &budget.to_string(),
            "--plan",
            "--units",
            &UNITS.to_string(),
            "--workers",
            &workers.to_string(),
        ],
    )
    .output()
    .expect("ops migrate --plan");
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let plan_json: serde_json::Value = serde_json::from_slice(&printed.stdout).unwrap();
    let plan_file = std::env::temp_dir().join(format!("{table}.plan.json"));
    std::fs::write(&plan_file, &printed.stdout).unwrap();
    let plan_file = plan_file.to_str().unwrap().to_owned();
    let plan = Plan::new(
        table.as_str(),
        "Score",
        plan_json["layout"].as_str().unwrap(),
        SEGMENTS,
        UNITS,
        workers as u32,
        budget,
    )
    .unwrap();
    let estimate = &plan_json["estimate"];
    let estimate_seconds = estimate["seconds"].as_f64().unwrap_or(0.0);

    let throttled_before = emulator.counts().throttled;
    let mut queue: VecDeque<usize> = (0..UNITS as usize).collect();
    let mut running: Vec<Child> = Vec::new();
    let mut per_worker = Vec::new();
    let started = Instant::now();
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < workers {
            let Some(index) = queue.pop_front() else {
                break;
            };
            let index = index.to_string();
            let child = ops(
                binary,
                proxy.endpoint(),
                &[
                    "migrate",
                    "--entity",
                    "Score",
                    "--table",
                    &table,
                    "--plan-file",
                    &plan_file,
                    "--unit-index",
                    &index,
                    "--quiet",
                    "--output",
                    "json",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a worker");
            running.push(child);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut still = Vec::new();
        for mut child in running.drain(..) {
            if child.try_wait().unwrap().is_none() {
                still.push(child);
                continue;
            }
            let out = child.wait_with_output().unwrap();
            let report: serde_json::Value =
                serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
            if !out.status.success() {
                println!("a worker failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            let moved = report["moved"].as_f64().unwrap_or(0.0);
            let seconds = report["seconds"].as_f64().unwrap_or(0.0);
            if seconds > 0.0 {
                per_worker.push(moved / seconds);
            }
        }
        running = still;
    }
    let seconds = started.elapsed().as_secs_f64();
    let status = repo.migrate().status(&plan).await.unwrap();
    let total = status.total();
    let left = repo.migration_remaining().await.unwrap().items;
    if !status.is_complete() || left > 0 {
        println!("{workers} workers: not complete ({left} left): {status:?}");
    }
    let units_per_move = if total.moved > 0 {
        total.write_units / total.moved as f64
    } else {
        0.0
    };
    let estimate_measured_units = estimate["items"].as_f64().unwrap_or(0.0)
        * estimate["moving"].as_f64().unwrap_or(1.0)
        * units_per_move
        / budget;
    Fleet {
        workers,
        seconds,
        moved: total.moved,
        write_units: total.write_units,
        per_worker,
        estimate_seconds,
        estimate_measured_units,
        throttled: emulator.counts().throttled - throttled_before,
        content: content(repo).await,
    }
}

/// The table's items (the library's own records aside), each as its sorted attributes.
async fn content(repo: &Repo<To20>) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    let mut start = None;
    loop {
        let page = repo
            .client()
            .scan()
            .table_name(repo.table())
            .set_exclusive_start_key(start)
            .send()
            .await
            .unwrap();
        for item in page.items.unwrap_or_default() {
            let pk = item
                .get("pk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            if pk.starts_with("_sharded#") {
                continue;
            }
            let mut attributes: Vec<_> = item.into_iter().collect();
            attributes.sort_by(|a, b| a.0.cmp(&b.0));
            items.insert(format!("{attributes:?}"));
        }
        start = page.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}

#[tokio::main]
async fn main() {
    let items: u64 = env("FLEET_ITEMS", 4_000);
    let budget: f64 = env("FLEET_BUDGET", 600.0);
    let backend = common::backend().await;
    let binary = ops_binary();
    let emulator = KeyLimitEmulator::new(PerKeyLimits::DYNAMODB);
    let proxy = FaultProxy::start_emulating(backend.endpoint(), &emulator).expect("the proxy");
    let client = backend.client().await;
    let scores: Vec<At10> = (0..items)
        .map(|i| At10 {
            game_id: format!("g{}", i % 20),
            player_id: format!("p{i}"),
            score: (i * 7_919) % 100_000,
        })
        .collect();
    let mut fleets = Vec::new();
    for workers in [1, 4] {
        let table = unique_table_name("fleet-bench");
        let before: Repo<At10> = Repo::new(client.clone(), table.clone());
        before.create_table().await.unwrap();
        emulator.register_table(&table, &At10::table_definition());
        before.batch_put(&scores).await.unwrap();
        let repo: Repo<To20> = Repo::new(client.clone(), table);
        fleets.push(run_fleet(&binary, &proxy, &emulator, &repo, workers, budget).await);
    }
    println!(
        "\n{items} items (10 -> 20 shards: about half move), a fleet budget of {budget} WCU/s, \
         {UNITS} units of {SEGMENTS} segments, through the per-key emulator\n"
    );
    println!(
        "| workers | duration | moved | fleet WCU/s (of {budget}) | items/s | items/s per worker | estimate | its error | estimate at the reported units/move | throttled |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for f in &fleets {
        let mean = f.per_worker.iter().sum::<f64>() / f.per_worker.len().max(1) as f64;
        println!(
            "| {} | {:.1} s | {} | {:.0} | {:.0} | {:.0} | {:.1} s | {:+.0}% | {:.1} s ({:+.0}%) | {} |",
            f.workers,
            f.seconds,
            f.moved,
            f.write_units / f.seconds,
            f.moved as f64 / f.seconds,
            mean,
            f.estimate_seconds,
            (f.estimate_seconds / f.seconds - 1.0) * 100.0,
            f.estimate_measured_units,
            (f.estimate_measured_units / f.seconds - 1.0) * 100.0,
            f.throttled,
        );
    }
    let same = fleets.windows(2).all(|w| w[0].content == w[1].content);
    println!(
        "\nsame final content in both tables: {same} ({} items)",
        fleets[0].content.len()
    );
}
