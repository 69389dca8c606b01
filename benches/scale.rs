//! How the cost of a read grows with the work (issue 10, "Scale"), in one run at 10 ms of
//! injected latency per request.
//!
//! `cargo bench --bench scale` (rounds: `SCALE_ROUNDS=15`, default 9; `SCALE_PARTS=1` or `2`
//! runs one part only; in part 2, `SCALE_SIDES=stream,stream-no-read-ahead` runs the named
//! sides only and `SCALE_STREAM_RUNS=3` runs them that many times, interleaved).
//!
//! **Part 1, top-100 at n = 10, 100 and 1,000 shards.** One table on DynamoDB Local
//! (`common::backend()`: DynamoDB Local unless `SHARDED_TEST_BACKEND` says otherwise) holds the same 5,000 scores of game
//! `g1` four times: as entities sharded 10, 100 and 1,000 ways (`hash(player_id)`; 1,000 is
//! `sharded::schema::MAX_SHARDS`, the most the derive accepts) and as an unsharded twin, each
//! under its own partition-key prefix so no partition holds two entities. Each configuration
//! reads `query(&repo, "g1").descending().limit(100).collect()` with the defaults (no
//! `.page_size`, the repository's default concurrency) through one client whose requests go
//! through `sharded_testkit::faults::Faults` (10 ms asynchronous sleep per request, request
//! counts, most in flight). Per configuration:
//!
//! - **wall time**: median over the interleaved rounds (the first configuration rotating);
//! - **Query requests**: `Faults::requests("Query")`, and the most in flight at once;
//! - **items read**: the sum of DynamoDB's `ScannedCount` over the query's Query responses,
//!   read by an SDK interceptor on the measuring client (`read_after_deserialization`, the
//!   parsed `QueryOutput`), nothing added to the library or the test kit; beside it what the
//!   engine's first `Limit` predicts, `sum over shards of min(ceil(1.5·k/n) + 2, items on the
//!   shard)`;
//! - **read units**: DynamoDB's `ConsumedCapacity`, in one extra run through the repository
//!   with `Repo::with_stats` (`HotKeyStats`), summed over keys (kept out of the timed runs so
//!   the stats' own memory is not counted there);
//! - **peak heap**: a counting `#[global_allocator]` in this binary (current and peak bytes);
//!   the peak is reset to the current heap before each query, and the figure is the peak above
//!   the heap at the start of the query (median over the rounds), the answer included;
//! - **the physical limit**: in the same rounds, each sharded configuration's `n` shard
//!   Queries (the engine's key condition and first `Limit`) issued all at once with
//!   `join_all` and nothing merged, against which the default fan-out is compared;
//! - beside them, the latency floor (`ceil(requests / max in flight) x 10 ms`: no schedule of
//!   that many requests, that many at once, can be faster) and the CPU per run of this process
//!   and of the DynamoDB Local JVM (`benches/cpu`), which tell what the rest of the time is.
//!
//! **Part 2, a stream of 100,000 items.** 100,000 events of ~162 bytes under one logical key,
//! n = 10, loaded with `batch_put` in concurrent chunks (no injected latency while loading),
//! then read once, untimed (DynamoDB Local's work after the load otherwise lands on the first
//! side measured: ~2 s more JVM CPU, whichever side that is). Peak RSS needs a process per
//! side: this binary runs itself again (`current_exe()`, mode in `SCALE_CHILD`, DynamoDB
//! Local's endpoint in `DYNAMODB_ENDPOINT`, which the test kit honours, the table in
//! `SCALE_TABLE`) once per side, each at 10 ms injected latency: `query(..).stream()` consumed
//! item by item (counted, checked in order, dropped) vs `query(..).collect()` of the same
//! query, with the defaults (no `Limit`, so every shard request takes DynamoDB's 1 MB page) and
//! with `.page_size(1000)`; with `.page_size(1000)` also over half the log (`seq < 50,000`), to
//! show which peak follows the result and which does not, and with a concurrency of 2 instead
//! of the default, to show what bounds it. A child reports its `VmRSS` before the query, its
//! `VmHWM` after it (the high-water mark is reset with `/proc/self/clear_refs` just before the
//! query where the kernel allows), the counting allocator's peak above the start, its
//! requests, items read and CPU; the parent adds DynamoDB Local's CPU over the child's life.
//!
//! This binary reports; it never fails on a missed target. The machine has 2 cores shared
//! with builds and with DynamoDB Local itself: compare rows of one run, not absolute times.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::AfterDeserializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::Client;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sharded::capacity::{HotKeyStats, ReportHotKeys};
use sharded::{Repo, ShardedEntity};
use sharded_testkit::backend::{unique_table_name, Backend};
use sharded_testkit::faults::Faults;

mod common;
mod cpu;
mod stats;
use cpu::{per_run, CpuMeter};
use stats::median;

// ---------------------------------------------------------------------------------------------
// The counting allocator.

/// The system allocator, counting the bytes currently allocated and their peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Resets the peak to the current heap and returns the current heap.
fn heap_reset() -> usize {
    let now = CURRENT.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The peak heap since [`heap_reset`], above `start`.
fn heap_peak_above(start: usize) -> usize {
    PEAK.load(Ordering::Relaxed).saturating_sub(start)
}

// ---------------------------------------------------------------------------------------------
// Items read: DynamoDB's ScannedCount, from the parsed responses.

/// An SDK interceptor summing `ScannedCount` and `Count` of every Query response.
#[derive(Debug, Clone, Default)]
struct ReadCounter(Arc<ReadCounts>);

#[derive(Debug, Default)]
struct ReadCounts {
    scanned: AtomicU64,
    returned: AtomicU64,
}

impl ReadCounter {
    fn reset(&self) {
        self.0.scanned.store(0, Ordering::SeqCst);
        self.0.returned.store(0, Ordering::SeqCst);
    }

    /// (items DynamoDB read, items it returned after the filter).
    fn read(&self) -> (u64, u64) {
        (
            self.0.scanned.load(Ordering::SeqCst),
            self.0.returned.load(Ordering::SeqCst),
        )
    }

    /// `client` with this counter on every request.
    fn on(&self, client: &Client) -> Client {
        Client::from_conf(
            client
                .config()
                .to_builder()
                .interceptor(self.clone())
                .build(),
        )
    }
}

impl Intercept for ReadCounter {
    fn name(&self) -> &'static str {
        "ScaleReadCounter"
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if let Ok(output) = context.output_or_error() {
            if let Some(query) = output.downcast_ref::<QueryOutput>() {
                let scanned = query.scanned_count().max(0) as u64;
                let returned = query.count().max(0) as u64;
                self.0.scanned.fetch_add(scanned, Ordering::SeqCst);
                self.0.returned.fetch_add(returned, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Part 1 entities: the same scores, 10, 100 and 1,000 shards, and unsharded.

macro_rules! score_entity {
    ($name:ident, $($pk:tt)*) => {
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[pk($($pk)*)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct $name {
            game_id: String,
            player_id: String,
            score: u64,
            at: String,
        }

        impl From<&Score> for $name {
            fn from(s: &Score) -> Self {
                $name {
                    game_id: s.game_id.clone(),
                    player_id: s.player_id.clone(),
                    score: s.score,
                    at: s.at.clone(),
                }
            }
        }

        impl Ranked for $name {
            fn rank(&self) -> (u64, String) {
                (self.score, self.player_id.clone())
            }
        }
    };
}

/// A score as generated, before it is stored as one of the entities.
#[derive(Debug, Clone)]
struct Score {
    game_id: String,
    player_id: String,
    score: u64,
    at: String,
}

trait Ranked {
    fn rank(&self) -> (u64, String);
}

score_entity!(
    Score10,
    template = "S10#{game_id}",
    shard = "hash(player_id)",
    n = 10
);
score_entity!(
    Score100,
    template = "S100#{game_id}",
    shard = "hash(player_id)",
    n = 100
);
score_entity!(
    Score1000,
    template = "S1000#{game_id}",
    shard = "hash(player_id)",
    n = 1000
);
score_entity!(FlatScore, template = "FLAT#{game_id}");

const GAME: &str = "g1";
const SCORES: usize = 5_000;
const TOP: usize = 100;
const LATENCY: Duration = Duration::from_millis(10);
const DEFAULT_ROUNDS: usize = 9;
const WARM_UP_ROUNDS: usize = 2;

/// 5,000 scores, hash-spread values (an LCG) below 1,000,000.
fn scores() -> Vec<Score> {
    let mut seed = 0x5EED_0010_u64;
    (0..SCORES)
        .map(|i| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            Score {
                game_id: GAME.into(),
                player_id: format!("player-{i}"),
                score: (seed >> 33) % 1_000_000,
                at: format!("2026-06-22T01:{:02}:{:02}Z", (i / 60) % 60, i % 60),
            }
        })
        .collect()
}

/// The top 100 by sort key (score, then player id), best first.
fn expected_top(scores: &[Score]) -> Vec<(u64, String)> {
    let mut ranks: Vec<(u64, String)> = scores
        .iter()
        .map(|s| (s.score, s.player_id.clone()))
        .collect();
    // The sort key is `SCORE#<20-digit score>#<player_id>`: score first, then the id bytes.
    ranks.sort_by(|a, b| b.cmp(a));
    ranks.truncate(TOP);
    ranks
}

/// The engine's first `Limit` per shard for a top-`k` over `n` open shards:
/// `ceil(1.5·k/n) + 2`, at most `k` (as documented on `Query::page_size`).
fn first_share(k: usize, n: usize) -> usize {
    ((3 * k).div_ceil(2 * n) + 2).min(k).max(1)
}

/// One configuration of part 1.
struct Config {
    name: &'static str,
    shards: usize,
}

const CONFIGS: [Config; 4] = [
    Config {
        name: "unsharded, one Query (baseline)",
        shards: 1,
    },
    Config {
        name: "n = 10",
        shards: 10,
    },
    Config {
        name: "n = 100",
        shards: 100,
    },
    Config {
        name: "n = 1,000",
        shards: 1000,
    },
];

/// The four repositories of part 1, on one client.
struct Repos {
    flat: Repo<FlatScore>,
    s10: Repo<Score10>,
    s100: Repo<Score100>,
    s1000: Repo<Score1000>,
}

fn ranks<E: Ranked>(v: Vec<E>) -> Vec<(u64, String)> {
    v.iter().map(Ranked::rank).collect()
}

impl Repos {
    fn new(client: Client, table: &str) -> Repos {
        Repos {
            flat: Repo::new(client.clone(), table),
            s10: Repo::new(client.clone(), table),
            s100: Repo::new(client.clone(), table),
            s1000: Repo::new(client, table),
        }
    }

    fn with_stats(&self, stats: &Arc<HotKeyStats>) -> Repos {
        Repos {
            flat: self.flat.clone().with_stats(stats.clone()),
            s10: self.s10.clone().with_stats(stats.clone()),
            s100: self.s100.clone().with_stats(stats.clone()),
            s1000: self.s1000.clone().with_stats(stats.clone()),
        }
    }

    /// The top 100 of configuration `c`, measured: (answer, wall time, peak heap above start).
    async fn top(&self, c: usize) -> (Vec<(u64, String)>, Duration, usize) {
        let heap = heap_reset();
        let start = Instant::now();
        // The answer is kept until the peak is read: it is part of what the query costs.
        let answer = match c {
            0 => ranks(
                FlatScore::query(&self.flat, GAME)
                    .descending()
                    .limit(TOP)
                    .collect()
                    .await
                    .expect("unsharded top-100"),
            ),
            1 => ranks(
                Score10::query(&self.s10, GAME)
                    .descending()
                    .limit(TOP)
                    .collect()
                    .await
                    .expect("n = 10 top-100"),
            ),
            2 => ranks(
                Score100::query(&self.s100, GAME)
                    .descending()
                    .limit(TOP)
                    .collect()
                    .await
                    .expect("n = 100 top-100"),
            ),
            _ => ranks(
                Score1000::query(&self.s1000, GAME)
                    .descending()
                    .limit(TOP)
                    .collect()
                    .await
                    .expect("n = 1000 top-100"),
            ),
        };
        let elapsed = start.elapsed();
        let peak = heap_peak_above(heap);
        (answer, elapsed, peak)
    }

    /// The physical limit of configuration `c`'s fan-out on this machine: its `n` shard
    /// Queries (the key condition and first `Limit` the engine sends), all issued at once
    /// with `join_all`, nothing merged. The wall time.
    async fn raw(&self, c: usize) -> Duration {
        let n = CONFIGS[c].shards;
        let limit = first_share(TOP, n) as i32;
        let client = self.flat.client();
        let table = self.flat.table();
        let start = Instant::now();
        let pages = futures::future::join_all((0..n).map(|shard| {
            client
                .query()
                .table_name(table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :p)")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#sk", "sk")
                .expression_attribute_values(
                    ":pk",
                    aws_sdk_dynamodb::types::AttributeValue::S(format!("S{n}#{GAME}#{shard}")),
                )
                .expression_attribute_values(
                    ":p",
                    aws_sdk_dynamodb::types::AttributeValue::S("SCORE#".to_owned()),
                )
                .scan_index_forward(false)
                .limit(limit)
                .send()
        }))
        .await;
        let elapsed = start.elapsed();
        let items: usize = pages
            .into_iter()
            .map(|page| page.expect("raw shard query").items().len())
            .sum();
        assert!(
            items >= TOP,
            "{}: raw fan-out read {items} items",
            CONFIGS[c].name
        );
        elapsed
    }

    /// Items on each shard of configuration `c`.
    async fn per_shard(&self, c: usize) -> Vec<u64> {
        match c {
            0 => FlatScore::query(&self.flat, GAME).count_by_shard().await,
            1 => Score10::query(&self.s10, GAME).count_by_shard().await,
            2 => Score100::query(&self.s100, GAME).count_by_shard().await,
            _ => Score1000::query(&self.s1000, GAME).count_by_shard().await,
        }
        .expect("count by shard")
    }
}

fn add(sum: &mut Option<f64>, value: Option<f64>) {
    *sum = Some(sum.unwrap_or(0.0) + value.unwrap_or(f64::NAN));
}

fn kib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / 1024.0)
}

fn mib(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// What one configuration cost.
struct Measured {
    requests: u64,
    max_in_flight: usize,
    scanned: u64,
    returned: u64,
    predicted: u64,
    units: f64,
    /// Keys DynamoDB charged read units to (of the shards read).
    charged_keys: usize,
    times_ms: Vec<f64>,
    /// CPU ms over the timed rounds: (this process, DynamoDB Local).
    cpu: (Option<f64>, Option<f64>),
    heaps: Vec<usize>,
    /// Whether the request and item counts were the same in every round.
    stable: bool,
}

async fn part_one(local: &Backend, rounds: usize) {
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-scale");
    let loader = Repos::new(Client::new(&sdk), &table);
    loader.flat.create_table().await.expect("create table");
    let scores = scores();
    let load = Instant::now();
    let flat: Vec<FlatScore> = scores.iter().map(FlatScore::from).collect();
    let s10: Vec<Score10> = scores.iter().map(Score10::from).collect();
    let s100: Vec<Score100> = scores.iter().map(Score100::from).collect();
    let s1000: Vec<Score1000> = scores.iter().map(Score1000::from).collect();
    let (a, b, c, d) = tokio::join!(
        loader.flat.batch_put(&flat),
        loader.s10.batch_put(&s10),
        loader.s100.batch_put(&s100),
        loader.s1000.batch_put(&s1000),
    );
    for result in [a, b, c, d] {
        result.expect("load scores");
    }
    println!(
        "Part 1: table {table}, {SCORES} scores of {GAME} stored 4 times ({} items) in {:.1} s",
        4 * SCORES,
        load.elapsed().as_secs_f64()
    );
    let expected = expected_top(&scores);
    let mut predicted = Vec::new();
    for (c, config) in CONFIGS.iter().enumerate() {
        let per_shard = loader.per_shard(c).await;
        assert_eq!(per_shard.len(), config.shards);
        assert_eq!(per_shard.iter().sum::<u64>(), SCORES as u64);
        let share = first_share(TOP, config.shards) as u64;
        predicted.push(per_shard.iter().map(|&s| s.min(share)).sum::<u64>());
        let (min, max) = (
            per_shard.iter().min().expect("shards"),
            per_shard.iter().max().expect("shards"),
        );
        let empty = per_shard.iter().filter(|&&s| s == 0).count();
        let winners: Vec<usize> = if config.shards == 1 {
            vec![TOP]
        } else {
            let mut w = vec![0; config.shards];
            for (_, player) in &expected {
                let shard = match c {
                    1 => Score10::shard_for(player),
                    2 => Score100::shard_for(player),
                    _ => Score1000::shard_for(player),
                }
                .expect("shard");
                w[shard as usize] += 1;
            }
            w
        };
        println!(
            "  {}: items per shard min {min}, max {max}, {empty} empty; first Limit per shard {share}; \
             most top-100 winners on one shard: {}",
            config.name,
            winners.iter().max().expect("shards"),
        );
    }

    let faults = Faults::new();
    let counter = ReadCounter::default();
    let client = counter.on(&faults.client(&sdk));
    let repos = Repos::new(client, &table);
    println!(
        "  fan-out: {} / {} / {} requests at once at n = 10 / 100 / 1,000 (the repository's \
         default), {} ms injected per request",
        repos.s10.fan_out(10),
        repos.s100.fan_out(100),
        repos.s1000.fan_out(1000),
        LATENCY.as_millis()
    );
    faults.set_latency(LATENCY);
    let meter = CpuMeter::new();

    let mut measured: Vec<Measured> = Vec::new();
    for c in 0..CONFIGS.len() {
        // Counts and the answer, from one run.
        faults.reset_counts();
        counter.reset();
        let (answer, _, _) = repos.top(c).await;
        assert_eq!(answer, expected, "{}: wrong top-100", CONFIGS[c].name);
        let (scanned, returned) = counter.read();
        let (requests, max_in_flight) = (faults.requests("Query"), faults.max_in_flight());
        // Read units, from DynamoDB's ConsumedCapacity through the repository's stats.
        let stats = Arc::new(HotKeyStats::new(Duration::from_secs(3600)));
        let (answer, _, _) = repos.with_stats(&stats).top(c).await;
        assert_eq!(answer, expected);
        let report = stats.report();
        let units: f64 = report.keys.iter().map(|k| k.read_units).sum();
        let charged_keys = report.keys.iter().filter(|k| k.read_units > 0.0).count();
        measured.push(Measured {
            requests,
            max_in_flight,
            scanned,
            returned,
            predicted: predicted[c],
            units,
            charged_keys,
            times_ms: Vec::new(),
            cpu: (None, None),
            heaps: Vec::new(),
            stable: true,
        });
    }
    for _ in 0..WARM_UP_ROUNDS {
        for c in 0..CONFIGS.len() {
            std::hint::black_box(repos.top(c).await);
        }
    }
    // The raw fan-out of each sharded configuration, timed in the same rounds.
    let mut raw_ms: Vec<Vec<f64>> = vec![Vec::new(); CONFIGS.len()];
    for round in 0..rounds {
        for (c, times) in raw_ms.iter_mut().enumerate().skip(1) {
            times.push(repos.raw(c).await.as_secs_f64() * 1000.0);
        }
        for j in 0..CONFIGS.len() {
            let c = (round + j) % CONFIGS.len();
            faults.reset_counts();
            counter.reset();
            let before = meter.read();
            let (answer, elapsed, heap) = repos.top(c).await;
            let (client_cpu, server_cpu) = meter.read().since(&before);
            let m = &mut measured[c];
            add(&mut m.cpu.0, client_cpu);
            add(&mut m.cpu.1, server_cpu);
            m.times_ms.push(elapsed.as_secs_f64() * 1000.0);
            m.heaps.push(heap);
            m.stable &= answer == expected
                && faults.requests("Query") == m.requests
                && counter.read() == (m.scanned, m.returned);
        }
    }
    faults.clear();

    println!(
        "\n### Top-100 by shard count ({rounds} interleaved rounds after {WARM_UP_ROUNDS} warm-up \
         rounds, {} ms injected)\n",
        LATENCY.as_millis()
    );
    println!(
        "| configuration | Query requests | max in flight | items read (ScannedCount) | predicted | \
         read units (keys charged) | median ms | min ms | max ms | median / baseline | latency \
         floor ms | client CPU ms/run | DynamoDB Local CPU ms/run | peak heap KiB (median) | max \
         KiB | same counts every round |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let base = median(&measured[0].times_ms);
    for (config, m) in CONFIGS.iter().zip(&measured) {
        let t = median(&m.times_ms);
        let (min, max) = m
            .times_ms
            .iter()
            .fold((f64::MAX, 0.0_f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        let returned = if m.returned == m.scanned {
            String::new()
        } else {
            format!(" ({} returned)", m.returned)
        };
        // Every request waits the injected latency, at most `max in flight` at once.
        let floor = m.requests.div_ceil(m.max_in_flight.max(1) as u64) * LATENCY.as_millis() as u64;
        println!(
            "| {} | {} | {} | {}{returned} | {} | {:.1} ({}) | {t:.1} | {min:.1} | {max:.1} | {:.2}x | {floor} | {} | {} | {} | {} | {} |",
            config.name,
            m.requests,
            m.max_in_flight,
            m.scanned,
            m.predicted,
            m.units,
            m.charged_keys,
            t / base,
            per_run(m.cpu.0, m.times_ms.len()),
            per_run(m.cpu.1, m.times_ms.len()),
            kib(median(&m.heaps)),
            kib(*m.heaps.iter().max().expect("rounds")),
            if m.stable { "yes" } else { "no" },
        );
    }
    println!(
        "\n### Fan-out against the physical limit (same rounds)\n\n\
         | configuration | ours, defaults (median ms) | max in flight | raw `join_all` of the same \
         n Queries (median ms) | ours / raw | ours / unsharded |\n|---|---:|---:|---:|---:|---:|"
    );
    for (c, raw_times) in raw_ms.iter().enumerate().skip(1) {
        let ours = median(&measured[c].times_ms);
        let raw = median(raw_times);
        println!(
            "| {} | {ours:.1} | {} | {raw:.1} | {:.2}x | {:.2}x |",
            CONFIGS[c].name,
            measured[c].max_in_flight,
            ours / raw,
            ours / base
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Part 2: a stream of 100,000 items.

/// An event of a log sharded 10 ways: ~170 bytes as stored.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "LOG#{log_id}", shard = "hash(event_id)", n = 10)]
#[sk(template = "EV#{seq}")]
struct Event {
    log_id: String,
    event_id: String,
    seq: u64,
    payload: String,
}

const LOG: &str = "l1";
const EVENTS: u64 = 100_000;
const LOAD_CHUNK: usize = 5_000;
const LOAD_CHUNKS_AT_ONCE: usize = 2;
const PAGE_SIZE: u32 = 1_000;
const CHILD_ENV: &str = "SCALE_CHILD";
const TABLE_ENV: &str = "SCALE_TABLE";
/// The sides of part 2, each run in a process of its own: `-paged` adds `.page_size(1000)`,
/// `-half` reads only the first half of the log (`seq < 50,000`), `-c2` runs the query with
/// `Repo::with_concurrency(2)`, `-no-read-ahead` turns the engine's read-ahead off
/// (`sharded_runtime::__bench::set_read_ahead(false)`: a shard's next page is asked for only
/// when the merge has used its whole buffer, as before streams read ahead).
const SIDES: [(&str, &str); 8] = [
    ("stream", "stream(), defaults (1,000-item pages)"),
    ("stream-no-read-ahead", "stream(), defaults, read-ahead off"),
    ("collect", "collect(), defaults (1 MB pages)"),
    ("stream-paged", "stream(), .page_size(1000)"),
    ("collect-paged", "collect(), .page_size(1000)"),
    (
        "stream-paged-half",
        "stream(), .page_size(1000), half the log",
    ),
    (
        "collect-paged-half",
        "collect(), .page_size(1000), half the log",
    ),
    (
        "stream-paged-c2",
        "stream(), .page_size(1000), concurrency 2",
    ),
];

fn event(seq: u64) -> Event {
    Event {
        log_id: LOG.into(),
        event_id: format!("evt-{seq:08}"),
        seq,
        payload: format!(
            "{{\"kind\":\"score\",\"player\":\"player-{:06}\",\"delta\":{},\"note\":\"padding-to-size\"}}",
            seq % 997,
            seq % 100
        ),
    }
}

/// `VmRSS` and `VmHWM` of this process, in KiB.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// What a child measured, one `key=value` line on its stdout.
#[derive(Debug, Default)]
struct ChildReport {
    items: u64,
    requests: u64,
    in_flight: usize,
    scanned: u64,
    wall_ms: f64,
    /// CPU ms of the child during the query.
    cpu_ms: f64,
    heap_peak: usize,
    heap_start: usize,
    rss_before_kib: u64,
    hwm_kib: u64,
    hwm_reset: bool,
}

impl ChildReport {
    fn line(&self) -> String {
        format!(
            "SCALE items={} requests={} in_flight={} scanned={} wall_ms={:.1} cpu_ms={:.0} \
             heap_peak={} heap_start={} rss_before_kib={} hwm_kib={} hwm_reset={}",
            self.items,
            self.requests,
            self.in_flight,
            self.scanned,
            self.wall_ms,
            self.cpu_ms,
            self.heap_peak,
            self.heap_start,
            self.rss_before_kib,
            self.hwm_kib,
            self.hwm_reset
        )
    }

    fn parse(stdout: &str) -> Option<ChildReport> {
        let line = stdout.lines().find(|l| l.starts_with("SCALE "))?;
        let mut r = ChildReport::default();
        for pair in line.split_whitespace().skip(1) {
            let (key, value) = pair.split_once('=')?;
            match key {
                "items" => r.items = value.parse().ok()?,
                "requests" => r.requests = value.parse().ok()?,
                "in_flight" => r.in_flight = value.parse().ok()?,
                "scanned" => r.scanned = value.parse().ok()?,
                "wall_ms" => r.wall_ms = value.parse().ok()?,
                "cpu_ms" => r.cpu_ms = value.parse().ok()?,
                "heap_peak" => r.heap_peak = value.parse().ok()?,
                "heap_start" => r.heap_start = value.parse().ok()?,
                "rss_before_kib" => r.rss_before_kib = value.parse().ok()?,
                "hwm_kib" => r.hwm_kib = value.parse().ok()?,
                "hwm_reset" => r.hwm_reset = value.parse().ok()?,
                _ => {}
            }
        }
        Some(r)
    }
}

/// A child process: one side of part 2, against the table the parent loaded.
async fn child(mode: &str) {
    let table = std::env::var(TABLE_ENV).expect("SCALE_TABLE");
    let local = common::backend().await;
    let sdk = local.sdk_config().await;
    let faults = Faults::new();
    let counter = ReadCounter::default();
    let mut repo: Repo<Event> = Repo::new(counter.on(&faults.client(&sdk)), &table);
    if mode.ends_with("-c2") {
        repo = repo.with_concurrency(2);
    }
    if mode.ends_with("-no-read-ahead") {
        sharded_runtime::__bench::set_read_ahead(false);
    }
    faults.set_latency(LATENCY);
    let paged = mode.contains("-paged");
    let half = mode.ends_with("-half");
    let query = || {
        let mut q = Event::query(&repo, LOG);
        if paged {
            q = q.page_size(PAGE_SIZE);
        }
        if half {
            q = q.sk(Event::sk_sort().lt(EVENTS / 2));
        }
        q
    };
    let (rss_before_kib, _) = rss_kib();
    // Linux: writing 5 to clear_refs resets the peak RSS to the current RSS.
    let hwm_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let meter = CpuMeter::new();
    let cpu_before = meter.read();
    let heap_start = heap_reset();
    let start = Instant::now();
    let items = if mode.starts_with("stream") {
        let mut stream = std::pin::pin!(query().stream());
        let mut count = 0_u64;
        let mut last = None;
        while let Some(event) = stream.next().await {
            let event = event.expect("stream");
            assert!(last < Some(event.seq), "out of order at {}", event.seq);
            last = Some(event.seq);
            count += 1;
        }
        count
    } else {
        let all = query().collect().await.expect("collect");
        assert!(all.windows(2).all(|w| w[0].seq < w[1].seq), "out of order");
        all.len() as u64
    };
    let wall_ms = start.elapsed().as_secs_f64() * 1000.0;
    let heap_peak = heap_peak_above(heap_start);
    let cpu_ms = meter.read().since(&cpu_before).0.unwrap_or(f64::NAN);
    let (_, hwm_kib) = rss_kib();
    let report = ChildReport {
        items,
        requests: faults.requests("Query"),
        in_flight: faults.max_in_flight(),
        scanned: counter.read().0,
        wall_ms,
        cpu_ms,
        heap_peak,
        heap_start,
        rss_before_kib,
        hwm_kib,
        hwm_reset,
    };
    println!("{}", report.line());
}

async fn part_two(local: &Backend) {
    let sdk = local.sdk_config().await;
    let table = unique_table_name("bench-scale-stream");
    let repo: Repo<Event> = Repo::new(Client::new(&sdk), &table);
    repo.create_table().await.expect("create table");
    let load = Instant::now();
    let chunks: Vec<Vec<Event>> = (0..EVENTS)
        .collect::<Vec<_>>()
        .chunks(LOAD_CHUNK)
        .map(|c| c.iter().map(|&s| event(s)).collect())
        .collect();
    let sample = sharded::capacity::item_size(&Event::to_item(&chunks[0][0]).expect("item"));
    futures::stream::iter(&chunks)
        .map(|chunk| repo.batch_put(chunk))
        .buffer_unordered(LOAD_CHUNKS_AT_ONCE)
        .for_each(|r| async move { r.expect("load events") })
        .await;
    let loaded = load.elapsed();
    drop(chunks);
    let per_shard = Event::query(&repo, LOG)
        .count_by_shard()
        .await
        .expect("count");
    assert_eq!(per_shard.iter().sum::<u64>(), EVENTS);
    // One untimed read of the whole log: without it, DynamoDB Local's work after the load
    // (seen as ~2 s more JVM CPU) lands on whichever side runs first.
    let warm_up = Instant::now();
    let read = Event::query(&repo, LOG)
        .stream()
        .fold(0_u64, |n, e| async move {
            e.expect("warm-up read");
            n + 1
        })
        .await;
    assert_eq!(read, EVENTS);
    let warm_up = warm_up.elapsed();
    println!(
        "\nPart 2: table {table}, {EVENTS} events of {LOG} (~{sample} bytes each by DynamoDB's size \
         rules; per shard {per_shard:?}) loaded in {:.1} s, {} chunks of {LOAD_CHUNK} at once, no \
         injected latency; one untimed warm-up read of the log ({:.1} s)",
        loaded.as_secs_f64(),
        LOAD_CHUNKS_AT_ONCE,
        warm_up.as_secs_f64()
    );

    let exe = std::env::current_exe().expect("current_exe");
    let meter = CpuMeter::new();
    let mut reports = Vec::new();
    // `SCALE_SIDES=stream,stream-no-read-ahead` runs those sides only; `SCALE_STREAM_RUNS=3`
    // runs the chosen sides three times, interleaved (a row per run).
    let chosen: Option<Vec<String>> = std::env::var("SCALE_SIDES")
        .ok()
        .map(|v| v.split(',').map(|m| m.trim().to_owned()).collect());
    let runs: usize = std::env::var("SCALE_STREAM_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let sides: Vec<(&str, &str)> = SIDES
        .into_iter()
        .filter(|(mode, _)| chosen.as_ref().is_none_or(|c| c.iter().any(|m| m == mode)))
        .collect();
    for (mode, name) in (0..runs).flat_map(|_| sides.iter().copied()) {
        // DynamoDB Local's CPU over the child's whole life (it is idle while the child starts).
        let before = meter.read();
        let output = std::process::Command::new(&exe)
            .env(CHILD_ENV, mode)
            .env(TABLE_ENV, &table)
            .env("DYNAMODB_ENDPOINT", local.endpoint())
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run a child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        match ChildReport::parse(&stdout) {
            Some(r) if output.status.success() => {
                reports.push((name, r, meter.read().since(&before).1));
            }
            _ => println!(
                "  {name}: the child failed ({}), output: {stdout}",
                output.status
            ),
        }
    }
    println!(
        "\n### Stream vs collect of {EVENTS} items, n = 10, {} ms injected (one process per row)\n",
        LATENCY.as_millis()
    );
    println!(
        "| side | items | Query requests | max in flight | items read | wall ms | client CPU ms | DynamoDB Local CPU \
         ms | peak heap above start MiB | RSS before MiB | peak RSS (VmHWM) MiB | peak RSS - RSS \
         before MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, r, server_cpu) in &reports {
        println!(
            "| {name} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {:.1} | {:.1} | {:.1} |",
            r.items,
            r.requests,
            r.in_flight,
            r.scanned,
            r.wall_ms,
            r.cpu_ms,
            server_cpu.unwrap_or(f64::NAN),
            mib(r.heap_peak),
            r.rss_before_kib as f64 / 1024.0,
            r.hwm_kib as f64 / 1024.0,
            r.hwm_kib.saturating_sub(r.rss_before_kib) as f64 / 1024.0,
        );
    }
    // Read-ahead on against off, when both ran: medians over their runs.
    let median_of = |side: &str, value: fn(&ChildReport) -> f64| {
        let mut values: Vec<f64> = reports
            .iter()
            .filter(|(name, _, _)| *name == side)
            .map(|(_, r, _)| value(r))
            .collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    let (on, off) = (SIDES[0].1, SIDES[1].1);
    if let (Some(ahead), Some(sequential)) =
        (median_of(on, |r| r.wall_ms), median_of(off, |r| r.wall_ms))
    {
        let heap = |side| median_of(side, |r| r.heap_peak as f64).unwrap_or(f64::NAN);
        println!(
            "\nRead-ahead: median {ahead:.0} ms against {sequential:.0} ms with it off: {:.2}x \
             faster; peak heap {:.1} MiB against {:.1} MiB (the bound: shards x page x 2 items)",
            sequential / ahead,
            heap(on) / 1_048_576.0,
            heap(off) / 1_048_576.0
        );
    }
    if reports.iter().any(|(_, r, _)| !r.hwm_reset) {
        println!(
            "\n(VmHWM could not be reset before the query in some child: its peak RSS includes \
             the start-up.)"
        );
    }
}

async fn bench() {
    let rounds = std::env::var("SCALE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let local = common::backend().await;
    println!("{}", local);
    // `SCALE_PARTS=1` (or `2`) runs one part only.
    let parts = std::env::var("SCALE_PARTS").unwrap_or_else(|_| "12".to_owned());
    if parts.contains('1') {
        part_one(local, rounds).await;
    }
    if parts.contains('2') {
        part_two(local).await;
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match std::env::var(CHILD_ENV) {
        Ok(mode) => runtime.block_on(child(&mode)),
        Err(_) => runtime.block_on(bench()),
    }
}
