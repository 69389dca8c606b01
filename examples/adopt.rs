//! Adopting a table another service wrote and keeps writing, online, on DynamoDB Local.
//!
//! ```text
//! cargo run --example adopt
//! ```
//!
//! The table is a single-table design keyed `PK`/`SK`, written for a year by a TypeScript
//! service (played here by a task that builds its keys by hand, as that service does):
//!
//! - a leaderboard under one unsharded key per game (`GAME#g1`), its scores untagged, and in the
//!   same partition the players' personal bests, another record type (`BEST#<player>`);
//! - active users spread by `@ddb-lib`'s `distributedKey` over `ACTIVE_USERS#SHARD_<0-9>`, at
//!   random;
//! - the vote-counter pattern's counter, `CANDIDATE#<c>#<0-9>` / `METADATA`, `ADD votes :inc`.
//!
//! The Rust service moves in while the other service keeps writing: it declares the table as
//! it is (`recognize = "tag_or_key"`: the other service never tags), reads everything at once,
//! migrates the leaderboard onto 10 hash shards and the active users onto their hash shards,
//! adds to the same vote counter, and finally checks that nothing was lost or doubled and that
//! not one personal best was touched. It prints the migration's report.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::migrate::{Migrate, MigrateError, Report};
use sharded::schema::TableDefinition;
use sharded::{Repo, ShardedCounter, ShardedEntity, ShardedTable};
use sharded_testkit::backend::{unique_table_name, Backend};

/// The table as it is.
#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", tag = "_type", recognize = "tag_or_key")]
struct GameTable;

/// The leaderboard, adopted from its unsharded key onto 10 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[sharded(table = GameTable)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 10,
    legacy = "GAME#{game_id}"
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The active users, adopted from random shards onto their hash shards, spelled as they are.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[sharded(table = GameTable)]
#[pk(
    template = "ACTIVE_USERS",
    shard = "hash(user_id)",
    n = 10,
    suffix = "#SHARD_{shard}",
    previous_n = 10,
    previous_shard = "unknown"
)]
#[sk(template = "USER#{user_id}")]
struct ActiveUser {
    user_id: String,
    seen: u64,
}

const GAME: &str = "g1";
const HISTORY_SCORES: u64 = 1_000;
const HISTORY_USERS: u64 = 300;

/// What the other service wrote, as it knows it.
#[derive(Default)]
struct Written {
    scores: BTreeSet<(String, u64)>,
    users: BTreeSet<String>,
    votes: i64,
    bests: BTreeMap<String, HashMap<String, AttributeValue>>,
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The other service: builds its keys by hand from the key specification and writes without
/// conditions or tags, as its TypeScript code does.
struct OtherService {
    client: Client,
    table: String,
    written: Arc<Mutex<Written>>,
}

impl OtherService {
    async fn score(&self, player: &str, score: u64) -> Result<(), Box<dyn std::error::Error>> {
        // Still on its old layout: one partition per game.
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(&format!("GAME#{GAME}")))
            .item("SK", s(&format!("SCORE#{score:020}#{player}")))
            .item("game_id", s(GAME))
            .item("player_id", s(player))
            .item("score", n(score))
            .send()
            .await?;
        self.written
            .lock()
            .unwrap()
            .scores
            .insert((player.to_owned(), score));
        Ok(())
    }

    async fn best(&self, player: &str, score: u64) -> Result<(), Box<dyn std::error::Error>> {
        let item = HashMap::from([
            ("PK".to_owned(), s(&format!("GAME#{GAME}"))),
            ("SK".to_owned(), s(&format!("BEST#{player}"))),
            ("game_id".to_owned(), s(GAME)),
            ("player_id".to_owned(), s(player)),
            ("score".to_owned(), n(score)),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item.clone()))
            .send()
            .await?;
        self.written
            .lock()
            .unwrap()
            .bests
            .insert(player.to_owned(), item);
        Ok(())
    }

    async fn active(&self, user: &str, seen: u64) -> Result<(), Box<dyn std::error::Error>> {
        // `PatternHelpers.distributedKey('ACTIVE_USERS', 10)`: a random shard each time.
        let shard = fastrand::u32(0..10);
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(&format!("ACTIVE_USERS#SHARD_{shard}")))
            .item("SK", s(&format!("USER#{user}")))
            .item("user_id", s(user))
            .item("seen", n(seen))
            .send()
            .await?;
        self.written.lock().unwrap().users.insert(user.to_owned());
        Ok(())
    }

    async fn vote(&self) -> Result<(), Box<dyn std::error::Error>> {
        let shard = fastrand::u32(0..10);
        self.client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(&format!("CANDIDATE#A#{shard}")))
            .key("SK", s("METADATA"))
            .update_expression("ADD votes :inc")
            .expression_attribute_values(":inc", n(1))
            .send()
            .await?;
        self.written.lock().unwrap().votes += 1;
        Ok(())
    }

    /// A year of history.
    async fn history(&self) -> Result<(), Box<dyn std::error::Error>> {
        for i in 0..HISTORY_SCORES {
            let player = format!("player-{:04}", i % 400);
            self.score(&player, fastrand::u64(0..1_000_000)).await?;
        }
        for i in 0..400 {
            self.best(&format!("player-{i:04}"), fastrand::u64(0..1_000_000))
                .await?;
        }
        for i in 0..HISTORY_USERS {
            self.active(&format!("u{i:04}"), i).await?;
        }
        for _ in 0..500 {
            self.vote().await?;
        }
        Ok(())
    }

    /// Keeps writing, as in production, until `stop`.
    async fn keep_writing(&self, stop: &AtomicBool) -> Result<u64, Box<dyn std::error::Error>> {
        let mut writes = 0;
        while !stop.load(Ordering::Relaxed) {
            let i = fastrand::u64(0..10_000);
            match writes % 3 {
                0 => {
                    let player = format!("player-{:04}", fastrand::u64(0..500));
                    self.score(&player, 1_000_000 + i).await?;
                }
                1 => self.active(&format!("u{:04}", i % 400), i).await?,
                _ => self.vote().await?,
            }
            writes += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(writes)
    }
}

fn print_report(what: &str, report: &Report) {
    let p = &report.progress;
    println!(
        "  {what}: {} adopted by a move, {} tagged where they were, {} stale copies removed, \
         {} already in place, {} left alone, {:.0} write units, {:.1?}",
        p.moved, p.tagged, p.superseded, p.in_place, p.left_alone, p.write_units, p.elapsed
    );
    let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
    for item in &report.left_alone {
        *reasons.entry(item.reason.label()).or_default() += 1;
    }
    for (reason, count) in reasons {
        println!("    left alone, {reason}: {count}");
    }
    if let Some(example) = report.left_alone.first() {
        println!("    e.g. {}: {}", example.key, example.reason);
    }
    if let Some(example) = report.failed.first() {
        println!(
            "    not moved, listed: {} (e.g. {}: {})",
            p.failed, example.key, example.reason
        );
    }
}

/// A run that went to its end: its report, also when it lists items it could not move (an
/// old copy the other service rewrote after its copy, kept with the copy and listed).
fn to_the_end(result: Result<Report, MigrateError>) -> Result<Report, MigrateError> {
    match result {
        Err(MigrateError::Incomplete {
            report,
            source: None,
        }) => Ok(*report),
        other => other,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = Backend::shared().await?;
    let client = local.client().await;
    let table = unique_table_name("adopt");
    let scores: Repo<Score> = Repo::new(client.clone(), &table);
    scores.create_table().await?;
    let users: Repo<ActiveUser> = scores.for_entity();
    let written = Arc::new(Mutex::new(Written::default()));
    let other = Arc::new(OtherService {
        client: client.clone(),
        table: table.clone(),
        written: written.clone(),
    });

    println!("1. The other service's history: {HISTORY_SCORES} scores and 400 personal bests under GAME#{GAME}, {HISTORY_USERS} active users on random #SHARD_n keys, 500 votes.");
    other.history().await?;

    println!("2. The Rust service moves in while the other service keeps writing.");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (other, stop) = (other.clone(), stop.clone());
        tokio::spawn(async move { other.keep_writing(&stop).await.map_err(|e| e.to_string()) })
    };
    // Reads cover the legacy key and the shards at once; the personal bests in the same
    // partition are another record type, never read as scores.
    let top = Score::query(&scores, GAME)
        .descending()
        .limit(5)
        .collect()
        .await?;
    let all = Score::query(&scores, GAME).count().await?;
    println!(
        "  reads at once: {all} scores, top 5 {:?}",
        top.iter().map(|s| s.score).collect::<Vec<_>>()
    );
    let votes = ShardedCounter::new(
        client.clone(),
        &table,
        &TableDefinition::of::<GameTable>(),
        "CANDIDATE#A",
        10,
    )?
    .with_sort_key("METADATA")
    .with_attribute("votes");
    println!("  vote total so far: {}", votes.total().await?);
    let started = Instant::now();
    // The other service writes old places all along: an old copy it rewrites after its copy
    // is kept beside the copy and listed, not deleted; the pass behind it settles it.
    let leaderboard = to_the_end(
        scores
            .migrate()
            .only(Score::pk_partitions(GAME)?)
            .write_units_per_second(400.0)
            .run()
            .await,
    )?;
    let active = to_the_end(users.migrate().write_units_per_second(400.0).run().await)?;
    let mut rust_votes = 0;
    for i in 0..50 {
        votes
            .increment_with_token(1, format!("rust-vote-{i}"))
            .await?;
        rust_votes += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let kept_writing = writer.await?.map_err(|e| e.to_string())?;
    // What the other service wrote behind the migration: one more pass.
    let behind_scores = scores
        .migrate()
        .only(Score::pk_partitions(GAME)?)
        .run()
        .await?;
    let behind_users = users.migrate().run().await?;
    let elapsed = started.elapsed();

    println!(
        "3. The report ({kept_writing} writes by the other service meanwhile, {elapsed:.1?}):"
    );
    print_report("leaderboard", &leaderboard);
    print_report("leaderboard, written behind it", &behind_scores);
    print_report("active users", &active);
    print_report("active users, written behind them", &behind_users);

    println!("4. Checks:");
    // Everything the other service wrote, taken out of the mutex (its writer has stopped).
    let written = std::mem::take(&mut *written.lock().unwrap());
    let read: BTreeSet<(String, u64)> = Score::query(&scores, GAME)
        .collect()
        .await?
        .into_iter()
        .map(|s| (s.player_id, s.score))
        .collect();
    assert_eq!(
        read, written.scores,
        "every score the other service wrote, once"
    );
    println!(
        "  scores: {} written, {} read, none lost or doubled",
        written.scores.len(),
        read.len()
    );
    let listed = ActiveUser::query(&users).collect().await?;
    let read_users: BTreeSet<String> = listed.iter().map(|u| u.user_id.clone()).collect();
    // A user the other service re-wrote on another random shard is one user, read once.
    assert_eq!(listed.len(), read_users.len(), "an active user read twice");
    assert_eq!(read_users, written.users, "every active user");
    println!(
        "  active users: {} written, {} read",
        written.users.len(),
        read_users.len()
    );
    let total = votes.total().await?;
    assert_eq!(
        total,
        written.votes + rust_votes,
        "every vote, counted once"
    );
    println!(
        "  votes: {} by the other service + {rust_votes} by this one = {total}",
        written.votes
    );
    let mut untouched = 0;
    for (player, original) in &written.bests {
        let stored = client
            .get_item()
            .table_name(&table)
            .key("PK", s(&format!("GAME#{GAME}")))
            .key("SK", s(&format!("BEST#{player}")))
            .consistent_read(true)
            .send()
            .await?
            .item;
        assert_eq!(
            stored.as_ref(),
            Some(original),
            "a personal best was changed"
        );
        untouched += 1;
    }
    println!(
        "  personal bests: {untouched} of {} exactly as written",
        written.bests.len()
    );
    println!("done: adopted online, nothing lost, nothing that is not the entity's rewritten.");
    Ok(())
}
