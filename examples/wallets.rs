//! Typed writes on a local DynamoDB: players' wallets in one table, a typed update that
//! rewrites a GSI key, a transfer between wallets as one transaction (and the one that is
//! refused), a move of an item to a new key, and a versioned profile edited by two writers
//! at once (exactly one wins).
//!
//! ```text
//! cargo run --example wallets
//! ```

use serde::{Deserialize, Serialize};
use sharded::{Error, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};

/// A player's coins, sharded by player under the game; indexed by league and coins.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
#[sk(template = "WALLET#{player_id}")]
#[gsi1(pk = "LEAGUE#{league}", sk = "COINS#{coins}", shard = 2)]
struct Wallet {
    game_id: String,
    player_id: String,
    league: String,
    coins: u64,
    history: Vec<String>,
}

/// A player's profile, edited with optimistic locking.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "PROFILE#{player_id}")]
struct Profile {
    player_id: String,
    bio: String,
    #[sharded(version)]
    version: u64,
    #[sharded(updated_at)]
    updated: Option<u64>,
}

fn wallet(player: &str, coins: u64) -> Wallet {
    Wallet {
        game_id: "g1".into(),
        player_id: player.into(),
        league: "bronze".into(),
        coins,
        history: Vec::new(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let local = Backend::shared().await?;
    let repo: Repo<Wallet> = Repo::new(local.client().await, unique_table_name("wallets"));
    repo.create_table().await?;
    repo.batch_put(&[wallet("ana", 100), wallet("bo", 20)])
        .await?;
    let f = Wallet::fields();

    // A typed update: the league and coins are gsi1's key, so both are set and the index
    // entry moves with them.
    let promoted = Wallet::update(&repo, "g1", "ana")
        .set(f.league, "silver")
        .set(f.coins, 150_u64)
        .append(f.history, vec!["promoted".to_owned()])
        .send_returning()
        .await?;
    println!("ana after the update: {promoted:?}");
    let silver: Vec<String> = Wallet::query_gsi1(&repo, "silver")
        .collect()
        .await?
        .into_iter()
        .map(|w| w.player_id)
        .collect();
    println!("silver league (gsi1): {silver:?}");

    // A transfer of 30 coins: both updates or neither. Coins are in gsi1's key, so the
    // transfer sets the new balances (read first) under a condition that they did not move.
    let transfer = |from: &Wallet, to: &Wallet, amount: u64| {
        repo.transaction()
            .update(
                Wallet::update(&repo, "g1", &from.player_id)
                    .set(f.league, from.league.as_str())
                    .set(f.coins, from.coins - amount.min(from.coins))
                    .condition(f.coins.eq(from.coins).and(f.coins.ge(amount))),
            )
            .update(
                Wallet::update(&repo, "g1", &to.player_id)
                    .set(f.league, to.league.as_str())
                    .set(f.coins, to.coins + amount)
                    .condition(f.coins.eq(to.coins)),
            )
    };
    let ana = Wallet::get(&repo, "g1", "ana").await?.expect("ana");
    let bo = Wallet::get(&repo, "g1", "bo").await?.expect("bo");
    transfer(&bo, &ana, 20).commit().await?;
    println!("bo sent ana 20 coins in one transaction");
    let bo = Wallet::get(&repo, "g1", "bo").await?.expect("bo");
    let ana = Wallet::get(&repo, "g1", "ana").await?.expect("ana");
    // bo has 0 coins left: the first action's condition fails, and neither is applied.
    match transfer(&bo, &ana, 5).commit().await {
        Err(Error::TransactionCanceled { actions }) => {
            for a in actions {
                println!(
                    "refused, nothing applied: action {} ({} {}) {}",
                    a.index, a.kind, a.key, a.code
                );
            }
        }
        other => println!("unexpected: {other:?}"),
    }

    // A key field changes by moving the item: delete the old key, put the new one, atomically.
    let bo = Wallet::get(&repo, "g1", "bo").await?.expect("bo");
    let renamed = Wallet {
        player_id: "bobby".into(),
        ..bo.clone()
    };
    repo.transaction().move_item(&bo, &renamed).commit().await?;
    println!(
        "bo moved to bobby: bo {:?}, bobby {:?}",
        Wallet::get(&repo, "g1", "bo").await?.map(|w| w.coins),
        Wallet::get(&repo, "g1", "bobby").await?.map(|w| w.coins)
    );

    // A versioned item: two editors read version 1 and save at once; one wins, the other is
    // told to read again.
    let profiles: Repo<Profile> = Repo::new(repo.client().clone(), unique_table_name("profiles"));
    profiles.create_table().await?;
    profiles
        .put(&Profile {
            player_id: "ana".into(),
            bio: "new here".into(),
            version: 0,
            updated: None,
        })
        .await?;
    let read = Profile::get(&profiles, "ana")
        .await?
        .expect("ana's profile");
    let edit = |bio: &str| Profile {
        bio: bio.into(),
        ..read.clone()
    };
    let (one, other) = (edit("speedrunner"), edit("collector"));
    let (first, second) = tokio::join!(profiles.put(&one), profiles.put(&other));
    for result in [first, second] {
        match result {
            Ok(()) => println!("an editor saved version {}", read.version + 1),
            Err(e @ Error::VersionConflict { .. }) => println!("the other was refused: {e}"),
            Err(e) => return Err(e.into()),
        }
    }
    let stored = Profile::get(&profiles, "ana")
        .await?
        .expect("ana's profile");
    println!("stored: {:?} at version {}", stored.bio, stored.version);
    Ok(())
}
