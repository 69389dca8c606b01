//! A table declared once and the declarations an adopted table needs: other key and index
//! names, a tag of another library, no tag, a move marker of its own, shard suffixes, a
//! previous layout of unknown placement, a field named like a generated parameter.
use serde::{Deserialize, Serialize};
use sharded::{ShardedCollection, ShardedEntity, ShardedTable};

#[derive(ShardedTable)]
#[table(name = "Leaderboards", pk = "PK", sk = "SK", tag = "__edb_e__", recognize = "tag_or_key")]
#[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
#[gsi2(index = "ByRegion")]
struct Leaderboards;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", recognize = "key", move_attribute = "_moved")]
struct Untagged;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = Leaderboards, entity = "score")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10, suffix = "#SHARD_{shard}")]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4, suffix = "#{shard:02}")]
#[gsi2(pk = [region], sk = [score], shard = 2)]
struct Score {
    game_id: String,
    player_id: String,
    region: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = Leaderboards, entity = "comment")]
#[pk(template = "GAME#{game_id}", shard = "hash(comment_id)", n = 10, suffix = "#SHARD_{shard}")]
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

#[derive(ShardedEntity, Serialize, Deserialize)]
#[sharded(table = Untagged)]
#[pk(
    template = "STATUS#{status}",
    shard = "hash(user_id)",
    n = 10,
    suffix = "#SHARD#{shard}",
    previous_n = 10,
    previous_shard = "unknown",
    previous_suffix = "#SHARD_{shard}"
)]
#[sk(template = "USER#{user_id}")]
struct ActiveUser {
    status: String,
    user_id: String,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "EVENTS#{shard}", shard = "hash(repo)", n = 100, suffix = "#{shard:02}")]
#[sk(template = "E#{repo}#{key}")]
struct Event {
    shard: String,
    repo: String,
    key: String,
}

macro_rules! in_table {
    ($table:ty) => {
        #[derive(ShardedEntity, Serialize, Deserialize)]
        #[sharded(table = $table)]
        #[pk(template = "DOC#{id}")]
        struct Doc {
            id: String,
        }
    };
}
in_table!(Untagged);

fn main() -> Result<(), sharded::KeyError> {
    assert_eq!(Score::pk_on_shard("g1", 7)?, "GAME#g1#SHARD_7");
    assert_eq!(Score::SCHEMA.pk.attribute, "PK");
    assert_eq!(Score::SCHEMA.gsis[0].index_name, "GSI1");
    assert_eq!(Score::SCHEMA.gsis[1].index_name, "ByRegion");
    assert_eq!(Score::SCHEMA.table, Some("Leaderboards"));
    assert_eq!(<GamePage as sharded::query::QuerySource>::ENTITIES, ["score", "comment"]);
    assert_eq!(ActiveUser::pk_on_shard("ACTIVE", 3)?, "STATUS#ACTIVE#SHARD#3");
    assert_eq!(Event::pk_on_shard("east", 7)?, "EVENTS#east#07");
    assert_eq!(Doc::SCHEMA.pk.attribute, "PK");
    assert_eq!(Doc::SCHEMA.move_attribute(), "_moved");
    assert_eq!(Score::SCHEMA.move_attribute(), sharded::schema::MOVE_ATTRIBUTE);
    Ok(())
}
