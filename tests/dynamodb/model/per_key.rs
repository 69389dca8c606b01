//! Per-key layouts under stale directory caches: three processes, each a `Repo` with its own
//! copy of the layout directory, on one simulated clock; random writes, reads, clock moves
//! and the steps of changing a key's shard count (each tried whether it is due or not), all
//! against a reference model that knows the items, the directory, and what each process has
//! read of it and when.
//!
//! The guide's bound ("Timing assumptions") allows a stale answer only to a query that runs
//! longer than a lease; the simulated clock does not move during a request, so every read
//! here must be exact: no item lost, none shown twice, no value older than the last write
//! the model says succeeded. Every step's answer is predicted exactly: a write's outcome
//! (`AlreadyExists`, `ConditionFailed`, a transaction built under a layout that changed
//! before it committed refused with `Layout(Changed)`), and each layout step's refusal
//! (`CannotBegin`, `WrongPhase`, `TooEarly`, `OutOfRange`) from the directory and the clock.
//!
//! After every step each process (and a reader that holds no copy of the directory) reads
//! every key, and the item the step wrote; the directory as stored is the model's.
//!
//! Environment: `SHARDED_PER_KEY_SEED=<seed>` runs one sequence, `SHARDED_PER_KEY_SEEDS=<n>`
//! runs `n` from seeds drawn from the clock, `SHARDED_PER_KEY_STEPS=<steps>` sets their length;
//! the soak (`SHARDED_PER_KEY_SOAK=1 cargo test --release --test dynamodb -- per_key_soak
//! --ignored --nocapture`) runs 30 sequences of 300 steps unless those say otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sharded::capacity::ManualClock;
use sharded::layouts::{ChangeLayout, KeyEntry, LayoutError, LayoutTiming, Phase};
use sharded::schema::KeyLayout;
use sharded::transaction::Transaction;
use sharded::{Error, Repo, ShardedEntity};

use super::env;

/// A vote in a poll: polls are unsharded (`n = 1`) until one is widened, up to 8 shards.
/// `value` is what the last write set, so a stale copy shows.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[sharded(entity = "Vote")]
#[pk(template = "POLL#{poll}", shard = "hash(voter)", n = 1, max_n = 8)]
#[sk(template = "V#{voter}")]
#[gsi1(pk = "VOTER#{voter}", sk = "POLL#{poll}")]
pub struct Vote {
    pub poll: String,
    pub voter: String,
    pub value: u64,
}

const PROCESSES: usize = 3;
const POLLS: u8 = 3;
const VOTERS: u8 = 10;
const MAX_N: u32 = 8;
const LEASE: Duration = Duration::from_secs(10);
const MARGIN: Duration = Duration::from_secs(5);
const DEFAULT_SEEDS: [u64; 3] = [11, 12, 13];
const DEFAULT_STEPS: usize = 80;
const SOAK_SEQUENCES: u64 = 30;
const SOAK_STEPS: usize = 300;
const SHRINK_SECS: u64 = 120;

fn timing() -> LayoutTiming {
    // No background refresh: a process reads the directory when its lease ran out, before
    // the request that needs it, so what each process holds is the model's to know.
    LayoutTiming::new(LEASE, MARGIN).with_refresh_ahead(false)
}

fn poll_name(poll: u8) -> String {
    format!("p{poll}")
}

fn voter_name(voter: u8) -> String {
    format!("v{voter:02}")
}

fn logical(poll: u8) -> String {
    format!("POLL#{}", poll_name(poll))
}

fn vote(poll: u8, voter: u8, value: u64) -> Vote {
    Vote {
        poll: poll_name(poll),
        voter: voter_name(voter),
        value,
    }
}

/// One action of a transaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TxAction {
    Put { poll: u8, voter: u8, value: u64 },
    Delete { poll: u8, voter: u8 },
}

impl TxAction {
    fn item(&self) -> (u8, u8) {
        match *self {
            TxAction::Put { poll, voter, .. } | TxAction::Delete { poll, voter } => (poll, voter),
        }
    }
}

/// What a step of the layout change an operator process tries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// `repo.put`
    Put {
        p: usize,
        poll: u8,
        voter: u8,
        value: u64,
    },
    /// `repo.put_new`
    PutNew {
        p: usize,
        poll: u8,
        voter: u8,
        value: u64,
    },
    /// `repo.put_if(.., value = expected)`
    PutIf {
        p: usize,
        poll: u8,
        voter: u8,
        value: u64,
        expected: u64,
    },
    /// `Vote::update(..).set(value).condition(value = expected)`
    Update {
        p: usize,
        poll: u8,
        voter: u8,
        value: u64,
        expected: u64,
    },
    /// `Vote::delete`
    Delete { p: usize, poll: u8, voter: u8 },
    /// `repo.batch_put` of up to three votes
    BatchPut {
        p: usize,
        votes: [Option<(u8, u8, u64)>; 3],
    },
    /// A transaction built now (placed by the directory the process holds), kept until its
    /// `Commit` (a later build replaces it).
    Build {
        p: usize,
        actions: [Option<TxAction>; 2],
    },
    /// The process's built transaction committed.
    Commit { p: usize },
    /// `Vote::get`
    Get { p: usize, poll: u8, voter: u8 },
    /// `Vote::query(..)` collected in either order, with a limit or not.
    Query {
        p: usize,
        poll: u8,
        descending: bool,
        limit: Option<usize>,
    },
    /// `Vote::query(..).count()`
    Count { p: usize, poll: u8 },
    /// `Vote::query_gsi1(voter)` collected: the voter's votes in every poll.
    Gsi { p: usize, voter: u8 },
    /// The clock moves forward.
    Tick { secs: u64 },
    /// `layouts().begin(poll, to)`
    Begin { p: usize, poll: u8, to: u32 },
    /// `layouts().advance(poll)`
    Advance { p: usize, poll: u8 },
    /// `layouts().migrate(poll)`, under a write budget or not.
    Migrate { p: usize, poll: u8, budget: bool },
    /// `layouts().finish(poll)`
    Finish { p: usize, poll: u8 },
}

impl Op {
    fn kind(&self) -> &'static str {
        match self {
            Op::Put { .. } => "put",
            Op::PutNew { .. } => "put_new",
            Op::PutIf { .. } => "put_if",
            Op::Update { .. } => "update",
            Op::Delete { .. } => "delete",
            Op::BatchPut { .. } => "batch_put",
            Op::Build { .. } => "transaction built",
            Op::Commit { .. } => "transaction commit",
            Op::Get { .. } => "get",
            Op::Query { .. } => "query collect",
            Op::Count { .. } => "count",
            Op::Gsi { .. } => "query_gsi1",
            Op::Tick { .. } => "clock advance",
            Op::Begin { .. } => "layouts begin",
            Op::Advance { .. } => "layouts advance",
            Op::Migrate { .. } => "layouts migrate",
            Op::Finish { .. } => "layouts finish",
        }
    }

    /// The polls whose reads the step may change for some process: the polls it wrote, or
    /// all of them after a clock move or a layout step (a process may then read the
    /// directory again, or hold a copy older than the table's).
    fn polls(&self) -> Vec<u8> {
        match *self {
            Op::BatchPut { votes, .. } => votes.iter().flatten().map(|v| v.0).collect(),
            Op::Commit { .. }
            | Op::Tick { .. }
            | Op::Begin { .. }
            | Op::Advance { .. }
            | Op::Migrate { .. }
            | Op::Finish { .. } => (0..POLLS).collect(),
            _ => self.item().map(|(poll, _)| poll).into_iter().collect(),
        }
    }

    /// The item the step wrote or read, checked through every process after it.
    fn item(&self) -> Option<(u8, u8)> {
        match *self {
            Op::Put { poll, voter, .. }
            | Op::PutNew { poll, voter, .. }
            | Op::PutIf { poll, voter, .. }
            | Op::Update { poll, voter, .. }
            | Op::Delete { poll, voter, .. }
            | Op::Get { poll, voter, .. } => Some((poll, voter)),
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// A step's answer, as predicted and as received.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    AlreadyExists,
    ConditionFailed,
    Changed,
    OutOfRange,
    CannotBegin,
    WrongPhase,
    TooEarly,
    ItemsRemain,
}

fn outcome_of(result: Result<(), Error>) -> Result<Outcome, String> {
    match result {
        Ok(()) => Ok(Outcome::Ok),
        Err(Error::AlreadyExists { .. }) => Ok(Outcome::AlreadyExists),
        Err(Error::ConditionFailed { .. }) => Ok(Outcome::ConditionFailed),
        Err(Error::Layout(e)) => match e {
            LayoutError::Changed { .. } => Ok(Outcome::Changed),
            LayoutError::OutOfRange { .. } => Ok(Outcome::OutOfRange),
            LayoutError::CannotBegin { .. } => Ok(Outcome::CannotBegin),
            LayoutError::WrongPhase { .. } => Ok(Outcome::WrongPhase),
            LayoutError::TooEarly { .. } => Ok(Outcome::TooEarly),
            LayoutError::ItemsRemain { .. } => Ok(Outcome::ItemsRemain),
            other => Err(format!("unexpected layout error: {other}")),
        },
        Err(other) => Err(format!("unexpected error: {other}")),
    }
}

/// How a process treats a key: its layout and whether it is changing (`KeyState`).
type KeyView = (KeyLayout, Option<Phase>);

fn view(entries: &BTreeMap<String, KeyEntry>, key: &str) -> KeyView {
    entries.get(key).map_or((KeyLayout::steady(1), None), |e| {
        (e.layout(), (e.phase != Phase::Steady).then_some(e.phase))
    })
}

/// A transaction as built: its actions, and the view of each key it was placed under.
type Built = (Vec<TxAction>, Vec<(String, KeyView)>);

/// The reference: the items, the directory, and what each process read of it and when.
#[derive(Debug, Clone, Default)]
struct Model {
    items: BTreeMap<(u8, u8), u64>,
    directory: BTreeMap<String, KeyEntry>,
    /// Keys whose migration ran (in their current `writing` phase).
    migrated: BTreeSet<String>,
    now: Duration,
    /// Per process: the directory it read and when (`None`: not read, or forgotten after a
    /// step it wrote).
    caches: [Option<(BTreeMap<String, KeyEntry>, Duration)>; PROCESSES],
    /// Per process: the transaction it built, with the view of each key it placed under.
    pending: [Option<Built>; PROCESSES],
}

impl Model {
    /// A request of process `p` that places a key: the directory read again when its lease
    /// ran out (or was never read).
    fn refresh(&mut self, p: usize) {
        let fresh = match &self.caches[p] {
            Some((_, read_at)) => self.now.saturating_sub(*read_at) >= LEASE,
            None => true,
        };
        if fresh {
            self.caches[p] = Some((self.directory.clone(), self.now));
        }
    }

    fn cached_view(&self, p: usize, key: &str) -> KeyView {
        match &self.caches[p] {
            Some((entries, _)) => view(entries, key),
            None => (KeyLayout::steady(1), None),
        }
    }

    fn sorted(&self, poll: u8) -> Vec<Vote> {
        self.items
            .iter()
            .filter(|((q, _), _)| *q == poll)
            .map(|(&(q, v), &value)| vote(q, v, value))
            .collect()
    }

    fn due(&self, entry: &KeyEntry) -> bool {
        self.now >= entry.since + LEASE + MARGIN
    }

    /// The predicted answer of a write or step, and the model moved past it.
    fn apply(&mut self, op: &Op) -> Outcome {
        match *op {
            Op::Put {
                p,
                poll,
                voter,
                value,
            } => {
                self.refresh(p);
                self.items.insert((poll, voter), value);
                Outcome::Ok
            }
            Op::PutNew {
                p,
                poll,
                voter,
                value,
            } => {
                self.refresh(p);
                if self.items.contains_key(&(poll, voter)) {
                    return Outcome::AlreadyExists;
                }
                self.items.insert((poll, voter), value);
                Outcome::Ok
            }
            Op::PutIf {
                p,
                poll,
                voter,
                value,
                expected,
            }
            | Op::Update {
                p,
                poll,
                voter,
                value,
                expected,
            } => {
                self.refresh(p);
                if self.items.get(&(poll, voter)) != Some(&expected) {
                    return Outcome::ConditionFailed;
                }
                self.items.insert((poll, voter), value);
                Outcome::Ok
            }
            Op::Delete { p, poll, voter } => {
                self.refresh(p);
                self.items.remove(&(poll, voter));
                Outcome::Ok
            }
            Op::BatchPut { p, votes } => {
                self.refresh(p);
                for (poll, voter, value) in votes.into_iter().flatten() {
                    self.items.insert((poll, voter), value);
                }
                Outcome::Ok
            }
            Op::Build { p, actions } => {
                let actions: Vec<TxAction> = actions.into_iter().flatten().collect();
                let views = actions
                    .iter()
                    .map(|a| {
                        let key = logical(a.item().0);
                        let seen = self.cached_view(p, &key);
                        (key, seen)
                    })
                    .collect();
                self.pending[p] = Some((actions, views));
                Outcome::Ok
            }
            Op::Commit { p } => {
                let Some((actions, views)) = self.pending[p].take() else {
                    return Outcome::Ok;
                };
                self.refresh(p);
                if views
                    .iter()
                    .any(|(key, seen)| self.cached_view(p, key) != *seen)
                {
                    return Outcome::Changed;
                }
                for action in actions {
                    match action {
                        TxAction::Put { poll, voter, value } => {
                            self.items.insert((poll, voter), value);
                        }
                        TxAction::Delete { poll, voter } => {
                            self.items.remove(&(poll, voter));
                        }
                    }
                }
                Outcome::Ok
            }
            Op::Tick { secs } => {
                self.now += Duration::from_secs(secs);
                Outcome::Ok
            }
            Op::Begin { p, poll, to } => {
                let key = logical(poll);
                if !(1..=MAX_N).contains(&to) {
                    return Outcome::OutOfRange;
                }
                let from = match self.directory.get(&key) {
                    None => 1,
                    Some(e) if e.phase == Phase::Steady => e.to,
                    Some(_) => return Outcome::CannotBegin,
                };
                if from == to {
                    return Outcome::CannotBegin;
                }
                self.set(p, &key, Some((from, to, Phase::Reading)));
                Outcome::Ok
            }
            Op::Advance { p, poll } => {
                let key = logical(poll);
                match self.directory.get(&key).copied() {
                    Some(e) if e.phase == Phase::Reading => {
                        if !self.due(&e) {
                            return Outcome::TooEarly;
                        }
                        self.set(p, &key, Some((e.from, e.to, Phase::Writing)));
                        Outcome::Ok
                    }
                    _ => Outcome::WrongPhase,
                }
            }
            Op::Migrate { poll, .. } => {
                let key = logical(poll);
                match self.directory.get(&key).copied() {
                    Some(e) if e.phase == Phase::Writing => {
                        if !self.due(&e) {
                            return Outcome::TooEarly;
                        }
                        self.migrated.insert(key);
                        Outcome::Ok
                    }
                    _ => Outcome::WrongPhase,
                }
            }
            Op::Finish { p, poll } => {
                let key = logical(poll);
                match self.directory.get(&key).copied() {
                    Some(e) if e.phase == Phase::Writing => {
                        if !self.due(&e) {
                            return Outcome::TooEarly;
                        }
                        let next = (e.to != 1).then_some((e.from, e.to, Phase::Steady));
                        self.set(p, &key, next);
                        Outcome::Ok
                    }
                    _ => Outcome::WrongPhase,
                }
            }
            Op::Get { .. } | Op::Query { .. } | Op::Count { .. } | Op::Gsi { .. } => {
                unreachable!("reads are compared, not applied")
            }
        }
    }

    /// A step written by process `p`: the directory changes, and `p` forgets its copy.
    fn set(&mut self, p: usize, key: &str, entry: Option<(u32, u32, Phase)>) {
        match entry {
            Some((from, to, phase)) => {
                self.directory.insert(
                    key.to_owned(),
                    KeyEntry {
                        from,
                        to,
                        phase,
                        since: self.now,
                    },
                );
            }
            None => {
                self.directory.remove(key);
            }
        }
        self.migrated.remove(key);
        self.caches[p] = None;
    }

    /// Whether `finish` may find items left at the previous count: only before the key's
    /// migration ran in this phase (after it, every process writes at the new count).
    fn finish_may_find_items(&self, op: &Op) -> bool {
        match *op {
            Op::Finish { poll, .. } => {
                let key = logical(poll);
                matches!(self.directory.get(&key), Some(e) if e.phase == Phase::Writing && self.due(e))
                    && !self.migrated.contains(&key)
            }
            _ => false,
        }
    }
}

/// The seeded, weighted generator.
struct Generator {
    rng: fastrand::Rng,
    next_value: u64,
}

impl Generator {
    fn new(seed: u64) -> Self {
        Generator {
            rng: fastrand::Rng::with_seed(seed),
            next_value: 1,
        }
    }

    fn value(&mut self) -> u64 {
        self.next_value += 1;
        self.next_value
    }

    /// A value the condition of a write expects: half the time the stored one.
    fn expected(&mut self, model: &Model, poll: u8, voter: u8) -> u64 {
        match model.items.get(&(poll, voter)) {
            Some(&v) if self.rng.bool() => v,
            _ => self.rng.u64(0..self.next_value + 1),
        }
    }

    fn next(&mut self, model: &Model) -> Op {
        let r = &mut self.rng;
        let p = r.usize(0..PROCESSES);
        let poll = r.u8(0..POLLS);
        let voter = r.u8(0..VOTERS);
        match r.u32(0..100) {
            0..=13 => Op::Put {
                p,
                poll,
                voter,
                value: self.value(),
            },
            14..=19 => Op::PutNew {
                p,
                poll,
                voter,
                value: self.value(),
            },
            20..=25 => Op::PutIf {
                p,
                poll,
                voter,
                expected: self.expected(model, poll, voter),
                value: self.value(),
            },
            26..=31 => Op::Update {
                p,
                poll,
                voter,
                expected: self.expected(model, poll, voter),
                value: self.value(),
            },
            32..=38 => Op::Delete { p, poll, voter },
            39..=42 => {
                let mut votes = [None; 3];
                let mut seen = BTreeSet::new();
                for slot in &mut votes {
                    let (q, v) = (self.rng.u8(0..POLLS), self.rng.u8(0..VOTERS));
                    if seen.insert((q, v)) {
                        *slot = Some((q, v, self.value()));
                    }
                }
                Op::BatchPut { p, votes }
            }
            43..=46 => {
                let mut actions = [None; 2];
                let mut seen = BTreeSet::new();
                for slot in &mut actions {
                    let (q, v) = (self.rng.u8(0..POLLS), self.rng.u8(0..VOTERS));
                    if seen.insert((q, v)) {
                        *slot = Some(if self.rng.u8(0..3) == 0 {
                            TxAction::Delete { poll: q, voter: v }
                        } else {
                            TxAction::Put {
                                poll: q,
                                voter: v,
                                value: self.value(),
                            }
                        });
                    }
                }
                Op::Build { p, actions }
            }
            47..=50 => Op::Commit { p },
            51..=54 => Op::Get { p, poll, voter },
            55..=59 => Op::Query {
                p,
                poll,
                descending: r.bool(),
                limit: r.bool().then(|| r.usize(1..5)),
            },
            60..=62 => Op::Count { p, poll },
            63..=65 => Op::Gsi { p, voter },
            // Within a lease, and past a lease and a margin.
            66..=75 => Op::Tick { secs: r.u64(1..6) },
            76..=79 => Op::Tick {
                secs: r.u64(10..20),
            },
            80..=83 => Op::Begin {
                p,
                poll,
                to: r.u32(1..=MAX_N),
            },
            step => {
                // Three times in four, a key that is changing: most steps follow a change
                // (due or not), the rest are tried on any key.
                let changing: Vec<u8> = (0..POLLS)
                    .filter(|q| {
                        matches!(model.directory.get(&logical(*q)), Some(e) if e.phase != Phase::Steady)
                    })
                    .collect();
                let poll = if !changing.is_empty() && r.u8(0..4) != 0 {
                    changing[r.usize(0..changing.len())]
                } else {
                    poll
                };
                match step {
                    84..=89 => Op::Advance { p, poll },
                    90..=94 => Op::Migrate {
                        p,
                        poll,
                        budget: r.bool(),
                    },
                    _ => Op::Finish { p, poll },
                }
            }
        }
    }
}

/// Why a sequence failed.
#[derive(Debug, Clone)]
struct Failure {
    check: String,
    detail: String,
}

fn fail(check: impl Into<String>, detail: impl Into<String>) -> Failure {
    Failure {
        check: check.into(),
        detail: detail.into(),
    }
}

/// One sequence's table, processes and clock, and the model beside them.
struct Run {
    clock: ManualClock,
    processes: Vec<Repo<Vote>>,
    /// Holds no copy of the directory (a lease of zero): reads at the directory as it is.
    fresh: Repo<Vote>,
    pending: Vec<Option<Transaction>>,
    model: Model,
}

/// A process: its own repository (its own directory cache), on the shared clock.
fn process(client: &aws_sdk_dynamodb::Client, table: &str, clock: &ManualClock) -> Repo<Vote> {
    Repo::<Vote>::new(client.clone(), table).with_layout_clocks(
        timing(),
        Arc::new(clock.clone()),
        Arc::new(clock.clone()),
    )
}

/// A reader that holds no copy of the directory (a lease of zero: it reads the directory
/// before every request), so its answers show the table as the directory says now.
fn fresh_reader(client: &aws_sdk_dynamodb::Client, table: &str) -> Repo<Vote> {
    Repo::<Vote>::new(client.clone(), table)
        .with_layout_timing(LayoutTiming::new(Duration::ZERO, Duration::ZERO))
}

impl Run {
    async fn new() -> Run {
        let base = crate::support::repo::<Vote>("model_per_key").await;
        let clock = ManualClock::new();
        let processes = (0..PROCESSES)
            .map(|_| process(base.client(), base.table(), &clock))
            .collect();
        let fresh = fresh_reader(base.client(), base.table());
        Run {
            clock,
            processes,
            fresh,
            pending: (0..PROCESSES).map(|_| None).collect(),
            model: Model::default(),
        }
    }

    /// Sends `op`, compares its answer with the model's, then checks every process's reads.
    async fn step(&mut self, op: &Op) -> Result<(), Failure> {
        let name = op.kind();
        match *op {
            Op::Get { p, poll, voter } => {
                self.model.refresh(p);
                let got = Vote::get(&self.processes[p], &poll_name(poll), &voter_name(voter))
                    .await
                    .map_err(|e| fail(name, e.to_string()))?;
                let want = self
                    .model
                    .items
                    .get(&(poll, voter))
                    .map(|&v| vote(poll, voter, v));
                if got != want {
                    return Err(fail(name, format!("got {got:?}, the model has {want:?}")));
                }
            }
            Op::Query {
                p,
                poll,
                descending,
                limit,
            } => {
                self.model.refresh(p);
                let mut query = Vote::query(&self.processes[p], &poll_name(poll));
                if descending {
                    query = query.descending();
                }
                if let Some(k) = limit {
                    query = query.limit(k);
                }
                let got = query
                    .collect()
                    .await
                    .map_err(|e| fail(name, e.to_string()))?;
                let mut want = self.model.sorted(poll);
                if descending {
                    want.reverse();
                }
                if let Some(k) = limit {
                    want.truncate(k);
                }
                if got != want {
                    return Err(fail(name, format!("got {got:?}, the model has {want:?}")));
                }
            }
            Op::Count { p, poll } => {
                self.model.refresh(p);
                let got = Vote::query(&self.processes[p], &poll_name(poll))
                    .count()
                    .await
                    .map_err(|e| fail(name, e.to_string()))?;
                let want = self.model.sorted(poll).len() as u64;
                if got != want {
                    return Err(fail(name, format!("counted {got}, the model has {want}")));
                }
            }
            Op::Gsi { p, voter } => {
                self.model.refresh(p);
                let got = Vote::query_gsi1(&self.processes[p], &voter_name(voter))
                    .collect()
                    .await
                    .map_err(|e| fail(name, e.to_string()))?;
                let want: Vec<Vote> = (0..POLLS)
                    .filter_map(|q| {
                        self.model
                            .items
                            .get(&(q, voter))
                            .map(|&v| vote(q, voter, v))
                    })
                    .collect();
                if got != want {
                    return Err(fail(name, format!("got {got:?}, the model has {want:?}")));
                }
            }
            _ => {
                let may_find_items = self.model.finish_may_find_items(op);
                let before = self.model.clone();
                let want = self.model.apply(op);
                let got = self.send(op).await?;
                let accepted = got == want
                    || (may_find_items && got == Outcome::ItemsRemain && want == Outcome::Ok);
                if !accepted {
                    return Err(fail(
                        name,
                        format!("answered {got:?}, the model says {want:?}"),
                    ));
                }
                if got == Outcome::ItemsRemain {
                    // Items written before the migration ran are still at the previous
                    // count (the model keeps no places): the key stays in `writing`.
                    self.model = before;
                }
            }
        }
        self.check_every_process(op).await
    }

    async fn send(&mut self, op: &Op) -> Result<Outcome, Failure> {
        let name = op.kind();
        let result = match *op {
            Op::Put {
                p,
                poll,
                voter,
                value,
            } => self.processes[p].put(&vote(poll, voter, value)).await,
            Op::PutNew {
                p,
                poll,
                voter,
                value,
            } => self.processes[p].put_new(&vote(poll, voter, value)).await,
            Op::PutIf {
                p,
                poll,
                voter,
                value,
                expected,
            } => {
                self.processes[p]
                    .put_if(&vote(poll, voter, value), Vote::fields().value.eq(expected))
                    .await
            }
            Op::Update {
                p,
                poll,
                voter,
                value,
                expected,
            } => {
                let f = Vote::fields();
                Vote::update(&self.processes[p], &poll_name(poll), &voter_name(voter))
                    .set(f.value, value)
                    .condition(f.value.eq(expected))
                    .send()
                    .await
            }
            Op::Delete { p, poll, voter } => {
                Vote::delete(&self.processes[p], &poll_name(poll), &voter_name(voter)).await
            }
            Op::BatchPut { p, votes } => {
                let votes: Vec<Vote> = votes
                    .into_iter()
                    .flatten()
                    .map(|(q, v, value)| vote(q, v, value))
                    .collect();
                self.processes[p].batch_put(&votes).await
            }
            Op::Build { p, actions } => {
                let mut tx = self.processes[p].transaction();
                for action in actions.into_iter().flatten() {
                    tx = match action {
                        TxAction::Put { poll, voter, value } => tx.put(&vote(poll, voter, value)),
                        TxAction::Delete { poll, voter } => tx.delete(&vote(poll, voter, 0)),
                    };
                }
                self.pending[p] = Some(tx);
                Ok(())
            }
            Op::Commit { p } => match self.pending[p].take() {
                Some(tx) => tx.commit().await,
                None => Ok(()),
            },
            Op::Tick { secs } => {
                self.clock.advance(Duration::from_secs(secs));
                Ok(())
            }
            Op::Begin { p, poll, to } => self.processes[p]
                .layouts()
                .begin(&logical(poll), to)
                .await
                .map(drop),
            Op::Advance { p, poll } => self.processes[p]
                .layouts()
                .advance(&logical(poll))
                .await
                .map(drop),
            Op::Migrate { p, poll, budget } => {
                let layouts = self.processes[p].layouts();
                let layouts = if budget {
                    layouts.with_write_budget(10_000.0)
                } else {
                    layouts
                };
                match layouts.migrate(&logical(poll)).await {
                    Ok(report) if report.left > 0 || report.blocked > 0 => {
                        return Err(fail(
                            name,
                            format!("the migration left items behind: {report:?}"),
                        ))
                    }
                    other => other.map(drop),
                }
            }
            Op::Finish { p, poll } => self.processes[p]
                .layouts()
                .finish(&logical(poll))
                .await
                .map(drop),
            Op::Get { .. } | Op::Query { .. } | Op::Count { .. } | Op::Gsi { .. } => Ok(()),
        };
        outcome_of(result).map_err(|e| fail(name, e))
    }

    /// Every process (and the reader without a copy of the directory) reads each poll `op`
    /// may have changed for it and the item `op` touched: each answer is the model's; after
    /// a layout step, the directory is the model's.
    async fn check_every_process(&mut self, op: &Op) -> Result<(), Failure> {
        for p in 0..=PROCESSES {
            if p < PROCESSES {
                self.model.refresh(p);
            }
            let repo = self.processes.get(p).unwrap_or(&self.fresh);
            for poll in op.polls() {
                let got = Vote::query(repo, &poll_name(poll))
                    .collect()
                    .await
                    .map_err(|e| fail("check_every_process", e.to_string()))?;
                let want = self.model.sorted(poll);
                if got != want {
                    let lost: Vec<&Vote> = want.iter().filter(|v| !got.contains(v)).collect();
                    let extra: Vec<&Vote> = got.iter().filter(|v| !want.contains(v)).collect();
                    return Err(fail(
                        "check_every_process",
                        format!(
                            "process {p} reads {} as {got:?}; the model has {want:?} \
                             (missing or stale: {lost:?}; extra, stale or repeated: {extra:?})",
                            logical(poll)
                        ),
                    ));
                }
            }
            if let Some((poll, voter)) = op.item() {
                let got = Vote::get(repo, &poll_name(poll), &voter_name(voter))
                    .await
                    .map_err(|e| fail("check_every_process", e.to_string()))?;
                let want = self
                    .model
                    .items
                    .get(&(poll, voter))
                    .map(|&v| vote(poll, voter, v));
                if got != want {
                    return Err(fail(
                        "check_every_process",
                        format!("process {p} gets {got:?}, the model has {want:?}"),
                    ));
                }
            }
        }
        if matches!(
            op,
            Op::Begin { .. } | Op::Advance { .. } | Op::Migrate { .. } | Op::Finish { .. }
        ) {
            self.check_directory().await?;
        }
        Ok(())
    }

    /// The directory as stored, by `entries` and `layout`, is the model's.
    async fn check_directory(&self) -> Result<(), Failure> {
        let layouts = self.fresh.layouts();
        let entries = layouts
            .entries()
            .await
            .map_err(|e| fail("check_directory", e.to_string()))?;
        if entries != self.model.directory {
            return Err(fail(
                "check_directory",
                format!(
                    "the directory holds {entries:?}; the model has {:?}",
                    self.model.directory
                ),
            ));
        }
        for poll in 0..POLLS {
            let key = logical(poll);
            let got = layouts
                .layout(&key)
                .await
                .map_err(|e| fail("check_directory", e.to_string()))?;
            let want = view(&self.model.directory, &key).0;
            if got != want {
                return Err(fail(
                    "check_directory",
                    format!("{key} reads as {got:?}, the model has {want:?}"),
                ));
            }
        }
        Ok(())
    }
}

/// What sequences ran, for a soak's figures.
#[derive(Debug, Default)]
struct Figures {
    sequences: usize,
    steps: usize,
    by_kind: BTreeMap<&'static str, usize>,
    /// Layout steps that were due and taken (begin, advance, migrate, finish).
    steps_taken: usize,
    /// Changes that reached `finish`.
    changes_completed: usize,
    refused: BTreeMap<String, usize>,
}

struct Failed {
    seed: u64,
    ops: Vec<Op>,
    step: usize,
    failure: Failure,
}

async fn generated(seed: u64, steps: usize) -> Result<Figures, Failed> {
    let mut generator = Generator::new(seed);
    let mut run = Run::new().await;
    let mut ops = Vec::new();
    let mut figures = Figures {
        sequences: 1,
        ..Figures::default()
    };
    for _ in 0..steps {
        let op = generator.next(&run.model);
        ops.push(op);
        let before = run.model.directory.clone();
        run.step(&op).await.map_err(|failure| Failed {
            seed,
            ops: ops.clone(),
            step: ops.len(),
            failure,
        })?;
        figures.steps += 1;
        *figures.by_kind.entry(op.kind()).or_default() += 1;
        let layout_step = matches!(
            op,
            Op::Begin { .. } | Op::Advance { .. } | Op::Migrate { .. } | Op::Finish { .. }
        );
        let changed = before != run.model.directory
            || matches!(op, Op::Migrate { poll, .. } if run.model.migrated.contains(&logical(poll)));
        if layout_step && changed {
            figures.steps_taken += 1;
        } else if layout_step {
            *figures
                .refused
                .entry(format!("{} refused", op.kind()))
                .or_default() += 1;
        }
        if let Op::Finish { poll, .. } = op {
            if before.get(&logical(poll)) != run.model.directory.get(&logical(poll)) {
                figures.changes_completed += 1;
            }
        }
    }
    Ok(figures)
}

async fn replay(ops: &[Op]) -> Result<(), (usize, Failure)> {
    let mut run = Run::new().await;
    for (i, op) in ops.iter().enumerate() {
        run.step(op).await.map_err(|f| (i + 1, f))?;
    }
    Ok(())
}

/// The shortest sequence that fails the same check, by the model's delta debugging
/// (`shrink::delta_debug`), each candidate replayed on a fresh table.
async fn minimize(failed: &Failed, budget: Duration) -> (Vec<Op>, usize) {
    let ops = failed.ops[..failed.step].to_vec();
    super::shrink::delta_debug(ops, budget, |candidate| async move {
        match replay(&candidate).await {
            Err((step, f)) if f.check == failed.failure.check => Some(step),
            _ => None,
        }
    })
    .await
}

fn listing(ops: &[Op]) -> String {
    ops.iter()
        .map(|op| format!("        Op::{op:?},"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn seeds(default: &[u64], count: Option<u64>) -> Vec<u64> {
    if let Some(seed) = env::<u64>("SHARDED_PER_KEY_SEED") {
        return vec![seed];
    }
    match env::<u64>("SHARDED_PER_KEY_SEEDS").or(count) {
        Some(count) => {
            let base = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            (0..count)
                .map(|i| base.wrapping_mul(1000).wrapping_add(i))
                .collect()
        }
        None => default.to_vec(),
    }
}

async fn run_sequences(seeds: Vec<u64>, steps: usize) {
    let started = Instant::now();
    let results: Vec<(u64, Result<Figures, Failed>)> = {
        use futures::StreamExt;
        futures::stream::iter(seeds.clone())
            .map(|seed| async move { (seed, generated(seed, steps).await) })
            .buffer_unordered(2)
            .collect()
            .await
    };
    let mut total = Figures::default();
    let mut failures = Vec::new();
    for (seed, result) in results {
        match result {
            Ok(f) => {
                total.sequences += f.sequences;
                total.steps += f.steps;
                total.steps_taken += f.steps_taken;
                total.changes_completed += f.changes_completed;
                for (k, n) in f.by_kind {
                    *total.by_kind.entry(k).or_default() += n;
                }
                for (k, n) in f.refused {
                    *total.refused.entry(k).or_default() += n;
                }
            }
            Err(failed) => {
                eprintln!(
                    "per-key seed {seed}: step {} failed `{}`: {}",
                    failed.step, failed.failure.check, failed.failure.detail
                );
                failures.push(failed);
            }
        }
    }
    eprintln!(
        "per-key model: {} sequences passed ({} steps; {} layout steps taken, {} changes \
         completed), {} failed, seeds {seeds:?}, backend {}, {:.1}s",
        total.sequences,
        total.steps,
        total.steps_taken,
        total.changes_completed,
        failures.len(),
        std::env::var("SHARDED_TEST_BACKEND").unwrap_or_else(|_| "embedded".into()),
        started.elapsed().as_secs_f64()
    );
    for (kind, n) in total.by_kind.iter() {
        eprintln!("  {n:>6}  {kind}");
    }
    for (kind, n) in total.refused.iter() {
        eprintln!("  {n:>6}  {kind}");
    }
    let Some(first) = failures.into_iter().min_by_key(|f| f.step) else {
        return;
    };
    let (minimized, replays) = minimize(&first, Duration::from_secs(SHRINK_SECS)).await;
    panic!(
        "the per-key model and the table disagree: seed {}, step {}, check `{}`: {}\n\
         minimized ({} operations, {replays} replays; re-run the whole sequence with \
         SHARDED_PER_KEY_SEED={}), replayable with `replay(&[..])`:\n{}",
        first.seed,
        first.step,
        first.failure.check,
        first.failure.detail,
        minimized.len(),
        first.seed,
        listing(&minimized),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_key_sequences_under_stale_caches_agree_with_the_model() {
    let steps = env("SHARDED_PER_KEY_STEPS").unwrap_or(DEFAULT_STEPS);
    run_sequences(seeds(&DEFAULT_SEEDS, None), steps).await;
}

/// The soak: 30 sequences of 300 steps (the figures in BENCHMARKS.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak of minutes: SHARDED_PER_KEY_SOAK=1 cargo test --release --test dynamodb -- per_key_soak --ignored"]
async fn per_key_soak() {
    if env::<u8>("SHARDED_PER_KEY_SOAK") != Some(1) {
        eprintln!("per_key_soak: set SHARDED_PER_KEY_SOAK=1 to run it");
        return;
    }
    let steps = env("SHARDED_PER_KEY_STEPS").unwrap_or(SOAK_STEPS);
    run_sequences(seeds(&[], Some(SOAK_SEQUENCES)), steps).await;
}
