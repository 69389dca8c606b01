//! Typed updates: each operation against the stored item, the conditions that keep an update
//! from creating or clobbering, and GSI keys rewritten so the index never goes stale.

use serde::{Deserialize, Serialize};
use sharded::update::UpdateRefusal;
use sharded::{Error, Repo, ShardedEntity};

use crate::support::repo;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "PLAYER#{player_id}")]
#[gsi1(pk = "COUNTRY#{country}", sk = "POINTS#{points}", shard = 4)]
struct Player {
    game_id: String,
    player_id: String,
    country: String,
    points: u64,
    nickname: Option<String>,
    badges: Vec<String>,
    #[serde(rename = "seenAt", skip_serializing_if = "Option::is_none")]
    seen_at: Option<String>,
}

fn player(id: &str, country: &str, points: u64) -> Player {
    Player {
        game_id: "g1".into(),
        player_id: id.into(),
        country: country.into(),
        points,
        nickname: Some("nick".into()),
        badges: vec!["rookie".into()],
        seen_at: None,
    }
}

async fn table() -> Repo<Player> {
    let repo = repo::<Player>("update").await;
    repo.batch_put(&[
        player("p1", "FR", 10),
        player("p2", "FR", 20),
        player("p3", "DE", 30),
    ])
    .await
    .unwrap();
    repo
}

#[tokio::test]
async fn every_operation_changes_the_stored_item_as_it_says() {
    let repo = table().await;
    let f = Player::fields();
    let returned = Player::update(&repo, "g1", "p1")
        .append(f.badges, vec!["first-win".to_owned()])
        .remove(f.nickname)
        .set_if_absent(f.seen_at, Some("2026-11-22".to_owned()))
        .send_returning()
        .await
        .unwrap();
    let stored = Player::get(&repo, "g1", "p1").await.unwrap().unwrap();
    assert_eq!(returned, stored);
    assert_eq!(stored.badges, ["rookie", "first-win"]);
    assert_eq!(stored.nickname, None);
    assert_eq!(stored.seen_at.as_deref(), Some("2026-11-22"));
    // set_if_absent keeps a value that is there.
    Player::update(&repo, "g1", "p1")
        .set_if_absent(f.seen_at, Some("later".to_owned()))
        .send()
        .await
        .unwrap();
    let stored = Player::get(&repo, "g1", "p1").await.unwrap().unwrap();
    assert_eq!(stored.seen_at.as_deref(), Some("2026-11-22"));
}

#[tokio::test]
async fn an_update_never_creates_an_item_and_reports_a_false_condition() {
    let repo = table().await;
    let f = Player::fields();
    let missing = Player::update(&repo, "g1", "nobody")
        .set(f.nickname, Some("x".to_owned()))
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, Error::ConditionFailed { current: None, .. }),
        "{missing}"
    );
    assert_eq!(Player::get(&repo, "g1", "nobody").await.unwrap(), None);

    let refused = Player::update(&repo, "g1", "p2")
        .set(f.nickname, Some("rich".to_owned()))
        .condition(f.points.gt(1_000))
        .send()
        .await
        .unwrap_err();
    match &refused {
        Error::ConditionFailed {
            current: Some(item),
            ..
        } => assert_eq!(
            Player::from_item(item.clone()).unwrap(),
            player("p2", "FR", 20)
        ),
        other => panic!("{other}"),
    }
    assert_eq!(
        Player::get(&repo, "g1", "p2").await.unwrap().unwrap(),
        player("p2", "FR", 20),
        "nothing written"
    );
}

#[tokio::test]
async fn a_gsi_key_field_update_moves_the_item_in_the_index() {
    let repo = table().await;
    let f = Player::fields();
    Player::update(&repo, "g1", "p1")
        .set(f.country, "DE")
        .set(f.points, 99_u64)
        .send()
        .await
        .unwrap();
    let fr: Vec<String> = Player::query_gsi1(&repo, "FR")
        .collect()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.player_id)
        .collect();
    let de: Vec<(String, u64)> = Player::query_gsi1(&repo, "DE")
        .descending()
        .collect()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.player_id, p.points))
        .collect();
    assert_eq!(fr, ["p2"]);
    assert_eq!(de, [("p1".to_owned(), 99), ("p3".to_owned(), 30)]);
    // The stored GSI keys are exactly what a put of the same item writes.
    let stored = Player::get(&repo, "g1", "p1").await.unwrap().unwrap();
    let item = repo
        .client()
        .get_item()
        .table_name(repo.table())
        .key(
            "pk",
            sharded::aws_sdk_dynamodb::types::AttributeValue::S(Player::pk("g1", "p1").unwrap()),
        )
        .key(
            "sk",
            sharded::aws_sdk_dynamodb::types::AttributeValue::S(Player::sk("p1").unwrap()),
        )
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    let keys = stored.item_keys().unwrap();
    let (gsi_pk, gsi_sk) = keys.gsis[0].clone();
    assert_eq!(item["gsi1pk"].as_s().unwrap(), &gsi_pk);
    assert_eq!(item["gsi1sk"].as_s().unwrap(), gsi_sk.as_ref().unwrap());
}

#[tokio::test]
async fn a_gsi_key_that_cannot_be_rebuilt_is_refused_before_sending() {
    let repo = table().await;
    let f = Player::fields();
    // gsi1 is built from country and points: changing one needs the other's value.
    let partial = Player::update(&repo, "g1", "p1")
        .set(f.country, "DE")
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &partial,
            Error::InvalidUpdate(UpdateRefusal::GsiFieldNotSet {
                attribute: "points",
                gsi,
                ..
            }) if gsi.contains("gsi1")
        ),
        "{partial}"
    );
    // ADD's result is only known to DynamoDB.
    let added = Player::update(&repo, "g1", "p1")
        .add(f.points, 5_u64)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            added,
            Error::InvalidUpdate(UpdateRefusal::GsiFieldNotSet { .. })
        ),
        "{added}"
    );
    assert_eq!(
        Player::get(&repo, "g1", "p1").await.unwrap().unwrap(),
        player("p1", "FR", 10),
        "nothing written"
    );
    let twice = Player::update(&repo, "g1", "p1")
        .set(f.nickname, None)
        .remove(f.nickname)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            twice,
            Error::InvalidUpdate(UpdateRefusal::ChangedTwice {
                attribute: "nickname",
                ..
            })
        ),
        "{twice}"
    );
}

/// An entity whose numbers are not in a GSI key: `add` works on them.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "USER#{user_id}")]
struct Wallet {
    user_id: String,
    coins: i64,
    spent: u32,
}

#[tokio::test]
async fn add_adds_and_subtracts_numbers() {
    let repo = repo::<Wallet>("update-add").await;
    repo.put(&Wallet {
        user_id: "u1".into(),
        coins: 10,
        spent: 0,
    })
    .await
    .unwrap();
    let f = Wallet::fields();
    let after = Wallet::update(&repo, "u1")
        .add(f.coins, -3_i64)
        .add(f.spent, 3_u32)
        .send_returning()
        .await
        .unwrap();
    assert_eq!(after.coins, 7);
    assert_eq!(after.spent, 3);
}
