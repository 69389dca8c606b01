//! The code `#[derive(ShardedEntity)]` generates: key builders, shards, parsing, items.
//! No database needed.

use serde::{Deserialize, Serialize};
use sharded::{Error, KeyError, ShardedEntity};

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(table = "leaderboard")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "CANDIDATE#{candidate}", shard = "random", n = 10)]
#[sk(template = "VOTE#{voter}")]
struct VoteShard {
    candidate: String,
    voter: String,
    votes: i64,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "USER#{user_id}")]
#[gsi2(
    pk = "TEAM#{team}#{rank}",
    shard = "hash(user_id)",
    n = 3,
    index = "by-team"
)]
struct User {
    user_id: String,
    team: String,
    rank: i32,
    active: bool,
}

fn score(player: &str, points: u64) -> Score {
    Score {
        game_id: "g1".into(),
        player_id: player.into(),
        score: points,
        at: "2026-06-22T01:00:00Z".into(),
    }
}

#[test]
fn physical_partition_key_is_template_hash_shard() {
    let shard = Score::shard_for("player-1").unwrap();
    assert_eq!(shard, sharded::hash::shard_of_bytes(b"player-1", 10));
    assert_eq!(
        Score::pk("g1", "player-1").unwrap(),
        format!("GAME#g1#{shard}")
    );
    assert_eq!(Score::pk_logical("g1").unwrap(), "GAME#g1");
    assert_eq!(Score::pk_on_shard("g1", 7).unwrap(), "GAME#g1#7");
    assert!(matches!(
        Score::pk_on_shard("g1", 10),
        Err(KeyError::ShardOutOfRange {
            shard: 10,
            n: 10,
            ..
        })
    ));
}

#[test]
fn all_shards_of_a_logical_key() {
    let keys: Vec<String> = Score::pk_all_shards("g1").unwrap().collect();
    assert_eq!(keys.len(), 10);
    assert_eq!(keys[0], "GAME#g1#0");
    assert_eq!(keys[9], "GAME#g1#9");
    let users: Vec<String> = User::pk_all_shards("u1").unwrap().collect();
    assert_eq!(users, ["USER#u1"]);
}

#[test]
fn sort_key_orders_scores_numerically() {
    let low = Score::sk(9, "p").unwrap();
    let high = Score::sk(10, "p").unwrap();
    assert_eq!(low, "SCORE#00000000000000000009#p");
    assert!(low < high, "9 must sort before 10");
}

#[test]
fn keys_parse_back_into_typed_fields_and_shard() {
    let pk = Score::pk("g#1 x", "p1").unwrap();
    let (game, shard) = Score::parse_pk(&pk).unwrap();
    assert_eq!(game, "g#1 x");
    assert_eq!(shard, Score::shard_for("p1").unwrap());
    let (points, player) = Score::parse_sk(&Score::sk(42, "p1").unwrap()).unwrap();
    assert_eq!((points, player.as_str()), (42, "p1"));
    let (team, rank, shard) =
        User::parse_gsi2_pk(&User::gsi2_pk("red", -3, "u1").unwrap()).unwrap();
    assert_eq!((team.as_str(), rank), ("red", -3));
    assert!(shard < 3);
    assert!(Score::parse_pk("GAME#g1").is_err());
    assert!(Score::parse_pk("GAME#g1#99").is_err());
    assert!(Score::parse_sk("SCORE#42#p1").is_err());
}

#[test]
fn empty_key_values_are_refused_with_the_field_name() {
    let err = Score::pk("", "p1").unwrap_err();
    assert!(
        matches!(
            err,
            KeyError::EmptyValue {
                field: "game_id",
                ..
            }
        ),
        "{err:?}"
    );
    let err = score("", 1).to_item().unwrap_err();
    assert!(err.to_string().contains("player_id"), "{err}");
}

#[test]
fn item_has_fields_keys_gsi_keys_and_entity() {
    let s = score("player-1", 42);
    let item = s.to_item().unwrap();
    let text = |k: &str| item[k].as_s().unwrap().clone();
    assert_eq!(text("pk"), Score::pk("g1", "player-1").unwrap());
    assert_eq!(text("sk"), "SCORE#00000000000000000042#player-1");
    assert!(text("gsi1pk").starts_with("PLAYER#player-1#"));
    assert_eq!(text("gsi1sk"), "GAME#g1");
    assert_eq!(text("_entity"), "Score");
    assert_eq!(item["score"].as_n().unwrap(), "42");
    assert_eq!(Score::from_item(item).unwrap(), s);
}

#[test]
fn identity_gsi_shard_is_stable_across_puts() {
    let a = score("player-1", 42).item_keys().unwrap();
    let b = score("player-1", 42).item_keys().unwrap();
    assert_eq!(a.gsis, b.gsis);
    // Different items spread over the GSI's 4 shards.
    let mut shards = std::collections::HashSet::new();
    for i in 0..200 {
        let keys = score(&format!("p{i}"), i).item_keys().unwrap();
        let (_, shard) = Score::parse_gsi1_pk(&keys.gsis[0].0).unwrap();
        shards.insert(shard);
    }
    assert_eq!(shards.len(), 4);
}

#[test]
fn random_shards_spread_items_and_keep_each_item_on_one_shard() {
    let mut shards = std::collections::HashSet::new();
    for i in 0..500 {
        let voter = format!("v{i}");
        let key = VoteShard::pk("A", &voter).unwrap();
        let (candidate, shard) = VoteShard::parse_pk(&key).unwrap();
        assert_eq!(candidate, "A");
        // The same item is always on the same shard: the hash of its logical key and sort key.
        assert_eq!(VoteShard::pk("A", &voter).unwrap(), key);
        let identity = format!("CANDIDATE#A#{}", VoteShard::sk(&voter).unwrap());
        assert_eq!(
            shard,
            sharded::hash::shard_of_bytes(identity.as_bytes(), 10)
        );
        shards.insert(shard);
    }
    assert_eq!(shards.len(), 10);
}

#[test]
fn items_of_other_entities_are_refused() {
    let vote = VoteShard {
        candidate: "A".into(),
        voter: "v1".into(),
        votes: 3,
    };
    let item = vote.to_item().unwrap();
    match Score::from_item(item) {
        Err(Error::WrongEntity {
            expected, found, ..
        }) => {
            assert_eq!(expected, "Score");
            assert!(found.contains("VoteShard"), "{found}");
        }
        other => panic!("expected WrongEntity, got {other:?}"),
    }
    // Untagged, in a table that tags: another service's record, whatever its keys say.
    let mut no_entity = score("p", 1).to_item().unwrap();
    no_entity.remove("_entity");
    match Score::from_item(no_entity) {
        Err(Error::ForeignItem { entity, reason, .. }) => {
            assert_eq!(entity, "Score");
            assert_eq!(reason.label(), "untagged", "{reason:?}");
        }
        other => panic!("expected ForeignItem, got {other:?}"),
    }
}

#[test]
fn table_definition_has_keys_and_gsis() {
    let def = Score::table_definition();
    assert_eq!(def.partition_key, "pk");
    assert_eq!(def.sort_key, Some("sk"));
    assert_eq!(def.indexes.len(), 1);
    assert_eq!(def.indexes[0].name, "gsi1");
    assert_eq!(Score::SCHEMA.table, Some("leaderboard"));
    let users = User::table_definition();
    assert_eq!(users.indexes[0].name, "by-team");
    assert_eq!(users.indexes[0].partition_key, "gsi2pk");
    assert!(
        def.merge(&users).is_err(),
        "one has a sort key, the other not"
    );
}

#[test]
fn keys_over_dynamodb_limits_are_refused_naming_the_attribute() {
    use sharded::schema::{MAX_PARTITION_KEY_BYTES, MAX_SORT_KEY_BYTES};
    let refused = |item: Result<sharded::keys::Item, Error>| match item {
        Err(Error::Key(KeyError::KeyTooLong {
            entity,
            attribute,
            size,
            limit,
        })) => {
            assert!(size > limit);
            (entity, attribute, limit)
        }
        other => panic!("expected KeyTooLong, got {other:?}"),
    };
    // "USER#" and 2,043 bytes: exactly the limit, accepted; one byte more is refused.
    let mut user = User {
        user_id: "u".repeat(MAX_PARTITION_KEY_BYTES - 5),
        team: "t".into(),
        rank: 1,
        active: true,
    };
    assert!(user.to_item().is_ok());
    user.user_id.push('u');
    assert_eq!(
        refused(user.to_item()),
        ("User", "pk", MAX_PARTITION_KEY_BYTES)
    );
    // Counted in UTF-8 bytes, not characters: 1,100 two-byte characters are 2,200 bytes.
    let on_index = User {
        user_id: "u1".into(),
        team: "é".repeat(1_100),
        rank: 1,
        active: true,
    };
    assert_eq!(
        refused(on_index.to_item()),
        ("User", "gsi2pk", MAX_PARTITION_KEY_BYTES)
    );
    let long_sort_key = score(&"p".repeat(1_000), 1);
    assert_eq!(
        refused(long_sort_key.to_item()),
        ("Score", "sk", MAX_SORT_KEY_BYTES)
    );
}

#[test]
fn entities_whose_keys_can_meet_cannot_share_a_table() {
    /// `ORG#{org}` sharded over 4: `ORG#acme#3` is shard 3 of org acme...
    #[derive(ShardedEntity, Serialize, Deserialize)]
    #[pk(template = "ORG#{org}", shard = "hash(id)", n = 4)]
    #[sk(template = "MEMBER#{id}")]
    struct Member {
        org: String,
        id: String,
    }
    /// ... and team "3" of org acme.
    #[derive(ShardedEntity, Serialize, Deserialize)]
    #[pk(template = "ORG#{org}#{team}")]
    #[sk(template = "MEMBER#{id}")]
    struct TeamMember {
        org: String,
        team: String,
        id: String,
    }
    let conflict = Member::table_definition()
        .merge(&TeamMember::table_definition())
        .unwrap_err()
        .to_string();
    for part in [
        "Member (`ORG#{org}#<shard 0..4>` / `MEMBER#{id}`)",
        "TeamMember (`ORG#{org}#{team}` / `MEMBER#{id}`)",
        "(pk=ORG#a#0, sk=MEMBER#a)",
        "distinct literal prefix",
    ] {
        assert!(conflict.contains(part), "{part:?} missing from: {conflict}");
    }
    assert_eq!(
        Member::SCHEMA.colliding_key(TeamMember::SCHEMA),
        TeamMember::SCHEMA.colliding_key(Member::SCHEMA),
    );

    // Distinct prefixes share a table; the same entity twice is one entity.
    let table = Score::table_definition()
        .merge(&VoteShard::table_definition())
        .unwrap()
        .merge(&Score::table_definition())
        .unwrap();
    let names: Vec<&str> = table.entities().iter().map(|e| e.entity).collect();
    assert_eq!(names, ["Score", "VoteShard"]);
    // A third entity is checked against every entity merged so far.
    assert!(table.merge(&Member::table_definition()).is_ok());
    assert!(table
        .merge(&Member::table_definition())
        .unwrap()
        .merge(&TeamMember::table_definition())
        .is_err());
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "DAY#{day}")]
#[sk(template = "{at}#{seq}#END")]
struct Reading {
    day: String,
    at: String,
    seq: u32,
}

/// What DynamoDB is sent for a sort-key condition: the key-condition expression and its values.
type Sent = (&'static str, Vec<String>);

/// The conditions DynamoDB knows, as [`Sent`].
#[allow(non_snake_case)]
mod C {
    use super::Sent;

    pub fn Between(low: String, high: String) -> Sent {
        ("#sk BETWEEN :sk0 AND :sk1", vec![low, high])
    }
    pub fn BeginsWith(prefix: String) -> Sent {
        ("begins_with(#sk, :sk0)", vec![prefix])
    }
    pub fn Lt(value: String) -> Sent {
        ("#sk < :sk0", vec![value])
    }
    pub fn Le(value: String) -> Sent {
        ("#sk <= :sk0", vec![value])
    }
    pub fn Ge(value: String) -> Sent {
        ("#sk >= :sk0", vec![value])
    }
}

#[test]
fn typed_sort_key_conditions_are_generated_per_field() {
    let cond = |c: sharded::query::SortKeyCondition| -> Sent {
        let values = c.values().unwrap().into_iter().map(str::to_owned).collect();
        (c.expression().unwrap(), values)
    };
    let s = |v: u64| {
        Score::sk_prefix_score(v)
            .unwrap()
            .trim_end_matches('#')
            .to_owned()
    };
    // The first field, bounded by the literal prefix `SCORE#` and its successor `SCORE$`.
    assert_eq!(
        cond(Score::sk_sort().between(100, 200)),
        C::Between(s(100), format!("{}$", s(200)))
    );
    assert_eq!(
        cond(Score::sk_sort().ge(100)),
        C::Between(s(100), "SCORE$".into())
    );
    assert_eq!(
        cond(Score::sk_sort().lt(100)),
        C::Between("SCORE#".into(), s(100))
    );
    assert_eq!(
        cond(Score::sk_sort().eq(100).into()),
        C::BeginsWith(Score::sk_prefix_score(100).unwrap())
    );
    // Equality on the score, a range on the player (the field that ends the template).
    let p5 = Score::sk(100, "p5").unwrap();
    assert_eq!(
        cond(Score::sk_sort().eq(100).ge("p5")),
        C::Between(p5.clone(), format!("{}$", s(100)))
    );
    assert_eq!(
        cond(Score::sk_sort().eq(100).eq("p5").into()),
        C::Between(p5.clone(), p5)
    );
    // GSI sort keys get their own, prefixed like their other functions.
    assert_eq!(cond(Score::gsi1_sort().lt("g2")), C::Lt("GAME#g2".into()));
    assert_eq!(Score::gsi1_sort().ge("g2").attribute(), "gsi1sk");
    // Every key of the entity: its template's leading literal.
    assert_eq!(cond(Score::sk_all()), C::BeginsWith("SCORE#".into()));
    // No literal prefix: open at one end; a literal after the last field.
    assert_eq!(cond(Reading::sk_sort().ge("t1")), C::Ge("t1".into()));
    assert_eq!(cond(Reading::sk_sort().lt("t1")), C::Le("t1".into()));
    assert_eq!(
        cond(Reading::sk_sort().eq("t1").le(7)),
        C::Between("t1#".into(), "t1#0000000007$".into())
    );
    assert_eq!(
        cond(Reading::sk_sort().eq("t1").lt(7)),
        C::Between("t1#".into(), "t1#0000000007".into())
    );
    // Errors wait for the query.
    assert!(matches!(
        Score::sk_sort().eq(100).gt("").expression(),
        Err(KeyError::EmptyValue {
            field: "player_id",
            ..
        })
    ));
    assert!(matches!(
        Score::sk_sort().between(2, 1).expression(),
        Err(KeyError::InvertedRange { field: "score", .. })
    ));
}
