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

async fn add(repo: &Repo<Player>) {
    let f = Player::fields();
    let _ = Player::update(repo, "g1", "p1").add(f.nickname, "x").send().await;
}

fn main() {}
