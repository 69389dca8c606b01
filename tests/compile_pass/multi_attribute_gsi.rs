// An index keyed by the fields' own attributes: serde's names are the attribute names, the
// shard attribute and the query are renamed, and every sort condition shape compiles.
use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[pk(template = "RUN#{run_id}")]
#[gsi3(
    pk = [game_id, region],
    sk = [score, player_id],
    shard = 8,
    shard_attribute = "byGameShard",
    query = "query_by_game",
    index = "by-game"
)]
struct Run {
    run_id: String,
    game_id: String,
    region: String,
    player_id: String,
    score: i64,
}

fn main() {
    let _ = |repo: &sharded::Repo<Run>| {
        let g = String::from("g1");
        Run::query_by_game(repo, &g, "eu")
            .sk(Run::gsi3_sort().eq(10).begins_with("p"))
            .descending()
            .limit(10)
    };
    let _ = |repo: &sharded::Repo<Run>| Run::query_by_game(repo, "g1", "eu").sk(Run::gsi3_sort().between(-5, 5));
    let _ = |repo: &sharded::Repo<Run>| Run::query_by_game(repo, "g1", "eu").sk(Run::gsi3_sort().eq(1).eq("p1"));
    let gsi = <Run as ShardedEntity>::SCHEMA.gsi(3).unwrap();
    assert_eq!(gsi.index_name, "by-game");
    let key = gsi.attributes.unwrap();
    assert_eq!(key.shard_attribute, "byGameShard");
    assert_eq!(key.partition[0].name, "gameId");
    assert_eq!(key.sort[1].name, "playerId");
}
