//! Minimizing a failing sequence by delta debugging: drop chunks of operations, replay each
//! candidate on a fresh table, keep the shortest that still fails the same check.

use std::time::{Duration, Instant};

use super::ops::Op;
use super::{replay, Failed};

/// The shortest sequence found within `budget` that still fails `failed.check`.
pub async fn minimize(failed: &Failed, budget: Duration) -> (Vec<Op>, usize) {
    let ops = failed.ops[..failed.step].to_vec();
    delta_debug(ops, budget, |candidate| async move {
        still_fails(failed, &candidate).await
    })
    .await
}

/// Delta debugging over any sequence: drops chunks of `ops`, asks `fails` of each candidate
/// (the 1-based step at which it still fails the same way, so `candidate[..step]` fails),
/// and keeps the shortest found within `budget`; with the number of replays. What the
/// per-key model minimizes with too.
pub async fn delta_debug<T, F, Fut>(
    mut ops: Vec<T>,
    budget: Duration,
    mut fails: F,
) -> (Vec<T>, usize)
where
    T: Clone,
    F: FnMut(Vec<T>) -> Fut,
    Fut: std::future::Future<Output = Option<usize>>,
{
    let deadline = Instant::now() + budget;
    let mut replays = 0;
    let mut chunks = 2usize;
    while ops.len() >= 2 && Instant::now() < deadline {
        let size = ops.len().div_ceil(chunks);
        let mut reduced = false;
        for start in (0..ops.len()).step_by(size) {
            if Instant::now() >= deadline {
                break;
            }
            let candidate: Vec<T> = ops[..start]
                .iter()
                .chain(&ops[(start + size).min(ops.len())..])
                .cloned()
                .collect();
            replays += 1;
            if let Some(step) = fails(candidate.clone()).await {
                ops = candidate[..step].to_vec();
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if chunks >= ops.len() {
                break;
            }
            chunks = (chunks * 2).min(ops.len());
        }
    }
    (ops, replays)
}

/// The step at which `ops` fails the check `failed` did (1-based, so `ops[..step]` fails), if
/// it does, on a table and repository like the failed sequence's.
async fn still_fails(failed: &Failed, ops: &[Op]) -> Option<usize> {
    match replay(failed.flavour, failed.phase, failed.sharing, ops).await {
        Err(f) if f.failure.check == failed.failure.check => Some(f.step),
        _ => None,
    }
}
