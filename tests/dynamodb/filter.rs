//! Typed filters on queries, against brute force, and the request count of a rare match.

use sharded::Repo;
use sharded_testkit::faults::Faults;

use crate::entities::{score, Score};
use crate::support::{faulty, page_to_end, repo};

async fn game(items: usize) -> (Repo<Score>, Vec<Score>) {
    let repo = repo::<Score>("filter").await;
    let all: Vec<Score> = (0..items)
        .map(|i| score("g1", &format!("p{i:04}"), (i * 7919 % 1009) as u64))
        .collect();
    repo.batch_put(&all).await.unwrap();
    (repo, all)
}

fn by_score_desc(mut items: Vec<Score>) -> Vec<Score> {
    items.sort_by(|a, b| (b.score, &b.player_id).cmp(&(a.score, &a.player_id)));
    items
}

#[tokio::test]
async fn a_filter_returns_exactly_the_matching_items_in_order() {
    let (repo, all) = game(300).await;
    let f = Score::fields();
    let keep = |s: &Score| s.player_id.starts_with("p01") || (s.score >= 500 && s.score <= 600);
    let condition = || f.player_id.begins_with("p01").or(f.score.between(500, 600));
    let expected = by_score_desc(all.iter().filter(|s| keep(s)).cloned().collect());
    let got = Score::query(&repo, "g1")
        .filter(condition())
        .descending()
        .collect()
        .await
        .unwrap();
    assert_eq!(got, expected);
    let top = Score::query(&repo, "g1")
        .filter(condition())
        .descending()
        .limit(7)
        .collect()
        .await
        .unwrap();
    assert_eq!(top, expected[..7]);
    let pages = page_to_end(
        || Score::query(&repo, "g1").filter(condition()).descending(),
        9,
    )
    .await;
    assert_eq!(pages.concat(), expected);
    // Two filters combine with AND; count applies the filter too.
    let both = Score::query(&repo, "g1")
        .filter(condition())
        .filter(f.score.lt(550))
        .count()
        .await
        .unwrap();
    assert_eq!(
        both,
        all.iter().filter(|s| keep(s) && s.score < 550).count() as u64
    );
}

#[tokio::test]
async fn a_rare_match_costs_a_few_requests_per_shard_not_one_per_item() {
    let (repo, all) = game(3000).await;
    let needle = &all[1234];
    let faults = Faults::new();
    let counted = faulty(&repo, &faults).await;
    let f = Score::fields();
    let found = Score::query(&counted, "g1")
        .filter(f.player_id.eq(needle.player_id.as_str()))
        .limit(1)
        .collect()
        .await
        .unwrap();
    assert_eq!(found, vec![needle.clone()]);
    // Each shard holds ~300 items: Limits 1, 4, 16, 64, 256, 1000 reach its end in at most
    // 6 requests; one per item would be ~3,000.
    let requests = faults.requests("Query");
    assert!(requests <= 60, "{requests} Query requests for one match");
}

#[tokio::test]
async fn filter_values_never_change_the_expression() {
    let (repo, _) = game(50).await;
    let f = Score::fields();
    let hostile = "x\" OR attribute_exists(pk) OR \"";
    let found = Score::query(&repo, "g1")
        .filter(f.player_id.eq(hostile))
        .collect()
        .await
        .unwrap();
    assert!(found.is_empty(), "the value is compared, not parsed");
}
