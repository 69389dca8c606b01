//! Runs a sequence against DynamoDB Local: each operation sent as a user would, its answer
//! compared with the model's prediction, then every read checked against the model.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue as V;
use aws_sdk_dynamodb::Client;
use futures::StreamExt;
use sharded::capacity::{HotKeyStats, ReportHotKeys};
use sharded::keys::KeyPart;
use sharded::migrate::Migrate;
use sharded::schema::CreateTable;
use sharded::{
    migrate, transaction::Transaction, Cursor, Error, Repo, ShardedCounter, ShardedEntity,
};
use sharded_testkit::faults::Faults;
use sharded_testkit::history::History;

use super::events;
use super::gsis;
use super::layouts::{group_name, id_name, Flavour, Layout, ModelEntity, UpdateSpec, REKEYED_NAME};
use super::ops::{Counting, Fault, Op, ScanOp, ScanRead, TxAction, UpdateOp};
use super::reference::{now, Key, Kind, Model, Outcome, Phase, Rec};

/// Runs `$body` with `$l` the layout type of `$phase` in the table of `$flavour`.
macro_rules! with_layout {
    ($flavour:expr, $phase:expr, $l:ident => $body:expr) => {
        match $flavour {
            Flavour::Tagged => with_layout!(@phase tagged, $phase, $l => $body),
            Flavour::Adopted => with_layout!(@phase adopted, $phase, $l => $body),
        }
    };
    (@phase $table:ident, $phase:expr, $l:ident => $body:expr) => {
        match $phase {
            Phase::A3 => {
                type $l = super::layouts::$table::A3;
                $body
            }
            Phase::U3 => {
                type $l = super::layouts::$table::U3;
                $body
            }
            Phase::S3 => {
                type $l = super::layouts::$table::S3;
                $body
            }
            Phase::T5 => {
                type $l = super::layouts::$table::T5;
                $body
            }
            Phase::S5 => {
                type $l = super::layouts::$table::S5;
                $body
            }
            Phase::T3 => {
                type $l = super::layouts::$table::T3;
                $body
            }
        }
    };
}

/// A check that did not hold: what was checked, and how it differed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub check: String,
    pub detail: String,
}

/// A check that did not hold, as a value (what `fail` returns as an error).
pub(super) fn failure(check: impl Into<String>, detail: impl Into<String>) -> Failure {
    Failure {
        check: check.into(),
        detail: detail.into(),
    }
}

fn fail<T>(check: impl Into<String>, detail: impl Into<String>) -> Result<T, Failure> {
    Err(failure(check, detail))
}

/// The plan `MigrateUnit` cuts: `of` units of a scan in 4 segments (`Migration::plan`).
async fn unit_plan<E: ModelEntity>(repo: &Repo<E>, of: u8) -> Result<migrate::Plan, Failure> {
    match repo
        .migrate()
        .segments(4)
        .write_units_per_second(100_000.0)
        .plan(of.into(), 1)
        .await
    {
        Ok(plan) => Ok(plan),
        Err(e) => fail("Migration::plan", format!("{of} units of 4: {e}")),
    }
}

/// Every page of a listing, `size` items at a time, at most `max_pages` of them: `page`
/// reads one page, of the query sealed with [`cursor_key`] or not, from a cursor. Each page
/// holds at most `size` items; the first cursor is also offered to the query sealed the
/// other way (a sealed cursor to the query without the key: `Sealed`; a plain one to the
/// query with it: `NotSealed`), and must be refused.
pub(super) async fn pages_sealed_or_not<T, F, Fut>(
    check: &str,
    size: usize,
    sealed: bool,
    max_pages: usize,
    page: F,
) -> Result<Vec<T>, Failure>
where
    F: Fn(bool, Option<Cursor>) -> Fut,
    Fut: std::future::Future<Output = Result<sharded::Page<T>, Error>>,
{
    let mut all = Vec::new();
    let mut cursor: Option<Cursor> = None;
    for n in 1..=max_pages {
        let read = page(sealed, cursor.take())
            .await
            .map_err(|e| failure(check, format!("page {n}: unexpected error: {e}")))?;
        if read.items.len() > size {
            return fail(
                check,
                format!("page {n}: {} items, asked for {size}", read.items.len()),
            );
        }
        all.extend(read.items);
        let Some(next) = read.cursor else {
            return Ok(all);
        };
        if n == 1 {
            let (given, offered, wanted) = if sealed {
                ("sealed", "without the key", "Sealed")
            } else {
                ("not sealed", "with a key", "NotSealed")
            };
            match page(!sealed, Some(next.clone())).await {
                Err(Error::Cursor(sharded::cursor::CursorError::Sealed)) if sealed => {}
                Err(Error::Cursor(sharded::cursor::CursorError::NotSealed)) if !sealed => {}
                other => {
                    return fail(
                        check,
                        format!(
                            "a cursor {given} offered to the query {offered}: expected \
                             {wanted}, got {:?}",
                            other.map(|p| p.items.len())
                        ),
                    )
                }
            }
        }
        cursor = Some(next);
    }
    fail(check, format!("more than {max_pages} pages"))
}

/// Where a partial migration run stops, its scope, and whether its checkpoints are kept.
#[derive(Clone, Copy, Debug)]
struct Stop {
    after: u64,
    only: Option<u8>,
    checkpointed: bool,
}

/// A migration's entity and scope (one group's partitions, or the table).
type Scope = (Kind, Option<u8>);

/// The last checkpoint a partial run offered, and whether an old-layout writer has put an
/// item since (which a run resumed from it does not read again).
struct Kept {
    checkpoint: migrate::Checkpoint,
    behind: bool,
}

/// A listing being paged across steps.
struct Paging {
    kind: Kind,
    group: u8,
    size: usize,
    filter: Option<String>,
    cursor: Option<Cursor>,
    answer: Vec<Key>,
    history: History<Key>,
    started: u64,
    pages: usize,
}

impl Paging {
    fn in_scope(&self, key: &Key, rec: Option<&Rec>) -> bool {
        key.kind == self.kind
            && key.group == self.group
            && rec.is_some_and(|r| {
                !r.expired() && self.filter.as_ref().is_none_or(|s| r.status == *s)
            })
    }
}

/// How the sequence's one repository shares its reads: single flight on or off, a bound on
/// the concurrent shard requests of a query, and how stale a cached `collect` may be (zero:
/// no cache).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sharing {
    pub single_flight: bool,
    pub concurrency: Option<usize>,
    pub staleness: Duration,
    /// Whether the repository records hot-key statistics.
    pub stats: bool,
    /// Whether the table is created by `Repo::create_table` and has time to live enabled by
    /// `Repo::enable_ttl` (then no item is written already expired: the backend's own
    /// sweeper would delete it at moments the model does not choose).
    pub ttl_table: bool,
}

impl Sharing {
    /// The sharing of the sequence of `seed`: every combination in turn.
    pub fn of(seed: u64) -> Sharing {
        Sharing {
            single_flight: !seed.is_multiple_of(5),
            concurrency: [None, Some(1), Some(2)][(seed / 2 % 3) as usize],
            staleness: Duration::from_millis([0, 150, 400][(seed / 3 % 3) as usize]),
            stats: seed % 4 != 1,
            ttl_table: seed % 4 == 2,
        }
    }
}

/// A state of the model a cached answer may still show: the model before a step, when that
/// step ended, and the groups it wrote through the repository (a write through the same
/// repository drops the cached answers of the partitions it wrote).
struct Past {
    model: Model,
    until: Instant,
    repo_groups: BTreeSet<u8>,
}

/// One sequence's run on its own table.
pub struct Run {
    client: Client,
    table: String,
    flavour: Flavour,
    sharing: Sharing,
    /// The one repository every operation and read of the sequence goes through (its
    /// `for_entity` siblings, clones and transactions): one read cache and one single flight
    /// across steps, layouts and entities, as a service holds it.
    shared: Repo<super::layouts::tagged::S3Item>,
    /// The faults the shared repository's requests pass through (none armed, but during
    /// an `Op::Faulted` or an `Op::PartialRead`).
    faults: Faults,
    /// The recent states a cached answer may still show, oldest first.
    past: VecDeque<Past>,
    /// The last checkpoint of each entity and scope's partial migration runs, in the layout
    /// declared now.
    checkpoints: Arc<Mutex<HashMap<Scope, Kept>>>,
    pub model: Model,
    paging: Option<Paging>,
    pub step: usize,
}

/// The raw item a service wrote before adopting `sharded`: no tag, the key spelled by hand,
/// at the legacy unsharded key (`A3`) or on the shard of its choosing (`U3`).
pub(super) fn legacy_item(
    flavour: Flavour,
    phase: Phase,
    shard: u8,
    key: &Key,
    rec: &Rec,
) -> HashMap<String, V> {
    let prefix = match key.kind {
        Kind::Item => "I#",
        Kind::Doc => "D#",
    };
    let group = group_name(key.group);
    let pk = match phase {
        Phase::U3 => flavour.shard_pk(&group, u32::from(shard)),
        _ => format!("G#{group}"),
    };
    let mut item = HashMap::from([
        (flavour.pk().to_owned(), V::S(pk)),
        (
            flavour.sk().to_owned(),
            V::S(format!("{prefix}{}", id_name(key.id))),
        ),
        ("group".to_owned(), V::S(group)),
        ("id".to_owned(), V::S(id_name(key.id))),
        ("status".to_owned(), V::S(rec.status.clone())),
        ("points".to_owned(), V::N(rec.points.to_string())),
    ]);
    match key.kind {
        Kind::Item => {
            if let Some(e) = rec.expires {
                item.insert("expires".to_owned(), V::N(e.to_string()));
            }
        }
        Kind::Doc => {
            item.insert("version".to_owned(), V::N(rec.version.to_string()));
        }
    }
    item
}

/// The attribute that marks the records of other services the model plants in the
/// partitions: never the entities', so reads skip and count them and nothing rewrites them.
const FOREIGN_MARK: &str = "planted";

/// The logical key of the sequence's sharded counter, and its shards.
const COUNTER_KEY: &str = "VOTES";
const COUNTER_SHARDS: u32 = 4;

/// The shard of group `a` the foreign records are planted on (a shard of 3 and of 5 shards).
const FOREIGN_SHARD: u32 = 1;

/// Records of other services in group `a`'s partitions, planted before the sequence starts:
/// another record type that carries the entities' attributes (`BEST#001`), an item keyed
/// `I#..` with a raw space its writer did not escape (not in canonical form), and an item
/// keyed `D#..` that does not read as a doc (no `points`, no `version`); and the legacy
/// service's game record (`META`) in the legacy partition. Once `rekeyed` (a migration asked
/// to re-key the items not in canonical form read it), the `I#..` record is the entity's
/// item and no longer among them.
fn foreign_items(flavour: Flavour, rekeyed: bool) -> Vec<HashMap<String, V>> {
    let shard = flavour.shard_pk("a", FOREIGN_SHARD);
    let item = |pk: &str, sk: &str, extra: &[(&str, V)]| {
        let mut item = HashMap::from([
            (flavour.pk().to_owned(), V::S(pk.to_owned())),
            (flavour.sk().to_owned(), V::S(sk.to_owned())),
            (FOREIGN_MARK.to_owned(), V::Bool(true)),
        ]);
        item.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        item
    };
    let fields = |id: &str| {
        vec![
            ("group", V::S("a".into())),
            ("id", V::S(id.into())),
            ("status", V::S("red".into())),
            ("points", V::N("7".into())),
        ]
    };
    let mut items = vec![
        item(&shard, "BEST#001", &fields("001")),
        item(&shard, &format!("I#{REKEYED_NAME}"), &fields(REKEYED_NAME)),
        item(
            &shard,
            "D#950",
            &[("group", V::S("a".into())), ("id", V::S("950".into()))],
        ),
    ];
    if rekeyed {
        items.retain(|item| item.get(flavour.sk()) != Some(&V::S(format!("I#{REKEYED_NAME}"))));
    }
    if super::LEGACY_FOREIGN_ITEM {
        items.push(item(
            "G#a",
            "META",
            &[("title", V::S("legacy game record".into()))],
        ));
    }
    items
}

/// How many foreign records a query of `kind` in `group` reads in `phase`: those whose sort
/// key starts as the entity's (a query reads only those), or every one of the group's for a
/// collection (`kind` `None`), the legacy partition's only while it is read.
fn foreign_expected(flavour: Flavour, model: &Model, kind: Option<Kind>, group: u8) -> u64 {
    if group != 0 {
        return 0;
    }
    let phase = model.phase;
    foreign_items(flavour, model.rekeyed)
        .iter()
        .filter(|item| {
            let Some(V::S(sk)) = item.get(flavour.sk()) else {
                return false;
            };
            let Some(V::S(pk)) = item.get(flavour.pk()) else {
                return false;
            };
            let partition_read = pk != "G#a" || phase == Phase::A3;
            let sort_key_read = match kind {
                None => true,
                Some(Kind::Item) => sk.starts_with("I#"),
                Some(Kind::Doc) => sk.starts_with("D#"),
            };
            partition_read && sort_key_read
        })
        .count() as u64
}

fn outcome_of(result: Result<(), Error>) -> Result<Outcome, String> {
    match result {
        Ok(()) => Ok(Outcome::Ok),
        Err(Error::AlreadyExists { .. }) => Ok(Outcome::AlreadyExists),
        Err(Error::ConditionFailed { .. }) => Ok(Outcome::ConditionFailed),
        Err(Error::VersionConflict { .. }) => Ok(Outcome::VersionConflict),
        Err(Error::TransactionCanceled { actions }) => {
            Ok(Outcome::Canceled(actions.iter().map(|a| a.index).collect()))
        }
        Err(other) => Err(other.to_string()),
    }
}

impl Run {
    pub async fn new(
        client: Client,
        flavour: Flavour,
        phase: Phase,
        sharing: Sharing,
    ) -> Result<Run, Failure> {
        let table = sharded_testkit::backend::unique_table_name("model");
        // Without time to live enabled: the backend's own sweeper would delete expired items
        // at moments of its choosing; `Op::Sweep` does it at a step of the sequence. Or, in a
        // sequence that writes no expired item, as a service creates it.
        if sharing.ttl_table {
            create_with_ttl(&client, flavour, &table).await?;
        } else if let Err(e) = flavour
            .definition()
            .create_table(&client, &table)
            .send()
            .await
        {
            return fail("setup", format!("create table: {e:?}"));
        }
        let faults = Faults::new();
        let mut shared = Repo::new(
            crate::support::faulty_client(&faults, 3).await,
            table.clone(),
        )
        .with_batch_retry(retry())
        .with_single_flight(sharing.single_flight)
        .with_read_cache(1_000, Arc::new(sharded::capacity::SystemClock::new()));
        if let Some(concurrency) = sharing.concurrency {
            shared = shared.with_concurrency(concurrency);
        }
        if !sharing.staleness.is_zero() {
            shared = shared.with_max_staleness(sharing.staleness);
        }
        if sharing.stats {
            shared = shared.with_stats(Arc::new(HotKeyStats::new(Duration::from_secs(3_600))));
        }
        let run = Run {
            client,
            table,
            flavour,
            sharing,
            shared,
            faults,
            past: VecDeque::new(),
            checkpoints: Arc::default(),
            model: Model::new(phase, flavour == Flavour::Tagged),
            paging: None,
            step: 0,
        };
        // Other services' records in the partitions: reads skip and count them, the
        // migration leaves them alone.
        for item in foreign_items(flavour, false) {
            run.raw_put(item).await?;
        }
        run.check_repository().await?;
        Ok(run)
    }

    /// The client the repository sends through reaches its table, and an entity that names
    /// no table of its own has no default one (the error names the fix).
    async fn check_repository(&self) -> Result<(), Failure> {
        let described = self
            .shared
            .client()
            .describe_table()
            .table_name(self.shared.table())
            .send()
            .await;
        let name = described
            .as_ref()
            .ok()
            .and_then(|d| d.table.as_ref())
            .and_then(|t| t.table_name.as_deref());
        if name != Some(self.table.as_str()) {
            return fail("repository client", format!("DescribeTable: {described:?}"));
        }
        match Repo::<super::layouts::tagged::S3Item>::in_default_table(self.client.clone()) {
            Err(Error::NoDefaultTable { .. }) => Ok(()),
            other => fail(
                "in_default_table",
                format!(
                    "an entity without a table gave {:?}",
                    other.map(|r| r.table().to_owned())
                ),
            ),
        }
    }

    pub(super) fn repo<E: ShardedEntity>(&self) -> Repo<E> {
        self.shared.for_entity()
    }

    /// Whether reads may take an untagged item for the entity's by its keys: always in the
    /// adopted table, at a previous layout's place in the tagged one.
    fn untagged_may_be_read(&self) -> bool {
        self.flavour == Flavour::Adopted || self.model.phase.transition()
    }

    /// The write units the repository's statistics hold per base-table partition key.
    fn write_units(&self) -> HashMap<String, f64> {
        let Some(stats) = self.shared.stats() else {
            return HashMap::new();
        };
        stats
            .report()
            .keys
            .into_iter()
            .filter(|k| k.index.is_none())
            .map(|k| (k.key, k.write_units))
            .collect()
    }

    /// The repository's accessors say what it was built with, and its statistics recorded
    /// the write units of every partition a write through it changed (at the item's current
    /// place, in the layout it was written in).
    fn check_stats<L: Layout>(
        &self,
        op: &Op,
        before: &HashMap<String, f64>,
        written: &[Key],
    ) -> Result<(), Failure> {
        let repo = &self.shared;
        let accessors = (
            repo.table() == self.table,
            repo.concurrency() == self.sharing.concurrency.unwrap_or(32),
            repo.fan_out(7) == self.sharing.concurrency.unwrap_or(7),
            repo.stats().is_some() == self.sharing.stats,
        );
        if accessors != (true, true, true, true) {
            return fail(
                "repository accessors",
                format!(
                    "table, concurrency, fan-out, stats as built: {accessors:?} ({:?})",
                    self.sharing
                ),
            );
        }
        let puts = matches!(op, Op::Put { .. } | Op::PutNew { .. } | Op::BatchPut(_));
        let other_writes = matches!(
            op,
            Op::PutIf { .. }
                | Op::Update(_)
                | Op::Delete { .. }
                | Op::DeleteIf { .. }
                | Op::BatchDelete(_)
                | Op::Transact(_)
                | Op::Prepared { .. }
        );
        // During a transition a put is a transaction (the write and its previous place's).
        let plain_put = puts && !self.model.phase.transition();
        let writes = plain_put || ((puts || other_writes) && super::STATS_RECORD_EVERY_WRITE);
        if !self.sharing.stats || !writes {
            return Ok(());
        }
        let after = self.write_units();
        for key in written {
            let pk = match key.kind {
                Kind::Item => L::Item::places(key)[0].0.clone(),
                Kind::Doc => L::Doc::places(key)[0].0.clone(),
            };
            let (was, is) = (
                before.get(&pk).copied().unwrap_or(0.0),
                after.get(&pk).copied().unwrap_or(0.0),
            );
            if is <= was {
                return fail(
                    "hot-key statistics",
                    format!(
                        "{} wrote {key:?} on {pk}: its write units went from {was} to {is}",
                        op.name()
                    ),
                );
            }
        }
        Ok(())
    }

    /// Records the state `before` a step that changed the model, for the cached answers that
    /// may still show it, and forgets the states no answer may show any more.
    fn remember(&mut self, before: &Model, op: &Op, written: &[Key]) {
        let bound = self.sharing.staleness;
        if bound.is_zero() || before.items == self.model.items {
            return;
        }
        let through_the_repo = !matches!(op, Op::LegacyPut { .. } | Op::Sweep);
        let now = Instant::now();
        self.past.push_back(Past {
            model: before.clone(),
            until: now,
            repo_groups: if through_the_repo {
                written.iter().map(|k| k.group).collect()
            } else {
                BTreeSet::new()
            },
        });
        while self.past.front().is_some_and(|p| p.until + 2 * bound < now) {
            self.past.pop_front();
        }
    }

    /// The foreign records a cached read of `kind` in `group` started at `started` may count:
    /// as many as are planted where it reads in any state it may show (a migration that
    /// re-keyed one changed their number).
    fn foreign_as_of(&self, started: Instant, group: u8, kind: Option<Kind>) -> BTreeSet<u64> {
        self.acceptable(started, Some(group))
            .into_iter()
            .map(|model| foreign_expected(self.flavour, model, kind, group))
            .collect()
    }

    /// The states a cached `collect` of `group` started at `started` may show: the model now,
    /// and each earlier state that was still current within the staleness bound before
    /// `started`, back to the last write of the group through the repository (which dropped
    /// every older answer of its partitions). Newest first.
    fn acceptable(&self, started: Instant, group: Option<u8>) -> Vec<&Model> {
        let mut models = vec![&self.model];
        for past in self.past.iter().rev() {
            let written = match group {
                Some(g) => past.repo_groups.contains(&g),
                None => !past.repo_groups.is_empty(),
            };
            if written || past.until + self.sharing.staleness < started {
                break;
            }
            models.push(&past.model);
        }
        models
    }

    /// `got`, read by a `collect` started at `started` that the read cache may answer,
    /// against `expected` of the model now or of a state it may still show.
    fn same_as_of(
        &self,
        check: &str,
        got: &[(Key, Rec)],
        started: Instant,
        group: Option<u8>,
        expected: impl Fn(&Model) -> Vec<(Key, Rec)>,
    ) -> Result<(), Failure> {
        let models = self.acceptable(started, group);
        if models.iter().any(|m| expected(m) == got) {
            return Ok(());
        }
        same(check, got, &expected(&self.model)).map_err(|mut f| {
            f.detail += &format!(
                "; nor any of the {} earlier states within the staleness bound of {:?}",
                models.len() - 1,
                self.sharing.staleness
            );
            f
        })
    }

    pub(super) fn flavour(&self) -> Flavour {
        self.flavour
    }

    async fn raw_put(&self, item: HashMap<String, V>) -> Result<(), Failure> {
        match self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => fail("raw put", format!("{e:?}")),
        }
    }

    /// Every stored item, through a raw scan.
    async fn raw_scan(&self) -> Result<Vec<HashMap<String, V>>, Failure> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = match self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
            {
                Ok(page) => page,
                Err(e) => return fail("raw scan", format!("{e:?}")),
            };
            items.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// Runs one operation and the checks after it.
    pub async fn step(&mut self, op: &Op) -> Result<Outcome, Failure> {
        let started = std::time::Instant::now();
        let result = self.step_inner(op).await;
        if std::env::var_os("SHARDED_MODEL_TRACE").is_some() {
            eprintln!(
                "step {:>3} {:>6.0} ms  {}",
                self.step,
                started.elapsed().as_secs_f64() * 1e3,
                op.name()
            );
        }
        result
    }

    async fn step_inner(&mut self, op: &Op) -> Result<Outcome, Failure> {
        self.step += 1;
        let before = self.model.clone();
        let (expected, written) = self.model.apply(op);
        if expected == Outcome::Skipped {
            return Ok(expected);
        }
        let units_before = self.write_units();
        let actual =
            with_layout!(self.flavour, before.phase, L => self.send::<L>(&before, op).await)?;
        let agrees = match (&expected, &actual) {
            (Outcome::Canceled(failing), Outcome::Canceled(reported)) => {
                !reported.is_empty()
                    && (!super::CANCELED_INDEX_IS_POSITION_ADDED
                        || reported.iter().all(|i| failing.contains(i)))
            }
            (e, a) => e == a,
        };
        if !agrees {
            return fail(
                format!("outcome of {}", op.name()),
                format!("the model predicts {expected:?}, DynamoDB answered {actual:?}"),
            );
        }
        if expected == Outcome::Ok {
            with_layout!(self.flavour, before.phase, L => self.check_stats::<L>(op, &units_before, &written))?;
        }
        if before.phase != self.model.phase {
            // A listing's cursor carried across the layout change is refused, as the guide
            // says ("a cursor issued under another layout of the same key is refused with
            // `CursorError::Layout`"); the listing ends there.
            if let Some(paging) = self.paging.take() {
                with_layout!(self.flavour, self.model.phase, L => carried_cursor::<L>(self.repo(), &paging, self.model.phase.transition()).await)
                    .map_err(|mut f| {
                        f.detail += &format!(" ({:?} -> {:?})", before.phase, self.model.phase);
                        f
                    })?;
            }
            // A checkpoint is of the layout it was taken in.
            self.checkpoints.lock().expect("not poisoned").clear();
        }
        self.record_paging(&before, &written);
        self.remember(&before, op, &written);
        // A listing paged to its end is over: the model may start another.
        if self.paging.is_none() {
            self.model.paging = false;
        }
        // Every read after the steps that change where items live, and every tenth step;
        // otherwise `collect` and a rotating choice of the other reads.
        let full = self.step.is_multiple_of(10)
            || matches!(
                op,
                Op::Declare
                    | Op::Complete { .. }
                    | Op::MigratePartial { .. }
                    | Op::MigrateResume { .. }
                    | Op::MigrateUnit { .. }
                    | Op::Sweep
                    | Op::LegacyPut { .. }
            );
        with_layout!(self.flavour, self.model.phase, L => self.check::<L>(&written, full).await)?;
        Ok(expected)
    }

    /// Sends `op` as the layout `L` declares it, against the model's state before it.
    async fn send<L: Layout>(&mut self, model: &Model, op: &Op) -> Result<Outcome, Failure> {
        let answer = match op {
            Op::Put { key, rec, read } => {
                let mut rec = rec.clone();
                rec.version = model.version_read(key, *read);
                match key.kind {
                    Kind::Item => self.put::<L::Item>(key, &rec).await,
                    Kind::Doc => self.put::<L::Doc>(key, &rec).await,
                }
            }
            Op::PutNew { key, rec } => {
                outcome_of(self.repo().put_new(&L::Item::from_model(key, rec)).await)
            }
            Op::PutIf { key, rec, cond } => outcome_of(
                self.repo()
                    .put_if(&L::Item::from_model(key, rec), L::Item::condition(cond))
                    .await,
            ),
            Op::Update(update) => {
                let spec = spec(model, update);
                match update.key.kind {
                    Kind::Item => outcome_of(L::Item::update(&self.repo(), &spec).await),
                    Kind::Doc => outcome_of(L::Doc::update(&self.repo(), &spec).await),
                }
            }
            Op::Delete { key } => match key.kind {
                Kind::Item => outcome_of(L::Item::delete(&self.repo(), key).await),
                Kind::Doc => outcome_of(L::Doc::delete(&self.repo(), key).await),
            },
            Op::DeleteIf { key, cond } => outcome_of(
                self.repo()
                    .delete_if(&stored::<L::Item>(model, key), L::Item::condition(cond))
                    .await,
            ),
            Op::BatchPut(puts) => {
                let items: Vec<L::Item> = puts
                    .iter()
                    .map(|(k, r)| L::Item::from_model(k, r))
                    .collect();
                outcome_of(self.repo().batch_put(&items).await)
            }
            Op::BatchDelete(keys) => {
                let items: Vec<L::Item> = of_kind(keys, Kind::Item)
                    .map(|k| stored::<L::Item>(model, k))
                    .collect();
                let docs: Vec<L::Doc> = of_kind(keys, Kind::Doc)
                    .map(|k| stored::<L::Doc>(model, k))
                    .collect();
                match outcome_of(self.repo().batch_delete(&items).await) {
                    Ok(Outcome::Ok) => outcome_of(self.repo().batch_delete(&docs).await),
                    other => other,
                }
            }
            Op::Increment { by, how } => {
                let counter = self.counter();
                let by = i64::from(*by);
                let sent = match how {
                    Counting::ExactlyOnce => counter.increment(by).await,
                    Counting::AtLeastOnce => counter.increment_at_least_once(by).await,
                    Counting::Token(token) => {
                        counter
                            .increment_with_token(by, self.counter_token(*token))
                            .await
                    }
                };
                match sent {
                    Ok(_) => Ok(Outcome::Ok),
                    Err(Error::IdempotentParameterMismatch { .. }) => {
                        Ok(Outcome::IdempotentMismatch)
                    }
                    Err(e) => return fail("increment", e.to_string()),
                }
            }
            Op::CounterTotal { consistent } => {
                let counter = self.counter().consistent_read(*consistent);
                let total = match counter.total().await {
                    Ok(total) => total,
                    Err(e) => return fail("counter total", e.to_string()),
                };
                let values = match counter.shard_values().await {
                    Ok(values) => values,
                    Err(e) => return fail("counter shard values", e.to_string()),
                };
                self.check_counter_items(&counter, &values).await?;
                if total != model.counter || values.iter().sum::<i64>() != total {
                    return fail(
                        "counter total",
                        format!(
                            "total {total}, shards {values:?}; the model holds {}",
                            model.counter
                        ),
                    );
                }
                Ok(Outcome::Ok)
            }
            Op::Faulted { fault, op: inner } => {
                match fault {
                    Fault::Conflicts(n) => self.faults.conflict_next_transactions(u32::from(*n)),
                    Fault::LostAnswer => self.faults.drop_responses("TransactWriteItems", 1),
                }
                let answer = Box::pin(self.send::<L>(model, inner)).await;
                self.faults.clear();
                return answer;
            }
            Op::PartialRead { kind, group, shard } => {
                match kind {
                    Kind::Item => self.partial::<L::Item>(model, *group, *shard).await?,
                    Kind::Doc => self.partial::<L::Doc>(model, *group, *shard).await?,
                }
                Ok(Outcome::Ok)
            }
            Op::Scan(scan) => {
                match scan.kind {
                    Kind::Item => self.scan::<L::Item>(model, scan).await?,
                    Kind::Doc => self.scan::<L::Doc>(model, scan).await?,
                }
                Ok(Outcome::Ok)
            }
            Op::BatchGet(keys) => {
                self.batch_get::<L::Item>(model, keys).await?;
                self.batch_get::<L::Doc>(model, keys).await?;
                Ok(Outcome::Ok)
            }
            Op::Transact(actions) => {
                outcome_of(self.transaction::<L>(model, actions).commit().await)
            }
            Op::Prepared {
                actions,
                token,
                commits,
            } => self.prepared::<L>(model, actions, *token, *commits).await,
            Op::TransactGet(keys) => {
                self.transact_get::<L>(model, keys).await?;
                Ok(Outcome::Ok)
            }
            Op::LegacyPut { key, rec, shard } => {
                self.raw_put(legacy_item(self.flavour, model.phase, *shard, key, rec))
                    .await?;
                // An old-layout writer may put it behind any checkpoint kept.
                for kept in self.checkpoints.lock().expect("not poisoned").values_mut() {
                    kept.behind = true;
                }
                Ok(Outcome::Ok)
            }
            Op::Sweep => {
                self.sweep().await?;
                Ok(Outcome::Ok)
            }
            Op::PageStart {
                kind,
                group,
                size,
                filter,
            } => {
                let history = History::new();
                for (key, rec) in model.view(*kind, *group, false) {
                    if filter.as_ref().is_none_or(|s| rec.status == *s) {
                        history.put(key).done();
                    }
                }
                let started = history.now();
                self.paging = Some(Paging {
                    kind: *kind,
                    group: *group,
                    size: *size,
                    filter: filter.clone(),
                    cursor: None,
                    answer: Vec::new(),
                    history,
                    started,
                    pages: 0,
                });
                self.next_page::<L>().await?;
                Ok(Outcome::Ok)
            }
            Op::PageNext => {
                self.next_page::<L>().await?;
                Ok(Outcome::Ok)
            }
            Op::MigratePartial {
                items,
                only,
                checkpointed,
            } => {
                let stop = Stop {
                    after: u64::from(*items),
                    only: *only,
                    checkpointed: *checkpointed,
                };
                if items % 2 == 1 {
                    self.migrate::<L::Item>(stop).await?;
                } else {
                    self.migrate::<L::Doc>(stop).await?;
                }
                Ok(Outcome::Ok)
            }
            Op::MigrateResume { doc, only } => {
                if *doc {
                    self.resume::<L::Doc>(*only).await?;
                } else {
                    self.resume::<L::Item>(*only).await?;
                }
                Ok(Outcome::Ok)
            }
            Op::MigrateUnit {
                doc,
                unit,
                of,
                fresh,
                twice,
                forget,
            } => {
                // Run twice: the second run finds the unit done and reads nothing.
                let runs = [Some(*fresh), twice.then_some(false)];
                for fresh in runs.into_iter().flatten() {
                    if *doc {
                        self.migrate_unit::<L::Doc>(*unit, *of, fresh).await?;
                    } else {
                        self.migrate_unit::<L::Item>(*unit, *of, fresh).await?;
                    }
                }
                if *forget {
                    if *doc {
                        self.forget_units::<L::Doc>(*unit, *of).await?;
                    } else {
                        self.forget_units::<L::Item>(*unit, *of).await?;
                    }
                }
                Ok(Outcome::Ok)
            }
            Op::Complete { rekey } => {
                let reads_planted = model.rekeys(true);
                self.migrate_fully::<L::Item>(*rekey, reads_planted).await?;
                self.migrate_fully::<L::Doc>(*rekey, false).await?;
                for remaining in [
                    self.repo::<L::Item>().migration_remaining().await,
                    self.repo::<L::Doc>().migration_remaining().await,
                ] {
                    match remaining.as_ref().map(|r| r.items) {
                        Ok(0) => {}
                        other => {
                            return fail(
                                "migration_remaining",
                                format!("{other:?} after a full run"),
                            )
                        }
                    }
                }
                self.no_stale_copies().await?;
                Ok(Outcome::Ok)
            }
            Op::Declare => Ok(Outcome::Ok),
            Op::EventPut(_) | Op::EventDelete { .. } | Op::Range(_) => {
                return events::send(self, model, op).await
            }
            Op::TaskPut(_) | Op::TaskUpdate(_) | Op::TaskDelete { .. } | Op::GsiRead(_) => {
                return gsis::send(self, model, op).await
            }
        };
        answer.or_else(|e| {
            fail(
                format!("outcome of {}", op.name()),
                format!("unexpected error: {e}"),
            )
        })
    }

    async fn put<E: ModelEntity>(&self, key: &Key, rec: &Rec) -> Result<Outcome, String> {
        outcome_of(self.repo().put(&E::from_model(key, rec)).await)
    }

    fn transaction<L: Layout>(&self, model: &Model, actions: &[TxAction]) -> Transaction {
        let mut tx = self.repo::<L::Item>().transaction().with_retry(retry());
        for action in actions {
            tx = match action {
                TxAction::Put { key, rec, read } => {
                    let mut rec = rec.clone();
                    rec.version = model.version_read(key, *read);
                    match key.kind {
                        Kind::Item => tx.put(&L::Item::from_model(key, &rec)),
                        Kind::Doc => tx.put(&L::Doc::from_model(key, &rec)),
                    }
                }
                TxAction::PutIf { key, rec, cond } => {
                    tx.put_if(&L::Item::from_model(key, rec), L::Item::condition(cond))
                }
                TxAction::Update(update) => {
                    let spec = spec(model, update);
                    match update.key.kind {
                        Kind::Item => L::Item::tx_update(&self.repo(), tx, &spec),
                        Kind::Doc => L::Doc::tx_update(&self.repo(), tx, &spec),
                    }
                }
                TxAction::Delete { key } => match key.kind {
                    Kind::Item => tx.delete(&stored::<L::Item>(model, key)),
                    Kind::Doc => tx.delete(&stored::<L::Doc>(model, key)),
                },
                TxAction::DeleteIf { key, cond } => {
                    tx.delete_if(&stored::<L::Item>(model, key), L::Item::condition(cond))
                }
                TxAction::Check { key, cond } => match key.kind {
                    Kind::Item => {
                        tx.check(&stored::<L::Item>(model, key), L::Item::condition(cond))
                    }
                    Kind::Doc => tx.check(&stored::<L::Doc>(model, key), L::Doc::condition(cond)),
                },
                TxAction::Move { from, to, rec } => tx.move_item(
                    &stored::<L::Item>(model, from),
                    &L::Item::from_model(to, rec),
                ),
            };
        }
        tx
    }

    /// `collect_partial` of `E` in `group` while `shard` fails: that shard listed as failed
    /// (its partition key named), every other shard's items the model's, in order.
    async fn partial<E: ModelEntity>(
        &self,
        model: &Model,
        group: u8,
        shard: u32,
    ) -> Result<(), Failure> {
        let g = group_name(group);
        let pk = E::shards(&g)[shard as usize].clone();
        self.faults.fail_partition(pk.clone());
        // Consistent: a cached complete answer would be a fair answer, not this check's.
        let answer = E::query(&self.repo(), &g)
            .consistent_read(true)
            .collect_partial()
            .await;
        self.faults.clear();
        let check = format!("collect_partial ({:?}, shard {shard} failing)", E::KIND);
        let partial = or_fail(&check, answer)?;
        let failed: Vec<(u32, &str)> = partial
            .failures
            .iter()
            .map(|f| (f.shard, f.partition_key.as_str()))
            .collect();
        if failed != [(shard, pk.as_str())] {
            return fail(check, format!("failures {failed:?}, {pk} failed"));
        }
        let expected: Vec<(Key, Rec)> = model
            .view(E::KIND, group, false)
            .into_iter()
            .filter(|(k, _)| E::places(k)[0].0 != pk)
            .collect();
        let got: Vec<(Key, Rec)> = partial.items.iter().map(ModelEntity::to_model).collect();
        same(&check, &got, &expected)
    }

    /// A parallel scan of `E`: every item of it the table stores, expired ones included
    /// (a scan returns what is stored), none of the other services' records. Steady, each
    /// item once; during a transition an item copied and not yet removed from its previous
    /// place may come out twice (as documented), so each item is found, with its content, and
    /// nothing else (no deleted item's copy).
    async fn scan<E: ModelEntity>(&self, model: &Model, op: &ScanOp) -> Result<(), Failure> {
        let mut scan = self
            .repo::<E>()
            .scan()
            .segments(op.segments)
            .concurrency(op.concurrency)
            .page_size(op.page_size)
            .consistent_read(op.consistent);
        if op.rated {
            scan = scan.read_units_per_second(10_000.0);
        }
        let check = format!("scan ({:?}, {:?})", E::KIND, op.read);
        let expected: Vec<(Key, Rec)> = model
            .items
            .iter()
            .filter(|(k, _)| k.kind == E::KIND)
            .map(|(k, r)| (*k, r.clone()))
            .collect();
        // What was read, as (key, the content as far as the read shows it).
        let got: Vec<(Key, Option<Rec>, i64)> = match op.read {
            ScanRead::Count => {
                let count = or_fail(&check, scan.count().await)?;
                let transition = model.phase.transition();
                if count < expected.len() as u64 || (!transition && count != expected.len() as u64)
                {
                    return fail(
                        check,
                        format!("counted {count}, the model holds {}", expected.len()),
                    );
                }
                return Ok(());
            }
            ScanRead::Collect => or_fail(&check, scan.collect().await)?
                .iter()
                .map(|e| {
                    let (k, r) = e.to_model();
                    let points = r.points;
                    (k, Some(r), points)
                })
                .collect(),
            ScanRead::Stream => {
                let items: Vec<Result<E, Error>> = scan.stream().collect().await;
                let items: Result<Vec<E>, Error> = items.into_iter().collect();
                or_fail(&check, items)?
                    .iter()
                    .map(|e| {
                        let (k, r) = e.to_model();
                        let points = r.points;
                        (k, Some(r), points)
                    })
                    .collect()
            }
            ScanRead::Points
                if self.untagged_may_be_read()
                    && E::KIND == Kind::Doc
                    && !super::PROJECTION_SKIPS_UNREADABLE =>
            {
                return Ok(());
            }
            ScanRead::Points => or_fail(&check, scan.project::<E::Points>().collect().await)?
                .iter()
                .map(|p| {
                    let (k, points) = E::points(p);
                    (k, None, points)
                })
                .collect(),
        };
        let matches = |(k, r, points): &(Key, Option<Rec>, i64), (mk, mr): &(Key, Rec)| {
            k == mk && r.as_ref().is_none_or(|r| r == mr) && *points == mr.points
        };
        let missing: Vec<String> = expected
            .iter()
            .filter(|e| !got.iter().any(|g| matches(g, e)))
            .map(|(k, r)| format!("{} {r:?}", short(k)))
            .collect();
        let unknown: Vec<String> = got
            .iter()
            .filter(|(k, ..)| !model.items.contains_key(k))
            .map(|(k, r, p)| format!("{} {r:?} points {p}", short(k)))
            .collect();
        let once = model.phase.transition() || got.len() == expected.len();
        if !missing.is_empty() || !unknown.is_empty() || !once {
            return fail(
                check,
                format!(
                    "{} read, the model holds {}; missing or different: {missing:?}; not in the \
                     model: {unknown:?}",
                    got.len(),
                    expected.len()
                ),
            );
        }
        Ok(())
    }

    /// The transaction of `actions`, prepared and committed `commits` times: its size is
    /// what was added (more during a transition, with the previous places' deletes and
    /// checks), its token the one given, and each commit answers as the first.
    async fn prepared<L: Layout>(
        &self,
        model: &Model,
        actions: &[TxAction],
        token: bool,
        commits: u8,
    ) -> Result<Outcome, String> {
        let mut tx = self.transaction::<L>(model, actions);
        // Tokens are the account's: unique to the table and the step.
        let given = format!(
            "{:016x}-tx{}",
            sharded::hash::fnv1a64(self.table.as_bytes()),
            self.step
        );
        if token {
            tx = tx.with_token(given.clone());
        }
        let added: usize = actions
            .iter()
            .map(|a| {
                if matches!(a, TxAction::Move { .. }) {
                    2
                } else {
                    1
                }
            })
            .sum();
        let size = tx.len();
        if tx.is_empty() || size < added || (!model.phase.transition() && size != added) {
            return Err(format!(
                "the transaction of {added} actions says it has {size} (is_empty {})",
                tx.is_empty()
            ));
        }
        let prepared = tx.prepare().await.map_err(|e| format!("prepare: {e}"))?;
        let token_ok = if token {
            prepared.token() == given
        } else {
            (1..=36).contains(&prepared.token().len())
        };
        if prepared.is_empty() || prepared.len() < size || !token_ok {
            return Err(format!(
                "prepared: {} actions (is_empty {}), token {:?} ({} given)",
                prepared.len(),
                prepared.is_empty(),
                prepared.token(),
                if token { given.as_str() } else { "none" }
            ));
        }
        let first = outcome_of(prepared.commit().await)?;
        for again in 1..commits {
            let answer = outcome_of(prepared.commit().await)?;
            if answer != first {
                return Err(format!(
                    "commit {} of the prepared transaction answered {answer:?}, the first {first:?}",
                    again + 1
                ));
            }
        }
        Ok(first)
    }

    /// `batch_get` of the keys' current and previous places: every copy it finds is the
    /// model's item (a stale copy is a resurrection waiting to happen), and every item the
    /// model holds is found.
    async fn batch_get<E: ModelEntity>(&self, model: &Model, keys: &[Key]) -> Result<(), Failure> {
        let keys: Vec<&Key> = of_kind(keys, E::KIND).collect();
        if keys.is_empty() {
            return Ok(());
        }
        let places: Vec<(String, Option<String>)> =
            keys.iter().flat_map(|k| E::places(k)).collect();
        let found = match self.repo::<E>().batch_get(places).await {
            Ok(found) => found,
            Err(e) => return fail("batch_get", format!("unexpected error: {e}")),
        };
        let mut seen = BTreeSet::new();
        for item in found {
            let (key, rec) = item.to_model();
            if model.items.get(&key) != Some(&rec) {
                return fail(
                    "batch_get (both places)",
                    format!(
                        "{key:?}: found {rec:?}, the model holds {:?}",
                        model.items.get(&key)
                    ),
                );
            }
            seen.insert(key);
        }
        for key in keys {
            if model.items.contains_key(key) && !seen.contains(key) {
                return fail("batch_get (both places)", format!("{key:?} not found"));
            }
        }
        Ok(())
    }

    async fn transact_get<L: Layout>(&self, model: &Model, keys: &[Key]) -> Result<(), Failure> {
        let items: Vec<_> = of_kind(keys, Kind::Item)
            .map(|k| (*k, L::Item::item_key(k)))
            .collect();
        let docs: Vec<_> = of_kind(keys, Kind::Doc)
            .map(|k| (*k, L::Doc::item_key(k)))
            .collect();
        let read = items
            .iter()
            .fold(self.repo::<L::Item>().transact_get(), |read, (_, key)| {
                read.get(key)
            });
        let read = docs.iter().fold(read, |read, (_, key)| read.get(key));
        let mut answer = match read.send().await {
            Ok(answer) => answer,
            Err(e) => return fail("TransactGet", format!("unexpected error: {e}")),
        };
        let mut got: Vec<(Key, Option<Rec>)> = Vec::new();
        for (key, item_key) in items {
            got.push((
                key,
                answer
                    .take(&item_key)
                    .ok()
                    .flatten()
                    .map(|e| e.to_model().1),
            ));
        }
        for (key, item_key) in docs {
            got.push((
                key,
                answer
                    .take(&item_key)
                    .ok()
                    .flatten()
                    .map(|e| e.to_model().1),
            ));
        }
        for (key, rec) in got {
            if rec.as_ref() != model.items.get(&key) {
                return fail(
                    "TransactGet",
                    format!(
                        "{key:?}: read {rec:?}, the model holds {:?}",
                        model.items.get(&key)
                    ),
                );
            }
        }
        Ok(())
    }

    /// The sequence's sharded counter, in the table of its entities (with its key names, and
    /// its tag when the table has one), away from their partitions. In the adopted table, it
    /// is the vote-counter pattern as another team wrote it by hand: the count in `votes`,
    /// the sort key `METADATA`, the shard spelled `#SHARD_{n}`.
    fn counter(&self) -> ShardedCounter {
        let counter = ShardedCounter::new(
            self.shared.client().clone(),
            &self.table,
            &self.flavour.definition(),
            COUNTER_KEY,
            COUNTER_SHARDS,
        )
        .expect("the counter's declaration is valid")
        .with_retry(retry());
        match self.flavour {
            Flavour::Tagged => counter,
            Flavour::Adopted => counter
                .with_attribute("votes")
                .with_sort_key("METADATA")
                .with_suffix(
                    sharded::keys::ShardSuffix::parse("#SHARD_{shard}").expect("a valid suffix"),
                ),
        }
    }

    /// What the counter says it reads and writes is what the table holds: each of its keys
    /// (spelled with its suffix, under its sort key) holds that shard's value in its
    /// attribute, tagged when the table has a tag.
    async fn check_counter_items(
        &self,
        counter: &ShardedCounter,
        values: &[i64],
    ) -> Result<(), Failure> {
        let (attribute, sort_key, suffix, tag) = match self.flavour {
            Flavour::Tagged => ("count", "COUNTER", "#", Some(("_entity", "ShardedCounter"))),
            Flavour::Adopted => ("votes", "METADATA", "#SHARD_", None),
        };
        let declared = (
            counter.logical_key(),
            counter.shards(),
            counter.attribute(),
            counter.sort_key(),
            counter.suffix().literal,
            counter.tag(),
        );
        let expected = (
            COUNTER_KEY,
            COUNTER_SHARDS,
            attribute,
            Some(sort_key),
            suffix,
            tag,
        );
        if declared != expected {
            return fail(
                "counter declaration",
                format!("the counter says {declared:?}, it was declared {expected:?}"),
            );
        }
        let keys = counter.keys();
        if keys.len() != values.len() {
            return fail(
                "counter keys",
                format!("{} keys, {} shard values", keys.len(), values.len()),
            );
        }
        for (shard, (key, value)) in keys.into_iter().zip(values).enumerate() {
            let pk = format!("{COUNTER_KEY}{suffix}{shard}");
            let spelled = (key.get(self.flavour.pk()), key.get(self.flavour.sk()));
            if spelled != (Some(&V::S(pk.clone())), Some(&V::S(sort_key.to_owned()))) {
                return fail("counter keys", format!("shard {shard}: key {key:?}"));
            }
            let stored = match self
                .client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .consistent_read(true)
                .send()
                .await
            {
                Ok(answer) => answer.item,
                Err(e) => return fail("counter items", format!("raw get: {e:?}")),
            };
            let held = match stored.as_ref().and_then(|item| item.get(attribute)) {
                Some(V::N(n)) => n.parse::<i64>().ok(),
                None => Some(0),
                _ => None,
            };
            let tagged = stored
                .as_ref()
                .and_then(|item| item.get("_entity"))
                .and_then(|v| v.as_s().ok())
                .map(String::as_str);
            let tag_expected = tag.map(|(_, value)| value).filter(|_| stored.is_some());
            if held != Some(*value) || tagged != tag_expected {
                return fail(
                    "counter items",
                    format!(
                        "{pk}: stored {stored:?}, the counter read {value} (tag {tag_expected:?})"
                    ),
                );
            }
        }
        Ok(())
    }

    /// The token of the sequence's token number `n`: unique to its table (tokens are the
    /// account's, and DynamoDB Local is shared by every test).
    fn counter_token(&self, n: u8) -> String {
        format!("{:016x}-{n}", sharded::hash::fnv1a64(self.table.as_bytes()))
    }

    /// DynamoDB's time-to-live sweeper: deletes every item whose expiry has passed, wherever
    /// it is stored.
    async fn sweep(&self) -> Result<(), Failure> {
        let now = now();
        for item in self.raw_scan().await? {
            let expired = matches!(item.get("expires"), Some(V::N(n)) if n.parse::<u64>().is_ok_and(|e| e < now));
            if !expired {
                continue;
            }
            let (pk, sk) = (self.flavour.pk(), self.flavour.sk());
            let key = HashMap::from([
                (pk.to_owned(), item[pk].clone()),
                (sk.to_owned(), item[sk].clone()),
            ]);
            if let Err(e) = self
                .client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key))
                .send()
                .await
            {
                return fail("sweep", format!("{e:?}"));
            }
        }
        Ok(())
    }

    /// After a complete migration, the table holds each of the model's items once, as the
    /// model holds it, and nothing else of its entities (no stale copy survives).
    async fn no_stale_copies(&self) -> Result<(), Failure> {
        let mut found: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut planted = Vec::new();
        let mut events = 0;
        let mut tasks = 0;
        let foreign = foreign_items(self.flavour, self.model.rekeyed);
        let keys = |item: &HashMap<String, V>| {
            (
                item.get(self.flavour.pk()).cloned(),
                item.get(self.flavour.sk()).cloned(),
            )
        };
        let foreign_keys: BTreeSet<_> = foreign
            .iter()
            .map(|item| format!("{:?}", keys(item)))
            .collect();
        for item in self.raw_scan().await? {
            // A planted record where it was planted; once re-keyed, the record is the
            // entity's item (its attributes, the mark among them, kept by the move).
            if item.contains_key(FOREIGN_MARK)
                && foreign_keys.contains(&format!("{:?}", keys(&item)))
            {
                planted.push(item);
                continue;
            }
            // The migration units' records are the library's own, not the entities'.
            if matches!(item.get(self.flavour.pk()), Some(V::S(pk)) if pk.starts_with("_sharded#migration#"))
            {
                continue;
            }
            // The counter's items are not the entities'.
            if matches!(item.get(self.flavour.pk()), Some(V::S(pk)) if pk.starts_with(COUNTER_KEY))
            {
                continue;
            }
            // Nor are the events', which no migration moves: each is stored once.
            if matches!(item.get(self.flavour.pk()), Some(V::S(pk)) if events::is_event_pk(self.flavour, pk))
            {
                events += 1;
                continue;
            }
            // And the tasks', which no migration moves either.
            if matches!(item.get(self.flavour.pk()), Some(V::S(pk)) if gsis::is_task_pk(self.flavour, pk))
            {
                tasks += 1;
                continue;
            }
            let Some(V::S(sk)) = item.get(self.flavour.sk()) else {
                continue;
            };
            let group = match item.get("group") {
                Some(V::S(g)) => g.clone(),
                _ => String::new(),
            };
            *found.entry((group, sk.clone())).or_default() += 1;
        }
        let expected: BTreeMap<(String, String), usize> = self
            .model
            .items
            .keys()
            .map(|k| {
                let prefix = if k.kind == Kind::Item { "I#" } else { "D#" };
                // Stored in canonical form, as the key encoding writes the id (the re-keyed
                // id's space escaped).
                let mut sk = prefix.to_owned();
                id_name(k.id)
                    .write_key(&mut sk)
                    .expect("model ids are encodable");
                ((group_name(k.group), sk), 1)
            })
            .collect();
        if found != expected {
            let extra: Vec<_> = found
                .iter()
                .filter(|(k, n)| expected.get(*k) != Some(*n))
                .collect();
            let missing: Vec<_> = expected
                .keys()
                .filter(|k| !found.contains_key(*k))
                .collect();
            return fail(
                "stored copies after a complete migration",
                format!("copies not one per model item: {extra:?}; missing: {missing:?}"),
            );
        }
        if events != self.model.events.len() {
            return fail(
                "stored events after a complete migration",
                format!(
                    "{events} stored, the model holds {}",
                    self.model.events.len()
                ),
            );
        }
        if tasks != self.model.tasks.len() {
            return fail(
                "stored tasks after a complete migration",
                format!("{tasks} stored, the model holds {}", self.model.tasks.len()),
            );
        }
        // Other services' records: exactly as planted, where they were planted.
        let mut expected = foreign;
        let order = |item: &HashMap<String, V>| format!("{:?}", sorted(item));
        expected.sort_by_key(order);
        planted.sort_by_key(order);
        if planted != expected {
            return fail(
                "other services' records after a complete migration",
                format!(
                    "planted {:?}, found {:?}",
                    expected.iter().map(sorted).collect::<Vec<_>>(),
                    planted.iter().map(sorted).collect::<Vec<_>>()
                ),
            );
        }
        Ok(())
    }

    /// A migration run of `E` to its end, with generous read and write budgets and a few
    /// attempts per item, asked to re-key the items not in canonical form when `rekey`; then
    /// nothing is left by `Migration::remaining`. Where the run reads the planted `I#9 9`
    /// record (`reads_planted`), its report lists it: re-keyed when asked, left alone
    /// otherwise; nothing else is ever re-keyed.
    async fn migrate_fully<E: ModelEntity>(
        &self,
        rekey: bool,
        reads_planted: bool,
    ) -> Result<(), Failure> {
        let repo = self.repo::<E>();
        let mut migration = repo
            .migrate()
            .delete_delay(Duration::from_millis(20))
            .max_attempts(3)
            .read_units_per_second(100_000.0)
            .write_units_per_second(100_000.0);
        if rekey {
            migration = migration.rekey_non_canonical();
        }
        let report = match migration.run().await {
            Ok(report) => report,
            Err(e) => return fail("migration", format!("a full run failed: {e}")),
        };
        let planted = format!("I#{REKEYED_NAME}");
        let rekeyed_planted = report
            .rekeyed
            .iter()
            .filter(|r| r.from.to_string().contains(&planted))
            .count();
        let expected = usize::from(rekey && reads_planted);
        if report.rekeyed.len() != expected || rekeyed_planted != expected {
            return fail(
                "Migration::rekey_non_canonical",
                format!(
                    "rekey {rekey}, the run reads the planted `{planted}`: {reads_planted}; \
                     the report lists as re-keyed {:?}, as left alone {:?}",
                    report.rekeyed, report.left_alone
                ),
            );
        }
        if !rekey
            && reads_planted
            && !report
                .left_alone
                .iter()
                .any(|f| f.key.to_string().contains(&planted))
        {
            return fail(
                "Report::left_alone",
                format!(
                    "the planted `{planted}` was read and not re-keyed, but is not listed as \
                     left alone: {:?}",
                    report.left_alone
                ),
            );
        }
        match repo.migrate().remaining().await {
            Ok(left) if left.items == 0 => Ok(()),
            other => fail(
                "Migration::remaining",
                format!("{other:?} after a full run"),
            ),
        }
    }

    /// A migration run of `E` stopped as `stop` says (keeping its last checkpoint when
    /// asked).
    async fn migrate<E: ModelEntity>(&self, stop: Stop) -> Result<(), Failure> {
        let repo = self.repo::<E>();
        let notify = Arc::new(tokio::sync::Notify::new());
        let hook = notify.clone();
        let mut migration = repo
            .migrate()
            .segments(1)
            .concurrency(1)
            .page_size(4)
            .delete_delay(Duration::from_millis(30))
            .on_progress(move |p: &migrate::Progress| {
                if p.moved >= stop.after {
                    hook.notify_one();
                }
            });
        if let Some(group) = stop.only {
            migration = migration.only(E::partitions(&group_name(group)));
        }
        if stop.checkpointed {
            let kept = Arc::clone(&self.checkpoints);
            let scope = (E::KIND, stop.only);
            migration = migration.on_checkpoint(move |checkpoint| {
                kept.lock().expect("not poisoned").insert(
                    scope,
                    Kept {
                        checkpoint: checkpoint.clone(),
                        behind: false,
                    },
                );
            });
        }
        tokio::select! {
            result = migration.run() => match result {
                Ok(_) => Ok(()),
                Err(e) => fail("migration", format!("a partial run failed: {e}")),
            },
            () = notify.notified() => Ok(()),
        }
    }

    /// Deletes the records of the plan of `of` units (`Migration::forget`) right after unit
    /// `index` ran to its end: every unit of it is done or never ran (units run to their end
    /// here), so it deletes at least that unit's record, and `status` then says not started.
    async fn forget_units<E: ModelEntity>(&self, index: u8, of: u8) -> Result<(), Failure> {
        let repo = self.repo::<E>();
        let plan = unit_plan(&repo, of).await?;
        match repo.migrate().forget(&plan).await {
            Ok(deleted) if deleted >= 1 => {}
            other => {
                return fail(
                    "Migration::forget",
                    format!("{of} units, unit {index} just done: {other:?}"),
                )
            }
        }
        match repo.migrate().status(&plan).await {
            Ok(status)
                if status.count(|s| s == migrate::UnitState::NotStarted) == plan.units.len() =>
            {
                Ok(())
            }
            other => fail(
                "Migration::forget",
                format!("{of} units forgotten, the status still shows records: {other:?}"),
            ),
        }
    }

    /// Unit `index` of the migration of `E` cut into `of` units of a scan in 4 segments, run
    /// to its end (from its start when `fresh`): a unit its record says is done, run again,
    /// reads nothing; after the run, the record says it is done.
    async fn migrate_unit<E: ModelEntity>(
        &self,
        index: u8,
        of: u8,
        fresh: bool,
    ) -> Result<(), Failure> {
        let repo = self.repo::<E>();
        let plan = unit_plan(&repo, of).await?;
        let Some(unit) = plan.units.get(usize::from(index)).cloned() else {
            return fail(
                "Migration::plan",
                format!(
                    "{of} units of 4 segments, no unit {index}: {:?}",
                    plan.units
                ),
            );
        };
        let state = |status: Result<migrate::PlanStatus, migrate::MigrateError>| {
            status.map(|s| s.units[usize::from(index)].state)
        };
        let before = state(repo.migrate().status(&plan).await);
        let mut migration = repo
            .migrate()
            .unit(unit.clone())
            .delete_delay(Duration::from_millis(20))
            .max_attempts(3)
            .write_units_per_second(plan.unit_write_units_per_second());
        if fresh {
            migration = migration.from_start();
        }
        let report = match migration.run().await {
            Ok(report) => report,
            Err(e) => return fail("Migration::unit", format!("unit {unit} failed: {e}")),
        };
        if matches!(before, Ok(migrate::UnitState::Done)) && !fresh && report.progress.scanned > 0 {
            return fail(
                "Migration::unit",
                format!(
                    "unit {unit} was done and run again: it read {} items ({})",
                    report.progress.scanned, report.progress
                ),
            );
        }
        match state(repo.migrate().status(&plan).await) {
            Ok(migrate::UnitState::Done) => Ok(()),
            other => fail(
                "Migration::status",
                format!("unit {unit} after a run to its end (was {before:?}): {other:?}"),
            ),
        }
    }

    /// A migration of `E` (of the table, or `only` one group's partitions) resumed from the
    /// checkpoint kept for that scope, or from the beginning, and run to its end: then
    /// nothing is left to move in its scope, unless an old-layout writer put an item behind
    /// the checkpoint after it was taken.
    async fn resume<E: ModelEntity>(&self, only: Option<u8>) -> Result<(), Failure> {
        let kept = self
            .checkpoints
            .lock()
            .expect("not poisoned")
            .remove(&(E::KIND, only));
        let scoped = |migration: migrate::Migration<E>| match only {
            Some(group) => migration.only(E::partitions(&group_name(group))),
            None => migration,
        };
        let mut migration = scoped(self.repo::<E>().migrate())
            .segments(1)
            .delete_delay(Duration::from_millis(20));
        let behind = kept.as_ref().is_some_and(|k| k.behind);
        let resumed = kept.is_some();
        if let Some(kept) = kept {
            migration = migration.resume_from(kept.checkpoint);
        }
        if let Err(e) = migration.run().await {
            return fail(
                "migration resumed",
                format!("resumed {resumed}, scope {only:?}: {e}"),
            );
        }
        let left = scoped(self.repo::<E>().migrate())
            .segments(1)
            .remaining()
            .await;
        match left {
            Ok(left) if left.items == 0 || behind => Ok(()),
            other => fail(
                "Migration::remaining",
                format!(
                    "{other:?} in scope {only:?} after a run to its end (resumed from a \
                     checkpoint: {resumed})"
                ),
            ),
        }
    }

    /// The listing's next page: its items are the model's, as they are now.
    async fn next_page<L: Layout>(&mut self) -> Result<(), Failure> {
        let Some(paging) = self.paging.as_mut() else {
            return Ok(());
        };
        let page = match paging.kind {
            Kind::Item => page_of::<L::Item>(self.shared.for_entity(), paging).await,
            Kind::Doc => page_of::<L::Doc>(self.shared.for_entity(), paging).await,
        };
        let (items, cursor) = match page {
            Ok(page) => page,
            Err(e) => {
                return fail(
                    "page (interleaved)",
                    format!("page {}: {e}", paging.pages + 1),
                )
            }
        };
        paging.pages += 1;
        if items.len() > paging.size {
            return fail(
                "page (interleaved)",
                format!("{} items, asked for {}", items.len(), paging.size),
            );
        }
        for (key, rec) in items {
            if !paging.in_scope(&key, Some(&rec)) || self.model.items.get(&key) != Some(&rec) {
                return fail(
                    "page (interleaved)",
                    format!(
                        "page {}: {key:?} {rec:?}, the model holds {:?}",
                        paging.pages,
                        self.model.items.get(&key)
                    ),
                );
            }
            paging.answer.push(key);
        }
        paging.cursor = cursor;
        if paging.cursor.is_none() {
            let ended = paging.history.now();
            let checked =
                paging
                    .history
                    .check(paging.started, ended, &paging.answer, None, Ord::cmp);
            let pages = paging.pages;
            self.paging = None;
            if let Err(violations) = checked {
                return fail(
                    "page (interleaved)",
                    format!("across {pages} pages, with writes between them: {violations}"),
                );
            }
        }
        Ok(())
    }

    /// Records this step's writes in the listing's history.
    fn record_paging(&mut self, _before: &Model, written: &[Key]) {
        let Some(paging) = self.paging.as_ref() else {
            return;
        };
        for key in written {
            let now_in = paging.in_scope(key, self.model.items.get(key));
            if key.kind == paging.kind && key.group == paging.group {
                if now_in {
                    paging.history.put(*key).done();
                } else {
                    paging.history.delete(*key).done();
                }
            }
        }
    }

    /// The checks after a step, in the layout now declared.
    async fn check<L: Layout>(&self, written: &[Key], full: bool) -> Result<(), Failure> {
        let mut groups: BTreeSet<u8> = written.iter().map(|k| k.group).collect();
        groups.insert((self.step % 2) as u8);
        // The rotating choice: one of the 9 reads of `check_kind` on one entity, or the
        // collection.
        let pick = self.step % 19;
        for group in groups {
            self.check_kind::<L::Item>(group, full, pick).await?;
            self.check_kind::<L::Doc>(group, full, pick.wrapping_sub(9))
                .await?;
            let legacy = self.model.phase.adopting() && !super::COLLECTION_ADOPTS_LEGACY;
            if legacy || (!full && pick != 18) {
                continue;
            }
            let started = Instant::now();
            let answer = match L::collection(&self.repo(), &group_name(group))
                .collect_answer()
                .await
            {
                Ok(answer) => answer,
                Err(e) => return fail("collection", format!("unexpected error: {e}")),
            };
            let expected = self.foreign_as_of(started, group, None);
            if !expected.contains(&answer.foreign.count) {
                return fail(
                    "foreign records counted (collection)",
                    format!(
                        "the answer counts {} foreign records ({:?}), {expected:?} were planted \
                         where it reads",
                        answer.foreign.count, answer.foreign.examples
                    ),
                );
            }
            let collection: Vec<_> = answer.items.into_iter().map(L::page_to_model).collect();
            self.same_as_of("collection", &collection, started, Some(group), |m| {
                m.collection(group, !super::COLLECTION_HIDES_EXPIRED)
            })?;
        }
        // Point reads: what this step wrote, and a few others.
        let mut keys: BTreeSet<Key> = written.iter().copied().collect();
        let universe: Vec<Key> = self.model.items.keys().copied().collect();
        if !universe.is_empty() {
            keys.insert(universe[self.step % universe.len()]);
            keys.insert(universe[(self.step * 7 + 3) % universe.len()]);
        }
        for key in keys {
            let got = match key.kind {
                Kind::Item => L::Item::get(&self.repo(), &key)
                    .await
                    .map(|e| e.map(|e| e.to_model().1)),
                Kind::Doc => L::Doc::get(&self.repo(), &key)
                    .await
                    .map(|e| e.map(|e| e.to_model().1)),
            };
            match got {
                Ok(got) if got.as_ref() == self.model.items.get(&key) => {}
                Ok(got) => {
                    return fail(
                        "get",
                        format!(
                            "{key:?}: read {got:?}, the model holds {:?}",
                            self.model.items.get(&key)
                        ),
                    )
                }
                Err(e) => return fail("get", format!("{key:?}: unexpected error: {e}")),
            }
        }
        Ok(())
    }

    async fn check_kind<E: ModelEntity>(
        &self,
        group: u8,
        full: bool,
        pick: usize,
    ) -> Result<(), Failure> {
        let on = |i: usize| full || pick == i;
        let repo = self.repo::<E>();
        let g = group_name(group);
        let view = self.model.view(E::KIND, group, false);
        let view_of = |m: &Model| m.view(E::KIND, group, false);
        let descending_of = |m: &Model| {
            let mut items = m.view(E::KIND, group, false);
            items.reverse();
            items
        };
        let models = |items: Vec<E>| items.into_iter().map(|e| e.to_model()).collect::<Vec<_>>();
        let name = |what: &str| format!("{what} ({:?})", E::KIND);
        let collect = |q: sharded::Query<E>| async move { q.collect().await.map(models) };
        let bound = self.sharing.staleness;

        // Collected with its answer (the cache may answer it): the other services' records
        // read are counted, none returned, and the answer is no older than the bound.
        let started = Instant::now();
        let answer = or_fail(
            &name("query collect"),
            E::query(&repo, &g).collect_answer().await,
        )?;
        let expected = self.foreign_as_of(started, group, Some(E::KIND));
        if !expected.contains(&answer.foreign.count) {
            return fail(
                name("foreign records counted"),
                format!(
                    "the answer counts {} foreign records ({:?}), {expected:?} were planted where \
                     it reads",
                    answer.foreign.count, answer.foreign.examples
                ),
            );
        }
        if answer.age > bound + started.elapsed() {
            return fail(
                name("answer age"),
                format!(
                    "an answer {:?} old, {:?} after the call, with a staleness bound of {bound:?}",
                    answer.age,
                    started.elapsed()
                ),
            );
        }
        self.same_as_of(
            &name("query collect"),
            &models(answer.items),
            started,
            Some(group),
            view_of,
        )?;
        if on(0) {
            let started = Instant::now();
            let got = or_fail(
                &name("query descending"),
                collect(E::query(&repo, &g).descending()).await,
            )?;
            self.same_as_of(
                &name("query descending"),
                &got,
                started,
                Some(group),
                descending_of,
            )?;
            // The last order asked for wins.
            let started = Instant::now();
            let got = or_fail(
                &name("query ascending"),
                collect(E::query(&repo, &g).descending().ascending()).await,
            )?;
            self.same_as_of(
                &name("query ascending"),
                &got,
                started,
                Some(group),
                view_of,
            )?;
        }
        if on(1) {
            let count = or_fail(&name("count"), E::query(&repo, &g).count().await)?;
            if count != view.len() as u64 {
                return fail(
                    name("count"),
                    format!("counted {count}, the model holds {}", view.len()),
                );
            }
            let by_shard = or_fail(
                &name("count_by_shard"),
                E::query(&repo, &g).count_by_shard().await,
            )?;
            // Steady, each shard's count; during a transition each item is counted once,
            // where it is authoritative, which the model does not place.
            let shards = E::shards(&g);
            let expected: Vec<u64> = if self.model.phase.transition() {
                vec![view.len() as u64]
            } else {
                shards
                    .iter()
                    .map(|pk| {
                        view.iter()
                            .filter(|(k, _)| E::places(k)[0].0 == *pk)
                            .count() as u64
                    })
                    .collect()
            };
            let got = if self.model.phase.transition() {
                vec![by_shard.iter().sum()]
            } else {
                by_shard.clone()
            };
            if got != expected {
                return fail(
                    name("count_by_shard"),
                    format!(
                        "counted {by_shard:?}, the model holds {expected:?} (shards {shards:?})"
                    ),
                );
            }
        }
        if on(2) {
            let k = 1 + self.step % 3;
            let top_of = |m: &Model| descending_of(m).into_iter().take(k).collect::<Vec<_>>();
            let started = Instant::now();
            let got = or_fail(
                &name("top-k"),
                collect(E::query(&repo, &g).descending().limit(k)).await,
            )?;
            self.same_as_of(&name("top-k"), &got, started, Some(group), top_of)?;
            // Strongly consistent: never from the cache, unless the query asks for a bound.
            let consistent = || {
                E::query(&repo, &g)
                    .descending()
                    .limit(k)
                    .consistent_read(true)
            };
            same(
                &name("top-k, consistent"),
                &or_fail(&name("top-k, consistent"), collect(consistent()).await)?,
                &top_of(&self.model),
            )?;
            let started = Instant::now();
            let got = or_fail(
                &name("top-k, consistent, with a bound"),
                collect(consistent().max_staleness(bound)).await,
            )?;
            self.same_as_of(
                &name("top-k, consistent, with a bound"),
                &got,
                started,
                Some(group),
                top_of,
            )?;
        }
        if on(3) && E::KIND == Kind::Item {
            let started = Instant::now();
            let got = or_fail(
                &name("include_expired"),
                collect(E::query(&repo, &g).include_expired()).await,
            )?;
            self.same_as_of(&name("include_expired"), &got, started, Some(group), |m| {
                m.view(E::KIND, group, true)
            })?;
        }
        // Pages of several sizes, each continued with its cursor (sealed on every other
        // step), each shard read a page of 1, 2 or DynamoDB's default at a time.
        if on(4) {
            let size = [1, 2, 4][self.step % 3];
            let shard_pages = [Some(1), Some(2), None][self.step / 3 % 3];
            let paged = self
                .page_all::<E>(&g, size, None, shard_pages, self.step.is_multiple_of(2))
                .await?;
            same(&name(&format!("pages of {size}")), &paged, &view)?;
        }
        // A filter: collected, counted, paged; the points projected.
        let status = ["red", "green", "blue"][self.step % 3];
        let filtered_of = |m: &Model| {
            m.view(E::KIND, group, false)
                .into_iter()
                .filter(|(_, r)| r.status == status)
                .collect::<Vec<_>>()
        };
        let filtered = filtered_of(&self.model);
        if on(5) {
            let started = Instant::now();
            let got = or_fail(
                &name("filter"),
                collect(E::query(&repo, &g).filter(E::status_eq(status))).await,
            )?;
            self.same_as_of(&name("filter"), &got, started, Some(group), filtered_of)?;
            let count = or_fail(
                &name("filter count"),
                E::query(&repo, &g)
                    .filter(E::status_eq(status))
                    .count()
                    .await,
            )?;
            if count != filtered.len() as u64 {
                return fail(
                    name("filter count"),
                    format!("counted {count}, the model holds {}", filtered.len()),
                );
            }
            // The planted doc-shaped record that does not read as a doc (`D#950`): a
            // projection, recognising it by its keys alone, fails on it (see the gate).
            let unreadable_planted =
                self.untagged_may_be_read() && group == 0 && E::KIND == Kind::Doc;
            if unreadable_planted && !super::PROJECTION_SKIPS_UNREADABLE {
                return Ok(());
            }
            let started = Instant::now();
            let projected = or_fail(
                &name("projection"),
                E::query(&repo, &g).project::<E::Points>().collect().await,
            )?;
            let points: Vec<(Key, i64)> = projected.iter().map(E::points).collect();
            let acceptable = self.acceptable(started, Some(group));
            let points_of = |m: &Model| {
                m.view(E::KIND, group, false)
                    .into_iter()
                    .map(|(k, r)| (k, r.points))
                    .collect::<Vec<_>>()
            };
            if !acceptable.iter().any(|m| points_of(m) == points) {
                return fail(
                    name("projection"),
                    format!(
                        "read {points:?}, the model holds {:?}",
                        points_of(&self.model)
                    ),
                );
            }
        }
        if on(6) {
            let paged = self
                .page_all::<E>(&g, 2, Some(status), None, self.step % 2 == 1)
                .await?;
            same(&name("filtered pages of 2"), &paged, &filtered)?;
        }
        // A stream; a typed sort-key condition (ids in a closed range).
        if on(7) {
            let low = (self.step % 10) as u16;
            let high = low + (self.step % 7) as u16;
            let band: Vec<_> = view
                .iter()
                .filter(|(k, _)| (low..=high).contains(&k.id))
                .cloned()
                .collect();
            same(
                &name("sort-key condition"),
                &or_fail(
                    &name("sort-key condition"),
                    collect(
                        E::query(&repo, &g)
                            .sk(E::ids_between(low, high))
                            .consistent_read(true),
                    )
                    .await,
                )?,
                &band,
            )?;
            let streamed: Vec<Result<E, Error>> = E::query(&repo, &g).stream().collect().await;
            let streamed: Result<Vec<E>, Error> = streamed.into_iter().collect();
            same(
                &name("stream"),
                &or_fail(&name("stream"), streamed.map(models))?,
                &view,
            )?;
        }
        // Whole-key bounds, rank and neighbours (boxed: the reads' futures are large).
        if on(8) {
            Box::pin(self.check_bounds::<E>(group)).await?;
        }
        Ok(())
    }

    /// Whole-key bounds, rank and neighbours around a stored item of `group`, read
    /// consistently: the view is in sort-key order, so its position says what is before and
    /// after it.
    async fn check_bounds<E: ModelEntity>(&self, group: u8) -> Result<(), Failure> {
        let repo = self.repo::<E>();
        let g = group_name(group);
        let view = self.model.view(E::KIND, group, false);
        let models = |items: Vec<E>| items.into_iter().map(|e| e.to_model()).collect::<Vec<_>>();
        let name = |what: &str| format!("{what} ({:?})", E::KIND);
        let collect = |q: sharded::Query<E>| async move { q.collect().await.map(models) };
        if view.is_empty() {
            return Ok(());
        }
        {
            let at = self.step % view.len();
            let (key, rec) = &view[at];
            let me = E::from_model(key, rec);
            let consistent = || E::query(&repo, &g).consistent_read(true);
            same(
                &name("after"),
                &or_fail(&name("after"), collect(consistent().after(&me)).await)?,
                &view[at + 1..],
            )?;
            same(
                &name("before, descending"),
                &or_fail(
                    &name("before, descending"),
                    collect(consistent().before(&me).descending()).await,
                )?,
                &view[..at].iter().rev().cloned().collect::<Vec<_>>(),
            )?;
            let last = view.len() - 1;
            let (upto, _) = &view[(at + 2).min(last)];
            let upto = E::from_model(upto, rec);
            same(
                &name("from .. to"),
                &or_fail(
                    &name("from .. to"),
                    collect(consistent().from(&me).to(&upto)).await,
                )?,
                &view[at..=(at + 2).min(last)],
            )?;
            let rank = or_fail(&name("rank"), consistent().descending().rank(&me).await)?;
            if rank.position != (view.len() - at) as u64 {
                return fail(
                    name("rank"),
                    format!(
                        "rank {} of {}, the model's is {}",
                        rank.position,
                        view.len(),
                        view.len() - at
                    ),
                );
            }
            let near = or_fail(
                &name("around"),
                consistent().descending().around(&me, 2, 1).await,
            )?;
            let descending: Vec<(Key, Rec)> = view.iter().rev().cloned().collect();
            let q = last - at;
            same(
                &name("around, above"),
                &models(near.above),
                &descending[q.saturating_sub(2)..q],
            )?;
            same(
                &name("around, below"),
                &models(near.below),
                &descending[(q + 1).min(descending.len())..(q + 2).min(descending.len())],
            )?;
        }
        Ok(())
    }

    /// Every page of `group`, `size` items at a time, each shard read `shard_pages` items
    /// per request, the cursors sealed or not.
    async fn page_all<E: ModelEntity>(
        &self,
        group: &str,
        size: usize,
        status: Option<&str>,
        shard_pages: Option<u32>,
        sealed: bool,
    ) -> Result<Vec<(Key, Rec)>, Failure> {
        let repo = self.repo::<E>();
        let mut all = Vec::new();
        let mut cursor: Option<Cursor> = None;
        let check = format!(
            "pages of {size}{}{}{} ({:?})",
            if status.is_some() { ", filtered" } else { "" },
            shard_pages.map_or(String::new(), |p| format!(", {p} per shard request")),
            if sealed { ", sealed" } else { "" },
            E::KIND
        );
        for _ in 0..200 {
            let mut query = E::query(&repo, group);
            if let Some(s) = status {
                query = query.filter(E::status_eq(s));
            }
            if let Some(p) = shard_pages {
                query = query.page_size(p);
            }
            if sealed {
                query = query.seal_cursors(&cursor_key());
            }
            let page = or_fail(&check, query.page(size, cursor.as_ref()).await)?;
            if page.items.len() > size {
                return fail(check, format!("a page of {} items", page.items.len()));
            }
            all.extend(page.items.into_iter().map(|e| e.to_model()));
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
        fail(check, "more than 200 pages")
    }
}

/// The retry policy of the sequence's transactions, counter and batches: enough attempts for
/// the faults injected (at most two conflicts, or a lost answer), short backoffs.
fn retry() -> sharded::RetryPolicy {
    sharded::RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(2),
        max_delay: Duration::from_millis(20),
    }
}

/// The table of `flavour` as a service creates it: `Repo::create_table` of the entity with
/// the table's indexes (the tasks'), then `Repo::enable_ttl` of the items (the entity with a
/// `#[sharded(ttl)]` field); DescribeTimeToLive must then say it is on, on `expires`.
async fn create_with_ttl(client: &Client, flavour: Flavour, table: &str) -> Result<(), Failure> {
    async fn create<T: ShardedEntity, I: ShardedEntity>(
        client: &Client,
        table: &str,
    ) -> Result<(), Error> {
        Repo::<T>::new(client.clone(), table).create_table().await?;
        Repo::<I>::new(client.clone(), table).enable_ttl().await
    }
    let created = match flavour {
        Flavour::Tagged => {
            create::<super::gsis::tagged::Task, super::layouts::tagged::S3Item>(client, table).await
        }
        Flavour::Adopted => {
            create::<super::gsis::adopted::Task, super::layouts::adopted::S3Item>(client, table)
                .await
        }
    };
    if let Err(e) = created {
        return fail("setup", format!("create_table and enable_ttl: {e}"));
    }
    let described = client
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await;
    let ttl = described
        .as_ref()
        .ok()
        .and_then(|d| d.time_to_live_description.as_ref());
    let on = ttl.is_some_and(|t| {
        t.attribute_name() == Some("expires")
            && matches!(
                t.time_to_live_status(),
                Some(
                    aws_sdk_dynamodb::types::TimeToLiveStatus::Enabled
                        | aws_sdk_dynamodb::types::TimeToLiveStatus::Enabling
                )
            )
    });
    if !on {
        return fail("enable_ttl", format!("DescribeTimeToLive: {described:?}"));
    }
    Ok(())
}

/// The key the model seals its cursors with.
pub(super) fn cursor_key() -> sharded::cursor::CursorKey {
    sharded::cursor::CursorKey::new(b"the model's cursor key, 32 bytes+")
        .expect("a long enough secret")
}

/// The next page of `paging` under the layout `L` now declared, with the cursor the previous
/// layout issued: refused, with `CursorError::Layout` where `L` declares the issuer (a
/// listing not started yet, without a cursor, has nothing to carry).
async fn carried_cursor<L: Layout>(
    repo: Repo<L::Item>,
    paging: &Paging,
    knows_the_issuer: bool,
) -> Result<(), Failure> {
    if paging.cursor.is_none() {
        return Ok(());
    }
    let page = match paging.kind {
        Kind::Item => page_of::<L::Item>(repo, paging).await.map(drop),
        Kind::Doc => page_of::<L::Doc>(repo.for_entity(), paging).await.map(drop),
    };
    // A layout that declares the one the cursor was issued under (a transition, from the
    // steady layout before it) names both; a steady layout after a transition ended no
    // longer knows it, and refuses the cursor as another query's.
    match page {
        Err(Error::Cursor(sharded::cursor::CursorError::Layout { .. })) => Ok(()),
        Err(Error::Cursor(sharded::cursor::CursorError::WrongQuery)) if !knows_the_issuer => Ok(()),
        other => fail(
            "cursor carried across a layout change",
            format!(
                "page {}: {other:?}, the guide says CursorError::Layout{}",
                paging.pages + 1,
                if knows_the_issuer {
                    ""
                } else {
                    " or WrongQuery"
                }
            ),
        ),
    }
}

async fn page_of<E: ModelEntity>(
    repo: Repo<E>,
    paging: &Paging,
) -> Result<(Vec<(Key, Rec)>, Option<Cursor>), Error> {
    let mut query = E::query(&repo, &group_name(paging.group));
    if let Some(s) = &paging.filter {
        query = query.filter(E::status_eq(s));
    }
    let page = query.page(paging.size, paging.cursor.as_ref()).await?;
    Ok((
        page.items.iter().map(ModelEntity::to_model).collect(),
        page.cursor,
    ))
}

fn or_fail<T>(check: &str, result: Result<T, Error>) -> Result<T, Failure> {
    result.or_else(|e| fail(check, format!("unexpected error: {e}")))
}

fn same(check: &str, got: &[(Key, Rec)], model: &[(Key, Rec)]) -> Result<(), Failure> {
    if got == model {
        return Ok(());
    }
    let got_keys: Vec<String> = got.iter().map(|(k, _)| short(k)).collect();
    let model_keys: Vec<String> = model.iter().map(|(k, _)| short(k)).collect();
    let differing: Vec<String> = got
        .iter()
        .filter(|(k, r)| model.iter().any(|(mk, mr)| mk == k && mr != r))
        .map(|(k, r)| format!("{} read {r:?}", short(k)))
        .collect();
    fail(
        check,
        format!(
            "read {got_keys:?}, the model holds {model_keys:?}; differing content: {differing:?}"
        ),
    )
}

pub fn short(key: &Key) -> String {
    format!(
        "{}{}{}",
        if key.kind == Kind::Item { "I" } else { "D" },
        group_name(key.group),
        key.id
    )
}

fn of_kind(keys: &[Key], kind: Kind) -> impl Iterator<Item = &Key> {
    keys.iter().filter(move |k| k.kind == kind)
}

/// The entity as the model holds it (or a placeholder for a key it does not hold): what a
/// user passes to `delete_if`, `check`, `move_item`'s source.
fn stored<E: ModelEntity>(model: &Model, key: &Key) -> E {
    E::from_model(key, model.items.get(key).unwrap_or(&Rec::placeholder()))
}

fn spec(model: &Model, update: &UpdateOp) -> UpdateSpec {
    UpdateSpec {
        key: update.key,
        status: update.status.clone(),
        add: update.add,
        cond: update.cond.clone(),
        if_version: update.version.map(|r| model.version_read(&update.key, r)),
    }
}

/// An item's attributes in name order, for comparing and printing.
fn sorted(item: &HashMap<String, V>) -> BTreeMap<&str, &V> {
    item.iter().map(|(k, v)| (k.as_str(), v)).collect()
}
