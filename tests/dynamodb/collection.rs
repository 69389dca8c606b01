//! Collections: several entities of one partition in one answer, merged in sort-key order
//! across shards and entity types, paged with one cursor, against brute force.

use serde::{Deserialize, Serialize};
use sharded::query::QueryRefusal;
use sharded::{Error, Repo, ShardedCollection, ShardedEntity};

use crate::entities::{score, Badge, Comment, Score};
use crate::support::{page_to_end, repo};

/// Every entity of a game's partitions but `Note`.
#[derive(ShardedCollection, Debug, Clone, PartialEq)]
enum GameFeed {
    Score(Score),
    Comment(Comment),
    Badge(Badge),
}

/// Two members whose gsi1 layouts agree (`PLAYER#{player_id}`, 4 shards).
#[derive(ShardedCollection, Debug, Clone, PartialEq)]
enum PlayerFeed {
    Score(Score),
    Comment(Comment),
}

/// Shares the partitions and is no member: never in a `GameFeed`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(id)", n = 10)]
#[sk(template = "NOTE#{id}")]
struct Note {
    game_id: String,
    id: String,
}

impl GameFeed {
    /// The base-table sort key the item is stored under.
    fn sk(&self) -> String {
        match self {
            GameFeed::Score(s) => Score::sk(s.score, &s.player_id).unwrap(),
            GameFeed::Comment(c) => Comment::sk(&c.id).unwrap(),
            GameFeed::Badge(b) => Badge::sk(&b.player_id).unwrap(),
        }
    }
}

/// Game g1 with scores, comments, badges and notes; game g2 with more of each.
async fn table() -> (Repo<Score>, Vec<GameFeed>) {
    let repo = repo::<Score>("collection").await;
    let mut members = Vec::new();
    for game in ["g1", "g2"] {
        let scores: Vec<Score> = (0..40)
            .map(|i| score(game, &format!("p{i}"), (i * 37 % 23) as u64))
            .collect();
        let comments: Vec<Comment> = (0..25)
            .map(|i| Comment {
                game_id: game.into(),
                player_id: format!("p{}", i % 7),
                id: format!("c{i:03}"),
                text: "gg".into(),
            })
            .collect();
        let badges: Vec<Badge> = (0..15)
            .map(|i| Badge {
                game_id: game.into(),
                player_id: format!("p{i}"),
                badge: "mvp".into(),
            })
            .collect();
        let notes: Vec<Note> = (0..30)
            .map(|i| Note {
                game_id: game.into(),
                id: format!("n{i}"),
            })
            .collect();
        repo.batch_put(&scores).await.unwrap();
        repo.for_entity::<Comment>()
            .batch_put(&comments)
            .await
            .unwrap();
        repo.for_entity::<Badge>().batch_put(&badges).await.unwrap();
        repo.for_entity::<Note>().batch_put(&notes).await.unwrap();
        if game == "g1" {
            members.extend(scores.into_iter().map(GameFeed::Score));
            members.extend(comments.into_iter().map(GameFeed::Comment));
            members.extend(badges.into_iter().map(GameFeed::Badge));
        }
    }
    (repo, members)
}

/// Brute force: the members sorted by sort key (byte order, as DynamoDB compares them).
fn sorted(mut items: Vec<GameFeed>, descending: bool) -> Vec<GameFeed> {
    items.sort_by_key(GameFeed::sk);
    if descending {
        items.reverse();
    }
    items
}

fn sort_keys(items: &[GameFeed]) -> Vec<String> {
    items.iter().map(GameFeed::sk).collect()
}

#[tokio::test]
async fn a_collection_returns_every_member_of_the_partition_merged_by_sort_key() {
    let (repo, members) = table().await;
    for descending in [false, true] {
        let mut query = Score::query(&repo, "g1").collection::<GameFeed>();
        if descending {
            query = query.descending();
        }
        let got = query.collect().await.unwrap();
        let expected = sorted(members.clone(), descending);
        assert_eq!(got.len(), 80, "40 scores, 25 comments, 15 badges; no note");
        // Sort keys are unique across the collection here, so the order is fully determined.
        assert_eq!(
            sort_keys(&got),
            sort_keys(&expected),
            "descending: {descending}"
        );
        assert_eq!(got, expected);
    }
}

#[tokio::test]
async fn a_collection_top_k_is_the_brute_force_top_k() {
    let (repo, members) = table().await;
    for k in [1, 7, 30, 79, 80, 200] {
        let got = Score::query(&repo, "g1")
            .collection::<GameFeed>()
            .descending()
            .limit(k)
            .collect()
            .await
            .unwrap();
        let expected: Vec<GameFeed> = sorted(members.clone(), true).into_iter().take(k).collect();
        assert_eq!(got, expected, "top {k}");
    }
}

#[tokio::test]
async fn a_collection_pages_with_one_cursor_across_entity_types() {
    let (repo, members) = table().await;
    for size in [1, 6, 33] {
        let pages = page_to_end(|| Score::query(&repo, "g1").collection::<GameFeed>(), size).await;
        let flat: Vec<GameFeed> = pages.into_iter().flatten().collect();
        assert_eq!(flat, sorted(members.clone(), false), "pages of {size}");
    }
}

#[tokio::test]
async fn a_collection_keeps_sort_key_conditions_and_counts_only_members() {
    let (repo, members) = table().await;
    let comments = Score::query(&repo, "g1")
        .sk(Comment::sk_all())
        .collection::<GameFeed>()
        .collect()
        .await
        .unwrap();
    assert_eq!(comments.len(), 25);
    assert!(comments.iter().all(|c| matches!(c, GameFeed::Comment(_))));
    let count = Score::query(&repo, "g1")
        .collection::<GameFeed>()
        .count()
        .await
        .unwrap();
    assert_eq!(count, members.len() as u64, "notes are not counted");
}

#[tokio::test]
async fn a_gsi_collection_needs_every_member_on_the_same_gsi_layout() {
    let (repo, _) = table().await;
    // Score and Comment both write gsi1 as PLAYER#{player_id} over 4 shards.
    let feed = Score::query_gsi1(&repo, "p3")
        .collection::<PlayerFeed>()
        .collect()
        .await
        .unwrap();
    let scores = feed
        .iter()
        .filter(|f| matches!(f, PlayerFeed::Score(_)))
        .count();
    let comments = feed
        .iter()
        .filter(|f| matches!(f, PlayerFeed::Comment(_)))
        .count();
    assert_eq!(
        (scores, comments),
        (2, 8),
        "p3 in g1 and g2: 1 score, 4 comments each"
    );
    // Badge's gsi1 is BADGE#{badge}: a collection holding it cannot read PLAYER#.. keys.
    let err = Score::query_gsi1(&repo, "p3")
        .collection::<GameFeed>()
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidQuery(QueryRefusal::CollectionGsi {
                number: 1,
                member: "Badge"
            })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_cursor_of_an_entity_query_does_not_resume_a_collection() {
    let (repo, _) = table().await;
    let page = Score::query(&repo, "g1").page(5, None).await.unwrap();
    let cursor = page.cursor.expect("more scores follow");
    let err = Score::query(&repo, "g1")
        .collection::<GameFeed>()
        .page(5, Some(&cursor))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Cursor(_)), "{err}");
}
