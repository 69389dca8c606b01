use serde::{Deserialize, Serialize};
use sharded::{ShardedCollection, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4, suffix = "#SHARD_{shard}")]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(comment_id)", n = 4)]
#[sk(template = "COMMENT#{comment_id}")]
struct Comment {
    game_id: String,
    comment_id: String,
}

#[derive(ShardedCollection)]
enum GamePage {
    Score(Score),
    Comment(Comment),
}

fn main() {}
