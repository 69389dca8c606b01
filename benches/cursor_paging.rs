//! Requests per cursor page over 10 shards (issue 10, section 6: "report requests per page").
//!
//! `cargo bench --bench cursor_paging` (or `cargo bench --bench cursor_paging -- 1 5 20` for
//! other page sizes).
//!
//! One table on DynamoDB Local (`common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise) holds 1,000
//! scores of game `g1` as the 10-shard leaderboard entity (players spread by the shard hash,
//! scores 0..999 in random order). For each page size, the listing is paged from the start
//! to its end through a client whose requests go through `sharded_testkit::faults::Faults`,
//! which counts them; the counts are taken per page. Printed per page size: the first page,
//! then the resumed pages (mean, min, max, and the distribution), and the shards still
//! unfinished at each page (a cursor records only keys the caller has seen, so a resumed page
//! must ask each unfinished shard for its next item). The listing is checked against one
//! `collect()` of the same query. Counts, not times: they do not depend on the machine.

mod common;

use std::collections::BTreeMap;

use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::{Cursor, Repo, ShardedEntity};
use sharded_testkit::backend::unique_table_name;
use sharded_testkit::faults::Faults;

/// The leaderboard, sharded 10 ways.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

const ITEMS: u64 = 1_000;

fn scores() -> Vec<Score> {
    // A fixed permutation of 0..ITEMS (a multiplier coprime with 1,000).
    (0..ITEMS)
        .map(|i| Score {
            game_id: "g1".into(),
            player_id: format!("player-{i:04}"),
            score: (i * 337) % ITEMS,
        })
        .collect()
}

async fn bench() {
    let sizes: Vec<usize> = common::numbers_from_args(&[1, 5, 20]);
    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-cursor");
    let loader: Repo<Score> = Repo::new(Client::new(&sdk), &table);
    loader.create_table().await.expect("create table");
    loader.batch_put(&scores()).await.expect("load");
    let everything = Score::query(&loader, "g1")
        .collect()
        .await
        .expect("collect");
    let per_shard = Score::query(&loader, "g1")
        .count_by_shard()
        .await
        .expect("count");
    println!("{ITEMS} scores over 10 shards (per shard: {per_shard:?})");

    let faults = Faults::new();
    let repo: Repo<Score> = Repo::new(faults.client(&sdk), &table);
    println!(
        "| page size | pages | first page | resumed pages: mean | min | max | distribution (requests: pages) | Query requests, whole listing |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---|---:|");
    for size in sizes {
        let mut listing = Vec::new();
        let mut cursor: Option<Cursor> = None;
        let mut per_page: Vec<u64> = Vec::new();
        loop {
            faults.reset_counts();
            let page = Score::query(&repo, "g1")
                .page(size, cursor.as_ref())
                .await
                .expect("page");
            per_page.push(faults.requests("Query"));
            listing.extend(page.items);
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(listing, everything, "page size {size}: the listing differs");
        let resumed = &per_page[1..];
        let mean = resumed.iter().sum::<u64>() as f64 / resumed.len().max(1) as f64;
        let mut distribution: BTreeMap<u64, usize> = BTreeMap::new();
        for r in resumed {
            *distribution.entry(*r).or_default() += 1;
        }
        let distribution: Vec<String> = distribution
            .iter()
            .map(|(requests, pages)| format!("{requests}: {pages}"))
            .collect();
        println!(
            "| {size} | {} | {} | {mean:.2} | {} | {} | {} | {} |",
            per_page.len(),
            per_page[0],
            resumed.iter().min().copied().unwrap_or(0),
            resumed.iter().max().copied().unwrap_or(0),
            distribution.join(", "),
            per_page.iter().sum::<u64>(),
        );
    }
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(bench());
}
