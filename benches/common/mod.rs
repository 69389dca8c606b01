//! Inputs and the hand-written baseline shared by the key-model benchmarks.
//!
//! Not a benchmark target itself (cargo only discovers `benches/*.rs` and
//! `benches/*/main.rs`); each bench includes it with `mod common;` and uses what it needs.
#![allow(dead_code)]

pub mod meter;

/// SplitMix64: a tiny seeded generator, so every run benchmarks the same inputs.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uuid-like lower-case hex id: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub fn uuid_like(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xffff,
            hi & 0xffff,
            lo >> 48,
            lo & 0xffff_ffff_ffff
        )
    }
}

/// One key-building input: what a leaderboard write would carry.
pub struct Input {
    pub game_id: String,
    pub player_id: String,
    pub score: u64,
}

/// `count` realistic inputs: 16 games, `player-<uuid-like>` ids, scores up to ten million.
pub fn inputs(count: usize) -> Vec<Input> {
    let mut rng = SplitMix64::new(0x5EED_0002);
    let games: Vec<String> = (0..16)
        .map(|_| format!("game-{:08x}", rng.next_u64() >> 32))
        .collect();
    (0..count)
        .map(|_| {
            let game_id = games[(rng.next_u64() % 16) as usize].clone();
            let player_id = format!("player-{}", rng.uuid_like());
            let score = rng.next_u64() % 10_000_000;
            Input {
                game_id,
                player_id,
                score,
            }
        })
        .collect()
}

/// FNV-1a 64 with the `h ^ (h >> 32)` fold, written out by hand: what a user who does not use
/// the derive would write (same function as `sharded::hash`, deliberately not called).
#[inline]
pub fn fnv1a64_fold(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in s.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ (h >> 32)
}

/// The hand-written partition key: `GAME#<game>#<shard>`.
#[inline]
pub fn hand_pk(game_id: &str, player_id: &str) -> String {
    format!("GAME#{}#{}", game_id, fnv1a64_fold(player_id) % 10)
}

/// The hand-written sort key: `SCORE#<20-digit score>#<player>`.
#[inline]
pub fn hand_sk(score: u64, player_id: &str) -> String {
    format!("SCORE#{:020}#{}", score, player_id)
}

/// The numbers among the command line's arguments (`cargo bench --bench x -- 0 25`), or
/// `default` when there are none: the latencies, sizes or budgets a run measures.
pub fn numbers_from_args<T: std::str::FromStr + Clone>(default: &[T]) -> Vec<T> {
    let numbers: Vec<T> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if numbers.is_empty() {
        default.to_vec()
    } else {
        numbers
    }
}

/// The number in the environment variable `name` (`MA_ROUNDS=40`), or `default`.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The DynamoDB a benchmark measures on: DynamoDB Local, where BENCHMARKS.md's figures were
/// measured, unless `SHARDED_TEST_BACKEND` or `DYNAMODB_ENDPOINT` asks for another (the
/// section "The backends" runs some benchmarks on the embedded one too). Says which.
pub async fn backend() -> &'static sharded_testkit::backend::Backend {
    use sharded_testkit::backend::{Backend, BackendKind};
    static SAID: std::sync::Once = std::sync::Once::new();
    let backend = Backend::shared_or(BackendKind::DynamoDbLocal)
        .await
        .unwrap_or_else(|e| panic!("this benchmark needs a DynamoDB: {e}"));
    SAID.call_once(|| println!("benchmarking on {backend}"));
    backend
}
