//! A typed update vs a hand-written `UpdateItem` with the same expression (write-side
//! issue, target: throughput ours / raw >= 0.95x), on DynamoDB Local, no injected latency.
//!
//! `cargo bench --bench update_overhead` (rounds: `UPDATE_ROUNDS`, default 30).
//!
//! Both sides add 1 to `points` of one of 100 players on a 10-shard key, in turn, update by
//! update (A, B, B, A, ...): ours is `Player::update(&repo, "g1", player).add(f.points, 1)
//! .send()`; raw is `client.update_item()` with the key built by the generated builders (key
//! building is measured by `key_ratio`), `ADD #p :v`, and the condition ours sends
//! (`attribute_exists(pk) AND _entity = :entity`), so both send the same request. The totals
//! are checked after the run. Each side's median time per round gives the throughput ratio.

use std::time::Instant;

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;

mod common;
mod stats;
use stats::median;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "PLAYER#{player_id}")]
struct Player {
    game_id: String,
    player_id: String,
    points: u64,
}

const PLAYERS: usize = 100;
const OPS: usize = 200;

async fn ours(repo: &Repo<Player>, player: &str) {
    let f = Player::fields();
    Player::update(repo, "g1", player)
        .add(f.points, 1_u64)
        .send()
        .await
        .expect("typed update");
}

async fn raw(repo: &Repo<Player>, player: &str) {
    repo.client()
        .update_item()
        .table_name(repo.table())
        .key(
            "pk",
            AttributeValue::S(Player::pk("g1", player).expect("pk")),
        )
        .key("sk", AttributeValue::S(Player::sk(player).expect("sk")))
        .update_expression("ADD #p :v")
        .condition_expression("attribute_exists(#k) AND #e = :e")
        .expression_attribute_names("#p", "points")
        .expression_attribute_names("#k", "pk")
        .expression_attribute_names("#e", "_entity")
        .expression_attribute_values(":v", AttributeValue::N("1".into()))
        .expression_attribute_values(":e", AttributeValue::S("Player".into()))
        .send()
        .await
        .expect("raw UpdateItem");
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("UPDATE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    let local = common::backend().await;
    let repo: Repo<Player> = Repo::new(local.client().await, unique_table_name("bench-update"));
    repo.create_table().await.expect("create table");
    let players: Vec<Player> = (0..PLAYERS)
        .map(|i| Player {
            game_id: "g1".into(),
            player_id: format!("p{i:03}"),
            points: 0,
        })
        .collect();
    repo.batch_put(&players).await.expect("load");

    let mut times = [Vec::new(), Vec::new()];
    let warm_up = 3;
    for round in 0..rounds + warm_up {
        let mut elapsed = [0.0_f64; 2];
        for op in 0..OPS {
            let player = &players[op % PLAYERS].player_id;
            // A, B, B, A: neither side always goes first.
            let order = if op % 2 == round % 2 { [0, 1] } else { [1, 0] };
            for side in order {
                let start = Instant::now();
                match side {
                    0 => ours(&repo, player).await,
                    _ => raw(&repo, player).await,
                }
                elapsed[side] += start.elapsed().as_secs_f64();
            }
        }
        if round >= warm_up {
            times[0].push(elapsed[0]);
            times[1].push(elapsed[1]);
        }
    }
    let total: u64 = Player::query(&repo, "g1")
        .collect()
        .await
        .expect("read back")
        .iter()
        .map(|p| p.points)
        .sum();
    assert_eq!(
        total as usize,
        2 * OPS * (rounds + warm_up),
        "every add counted"
    );
    let (o, r) = (median(&times[0]), median(&times[1]));
    let per_round: Vec<f64> = times[0].iter().zip(&times[1]).map(|(o, r)| r / o).collect();
    println!("{rounds} rounds of {OPS} updates per side after {warm_up} warm-up rounds");
    println!("| side | ms per update (median round) |");
    println!("|---|---:|");
    println!(
        "| ours: Player::update(..).add(f.points, 1).send() | {:.3} |",
        o * 1000.0 / OPS as f64
    );
    println!(
        "| raw: update_item() with the same expression | {:.3} |",
        r * 1000.0 / OPS as f64
    );
    println!(
        "throughput ours / raw: {:.3}x of medians, {:.3}x median of round ratios (target >= 0.95x)",
        r / o,
        median(&per_round)
    );
}
