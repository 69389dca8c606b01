//! What a dashboard shows for the viral game: spans with OpenTelemetry's DynamoDB attributes
//! (printed by `tracing-subscriber`'s formatter) and metrics through the `metrics` facade
//! (rendered by a Prometheus recorder), from a game written and read against a local DynamoDB.
//!
//! ```text
//! cargo run --example telemetry
//! ```
//!
//! The application installs the subscriber and the recorder; the library only records. Here
//! the subscriber prints the spans of one top-10 query (the query's span, then one request
//! span per shard), and the recorder's Prometheus text is summarised as a dashboard would:
//! request latency by operation, units and throttles per logical key (recorded because the
//! repository has hot-key stats on: that is what bounds the label's cardinality), fan-out,
//! merge waste and cursor resume cost.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use metrics_exporter_prometheus::PrometheusBuilder;
use serde::{Deserialize, Serialize};
use sharded::capacity::HotKeyStats;
use sharded::{telemetry, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::{Layer, SubscriberExt};

/// One score; the game key sharded 10 ways by the player.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
}

const GAME: &str = "viral";
const SCORES: u64 = 2_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The recorder: Prometheus text, rendered on demand (no HTTP listener in this example).
    let recorder = PrometheusBuilder::new().build_recorder();
    let prometheus = recorder.handle();
    metrics::set_global_recorder(recorder)?;

    let local = Backend::shared().await?;
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(60)));
    let repo: Repo<Score> =
        Repo::new(local.client().await, unique_table_name("telemetry")).with_stats(stats);
    repo.create_table().await?;

    // The game: 2,000 scores written 32 at a time, then the board read and paged.
    stream::iter(0..SCORES)
        .map(|i| {
            let repo = repo.clone();
            async move {
                let score = Score {
                    game_id: GAME.into(),
                    player_id: format!("player-{i:05}"),
                    score: (i * 7_919) % 100_000,
                };
                repo.put(&score).await
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let first = Score::query(&repo, GAME)
        .descending()
        .page(50, None)
        .await?;
    Score::query(&repo, GAME)
        .descending()
        .page(50, first.cursor.as_ref())
        .await?;

    // The spans of one top-10 query, as the formatter prints them when they close.
    println!("== spans of one top-10 query (sharded.request: one per shard)\n");
    // `sharded`'s spans only (the SDK's own debug spans and events are left out).
    let ours = Targets::new().with_target("sharded_runtime", Level::INFO);
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_span_events(FmtSpan::CLOSE)
            .with_target(false)
            .without_time()
            .with_filter(ours),
    );
    let top = {
        let _spans = tracing::subscriber::set_default(subscriber);
        Score::query(&repo, GAME)
            .descending()
            .limit(10)
            .collect()
            .await?
    };
    println!("\ntop 3: {:?}\n", &top[..3]);

    println!("== dashboard (from the Prometheus text)\n");
    dashboard(&prometheus.render());
    Ok(())
}

/// Prints the metrics a dashboard shows, by name, from Prometheus text (dots become
/// underscores; histograms render as summaries with `_sum` and `_count`).
fn dashboard(text: &str) {
    let prom = |name: &str| name.replace('.', "_");
    let panels = [
        (
            telemetry::OPERATION_DURATION,
            "requests and latency by operation (seconds)",
        ),
        (
            telemetry::KEY_UNITS,
            "capacity units per logical key (hot-key stats on)",
        ),
        (telemetry::THROTTLES, "throttles by reason"),
        (
            telemetry::FAN_OUT_WIDTH,
            "scatter-gather fan-out (partitions per query)",
        ),
        (
            telemetry::MERGE_WASTE,
            "merge waste (items read, not returned)",
        ),
        (
            telemetry::CURSOR_RESUME_REQUESTS,
            "cursor resume cost (requests per resumed page)",
        ),
    ];
    for (name, title) in panels {
        println!("{title}:");
        let series = [
            prom(name),
            format!("{}_sum", prom(name)),
            format!("{}_count", prom(name)),
        ];
        // Sums, counts, counters and the p99 of each histogram; not the other quantiles.
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| series.iter().any(|s| l.split(['{', ' ']).next() == Some(s)))
            .filter(|l| !l.contains("quantile=") || l.contains("quantile=\"0.99\""))
            .collect();
        if lines.is_empty() {
            println!("  (none)");
        }
        for line in lines {
            println!("  {line}");
        }
        println!();
    }
}
