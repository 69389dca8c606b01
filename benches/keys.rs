//! Generated key building vs the hand-written `format!` of the same key (issue 2).
//!
//! `cargo bench --bench keys` (add `-- --quick` for a short run). Each iteration builds the
//! key of all 1,000 inputs; criterion reports the time per iteration and, with the throughput
//! set, per key. Compare the two lines of a pair, not absolute numbers: the machine is shared.
//! `benches/key_ratio.rs` prints the ratio directly.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

mod common;
use common::{hand_pk, hand_sk, inputs};

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

const INPUTS: usize = 1_000;

fn key_building(c: &mut Criterion) {
    let inputs = inputs(INPUTS);
    // Same keys both ways, or the comparison means nothing.
    for i in &inputs {
        assert_eq!(
            Score::pk(&i.game_id, &i.player_id).unwrap(),
            hand_pk(&i.game_id, &i.player_id)
        );
        assert_eq!(
            Score::sk(i.score, &i.player_id).unwrap(),
            hand_sk(i.score, &i.player_id)
        );
    }

    let mut group = c.benchmark_group("key_building");
    group.throughput(Throughput::Elements(INPUTS as u64));
    group.bench_function("pk/derive", |b| {
        b.iter(|| {
            for i in &inputs {
                black_box(Score::pk(black_box(&i.game_id), black_box(&i.player_id)).unwrap());
            }
        })
    });
    group.bench_function("pk/format", |b| {
        b.iter(|| {
            for i in &inputs {
                black_box(hand_pk(black_box(&i.game_id), black_box(&i.player_id)));
            }
        })
    });
    group.bench_function("sk/derive", |b| {
        b.iter(|| {
            for i in &inputs {
                black_box(Score::sk(black_box(i.score), black_box(&i.player_id)).unwrap());
            }
        })
    });
    group.bench_function("sk/format", |b| {
        b.iter(|| {
            for i in &inputs {
                black_box(hand_sk(black_box(i.score), black_box(&i.player_id)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, key_building);
criterion_main!(benches);
