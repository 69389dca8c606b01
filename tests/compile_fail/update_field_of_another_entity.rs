use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "PLAYER#{player_id}")]
struct Player {
    game_id: String,
    player_id: String,
    points: u64,
    nickname: String,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "USER#{user_id}")]
struct User {
    user_id: String,
    points: u64,
}

async fn set(repo: &Repo<Player>) {
    let _ = Player::update(repo, "g1", "p1").set(User::fields().points, 5_u64).send().await;
}

fn main() {}
