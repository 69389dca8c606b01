//! A migration past one machine: its plan (`ops migrate --plan`) run by a fleet of worker
//! processes (`ops migrate --plan-file --unit-index`, at most 4 at once, as an orchestrator
//! runs them), one of them killed mid-unit and its unit run again, while a writer in this
//! process rewrites, deletes and adds items. Afterwards every item is at its current place
//! exactly once with what the writer last wrote, `remaining` is 0, the plan's status is
//! complete (and its records forgotten), and the fleet spent no more than its budget (within
//! 10%).

use std::collections::{BTreeMap, VecDeque};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sharded::migrate::{Migrate, Plan, UnitState};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::local::{unique_table_name, ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};

use super::{binary, json, ops, ScoreOn10};
use crate::support::{client, local, raw_scan};

/// The example's `Score` during its 10 -> 20 transition, with a note the writer changes: the
/// migration moves whole items, so a note written during it must survive it.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
#[sharded(entity = "Score")]
struct Noted {
    game_id: String,
    player_id: String,
    score: u64,
    #[serde(default)]
    note: Option<String>,
}

/// An item's identity: (game, player, score).
type Key = (String, String, u64);

const WORKERS: usize = 4;
const UNITS: u32 = 8;
const SEGMENTS: u32 = 16;
/// The fleet's budget, write units per second: 150 per worker.
const BUDGET: f64 = 600.0;

fn key_of(s: &Noted) -> Key {
    (s.game_id.clone(), s.player_id.clone(), s.score)
}

/// One worker process running unit `index` of the plan in `plan_file`.
fn worker(endpoint: &str, table: &str, plan_file: &str, index: usize) -> Child {
    Command::new(binary())
        .args([
            "migrate",
            "--entity",
            "Score",
            "--table",
            table,
            "--plan-file",
            plan_file,
            "--unit-index",
            &index.to_string(),
            "--quiet",
            "--output",
            "json",
        ])
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", REGION)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
        .env_remove("AWS_PROFILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a worker")
}

/// The writer: until `stop`, rewrites the note of, deletes, or adds an item, one at a time,
/// keeping `model` as what the table must hold afterwards.
async fn write_until(
    repo: Repo<Noted>,
    model: Arc<Mutex<BTreeMap<Key, Option<String>>>>,
    stop: Arc<AtomicBool>,
) -> u64 {
    let mut rng = fastrand::Rng::with_seed(29);
    let mut writes = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let keys: Vec<Key> = model.lock().unwrap().keys().cloned().collect();
        let (game, player, score) = keys[rng.usize(..keys.len())].clone();
        match rng.u8(..10) {
            0..=5 => {
                let note = Some(format!("w{writes}"));
                let item = Noted {
                    game_id: game.clone(),
                    player_id: player.clone(),
                    score,
                    note: note.clone(),
                };
                repo.put(&item).await.expect("the writer's put");
                model.lock().unwrap().insert((game, player, score), note);
            }
            6..=7 => {
                Noted::delete(&repo, &game, &player, score)
                    .await
                    .expect("the writer's delete");
                model.lock().unwrap().remove(&(game, player, score));
            }
            _ => {
                let item = Noted {
                    game_id: game,
                    player_id: format!("new{writes}"),
                    score: rng.u64(..10_000),
                    note: Some(format!("w{writes}")),
                };
                repo.put(&item).await.expect("the writer's new item");
                model
                    .lock()
                    .unwrap()
                    .insert(key_of(&item), item.note.clone());
            }
        }
        writes += 1;
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    writes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_worker_processes_migrate_the_units_one_killed_and_run_again() {
    let backend = local().await;
    let table = unique_table_name("fleet");
    let before: Repo<ScoreOn10> = Repo::new(client().await, table.clone());
    before.create_table().await.unwrap();
    let scores: Vec<ScoreOn10> = (0..1_600u64)
        .map(|i| ScoreOn10 {
            game_id: format!("g{}", i % 8),
            player_id: format!("p{i}"),
            score: (i * 7_919) % 10_000,
        })
        .collect();
    before.batch_put(&scores).await.unwrap();
    let repo: Repo<Noted> = Repo::new(client().await, table.clone());
    let to_move = repo.migration_remaining().await.unwrap().items;
    assert!(
        to_move > 400,
        "about half hash to the new shards: {to_move}"
    );

    // The plan, as an orchestrator gets it.
    let printed = ops(&[
        "migrate",
        "--entity",
        "Score",
        "--table",
        &table,
        "--segments",
        &SEGMENTS.to_string(),
        "--write-units-per-second",
        &BUDGET.to_string(),
        "--plan",
        "--units",
        &UNITS.to_string(),
        "--workers",
        &WORKERS.to_string(),
    ])
    .await;
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    let plan_json = json(&printed);
    assert_eq!(plan_json["units"].as_array().unwrap().len(), UNITS as usize);
    assert_eq!(
        plan_json["unit_write_units_per_second"],
        BUDGET / WORKERS as f64
    );
    let plan_file = std::env::temp_dir().join(format!("{table}.plan.json"));
    std::fs::write(&plan_file, &printed.stdout).unwrap();
    let plan_file = plan_file.to_str().unwrap().to_owned();
    let plan = Plan::new(
        table.as_str(),
        "Score",
        plan_json["layout"].as_str().unwrap(),
        SEGMENTS,
        UNITS,
        WORKERS as u32,
        BUDGET,
    )
    .unwrap();

    let model: Arc<Mutex<BTreeMap<Key, Option<String>>>> = Arc::new(Mutex::new(
        scores
            .iter()
            .map(|s| ((s.game_id.clone(), s.player_id.clone(), s.score), None))
            .collect(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_until(repo.clone(), model.clone(), stop.clone()));

    // The orchestrator: at most WORKERS units at once; the first worker is killed (SIGKILL)
    // once its unit's record shows items moved, and its unit is queued again.
    let mut queue: VecDeque<usize> = (0..UNITS as usize).collect();
    let mut running: Vec<(usize, Child)> = Vec::new();
    let mut killed: Option<usize> = None;
    let mut outputs: Vec<(usize, serde_json::Value)> = Vec::new();
    let started = Instant::now();
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < WORKERS {
            let Some(index) = queue.pop_front() else {
                break;
            };
            running.push((index, worker(backend.endpoint(), &table, &plan_file, index)));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        if killed.is_none() {
            let (index, _) = &running[0];
            let status = repo.migrate().status(&plan).await.unwrap();
            let moved = status.units[*index].progress.map_or(0, |p| p.moved);
            if moved > 0 && status.units[*index].state == UnitState::Started {
                let (index, mut child) = running.remove(0);
                child.kill().expect("kill the worker");
                child.wait().unwrap();
                killed = Some(index);
                queue.push_back(index);
                continue;
            }
        }
        let mut still = Vec::new();
        for (index, mut child) in running.drain(..) {
            if child.try_wait().unwrap().is_none() {
                still.push((index, child));
                continue;
            }
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "unit {index}: {:?}\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let report = serde_json::from_str(&stdout).expect("the worker's JSON report");
            outputs.push((index, report));
        }
        running = still;
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the fleet did not finish"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.await.unwrap();
    let killed = killed.expect("a worker was killed mid-unit");
    assert_eq!(outputs.len(), UNITS as usize);
    assert!(writes > 0);

    // Completion, from the units' records, wherever they ran.
    let status = repo.migrate().status(&plan).await.unwrap();
    assert!(status.is_complete(), "{status:?}");
    // The killed worker may have sent its unit's last record just before the kill (the
    // table applies a request already sent): its run again then finds the unit done, reads
    // nothing and leaves the record as it is, as a done unit's run does.
    let (_, again) = outputs.iter().find(|(i, _)| *i == killed).unwrap();
    let found_done = again["scanned"] == 0 && again["write_units"] == 0.0;
    let rerun = status.units[killed].progress.unwrap();
    assert_eq!(
        rerun.runs,
        if found_done { 1 } else { 2 },
        "the killed unit's record, then its run again (it found the unit done: {found_done})"
    );
    let remaining = ops(&[
        "remaining",
        "--entity",
        "Score",
        "--table",
        &table,
        "--plan-file",
        &plan_file,
        "--forget",
        "--output",
        "json",
    ])
    .await;
    assert_eq!(
        remaining.code, 0,
        "{}\n{}",
        remaining.stdout, remaining.stderr
    );
    let r = json(&remaining);
    assert_eq!(r["remaining"], 0);
    assert_eq!(r["removable"], true);
    // Removable, so the units' records were deleted: the table holds the entity's items only.
    assert_eq!(r["forgotten"], UNITS);
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);

    // Every item at its current place exactly once, as the writer last wrote it.
    let mut stored: BTreeMap<Key, Option<String>> = BTreeMap::new();
    for item in raw_scan(repo.client(), &table).await {
        let pk = item["pk"].as_s().unwrap().clone();
        assert!(
            !pk.starts_with("_sharded#"),
            "{pk}: a record left after --forget"
        );
        let score = Noted::from_item(item).unwrap();
        assert_eq!(
            pk,
            score.item_keys().unwrap().pk,
            "{score:?} is not at its current place"
        );
        let again = stored.insert(key_of(&score), score.note.clone());
        assert!(again.is_none(), "{score:?} is stored twice");
    }
    let expected = model.lock().unwrap().clone();
    assert_eq!(
        stored.len(),
        expected.len(),
        "items lost or brought back: the writer made {writes} writes"
    );
    assert_eq!(
        stored, expected,
        "what the writer wrote survives the migration"
    );

    // The fleet's budget: every write unit the units recorded, over the fleet's time.
    let total = status.total();
    let seconds = (total.updated_at_ms - total.started_at_ms) as f64 / 1_000.0;
    let rate = total.write_units / seconds;
    eprintln!(
        "fleet: {} moved, {:.0} write units in {seconds:.1} s: {rate:.0} WCU/s of a {BUDGET} \
         budget; {writes} writes meanwhile",
        total.moved, total.write_units
    );
    assert!(
        rate <= BUDGET * 1.1,
        "the fleet spent {rate:.0} WCU/s, over its budget of {BUDGET}"
    );
    // Each record counts its own writes, so the records hold every unit the finished runs
    // reported, and the killed run's as far as it recorded besides.
    let reported: f64 = outputs
        .iter()
        .map(|(_, o)| o["write_units"].as_f64().unwrap())
        .sum();
    assert!(
        reported <= total.write_units,
        "the records count every unit the finished runs reported ({reported} > {})",
        total.write_units
    );
}
