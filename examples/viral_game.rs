//! The product's core promise, measured: one viral game driven at 5x the per-key write limit
//! through the per-key limit emulator, for n = 1 (unsharded), 2, 5, 10 and 20 shards, then the
//! read side (top-100 at 4x the per-key read limit).
//!
//! ```text
//! cargo run --release --example viral_game                         # ~1 minute
//! cargo run --release --example viral_game -- --seconds 5 --chart docs/viral_game.png
//! ```
//!
//! Limits are scaled (100 write units/s and 15 read units/s per key, 1 s of burst) so that a
//! 5x overload shows in seconds on a laptop: DynamoDB's real limits are 10x (writes) and 200x
//! (reads) higher, the ratios are what matters. Each write goes through the repository with
//! the SDK's standard retries; every item is read back (without limits) to count losses.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};
use sharded::capacity::{plan, HotKeyStats, PerKeyLimits, PlanInput, ReportHotKeys};
use sharded::{Error, Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use sharded_testkit::emulator::KeyLimitEmulator;

macro_rules! leaderboards {
    ($($name:ident = $n:literal),* $(,)?) => {$(
        /// One score; the game key sharded over the given number of shards.
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone)]
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = $n)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct $name {
            game_id: String,
            player_id: String,
            score: u64,
            at: String,
        }

        impl Scored for $name {
            const SHARDS: u32 = $n;
            fn new(player: usize, score: u64) -> Self {
                $name {
                    game_id: GAME.into(),
                    player_id: format!("player-{player:06}"),
                    score,
                    at: "2026-06-22T01:00:00Z".into(),
                }
            }
            fn player(&self) -> &str {
                &self.player_id
            }
            fn query(repo: &Repo<Self>) -> sharded::Query<Self> {
                $name::query(repo, GAME)
            }
        }
    )*};
}

/// What the driver needs of each leaderboard type.
trait Scored: ShardedEntity + Send + Sync + 'static {
    const SHARDS: u32;
    fn new(player: usize, score: u64) -> Self;
    fn player(&self) -> &str;
    fn query(repo: &Repo<Self>) -> sharded::Query<Self>;
}

const GAME: &str = "viral";

leaderboards!(
    Unsharded = 1,
    Shards2 = 2,
    Shards5 = 5,
    Shards10 = 10,
    Shards20 = 20
);

/// Scaled per-key limits: 100 WCU/s, 15 RCU/s, 1 s burst.
const LIMITS: PerKeyLimits = PerKeyLimits {
    write_units_per_second: 100.0,
    read_units_per_second: 15.0,
};
const BURST_SECONDS: f64 = 1.0;

struct Options {
    seconds: f64,
    overload: f64,
    chart: Option<String>,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.windows(2).find(|w| w[0] == flag).map(|w| w[1].clone());
    Options {
        seconds: value("--seconds")
            .and_then(|v| v.parse().ok())
            .unwrap_or(3.0),
        overload: value("--overload")
            .and_then(|v| v.parse().ok())
            .unwrap_or(5.0),
        chart: value("--chart"),
    }
}

#[derive(Debug, Clone)]
struct WriteRun {
    n: u32,
    offered_per_sec: f64,
    accepted_per_sec: f64,
    accepted_share: f64,
    throttle_rate: f64,
    p50: Duration,
    p99: Duration,
    failed: usize,
    lost: usize,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn write_run<E: Scored>(
    local: &Backend,
    opts: &Options,
) -> Result<WriteRun, Box<dyn std::error::Error>> {
    let sdk = local.sdk_config().await;
    let emulator = KeyLimitEmulator::new(LIMITS).with_burst_seconds(BURST_SECONDS);
    let table = unique_table_name(&format!("viral-n{}", E::SHARDS));
    let plain: Repo<E> = Repo::new(local.client().await, &table);
    plain.create_table().await?;
    emulator.register_table(&table, &E::table_definition());
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(60)).with_limits(LIMITS));
    let repo: Repo<E> = Repo::new(emulator.client(&sdk), &table).with_stats(stats.clone());

    let rate = LIMITS.write_units_per_second * opts.overload;
    let total = (rate * opts.seconds) as usize;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let started = tokio::time::Instant::now();
    let mut running = FuturesUnordered::new();
    let mut results = Vec::with_capacity(total);
    for i in 0..total {
        tokio::time::sleep_until(started + interval * i as u32).await;
        let repo = repo.clone();
        running.push(tokio::spawn(async move {
            let item = E::new(i, (i as u64 * 7919) % 1_000_000);
            let t = Instant::now();
            let ok = repo.put(&item).await.is_ok();
            (item.player().to_owned(), ok, t.elapsed())
        }));
        // Collect what finished, so the set of in-flight tasks stays small.
        while let Some(Some(done)) = futures::FutureExt::now_or_never(running.next()) {
            results.push(done?);
        }
    }
    while let Some(done) = running.next().await {
        results.push(done?);
    }
    let wall = started.elapsed().as_secs_f64();

    let written: HashSet<String> = results
        .iter()
        .filter(|r| r.1)
        .map(|r| r.0.clone())
        .collect();
    let stored: HashSet<String> = E::query(&plain)
        .consistent_read(true)
        .collect()
        .await?
        .iter()
        .map(|e| e.player().to_owned())
        .collect();
    let mut latencies: Vec<Duration> = results.iter().map(|r| r.2).collect();
    latencies.sort();
    let counts = emulator.counts();
    let attempts = (counts.admitted + counts.throttled).max(1) as f64;
    if E::SHARDS == 1 || E::SHARDS == 10 {
        println!(
            "hot-key report after n = {}:\n{}",
            E::SHARDS,
            stats.report()
        );
    }
    Ok(WriteRun {
        n: E::SHARDS,
        offered_per_sec: rate,
        accepted_per_sec: written.len() as f64 / wall,
        accepted_share: written.len() as f64 / total as f64,
        throttle_rate: counts.throttled as f64 / attempts,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        failed: total - written.len(),
        lost: written.difference(&stored).count(),
    })
}

/// How the read side's repository shares reads.
#[derive(Debug, Clone, Copy)]
enum Sharing {
    /// Every query sends its own scatter-gather (single flight off).
    None,
    /// The defaults: identical concurrent queries share one scatter-gather.
    SingleFlight,
    /// Single flight plus answers up to this old from the repository's cache.
    Staleness(Duration),
}

#[derive(Debug)]
struct ReadRun {
    label: &'static str,
    ok_share: f64,
    /// Read units consumed per complete top-100 (from ConsumedCapacity).
    units_per_answer: f64,
    throttle_rate: f64,
    p50: Duration,
    p99: Duration,
}

/// Top-100 queries at `overload` x the per-key read limit of the unsharded layout.
async fn read_run<E: Scored>(
    local: &Backend,
    label: &'static str,
    page_size: Option<u32>,
    sharing: Sharing,
    opts: &Options,
) -> Result<ReadRun, Box<dyn std::error::Error>> {
    let sdk = local.sdk_config().await;
    let table = unique_table_name(&format!("viral-read-n{}", E::SHARDS));
    let plain: Repo<E> = Repo::new(local.client().await, &table);
    plain.create_table().await?;
    let items: Vec<E> = (0..2000)
        .map(|i| E::new(i, (i as u64 * 7919) % 1_000_000))
        .collect();
    plain.batch_put(&items).await?;
    let emulator = KeyLimitEmulator::new(LIMITS).with_burst_seconds(BURST_SECONDS);
    emulator.register_table(&table, &E::table_definition());
    let stats = Arc::new(HotKeyStats::new(Duration::from_secs(600)));
    let repo: Repo<E> = Repo::new(emulator.client(&sdk), &table).with_stats(stats.clone());
    let repo = match sharing {
        Sharing::None => repo.with_single_flight(false),
        Sharing::SingleFlight => repo,
        Sharing::Staleness(bound) => repo.with_max_staleness(bound),
    };

    // An unsharded top-100 of ~110-byte items reads ~11 KB: 1.5 units (eventually consistent).
    let rate = LIMITS.read_units_per_second * opts.overload.min(4.0) / 1.5;
    let total = (rate * opts.seconds) as usize;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let started = tokio::time::Instant::now();
    let mut running = FuturesUnordered::new();
    for i in 0..total {
        tokio::time::sleep_until(started + interval * i as u32).await;
        let repo = repo.clone();
        running.push(tokio::spawn(async move {
            let t = Instant::now();
            let mut q = E::query(&repo).descending().limit(100);
            if let Some(p) = page_size {
                q = q.page_size(p);
            }
            let r: Result<Vec<E>, Error> = q.collect().await;
            (r.map(|v| v.len() == 100).unwrap_or(false), t.elapsed())
        }));
    }
    let mut results = Vec::new();
    while let Some(done) = running.next().await {
        results.push(done?);
    }
    let mut latencies: Vec<Duration> = results.iter().map(|r| r.1).collect();
    latencies.sort();
    let counts = emulator.counts();
    let report = stats.report();
    let units: f64 = report.top(usize::MAX).iter().map(|k| k.read_units).sum();
    let complete = results.iter().filter(|r| r.0).count();
    Ok(ReadRun {
        label,
        ok_share: complete as f64 / total.max(1) as f64,
        units_per_answer: units / complete.max(1) as f64,
        throttle_rate: counts.throttled as f64 / (counts.admitted + counts.throttled).max(1) as f64,
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
    })
}

fn draw_chart(path: &str, runs: &[WriteRun]) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let font = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
    ]
    .iter()
    .find_map(|p| std::fs::read(p).ok())
    .ok_or("no DejaVuSans.ttf found for the chart's text (install fonts-dejavu-core)")?;
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(font.into_boxed_slice()),
    )
    .map_err(|_| "DejaVuSans.ttf is not a readable font")?;
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let labels: Vec<String> = runs.iter().map(|r| format!("n = {}", r.n)).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "One viral game at 5x the per-key write limit",
            ("sans-serif", 26),
        )
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(runs.len() as f64 - 0.5), 0f64..100f64)?;
    chart
        .configure_mesh()
        .x_labels(runs.len())
        .x_label_formatter(&|x| labels.get(x.round() as usize).cloned().unwrap_or_default())
        .y_desc("% of attempts / % of offered writes")
        .label_style(("sans-serif", 16))
        .draw()?;
    let accepted: Vec<(f64, f64)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64, r.accepted_share * 100.0))
        .collect();
    let throttled: Vec<(f64, f64)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64, r.throttle_rate * 100.0))
        .collect();
    let green = RGBColor(30, 140, 60);
    let red = RGBColor(200, 40, 40);
    chart
        .draw_series(LineSeries::new(accepted.clone(), green.stroke_width(3)))?
        .label("accepted writes (% of offered)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], green.stroke_width(3)));
    chart.draw_series(accepted.iter().map(|p| Circle::new(*p, 5, green.filled())))?;
    chart
        .draw_series(LineSeries::new(throttled.clone(), red.stroke_width(3)))?
        .label("throttled attempts (% of attempts)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(3)));
    chart.draw_series(throttled.iter().map(|p| Circle::new(*p, 5, red.filled())))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::MiddleRight)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = options();
    let local = Backend::shared().await?;
    println!(
        "per-key limits {} WCU/s, {} RCU/s, {} s burst; offered {}x the write limit for {} s per n\n",
        LIMITS.write_units_per_second, LIMITS.read_units_per_second, BURST_SECONDS, opts.overload, opts.seconds
    );
    let offered = LIMITS.write_units_per_second * opts.overload;
    let advice = plan(
        &PlanInput::new(offered, 110)
            .limits(LIMITS.write_units_per_second, LIMITS.read_units_per_second),
    )?;
    println!("what the shard planner recommends for this load:\n{advice}\n");
    let runs = vec![
        write_run::<Unsharded>(local, &opts).await?,
        write_run::<Shards2>(local, &opts).await?,
        write_run::<Shards5>(local, &opts).await?,
        write_run::<Shards10>(local, &opts).await?,
        write_run::<Shards20>(local, &opts).await?,
    ];
    println!("| n | offered writes/s | accepted writes/s | accepted / offered | throttled attempts | p50 write | p99 write | failed after retries | lost |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &runs {
        println!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.1}% | {:.1?} | {:.1?} | {} | {} |",
            r.n,
            r.offered_per_sec,
            r.accepted_per_sec,
            r.accepted_share,
            r.throttle_rate * 100.0,
            r.p50,
            r.p99,
            r.failed,
            r.lost
        );
    }

    let reads = vec![
        read_run::<Unsharded>(
            local,
            "unsharded, Query(Limit=100), single flight off",
            None,
            Sharing::None,
            &opts,
        )
        .await?,
        read_run::<Shards10>(
            local,
            "n = 10, single flight off (10 x Query(Limit=17), refilled lazily)",
            None,
            Sharing::None,
            &opts,
        )
        .await?,
        read_run::<Shards10>(
            local,
            "n = 10, defaults: single flight",
            None,
            Sharing::SingleFlight,
            &opts,
        )
        .await?,
        read_run::<Shards10>(
            local,
            "n = 10, single flight + max_staleness(250 ms)",
            None,
            Sharing::Staleness(Duration::from_millis(250)),
            &opts,
        )
        .await?,
        read_run::<Shards10>(
            local,
            "n = 10, page_size(100), single flight off (10 x Query(Limit=100))",
            Some(100),
            Sharing::None,
            &opts,
        )
        .await?,
    ];
    println!("\ntop-100 reads at 4x the unsharded key's read limit:\n");
    println!("| layout | complete top-100s | read units per complete top-100 | throttled requests | p50 | p99 |");
    println!("|---|---|---|---|---|---|");
    for r in &reads {
        println!(
            "| {} | {:.0}% | {:.2} | {:.1}% | {:.1?} | {:.1?} |",
            r.label,
            r.ok_share * 100.0,
            r.units_per_answer,
            r.throttle_rate * 100.0,
            r.p50,
            r.p99
        );
    }
    if let Some(path) = &opts.chart {
        draw_chart(path, &runs)?;
        println!("\nchart written to {path}");
    }
    let lost: usize = runs.iter().map(|r| r.lost).sum();
    if lost > 0 {
        return Err(format!("{lost} acknowledged writes are missing").into());
    }
    Ok(())
}
