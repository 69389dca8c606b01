//! Shard distribution of the spec hash (issue 2): max/mean shard load over 1,000,000 ids,
//! target <= 1.01 at n = 10 and <= 1.05 at n = 100.
//!
//! `cargo bench --bench shard_distribution`
//!
//! Shards come from the generated `shard_for` (the real key encoding, then
//! `sharded::hash::shard_of_bytes`). Two id sets: seeded random uuid-like ids, and the
//! sequential `player-0` .. `player-999999` (the hard case for FNV-1a: ids that differ only in
//! their last bytes). Reports PASS/MISS; never fails: the test `tests/shard_distribution.rs`
//! is the gate.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

mod common;
use common::SplitMix64;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

/// The same entity with 100 shards.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 100)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score100 {
    game_id: String,
    player_id: String,
    score: u64,
}

const IDS: usize = 1_000_000;

struct Stats {
    counts: Vec<u64>,
    mean: f64,
    max_over_mean: f64,
    min_over_mean: f64,
    /// Relative standard deviation of the shard loads, and what a perfectly random
    /// assignment gives on average (binomial): `sqrt((1 - 1/n) / (N / n))`.
    rel_sd: f64,
    rel_sd_random: f64,
    chi2: f64,
}

fn stats(ids: &[String], n: usize, shard: impl Fn(&str) -> u32) -> Stats {
    let mut counts = vec![0u64; n];
    for id in ids {
        counts[shard(id) as usize] += 1;
    }
    let mean = ids.len() as f64 / n as f64;
    let max = *counts.iter().max().unwrap() as f64;
    let min = *counts.iter().min().unwrap() as f64;
    let chi2: f64 = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2) / mean)
        .sum();
    let var = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    Stats {
        counts,
        mean,
        max_over_mean: max / mean,
        min_over_mean: min / mean,
        rel_sd: var.sqrt() / mean,
        rel_sd_random: ((1.0 - 1.0 / n as f64) / mean).sqrt(),
        chi2,
    }
}

/// A shard count, its max/mean target, and the generated `shard_for` of the entity with
/// that many shards.
struct Case {
    n: usize,
    target: f64,
    shard_for: fn(&str) -> u32,
}

fn report(rows: &mut Vec<String>, ids_name: &str, ids: &[String]) {
    let cases = [
        Case {
            n: 10,
            target: 1.01,
            shard_for: |id| Score::shard_for(id).unwrap(),
        },
        Case {
            n: 100,
            target: 1.05,
            shard_for: |id| Score100::shard_for(id).unwrap(),
        },
    ];
    for Case {
        n,
        target,
        shard_for,
    } in cases
    {
        let s = stats(ids, n, shard_for);
        let mut sorted = s.counts.clone();
        sorted.sort_unstable();
        if n <= 10 {
            println!("{ids_name}, n = {n}: per-shard counts {:?}", s.counts);
        } else {
            println!(
                "{ids_name}, n = {n}: per-shard counts min {} / median {} / max {} (mean {:.0})",
                sorted[0],
                sorted[n / 2],
                sorted[n - 1],
                s.mean
            );
        }
        rows.push(format!(
            "| {ids_name} | {n} | {:.0} | {} | {} | {:.4} | {:.4} | {:.5} | {:.5} | {:.1} (df {}) | <= {target} | {} |",
            s.mean,
            sorted[0],
            sorted[n - 1],
            s.min_over_mean,
            s.max_over_mean,
            s.rel_sd,
            s.rel_sd_random,
            s.chi2,
            n - 1,
            if s.max_over_mean <= target { "PASS" } else { "MISS" }
        ));
    }
}

fn main() {
    let mut rng = SplitMix64::new(0x5EED_0001);
    let random: Vec<String> = (0..IDS).map(|_| rng.uuid_like()).collect();
    let sequential: Vec<String> = (0..IDS).map(|i| format!("player-{i}")).collect();

    let mut rows = Vec::new();
    report(&mut rows, "random uuid-like", &random);
    report(&mut rows, "sequential player-N", &sequential);

    println!();
    println!("shard distribution of {IDS} ids (seeded SplitMix64, seed 0x5EED0001)");
    println!();
    println!(
        "| ids | n | mean | min | max | min/mean | max/mean | sd/mean | sd/mean if random | chi^2 | target max/mean | result |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for row in rows {
        println!("{row}");
    }
}
