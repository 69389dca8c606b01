//! A layout decided per logical key (`max_n`, issue 27) compiles, hashed and random: the schema
//! carries the maximum, the static keys are the default layout's (suffixed, also at `n = 1`),
//! and an item's shard input places it where a fixed layout of that count would.
use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 1,
    max_n = 64
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

/// `Score`'s template and hash at a fixed 20 shards: where a key widened to 20 puts an item.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct FixedScore {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "ORG#{org}",
    shard = "random",
    n = 2,
    max_n = 40,
    suffix = "#{shard:02}"
)]
#[sk(template = "{at}#{id}")]
struct Event {
    org: String,
    at: u64,
    id: String,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(
    template = "ORG#{org}",
    shard = "random",
    n = 20,
    suffix = "#{shard:02}"
)]
#[sk(template = "{at}#{id}")]
struct FixedEvent {
    org: String,
    at: u64,
    id: String,
}

#[allow(dead_code)]
async fn uses(scores: Repo<Score>, events: Repo<Event>) -> Result<(), sharded::Error> {
    let _ = Score::get(&scores, "g1", "p1", 3).await?;
    Score::delete(&scores, "g1", "p1", 3).await?;
    let _ = Event::get(&events, "o1", 5, "e1").await?;
    let _ = Event::get_from_all_shards(&events, "o1", 5, "e1").await?;
    Ok(())
}

fn main() -> Result<(), sharded::KeyError> {
    let per_key = Score::SCHEMA
        .pk
        .per_key
        .expect("max_n declares a per-key layout");
    assert_eq!(per_key.max_n, 64);
    assert_eq!(Event::SCHEMA.pk.per_key.map(|p| p.max_n), Some(40));
    assert_eq!(FixedScore::SCHEMA.pk.per_key, None);

    let score = Score {
        game_id: "g1".into(),
        player_id: "p1".into(),
        score: 3,
    };
    // The default layout, `n = 1`, still spells its one shard.
    assert_eq!(score.item_keys()?.pk, "GAME#g1#0");
    assert_eq!(Score::pk("g1", "p1")?, "GAME#g1#0");
    let input = score
        .__shard_input()?
        .expect("a per-key entity has a shard input");
    assert_eq!(input.key_under(&Score::SCHEMA.pk, 1), "GAME#g1#0");
    assert_eq!(
        input.key_under(&Score::SCHEMA.pk, 20),
        FixedScore::pk("g1", "p1")?
    );
    let key = Score::key("g1", "p1", 3)?;
    assert_eq!(key.partition_key(), "GAME#g1#0");
    assert_eq!(key.sort_key(), Some(Score::sk(3, "p1")?.as_str()));
    assert_eq!(key.previous_partition_key(), None);
    // Every player's item under 20 shards is where the fixed layout of 20 puts it.
    for player in ["p1", "p2", "player-3", "x"] {
        let score = Score {
            game_id: "g1".into(),
            player_id: player.into(),
            score: 7,
        };
        let input = score.__shard_input()?.expect("per key");
        assert_eq!(
            input.key_under(&Score::SCHEMA.pk, 20),
            FixedScore::pk("g1", player)?
        );
    }

    let event = Event {
        org: "o1".into(),
        at: 5,
        id: "e1".into(),
    };
    let input = event
        .__shard_input()?
        .expect("a per-key entity has a shard input");
    assert_eq!(event.item_keys()?.pk, input.key_under(&Event::SCHEMA.pk, 2));
    assert_eq!(Event::pk("o1", 5, "e1")?, event.item_keys()?.pk);
    assert_eq!(
        input.key_under(&Event::SCHEMA.pk, 20),
        FixedEvent::pk("o1", 5, "e1")?
    );
    assert_eq!(
        Event::key("o1", 5, "e1")?.partition_key(),
        Event::pk("o1", 5, "e1")?
    );
    // An entity without `max_n` has none.
    let fixed = FixedScore {
        game_id: "g1".into(),
        player_id: "p1".into(),
        score: 3,
    };
    assert!(fixed.__shard_input()?.is_none());
    Ok(())
}
