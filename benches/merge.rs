//! The k-way merge of the scatter-gather engine vs concatenate + sort + truncate (issue 3,
//! target: ours >= 3x faster).
//!
//! `cargo bench --bench merge`
//!
//! Input: 10 sorted shard pages of 100 DynamoDB items each (`HashMap<String, AttributeValue>`
//! with an `sk` like `SCORE#<20-digit score>#player-N`, plus the other attributes of a score
//! item); output: the top 100. Both directions (ascending and descending) are measured.
//!
//! - **ours**: the engine's k-way merge keyed by `SortValue::from_attribute(item["sk"])`, as the
//!   engine keys its shard heads (the key is cloned out of the item on every heap push).
//! - **concat + sort**: the hand-written way: flatten the 10 pages, `sort_by` the `sk` bytes
//!   (a stable sort, so ties keep shard order), `truncate(100)`.
//! - **concat + sort_by_cached_key** (informational, no target): the same with every key
//!   extracted once, the best a hand-written full sort can do.
//!
//! Two item modes: **borrowed** (`Vec<Vec<&Item>>`, the merge alone) and **owned**
//! (`Vec<Vec<Item>>`: the merge consumes the pages and frees the 900 items it does not
//! return, as the engine frees the rest of the shard pages; that freeing costs the same on
//! every side and dominates this mode). Every input is built (cloned) before the clock
//! starts, and the outputs are dropped after it stops. The machine is shared with builds, so only ratios are
//! reported: the sides are interleaved in every round (the first side rotating), each side's
//! median ns per merge is taken, and the ratio of the medians is printed with the median of
//! the per-round ratios as a drift check. This binary reports; it never fails on a target.

use std::borrow::Borrow;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use aws_sdk_dynamodb::types::AttributeValue;
use sharded_runtime::__bench::{top_k, SortValue};

mod stats;
use stats::median;

type Item = HashMap<String, AttributeValue>;

const SHARDS: usize = 10;
const PER_SHARD: usize = 100;
const K: usize = 100;
/// Merges per timed sample (each on its own fresh clone of the input).
const BATCH: usize = 40;
const ROUNDS: usize = 41;
const TARGET: f64 = 3.0;

/// A seeded linear congruential generator: every run merges the same scores.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// One score item as DynamoDB returns it for the leaderboard entity.
fn item(shard: usize, player: usize, score: u64) -> Item {
    let s = |v: String| AttributeValue::S(v);
    HashMap::from([
        ("pk".to_owned(), s(format!("GAME#g1#{shard}"))),
        (
            "sk".to_owned(),
            s(format!("SCORE#{score:020}#player-{player}")),
        ),
        ("game_id".to_owned(), s("g1".to_owned())),
        ("player_id".to_owned(), s(format!("player-{player}"))),
        ("score".to_owned(), AttributeValue::N(score.to_string())),
        ("at".to_owned(), s("2026-06-22T01:23:45Z".to_owned())),
        ("_entity".to_owned(), s("Score".to_owned())),
    ])
}

fn sk(item: &Item) -> &[u8] {
    item.get("sk")
        .and_then(|v| v.as_s().ok())
        .map(String::as_bytes)
        .unwrap_or_default()
}

/// 10 shard pages of 100 items, each sorted as DynamoDB returns it.
fn shard_pages(descending: bool) -> Vec<Vec<Item>> {
    let mut rng = Lcg(0x5EED_0003);
    let mut pages: Vec<Vec<Item>> = (0..SHARDS)
        .map(|shard| {
            (0..PER_SHARD)
                .map(|i| item(shard, shard * PER_SHARD + i, rng.next() % 10_000_000))
                .collect()
        })
        .collect();
    for page in &mut pages {
        page.sort_by(|a, b| sk(a).cmp(sk(b)));
        if descending {
            page.reverse();
        }
    }
    pages
}

fn key_of<T: Borrow<Item>>(item: &T) -> &[u8] {
    sk(item.borrow())
}

fn ours<T: Borrow<Item>>(pages: Vec<Vec<T>>, descending: bool) -> Vec<T> {
    top_k(
        pages,
        K,
        |item| item.borrow().get("sk").and_then(SortValue::from_attribute),
        descending,
    )
}

fn concat_sort<T: Borrow<Item>>(pages: Vec<Vec<T>>, descending: bool) -> Vec<T> {
    let mut all: Vec<T> = pages.into_iter().flatten().collect();
    if descending {
        all.sort_by(|a, b| key_of(b).cmp(key_of(a)));
    } else {
        all.sort_by(|a, b| key_of(a).cmp(key_of(b)));
    }
    all.truncate(K);
    all
}

fn concat_sort_cached<T: Borrow<Item>>(pages: Vec<Vec<T>>, descending: bool) -> Vec<T> {
    let mut all: Vec<T> = pages.into_iter().flatten().collect();
    if descending {
        all.sort_by_cached_key(|i| Reverse(key_of(i).to_vec()));
    } else {
        all.sort_by_cached_key(|i| key_of(i).to_vec());
    }
    all.truncate(K);
    all
}

type Merge<T> = fn(Vec<Vec<T>>, bool) -> Vec<T>;

/// ns per merge over `inputs` (`BATCH` fresh inputs); building the inputs and dropping the
/// outputs are not timed.
fn sample<T>(inputs: Vec<Vec<Vec<T>>>, descending: bool, merge: Merge<T>) -> f64 {
    let n = inputs.len();
    let mut outputs = Vec::with_capacity(n);
    let start = Instant::now();
    for input in inputs {
        outputs.push(merge(black_box(input), black_box(descending)));
    }
    let elapsed = start.elapsed();
    black_box(&outputs);
    drop(outputs);
    elapsed.as_nanos() as f64 / n as f64
}

/// `BATCH` inputs of borrowed items: the merge alone (nothing is freed but the page vectors).
fn borrowed(pages: &[Vec<Item>]) -> Vec<Vec<Vec<&Item>>> {
    (0..BATCH)
        .map(|_| pages.iter().map(|p| p.iter().collect()).collect())
        .collect()
}

/// `BATCH` clones of the pages: the merge owns the items and frees the 900 it does not return,
/// as the engine frees the unused rest of the shard pages.
fn owned(pages: &[Vec<Item>]) -> Vec<Vec<Vec<Item>>> {
    (0..BATCH).map(|_| pages.to_vec()).collect()
}

const SIDES: [&str; 3] = [
    "ours (top_k)",
    "concat + sort_by",
    "concat + sort_by_cached_key",
];

fn merge_fn<T: Borrow<Item>>(side: usize) -> Merge<T> {
    match side {
        0 => ours,
        1 => concat_sort,
        _ => concat_sort_cached,
    }
}

/// One measured configuration: interleaved rounds of the three sides.
fn measure(pages: &[Vec<Item>], descending: bool, owning: bool) -> Vec<Vec<f64>> {
    let run = |side: usize| {
        if owning {
            sample(owned(pages), descending, merge_fn::<Item>(side))
        } else {
            sample(borrowed(pages), descending, merge_fn::<&Item>(side))
        }
    };
    // Warm-up round, not recorded.
    for side in 0..SIDES.len() {
        run(side);
    }
    let mut times = vec![Vec::with_capacity(ROUNDS); SIDES.len()];
    for round in 0..ROUNDS {
        for j in 0..SIDES.len() {
            let side = (round + j) % SIDES.len();
            times[side].push(run(side));
        }
    }
    times
}

fn main() {
    println!(
        "k-way merge: {SHARDS} sorted pages of {PER_SHARD} items -> top {K}; \
         {ROUNDS} interleaved rounds of {BATCH} merges per side; median µs per merge\n"
    );
    let mut rows = Vec::new();
    for owning in [false, true] {
        for descending in [false, true] {
            let pages = shard_pages(descending);
            // Same answer all three ways, or the comparison means nothing.
            let expected: Vec<Vec<u8>> = concat_sort(pages.clone(), descending)
                .iter()
                .map(|i| sk(i).to_vec())
                .collect();
            assert_eq!(expected.len(), K);
            for (side, name) in SIDES.iter().enumerate() {
                let got: Vec<Vec<u8>> = merge_fn::<Item>(side)(pages.clone(), descending)
                    .iter()
                    .map(|i| sk(i).to_vec())
                    .collect();
                assert_eq!(got, expected, "{name} disagrees");
            }
            let times = measure(&pages, descending, owning);
            let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
            for (side, name) in SIDES.iter().enumerate() {
                let rounds: Vec<f64> = times[side]
                    .iter()
                    .zip(&times[0])
                    .map(|(theirs, ours)| theirs / ours)
                    .collect();
                rows.push((
                    if owning {
                        "owned: merge + free the unused 900"
                    } else {
                        "borrowed: merge only"
                    },
                    if descending {
                        "descending"
                    } else {
                        "ascending"
                    },
                    *name,
                    medians[side],
                    medians[side] / medians[0],
                    median(&rounds),
                ));
            }
        }
    }
    println!(
        "| items | direction | merge | median µs/merge | time / ours (medians) | median of round ratios |"
    );
    println!("|---|---|---|---:|---:|---:|");
    for (items, direction, name, ns, ratio, round) in &rows {
        println!(
            "| {items} | {direction} | {name} | {:.1} | {ratio:.2}x | {round:.2}x |",
            ns / 1000.0
        );
    }
    println!();
    for (items, direction, name, _, ratio, _) in &rows {
        if *name == SIDES[1] {
            let verdict = if *ratio >= TARGET { "PASS" } else { "MISS" };
            println!(
                "{items}, {direction}: ours is {ratio:.2}x faster than concat + sort (target >= {TARGET}x): {verdict}"
            );
        }
    }
}
