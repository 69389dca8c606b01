//! One table shared with a TypeScript service and a Python service, both ways, on DynamoDB
//! Local: (a) `interop/typescript/src/writer.ts` (AWS SDK v3, keys from `sharded-keys.ts`)
//! writes a leaderboard that `Score::query` and `Score::get` read; (b) the repository writes
//! one that `interop/python/reader.py` (boto3, keys from `sharded_keys.py`, its own
//! scatter-gather and merge) reads, with each score's counter.
//!
//! Both need what `interop/run` installs and builds. Without it a test says why it did not
//! run, and fails when `SHARDED_REQUIRE_INTEROP=1` (as CI sets): it never passes silently.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::Output;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sharded::ShardedEntity;
use sharded_testkit::local::{ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
use tokio::process::Command;

use crate::support::{local, repo};

/// The leaderboard both services declare by hand in their spec (`SCORE` in writer.ts and
/// reader.py).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[counter(name = "likes", n = 4)]
pub struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: DateTime<Utc>,
}

const GAMES: [&str; 2] = ["g1", "g 2#"];

fn interop(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(path)
}

/// Whether a missing tool fails the test (CI) or only skips it, saying why.
fn skip(why: &str) {
    let message = format!("the interop test did not run: {why}; run `interop/run` to install it");
    if std::env::var("SHARDED_REQUIRE_INTEROP").is_ok_and(|v| v == "1") {
        panic!("{message} (SHARDED_REQUIRE_INTEROP=1)");
    }
    // Straight to the process's stderr: libtest hides what a passing test prints with
    // `eprintln!`, and a skip must be seen.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
}

/// `program args..` with the credentials and region of every DynamoDB Local client here.
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

/// Runs `command`, or says why it could not start.
async fn run(mut command: Command) -> Result<Output, String> {
    command.output().await.map_err(|e| {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        format!("`{program}` could not start: {e}")
    })
}

/// The Node writer, when Node, the AWS SDK and the compiled writer are there.
async fn node_writer() -> Option<PathBuf> {
    let writer = interop("typescript/dist/src/writer.js");
    let sdk = interop("typescript/node_modules/@aws-sdk/client-dynamodb");
    let mut version = command("node");
    version.arg("--version");
    match run(version).await {
        Ok(out) if out.status.success() => {}
        Ok(_) | Err(_) => {
            skip("`node` is not on PATH");
            return None;
        }
    }
    if !sdk.is_dir() || !writer.is_file() {
        skip(&format!(
            "{} or {} is missing",
            sdk.display(),
            writer.display()
        ));
        return None;
    }
    Some(writer)
}

/// The Python of `interop/python/.venv`, when it has boto3.
async fn python_with_boto3() -> Option<PathBuf> {
    let python = interop("python/.venv/bin/python");
    let mut import = command(&python);
    import.args(["-c", "import boto3"]);
    match run(import).await {
        Ok(out) if out.status.success() => Some(python),
        Ok(out) => {
            skip(&format!(
                "{} cannot import boto3: {}",
                python.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            None
        }
        Err(e) => {
            skip(&e);
            None
        }
    }
}

/// The records a service printed, one JSON object a line (`score` as decimal text, `at` as
/// serde writes a timestamp), and each line's other values (the counter).
fn printed(out: &Output, what: &str) -> Vec<(Score, Value)> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {stderr}");
    String::from_utf8(out.stdout.clone())
        .expect("UTF-8 output")
        .lines()
        .map(|line| {
            let v: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: `{line}`: {e}"));
            let text = |k: &str| {
                v[k].as_str()
                    .unwrap_or_else(|| panic!("{what}: no {k} in {line}"))
            };
            let score = Score {
                game_id: text("game_id").to_owned(),
                player_id: text("player_id").to_owned(),
                score: text("score").parse().expect("a u64 score"),
                at: DateTime::parse_from_rfc3339(text("at"))
                    .expect("an RFC 3339 time")
                    .with_timezone(&Utc),
            };
            (score, v)
        })
        .collect()
}

/// The scores of `game`, best first: by score, then player id bytes, as the sort key orders
/// them.
fn best_first<'a>(scores: impl IntoIterator<Item = &'a Score>, game: &str) -> Vec<Score> {
    let mut of_game: Vec<Score> = scores
        .into_iter()
        .filter(|s| s.game_id == game)
        .cloned()
        .collect();
    of_game
        .sort_by(|a, b| (b.score, b.player_id.as_bytes()).cmp(&(a.score, a.player_id.as_bytes())));
    of_game
}

#[tokio::test]
async fn a_typescript_service_writes_what_rust_reads() {
    let Some(writer) = node_writer().await else {
        return;
    };
    let repo = repo::<Score>("interop-ts").await;
    let mut node = command("node");
    node.arg(&writer).args([
        "--endpoint",
        local().await.endpoint(),
        "--table",
        repo.table(),
        "--count",
        "60",
        "--seed",
        "7",
    ]);
    let out = run(node).await.expect("node starts");
    let written: Vec<Score> = printed(&out, "writer.js")
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        written.len(),
        60,
        "the writer printed every record it wrote"
    );
    assert!(
        written.iter().any(|s| s.score > 1 << 53),
        "scores beyond JavaScript's exact numbers are part of the test"
    );
    for game in GAMES {
        let expected = best_first(&written, game);
        assert!(!expected.is_empty(), "the writer wrote to {game}");
        let top = Score::query(&repo, game)
            .descending()
            .limit(10)
            .collect()
            .await
            .unwrap();
        assert_eq!(top, expected[..expected.len().min(10)], "top 10 of {game}");
        let all = Score::query(&repo, game)
            .descending()
            .collect()
            .await
            .unwrap();
        assert_eq!(
            all, expected,
            "every score of {game}, merged over 10 shards"
        );
        let count = Score::query(&repo, game).count().await.unwrap();
        assert_eq!(count, expected.len() as u64);
    }
    for s in &written {
        let got = Score::get(&repo, &s.game_id, &s.player_id, s.score)
            .await
            .unwrap();
        assert_eq!(got.as_ref(), Some(s), "get finds the item on its shard");
    }
}

#[tokio::test]
async fn rust_writes_what_a_python_service_reads() {
    let Some(python) = python_with_boto3().await else {
        return;
    };
    let repo = repo::<Score>("interop-py").await;
    let mut rng = fastrand::Rng::with_seed(11);
    let players = ["p1", "p#1", "über", "a b", "$", "日本", "🎮"];
    let scores: Vec<Score> = (0..50)
        .map(|i| Score {
            game_id: GAMES[i % 2].to_owned(),
            player_id: format!("{}-{i}", players[rng.usize(..players.len())]),
            score: if rng.bool() {
                rng.u64(..)
            } else {
                rng.u64(0..100)
            },
            at: DateTime::from_timestamp(1_782_090_000 + i as i64, rng.u32(0..1_000_000_000))
                .unwrap(),
        })
        .collect();
    for s in &scores {
        repo.put(s).await.unwrap();
    }
    // Some scores have likes, counted on the counter's shards.
    let mut likes = HashMap::new();
    for (i, s) in scores.iter().enumerate().take(6) {
        let counter = Score::likes_counter(&repo, &s.game_id, &s.player_id, s.score).unwrap();
        for _ in 0..=i {
            counter.increment_at_least_once(1).await.unwrap();
        }
        likes.insert(s.player_id.clone(), i as i64 + 1);
    }
    let mut reader = command(&python);
    reader.current_dir(interop("python")).args([
        "reader.py",
        "--endpoint",
        local().await.endpoint(),
        "--table",
        repo.table(),
        "--game",
        GAMES[0],
        "--game",
        GAMES[1],
    ]);
    let out = run(reader).await.expect("python starts");
    let read = printed(&out, "reader.py");
    let expected: Vec<Score> = GAMES
        .iter()
        .flat_map(|game| best_first(&scores, game))
        .collect();
    let (read_scores, lines): (Vec<Score>, Vec<Value>) = read.into_iter().unzip();
    assert_eq!(
        read_scores, expected,
        "every score, per game, merged best first"
    );
    for (s, line) in expected.iter().zip(&lines) {
        let want = likes.get(&s.player_id).copied().unwrap_or(0);
        assert_eq!(line["likes"], want, "likes of {}", s.player_id);
    }
}
