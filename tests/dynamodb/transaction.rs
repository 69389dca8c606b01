//! Transactions: all or nothing, checked before sending, cancellations named by action and
//! key, moves of an item to a new key, and the request token that makes a retry harmless.

use serde::{Deserialize, Serialize};
use sharded::transaction::{Transaction, TransactionRefusal};
use sharded::{Error, Repo, ShardedEntity};

use crate::support::repo;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "USER#{user_id}")]
struct Wallet {
    user_id: String,
    coins: i64,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "PLAYER#{player_id}")]
struct Seat {
    game_id: String,
    player_id: String,
    table_no: u32,
}

fn wallet(user: &str, coins: i64) -> Wallet {
    Wallet {
        user_id: user.into(),
        coins,
    }
}

async fn wallets() -> Repo<Wallet> {
    let repo = repo::<Wallet>("tx").await;
    repo.batch_put(&[wallet("alice", 10), wallet("bob", 0)])
        .await
        .unwrap();
    repo
}

fn transfer(repo: &Repo<Wallet>, amount: i64) -> Transaction {
    let f = Wallet::fields();
    repo.transaction()
        .update(
            Wallet::update(repo, "alice")
                .add(f.coins, -amount)
                .condition(f.coins.ge(amount)),
        )
        .update(Wallet::update(repo, "bob").add(f.coins, amount))
}

async fn coins(repo: &Repo<Wallet>, user: &str) -> i64 {
    Wallet::get(repo, user).await.unwrap().unwrap().coins
}

#[tokio::test]
async fn a_transaction_applies_all_or_nothing_and_names_the_failed_action() {
    let repo = wallets().await;
    transfer(&repo, 7).commit().await.unwrap();
    assert_eq!(
        (coins(&repo, "alice").await, coins(&repo, "bob").await),
        (3, 7)
    );
    let err = transfer(&repo, 5).commit().await.unwrap_err();
    match &err {
        Error::TransactionCanceled { actions } => {
            assert_eq!(actions.len(), 1, "{err}");
            let failed = &actions[0];
            assert_eq!(
                (failed.index, failed.kind, failed.entity),
                (0, "update", "Wallet")
            );
            assert_eq!(failed.code, "ConditionalCheckFailed");
            assert!(err.to_string().contains("USER#alice"), "{err}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        (coins(&repo, "alice").await, coins(&repo, "bob").await),
        (3, 7),
        "nothing applied"
    );
}

#[tokio::test]
async fn transactions_are_checked_before_sending() {
    let repo = wallets().await;
    let f = Wallet::fields();
    let twice = repo
        .transaction()
        .put(&wallet("carol", 1))
        .update(Wallet::update(&repo, "carol").add(f.coins, 1))
        .commit()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &twice,
            Error::InvalidTransaction(TransactionRefusal::SameKey {
                index: 1,
                kind: "update",
                ..
            })
        ),
        "{twice}"
    );
    let mut big = repo.transaction();
    for i in 0..101 {
        big = big.put(&wallet(&format!("u{i}"), i));
    }
    let err = big.commit().await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidTransaction(TransactionRefusal::TooManyActions {
                actions: 101,
                max: 100
            })
        ),
        "{err}"
    );
    let empty = repo.transaction().commit().await.unwrap_err();
    assert!(matches!(
        empty,
        Error::InvalidTransaction(TransactionRefusal::Empty)
    ));
    assert_eq!(
        Wallet::get(&repo, "carol").await.unwrap(),
        None,
        "nothing sent"
    );
}

#[tokio::test]
async fn a_move_changes_a_key_field_atomically_and_never_onto_a_taken_key() {
    let repo = repo::<Seat>("tx-move").await;
    let seat = |player: &str, table_no| Seat {
        game_id: "g1".into(),
        player_id: player.into(),
        table_no,
    };
    repo.batch_put(&[seat("p1", 1), seat("p2", 2)])
        .await
        .unwrap();
    repo.transaction()
        .move_item(&seat("p1", 1), &seat("p9", 1))
        .commit()
        .await
        .unwrap();
    assert_eq!(Seat::get(&repo, "g1", "p1").await.unwrap(), None);
    assert_eq!(
        Seat::get(&repo, "g1", "p9").await.unwrap(),
        Some(seat("p9", 1))
    );
    // p2's key is taken: the move is canceled as a whole.
    let err = repo
        .transaction()
        .move_item(&seat("p9", 1), &seat("p2", 1))
        .commit()
        .await
        .unwrap_err();
    match &err {
        Error::TransactionCanceled { actions } => {
            assert_eq!(actions.len(), 1);
            // The move is the transaction's first call (index 0); its put failed.
            assert_eq!((actions[0].index, actions[0].kind), (0, "put"));
            let current = Seat::from_item(actions[0].current.clone().unwrap()).unwrap();
            assert_eq!(current, seat("p2", 2));
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        Seat::get(&repo, "g1", "p9").await.unwrap(),
        Some(seat("p9", 1))
    );
    assert_eq!(
        Seat::get(&repo, "g1", "p2").await.unwrap(),
        Some(seat("p2", 2))
    );
}

#[tokio::test]
async fn a_commit_resent_with_its_token_is_applied_once() {
    let repo = wallets().await;
    let token = "transfer-0001";
    transfer(&repo, 1).with_token(token).commit().await.unwrap();
    // The same request again, as the SDK sends it when a response was lost.
    transfer(&repo, 1).with_token(token).commit().await.unwrap();
    assert_eq!(
        (coins(&repo, "alice").await, coins(&repo, "bob").await),
        (9, 1)
    );
}

/// Another entity of the wallets' table (a partition key only, as theirs).
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "PROFILE#{user_id}")]
struct Profile {
    user_id: String,
    name: String,
}

#[tokio::test]
async fn a_transactional_read_returns_each_item_by_its_slot() {
    let repo = wallets().await;
    let profile = Profile {
        user_id: "alice".into(),
        name: "Alice".into(),
    };
    repo.for_entity::<Profile>().put(&profile).await.unwrap();
    let alice = Wallet::key("alice").unwrap();
    let nobody = Wallet::key("nobody").unwrap();
    let alice_profile = Profile::key("alice").unwrap();
    let read = repo
        .transact_get()
        .get(&alice)
        .get(&nobody)
        .get(&alice_profile);
    let mut answer = read.send().await.unwrap();
    assert_eq!(answer.take(&alice).unwrap(), Some(wallet("alice", 10)));
    assert_eq!(answer.take(&nobody).unwrap(), None);
    assert_eq!(answer.take(&alice_profile).unwrap(), Some(profile));
    // Each item is taken once.
    assert_eq!(answer.take(&alice).unwrap(), None);
    let empty = repo.transact_get().send().await.unwrap_err();
    assert!(matches!(
        empty,
        Error::InvalidTransaction(TransactionRefusal::Gets { gets: 0, .. })
    ));
    // One key added twice is refused before sending: the answer finds items by key.
    let twice = repo
        .transact_get()
        .get(&alice)
        .get(&alice)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &twice,
            Error::InvalidTransaction(TransactionRefusal::ReadTwice {
                entity: "Wallet",
                ..
            })
        ),
        "{twice:?}"
    );
}

#[tokio::test]
async fn puts_and_deletes_take_typed_conditions() {
    let repo = wallets().await;
    let f = Wallet::fields();
    // alice holds 10: a put conditioned on 99 is refused with the stored item.
    let refused = repo
        .put_if(&wallet("alice", 0), f.coins.eq(99))
        .await
        .unwrap_err();
    match &refused {
        Error::ConditionFailed {
            current: Some(item),
            ..
        } => assert_eq!(
            Wallet::from_item(item.clone()).unwrap(),
            wallet("alice", 10)
        ),
        other => panic!("{other}"),
    }
    repo.put_if(&wallet("alice", 3), f.coins.eq(10))
        .await
        .unwrap();
    assert_eq!(coins(&repo, "alice").await, 3);
    // bob holds 0: only an empty wallet may be deleted.
    let kept = repo
        .delete_if(&wallet("alice", 3), f.coins.eq(0))
        .await
        .unwrap_err();
    assert!(matches!(kept, Error::ConditionFailed { .. }), "{kept}");
    repo.delete_if(&wallet("bob", 0), f.coins.eq(0))
        .await
        .unwrap();
    assert_eq!(Wallet::get(&repo, "bob").await.unwrap(), None);
    let gone = repo
        .delete_if(&wallet("bob", 0), f.coins.eq(0))
        .await
        .unwrap_err();
    assert!(
        matches!(gone, Error::ConditionFailed { current: None, .. }),
        "{gone}"
    );
}
