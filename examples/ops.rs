//! An ops command line for a leaderboard's table, in a few lines: the entities it knows,
//! then `sharded_cli::Ops` does the rest.
//!
//! ```text
//! cargo run --example ops -- local                      # a local DynamoDB, prints its endpoint
//! cargo run --example ops -- plan --peak-writes 7000 --item-bytes 1024
//! cargo run --example ops -- describe --table leaderboard
//! cargo run --example ops -- report --recording hot-keys.json --output json
//! cargo run --example ops -- migrate --entity Score --table leaderboard \
//!     --endpoint-url http://127.0.0.1:8000 --write-units-per-second 300 \
//!     --checkpoint migrate.checkpoint          # add --resume to continue after a stop
//! cargo run --example ops -- remaining --entity Score --table leaderboard
//! cargo run --example ops -- migrate --entity Score --table leaderboard --segments 64 \
//!     --write-units-per-second 2000 --plan --units 16 --workers 4 > plan.json   # units
//! cargo run --example ops -- migrate --entity Score --table leaderboard \
//!     --plan-file plan.json --unit-index 3                # one unit, anywhere, any order
//! cargo run --example ops -- remaining --entity Score --table leaderboard \
//!     --plan-file plan.json                               # which units are done; removable?
//! cargo run --example ops -- layouts change --entity Play --table leaderboard \
//!     --key PLAYS#viral --n 8                   # one hot game widened online
//! cargo run --example ops -- layouts show --entity Play --table leaderboard
//! ```
//!
//! Region, credentials and endpoint come from the standard AWS configuration chain unless
//! `--region`, `--profile` or `--endpoint-url` say otherwise. Exit codes: 0 done, 1 failed,
//! 2 bad input (nothing changed), 3 work remains, 4 a layout step came too early.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

/// A game's scores, growing from 10 to 20 shards: `migrate` moves the items.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

/// A player's best score, beside the scores.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 20,
    previous_n = 10
)]
#[sk(template = "BEST#{player_id}")]
struct PersonalBest {
    game_id: String,
    player_id: String,
    score: u64,
}

/// A game's plays: every game one partition (n = 1) until one goes viral, then
/// `layouts change` widens that game alone, online, up to 64 shards.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "PLAYS#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 64
)]
#[sk(template = "PLAY#{player_id}#{at}")]
struct Play {
    game_id: String,
    player_id: String,
    at: u64,
}

fn main() -> std::process::ExitCode {
    sharded_cli::Ops::new("ops")
        .entity::<Score>()
        .entity::<PersonalBest>()
        .entity::<Play>()
        .run()
}
