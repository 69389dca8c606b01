//! Multi-attribute sharded GSIs against DynamoDB Local.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType,
};
use serde::{Deserialize, Serialize};
use sharded::{Query, Repo, ShardedEntity};
use sharded_testkit::local::unique_table_name;

use crate::support::{client, page_to_end, repo};

fn key(name: &str, kind: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .unwrap()
}

fn attr(name: &str, kind: ScalarAttributeType) -> AttributeDefinition {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .unwrap()
}

/// DynamoDB Local takes a GSI of two HASH and two RANGE attributes and a Query naming both
/// partition attributes with `=` and a range on the last sort attribute (checked by hand,
/// without the library).
#[tokio::test]
async fn dynamodb_local_takes_multi_attribute_gsi_keys() {
    let client = client().await;
    let table = unique_table_name("ma-raw");
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .attribute_definitions(attr("pk", ScalarAttributeType::S))
        .attribute_definitions(attr("game_id", ScalarAttributeType::S))
        .attribute_definitions(attr("shard", ScalarAttributeType::N))
        .attribute_definitions(attr("score", ScalarAttributeType::N))
        .attribute_definitions(attr("player", ScalarAttributeType::S))
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("gsi1")
                .key_schema(key("game_id", KeyType::Hash))
                .key_schema(key("shard", KeyType::Hash))
                .key_schema(key("score", KeyType::Range))
                .key_schema(key("player", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("create a table with a multi-attribute GSI");
    for i in 0..20 {
        client
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S(format!("p{i}")))
            .item("game_id", AttributeValue::S("g1".into()))
            .item("shard", AttributeValue::N((i % 2).to_string()))
            .item("score", AttributeValue::N((i % 5).to_string()))
            .item("player", AttributeValue::S(format!("p{i:02}")))
            .send()
            .await
            .unwrap();
    }
    let out = client
        .query()
        .table_name(&table)
        .index_name("gsi1")
        .key_condition_expression("#g = :g AND #s = :s AND #score = :score AND #p > :p")
        .expression_attribute_names("#g", "game_id")
        .expression_attribute_names("#s", "shard")
        .expression_attribute_names("#score", "score")
        .expression_attribute_names("#p", "player")
        .expression_attribute_values(":g", AttributeValue::S("g1".into()))
        .expression_attribute_values(":s", AttributeValue::N("0".into()))
        .expression_attribute_values(":score", AttributeValue::N("2".into()))
        .expression_attribute_values(":p", AttributeValue::S("p05".into()))
        .scan_index_forward(false)
        .send()
        .await
        .expect("query a multi-attribute GSI");
    let players: Vec<String> = out
        .items()
        .iter()
        .map(|item| item["player"].as_s().unwrap().clone())
        .collect();
    // shard 0 = even i; score 2 = i % 5 == 2: i in {2, 12}; player > p05: p12.
    assert_eq!(players, ["p12"]);
    let described = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let gsi = &described.table().unwrap().global_secondary_indexes()[0];
    let names: Vec<_> = gsi
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name().to_string(), k.key_type().clone()))
        .collect();
    println!("{names:?}");
    assert_eq!(names.len(), 4);
}

/// A run of a game: its base key is the player and the match; gsi1 is keyed by the item's
/// own `game_id` and `region` (plus the shard) and sorted by `score`, `player_id`,
/// `match_id`; gsi2 is the string-keyed sharded GSI over the same data.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[pk(template = "PLAYER#{player_id}")]
#[sk(template = "MATCH#{match_id}")]
#[gsi1(pk = [game_id, region], sk = [score, player_id, match_id], shard = 4)]
#[gsi2(pk = "GAME#{game_id}", sk = "S#{score}#{player_id}", shard = 4)]
struct Run {
    player_id: String,
    match_id: u32,
    game_id: String,
    region: String,
    score: i64,
}

const GAMES: [&str; 2] = ["g1", "g2"];
const REGIONS: [&str; 2] = ["eu", "us"];

/// `count` random runs (seeded): few games and regions, scores from -20 to 20 (many ties,
/// negative numbers), a few players with several matches each.
fn runs(seed: u64, count: usize) -> Vec<Run> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..count)
        .map(|i| Run {
            player_id: format!("p{}", rng.u32(0..25)),
            match_id: i as u32,
            game_id: GAMES[rng.usize(0..GAMES.len())].to_owned(),
            region: REGIONS[rng.usize(0..REGIONS.len())].to_owned(),
            score: rng.i64(-20..=20),
        })
        .collect()
}

/// The index order: score numerically, then player_id, then match_id.
fn index_order(a: &Run, b: &Run) -> std::cmp::Ordering {
    (a.score, &a.player_id, a.match_id).cmp(&(b.score, &b.player_id, b.match_id))
}

/// One query shape: the condition given to the query and the same predicate in memory.
struct Shape {
    name: &'static str,
    condition: Option<sharded::query::SortKeyCondition>,
    keeps: Box<dyn Fn(&Run) -> bool>,
}

fn shapes() -> Vec<Shape> {
    let shape = |name,
                 condition: Option<sharded::query::SortKeyCondition>,
                 keeps: Box<dyn Fn(&Run) -> bool>| Shape {
        name,
        condition,
        keeps,
    };
    vec![
        shape("all", None, Box::new(|_| true)),
        shape(
            "score = 3",
            Some(Run::gsi1_sort().eq(3).into()),
            Box::new(|r| r.score == 3),
        ),
        shape(
            "score < -5",
            Some(Run::gsi1_sort().lt(-5).into()),
            Box::new(|r| r.score < -5),
        ),
        shape(
            "score <= 0",
            Some(Run::gsi1_sort().le(0).into()),
            Box::new(|r| r.score <= 0),
        ),
        shape(
            "score > 7",
            Some(Run::gsi1_sort().gt(7).into()),
            Box::new(|r| r.score > 7),
        ),
        shape(
            "score >= 15",
            Some(Run::gsi1_sort().ge(15).into()),
            Box::new(|r| r.score >= 15),
        ),
        shape(
            "score between -3 and 4",
            Some(Run::gsi1_sort().between(-3, 4).into()),
            Box::new(|r| (-3..=4).contains(&r.score)),
        ),
        shape(
            "score = 2, player begins with p1",
            Some(Run::gsi1_sort().eq(2).begins_with("p1").into()),
            Box::new(|r| r.score == 2 && r.player_id.starts_with("p1")),
        ),
        shape(
            "score = -1, player > p12",
            Some(Run::gsi1_sort().eq(-1).gt("p12").into()),
            Box::new(|r| r.score == -1 && r.player_id.as_str() > "p12"),
        ),
        shape(
            "score = 5, player = p3",
            Some(Run::gsi1_sort().eq(5).eq("p3").into()),
            Box::new(|r| r.score == 5 && r.player_id == "p3"),
        ),
        shape(
            "score = 0, player = p7, match between 100 and 400",
            Some(
                Run::gsi1_sort()
                    .eq(0)
                    .eq("p7")
                    .between(100u32, 400u32)
                    .into(),
            ),
            Box::new(|r| r.score == 0 && r.player_id == "p7" && (100..=400).contains(&r.match_id)),
        ),
        shape(
            "score = 0, player = p7, match = 17",
            Some(Run::gsi1_sort().eq(0).eq("p7").eq(17u32).into()),
            Box::new(|r| r.score == 0 && r.player_id == "p7" && r.match_id == 17),
        ),
    ]
}

fn expected(all: &[Run], game: &str, region: &str, shape: &Shape, descending: bool) -> Vec<Run> {
    let mut kept: Vec<Run> = all
        .iter()
        .filter(|r| r.game_id == game && r.region == region && (shape.keeps)(r))
        .cloned()
        .collect();
    kept.sort_by(index_order);
    if descending {
        kept.reverse();
    }
    kept
}

fn query(
    repo: &Repo<Run>,
    game: &str,
    region: &str,
    shape: &Shape,
    descending: bool,
) -> Query<Run> {
    let mut q = Run::query_gsi1(repo, game, region);
    if let Some(condition) = &shape.condition {
        q = q.sk(condition.clone());
    }
    if descending {
        q = q.descending();
    }
    q
}

/// Every query shape (no condition, equality prefixes, each range operator on the last
/// conditioned attribute, `begins_with`), both directions, with limits and paged with
/// cursors, equals filtering and sorting every item in memory.
#[tokio::test]
async fn every_query_shape_equals_brute_force() {
    let repo = repo::<Run>("ma-brute").await;
    let all = runs(19, 400);
    repo.batch_put(&all).await.unwrap();
    for shape in shapes() {
        for (game, region) in [("g1", "eu"), ("g2", "us")] {
            for descending in [false, true] {
                let want = expected(&all, game, region, &shape, descending);
                let context = format!("{} {game}/{region} desc={descending}", shape.name);
                let got = query(&repo, game, region, &shape, descending)
                    .collect()
                    .await
                    .unwrap();
                assert_eq!(got, want, "{context}");
                for limit in [1usize, 7, 50] {
                    let got = query(&repo, game, region, &shape, descending)
                        .limit(limit)
                        .collect()
                        .await
                        .unwrap();
                    assert_eq!(
                        got,
                        want[..limit.min(want.len())],
                        "{context} limit={limit}"
                    );
                }
                for size in [3usize, 10] {
                    let pages =
                        page_to_end(|| query(&repo, game, region, &shape, descending), size).await;
                    let paged: Vec<Run> = pages.into_iter().flatten().collect();
                    assert_eq!(paged, want, "{context} paged by {size}");
                }
                let count = query(&repo, game, region, &shape, descending)
                    .count()
                    .await
                    .unwrap();
                assert_eq!(count as usize, want.len(), "{context} count");
            }
        }
    }
    // Some shapes must have matched something, or the test proves nothing.
    assert!(expected(&all, "g1", "eu", &shapes()[0], false).len() > 50);
    assert!(!expected(&all, "g1", "eu", &shapes()[6], false).is_empty());
}

/// A put that changes the index attributes moves the item to its new partition (and out of
/// the old one), and a typed update of an index field does too; the item's shard stays the
/// one of its primary key.
#[tokio::test]
async fn writes_move_items_between_index_partitions() {
    let repo = repo::<Run>("ma-move").await;
    let mut all = runs(7, 60);
    repo.batch_put(&all).await.unwrap();
    let shape = &shapes()[0];
    // Move every g1/eu run to g2/us with put, one to g2/eu with a typed update.
    let moved: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].game_id == "g1" && all[i].region == "eu")
        .collect();
    assert!(moved.len() > 3, "the seed gives g1/eu runs to move");
    for &i in &moved[1..] {
        all[i].game_id = "g2".to_owned();
        all[i].region = "us".to_owned();
        repo.put(&all[i]).await.unwrap();
    }
    let first = moved[0];
    let f = Run::fields();
    // gsi1 needs nothing more than the new value (its key is the attributes themselves);
    // the string-keyed gsi2 is rebuilt from all of its fields, so `score` is set too.
    Run::update(&repo, &all[first].player_id, all[first].match_id)
        .set(f.game_id, "g2".to_owned())
        .set(f.score, all[first].score + 1)
        .send()
        .await
        .unwrap();
    all[first].game_id = "g2".to_owned();
    all[first].score += 1;
    for game in GAMES {
        for region in REGIONS {
            let got = query(&repo, game, region, shape, false)
                .collect()
                .await
                .unwrap();
            assert_eq!(
                got,
                expected(&all, game, region, shape, false),
                "{game}/{region}"
            );
        }
    }
    assert!(query(&repo, "g1", "eu", shape, false)
        .collect()
        .await
        .unwrap()
        .is_empty());
}

/// `create_table` emits the multi-attribute key schema (two partition attributes and the
/// shard `HASH`, three `RANGE`, typed) next to the string-keyed GSI, as DescribeTable shows.
#[tokio::test]
async fn create_table_emits_the_multi_attribute_key_schema() {
    let repo = repo::<Run>("ma-schema").await;
    let described = client()
        .await
        .describe_table()
        .table_name(repo.table())
        .send()
        .await
        .unwrap();
    let table = described.table().unwrap();
    let index = |name: &str| {
        let gsi = table
            .global_secondary_indexes()
            .iter()
            .find(|g| g.index_name() == Some(name))
            .unwrap();
        gsi.key_schema()
            .iter()
            .map(|k| {
                (
                    k.attribute_name().to_owned(),
                    k.key_type().as_str().to_owned(),
                )
            })
            .collect::<Vec<_>>()
    };
    let pairs = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        index("gsi1"),
        pairs(&[
            ("game_id", "HASH"),
            ("region", "HASH"),
            ("gsi1_shard", "HASH"),
            ("score", "RANGE"),
            ("player_id", "RANGE"),
            ("match_id", "RANGE"),
        ])
    );
    assert_eq!(
        index("gsi2"),
        pairs(&[("gsi2pk", "HASH"), ("gsi2sk", "RANGE")])
    );
    let types: std::collections::HashMap<String, String> = table
        .attribute_definitions()
        .iter()
        .map(|d| {
            (
                d.attribute_name().to_owned(),
                d.attribute_type().as_str().to_owned(),
            )
        })
        .collect();
    for (name, kind) in [
        ("game_id", "S"),
        ("region", "S"),
        ("gsi1_shard", "N"),
        ("score", "N"),
        ("player_id", "S"),
        ("match_id", "N"),
        ("gsi2pk", "S"),
        ("pk", "S"),
    ] {
        assert_eq!(types.get(name).map(String::as_str), Some(kind), "{name}");
    }
    // The shard is written as a number, the primary key's identity hashed.
    let run = &runs(3, 1)[0];
    repo.put(run).await.unwrap();
    let stored = client()
        .await
        .get_item()
        .table_name(repo.table())
        .key("pk", AttributeValue::S(format!("PLAYER#{}", run.player_id)))
        .key("sk", AttributeValue::S(Run::sk(run.match_id).unwrap()))
        .send()
        .await
        .unwrap();
    let shard = stored.item().unwrap()["gsi1_shard"]
        .as_n()
        .unwrap()
        .parse::<u32>()
        .unwrap();
    assert!(shard < 4);
    // And the item reads back without it.
    assert_eq!(
        Run::get(&repo, &run.player_id, run.match_id)
            .await
            .unwrap()
            .as_ref(),
        Some(run)
    );
}

/// The hot-key stats name a multi-attribute partition by its stable rendering
/// (`game_id=g1,region=eu#<shard>`) for writes and reads alike, so the report rolls its
/// shards up into one logical key.
#[tokio::test]
async fn hot_key_stats_roll_up_a_multi_attribute_partition() {
    use sharded::capacity::{HotKeyStats, ReportHotKeys};
    let stats = std::sync::Arc::new(HotKeyStats::new(std::time::Duration::from_secs(60)));
    let repo = repo::<Run>("ma-stats").await.with_stats(stats.clone());
    let all = runs(11, 40);
    for run in &all {
        repo.put(run).await.unwrap();
    }
    let shape = &shapes()[0];
    query(&repo, "g1", "eu", shape, false)
        .collect()
        .await
        .unwrap();
    let report = stats.report();
    let logical = report
        .logical_key(Some("gsi1"), "game_id=g1,region=eu")
        .expect("the partition's shards are rolled up");
    assert_eq!(logical.shards, Some(4));
    let writes = all
        .iter()
        .filter(|r| r.game_id == "g1" && r.region == "eu")
        .count();
    assert_eq!(logical.write.requests as usize, writes);
    // One Query per shard.
    assert_eq!(logical.read.requests, 4);
}

/// An empty string in an index key attribute is refused before anything is sent, naming the
/// field, for a write and for a query alike (DynamoDB would refuse both without naming it).
#[tokio::test]
async fn an_empty_key_attribute_is_refused_naming_the_field() {
    let repo = repo::<Run>("ma-empty").await;
    let mut run = runs(5, 1).remove(0);
    run.region = String::new();
    let empty = |e: sharded::Error| {
        matches!(
            e,
            sharded::Error::Key(sharded::KeyError::EmptyValue {
                field: "region",
                attribute: "gsi1",
                ..
            })
        )
    };
    assert!(empty(repo.put(&run).await.unwrap_err()));
    assert!(empty(
        Run::query_gsi1(&repo, "g1", "")
            .collect()
            .await
            .unwrap_err()
    ));
}

/// Values that hold what a multi-attribute key's rendering separates with (`,`, `=`, a
/// space) still name different queries: identical-looking renderings once made the second
/// query join the first's scatter-gather and take its cursor.
#[tokio::test]
async fn values_holding_separators_name_different_queries() {
    let repo = repo::<Run>("ma-separators").await;
    let run = |player: &str, game: &str, region: &str| Run {
        player_id: player.to_owned(),
        match_id: 1,
        game_id: game.to_owned(),
        region: region.to_owned(),
        score: 1,
    };
    let first = vec![run("p1", "a,region=b", "c"), run("p2", "a,region=b", "c")];
    let second = vec![run("p3", "a", "b,region=c"), run("p4", "a", "b,region=c")];
    repo.batch_put(&first).await.unwrap();
    repo.batch_put(&second).await.unwrap();

    // Concurrently, each with its own answer (single flight is on by default).
    for _ in 0..5 {
        let (a, b) = futures::join!(
            Run::query_gsi1(&repo, "a,region=b", "c").collect(),
            Run::query_gsi1(&repo, "a", "b,region=c").collect()
        );
        assert_eq!(a.unwrap(), first);
        assert_eq!(b.unwrap(), second);
    }

    // The first query's cursor, plain and sealed, is not the second's.
    let page = Run::query_gsi1(&repo, "a,region=b", "c")
        .page(1, None)
        .await
        .unwrap();
    let cursor = page.cursor.expect("a second page");
    let refused = Run::query_gsi1(&repo, "a", "b,region=c")
        .page(1, Some(&cursor))
        .await;
    assert!(
        matches!(refused, Err(sharded::Error::Cursor(_))),
        "{refused:?}"
    );
    let key = sharded::cursor::CursorKey::new([7u8; 32]).unwrap();
    let sealed = Run::query_gsi1(&repo, "a,region=b", "c")
        .seal_cursors(&key)
        .page(1, None)
        .await
        .unwrap()
        .cursor
        .expect("a second page");
    let refused = Run::query_gsi1(&repo, "a", "b,region=c")
        .seal_cursors(&key)
        .page(1, Some(&sealed))
        .await;
    assert!(
        matches!(refused, Err(sharded::Error::Cursor(_))),
        "{refused:?}"
    );
}
