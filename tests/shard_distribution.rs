//! The shard hash spreads ids evenly (issue 2). Looser bounds than the benchmark's targets
//! (`benches/shard_distribution.rs`, 1,000,000 ids) so it stays fast in debug builds, but a
//! bad hash (no fold, a weak mix, `mod n` of a poorly mixed value) fails it.
//! Asserts counts, never timings.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 100)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score100 {
    game_id: String,
    player_id: String,
    score: u64,
}

const IDS: usize = 200_000;

/// SplitMix64, seeded: the same ids every run, so the test is deterministic.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uuid-like lower-case hex ids: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn random_ids(seed: u64, count: usize) -> Vec<String> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            let (hi, lo) = (splitmix64(&mut state), splitmix64(&mut state));
            format!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                hi >> 32,
                (hi >> 16) & 0xffff,
                hi & 0xffff,
                lo >> 48,
                lo & 0xffff_ffff_ffff
            )
        })
        .collect()
}

/// Max shard load over mean shard load, and the per-shard counts for the failure message.
fn max_over_mean(ids: &[String], n: usize, shard: impl Fn(&str) -> u32) -> (f64, Vec<u32>) {
    let mut counts = vec![0u32; n];
    for id in ids {
        let s = shard(id) as usize;
        assert!(s < n, "shard {s} of {id:?} is out of 0..{n}");
        counts[s] += 1;
    }
    let mean = ids.len() as f64 / n as f64;
    let max = f64::from(*counts.iter().max().unwrap());
    (max / mean, counts)
}

#[test]
fn random_ids_spread_evenly_over_10_and_100_shards() {
    let ids = random_ids(0x5EED_0003, IDS);
    let (ratio, counts) = max_over_mean(&ids, 10, |id| Score::shard_for(id).unwrap());
    assert!(
        ratio <= 1.03,
        "n = 10: max/mean {ratio:.4}, counts {counts:?}"
    );
    let (ratio, counts) = max_over_mean(&ids, 100, |id| Score100::shard_for(id).unwrap());
    assert!(
        ratio <= 1.15,
        "n = 100: max/mean {ratio:.4}, counts {counts:?}"
    );
}

#[test]
fn sequential_ids_spread_evenly_over_10_and_100_shards() {
    // The hard case for FNV-1a: ids differing only in their last bytes.
    let ids: Vec<String> = (0..IDS).map(|i| format!("player-{i}")).collect();
    let (ratio, counts) = max_over_mean(&ids, 10, |id| Score::shard_for(id).unwrap());
    assert!(
        ratio <= 1.03,
        "n = 10: max/mean {ratio:.4}, counts {counts:?}"
    );
    let (ratio, counts) = max_over_mean(&ids, 100, |id| Score100::shard_for(id).unwrap());
    assert!(
        ratio <= 1.15,
        "n = 100: max/mean {ratio:.4}, counts {counts:?}"
    );
}

/// The test's own sanity check: the bound catches a bad hash. Sharding by the last byte
/// alone (a hash that ignores everything else) on the sequential ids is badly uneven at
/// n = 100 (only 10 distinct last bytes) and the check must notice.
#[test]
fn the_bound_rejects_a_bad_hash() {
    let ids: Vec<String> = (0..IDS).map(|i| format!("player-{i}")).collect();
    let (ratio, _) = max_over_mean(&ids, 100, |id| {
        u32::from(*id.as_bytes().last().unwrap()) % 100
    });
    assert!(
        ratio > 1.15,
        "a last-byte hash must fail the bound, got {ratio:.4}"
    );
}
