//! CPU time of this benchmark process and of the DynamoDB Local JVM it started, from `/proc`,
//! for the issue-3 DynamoDB benchmarks (`scatter_latency`, `repo_overhead`): it tells the
//! client's work from DynamoDB Local's when both share the machine's 2 cores.
//!
//! Not a benchmark target itself (cargo only discovers `benches/*.rs` and
//! `benches/*/main.rs`); a bench includes it with `mod cpu;`. Linux only; elsewhere, and when
//! DynamoDB Local was not started by this process (`DYNAMODB_ENDPOINT`, or the embedded
//! backend, whose work is this process's own CPU time), the server's readings are `None`. Resolution: one clock tick (`USER_HZ` = 100 assumed, i.e. 10 ms), so only sums over
//! many runs are meaningful.

/// CPU time (user + system) of process `pid` in ms.
fn process_cpu_ms(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name `(...)`: state, ppid, ..., utime (14th field), stime (15th).
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) * 10.0)
}

/// The `java` child process of this process: the DynamoDB Local that `sharded_testkit::local`
/// started.
pub fn dynamodb_local_pid() -> Option<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid = entry.file_name().into_string().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (open, close) = (stat.find('(')?, stat.rfind(')')?);
            let ppid = stat[close + 1..].split_whitespace().nth(1)?;
            (&stat[open + 1..close] == "java" && ppid == me).then_some(pid)
        })
}

/// Reads the CPU time of the client (this process) and of DynamoDB Local.
pub struct CpuMeter {
    server: Option<String>,
}

/// CPU ms used so far by the client and by DynamoDB Local.
#[derive(Clone, Copy)]
pub struct CpuReading {
    client: Option<f64>,
    server: Option<f64>,
}

impl CpuMeter {
    /// Finds DynamoDB Local's process; call after `common::backend()`.
    pub fn new() -> CpuMeter {
        CpuMeter {
            server: dynamodb_local_pid(),
        }
    }

    pub fn read(&self) -> CpuReading {
        CpuReading {
            client: process_cpu_ms("self"),
            server: self.server.as_deref().and_then(process_cpu_ms),
        }
    }
}

impl CpuReading {
    /// (client ms, DynamoDB Local ms) used between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuReading) -> (Option<f64>, Option<f64>) {
        let diff = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        (
            diff(self.client, earlier.client),
            diff(self.server, earlier.server),
        )
    }
}

/// `total / runs` in ms with two decimals, or `n/a`.
pub fn per_run(total: Option<f64>, runs: usize) -> String {
    match total {
        Some(ms) => format!("{:.2}", ms / runs as f64),
        None => "n/a".to_owned(),
    }
}
