//! Layouts that change: resharding N -> M and adopting sharding over a legacy unsharded key,
//! read while items are in both layouts; random shards found again.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use sharded::migrate::Migrate;
use sharded::{cursor::CursorError, Error, Repo, ShardedEntity};

use crate::support::{page_to_end, repo};

/// The leaderboard before the transition: 4 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
#[sk(template = "SCORE#{score}#{player_id}")]
pub struct ScoreAt4 {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
}

/// The same entity, resharding to 9 shards: 4 is declared as the previous count.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 9,
    previous_n = 4
)]
#[sk(template = "SCORE#{score}#{player_id}")]
pub struct ScoreTo9 {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
}

/// Shrinking from 9 shards to 2.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 2,
    previous_n = 9
)]
#[sk(template = "SCORE#{score}#{player_id}")]
pub struct ScoreTo2 {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
}

/// Adopting sharding: the table's items are under the unsharded `GAME#{game_id}`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 4,
    legacy = "GAME#{game_id}"
)]
#[sk(template = "SCORE#{score}#{player_id}")]
pub struct ScoreFromLegacy {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
}

/// A score with an index by player, before and during a transition from 2 to 5 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Run")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 2)]
#[sk(template = "RUN#{run}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "RUN#{run}", shard = 3)]
pub struct RunAt2 {
    pub game_id: String,
    pub player_id: String,
    pub run: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Run")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 5,
    previous_n = 2
)]
#[sk(template = "RUN#{run}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "RUN#{run}", shard = 3)]
pub struct RunTo5 {
    pub game_id: String,
    pub player_id: String,
    pub run: u64,
}

/// A randomly sharded log line.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "LOG#{day}", shard = "random", n = 6)]
#[sk(template = "{at}#{id}")]
pub struct Line {
    pub day: String,
    pub at: u64,
    pub id: String,
    pub text: String,
}

fn to9(s: &ScoreAt4) -> ScoreTo9 {
    ScoreTo9 {
        game_id: s.game_id.clone(),
        player_id: s.player_id.clone(),
        score: s.score,
    }
}

fn scores(n: u64) -> Vec<ScoreAt4> {
    (0..n)
        .map(|i| ScoreAt4 {
            game_id: "g1".into(),
            player_id: format!("p{i:03}"),
            score: (i * 7919) % 1000,
        })
        .collect()
}

/// The brute-force answer: every item once, by sort key (score, then player), descending.
fn expected_top(items: &BTreeMap<String, u64>, k: usize) -> Vec<(String, u64)> {
    let mut all: Vec<(String, u64)> = items.iter().map(|(p, s)| (p.clone(), *s)).collect();
    all.sort_by(|a, b| (b.1, &b.0).cmp(&(a.1, &a.0)));
    all.truncate(k);
    all
}

#[tokio::test]
async fn resharding_reads_every_item_once_in_both_layouts() {
    let old: Repo<ScoreAt4> = repo("layout-grow").await;
    let items = scores(60);
    old.batch_put(&items).await.unwrap();
    let new: Repo<ScoreTo9> = old.for_entity();
    // A third of the items are rewritten under the new layout (the old copies stay).
    for s in items.iter().step_by(3) {
        new.put(&to9(s)).await.unwrap();
    }
    // And some are updated to new scores through the new layout.
    let mut truth: BTreeMap<String, u64> = items
        .iter()
        .map(|s| (s.player_id.clone(), s.score))
        .collect();
    for s in items.iter().skip(1).step_by(5) {
        let moved = ScoreTo9 {
            score: s.score + 1,
            ..to9(s)
        };
        // A new score is a new sort key: the old item is deleted, the new one put.
        ScoreTo9::delete(&new, "g1", &s.player_id, s.score)
            .await
            .unwrap();
        new.put(&moved).await.unwrap();
        truth.insert(s.player_id.clone(), moved.score);
    }
    let all = ScoreTo9::query(&new, "g1")
        .descending()
        .collect()
        .await
        .unwrap();
    let got: Vec<(String, u64)> = all.iter().map(|s| (s.player_id.clone(), s.score)).collect();
    assert_eq!(
        got,
        expected_top(&truth, usize::MAX),
        "every item once, in order"
    );
    for k in [1, 10, 100] {
        let top = ScoreTo9::query(&new, "g1")
            .descending()
            .limit(k)
            .collect()
            .await
            .unwrap();
        let got: Vec<(String, u64)> = top.iter().map(|s| (s.player_id.clone(), s.score)).collect();
        assert_eq!(got, expected_top(&truth, k), "top {k}");
    }
    assert_eq!(
        ScoreTo9::query(&new, "g1").count().await.unwrap(),
        truth.len() as u64
    );
    for size in [1, 7, 100] {
        let pages = page_to_end(|| ScoreTo9::query(&new, "g1").descending(), size).await;
        let got: Vec<(String, u64)> = pages
            .into_iter()
            .flatten()
            .map(|s| (s.player_id.clone(), s.score))
            .collect();
        assert_eq!(got, expected_top(&truth, usize::MAX), "pages of {size}");
    }
    // Point reads find items in either layout; deletes remove both copies.
    for s in items.iter().take(10) {
        let score = truth[&s.player_id];
        let found = ScoreTo9::get(&new, "g1", &s.player_id, score)
            .await
            .unwrap();
        assert_eq!(found.map(|f| f.score), Some(score), "{}", s.player_id);
    }
    let gone = &items[0];
    ScoreTo9::delete(&new, "g1", &gone.player_id, gone.score)
        .await
        .unwrap();
    assert_eq!(
        ScoreTo9::get(&new, "g1", &gone.player_id, gone.score)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        ScoreTo9::query(&new, "g1").count().await.unwrap(),
        truth.len() as u64 - 1
    );
}

#[tokio::test]
async fn shrinking_reads_the_dropped_shards_until_migrated() {
    let big: Repo<ScoreTo9> = repo("layout-shrink").await;
    let items: Vec<ScoreTo9> = scores(40).iter().map(to9).collect();
    big.batch_put(&items).await.unwrap();
    let small: Repo<ScoreTo2> = big.for_entity();
    let all = ScoreTo2::query(&small, "g1").collect().await.unwrap();
    assert_eq!(all.len(), 40);
    assert_eq!(ScoreTo2::query(&small, "g1").count().await.unwrap(), 40);
    let one = &items[5];
    assert!(ScoreTo2::get(&small, "g1", &one.player_id, one.score)
        .await
        .unwrap()
        .is_some());
}

#[tokio::test]
async fn a_cursor_from_another_layout_is_refused_as_such() {
    let old: Repo<ScoreAt4> = repo("layout-cursor").await;
    old.batch_put(&scores(30)).await.unwrap();
    let page = ScoreAt4::query(&old, "g1").page(5, None).await.unwrap();
    let cursor = page.cursor.expect("more pages");
    let new: Repo<ScoreTo9> = old.for_entity();
    match ScoreTo9::query(&new, "g1").page(5, Some(&cursor)).await {
        Err(Error::Cursor(CursorError::Layout { issued, current })) => {
            assert!(issued.contains("0..4"), "{issued}");
            assert!(current.contains("0..9"), "{current}");
        }
        other => panic!(
            "expected a layout refusal, got {:?}",
            other.map(|p| p.items.len())
        ),
    }
}

#[tokio::test]
async fn legacy_items_without_an_entity_attribute_are_read_moved_and_deleted() {
    let repo: Repo<ScoreFromLegacy> = repo("layout-legacy").await;
    // Items a pre-`sharded` service wrote: an unsharded key, no entity attribute.
    for i in 0..12u64 {
        let item = std::collections::HashMap::from([
            ("pk".to_owned(), AttributeValue::S("GAME#g1".into())),
            (
                "sk".to_owned(),
                AttributeValue::S(ScoreFromLegacy::sk(i * 10, &format!("p{i}")).unwrap()),
            ),
            ("game_id".to_owned(), AttributeValue::S("g1".into())),
            ("player_id".to_owned(), AttributeValue::S(format!("p{i}"))),
            ("score".to_owned(), AttributeValue::N((i * 10).to_string())),
            ("note".to_owned(), AttributeValue::S("kept".into())),
        ]);
        repo.client()
            .put_item()
            .table_name(repo.table())
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }
    let all = ScoreFromLegacy::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(all.len(), 12);
    assert_eq!(
        ScoreFromLegacy::query(&repo, "g1").count().await.unwrap(),
        12
    );
    let found = ScoreFromLegacy::get(&repo, "g1", "p3", 30).await.unwrap();
    assert_eq!(found.map(|s| s.score), Some(30));
    // An update of a legacy item moves it to its shard first.
    let f = ScoreFromLegacy::fields();
    let _ = f;
    ScoreFromLegacy::delete(&repo, "g1", "p4", 40)
        .await
        .unwrap();
    assert_eq!(
        ScoreFromLegacy::get(&repo, "g1", "p4", 40).await.unwrap(),
        None
    );
    assert_eq!(
        ScoreFromLegacy::query(&repo, "g1").count().await.unwrap(),
        11
    );
    // put_new refuses an item that exists at its legacy place.
    let taken = ScoreFromLegacy {
        game_id: "g1".into(),
        player_id: "p5".into(),
        score: 50,
    };
    assert!(matches!(
        repo.put_new(&taken).await,
        Err(Error::AlreadyExists { .. })
    ));
}

#[tokio::test]
async fn random_items_read_back_are_deleted_and_replaced_where_they_are() {
    let repo: Repo<Line> = repo("layout-random").await;
    for round in 0..50u64 {
        let line = Line {
            day: "d1".into(),
            at: round,
            id: format!("x{round}"),
            text: "first".into(),
        };
        repo.put(&line).await.unwrap();
        let read = Line::query(&repo, "d1")
            .sk(Line::sk_sort().eq(round))
            .collect()
            .await
            .unwrap();
        assert_eq!(read.len(), 1);
        let mut again = read[0].clone();
        again.text = "second".into();
        repo.put(&again).await.unwrap();
        let read = Line::query(&repo, "d1")
            .sk(Line::sk_sort().eq(round))
            .collect()
            .await
            .unwrap();
        assert_eq!(
            read,
            [again.clone()],
            "replaced, not copied (round {round})"
        );
        match round % 3 {
            0 => repo.batch_delete(&read).await.unwrap(),
            1 => Line::delete(&repo, "d1", round, &again.id).await.unwrap(),
            _ => repo
                .delete_if(&read[0], Line::fields().text.eq("second".to_owned()))
                .await
                .unwrap(),
        }
        let left = Line::query(&repo, "d1")
            .sk(Line::sk_sort().eq(round))
            .count()
            .await
            .unwrap();
        assert_eq!(left, 0, "deleted (round {round})");
    }
}

#[tokio::test]
async fn index_queries_during_a_transition_return_each_item_once() {
    let old: Repo<RunAt2> = repo("layout-gsi").await;
    let runs: Vec<RunAt2> = (0..40)
        .map(|i| RunAt2 {
            game_id: "g1".into(),
            player_id: "p1".into(),
            run: i,
        })
        .collect();
    old.batch_put(&runs).await.unwrap();
    let new: Repo<RunTo5> = old.for_entity();
    // Half the runs are copied to their new place with their old copies still there (what
    // the migration's copy step leaves until its delayed delete; a user's write now removes
    // the old copy in the same request, so the raw SDK makes this state).
    for r in runs.iter().step_by(2) {
        let item = RunTo5 {
            game_id: r.game_id.clone(),
            player_id: r.player_id.clone(),
            run: r.run,
        }
        .to_item()
        .unwrap();
        new.client()
            .put_item()
            .table_name(new.table())
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }
    // The table holds both copies of the rewritten half (a scan reads items where they are).
    assert_eq!(new.scan().count().await.unwrap(), 60);
    let by_player = RunTo5::query_gsi1(&new, "p1").collect().await.unwrap();
    let got: Vec<u64> = by_player.iter().map(|r| r.run).collect();
    assert_eq!(
        got,
        (0..40).collect::<Vec<u64>>(),
        "each run once, in order"
    );
    let base = RunTo5::query(&new, "g1").collect().await.unwrap();
    assert_eq!(base.len(), 40);
}

/// A versioned profile, before and during a transition from 2 to 3 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Profile")]
#[pk(template = "ORG#{org}", shard = "hash(user)", n = 2)]
#[sk(template = "USER#{user}")]
pub struct ProfileAt2 {
    pub org: String,
    pub user: String,
    pub name: String,
    #[sharded(version)]
    pub version: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Profile")]
#[pk(template = "ORG#{org}", shard = "hash(user)", n = 3, previous_n = 2)]
#[sk(template = "USER#{user}")]
pub struct ProfileTo3 {
    pub org: String,
    pub user: String,
    pub name: String,
    #[sharded(version)]
    pub version: u64,
}

#[tokio::test]
async fn conditional_writes_of_a_not_yet_migrated_item_move_it_first() {
    let old: Repo<ProfileAt2> = repo("layout-versioned").await;
    for i in 0..12 {
        old.put(&ProfileAt2 {
            org: "o1".into(),
            user: format!("u{i}"),
            name: "first".into(),
            version: 0,
        })
        .await
        .unwrap();
    }
    let new: Repo<ProfileTo3> = old.for_entity();
    let f = ProfileTo3::fields();
    for i in 0..12 {
        let user = format!("u{i}");
        let mut read = ProfileTo3::get(&new, "o1", &user)
            .await
            .unwrap()
            .expect("found at its previous place");
        assert_eq!(read.version, 1);
        read.name = "second".into();
        match i % 3 {
            // A versioned put of the item read back: moved, then replaced at version 1.
            0 => new.put(&read).await.unwrap(),
            1 => new
                .put_if(&read, f.name.eq("first".to_owned()))
                .await
                .unwrap(),
            _ => ProfileTo3::update(&new, "o1", &user)
                .set(f.name, "second".to_owned())
                .send()
                .await
                .unwrap(),
        }
        let now = ProfileTo3::get(&new, "o1", &user).await.unwrap().unwrap();
        assert_eq!((now.name.as_str(), now.version), ("second", 2), "{user}");
    }
    let all = ProfileTo3::query(&new, "o1").collect().await.unwrap();
    assert_eq!(all.len(), 12);
    assert!(all.iter().all(|p| p.name == "second" && p.version == 2));
    // The writes copied the items (their stale old copies wait, hidden from queries, for the
    // migration to delete them): afterwards the table holds each item once.
    new.migrate().run().await.unwrap();
    assert_eq!(new.scan().count().await.unwrap(), 12);
    assert_eq!(new.migration_remaining().await.unwrap(), 0);
    let all = ProfileTo3::query(&new, "o1").collect().await.unwrap();
    assert!(all.len() == 12 && all.iter().all(|p| p.name == "second" && p.version == 2));
}

#[tokio::test]
async fn a_transaction_delete_during_a_transition_removes_both_copies() {
    let old: Repo<ScoreAt4> = repo("layout-transact").await;
    let items = scores(6);
    old.batch_put(&items).await.unwrap();
    let new: Repo<ScoreTo9> = old.for_entity();
    // Item 0 also has a copy at its new place; item 1 only at its old one.
    new.put(&to9(&items[0])).await.unwrap();
    new.transaction()
        .delete(&to9(&items[0]))
        .delete(&to9(&items[1]))
        .commit()
        .await
        .unwrap();
    for s in &items[..2] {
        assert_eq!(
            ScoreTo9::get(&new, "g1", &s.player_id, s.score)
                .await
                .unwrap(),
            None
        );
    }
    assert_eq!(ScoreTo9::query(&new, "g1").count().await.unwrap(), 4);
    assert_eq!(
        new.scan().count().await.unwrap(),
        4,
        "no copy is left anywhere"
    );
}

/// A daily ops log in day buckets, growing from 2 to 5 random shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Ops")]
#[pk(template = "OPS#{at:day}", shard = "random", n = 2)]
#[sk(template = "{at}#{id}")]
pub struct OpsAt2 {
    pub at: i64,
    pub id: String,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Ops")]
#[pk(template = "OPS#{at:day}", shard = "random", n = 5, previous_n = 2)]
#[sk(template = "{at}#{id}")]
pub struct OpsTo5 {
    pub at: i64,
    pub id: String,
}

#[tokio::test]
async fn range_queries_during_a_resharding_return_each_entry_once() {
    let old: Repo<OpsAt2> = repo("layout-buckets").await;
    const DAY: i64 = 86_400;
    let entries: Vec<OpsAt2> = (0..60)
        .map(|i| OpsAt2 {
            at: 20_000 * DAY + i * 3_600 * 2,
            id: format!("e{i}"),
        })
        .collect();
    old.batch_put(&entries).await.unwrap();
    let new: Repo<OpsTo5> = old.for_entity();
    for e in entries.iter().step_by(2) {
        new.put(&OpsTo5 {
            at: e.at,
            id: e.id.clone(),
        })
        .await
        .unwrap();
    }
    let (from, to) = (20_000 * DAY + 3_600, 20_004 * DAY);
    let want: Vec<i64> = entries
        .iter()
        .map(|e| e.at)
        .filter(|at| (from..to).contains(at))
        .collect();
    let got: Vec<i64> = OpsTo5::query_range(&new, from, to)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(|e| e.at)
        .collect();
    assert_eq!(got, want, "each entry once, in time order");
    let mut down = want.clone();
    down.reverse();
    let got: Vec<i64> = OpsTo5::query_range(&new, from, to)
        .descending()
        .collect()
        .await
        .unwrap()
        .iter()
        .map(|e| e.at)
        .collect();
    assert_eq!(got, down);
}
