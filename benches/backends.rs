//! The backends side by side (BENCHMARKS.md, "The backends"): how long the backend selected by
//! `SHARDED_TEST_BACKEND` takes to start and to answer its first request, and how much memory
//! its server holds then. One line per run; `benches/backends.sh` runs it for both backends,
//! alternating, beside the leaderboard example's and the DynamoDB suite's wall times.
//!
//! ```text
//! SHARDED_TEST_BACKEND=embedded cargo bench --profile dev --bench backends
//! SHARDED_TEST_BACKEND=dynamodb-local cargo bench --profile dev --bench backends
//! ```
//!
//! Resident memory (`VmRSS`, Linux `/proc`): DynamoDB Local's JVM, a child process; for the
//! embedded backend, which serves from this process, what this process grew by while starting
//! it (its runtime, SQLite's in-memory database, the listener). Elsewhere the column is `n/a`.

use std::time::Instant;

use sharded_testkit::backend::{Backend, BackendKind};

// Only its `dynamodb_local_pid` is used here.
#[allow(dead_code)]
mod cpu;

/// `VmRSS` of process `pid` (`self` for this one) in MiB.
fn resident_mib(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn mib(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |mib| format!("{mib:.1}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let before = resident_mib("self");
    let started = Instant::now();
    let backend = Backend::shared().await?;
    let serving = started.elapsed();
    let client = backend.client().await;
    client.list_tables().send().await?;
    let answered = started.elapsed();
    let server = match backend.kind() {
        BackendKind::Embedded => resident_mib("self")
            .zip(before)
            .map(|(now, then)| now - then),
        _ => cpu::dynamodb_local_pid().and_then(|pid| resident_mib(&pid)),
    };
    println!(
        "backend={} serving_ms={:.1} first_answer_ms={:.1} server_rss_mib={}",
        backend.kind().name(),
        serving.as_secs_f64() * 1e3,
        answered.as_secs_f64() * 1e3,
        mib(server)
    );
    Ok(())
}
