//! `examples/ops.rs`, an ops command line built on `sharded_cli`, run as a process against
//! DynamoDB Local: output and exit codes of each subcommand, bad input included.

use std::path::PathBuf;
use std::process::Command;

use serde::{Deserialize, Serialize};
use sharded::aws_sdk_dynamodb::types::AttributeValue;
use sharded::migrate::Migrate;
use sharded::{Repo, ShardedEntity};
use sharded_testkit::faults::{Faults, InjectedError};
use sharded_testkit::local::{unique_table_name, ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
use sharded_testkit::proxy::FaultProxy;

use crate::support::{client, local};

mod fleet;

/// The example's `Score` before its 10 -> 20 transition: what the table held.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
#[sharded(entity = "Score")]
struct ScoreOn10 {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The example's `Score` as it declares itself.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
#[sharded(entity = "Score")]
struct ScoreOn20 {
    game_id: String,
    player_id: String,
    score: u64,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The example's binary, built once per test process: `cargo build --example ops` is cheap
/// when it is fresh and rebuilds it when it is not, so a stale binary is never tested.
fn binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test binary's path");
            let debug = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/<profile>/deps");
            let built = Command::new(env!("CARGO"))
                .args(["build", "--example", "ops"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("cargo build --example ops");
            assert!(built.success(), "building the ops example failed");
            debug
                .join("examples")
                .join(format!("ops{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

async fn ops(args: &[&str]) -> Run {
    ops_at(local().await.endpoint(), args)
}

/// `ops args` with `endpoint` as its DynamoDB, through the standard AWS configuration chain
/// (the environment), as an operator's shell gives it.
fn ops_at(endpoint: &str, args: &[&str]) -> Run {
    let out = Command::new(binary())
        .args(args)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", REGION)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
        .env("DYNAMODB_ENDPOINT", endpoint)
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run the ops example");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", run.stdout, run.stderr))
}

/// A path for a checkpoint file `name` in a fresh directory of its own (`prefix`, made unique).
fn checkpoint_file(prefix: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(unique_table_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[tokio::test]
async fn plan_and_describe_print_what_the_readme_shows() {
    let plan = ops(&["plan", "--peak-writes", "7000", "--item-bytes", "1024"]).await;
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(
        plan.stdout.contains("n = ceil(7,000 / 700) = 10"),
        "{}",
        plan.stdout
    );
    let plan = ops(&[
        "plan",
        "--peak-writes",
        "7000",
        "--item-bytes",
        "1024",
        "--output",
        "json",
    ])
    .await;
    assert_eq!(json(&plan)["base"]["n"], 10);

    let bad = ops(&["plan", "--peak-writes=-5", "--item-bytes", "1024"]).await;
    assert_eq!(bad.code, 2, "a negative rate is bad input");
    assert!(bad.stderr.contains("peak_writes_per_sec"), "{}", bad.stderr);

    let describe = ops(&["describe", "--table", "leaderboard", "--output", "json"]).await;
    assert_eq!(describe.code, 0, "{}", describe.stderr);
    let d = json(&describe);
    assert_eq!(d["entities"][0]["entity"], "Score");
    assert_eq!(d["entities"][0]["pk"]["shards"], 20);
    assert!(d["entities"][0]["transition"]
        .as_str()
        .unwrap()
        .contains("from 10 to 20"));
    assert_eq!(d["entities"][1]["entity"], "PersonalBest");
    assert_eq!(d["create_table"]["TableName"], "leaderboard");
    assert_eq!(
        d["create_table"]["GlobalSecondaryIndexes"][0]["IndexName"],
        "gsi1"
    );
    let text = ops(&["describe", "--entity", "PersonalBest"]).await;
    assert!(
        text.stdout.contains("sort key       sk = BEST#{player_id}"),
        "{}",
        text.stdout
    );
}

#[tokio::test]
async fn report_reads_a_recording_and_redacts_on_request() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hot_keys_recording.json"
    );
    let report = ops(&["report", "--recording", fixture, "--output", "json"]).await;
    assert_eq!(report.code, 0, "{}", report.stderr);
    let r = json(&report);
    assert_eq!(r["logical_keys"].as_array().unwrap().len(), 6);
    assert_eq!(r["logical_keys"][0]["pattern"], "transient_burst");

    let redacted = ops(&["report", "--recording", fixture, "--redact", "salt"]).await;
    assert_eq!(redacted.code, 0);
    assert!(!redacted.stdout.contains("GAME#g1"), "{}", redacted.stdout);
    assert!(
        redacted.stdout.contains("hot logical keys"),
        "{}",
        redacted.stdout
    );

    let missing = ops(&["report", "--recording", "/no/such/file.json"]).await;
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("cannot read /no/such/file.json"),
        "{}",
        missing.stderr
    );
}

#[tokio::test]
async fn migrate_moves_every_item_and_remaining_says_when_it_is_done() {
    let table = unique_table_name("ops");
    let before: Repo<ScoreOn10> = Repo::new(client().await, table.clone());
    before.create_table().await.unwrap();
    let scores: Vec<ScoreOn10> = (0..120)
        .map(|i| ScoreOn10 {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            score: i * 7,
        })
        .collect();
    before.batch_put(&scores).await.unwrap();
    let after: Repo<ScoreOn20> = Repo::new(client().await, table.clone());
    let left = after.migration_remaining().await.unwrap().items;
    assert!(left > 0, "some items hash to the 10 new shards");

    let remaining = ops(&[
        "remaining",
        "--entity",
        "Score",
        "--table",
        &table,
        "--output",
        "json",
    ])
    .await;
    assert_eq!(remaining.code, 3, "work remains: {}", remaining.stderr);
    assert_eq!(json(&remaining)["remaining"], left);

    // A corrupt checkpoint is refused before anything moves.
    let checkpoint = checkpoint_file("ops-checkpoint", "migrate.checkpoint");
    std::fs::write(&checkpoint, "not a checkpoint").unwrap();
    let checkpoint_arg = checkpoint.to_str().unwrap();
    let corrupt = ops(&[
        "migrate",
        "--entity",
        "Score",
        "--table",
        &table,
        "--checkpoint",
        checkpoint_arg,
        "--resume",
    ])
    .await;
    assert_eq!(corrupt.code, 2, "{}", corrupt.stderr);
    assert!(
        corrupt.stderr.contains("not a migration checkpoint"),
        "{}",
        corrupt.stderr
    );
    assert_eq!(
        after.migration_remaining().await.unwrap(),
        left,
        "nothing changed"
    );

    let migrate = ops(&[
        "migrate",
        "--entity",
        "Score",
        "--table",
        &table,
        "--checkpoint",
        checkpoint_arg,
        "--quiet",
        "--output",
        "json",
    ])
    .await;
    assert_eq!(migrate.code, 0, "{}\n{}", migrate.stdout, migrate.stderr);
    let m = json(&migrate);
    assert_eq!(m["moved"], left);
    assert_eq!(m["complete"], true);
    let saved = std::fs::read_to_string(&checkpoint).unwrap();
    assert!(
        sharded::migrate::Checkpoint::from_token(&saved)
            .unwrap()
            .is_complete(),
        "the checkpoint file holds the finished position"
    );

    let done = ops(&["remaining", "--entity", "Score", "--table", &table]).await;
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert!(done.stdout.starts_with("0 items"), "{}", done.stdout);
    let all = ScoreOn20::query(&after, "g1").collect().await.unwrap();
    assert_eq!(all.len(), 120, "every score is still read exactly once");
    let _ = std::fs::remove_dir_all(checkpoint.parent().unwrap());
}

/// 30 scores on the 10-shard layout in a fresh table; their repository under the 20-shard
/// layout, and how many of them are to move.
async fn scores_on_ten(prefix: &str) -> (Repo<ScoreOn20>, Vec<ScoreOn10>, u64) {
    let table = unique_table_name(prefix);
    let before: Repo<ScoreOn10> = Repo::new(client().await, table.clone());
    before.create_table().await.unwrap();
    let scores: Vec<ScoreOn10> = (0..30)
        .map(|i| ScoreOn10 {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            score: i * 7,
        })
        .collect();
    before.batch_put(&scores).await.unwrap();
    let after: Repo<ScoreOn20> = Repo::new(client().await, table);
    let left = after.migration_remaining().await.unwrap().items;
    assert!(left > 1, "some items hash to the 10 new shards");
    (after, scores, left)
}

/// A migration that cannot move an item exits 3 saying it is not complete, and its checkpoint
/// stops before the item: `--resume` reads its page again and moves it (issue 30, item 6: the
/// first run said `"complete": true` and `--resume` read nothing, exit 0, with the item left).
#[tokio::test]
async fn a_migration_that_left_an_item_resumes_at_that_item() {
    let (after, scores, left) = scores_on_ten("ops-failed").await;
    let table = after.table().to_owned();
    // Another service's item at the current place of one score that is to move: the move
    // never overwrites it, so that score cannot move while it is there.
    let blocked = scores
        .iter()
        .find_map(|s| {
            let old = s.item_keys().unwrap();
            let new = ScoreOn20 {
                game_id: s.game_id.clone(),
                player_id: s.player_id.clone(),
                score: s.score,
            }
            .item_keys()
            .unwrap();
            (old.pk != new.pk).then_some(new)
        })
        .expect("a score to move");
    let key = |k: &sharded::keys::ItemKeys| {
        std::collections::HashMap::from([
            ("pk".to_owned(), AttributeValue::S(k.pk.clone())),
            ("sk".to_owned(), AttributeValue::S(k.sk.clone().unwrap())),
        ])
    };
    let mut squatter = key(&blocked);
    squatter.insert(
        sharded::schema::ENTITY_ATTRIBUTE.to_owned(),
        AttributeValue::S("SomeoneElse".into()),
    );
    after
        .client()
        .put_item()
        .table_name(&table)
        .set_item(Some(squatter))
        .send()
        .await
        .unwrap();

    let checkpoint = checkpoint_file("ops-failed-checkpoint", "migrate.checkpoint");
    let checkpoint_arg = checkpoint.to_str().unwrap();
    let migrate = |resume: bool| {
        let table = table.clone();
        async move {
            let mut args = vec![
                "migrate",
                "--entity",
                "Score",
                "--table",
                &table,
                "--checkpoint",
                checkpoint_arg,
                "--output",
                "json",
            ];
            if resume {
                args.push("--resume");
            }
            ops(&args).await
        }
    };
    let first = migrate(false).await;
    assert_eq!(first.code, 3, "{}\n{}", first.stdout, first.stderr);
    let m = json(&first);
    assert_eq!(m["failed"], 1, "{m:#}");
    assert_eq!(m["moved"], left - 1, "{m:#}");
    assert_eq!(m["complete"], false, "an item was left: {m:#}");
    let saved = std::fs::read_to_string(&checkpoint).expect("a checkpoint file");
    assert!(!sharded::migrate::Checkpoint::from_token(&saved)
        .unwrap()
        .is_complete());
    let remaining = ops(&["remaining", "--entity", "Score", "--table", &table]).await;
    assert_eq!(remaining.code, 3, "{}", remaining.stderr);

    // Resumed while the item is still blocked: it is tried again, and still left.
    let again = migrate(true).await;
    assert_eq!(again.code, 3, "{}\n{}", again.stdout, again.stderr);
    assert_eq!(json(&again)["failed"], 1);
    assert_eq!(json(&again)["complete"], false);

    // The other service's item removed, the resumed run moves the score.
    after
        .client()
        .delete_item()
        .table_name(&table)
        .set_key(Some(key(&blocked)))
        .send()
        .await
        .unwrap();
    let resumed = migrate(true).await;
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let m = json(&resumed);
    assert_eq!(m["moved"], 1, "{m:#}");
    assert_eq!(m["complete"], true, "{m:#}");
    let done = ops(&["remaining", "--entity", "Score", "--table", &table]).await;
    assert_eq!(done.code, 0, "{}", done.stdout);
    let all = ScoreOn20::query(&after, "g1").collect().await.unwrap();
    assert_eq!(all.len(), scores.len());
    let _ = std::fs::remove_dir_all(checkpoint.parent().unwrap());
}

/// Settings the migration cannot run and a checkpoint of another entity's migration are
/// refused before any request, exit 2 as bad input, naming the flag and what to do (issue
/// 30, item 7: they exited 1, as if the work had failed).
#[tokio::test]
async fn settings_and_checkpoints_the_migration_refuses_exit_2() {
    let (after, _, left) = scores_on_ten("ops-refused").await;
    let table = after.table().to_owned();
    let base = ["migrate", "--entity", "Score", "--table", &table, "--quiet"];
    for (flag, given, says) in [
        (
            "--write-units-per-second=0",
            "--write-units-per-second 0",
            "write_units_per_second(0)",
        ),
        ("--segments=0", "--segments 0", "segments(0)"),
        (
            "--read-units-per-second=-1",
            "--read-units-per-second -1",
            "read_units_per_second(-1)",
        ),
    ] {
        let args: Vec<&str> = base.iter().copied().chain([flag]).collect();
        let run = ops(&args).await;
        assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
        for part in [says, given, "nothing was changed", "leave its flag out"] {
            assert!(
                run.stderr.contains(part),
                "{flag} lacks {part}: {}",
                run.stderr
            );
        }
    }

    // A checkpoint of the other entity's migration of this table.
    let checkpoint = checkpoint_file("ops-refused-checkpoint", "personal-best.checkpoint");
    let checkpoint_arg = checkpoint.to_str().unwrap();
    let theirs = ops(&[
        "migrate",
        "--entity",
        "PersonalBest",
        "--table",
        &table,
        "--checkpoint",
        checkpoint_arg,
        "--quiet",
    ])
    .await;
    assert_eq!(theirs.code, 0, "{}", theirs.stderr);
    let foreign = ops(&[
        "migrate",
        "--entity",
        "Score",
        "--table",
        &table,
        "--checkpoint",
        checkpoint_arg,
        "--resume",
        "--quiet",
    ])
    .await;
    assert_eq!(foreign.code, 2, "{}", foreign.stderr);
    for part in [
        "entity `PersonalBest`, not `Score`",
        "nothing was changed",
        "leave out --resume",
    ] {
        assert!(
            foreign.stderr.contains(part),
            "lacks {part}: {}",
            foreign.stderr
        );
    }
    assert_eq!(
        after.migration_remaining().await.unwrap(),
        left,
        "nothing moved"
    );
    let _ = std::fs::remove_dir_all(checkpoint.parent().unwrap());
}

#[tokio::test]
async fn bad_input_is_a_clear_error_and_changes_nothing() {
    let unknown = ops(&["remaining", "--entity", "Nope", "--table", "t"]).await;
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("unknown entity `Nope`"),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("Score, PersonalBest"),
        "{}",
        unknown.stderr
    );

    let unreachable = ops(&[
        "remaining",
        "--entity",
        "Score",
        "--table",
        "t",
        "--endpoint-url",
        "http://127.0.0.1:9",
    ])
    .await;
    assert_eq!(unreachable.code, 1, "{}", unreachable.stderr);
    assert!(
        unreachable.stderr.contains("table `t`"),
        "{}",
        unreachable.stderr
    );

    let usage = ops(&["migrate", "--entity", "Score"]).await;
    assert_eq!(usage.code, 2, "a missing --table is a usage error");
    assert!(usage.stderr.contains("--table"), "{}", usage.stderr);

    let local = ops(&["local", "--check", "--output", "json"]).await;
    assert_eq!(local.code, 0, "{}", local.stderr);
    assert_eq!(
        json(&local)["endpoint"],
        crate::support::local().await.endpoint()
    );
}

/// `report --live` reads the table's own Contributor Insights rule from DynamoDB and
/// CloudWatch; DynamoDB Local implements neither, and says so (what each answer of the
/// service leads to is tested in `sharded-cli`'s unit tests).
#[tokio::test]
async fn a_live_report_says_what_it_needs_and_refuses_bad_arguments() {
    let table = unique_table_name("ops-live");
    let repo: Repo<ScoreOn20> = Repo::new(client().await, table.clone());
    repo.create_table().await.unwrap();
    let live = ops(&["report", "--live", "15", "--table", &table]).await;
    assert_eq!(live.code, 1, "{}", live.stderr);
    assert!(
        live.stderr
            .contains("does not implement Contributor Insights")
            && live.stderr.contains("--recording"),
        "{}",
        live.stderr
    );

    let no_table = ops(&["report", "--live", "15"]).await;
    assert_eq!(
        no_table.code, 2,
        "--live needs --table: {}",
        no_table.stderr
    );
    assert!(no_table.stderr.contains("--table"), "{}", no_table.stderr);

    let two = ops(&[
        "report",
        "--live",
        "15",
        "--table",
        &table,
        "--recording",
        "r.json",
    ])
    .await;
    assert_eq!(two.code, 2, "one source at a time: {}", two.stderr);
}

/// `ops migrate --output json` through `endpoint`, with a checkpoint file, resumed or not.
fn migrate_at(endpoint: &str, table: &str, checkpoint: &std::path::Path, resume: bool) -> Run {
    let checkpoint = checkpoint.to_str().unwrap();
    let mut args = vec![
        "migrate",
        "--entity",
        "Score",
        "--table",
        table,
        "--checkpoint",
        checkpoint,
        "--output",
        "json",
    ];
    if resume {
        args.push("--resume");
    }
    ops_at(endpoint, &args)
}

/// `ops remaining --output json` through `endpoint`: its exit code and count.
fn remaining_at(endpoint: &str, table: &str) -> (i32, serde_json::Value) {
    let run = ops_at(
        endpoint,
        &[
            "remaining",
            "--entity",
            "Score",
            "--table",
            table,
            "--output",
            "json",
        ],
    );
    (run.code, json(&run)["remaining"].clone())
}

/// Whether the checkpoint file says the migration finished.
fn checkpoint_complete(path: &std::path::Path) -> bool {
    let saved = std::fs::read_to_string(path).expect("a checkpoint file");
    sharded::migrate::Checkpoint::from_token(&saved)
        .expect("a checkpoint")
        .is_complete()
}

/// The shard partition keys the scores move to, each with how many scores move there.
fn new_places(scores: &[ScoreOn10]) -> std::collections::BTreeMap<String, u64> {
    let mut places = std::collections::BTreeMap::new();
    for s in scores {
        let old = s.item_keys().unwrap().pk;
        let new = ScoreOn20 {
            game_id: s.game_id.clone(),
            player_id: s.player_id.clone(),
            score: s.score,
        }
        .item_keys()
        .unwrap()
        .pk;
        if old != new {
            *places.entry(new).or_insert(0) += 1;
        }
    }
    places
}

/// A move refused by DynamoDB (the new shard failing with HTTP 500 after the SDK's retries),
/// seen by `ops` as a process through the fault proxy: exit 3, `"complete": false`, the
/// items named, a checkpoint before them and `remaining` exit 3 with their count; once the
/// fault has passed, `--resume` moves exactly them, exit 0, and `remaining` says 0.
#[tokio::test]
async fn a_move_failing_at_dynamodb_exits_3_and_resumes_to_0_once_it_passes() {
    let (after, scores, left) = scores_on_ten("ops-fault").await;
    let table = after.table().to_owned();
    let (failing_pk, stuck) = new_places(&scores)
        .into_iter()
        .next()
        .expect("a shard scores move to");
    let faults = Faults::new();
    let proxy = FaultProxy::start(local().await.endpoint(), &faults).unwrap();
    faults.fail_partition(failing_pk.clone());
    let checkpoint = checkpoint_file("ops-fault-checkpoint", "migrate.checkpoint");

    let first = migrate_at(proxy.endpoint(), &table, &checkpoint, false);
    assert_eq!(first.code, 3, "{}\n{}", first.stdout, first.stderr);
    let m = json(&first);
    assert_eq!(m["failed"], stuck, "{m:#}");
    assert_eq!(m["moved"], left - stuck, "{m:#}");
    assert_eq!(m["complete"], false, "{m:#}");
    let failures = m["failures"].as_array().unwrap();
    assert_eq!(failures.len() as u64, stuck, "{m:#}");
    // The scores whose new shard fails, by their sort keys.
    let stuck_keys: Vec<String> = scores
        .iter()
        .filter_map(|s| {
            let new = ScoreOn20 {
                game_id: s.game_id.clone(),
                player_id: s.player_id.clone(),
                score: s.score,
            }
            .item_keys()
            .unwrap();
            (new.pk == failing_pk).then(|| new.sk.unwrap())
        })
        .collect();
    for failure in failures {
        let key = failure["key"].as_str().unwrap();
        assert!(
            stuck_keys.iter().any(|sk| key.contains(sk.as_str())),
            "{key} is not one of the scores whose shard fails: {m:#}"
        );
        let reason = failure["reason"].as_str().unwrap();
        assert!(
            reason.contains("InternalServerError") && reason.contains("run the migration again"),
            "the reason says what DynamoDB answered and what to do: {m:#}"
        );
    }
    assert!(
        faults.injected("TransactWriteItems") > 0,
        "the process's moves went through the proxy"
    );
    assert!(!checkpoint_complete(&checkpoint));
    assert_eq!(
        remaining_at(proxy.endpoint(), &table),
        (3, stuck.into()),
        "work remains"
    );

    faults.clear();
    let resumed = migrate_at(proxy.endpoint(), &table, &checkpoint, true);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let m = json(&resumed);
    assert_eq!(m["moved"], stuck, "{m:#}");
    assert_eq!(m["failed"], 0, "{m:#}");
    assert_eq!(m["complete"], true, "{m:#}");
    assert!(checkpoint_complete(&checkpoint));
    assert_eq!(remaining_at(proxy.endpoint(), &table), (0, 0.into()));
    let all = ScoreOn20::query(&after, "g1").collect().await.unwrap();
    assert_eq!(all.len(), scores.len(), "every score read once");
    let _ = std::fs::remove_dir_all(checkpoint.parent().unwrap());
}

/// A scan failing for good (every `Scan` answered HTTP 500, past the SDK's retries): `ops
/// migrate` stops, exit 3, saying what stopped it, having moved nothing and left a
/// checkpoint; `remaining` cannot count and exits 1; once the reads work, `--resume`
/// finishes, exit 0, and `remaining` says 0.
#[tokio::test]
async fn a_read_failing_for_good_stops_the_migration_with_a_checkpoint_to_resume() {
    let (after, scores, left) = scores_on_ten("ops-scan").await;
    let table = after.table().to_owned();
    let faults = Faults::new();
    let proxy = FaultProxy::start(local().await.endpoint(), &faults).unwrap();
    faults.fail_next("Scan", InjectedError::InternalServerError, 1_000);
    let checkpoint = checkpoint_file("ops-scan-checkpoint", "migrate.checkpoint");

    let stopped = migrate_at(proxy.endpoint(), &table, &checkpoint, false);
    assert_eq!(stopped.code, 3, "{}\n{}", stopped.stdout, stopped.stderr);
    assert!(
        stopped.stderr.contains("stopped:") && stopped.stderr.contains("InternalServerError"),
        "{}",
        stopped.stderr
    );
    let m = json(&stopped);
    assert_eq!(m["moved"], 0, "{m:#}");
    assert_eq!(m["complete"], false, "{m:#}");
    assert!(faults.injected("Scan") > 1, "the SDK retried the scan");
    assert!(!checkpoint_complete(&checkpoint));
    assert_eq!(after.migration_remaining().await.unwrap(), left);

    let blind = ops_at(
        proxy.endpoint(),
        &["remaining", "--entity", "Score", "--table", &table],
    );
    assert_eq!(blind.code, 1, "{}\n{}", blind.stdout, blind.stderr);
    assert!(blind.stderr.contains(&table), "{}", blind.stderr);

    faults.clear();
    let resumed = migrate_at(proxy.endpoint(), &table, &checkpoint, true);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    let m = json(&resumed);
    assert_eq!(m["moved"], left, "{m:#}");
    assert_eq!(m["complete"], true, "{m:#}");
    assert_eq!(remaining_at(proxy.endpoint(), &table), (0, 0.into()));
    let all = ScoreOn20::query(&after, "g1").collect().await.unwrap();
    assert_eq!(all.len(), scores.len());
    let _ = std::fs::remove_dir_all(checkpoint.parent().unwrap());
}

/// Moves whose answers are lost after DynamoDB applied them (the SDK sees the connection
/// close and sends the move again): `ops migrate` still exits 0 with every item moved, none
/// lost and none twice, as the raw table shows.
#[tokio::test]
async fn lost_answers_neither_lose_nor_duplicate_an_item() {
    let (after, scores, _) = scores_on_ten("ops-lost").await;
    let table = after.table().to_owned();
    let faults = Faults::new();
    let proxy = FaultProxy::start(local().await.endpoint(), &faults).unwrap();
    faults.drop_responses("TransactWriteItems", 3);
    faults.drop_responses("Scan", 1);
    let checkpoint = checkpoint_file("ops-lost-checkpoint", "migrate.checkpoint");

    let run = migrate_at(proxy.endpoint(), &table, &checkpoint, false);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let m = json(&run);
    assert_eq!(m["complete"], true, "{m:#}");
    assert_eq!(m["failed"], 0, "{m:#}");
    assert_eq!(
        faults.injected("TransactWriteItems"),
        3,
        "three answers lost"
    );
    assert_eq!(faults.injected("Scan"), 1, "a scan's answer lost");
    assert_eq!(remaining_at(proxy.endpoint(), &table), (0, 0.into()));

    // The raw table: each score exactly once, at its place on the 20-shard layout.
    assert_each_score_once_at_its_current_place(&after, &scores).await;
    let _ = std::fs::remove_dir_all(checkpoint.parent().unwrap());
}

/// The example's `Play`: one partition per game until one is widened (`layouts change`).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(
    template = "PLAYS#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 64
)]
#[sk(template = "PLAY#{player_id}#{at}")]
#[sharded(entity = "Play")]
struct Play {
    game_id: String,
    player_id: String,
    at: u64,
}

/// The partitions of game `game`'s items as stored.
async fn play_partitions(repo: &Repo<Play>, game: &str) -> std::collections::BTreeSet<String> {
    crate::support::raw_scan(repo.client(), repo.table())
        .await
        .into_iter()
        .filter_map(|item| match item.get("pk") {
            Some(AttributeValue::S(pk)) if pk.starts_with(&format!("PLAYS#{game}#")) => {
                Some(pk.clone())
            }
            _ => None,
        })
        .collect()
}

/// `ops layouts <step> --entity Play --table <table> <more>` with a short lease, so that a
/// change takes a second.
async fn layouts(step: &str, table: &str, more: &[&str]) -> Run {
    let mut args = vec![
        "layouts",
        step,
        "--entity",
        "Play",
        "--table",
        table,
        "--lease-ms",
        "150",
        "--margin-ms",
        "100",
    ];
    args.extend_from_slice(more);
    ops(&args).await
}

#[tokio::test]
async fn layouts_change_widens_one_key_and_narrows_it_back_step_by_step() {
    let table = unique_table_name("ops_layouts");
    let repo: Repo<Play> = Repo::new(client().await, table.clone());
    repo.create_table().await.unwrap();
    for p in 0..60 {
        for game in ["viral", "quiet"] {
            let play = Play {
                game_id: game.into(),
                player_id: format!("p{p}"),
                at: p,
            };
            repo.put(&play).await.unwrap();
        }
    }
    let shown = layouts("show", &table, &["--output", "json"]).await;
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(json(&shown)["keys"], serde_json::json!([]));
    assert_eq!(json(&shown)["max_n"], 64);

    // Widened online, in one command.
    let key = ["--key", "PLAYS#viral"];
    let changed = layouts(
        "change",
        &table,
        &[&key[..], &["--n", "8", "--output", "json"]].concat(),
    )
    .await;
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    assert_eq!(json(&changed)["read"], 60, "{}", changed.stdout);
    assert!(json(&changed)["moved"].as_u64().unwrap() > 0);
    assert_eq!(json(&changed)["left"], 0);
    let viral = play_partitions(&repo, "viral").await;
    assert!(viral.len() > 1, "the key's items spread: {viral:?}");
    let shard = |pk: &String| pk.rsplit('#').next().and_then(|s| s.parse::<u32>().ok());
    assert!(
        viral.iter().all(|pk| shard(pk).is_some_and(|s| s < 8)),
        "{viral:?}"
    );
    assert_eq!(
        play_partitions(&repo, "quiet").await,
        ["PLAYS#quiet#0".to_owned()].into(),
        "the other key stays at n = 1"
    );
    let shown = layouts("show", &table, &["--output", "json"]).await;
    let entry = &json(&shown)["keys"][0];
    assert_eq!(
        (&entry["key"], &entry["from"], &entry["to"], &entry["phase"]),
        (
            &serde_json::json!("PLAYS#viral"),
            &serde_json::json!(1),
            &serde_json::json!(8),
            &serde_json::json!("steady")
        )
    );
    let text = layouts("show", &table, &[]).await;
    assert!(text.stdout.contains("PLAYS#viral"), "{}", text.stdout);

    // Narrowed back, one step at a time: a step out of order, or too early, changes nothing.
    let out_of_order = layouts("advance", &table, &key).await;
    assert_eq!(out_of_order.code, 2, "{}", out_of_order.stderr);
    assert!(
        out_of_order.stderr.contains("start a change with `begin`")
            && out_of_order
                .stderr
                .contains("`layouts begin --n <N> --entity Play"),
        "{}",
        out_of_order.stderr
    );
    let begun = layouts("begin", &table, &[&key[..], &["--n", "1"]].concat()).await;
    assert_eq!(begun.code, 0, "{}", begun.stderr);
    assert!(
        begun
            .stdout
            .contains("reading, from 8 to 1 shards; next: `layouts advance`"),
        "{}",
        begun.stdout
    );
    let skipped = layouts("migrate", &table, &key).await;
    assert_eq!(skipped.code, 2, "{}", skipped.stderr);
    assert!(
        skipped.stderr.contains("the next step is `advance`"),
        "{}",
        skipped.stderr
    );
    // A process whose services run a one-minute lease must wait.
    let early = ops(&[
        "layouts",
        "advance",
        "--entity",
        "Play",
        "--table",
        &table,
        "--key",
        "PLAYS#viral",
        "--lease-ms",
        "60000",
    ])
    .await;
    assert_eq!(early.code, 4, "too early: {}", early.stderr);
    assert!(early.stderr.contains("run it again in"), "{}", early.stderr);
    // `change` to the same count continues the change begun.
    let resumed = layouts("change", &table, &[&key[..], &["--n", "1"]].concat()).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let shown = layouts("show", &table, &["--output", "json"]).await;
    assert_eq!(
        json(&shown)["keys"],
        serde_json::json!([]),
        "the entry is removed"
    );
    assert_eq!(
        play_partitions(&repo, "viral").await,
        ["PLAYS#viral#0".to_owned()].into()
    );

    // Refused before any change: a key that is not the template's, an unknown entity, an
    // entity with one layout, a count above max_n.
    let not_a_key = layouts("change", &table, &["--key", "GAME#viral", "--n", "2"]).await;
    assert_eq!(not_a_key.code, 2, "{}", not_a_key.stderr);
    assert!(
        not_a_key.stderr.contains("no logical key of Play"),
        "{}",
        not_a_key.stderr
    );
    let too_many = layouts("begin", &table, &[&key[..], &["--n", "65"]].concat()).await;
    assert_eq!(too_many.code, 2, "{}", too_many.stderr);
    let unknown = ops(&["layouts", "show", "--entity", "Nope", "--table", &table]).await;
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("unknown entity `Nope`"),
        "{}",
        unknown.stderr
    );
    let one_layout = ops(&["layouts", "show", "--entity", "Score", "--table", &table]).await;
    assert_eq!(one_layout.code, 2, "{}", one_layout.stderr);
    assert!(
        one_layout.stderr.contains("declare `max_n`"),
        "{}",
        one_layout.stderr
    );
    let shown = layouts("show", &table, &["--output", "json"]).await;
    assert_eq!(
        json(&shown)["keys"],
        serde_json::json!([]),
        "nothing changed"
    );
}

/// `ops migrate --plan` through the local DynamoDB: its JSON (the plan, printed whatever
/// `--output`) and stderr's summary.
async fn plan_of(table: &str, more: &[&str]) -> Run {
    let mut args = vec![
        "migrate",
        "--entity",
        "Score",
        "--table",
        table,
        "--segments",
        "8",
        "--write-units-per-second",
        "400",
        "--plan",
    ];
    args.extend_from_slice(more);
    ops(&args).await
}

/// `ops remaining --plan-file plan --output json`: its exit code and JSON.
async fn remaining_of_plan(table: &str, plan: &std::path::Path) -> (i32, serde_json::Value) {
    let run = ops(&[
        "remaining",
        "--entity",
        "Score",
        "--table",
        table,
        "--plan-file",
        plan.to_str().unwrap(),
        "--output",
        "json",
    ])
    .await;
    (run.code, json(&run))
}

/// Each score exactly once in the raw table, at its place on the 20-shard layout (the units'
/// records, the migration's own items, aside).
async fn assert_each_score_once_at_its_current_place(
    after: &Repo<ScoreOn20>,
    scores: &[ScoreOn10],
) {
    let mut found: Vec<(String, String)> = crate::support::raw_scan(after.client(), after.table())
        .await
        .iter()
        .map(|item| {
            let s = |name: &str| item[name].as_s().unwrap().clone();
            (s("pk"), s("sk"))
        })
        .filter(|(pk, _)| !pk.starts_with("_sharded#"))
        .collect();
    found.sort();
    let mut expected: Vec<(String, String)> = scores
        .iter()
        .map(|s| {
            let keys = ScoreOn20 {
                game_id: s.game_id.clone(),
                player_id: s.player_id.clone(),
                score: s.score,
            }
            .item_keys()
            .unwrap();
            (keys.pk, keys.sk.unwrap())
        })
        .collect();
    expected.sort();
    assert_eq!(found, expected, "each score once, at its current place");
}

/// Issue 29, items 3 and 4: `migrate --plan` cuts the scan into units an orchestrator maps
/// over (each with its command line, at its share of the budget, with the estimate); the
/// units run in any order, each as its own process (`--unit`, or `--plan-file --unit-index`
/// as a Kubernetes indexed Job runs them), a unit run again reads nothing, and `remaining
/// --plan-file` says from the units' records in the table which are done and whether the
/// declaration can be removed.
#[tokio::test]
async fn a_plan_s_units_run_in_any_order_and_remaining_says_when_the_declaration_can_go() {
    let (after, scores, left) = scores_on_ten("ops-units").await;
    let table = after.table().to_owned();

    let planned = plan_of(&table, &["--units", "4", "--workers", "2"]).await;
    assert_eq!(planned.code, 0, "{}", planned.stderr);
    let plan = json(&planned);
    assert_eq!(plan["table"], table.as_str());
    assert_eq!(plan["entity"], "Score");
    assert_eq!(plan["total_segments"], 8);
    assert_eq!(plan["workers"], 2);
    assert_eq!(plan["write_units_per_second"], 400.0);
    assert_eq!(
        plan["unit_write_units_per_second"], 200.0,
        "the budget over workers"
    );
    assert!(
        plan["estimate"]["items"].as_u64().unwrap() >= scores.len() as u64,
        "DescribeTable counts the scores: {plan:#}"
    );
    assert!(
        plan["estimate"]["seconds"].as_f64().unwrap() > 0.0,
        "{plan:#}"
    );
    assert!(
        planned
            .stderr
            .contains("4 units of 8 segments, at most 2 at once"),
        "{}",
        planned.stderr
    );
    let units = plan["units"].as_array().unwrap();
    assert_eq!(units.len(), 4);
    // Together the units cover segments 0..8 exactly once.
    let mut next = 0;
    for (index, unit) in units.iter().enumerate() {
        assert_eq!(unit["index"], index);
        let id: sharded::migrate::Unit = unit["unit"].as_str().unwrap().parse().unwrap();
        let range = id.segment_range().unwrap();
        assert_eq!(
            (range.start, id.total_segments()),
            (next, Some(8)),
            "{plan:#}"
        );
        next = range.end;
        let args: Vec<&str> = unit["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let id = id.to_string();
        let expected = [
            "migrate",
            "--entity",
            "Score",
            "--table",
            &table,
            "--unit",
            &id,
            "--write-units-per-second",
            "200",
        ];
        assert_eq!(args, expected);
    }
    assert_eq!(next, 8);
    let plan_file = checkpoint_file("ops-units-plan", "plan.json");
    std::fs::write(&plan_file, &planned.stdout).unwrap();

    // Before any unit ran: none started, the declaration stays.
    let (code, before) = remaining_of_plan(&table, &plan_file).await;
    assert_eq!(code, 3, "{before:#}");
    assert_eq!(before["not_started"], 4, "{before:#}");
    assert_eq!(before["done"], 0);
    assert_eq!(before["remaining"], left);
    assert_eq!(before["removable"], false);
    assert_eq!(before["units"][0]["state"], "not_started");

    // The units out of order, each a process of its own: as an orchestrator runs the
    // printed command lines, and one as an indexed Job does, from the plan file.
    let unit_args = |i: usize| -> Vec<String> {
        units[i]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .chain(["--quiet", "--output", "json"].map(str::to_owned))
            .collect()
    };
    let mut moved = 0;
    for i in [2, 0, 3] {
        let args = unit_args(i);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = ops(&args).await;
        assert_eq!(run.code, 0, "unit {i}: {}\n{}", run.stdout, run.stderr);
        let m = json(&run);
        assert_eq!(m["unit"], units[i]["unit"]);
        assert_eq!(m["complete"], true);
        moved += m["moved"].as_u64().unwrap();
    }
    let partway = remaining_of_plan(&table, &plan_file).await;
    assert_eq!(partway.0, 3, "one unit to go: {:#}", partway.1);
    assert_eq!(
        (partway.1["done"].clone(), partway.1["not_started"].clone()),
        (3.into(), 1.into())
    );
    assert_eq!(partway.1["units"][1]["state"], "not_started");
    assert_eq!(partway.1["units"][2]["state"], "done");

    let indexed = ops(&[
        "migrate",
        "--entity",
        "Score",
        "--table",
        &table,
        "--plan-file",
        plan_file.to_str().unwrap(),
        "--unit-index",
        "1",
        "--quiet",
        "--output",
        "json",
    ])
    .await;
    assert_eq!(indexed.code, 0, "{}\n{}", indexed.stdout, indexed.stderr);
    let m = json(&indexed);
    assert_eq!(m["unit"], "2..4/8");
    moved += m["moved"].as_u64().unwrap();
    assert_eq!(
        moved, left,
        "every item to move was moved by exactly one unit"
    );

    // A unit run again after it completed reads nothing and changes nothing.
    let args = unit_args(2);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = ops(&args).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let m = json(&again);
    assert_eq!(
        (m["scanned"].clone(), m["moved"].clone()),
        (0.into(), 0.into())
    );

    let (code, done) = remaining_of_plan(&table, &plan_file).await;
    assert_eq!(code, 0, "every unit done, nothing left: {done:#}");
    assert_eq!(done["done"], 4);
    assert_eq!(done["remaining"], 0);
    assert_eq!(done["removable"], true);
    let total_moved: u64 = done["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["moved"].as_u64().unwrap())
        .sum();
    assert_eq!(total_moved, left, "the records add up to what moved");
    let text = ops(&[
        "remaining",
        "--entity",
        "Score",
        "--table",
        &table,
        "--plan-file",
        plan_file.to_str().unwrap(),
    ])
    .await;
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains("4 units: 4 done"), "{}", text.stdout);
    assert!(text.stdout.contains("can be removed"), "{}", text.stdout);
    // The same answer from the plan's numbers, as a Step Functions' last step asks it.
    let numbers = ops(&[
        "remaining",
        "--entity",
        "Score",
        "--table",
        &table,
        "--segments",
        "8",
        "--units",
        "4",
        "--output",
        "json",
    ])
    .await;
    assert_eq!(numbers.code, 0, "{}", numbers.stderr);
    assert_eq!(json(&numbers)["done"], 4);

    assert_each_score_once_at_its_current_place(&after, &scores).await;
    let all = ScoreOn20::query(&after, "g1").collect().await.unwrap();
    assert_eq!(all.len(), scores.len(), "every score read exactly once");
    let _ = std::fs::remove_dir_all(plan_file.parent().unwrap());
}

/// A unit id that is not one, an index beyond the plan, a plan of another table or entity
/// and a plan that cannot be cut exit 2 saying what to do, having changed nothing.
#[tokio::test]
async fn bad_units_indexes_and_plans_exit_2_saying_what_to_do() {
    let (after, _, left) = scores_on_ten("ops-bad-units").await;
    let table = after.table().to_owned();
    let migrate = |more: &[&str]| {
        let mut args = vec!["migrate", "--entity", "Score", "--table", &table, "--quiet"];
        args.extend_from_slice(more);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ops(&args).await
    };
    for (unit, says) in [
        ("8..4/16", "a non-empty range of segments"),
        ("0..17/16", "within 0..16"),
        (
            "nonsense",
            "`first..end/total`, as `migrate --plan` prints it",
        ),
    ] {
        let bad = run(migrate(&["--unit", unit])).await;
        assert_eq!(bad.code, 2, "{unit}: {}", bad.stderr);
        assert!(bad.stderr.contains(says), "{unit}: {}", bad.stderr);
    }

    for (more, says) in [
        (&["--units", "0"][..], "use 1 to 8 units"),
        (&["--units", "9"][..], "use 1 to 8 units"),
        (
            &["--units", "4", "--workers", "5"][..],
            "use 1 to 4 workers",
        ),
    ] {
        let bad = plan_of(&table, more).await;
        assert_eq!(bad.code, 2, "{more:?}: {}", bad.stderr);
        assert!(bad.stderr.contains(says), "{more:?}: {}", bad.stderr);
        assert!(bad.stdout.is_empty(), "no plan printed: {}", bad.stdout);
    }

    let planned = plan_of(&table, &["--units", "4"]).await;
    assert_eq!(planned.code, 0, "{}", planned.stderr);
    assert_eq!(
        json(&planned)["workers"],
        4,
        "--workers defaults to the unit count"
    );
    let plan_file = checkpoint_file("ops-bad-units-plan", "plan.json");
    std::fs::write(&plan_file, &planned.stdout).unwrap();
    let plan_arg = plan_file.to_str().unwrap();
    let out_of_range = run(migrate(&["--plan-file", plan_arg, "--unit-index", "4"])).await;
    assert_eq!(out_of_range.code, 2, "{}", out_of_range.stderr);
    for part in ["--unit-index 4", "indexes 0 to 3", "`completions`"] {
        assert!(
            out_of_range.stderr.contains(part),
            "lacks {part}: {}",
            out_of_range.stderr
        );
    }
    let other_table = ops(&[
        "migrate",
        "--entity",
        "Score",
        "--table",
        "another-table",
        "--plan-file",
        plan_arg,
        "--unit-index",
        "0",
    ])
    .await;
    assert_eq!(other_table.code, 2, "{}", other_table.stderr);
    assert!(
        other_table
            .stderr
            .contains("give the --table it was made for"),
        "{}",
        other_table.stderr
    );
    let other_entity = ops(&[
        "remaining",
        "--entity",
        "PersonalBest",
        "--table",
        &table,
        "--plan-file",
        plan_arg,
    ])
    .await;
    assert_eq!(other_entity.code, 2, "{}", other_entity.stderr);
    assert!(
        other_entity.stderr.contains("not `PersonalBest`"),
        "{}",
        other_entity.stderr
    );
    // --forget deletes records only when the declaration can go, and needs the plan.
    let remaining = |more: &[&str]| {
        let mut args = vec![
            "remaining",
            "--entity",
            "Score",
            "--table",
            &table,
            "--forget",
        ];
        args.extend_from_slice(more);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let kept = run(remaining(&["--plan-file", plan_arg])).await;
    assert_eq!(kept.code, 3, "not removable: {}", kept.stderr);
    assert!(
        kept.stdout.contains("the unit records stay"),
        "{}",
        kept.stdout
    );
    let no_plan = run(remaining(&[])).await;
    assert_eq!(no_plan.code, 2, "{}", no_plan.stderr);
    assert!(
        no_plan.stderr.contains("give the plan"),
        "{}",
        no_plan.stderr
    );
    std::fs::write(&plan_file, "{\"units\": 3}").unwrap();
    let not_a_plan = run(migrate(&["--plan-file", plan_arg, "--unit-index", "0"])).await;
    assert_eq!(not_a_plan.code, 2, "{}", not_a_plan.stderr);
    assert!(
        not_a_plan
            .stderr
            .contains("not a plan `migrate --plan` printed"),
        "{}",
        not_a_plan.stderr
    );
    let with_plan = run(migrate(&["--unit", "0..2/8", "--plan"])).await;
    assert_eq!(with_plan.code, 2, "--unit and --plan: {}", with_plan.stderr);

    assert_eq!(
        after.migration_remaining().await.unwrap(),
        left,
        "nothing moved"
    );
    let _ = std::fs::remove_dir_all(plan_file.parent().unwrap());
}
