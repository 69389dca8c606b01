//! Projections: a partial struct read with a `ProjectionExpression`, through every path of the
//! engine (collect, pages, GSI queries).

use serde::{Deserialize, Serialize};
use sharded::{Repo, ShardedEntity, ShardedProjection};

use crate::entities::{score, Score};
use crate::support::{page_to_end, repo};

/// `deny_unknown_fields`: an attribute outside the projection (`at`) would fail to read, so
/// these tests prove DynamoDB returned only the projected attributes.
#[derive(ShardedProjection, Deserialize, Debug, PartialEq)]
#[projection(of = Score)]
#[serde(deny_unknown_fields)]
struct ScoreLine {
    player_id: String,
    score: u64,
}

/// Renamed fields, as stored: the projection names the attribute the entity writes.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "ORDER#{customer}", shard = "hash(order_id)", n = 4)]
#[sk(template = "AT#{placed_at}#{order_id}")]
#[serde(rename_all = "camelCase")]
struct Order {
    customer: String,
    order_id: String,
    placed_at: u64,
    #[serde(rename = "total")]
    total_cents: u64,
    note: String,
}

#[derive(ShardedProjection, Deserialize, Debug, PartialEq)]
#[projection(of = Order)]
#[serde(deny_unknown_fields)]
struct OrderTotal {
    #[serde(rename = "orderId")]
    id: String,
    #[serde(rename = "total")]
    cents: u64,
}

async fn scores() -> (Repo<Score>, Vec<Score>) {
    let repo = repo::<Score>("projection").await;
    let all: Vec<Score> = (0..60)
        .map(|i| score("g1", &format!("p{i:02}"), (i * 13 % 41) as u64))
        .collect();
    repo.batch_put(&all).await.unwrap();
    (repo, all)
}

fn line(s: &Score) -> ScoreLine {
    ScoreLine {
        player_id: s.player_id.clone(),
        score: s.score,
    }
}

#[tokio::test]
async fn a_projection_returns_the_entity_query_fields_in_the_same_order() {
    let (repo, _) = scores().await;
    let full = Score::query(&repo, "g1")
        .descending()
        .limit(25)
        .collect()
        .await
        .unwrap();
    let lines = Score::query(&repo, "g1")
        .project::<ScoreLine>()
        .descending()
        .limit(25)
        .collect()
        .await
        .unwrap();
    assert_eq!(lines, full.iter().map(line).collect::<Vec<_>>());
    assert_eq!(
        <ScoreLine as ShardedProjection>::ATTRIBUTES,
        ["player_id", "score"]
    );
}

#[tokio::test]
async fn a_projection_pages_and_reads_gsis() {
    let (repo, all) = scores().await;
    let pages = page_to_end(|| Score::query(&repo, "g1").project::<ScoreLine>(), 7).await;
    let flat: Vec<ScoreLine> = pages.into_iter().flatten().collect();
    let full = Score::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(flat, full.iter().map(line).collect::<Vec<_>>());
    // A GSI query's positions hold the table's keys too: they are projected with the rest.
    let player = &all[17];
    let on_gsi = page_to_end(
        || Score::query_gsi1(&repo, &player.player_id).project::<ScoreLine>(),
        1,
    )
    .await;
    assert_eq!(
        on_gsi.into_iter().flatten().collect::<Vec<_>>(),
        vec![line(player)]
    );
}

#[tokio::test]
async fn a_projection_names_attributes_as_the_entity_stores_them() {
    let repo = repo::<Order>("projection-renamed").await;
    let orders: Vec<Order> = (0..9)
        .map(|i| Order {
            customer: "c1".into(),
            order_id: format!("o{i}"),
            placed_at: 1_000 + i,
            total_cents: 100 * i,
            note: "x".repeat(1000),
        })
        .collect();
    repo.batch_put(&orders).await.unwrap();
    let totals = Order::query(&repo, "c1")
        .project::<OrderTotal>()
        .collect()
        .await
        .unwrap();
    let expected: Vec<OrderTotal> = orders
        .iter()
        .map(|o| OrderTotal {
            id: o.order_id.clone(),
            cents: o.total_cents,
        })
        .collect();
    assert_eq!(totals, expected);
}

#[tokio::test]
async fn a_scan_projects_too() {
    let (repo, all) = scores().await;
    let mut lines = repo
        .scan()
        .segments(3)
        .project::<ScoreLine>()
        .collect()
        .await
        .unwrap();
    lines.sort_by(|a, b| a.player_id.cmp(&b.player_id));
    let mut expected: Vec<ScoreLine> = all.iter().map(line).collect();
    expected.sort_by(|a, b| a.player_id.cmp(&b.player_id));
    assert_eq!(lines, expected);
}

/// A table whose other writers never tag: an item is the entity's when its keys are.
#[derive(sharded::ShardedTable)]
#[table(pk = "PK", sk = "SK", recognize = "key")]
struct UntaggedTable;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(table = UntaggedTable)]
#[pk(template = "TEAM#{team}", shard = "hash(member)", n = 2)]
#[sk(template = "M#{member}")]
struct Member {
    team: String,
    member: String,
    points: u64,
}

#[derive(ShardedProjection, Deserialize, Debug, PartialEq)]
#[projection(of = Member)]
struct MemberPoints {
    member: String,
    points: u64,
}

/// Another service's record keyed like a member but without `points` is not a member: the
/// entity's reads skip and count it, and so do its projections (recognised by their keys
/// alone, they used to fail the whole query or scan on it).
#[tokio::test]
async fn a_projection_skips_and_counts_a_record_that_does_not_read_as_it() {
    use sharded::aws_sdk_dynamodb::types::AttributeValue as V;
    let repo = repo::<Member>("projection-foreign").await;
    let member = |name: &str, points| Member {
        team: "t1".into(),
        member: name.into(),
        points,
    };
    repo.batch_put(&[member("a", 3), member("b", 5)])
        .await
        .unwrap();
    let pk = Member::pk_on_shard("t1", 0).unwrap();
    repo.client()
        .put_item()
        .table_name(repo.table())
        .item("PK", V::S(pk))
        .item("SK", V::S("M#c".into()))
        .item("team", V::S("t1".into()))
        .item("member", V::S("c".into()))
        .send()
        .await
        .unwrap();
    let points = |a: u64, b: u64| {
        vec![
            MemberPoints {
                member: "a".into(),
                points: a,
            },
            MemberPoints {
                member: "b".into(),
                points: b,
            },
        ]
    };

    let whole = Member::query(&repo, "t1").collect_answer().await.unwrap();
    assert_eq!(whole.items, [member("a", 3), member("b", 5)]);
    assert_eq!(whole.foreign.count, 1, "{:?}", whole.foreign);

    let projected = Member::query(&repo, "t1")
        .project::<MemberPoints>()
        .collect_answer()
        .await
        .unwrap();
    assert_eq!(projected.items, points(3, 5));
    assert_eq!(projected.foreign.count, 1, "{:?}", projected.foreign);

    let mut scanned: Vec<MemberPoints> = repo
        .scan()
        .project::<MemberPoints>()
        .collect()
        .await
        .unwrap();
    scanned.sort_by(|x, y| x.member.cmp(&y.member));
    assert_eq!(scanned, points(3, 5));
}
