//! A GSI sharded by a field hash with its own index name, next to an identity-sharded GSI and
//! a single-partition GSI whose reason is given.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = "game-events", entity = "Event")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id, seq)", n = 16)]
#[sk(template = "SEQ#{seq}")]
#[gsi1(pk = "DAY#{day}", shard = "hash(player_id)", n = 4, index = "by-day")]
#[gsi2(pk = "PLAYER#{player_id}", sk = "SEQ#{seq}", shard = 2)]
#[gsi3(pk = "ALL_EVENTS", single_partition = "an admin view, < 10 writes/s")]
struct GameEvent {
    game_id: String,
    player_id: String,
    seq: u64,
    day: String,
    payload: String,
}

fn main() {
    let def = GameEvent::table_definition();
    assert_eq!(def.indexes[0].name, "by-day");
    assert_eq!(def.indexes[1].name, "gsi2");
    let shard = GameEvent::gsi1_shard_for("p1").unwrap();
    assert!(shard < 4);
    assert_eq!(
        GameEvent::gsi1_pk("2026-06-22", "p1").unwrap(),
        format!("DAY#2026-06-22#{shard}")
    );
}
