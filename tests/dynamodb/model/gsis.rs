//! Tasks and their GSIs: an entity (`TASKS#{board}`, 3 shards by `hash(id)`, sort key
//! `TASK#{id}`) with a string-keyed sharded GSI (`gsi1`: `OWNER#{owner}`, sorted by
//! `T#{title}#{id}`, 3 shards) and a multi-attribute one (`gsi2`: partition attributes `team`
//! and `stage`, sort attributes `rank` then `id`, 2 shards), written by `put`, `batch_put`, a
//! typed `update` that changes the index key attributes (the item moves between the indexes'
//! partitions) and the generated `delete`; read by `query_gsi1` and `query_gsi2` in every way
//! a query is read (`collect` in either order with a limit, `count`, `stream`, `page`
//! continued with plain or sealed cursors), with typed sort-key conditions
//! (`gsi1_sort()` on a template, `gsi2_sort()` on attributes) or none, each answer compared with the model's
//! `tasks`, order included.
//!
//! The values hold what the keys must escape: owners and titles with a space, `,` and `=`
//! (a string key's escape), and teams and stages holding a multi-attribute key's rendering
//! (`a,stage=b` with `c`, `a` with `b,stage=c`: once the same query, defect 4 of the issue).
//!
//! Every write through the repository drops the GSI answers of its read cache, and nothing
//! else writes tasks (the legacy writer and the sweeper never touch them), so every read is
//! exact, whatever the sequence's [`Sharing`](super::exec::Sharing). After each write, both
//! indexes' partitions the write left and entered are collected again, so an answer the
//! cache kept across the write shows.
//!
//! Declared once per table of the model ([`Flavour`]), as `events` declares its entity.

use std::collections::BTreeMap;
use std::future::Future;

use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use sharded::{query::SortKeyCondition, Error, Query, Repo, ShardedEntity};

use super::events::Order;
use super::exec::{cursor_key, failure, pages_sealed_or_not, Failure, Run};
use super::layouts::{AdoptedTable, Flavour};
use super::ops::{Generator, Op};
use super::reference::{Key, Model, Outcome};

/// Owners (gsi1's partition): one with a space, one with `,` and `=`.
const OWNERS: [&str; 3] = ["ann", "bo b", "c,d=e"];
/// Titles (gsi1's first sort field), in byte order: `Zed`, `a b`, `a,b`, `alpha`, `beta`,
/// `x=y`.
const TITLES: [&str; 6] = ["alpha", "a b", "a,b", "x=y", "beta", "Zed"];
/// Teams and stages (gsi2's partition attributes): `(a,stage=b, c)` and `(a, b,stage=c)`
/// render alike when the values are not escaped.
const TEAMS: [&str; 3] = ["a", "a,stage=b", "blue sky"];
const STAGES: [&str; 3] = ["c", "b,stage=c", "open"];
/// Ranks (gsi2's first sort attribute): negative, zero, positive, with ties.
const RANKS: std::ops::RangeInclusive<i64> = -3..=3;
/// Task ids.
const IDS: u8 = 12;
/// The one board every task is on (the base partition key's field).
const BOARD: &str = "k";
/// Pages read before a paged read is declared endless.
const MAX_PAGES: usize = 200;

/// A task's content in the model: indexes of [`OWNERS`], [`TITLES`], [`TEAMS`],
/// [`STAGES`], and its rank.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TaskRec {
    pub owner: u8,
    pub title: u8,
    pub team: u8,
    pub stage: u8,
    pub rank: i64,
}

/// A typed update of a task the model holds: gsi1's owner and title set together (a
/// string-keyed index is rebuilt from all of its fields), gsi2's team and stage set, and
/// `add` added to the rank.
#[derive(Clone, PartialEq, Debug)]
pub struct TaskUpdate {
    pub id: u8,
    pub owner_title: Option<(u8, u8)>,
    pub team: Option<u8>,
    pub stage: Option<u8>,
    pub add: Option<i64>,
}

/// One index's partition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Target {
    /// `query_gsi1(owner)`.
    Owner(u8),
    /// `query_gsi2(team, stage)`.
    Team(u8, u8),
}

/// A comparison of a typed sort-key condition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cmp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    /// Closed: `low <= v <= high`.
    Between,
}

impl Cmp {
    fn holds<T: Ord>(self, v: &T, low: &T, high: &T) -> bool {
        match self {
            Cmp::Eq => v == low,
            Cmp::Lt => v < low,
            Cmp::Le => v <= low,
            Cmp::Gt => v > low,
            Cmp::Ge => v >= low,
            Cmp::Between => low <= v && v <= high,
        }
    }
}

/// A typed sort-key condition: a comparison on the first sort field (the title's index for
/// gsi1, the rank for gsi2; `low`, `high`), or, with `first` held equal, on the id (`low`,
/// `high` ids).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SkCond {
    pub first: Option<i64>,
    pub cmp: Cmp,
    pub low: i64,
    pub high: i64,
}

/// How a GSI query is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GsiRead {
    Collect,
    Count,
    Stream,
    /// `page(size, ..)` from the start to the end, continued with each page's cursor;
    /// sealed with the model's cursor key or not.
    Pages {
        size: usize,
        sealed: bool,
    },
}

/// A query of one index's partition, with its settings, and how it is read.
#[derive(Clone, PartialEq, Debug)]
pub struct GsiOp {
    pub target: Target,
    pub cond: Option<SkCond>,
    pub order: Order,
    /// With `collect` and `stream` only.
    pub limit: Option<usize>,
    pub page_size: Option<u32>,
    pub read: GsiRead,
}

impl GsiOp {
    /// The kind of read, for the figures of a run.
    pub fn name(&self) -> String {
        let index = match self.target {
            Target::Owner(_) => "gsi1 (string)",
            Target::Team(..) => "gsi2 (multi-attribute)",
        };
        let how = match self.read {
            GsiRead::Collect => "collect",
            GsiRead::Count => "count",
            GsiRead::Stream => "stream",
            GsiRead::Pages { sealed: false, .. } => "page",
            GsiRead::Pages { sealed: true, .. } => "page (sealed)",
        };
        let cond = if self.cond.is_some() { " sk" } else { "" };
        format!("query_{index} {how}{cond}")
    }
}

/// The task entity in one table.
pub trait TaskEntity: ShardedEntity + Clone + std::fmt::Debug + Send + Sync + 'static {
    fn from_model(id: u8, task: &TaskRec) -> Self;
    fn to_model(&self) -> (u8, TaskRec);
    /// The generated `query_gsi1(repo, owner)`.
    fn by_owner(repo: &Repo<Self>, owner: &str) -> Query<Self>;
    /// The generated `query_gsi2(repo, team, stage)`.
    fn by_team(repo: &Repo<Self>, team: &str, stage: &str) -> Query<Self>;
    /// The typed condition of gsi1 (`gsi1_sk_title_*`, `gsi1_sk_id_*`).
    fn owner_cond(cond: &SkCond) -> SortKeyCondition;
    /// The typed condition of gsi2 (`gsi2_sort()`).
    fn team_cond(cond: &SkCond) -> SortKeyCondition;
    /// The generated `delete(repo, board, id)`.
    fn delete(repo: &Repo<Self>, id: u8) -> impl Future<Output = Result<(), Error>> + Send;
    /// The generated `update(repo, board, id)`, set and added as `update` says.
    fn update(
        repo: &Repo<Self>,
        update: &TaskUpdate,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// Whether `pk` is a partition key of the tasks.
    fn is_pk(pk: &str) -> bool;
}

fn task_id(id: u8) -> String {
    format!("t{id:02}")
}

fn position(list: &[&str], value: &str) -> u8 {
    list.iter()
        .position(|v| *v == value)
        .map_or(u8::MAX, |p| p as u8)
}

macro_rules! task {
    ([$($table:tt)*], [$($suffix:tt)*]) => {
        /// A task on a board, found by its owner (sorted by title) and by its team and
        /// stage (sorted by rank).
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "MTask" $($table)*)]
        #[pk(template = "TASKS#{board}", shard = "hash(id)", n = 3 $($suffix)*)]
        #[sk(template = "TASK#{id}")]
        #[gsi1(pk = "OWNER#{owner}", sk = "T#{title}#{id}", shard = 3)]
        #[gsi2(pk = [team, stage], sk = [rank, id], shard = 2)]
        pub struct Task {
            pub board: String,
            pub id: String,
            pub owner: String,
            pub title: String,
            pub team: String,
            pub stage: String,
            pub rank: i64,
        }

        impl super::TaskEntity for Task {
            fn from_model(id: u8, task: &super::TaskRec) -> Self {
                Task {
                    board: super::BOARD.to_owned(),
                    id: super::task_id(id),
                    owner: super::OWNERS[usize::from(task.owner)].to_owned(),
                    title: super::TITLES[usize::from(task.title)].to_owned(),
                    team: super::TEAMS[usize::from(task.team)].to_owned(),
                    stage: super::STAGES[usize::from(task.stage)].to_owned(),
                    rank: task.rank,
                }
            }
            fn to_model(&self) -> (u8, super::TaskRec) {
                let id = self.id.get(1..).and_then(|s| s.parse().ok()).unwrap_or(u8::MAX);
                let task = super::TaskRec {
                    owner: super::position(&super::OWNERS, &self.owner),
                    title: super::position(&super::TITLES, &self.title),
                    team: super::position(&super::TEAMS, &self.team),
                    stage: super::position(&super::STAGES, &self.stage),
                    rank: self.rank,
                };
                (id, task)
            }
            fn by_owner(repo: &Repo<Self>, owner: &str) -> Query<Self> {
                Task::query_gsi1(repo, owner)
            }
            fn by_team(repo: &Repo<Self>, team: &str, stage: &str) -> Query<Self> {
                Task::query_gsi2(repo, team, stage)
            }
            fn owner_cond(cond: &super::SkCond) -> SortKeyCondition {
                use super::Cmp;
                let title = |i: i64| super::TITLES[i as usize];
                let id = |i: i64| super::task_id(i as u8);
                let (low, high) = (cond.low, cond.high);
                match (cond.first, cond.cmp) {
                    (None, Cmp::Eq) => Task::gsi1_sort().eq(title(low)).into(),
                    (None, Cmp::Lt) => Task::gsi1_sort().lt(title(low)),
                    (None, Cmp::Le) => Task::gsi1_sort().le(title(low)),
                    (None, Cmp::Gt) => Task::gsi1_sort().gt(title(low)),
                    (None, Cmp::Ge) => Task::gsi1_sort().ge(title(low)),
                    (None, Cmp::Between) => Task::gsi1_sort().between(title(low), title(high)),
                    (Some(t), Cmp::Eq) => Task::gsi1_sort().eq(title(t)).eq(&id(low)).into(),
                    // No `_lt` on the field that ends the template: the generator never asks.
                    (Some(t), Cmp::Lt | Cmp::Le) => Task::gsi1_sort().eq(title(t)).le(&id(low)),
                    (Some(t), Cmp::Gt) => Task::gsi1_sort().eq(title(t)).gt(&id(low)),
                    (Some(t), Cmp::Ge) => Task::gsi1_sort().eq(title(t)).ge(&id(low)),
                    (Some(t), Cmp::Between) => {
                        Task::gsi1_sort().eq(title(t)).between(&id(low), &id(high))
                    }
                }
            }
            fn team_cond(cond: &super::SkCond) -> SortKeyCondition {
                use super::Cmp;
                let id = |i: i64| super::task_id(i as u8);
                let (low, high) = (cond.low, cond.high);
                let sort = Task::gsi2_sort();
                match (cond.first, cond.cmp) {
                    (None, Cmp::Eq) => sort.eq(low).into(),
                    (None, Cmp::Lt) => sort.lt(low).into(),
                    (None, Cmp::Le) => sort.le(low).into(),
                    (None, Cmp::Gt) => sort.gt(low).into(),
                    (None, Cmp::Ge) => sort.ge(low).into(),
                    (None, Cmp::Between) => sort.between(low, high).into(),
                    (Some(r), Cmp::Eq) => sort.eq(r).eq(id(low)).into(),
                    (Some(r), Cmp::Lt) => sort.eq(r).lt(id(low)).into(),
                    (Some(r), Cmp::Le) => sort.eq(r).le(id(low)).into(),
                    (Some(r), Cmp::Gt) => sort.eq(r).gt(id(low)).into(),
                    (Some(r), Cmp::Ge) => sort.eq(r).ge(id(low)).into(),
                    (Some(r), Cmp::Between) => sort.eq(r).between(id(low), id(high)).into(),
                }
            }
            fn delete(
                repo: &Repo<Self>,
                id: u8,
            ) -> impl std::future::Future<Output = Result<(), Error>> + Send {
                let repo = repo.clone();
                async move { Task::delete(&repo, super::BOARD, &super::task_id(id)).await }
            }
            fn update(
                repo: &Repo<Self>,
                spec: &super::TaskUpdate,
            ) -> impl std::future::Future<Output = Result<(), Error>> + Send {
                let f = Task::fields();
                let mut update = Task::update(repo, super::BOARD, &super::task_id(spec.id));
                if let Some((owner, title)) = spec.owner_title {
                    update = update
                        .set(f.owner, super::OWNERS[usize::from(owner)].to_owned())
                        .set(f.title, super::TITLES[usize::from(title)].to_owned());
                }
                if let Some(team) = spec.team {
                    update = update.set(f.team, super::TEAMS[usize::from(team)].to_owned());
                }
                if let Some(stage) = spec.stage {
                    update = update.set(f.stage, super::STAGES[usize::from(stage)].to_owned());
                }
                if let Some(add) = spec.add {
                    update = update.add(f.rank, add);
                }
                async move { update.send().await }
            }
            fn is_pk(pk: &str) -> bool {
                Task::parse_pk(pk).is_ok()
            }
        }
    };
}

/// The crate's defaults: `pk`/`sk`, `gsiN`, the `_entity` tag, `#{shard}`.
pub mod tagged {
    use super::*;
    task!([], []);
}

/// [`AdoptedTable`]: `PK`/`SK`, its own index names, no tag, `#SHARD_{shard}`.
pub mod adopted {
    use super::*;
    task!([, table = AdoptedTable], [, suffix = "#SHARD_{shard}"]);
}

/// Whether `pk`, a stored item's partition key in a table of `flavour`, is a task's.
pub fn is_task_pk(flavour: Flavour, pk: &str) -> bool {
    match flavour {
        Flavour::Tagged => <tagged::Task as TaskEntity>::is_pk(pk),
        Flavour::Adopted => <adopted::Task as TaskEntity>::is_pk(pk),
    }
}

/// The table definition of the tasks in a table of `flavour` (their indexes).
pub fn definition(flavour: Flavour) -> sharded::schema::TableDefinition {
    match flavour {
        Flavour::Tagged => tagged::Task::table_definition(),
        Flavour::Adopted => adopted::Task::table_definition(),
    }
}

// ---------------------------------------------------------------------------------------
// The model.

impl Model {
    /// Applies an operation of the tasks to the model's `tasks`.
    pub fn apply_task(&mut self, op: &Op) -> (Outcome, Vec<Key>) {
        match op {
            Op::TaskPut(puts) => {
                for (id, task) in puts {
                    self.tasks.insert(*id, *task);
                }
            }
            Op::TaskUpdate(update) => {
                // Only tasks the model holds are updated (an update would create a partial
                // item): a sequence shortened by the minimizer skips the others.
                let Some(task) = self.tasks.get_mut(&update.id) else {
                    return (Outcome::Skipped, vec![]);
                };
                if let Some((owner, title)) = update.owner_title {
                    (task.owner, task.title) = (owner, title);
                }
                if let Some(team) = update.team {
                    task.team = team;
                }
                if let Some(stage) = update.stage {
                    task.stage = stage;
                }
                task.rank += update.add.unwrap_or(0);
            }
            Op::TaskDelete { id } => {
                self.tasks.remove(id);
            }
            _ => {}
        }
        (Outcome::Ok, vec![])
    }

    /// The tasks `op` reads, in its order, before any limit.
    fn gsi_answer(&self, op: &GsiOp) -> Vec<(u8, TaskRec)> {
        let mut tasks: Vec<(u8, TaskRec)> = self
            .tasks
            .iter()
            .filter(|(id, t)| match op.target {
                Target::Owner(owner) => t.owner == owner && owner_holds(op.cond, **id, t),
                Target::Team(team, stage) => {
                    t.team == team && t.stage == stage && team_holds(op.cond, **id, t)
                }
            })
            .map(|(id, t)| (*id, *t))
            .collect();
        // gsi1 sorts by the title's bytes then the id; gsi2 by the rank then the id.
        match op.target {
            Target::Owner(_) => tasks.sort_by_key(|(id, t)| (TITLES[usize::from(t.title)], *id)),
            Target::Team(..) => tasks.sort_by_key(|(id, t)| (t.rank, *id)),
        }
        if op.order == Order::Descending {
            tasks.reverse();
        }
        tasks
    }
}

fn owner_holds(cond: Option<SkCond>, id: u8, task: &TaskRec) -> bool {
    let Some(c) = cond else { return true };
    let title = |i: i64| TITLES[i as usize];
    match c.first {
        None => c.cmp.holds(
            &TITLES[usize::from(task.title)],
            &title(c.low),
            &title(c.high),
        ),
        Some(t) => {
            TITLES[usize::from(task.title)] == title(t)
                && c.cmp.holds(&i64::from(id), &c.low, &c.high)
        }
    }
}

fn team_holds(cond: Option<SkCond>, id: u8, task: &TaskRec) -> bool {
    let Some(c) = cond else { return true };
    match c.first {
        None => c.cmp.holds(&task.rank, &c.low, &c.high),
        Some(r) => task.rank == r && c.cmp.holds(&i64::from(id), &c.low, &c.high),
    }
}

// ---------------------------------------------------------------------------------------
// The generator.

impl Generator {
    /// An operation of the tasks: writes a little over half the time, a GSI query the rest.
    pub fn task_op(&mut self, model: &Model) -> Op {
        let held: Vec<u8> = model.tasks.keys().copied().collect();
        match self.rng.u8(..12) {
            0..=2 => Op::TaskPut(vec![(self.rng.u8(..IDS), self.task())]),
            3 => {
                let n = self.rng.usize(2..=4);
                let mut puts: BTreeMap<u8, TaskRec> = BTreeMap::new();
                for _ in 0..n {
                    puts.insert(self.rng.u8(..IDS), self.task());
                }
                Op::TaskPut(puts.into_iter().collect())
            }
            4..=5 if !held.is_empty() => {
                let id = held[self.rng.usize(..held.len())];
                let mut update = TaskUpdate {
                    id,
                    owner_title: self.rng.bool().then(|| {
                        (
                            self.rng.u8(..OWNERS.len() as u8),
                            self.rng.u8(..TITLES.len() as u8),
                        )
                    }),
                    team: self.rng.bool().then(|| self.rng.u8(..TEAMS.len() as u8)),
                    stage: self.rng.bool().then(|| self.rng.u8(..STAGES.len() as u8)),
                    add: self.rng.bool().then(|| self.rng.i64(-2..=2)),
                };
                if update.owner_title.is_none()
                    && update.team.is_none()
                    && update.stage.is_none()
                    && update.add.is_none()
                {
                    update.team = Some(self.rng.u8(..TEAMS.len() as u8));
                }
                Op::TaskUpdate(update)
            }
            6 => {
                let id = if !held.is_empty() && self.rng.u8(..4) != 0 {
                    held[self.rng.usize(..held.len())]
                } else {
                    self.rng.u8(..IDS)
                };
                Op::TaskDelete { id }
            }
            _ => Op::GsiRead(self.gsi_op()),
        }
    }

    fn task(&mut self) -> TaskRec {
        TaskRec {
            owner: self.rng.u8(..OWNERS.len() as u8),
            title: self.rng.u8(..TITLES.len() as u8),
            team: self.rng.u8(..TEAMS.len() as u8),
            stage: self.rng.u8(..STAGES.len() as u8),
            rank: self.rng.i64(RANKS),
        }
    }

    fn gsi_op(&mut self) -> GsiOp {
        let target = if self.rng.bool() {
            Target::Owner(self.rng.u8(..OWNERS.len() as u8))
        } else {
            Target::Team(
                self.rng.u8(..TEAMS.len() as u8),
                self.rng.u8(..STAGES.len() as u8),
            )
        };
        let cond = self.rng.bool().then(|| self.sk_cond(target));
        let read = match self.rng.u8(..5) {
            0..=1 => GsiRead::Collect,
            2 => GsiRead::Count,
            3 => GsiRead::Stream,
            _ => GsiRead::Pages {
                size: [1, 2, 3, 5][self.rng.usize(..4)],
                sealed: self.rng.bool(),
            },
        };
        let limited = matches!(read, GsiRead::Collect | GsiRead::Stream);
        GsiOp {
            target,
            cond,
            order: [Order::Default, Order::Ascending, Order::Descending][self.rng.usize(..3)],
            limit: (limited && self.rng.bool()).then(|| self.rng.usize(1..=5)),
            page_size: self.rng.bool().then(|| [1, 2, 5][self.rng.usize(..3)]),
            read,
        }
    }

    fn sk_cond(&mut self, target: Target) -> SkCond {
        let cmp = [Cmp::Eq, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Between][self.rng.usize(..6)];
        let on_id = self.rng.bool();
        let (first, mut low, mut high) = if on_id {
            let first = match target {
                Target::Owner(_) => self.rng.i64(0..TITLES.len() as i64),
                Target::Team(..) => self.rng.i64(RANKS),
            };
            let ids = i64::from(IDS);
            (Some(first), self.rng.i64(0..ids), self.rng.i64(0..ids))
        } else {
            match target {
                Target::Owner(_) => {
                    let n = TITLES.len() as i64;
                    (None, self.rng.i64(0..n), self.rng.i64(0..n))
                }
                Target::Team(..) => (None, self.rng.i64(RANKS), self.rng.i64(RANKS)),
            }
        };
        // Bounds in order: titles by their bytes, ranks and ids as numbers.
        let key = |v: i64| match (first, target) {
            (None, Target::Owner(_)) => TITLES[v as usize].as_bytes().to_vec(),
            _ => (v + 1_000).to_be_bytes().to_vec(),
        };
        if key(low) > key(high) {
            (low, high) = (high, low);
        }
        // gsi1 has no `_lt` on the id, which ends its template.
        let cmp = match (target, first, cmp) {
            (Target::Owner(_), Some(_), Cmp::Lt) => Cmp::Le,
            (_, _, cmp) => cmp,
        };
        SkCond {
            first,
            cmp,
            low,
            high,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Sending.

/// Sends an operation of the tasks, as the entity of the run's table, and compares a GSI
/// query's answer with `model` (the model before the operation); after a write, every index
/// partition the write left or entered is collected and compared with the model after it.
pub async fn send(run: &Run, model: &Model, op: &Op) -> Result<Outcome, Failure> {
    match run.flavour() {
        Flavour::Tagged => send_as::<tagged::Task>(run, model, op).await,
        Flavour::Adopted => send_as::<adopted::Task>(run, model, op).await,
    }
}

async fn send_as<E: TaskEntity>(run: &Run, model: &Model, op: &Op) -> Result<Outcome, Failure> {
    let repo = run.repo::<E>();
    let written = match op {
        Op::TaskPut(puts) if puts.len() == 1 => {
            let (id, task) = &puts[0];
            repo.put(&E::from_model(*id, task)).await
        }
        Op::TaskPut(puts) => {
            let tasks: Vec<E> = puts.iter().map(|(id, t)| E::from_model(*id, t)).collect();
            repo.batch_put(&tasks).await
        }
        Op::TaskUpdate(update) => E::update(&repo, update).await,
        Op::TaskDelete { id } => E::delete(&repo, *id).await,
        Op::GsiRead(read_op) => {
            read(&repo, model, read_op).await?;
            return Ok(Outcome::Ok);
        }
        _ => Ok(()),
    };
    if let Err(e) = written {
        return Err(failure(
            format!("outcome of {}", op.name()),
            format!("unexpected error: {e}"),
        ));
    }
    // The partitions the write left (the model before) and entered (the model after),
    // collected through the repository: a write drops every GSI answer it cached.
    let mut after: Vec<(Target, Option<SkCond>)> = Vec::new();
    for tasks in [&model.tasks, &run.model.tasks] {
        for id in written_ids(op) {
            if let Some(t) = tasks.get(&id) {
                // The twin of a partition whose rendering holds the other's separators is
                // read right after it (once the same cached answer).
                let twin = match (t.team, t.stage) {
                    (1, 0) => Target::Team(0, 1),
                    (0, 1) => Target::Team(1, 0),
                    _ => Target::Team(t.team, t.stage),
                };
                for target in [Target::Owner(t.owner), Target::Team(t.team, t.stage), twin] {
                    if !after.contains(&(target, None)) {
                        after.push((target, None));
                    }
                }
            }
        }
    }
    // And, where a written task is now, a typed condition bounded by its own sort values
    // (both bounds of a closed one included, a strict one excluded).
    for id in written_ids(op) {
        if let Some(t) = run.model.tasks.get(&id) {
            for target in [Target::Owner(t.owner), Target::Team(t.team, t.stage)] {
                after.push((target, Some(own_bound(target, id, t))));
            }
        }
    }
    for (target, cond) in after {
        let after = GsiOp {
            target,
            cond,
            order: Order::Default,
            limit: None,
            page_size: None,
            read: GsiRead::Collect,
        };
        read(&repo, &run.model, &after).await.map_err(|mut f| {
            f.check = format!("after {}: {}", op.name(), f.check);
            f
        })?;
    }
    Ok(Outcome::Ok)
}

/// A condition of `target`'s index bounded by task `id`'s own sort values: on the first sort
/// field or, with it held equal, on the id; the comparison chosen by the task's content, so
/// that the writes of a sequence meet every one.
fn own_bound(target: Target, id: u8, t: &TaskRec) -> SkCond {
    let spin = usize::from(id)
        + usize::from(t.title)
        + usize::from(t.team)
        + t.rank.rem_euclid(6) as usize;
    let cmp = [Cmp::Eq, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Between][spin % 6];
    let first = match target {
        Target::Owner(_) => i64::from(t.title),
        Target::Team(..) => t.rank,
    };
    if (spin / 6).is_multiple_of(2) {
        return SkCond {
            first: None,
            cmp,
            low: first,
            high: first,
        };
    }
    let cmp = match (target, cmp) {
        (Target::Owner(_), Cmp::Lt) => Cmp::Le,
        (_, cmp) => cmp,
    };
    SkCond {
        first: Some(first),
        cmp,
        low: i64::from(id),
        high: i64::from(id),
    }
}

fn written_ids(op: &Op) -> Vec<u8> {
    match op {
        Op::TaskPut(puts) => puts.iter().map(|(id, _)| *id).collect(),
        Op::TaskUpdate(update) => vec![update.id],
        Op::TaskDelete { id } => vec![*id],
        _ => vec![],
    }
}

/// The query of `op`, with its settings.
fn query<E: TaskEntity>(repo: &Repo<E>, op: &GsiOp) -> Query<E> {
    let mut query = match op.target {
        Target::Owner(owner) => E::by_owner(repo, OWNERS[usize::from(owner)]),
        Target::Team(team, stage) => {
            E::by_team(repo, TEAMS[usize::from(team)], STAGES[usize::from(stage)])
        }
    };
    if let Some(cond) = &op.cond {
        query = query.sk(match op.target {
            Target::Owner(_) => E::owner_cond(cond),
            Target::Team(..) => E::team_cond(cond),
        });
    }
    query = match op.order {
        Order::Default => query,
        Order::Ascending => query.descending().ascending(),
        Order::Descending => query.descending(),
    };
    if let Some(n) = op.limit {
        query = query.limit(n);
    }
    if let Some(n) = op.page_size {
        query = query.page_size(n);
    }
    query
}

async fn read<E: TaskEntity>(repo: &Repo<E>, model: &Model, op: &GsiOp) -> Result<(), Failure> {
    let check = op.name();
    let unexpected = |e: Error| failure(&check, format!("unexpected error: {e}"));
    let tasks = model.gsi_answer(op);
    let limited = || {
        let n = op.limit.unwrap_or(usize::MAX);
        tasks.iter().take(n).copied().collect::<Vec<_>>()
    };
    let models = |items: Vec<E>| items.iter().map(E::to_model).collect::<Vec<_>>();
    match op.read {
        GsiRead::Collect => {
            let got = query(repo, op).collect().await.map_err(unexpected)?;
            same(&check, op, &models(got), &limited())
        }
        GsiRead::Stream => {
            let got: Vec<E> = query(repo, op)
                .stream()
                .try_collect()
                .await
                .map_err(unexpected)?;
            same(&check, op, &models(got), &limited())
        }
        GsiRead::Count => {
            let count = query(repo, op).count().await.map_err(unexpected)?;
            if count == tasks.len() as u64 {
                return Ok(());
            }
            Err(failure(
                check,
                format!("{op:?}: counted {count}, the model holds {}", tasks.len()),
            ))
        }
        GsiRead::Pages { size, sealed } => {
            let got = pages(repo, op, size, sealed).await?;
            same(&check, op, &got, &tasks)
        }
    }
}

/// Every page of `op`'s query, paged by `size`, sealed or not (see
/// [`pages_sealed_or_not`]).
async fn pages<E: TaskEntity>(
    repo: &Repo<E>,
    op: &GsiOp,
    size: usize,
    sealed: bool,
) -> Result<Vec<(u8, TaskRec)>, Failure> {
    let pages = pages_sealed_or_not(&op.name(), size, sealed, MAX_PAGES, |sealed, cursor| {
        let query = query(repo, op);
        let query = if sealed {
            query.seal_cursors(&cursor_key())
        } else {
            query
        };
        async move { query.page(size, cursor.as_ref()).await }
    })
    .await?;
    Ok(pages.iter().map(E::to_model).collect())
}

fn short((id, t): &(u8, TaskRec)) -> String {
    fn name(list: &[&'static str], i: u8) -> &'static str {
        list.get(usize::from(i)).copied().unwrap_or("?")
    }
    format!(
        "{}:{}/{}|{}/{}/{}",
        task_id(*id),
        name(&OWNERS, t.owner),
        name(&TITLES, t.title),
        name(&TEAMS, t.team),
        name(&STAGES, t.stage),
        t.rank
    )
}

fn same(
    check: &str,
    op: &GsiOp,
    got: &[(u8, TaskRec)],
    model: &[(u8, TaskRec)],
) -> Result<(), Failure> {
    if got == model {
        return Ok(());
    }
    let got: Vec<String> = got.iter().map(short).collect();
    let model: Vec<String> = model.iter().map(short).collect();
    Err(failure(
        check,
        format!("{op:?}: read {got:?}, the model holds {model:?} (id:owner/title|team/stage/rank)"),
    ))
}
