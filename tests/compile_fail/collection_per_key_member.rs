use serde::{Deserialize, Serialize};
use sharded::{ShardedCollection, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
#[sk(template = "SCORE#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(comment_id)", n = 1)]
#[sk(template = "COMMENT#{comment_id}")]
struct Comment {
    game_id: String,
    comment_id: String,
}

#[derive(ShardedCollection)]
enum GamePage {
    Comment(Comment),
    Score(Score),
}

fn main() {}
