//! The operations of a sequence and their seeded, weighted generator.
//!
//! An operation says what it means to do, not what the table holds: a versioned write names
//! the version it read as `Current` or `Stale`, resolved against the model when it runs, so a
//! sequence the minimizer shortened still means something.

use std::fmt;

use super::events::{EventKey, RangeOp};
use super::gsis::{GsiOp, TaskRec, TaskUpdate};
use super::reference::{Cond, Key, Kind, Model, Rec, EXPIRED, LIVE};

/// Which version a versioned write claims to have read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum VersionRead {
    Current,
    Stale,
}

/// `Entity::update(..)`: set the status (if any), add to the points; with a condition and,
/// for a doc, the version required.
#[derive(Clone, PartialEq, Debug)]
pub struct UpdateOp {
    pub key: Key,
    pub status: Option<String>,
    pub add: i64,
    pub cond: Option<Cond>,
    pub version: Option<VersionRead>,
}

/// One action of a `Transaction`.
#[derive(Clone, PartialEq, Debug)]
pub enum TxAction {
    Put {
        key: Key,
        rec: Rec,
        read: VersionRead,
    },
    PutIf {
        key: Key,
        rec: Rec,
        cond: Cond,
    },
    Update(UpdateOp),
    Delete {
        key: Key,
    },
    DeleteIf {
        key: Key,
        cond: Cond,
    },
    Check {
        key: Key,
        cond: Cond,
    },
    Move {
        from: Key,
        to: Key,
        rec: Rec,
    },
}

impl TxAction {
    pub fn keys(&self) -> Vec<Key> {
        match self {
            TxAction::Put { key, .. }
            | TxAction::PutIf { key, .. }
            | TxAction::Delete { key }
            | TxAction::DeleteIf { key, .. }
            | TxAction::Check { key, .. } => vec![*key],
            TxAction::Update(u) => vec![u.key],
            TxAction::Move { from, to, .. } => vec![*from, *to],
        }
    }
}

/// How an increment of the sequence's counter is sent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Counting {
    /// `ShardedCounter::increment`: exactly once, under a random token.
    ExactlyOnce,
    /// `ShardedCounter::increment_at_least_once`: a plain `ADD` (exact without lost answers).
    AtLeastOnce,
    /// `ShardedCounter::increment_with_token` under the sequence's token number `n`: a token
    /// used before counts nothing again, or is refused when its `by` differs.
    Token(u8),
}

/// How a scan's answer is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ScanRead {
    Collect,
    Count,
    Stream,
    /// `Scan::project`: the points of each item.
    Points,
}

/// A parallel scan's settings.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ScanOp {
    pub kind: Kind,
    pub segments: u32,
    pub concurrency: usize,
    pub page_size: u32,
    pub consistent: bool,
    /// A read-unit rate (high enough not to slow the sequence).
    pub rated: bool,
    pub read: ScanRead,
}

/// A fault DynamoDB's real service shows, injected for one operation of the sequence (the
/// test kit's `Faults`, below the SDK), then cleared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fault {
    /// The next `n` transactions canceled for `TransactionConflict` (nothing applied).
    Conflicts(u8),
    /// The next transaction applied, its answer lost.
    LostAnswer,
}

/// One step of a sequence.
#[derive(Clone, PartialEq, Debug)]
pub enum Op {
    /// `repo.put`; for a doc, a versioned put of the version read.
    Put {
        key: Key,
        rec: Rec,
        read: VersionRead,
    },
    PutNew {
        key: Key,
        rec: Rec,
    },
    PutIf {
        key: Key,
        rec: Rec,
        cond: Cond,
    },
    Update(UpdateOp),
    /// The generated `Entity::delete`.
    Delete {
        key: Key,
    },
    DeleteIf {
        key: Key,
        cond: Cond,
    },
    BatchPut(Vec<(Key, Rec)>),
    BatchDelete(Vec<Key>),
    /// `repo.batch_get` of the keys' current (and previous) places.
    BatchGet(Vec<Key>),
    Transact(Vec<TxAction>),
    TransactGet(Vec<Key>),
    /// An item written through the raw SDK without a tag, as the service did before adopting
    /// `sharded` (while the adoption is declared): at the legacy key, or, adopting data
    /// placed at random, on `shard`.
    LegacyPut {
        key: Key,
        rec: Rec,
        shard: u8,
    },
    /// DynamoDB's time-to-live sweeper: every expired item deleted, through the raw SDK.
    Sweep,
    /// Starts paging a listing (interleaved with the next steps' writes).
    PageStart {
        kind: Kind,
        group: u8,
        size: usize,
        filter: Option<String>,
    },
    /// The listing's next page.
    PageNext,
    /// A migration run (of the items for odd `items`, of the docs for even) stopped after
    /// about `items` moves: of the table, or `only` one group's partitions; its last
    /// checkpoint kept when `checkpointed`.
    MigratePartial {
        items: u8,
        only: Option<u8>,
        checkpointed: bool,
    },
    /// A migration of the items (of the docs when `doc`), of the table or `only` one group's
    /// partitions, resumed from the last checkpoint kept for that scope (from the beginning
    /// without one) and run to its end: nothing is left in its scope but what an old-layout
    /// writer put behind the checkpoint.
    MigrateResume {
        doc: bool,
        only: Option<u8>,
    },
    /// One unit of the migration of the items (of the docs when `doc`) cut into `of` units of
    /// a scan in 4 segments (`Migration::plan`), run to its end (`Migration::unit`), from its
    /// start when `fresh`, and run again at once when `twice`: units run in any order, a unit
    /// run twice. A unit done before and run again (not `fresh`) reads nothing; after a run
    /// the unit is done (`status`). With `forget`, the plan's records are then deleted
    /// (`Migration::forget`: at least this unit's, and after it `status` says not started).
    MigrateUnit {
        doc: bool,
        unit: u8,
        of: u8,
        fresh: bool,
        twice: bool,
        forget: bool,
    },
    /// The migration run to its end, then the transition's declaration removed; with
    /// `rekey`, asked to re-key the items stored under a key not in canonical form
    /// (`Migration::rekey_non_canonical`), as the planted `I#9 9` record is.
    Complete {
        rekey: bool,
    },
    /// A transition declared (3 -> 5 or 5 -> 3).
    Declare,
    /// An increment of the sequence's sharded counter (in the same table as the entities).
    Increment {
        by: i8,
        how: Counting,
    },
    /// The counter's `total` and `shard_values`, read consistently or not.
    CounterTotal {
        consistent: bool,
    },
    /// `repo.scan()` of one entity: every item it has stored.
    Scan(ScanOp),
    /// `op` (a transaction, a prepared one, an increment under a token, or a put during a
    /// transition, which is a transaction) sent while `fault` is injected: the retry policies
    /// (`Transaction::with_retry`, `ShardedCounter::with_retry`, `Repo::with_batch_retry`)
    /// send it again, identical and under its token, and it answers and applies as without
    /// the fault.
    Faulted {
        fault: Fault,
        op: Box<Op>,
    },
    /// `collect_partial` of one entity in `group` while `shard` fails (steady layouts):
    /// the shard listed as failed, the others' items the model's.
    PartialRead {
        kind: Kind,
        group: u8,
        shard: u32,
    },
    /// A transaction prepared (under a token of the sequence's, or a random one), then
    /// committed `commits` times: a commit sent again answers as the first did and applies
    /// nothing twice.
    Prepared {
        actions: Vec<TxAction>,
        token: bool,
        commits: u8,
    },
    /// Time-bucketed events written (`events.rs`): one by `put`, several by `batch_put`.
    EventPut(Vec<(EventKey, i64)>),
    /// An event deleted: by the generated `delete`, or by `delete_if` its payload is below
    /// `below`.
    EventDelete {
        key: EventKey,
        below: Option<i64>,
    },
    /// A range query of the events, read as `RangeOp::read` says.
    Range(RangeOp),
    /// Tasks written (`gsis.rs`): one by `put`, several by `batch_put`, by id.
    TaskPut(Vec<(u8, TaskRec)>),
    /// A typed update of a task's index key attributes (it moves between the GSIs'
    /// partitions).
    TaskUpdate(TaskUpdate),
    /// A task deleted by the generated `delete`.
    TaskDelete {
        id: u8,
    },
    /// A query of a task GSI's partition, read as `GsiOp::read` says.
    GsiRead(GsiOp),
}

impl Op {
    /// The kind of operation, for the figures of a run.
    pub fn name(&self) -> String {
        match self {
            Op::Put { key, .. } if key.kind == Kind::Doc => "put(versioned)".into(),
            Op::Transact(_) => "Transaction".into(),
            Op::Prepared { commits, .. } => format!("PreparedTransaction x{commits}"),
            Op::Faulted { fault, op } => format!("Faulted({fault:?}) {}", op.name()),
            Op::EventPut(puts) if puts.len() > 1 => "EventPut(batch)".into(),
            Op::Range(range) => range.name(),
            Op::TaskPut(puts) if puts.len() > 1 => "TaskPut(batch)".into(),
            Op::GsiRead(read) => read.name(),
            other => format!("{other:?}")
                .split([' ', '(', '{'])
                .next()
                .unwrap_or_default()
                .to_owned(),
        }
    }
}

impl TxAction {
    pub fn name(&self) -> &'static str {
        match self {
            TxAction::Put { .. } => "put",
            TxAction::PutIf { .. } => "put_if",
            TxAction::Update(_) => "update",
            TxAction::Delete { .. } => "delete",
            TxAction::DeleteIf { .. } => "delete_if",
            TxAction::Check { .. } => "check",
            TxAction::Move { .. } => "move_item",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// Ids per logical partition: few, so that writes meet the same keys often.
pub const IDS: u16 = 14;

const STATUSES: [&str; 3] = ["red", "green", "blue"];

/// What the generator may produce (the gates of defects not fixed yet switch some off).
#[derive(Clone, Copy, Debug)]
pub struct Gates {
    /// Items without an expiry (a `NULL` expiry attribute).
    pub null_expiry: bool,
    /// Writes that leave the previous place alone during a transition: `put`, `put_if`,
    /// versioned `put`, `update`, `delete_if`, `batch_put`.
    pub writes_during_transition: bool,
    /// Transactions during a transition.
    pub transactions_during_transition: bool,
    /// `TransactGet` during a transition.
    pub transact_get_during_transition: bool,
    /// A migration run while a listing is being paged.
    pub paging_across_migration: bool,
}

pub struct Generator {
    pub(super) rng: fastrand::Rng,
    gates: Gates,
    /// Whether items may be written already expired (not in a table with time to live
    /// enabled, whose own sweeper would delete them at moments the model does not choose).
    expired_items: bool,
}

impl Generator {
    pub fn new(seed: u64, gates: Gates) -> Self {
        Generator {
            rng: fastrand::Rng::with_seed(seed),
            gates,
            expired_items: true,
        }
    }

    /// A generator that writes no item already expired.
    pub fn without_expired_items(mut self) -> Self {
        self.expired_items = false;
        self
    }

    fn status(&mut self) -> String {
        STATUSES[self.rng.usize(..STATUSES.len())].to_owned()
    }

    fn rec(&mut self, kind: Kind) -> Rec {
        let expires = match (kind, self.rng.u8(..10)) {
            (Kind::Doc, _) => None,
            (Kind::Item, 0..=1) if self.expired_items => Some(EXPIRED),
            (Kind::Item, 2..=4) if self.gates.null_expiry => None,
            (Kind::Item, _) => Some(LIVE),
        };
        Rec {
            status: self.status(),
            points: self.rng.i64(0..100),
            expires,
            version: 0,
        }
    }

    fn cond(&mut self) -> Cond {
        match self.rng.u8(..3) {
            0 => Cond::StatusEq(self.status()),
            1 => Cond::PointsGe(self.rng.i64(0..100)),
            _ => Cond::PointsLt(self.rng.i64(0..100)),
        }
    }

    /// A key of `kind`: mostly one the model holds, sometimes any.
    fn key(&mut self, model: &Model, kind: Option<Kind>) -> Key {
        let kind = kind.unwrap_or(if self.rng.u8(..3) == 0 {
            Kind::Doc
        } else {
            Kind::Item
        });
        let held: Vec<Key> = model
            .items
            .keys()
            .filter(|k| k.kind == kind)
            .copied()
            .collect();
        if !held.is_empty() && self.rng.u8(..3) != 0 {
            return held[self.rng.usize(..held.len())];
        }
        Key {
            kind,
            group: u8::from(self.rng.u8(..4) == 0),
            id: self.rng.u16(..IDS),
        }
    }

    fn free_key(&mut self, model: &Model, kind: Kind) -> Key {
        for _ in 0..20 {
            let key = Key {
                kind,
                group: u8::from(self.rng.u8(..4) == 0),
                id: self.rng.u16(..IDS),
            };
            if !model.items.contains_key(&key) {
                return key;
            }
        }
        self.key(model, Some(kind))
    }

    fn read(&mut self) -> VersionRead {
        if self.rng.u8(..4) == 0 {
            VersionRead::Stale
        } else {
            VersionRead::Current
        }
    }

    fn update(&mut self, model: &Model, kind: Option<Kind>) -> UpdateOp {
        let key = self.key(model, kind);
        UpdateOp {
            key,
            status: self.rng.bool().then(|| self.status()),
            add: self.rng.i64(-20..=20),
            cond: (self.rng.u8(..3) == 0).then(|| self.cond()),
            version: (key.kind == Kind::Doc && self.rng.bool()).then(|| self.read()),
        }
    }

    fn distinct_keys(&mut self, model: &Model, kind: Option<Kind>, n: usize) -> Vec<Key> {
        let mut keys: Vec<Key> = Vec::new();
        for _ in 0..n {
            let key = self.key(model, kind);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys
    }

    fn tx_action(&mut self, model: &Model) -> TxAction {
        match self.rng.u8(..7) {
            0 => {
                let key = self.key(model, None);
                TxAction::Put {
                    key,
                    rec: self.rec(key.kind),
                    read: self.read(),
                }
            }
            1 => {
                let key = self.key(model, Some(Kind::Item));
                TxAction::PutIf {
                    key,
                    rec: self.rec(Kind::Item),
                    cond: self.cond(),
                }
            }
            2 => TxAction::Update(self.update(model, None)),
            3 => TxAction::Delete {
                key: self.key(model, None),
            },
            4 => TxAction::DeleteIf {
                key: self.key(model, Some(Kind::Item)),
                cond: self.cond(),
            },
            5 => TxAction::Check {
                key: self.key(model, None),
                cond: self.cond(),
            },
            _ => {
                let from = self.key(model, Some(Kind::Item));
                TxAction::Move {
                    from,
                    to: self.free_key(model, Kind::Item),
                    rec: self.rec(Kind::Item),
                }
            }
        }
    }

    fn transaction(&mut self, model: &Model) -> Op {
        let mut actions: Vec<TxAction> = Vec::new();
        let wanted = self.rng.usize(1..=3);
        for _ in 0..10 {
            if actions.len() == wanted {
                break;
            }
            let action = self.tx_action(model);
            let taken: Vec<Key> = actions.iter().flat_map(TxAction::keys).collect();
            let keys = action.keys();
            let distinct =
                keys.iter().all(|k| !taken.contains(k)) && (keys.len() < 2 || keys[0] != keys[1]);
            if distinct {
                actions.push(action);
            }
        }
        Op::Transact(actions)
    }

    /// The next operation for the model's state, among those the gates allow.
    pub fn next(&mut self, model: &Model) -> Op {
        // The time-bucketed events, a tenth of the steps (`events.rs`).
        if self.rng.u8(..10) == 0 {
            return self.event_op(model);
        }
        // The tasks and their GSIs, a twelfth of the rest (`gsis.rs`).
        if self.rng.u8(..12) == 0 {
            return self.task_op(model);
        }
        loop {
            // The reads and writes of the wider surface, each a small share of the steps;
            // the rest as weighted in `any`.
            let op = match self.rng.u8(..50) {
                0..=1 => Op::Scan(self.scan()),
                2..=4 => match self.transaction(model) {
                    Op::Transact(actions) => Op::Prepared {
                        actions,
                        token: self.rng.bool(),
                        commits: self.rng.u8(1..=2),
                    },
                    other => other,
                },
                5..=6 => {
                    let fault = if self.rng.bool() {
                        Fault::LostAnswer
                    } else {
                        Fault::Conflicts(self.rng.u8(1..=2))
                    };
                    let op = match self.rng.u8(..4) {
                        0 => self.transaction(model),
                        1 => Op::Increment {
                            by: self.rng.i8(-3..=5),
                            how: if self.rng.bool() {
                                Counting::ExactlyOnce
                            } else {
                                Counting::Token(self.rng.u8(..6))
                            },
                        },
                        2 => {
                            let key = self.key(model, None);
                            Op::Put {
                                key,
                                rec: self.rec(key.kind),
                                read: self.read(),
                            }
                        }
                        _ => match self.transaction(model) {
                            Op::Transact(actions) => Op::Prepared {
                                actions,
                                token: true,
                                commits: 1,
                            },
                            other => other,
                        },
                    };
                    Op::Faulted {
                        fault,
                        op: Box::new(op),
                    }
                }
                7 if !model.phase.transition() => Op::PartialRead {
                    kind: if self.rng.bool() {
                        Kind::Item
                    } else {
                        Kind::Doc
                    },
                    group: self.rng.u8(..2),
                    shard: self.rng.u32(..3),
                },
                _ => self.any(model),
            };
            if self.allowed(model, &op) {
                return op;
            }
        }
    }

    fn scan(&mut self) -> ScanOp {
        ScanOp {
            kind: if self.rng.bool() {
                Kind::Item
            } else {
                Kind::Doc
            },
            segments: [1, 2, 3, 7][self.rng.usize(..4)],
            concurrency: self.rng.usize(1..=3),
            page_size: [1, 2, 5, 100][self.rng.usize(..4)],
            consistent: self.rng.bool(),
            rated: self.rng.u8(..4) == 0,
            read: [
                ScanRead::Collect,
                ScanRead::Count,
                ScanRead::Stream,
                ScanRead::Points,
            ][self.rng.usize(..4)],
        }
    }

    fn allowed(&self, model: &Model, op: &Op) -> bool {
        let g = self.gates;
        let transition = model.phase.transition();
        match op {
            Op::Put { .. }
            | Op::PutIf { .. }
            | Op::Update(_)
            | Op::DeleteIf { .. }
            | Op::BatchPut(_) => !transition || g.writes_during_transition,
            Op::Transact(_) | Op::Prepared { .. } => {
                !transition || g.transactions_during_transition
            }
            Op::Faulted { op, .. } => self.allowed(model, op),
            Op::TransactGet(_) => !transition || g.transact_get_during_transition,
            Op::MigratePartial { .. }
            | Op::MigrateResume { .. }
            | Op::MigrateUnit { .. }
            | Op::Complete { .. } => !model.paging || g.paging_across_migration,
            _ => true,
        }
    }

    fn any(&mut self, model: &Model) -> Op {
        // (weight, operation), weights out of 104.
        let roll = self.rng.u32(..104);
        match roll {
            0..=9 => {
                let key = self.key(model, None);
                Op::Put {
                    key,
                    rec: self.rec(key.kind),
                    read: self.read(),
                }
            }
            10..=14 => {
                let key = if self.rng.bool() {
                    self.free_key(model, Kind::Item)
                } else {
                    self.key(model, Some(Kind::Item))
                };
                Op::PutNew {
                    key,
                    rec: self.rec(Kind::Item),
                }
            }
            15..=20 => {
                let key = self.key(model, Some(Kind::Item));
                Op::PutIf {
                    key,
                    rec: self.rec(Kind::Item),
                    cond: self.cond(),
                }
            }
            21..=30 => Op::Update(self.update(model, None)),
            31..=35 => Op::Delete {
                key: self.key(model, None),
            },
            36..=39 => Op::DeleteIf {
                key: self.key(model, Some(Kind::Item)),
                cond: self.cond(),
            },
            40..=45 => {
                let n = self.rng.usize(1..=4);
                let keys = self.distinct_keys(model, Some(Kind::Item), n);
                Op::BatchPut(
                    keys.into_iter()
                        .map(|k| (k, self.rec(Kind::Item)))
                        .collect(),
                )
            }
            46..=49 => {
                let n = self.rng.usize(1..=3);
                Op::BatchDelete(self.distinct_keys(model, None, n))
            }
            50..=52 => {
                let n = self.rng.usize(1..=4);
                Op::BatchGet(self.distinct_keys(model, None, n))
            }
            53..=66 => self.transaction(model),
            67..=69 => {
                let n = self.rng.usize(1..=4);
                Op::TransactGet(self.distinct_keys(model, None, n))
            }
            70..=75 if model.phase.adopting() => {
                let kind = if self.rng.u8(..3) == 0 {
                    Kind::Doc
                } else {
                    Kind::Item
                };
                let key = self.free_key(model, kind);
                let mut rec = self.rec(kind);
                if kind == Kind::Doc {
                    rec.version = self.rng.u64(0..4);
                }
                Op::LegacyPut {
                    key,
                    rec,
                    shard: self.rng.u8(..3),
                }
            }
            76..=78 => Op::Sweep,
            79..=84 if !model.paging => {
                // A listing of more than a page, where the model holds one: paged across the
                // next steps' writes (and a layout change, which refuses its cursor).
                let size = [1, 2, 3][self.rng.usize(..3)];
                let longer: Vec<(Kind, u8)> = [Kind::Item, Kind::Doc]
                    .into_iter()
                    .flat_map(|k| [(k, 0), (k, 1)])
                    .filter(|(k, g)| model.view(*k, *g, false).len() > size)
                    .collect();
                let (kind, group) = if longer.is_empty() {
                    (
                        if self.rng.bool() {
                            Kind::Item
                        } else {
                            Kind::Doc
                        },
                        u8::from(self.rng.u8(..4) == 0),
                    )
                } else {
                    longer[self.rng.usize(..longer.len())]
                };
                Op::PageStart {
                    kind,
                    group,
                    size,
                    filter: (self.rng.u8(..3) == 0).then(|| self.status()),
                }
            }
            79..=89 if model.paging => Op::PageNext,
            90..=91 if model.phase.transition() => Op::MigratePartial {
                items: self.rng.u8(1..6),
                only: (self.rng.u8(..3) == 0).then(|| self.rng.u8(..2)),
                checkpointed: self.rng.bool(),
            },
            92 | 95 if model.phase.transition() => {
                let of = self.rng.u8(1..=4);
                Op::MigrateUnit {
                    doc: self.rng.bool(),
                    unit: self.rng.u8(..of),
                    of,
                    fresh: self.rng.u8(..4) == 0,
                    twice: self.rng.bool(),
                    forget: self.rng.u8(..4) == 0,
                }
            }
            93..=94 if model.phase.transition() => Op::MigrateResume {
                doc: self.rng.bool(),
                only: (self.rng.u8(..3) == 0).then(|| self.rng.u8(..2)),
            },
            96 if model.phase.transition() => Op::Complete {
                rekey: self.rng.bool(),
            },
            95..=99 if !model.phase.transition() => Op::Declare,
            100..=102 => Op::Increment {
                by: self.rng.i8(-3..=5),
                how: match self.rng.u8(..4) {
                    0 => Counting::ExactlyOnce,
                    1 => Counting::AtLeastOnce,
                    _ => Counting::Token(self.rng.u8(..6)),
                },
            },
            103 => Op::CounterTotal {
                consistent: self.rng.bool(),
            },
            _ => {
                let key = self.key(model, None);
                Op::Put {
                    key,
                    rec: self.rec(key.kind),
                    read: VersionRead::Current,
                }
            }
        }
    }
}
