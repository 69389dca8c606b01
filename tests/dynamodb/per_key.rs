//! Per-key layouts (`max_n` on `#[pk]`): cold keys cost what an unsharded key costs, one key
//! is widened and narrowed online while writers and readers run, and every step of a change
//! refuses what does not follow.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use sharded::capacity::ManualClock;
use sharded::layouts::{ChangeLayout, LayoutError, LayoutTiming, Phase};
use sharded::schema::KeyLayout;
use sharded::{Error, Repo, ShardedEntity};

use crate::support::{raw_scan, repo};

/// A leaderboard entry whose games are unsharded until one goes viral.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
#[sharded(entity = "Play")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 16
)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}")]
pub struct Play {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
    pub note: String,
}

/// The same entity with a fixed `n`, for the physical keys a widened key must match.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Play")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 8)]
#[sk(template = "SCORE#{score}#{player_id}")]
pub struct PlayAt8 {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
    pub note: String,
}

fn play(game: &str, player: u64, score: u64) -> Play {
    Play {
        game_id: game.into(),
        player_id: format!("p{player}"),
        score,
        note: String::new(),
    }
}

fn noted(game: &str, player: u64, score: u64, note: &str) -> Play {
    Play {
        note: note.into(),
        ..play(game, player, score)
    }
}

/// A short lease, so that a change runs in a second.
fn quick(repo: Repo<Play>) -> Repo<Play> {
    repo.with_layout_timing(LayoutTiming::new(
        Duration::from_millis(150),
        Duration::from_millis(100),
    ))
}

/// The partition keys of `game`'s items as stored.
async fn stored_partitions(repo: &Repo<Play>, game: &str) -> BTreeSet<String> {
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

#[tokio::test]
async fn a_cold_key_is_one_partition_one_query_and_one_get() {
    let repo = quick(repo::<Play>("perkey_cold").await);
    for p in 0..20 {
        repo.put(&play("cold", p, p * 3)).await.unwrap();
    }
    assert_eq!(
        stored_partitions(&repo, "cold").await,
        BTreeSet::from(["GAME#cold#0".to_owned()]),
        "n = 1: every item of a cold key in one partition"
    );
    let by_shard = Play::query(&repo, "cold").count_by_shard().await.unwrap();
    assert_eq!(by_shard, vec![20], "one Query");
    let rank = Play::query(&repo, "cold")
        .descending()
        .rank(&play("cold", 5, 15))
        .await
        .unwrap();
    assert_eq!((rank.position, rank.requests), (15, 1));
    assert_eq!(
        Play::get(&repo, "cold", "p7", 21).await.unwrap(),
        Some(play("cold", 7, 21))
    );
    assert!(repo.layouts().entries().await.unwrap().is_empty());
}

#[tokio::test]
async fn one_key_widens_online_while_writers_and_readers_run() {
    let repo = quick(repo::<Play>("perkey_widen").await);
    for p in 0..40 {
        repo.put(&play("viral", p, p)).await.unwrap();
        repo.put(&play("quiet", p, p)).await.unwrap();
    }
    let written = Arc::new(AtomicU64::new(40));
    let done = Arc::new(AtomicBool::new(false));
    // A writer of new players and new scores of old ones, through another repository (its
    // own directory cache, as another process has).
    let writer = {
        let repo = quick(Repo::new(repo.client().clone(), repo.table()));
        let (written, done) = (Arc::clone(&written), Arc::clone(&done));
        tokio::spawn(async move {
            let mut next = 40;
            while !done.load(Ordering::Acquire) {
                repo.put(&play("viral", next, next)).await.unwrap();
                next += 1;
                written.store(next, Ordering::Release);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    // A reader: every player written before a read began is in that read, once.
    let reader = {
        let repo = quick(Repo::new(repo.client().clone(), repo.table()));
        let (written, done) = (Arc::clone(&written), Arc::clone(&done));
        tokio::spawn(async move {
            let mut reads = 0;
            while !done.load(Ordering::Acquire) {
                let before = written.load(Ordering::Acquire);
                let board = Play::query(&repo, "viral").collect().await.unwrap();
                let players: BTreeSet<&str> = board.iter().map(|p| p.player_id.as_str()).collect();
                assert_eq!(players.len(), board.len(), "an item shown twice: {board:?}");
                for p in 0..before {
                    assert!(players.contains(format!("p{p}").as_str()), "p{p} missing");
                }
                reads += 1;
            }
            reads
        })
    };
    let moved = repo.layouts().change("GAME#viral", 8).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    done.store(true, Ordering::Release);
    writer.await.unwrap();
    let reads = reader.await.unwrap();
    assert!(reads > 0);
    assert!(moved.moved > 0, "{moved:?}");
    assert_eq!(moved.left, 0);

    let all = written.load(Ordering::Acquire);
    let board = Play::query(&repo, "viral").collect().await.unwrap();
    assert_eq!(board.len() as u64, all);
    // Every item is where the fixed 8-shard layout puts it, and the key reads 8 partitions.
    for item in &board {
        let at8 = PlayAt8::pk("viral", &item.player_id).unwrap();
        let found = repo
            .client()
            .get_item()
            .table_name(repo.table())
            .key("pk", AttributeValue::S(at8))
            .key(
                "sk",
                AttributeValue::S(Play::sk(item.score, &item.player_id).unwrap()),
            )
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        assert!(found.item.is_some(), "{item:?} not at its 8-shard place");
    }
    assert_eq!(
        Play::query(&repo, "viral")
            .count_by_shard()
            .await
            .unwrap()
            .len(),
        8
    );
    assert!(stored_partitions(&repo, "viral").await.len() > 1);
    assert_eq!(
        repo.layouts().layout("GAME#viral").await.unwrap(),
        KeyLayout::steady(8)
    );
    // The other key did not move.
    assert_eq!(
        stored_partitions(&repo, "quiet").await,
        BTreeSet::from(["GAME#quiet#0".to_owned()])
    );
    assert_eq!(
        Play::query(&repo, "quiet").collect().await.unwrap().len(),
        40
    );
    // Point reads and the index follow the key's layout.
    assert_eq!(
        Play::get(&repo, "viral", "p3", 3).await.unwrap(),
        Some(play("viral", 3, 3))
    );
    let p3 = Play::query_gsi1(&repo, "p3").collect().await.unwrap();
    assert_eq!(p3.len(), 2, "p3 plays viral and quiet once each: {p3:?}");
}

#[tokio::test]
async fn narrowing_back_to_the_declared_n_removes_the_entry() {
    let repo = quick(repo::<Play>("perkey_narrow").await);
    for p in 0..30 {
        repo.put(&play("g", p, p)).await.unwrap();
    }
    repo.layouts().change("GAME#g", 5).await.unwrap();
    assert!(stored_partitions(&repo, "g").await.len() > 1);
    let back = repo.layouts().change("GAME#g", 1).await.unwrap();
    assert!(back.moved > 0);
    assert!(repo.layouts().entries().await.unwrap().is_empty());
    // Run again, a change that finished does nothing.
    let again = repo.layouts().change("GAME#g", 1).await.unwrap();
    assert_eq!((again.read, again.moved), (0, 0));
    assert_eq!(
        stored_partitions(&repo, "g").await,
        BTreeSet::from(["GAME#g#0".to_owned()])
    );
    let mut board = Play::query(&repo, "g").collect().await.unwrap();
    board.sort();
    let mut expected: Vec<Play> = (0..30).map(|p| play("g", p, p)).collect();
    expected.sort();
    assert_eq!(board, expected);
}

fn layout_error(e: Error) -> LayoutError {
    match e {
        Error::Layout(e) => e,
        other => panic!("expected a layout error, got {other}"),
    }
}

#[tokio::test]
async fn steps_refuse_what_does_not_follow_saying_what_does() {
    let clock = ManualClock::new();
    let timing = LayoutTiming::new(Duration::from_secs(10), Duration::from_secs(5));
    let repo = repo::<Play>("perkey_steps").await.with_layout_clocks(
        timing,
        Arc::new(clock.clone()),
        Arc::new(clock.clone()),
    );
    let layouts = repo.layouts();
    let e = layout_error(layouts.advance("GAME#g").await.unwrap_err());
    assert!(
        matches!(
            e,
            LayoutError::WrongPhase {
                phase: "steady",
                ..
            }
        ),
        "{e}"
    );
    let e = layout_error(layouts.begin("GAME#g", 17).await.unwrap_err());
    assert!(
        matches!(e, LayoutError::OutOfRange { max_n: 16, .. }),
        "{e}"
    );
    let e = layout_error(layouts.begin("GAME#g", 1).await.unwrap_err());
    assert!(matches!(e, LayoutError::CannotBegin { .. }), "{e}");
    let e = layout_error(layouts.begin("GAME#g#3", 4).await.unwrap_err());
    assert!(matches!(e, LayoutError::NotALogicalKey { .. }), "{e}");

    let entry = layouts.begin("GAME#g", 4).await.unwrap();
    assert_eq!((entry.from, entry.to, entry.phase), (1, 4, Phase::Reading));
    let e = layout_error(layouts.begin("GAME#g", 8).await.unwrap_err());
    assert!(matches!(e, LayoutError::CannotBegin { .. }), "{e}");
    clock.advance(Duration::from_secs(14));
    let e = layout_error(layouts.advance("GAME#g").await.unwrap_err());
    assert_eq!(
        e,
        LayoutError::TooEarly {
            entity: "Play",
            key: "GAME#g".into(),
            step: "advance",
            wait: Duration::from_secs(1)
        }
    );
    let e = layout_error(layouts.migrate("GAME#g").await.unwrap_err());
    assert!(
        matches!(
            e,
            LayoutError::WrongPhase {
                phase: "reading",
                step: "migrate",
                ..
            }
        ),
        "{e}"
    );
    clock.advance(Duration::from_secs(1));
    layouts.advance("GAME#g").await.unwrap();
    let e = layout_error(layouts.finish("GAME#g").await.unwrap_err());
    assert!(
        matches!(e, LayoutError::TooEarly { step: "finish", .. }),
        "{e}"
    );
    clock.advance(Duration::from_secs(15));
    layouts.migrate("GAME#g").await.unwrap();
    assert_eq!(
        layouts.finish("GAME#g").await.unwrap(),
        KeyLayout::steady(4)
    );
    assert_eq!(
        layouts.entries().await.unwrap()["GAME#g"].phase,
        Phase::Steady
    );
}

#[tokio::test]
async fn processes_a_phase_apart_lose_nothing_and_the_last_write_wins() {
    // One clock for both processes and the steps: time moves only when the test says.
    let clock = ManualClock::new();
    let timing = LayoutTiming::new(Duration::from_secs(10), Duration::from_secs(5))
        .with_refresh_ahead(false);
    let base = repo::<Play>("perkey_stale").await;
    let process = |repo: &Repo<Play>| {
        Repo::<Play>::new(repo.client().clone(), repo.table()).with_layout_clocks(
            timing,
            Arc::new(clock.clone()),
            Arc::new(clock.clone()),
        )
    };
    let (operator, other) = (process(&base), process(&base));
    for p in 0..10 {
        other.put(&play("g", p, p)).await.unwrap(); // reads the directory: steady
    }
    // t = 0, `reading`: the other process still holds the steady layout (its lease runs to
    // t = 10) and writes there; nobody writes at 6 yet.
    operator.layouts().begin("GAME#g", 6).await.unwrap();
    for p in 10..20 {
        other.put(&play("g", p, p)).await.unwrap();
    }
    // t = 10: its lease ran out; it reads `reading` (leased to t = 20).
    clock.advance(Duration::from_secs(10));
    other.put(&play("g", 20, 20)).await.unwrap();
    // t = 15, `writing`: the operator writes at 6 (checking 1), the other at 1 (checking 6).
    clock.advance(Duration::from_secs(5));
    operator.layouts().advance("GAME#g").await.unwrap();
    for p in 21..30 {
        other.put(&play("g", p, p)).await.unwrap();
        operator.put(&play("g", p + 100, p)).await.unwrap();
    }
    // The same items rewritten from either side: the last write wins, one copy stays.
    operator.put(&noted("g", 3, 3, "operator")).await.unwrap();
    other.put(&noted("g", 3, 3, "other, later")).await.unwrap();
    other.put(&noted("g", 5, 5, "other")).await.unwrap();
    operator
        .put(&noted("g", 5, 5, "operator, later"))
        .await
        .unwrap();
    Play::delete(&other, "g", "p4", 4).await.unwrap();
    Play::delete(&operator, "g", "p6", 6).await.unwrap();
    for reader in [&operator, &other] {
        assert_eq!(
            Play::get(reader, "g", "p3", 3)
                .await
                .unwrap()
                .map(|p| p.note),
            Some("other, later".to_owned())
        );
        assert_eq!(Play::get(reader, "g", "p4", 4).await.unwrap(), None);
    }
    // t = 30: `writing` is a lease and a margin old; the migration moves what is left at 1.
    clock.advance(Duration::from_secs(15));
    let moved = operator.layouts().migrate("GAME#g").await.unwrap();
    assert_eq!((moved.left, moved.blocked), (0, 0), "{moved:?}");
    operator.layouts().finish("GAME#g").await.unwrap();
    let mut expected: BTreeSet<Play> = (0..30).map(|p| play("g", p, p)).collect();
    expected.extend((21..30).map(|p| play("g", p + 100, p)));
    expected.remove(&play("g", 4, 4));
    expected.remove(&play("g", 6, 6));
    for (p, note) in [(3, "other, later"), (5, "operator, later")] {
        expected.remove(&play("g", p, p));
        expected.insert(noted("g", p, p, note));
    }
    for reader in [&operator, &other] {
        let board: Vec<Play> = Play::query(reader, "g").collect().await.unwrap();
        let set: BTreeSet<Play> = board.iter().cloned().collect();
        assert_eq!(set.len(), board.len(), "an item shown twice");
        assert_eq!(set, expected);
    }
    assert!(stored_partitions(&operator, "g").await.len() > 1);
}

#[tokio::test]
async fn a_transaction_placed_under_a_layout_that_changed_is_refused_and_rebuilt() {
    let clock = ManualClock::new();
    let timing = LayoutTiming::new(Duration::from_secs(10), Duration::from_secs(5));
    let base = repo::<Play>("perkey_tx").await;
    let process = |repo: &Repo<Play>| {
        Repo::<Play>::new(repo.client().clone(), repo.table()).with_layout_clocks(
            timing,
            Arc::new(clock.clone()),
            Arc::new(clock.clone()),
        )
    };
    let (operator, writer) = (process(&base), process(&base));
    writer.put(&play("g", 1, 1)).await.unwrap();
    let built = writer.transaction().put(&play("g", 2, 2));
    operator.layouts().begin("GAME#g", 4).await.unwrap();
    clock.advance(Duration::from_secs(15));
    let e = layout_error(built.commit().await.unwrap_err());
    assert!(matches!(e, LayoutError::Changed { .. }), "{e}");
    // Built again (the directory is read now), it commits under the key's layout.
    writer
        .transaction()
        .put(&play("g", 2, 2))
        .commit()
        .await
        .unwrap();
    let board = Play::query(&operator, "g").collect().await.unwrap();
    assert_eq!(board.len(), 2);
}

#[tokio::test]
async fn an_entity_with_one_layout_has_no_per_key_steps() {
    let repo = repo::<PlayAt8>("perkey_none").await;
    let e = layout_error(repo.layouts().begin("GAME#g", 4).await.unwrap_err());
    assert!(
        matches!(e, LayoutError::NotPerKey { entity: "Play" }),
        "{e}"
    );
}

/// A key's migration holds an item to its keys, as the migration runner does: a tagged item in
/// the key's partition whose fields give another key is not the key's, and stays where it is.
#[tokio::test]
async fn a_key_migration_leaves_an_item_whose_fields_give_another_key() {
    let clock = ManualClock::new();
    let timing = LayoutTiming::new(Duration::from_secs(10), Duration::from_secs(5));
    let repo = repo::<Play>("perkey_strays").await.with_layout_clocks(
        timing,
        Arc::new(clock.clone()),
        Arc::new(clock.clone()),
    );
    for p in 0..6 {
        repo.put(&play("g", p, p)).await.unwrap();
    }
    // Tagged as Play, in g's partition, but its fields say game h.
    let mut stray = play("h", 7, 7).to_item().unwrap();
    let g_key = play("g", 7, 7).to_item().unwrap()["pk"].clone();
    stray.insert("pk".to_owned(), g_key.clone());
    crate::support::raw_put(repo.client(), repo.table(), stray.clone()).await;

    let layouts = repo.layouts();
    layouts.begin("GAME#g", 4).await.unwrap();
    clock.advance(Duration::from_secs(15));
    layouts.advance("GAME#g").await.unwrap();
    clock.advance(Duration::from_secs(15));
    let moved = layouts.migrate("GAME#g").await.unwrap();
    assert_eq!(moved.not_ours, 1, "{moved:?}");
    assert_eq!(moved.left, 0, "{moved:?}");
    let stored = raw_scan(repo.client(), repo.table()).await;
    assert!(
        stored.iter().any(|item| item == &stray),
        "the stray item stays as it was, where it was"
    );
    let moved_plays = stored
        .iter()
        .filter(|item| {
            item.get("game_id")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some("g")
        })
        .count();
    assert_eq!(
        moved_plays, 6,
        "g's own items, moved or in place, once each"
    );
}
