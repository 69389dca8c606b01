//! `#[sharded(crate = "...")]`: a crate that re-exports `sharded` under another path points
//! the generated code at it; nothing named `sharded` needs to be in scope.

mod my_facade {
    pub use ::sharded as inner;
}

use my_facade::inner::ShardedEntity;
use serde::{Deserialize, Serialize};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(crate = "my_facade::inner")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

mod nested {
    use super::my_facade::inner::ShardedEntity;
    use serde::{Deserialize, Serialize};

    /// From another module, a path from the crate root.
    #[derive(ShardedEntity, Serialize, Deserialize)]
    #[sharded(crate = "crate::my_facade::inner")]
    #[pk(template = "USER#{user_id}")]
    pub struct User {
        pub user_id: String,
    }
}

fn main() {
    let shard = Score::shard_for("p1").unwrap();
    assert_eq!(Score::pk("g1", "p1").unwrap(), format!("GAME#g1#{shard}"));
    assert_eq!(Score::sk(7).unwrap(), "SCORE#00000000000000000007");
    assert_eq!(nested::User::pk("u1").unwrap(), "USER#u1");
}
