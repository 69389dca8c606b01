use serde::{Deserialize, Serialize};
use sharded::{ShardedEntity, ShardedProjection};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(id)", n = 10)]
#[sk(template = "COMMENT#{id}")]
struct Comment {
    game_id: String,
    id: String,
}

#[derive(ShardedProjection, Deserialize)]
#[projection(of = Comment)]
struct CommentId {
    id: String,
}

async fn lines(repo: &sharded::Repo<Score>) {
    let _ = Score::query(repo, "g1").project::<CommentId>().collect().await;
}

fn main() {}
