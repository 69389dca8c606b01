//! One table shared with a TypeScript service and a Python service, both ways, on DynamoDB
//! Local, for two tables: the default one (`pk`/`sk`, items tagged in `_entity`) and a table
//! sharded by hand before it met `sharded` (`PK`/`SK`, `#SHARD_{shard}`, no tag: every item
//! recognised by its keys).
//!
//! The services are `interop/typescript/src/service.ts` (AWS SDK v3) and
//! `interop/python/service.py` (boto3). Each builds its keys, items and recognition with its
//! language's key module from the entity's spec in `interop/vectors.json`, which the Rust side
//! generates from the same declarations as here (checked first: [`declared_as_in_the_vectors`]).
//! (a) A service writes records (`write`, one PutItem per record); `query` (top 10, all,
//! count) and `get` read them, compared with brute force over the records. (b) The repository
//! writes records (and counter increments); the service reads every shard of a partition,
//! keeps the entity's items, merges them and totals the counters (`read`), compared in order.
//! In the untagged table another service's record sits in a partition: both sides skip it.
//!
//! Both need what `interop/run` installs (from the npm and PyPI registries) and builds; the
//! first test here runs it, which also runs both modules' own suites against the vectors, so
//! `cargo test --workspace` is the whole suite. Where Node or Python 3 is missing a test says
//! why it did not run, and fails when `SHARDED_REQUIRE_INTEROP=1` (as CI sets): it never
//! passes silently. A failing `interop/run` fails the tests.

use std::collections::HashMap;
use std::fmt::Debug;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sharded::keys::Item;
use sharded::schema::Recognition;
use sharded::{Repo, ShardedEntity, ShardedTable};
use sharded_testkit::backend::{ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::support::{local, repo};

/// The leaderboard in the default table, declared as `Score` of `tests/interop_vectors.rs`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
#[counter(name = "likes", n = 4)]
pub struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: DateTime<Utc>,
}

/// The table sharded by hand, declared as `KeyedTable` of `tests/interop_vectors.rs`.
#[derive(ShardedTable)]
#[table(name = "Legacy", pk = "PK", sk = "SK", recognize = "key")]
pub struct KeyedTable;

/// Its leaderboard, declared as `ActivePlayer` of `tests/interop_vectors.rs`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(table = KeyedTable)]
#[pk(
    template = "ACTIVE_PLAYERS#{region}",
    shard = "hash(player_id)",
    n = 10,
    suffix = "#SHARD_{shard}"
)]
#[sk(template = "SCORE#{score}#{player_id}")]
pub struct ActivePlayer {
    region: String,
    player_id: String,
    score: u64,
    at: DateTime<Utc>,
}

/// What the tests need of either leaderboard: a partition, a player, a score.
trait Board: ShardedEntity + Serialize + Debug + Clone + PartialEq + Send + Sync {
    /// The attribute of the partition key's field.
    const PARTITION_FIELD: &'static str;
    /// Whether another service's record is planted in a partition (the untagged table).
    const FOREIGN_NEIGHBOUR: bool;
    fn make(partition: &str, player_id: String, score: u64, at: DateTime<Utc>) -> Self;
    fn partition(&self) -> &str;
    /// Every physical partition of `partition`, in shard order.
    fn shards_of(partition: &str) -> Vec<String>;
    fn player_id(&self) -> &str;
    fn score(&self) -> u64;
    async fn top(repo: &Repo<Self>, partition: &str, limit: Option<usize>) -> Vec<Self>;
    async fn count(repo: &Repo<Self>, partition: &str) -> u64;
    async fn get_again(&self, repo: &Repo<Self>) -> Option<Self>;
}

macro_rules! board {
    ($entity:ident, $field:ident, $foreign:literal) => {
        impl Board for $entity {
            const PARTITION_FIELD: &'static str = stringify!($field);
            const FOREIGN_NEIGHBOUR: bool = $foreign;
            fn make(partition: &str, player_id: String, score: u64, at: DateTime<Utc>) -> Self {
                $entity {
                    $field: partition.to_owned(),
                    player_id,
                    score,
                    at,
                }
            }
            fn partition(&self) -> &str {
                &self.$field
            }
            fn shards_of(partition: &str) -> Vec<String> {
                $entity::pk_partitions(partition).expect("keys").all()
            }
            fn player_id(&self) -> &str {
                &self.player_id
            }
            fn score(&self) -> u64 {
                self.score
            }
            async fn top(repo: &Repo<Self>, partition: &str, limit: Option<usize>) -> Vec<Self> {
                let query = $entity::query(repo, partition).descending();
                let query = match limit {
                    Some(limit) => query.limit(limit),
                    None => query,
                };
                query.collect().await.expect("a query")
            }
            async fn count(repo: &Repo<Self>, partition: &str) -> u64 {
                $entity::query(repo, partition)
                    .count()
                    .await
                    .expect("a count")
            }
            async fn get_again(&self, repo: &Repo<Self>) -> Option<Self> {
                $entity::get(repo, &self.$field, &self.player_id, self.score)
                    .await
                    .expect("a get")
            }
        }
    };
}

board!(Score, game_id, false);
board!(ActivePlayer, region, true);

/// Partitions whose keys need escapes, and players whose do.
const PARTITIONS: [&str; 2] = ["g1", "g 2#"];
const PLAYERS: [&str; 8] = ["p1", "p#1", "über", "a b", "$", "player-7", "日本", "🎮"];

/// `count` records over [`PARTITIONS`], a fifth of them scored beyond 2^53 (a JavaScript
/// number would round them).
fn records<E: Board>(seed: u64, count: usize) -> Vec<E> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..count)
        .map(|i| {
            let score = if rng.u8(0..5) == 0 {
                u64::MAX - i as u64
            } else {
                rng.u64(0..1000)
            };
            let at = DateTime::from_timestamp(1_782_090_000 + i as i64, rng.u32(0..1_000_000_000))
                .expect("a time");
            let player = format!("{}-{i}", PLAYERS[rng.usize(..PLAYERS.len())]);
            E::make(PARTITIONS[i % 2], player, score, at)
        })
        .collect()
}

/// The records of `partition`, best first: by score, then player id bytes, as the sort key
/// orders them.
fn best_first<E: Board>(records: &[E], partition: &str) -> Vec<E> {
    let mut of: Vec<E> = records
        .iter()
        .filter(|r| r.partition() == partition)
        .cloned()
        .collect();
    of.sort_by(|a, b| {
        (b.score(), b.player_id().as_bytes()).cmp(&(a.score(), a.player_id().as_bytes()))
    });
    of
}

// ---------------------------------------------------------------------------------------------
// The services

/// A service of the shared table: how to run it, when what it needs is installed.
#[derive(Clone, Copy, Debug)]
enum Language {
    TypeScript,
    Python,
}

fn interop(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(path)
}

/// Whether a missing tool fails the test (CI) or only skips it, saying why.
fn skip(why: &str) {
    let message = format!(
        "the interop test did not run: {why}; install Node (with npm) and Python 3 to run it"
    );
    if std::env::var("SHARDED_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("{message} (SHARDED_REQUIRE_INTEROP=1)");
    }
    // Straight to the process's stderr: libtest hides what a passing test prints with
    // `eprintln!`, and a skip must be seen.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
}

/// `program` with the credentials and region of every DynamoDB Local client here.
fn command(program: impl Into<PathBuf>) -> Command {
    let mut command = Command::new(program.into());
    command
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
        .env("AWS_REGION", REGION)
        .env("AWS_DEFAULT_REGION", REGION)
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .kill_on_drop(true);
    command
}

/// Runs `interop/run` once per test process, where Node, npm and Python 3 are on PATH:
/// installs and builds what the services need (incrementally: npm ci only when the lock file
/// changed) and runs both key modules' suites against the vectors. `Err` when a tool is
/// missing; a failing run panics with its output, since the modules then disagree with Rust.
async fn prepared() -> Result<(), String> {
    static PREPARED: tokio::sync::OnceCell<Result<(), String>> = tokio::sync::OnceCell::const_new();
    PREPARED
        .get_or_init(|| async {
            for tool in ["node", "npm", "python3"] {
                let found = Command::new(tool).arg("--version").output().await;
                if !found.is_ok_and(|out| out.status.success()) {
                    return Err(format!("`{tool}` is not on PATH"));
                }
            }
            let out = Command::new("bash")
                .arg(interop("run"))
                .output()
                .await
                .map_err(|e| format!("`bash interop/run` could not start: {e}"))?;
            assert!(
                out.status.success(),
                "interop/run failed (the key modules disagree with the Rust side, or their \
                 packages could not be installed):\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            Ok(())
        })
        .await
        .clone()
}

impl Language {
    /// The service's command, or why it cannot run (said by [`skip`]).
    async fn service(self) -> Option<Command> {
        if let Err(why) = prepared().await {
            skip(&why);
            return None;
        }
        let (program, args, needs): (PathBuf, Vec<PathBuf>, Vec<PathBuf>) = match self {
            Language::TypeScript => (
                PathBuf::from("node"),
                vec![interop("typescript/dist/src/service.js")],
                vec![
                    interop("typescript/dist/src/service.js"),
                    interop("typescript/node_modules/@aws-sdk/client-dynamodb"),
                ],
            ),
            Language::Python => (
                interop("python/.venv/bin/python"),
                vec![interop("python/service.py")],
                vec![interop("python/.venv/bin/python")],
            ),
        };
        if let Some(missing) = needs.iter().find(|p| !p.exists()) {
            skip(&format!("{} is missing", missing.display()));
            return None;
        }
        let mut probe = command(&program);
        match self {
            Language::TypeScript => probe.arg("--version"),
            Language::Python => probe.args(["-c", "import boto3"]),
        };
        match probe.output().await {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                skip(&format!(
                    "{} cannot run the {self:?} service: {}",
                    program.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                return None;
            }
            Err(e) => {
                skip(&format!("`{}` could not start: {e}", program.display()));
                return None;
            }
        }
        let mut service = command(program);
        service.args(args);
        Some(service)
    }
}

/// An item as DynamoDB JSON, the services' format.
fn to_json(item: &Item) -> Value {
    let map: serde_json::Map<String, Value> = item
        .iter()
        .map(|(k, v)| {
            let v = match v {
                AttributeValue::S(s) => json!({"S": s}),
                AttributeValue::N(n) => json!({"N": n}),
                AttributeValue::Bool(b) => json!({"BOOL": b}),
                AttributeValue::Null(_) => json!({"NULL": true}),
                other => panic!("an attribute the services do not take: {other:?}"),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(map)
}

/// DynamoDB JSON as an item.
fn from_json(value: &Value) -> Item {
    let object = value.as_object().expect("an item is a JSON object");
    object
        .iter()
        .map(|(k, v)| {
            let v = if let Some(s) = v["S"].as_str() {
                AttributeValue::S(s.to_owned())
            } else if let Some(n) = v["N"].as_str() {
                AttributeValue::N(n.to_owned())
            } else if let Some(b) = v["BOOL"].as_bool() {
                AttributeValue::Bool(b)
            } else {
                panic!("an attribute the services do not write: {v}")
            };
            (k.clone(), v)
        })
        .collect()
}

fn succeeded(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {stderr}");
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

/// `service write`: each record's fields, as serde stores them, one JSON line each.
async fn service_writes<E: Board>(mut service: Command, repo: &Repo<E>, records: &[E]) {
    service
        .args(["write", "--endpoint", local().await.endpoint()])
        .args(["--table", repo.table(), "--entity", E::SCHEMA.entity])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = service.spawn().expect("the service starts");
    let mut stdin = child.stdin.take().expect("its stdin");
    for record in records {
        let fields: Item = serde_dynamo::to_item(record).expect("a record's fields");
        let line = format!("{}\n", to_json(&fields));
        stdin.write_all(line.as_bytes()).await.expect("written");
    }
    drop(stdin);
    let out = child.wait_with_output().await.expect("the service ends");
    let printed = succeeded(&out, "service write");
    let printed: Value = serde_json::from_str(printed.trim()).expect("the service's count");
    assert_eq!(
        printed,
        json!({"written": records.len()}),
        "the service wrote every record"
    );
}

/// `service read` of one partition: each record it kept, in its merged order, with its
/// counter totals.
async fn service_reads<E: Board>(
    mut service: Command,
    repo: &Repo<E>,
    partition: &str,
    counter: Option<&str>,
) -> Vec<(E, Value)> {
    let values = json!({ E::PARTITION_FIELD: {"S": partition} }).to_string();
    service
        .args(["read", "--endpoint", local().await.endpoint()])
        .args(["--table", repo.table(), "--entity", E::SCHEMA.entity])
        .args(["--partition", &values]);
    if let Some(counter) = counter {
        service.args(["--counter", counter]);
    }
    let out = service.output().await.expect("the service runs");
    let stdout = succeeded(&out, "service read");
    // The neighbour planted in shard 3 of the first partition is skipped, and counted.
    let neighbours = usize::from(E::FOREIGN_NEIGHBOUR && partition == PARTITIONS[0]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(": {neighbours} foreign items skipped")),
        "the service counts the foreign items it skipped: {stderr}"
    );
    stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("`{line}`: {e}"));
            // The item the service's module builds for the record it read: Rust reads it back
            // by its own rule (the tag, or the keys), so the keys are checked once more.
            let record = E::from_item(from_json(&v["item"])).unwrap_or_else(|e| {
                panic!("the service's item is not a {}: {e}", E::SCHEMA.entity)
            });
            (record, v["counters"].clone())
        })
        .collect()
}

/// The entity's spec in `interop/vectors.json`, which the services read, says what its Rust
/// declaration here says.
fn declared_as_in_the_vectors<E: ShardedEntity>() {
    let vectors: Value = serde_json::from_str(
        &std::fs::read_to_string(interop("vectors.json")).expect("interop/vectors.json"),
    )
    .expect("JSON");
    let schema = E::SCHEMA;
    let spec = vectors["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|e| &e["spec"])
        .find(|s| s["entity"] == schema.entity)
        .unwrap_or_else(|| panic!("no {} in interop/vectors.json", schema.entity));
    let recognition = match schema.table_schema.recognition {
        Recognition::Tag { .. } => "tag",
        Recognition::TagOrKey { .. } => "tag_or_key",
        _ => "key",
    };
    let declared = json!({
        "pk": [schema.pk.attribute, schema.pk.template.source, schema.pk.suffix.source, schema.pk.sharding.shard_count()],
        "sk": schema.sk.map(|sk| [sk.attribute, sk.template.source]),
        "table": [schema.table_schema.recognition.tag_attribute(), Some(recognition)],
        "gsis": schema.gsis.len(),
    });
    let in_vectors = json!({
        "pk": [&spec["pk"]["attribute"], &spec["pk"]["template"], &spec["pk"]["suffix"], &spec["pk"]["sharding"]["n"]],
        "sk": [&spec["sk"]["attribute"], &spec["sk"]["template"]],
        "table": [&spec["table"]["tag"], &spec["table"]["recognition"]],
        "gsis": spec["gsis"].as_array().map_or(0, Vec::len),
    });
    assert_eq!(
        declared, in_vectors,
        "{} here and in tests/interop_vectors.rs must be declared alike",
        schema.entity
    );
}

/// Another service's record in shard 3 of partition `g1`, where the entity's board is kept
/// (`E::FOREIGN_NEIGHBOUR`): neither side may read it as the entity.
async fn plant_foreign_record<E: Board>(repo: &Repo<E>) {
    if !E::FOREIGN_NEIGHBOUR {
        return;
    }
    let pk = E::shards_of(PARTITIONS[0])[3].clone();
    let foreign = Item::from([
        (E::SCHEMA.pk.attribute.to_owned(), AttributeValue::S(pk)),
        (
            E::SCHEMA.sk.expect("a sort key").attribute.to_owned(),
            AttributeValue::S("METADATA".to_owned()),
        ),
        ("players".to_owned(), AttributeValue::N("12".to_owned())),
    ]);
    repo.client()
        .put_item()
        .table_name(repo.table())
        .set_item(Some(foreign))
        .send()
        .await
        .expect("the foreign record is written");
}

// ---------------------------------------------------------------------------------------------
// The runs

/// (a) Each service writes; the repository reads: top 10, all, count, get.
async fn services_write_what_rust_reads<E: Board>(name: &str, seed: u64) {
    declared_as_in_the_vectors::<E>();
    for (i, language) in [Language::TypeScript, Language::Python]
        .into_iter()
        .enumerate()
    {
        let Some(service) = language.service().await else {
            continue;
        };
        let repo = repo::<E>(&format!("{name}-{language:?}-writes").to_lowercase()).await;
        plant_foreign_record(&repo).await;
        let written = records::<E>(seed + i as u64, 60);
        service_writes(service, &repo, &written).await;
        for partition in PARTITIONS {
            let expected = best_first(&written, partition);
            assert!(!expected.is_empty(), "{language:?} wrote to {partition}");
            let top = E::top(&repo, partition, Some(10)).await;
            assert_eq!(
                top,
                expected[..expected.len().min(10)],
                "{language:?}: top 10 of {partition}"
            );
            let all = E::top(&repo, partition, None).await;
            assert_eq!(
                all, expected,
                "{language:?}: every record of {partition}, merged"
            );
            assert_eq!(E::count(&repo, partition).await, expected.len() as u64);
        }
        for record in &written {
            assert_eq!(
                record.get_again(&repo).await.as_ref(),
                Some(record),
                "{language:?}: get finds the item on its shard"
            );
        }
    }
}

/// (b) The repository writes (and counts likes, where the entity has the counter); each
/// service reads every partition back, merged, and totals the counters.
async fn rust_writes_what_services_read<E: Board>(
    name: &str,
    seed: u64,
    likes: impl Fn(&Repo<E>, &E) -> Option<sharded::ShardedCounter>,
) {
    declared_as_in_the_vectors::<E>();
    let repo = repo::<E>(&format!("{name}-rust-writes").to_lowercase()).await;
    plant_foreign_record(&repo).await;
    let written = records::<E>(seed, 50);
    for record in &written {
        repo.put(record).await.expect("a put");
    }
    let mut liked = HashMap::new();
    for (i, record) in written.iter().enumerate().take(6) {
        let Some(counter) = likes(&repo, record) else {
            break;
        };
        for _ in 0..=i {
            counter
                .increment_at_least_once(1)
                .await
                .expect("an increment");
        }
        liked.insert(record.player_id().to_owned(), (i + 1).to_string());
    }
    let counter = (!liked.is_empty()).then_some("likes");
    for language in [Language::TypeScript, Language::Python] {
        for partition in PARTITIONS {
            let Some(service) = language.service().await else {
                return;
            };
            let read = service_reads(service, &repo, partition, counter).await;
            let (records, counters): (Vec<E>, Vec<Value>) = read.into_iter().unzip();
            assert_eq!(
                records,
                best_first(&written, partition),
                "{language:?}: every record of {partition}, merged best first"
            );
            for (record, counters) in records.iter().zip(&counters) {
                if let Some(counter) = counter {
                    let want = liked.get(record.player_id()).map_or("0", String::as_str);
                    assert_eq!(
                        counters[counter],
                        want,
                        "{language:?}: likes of {}",
                        record.player_id()
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn services_write_a_tagged_leaderboard_rust_reads() {
    services_write_what_rust_reads::<Score>("interop-score", 7).await;
}

#[tokio::test]
async fn rust_writes_a_tagged_leaderboard_services_read_with_counters() {
    rust_writes_what_services_read::<Score>("interop-score", 11, |repo, s| {
        Some(Score::likes_counter(repo, &s.game_id, &s.player_id, s.score).expect("a counter"))
    })
    .await;
}

#[tokio::test]
async fn services_write_an_untagged_pk_sk_table_rust_reads() {
    services_write_what_rust_reads::<ActivePlayer>("interop-keyed", 17).await;
}

#[tokio::test]
async fn rust_writes_an_untagged_pk_sk_table_services_read() {
    rust_writes_what_services_read::<ActivePlayer>("interop-keyed", 23, |_, _| None).await;
}
