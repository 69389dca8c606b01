//! The entities of the tests: the leaderboard and neighbours sharing its table.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

/// The example.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
pub struct Score {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
    pub at: String,
}

/// Shares `Score`'s partitions (same template and shards) in the same table.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "COMMENT#{id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "COMMENT#{id}", shard = 4)]
pub struct Comment {
    pub game_id: String,
    pub player_id: String,
    pub id: String,
    pub text: String,
}

/// Shares the partitions too, with a sort key that has no literal prefix: only the entity
/// attribute tells it apart.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "{player_id}#BADGE")]
#[gsi1(pk = "BADGE#{badge}", shard = 4)]
pub struct Badge {
    pub game_id: String,
    pub player_id: String,
    pub badge: String,
}

/// Same template as `Score` with another shard count: its cursors must not fit `Score`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
pub struct ScoreN20 {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
    pub at: String,
}

/// Sort keys that tie across shards: `minute` repeats, the shard comes from `id`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "STREAM#{stream}", shard = "hash(id)", n = 8)]
#[sk(template = "MIN#{minute}#{id}")]
#[gsi1(pk = "TIES#{stream}", sk = "MIN#{minute}", shard = 4)]
pub struct Event {
    pub stream: String,
    pub id: String,
    pub minute: u32,
}

/// Randomly sharded: point lookups must ask every shard.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "LOG#{day}", shard = "random", n = 6)]
#[sk(template = "{at}#{id}")]
pub struct LogLine {
    pub day: String,
    pub at: String,
    pub id: String,
    pub message: String,
}

pub fn score(game: &str, player: &str, points: u64) -> Score {
    Score {
        game_id: game.into(),
        player_id: player.into(),
        score: points,
        at: format!("2026-06-22T01:{:02}:00Z", points % 60),
    }
}
