//! The reference model: a map from logical key to item, the layout declared, and what every
//! operation must answer, predicted from the map alone.

use std::collections::BTreeMap;

use super::events::EventKey;
use super::gsis::TaskRec;
use super::ops::{Counting, Op, TxAction, UpdateOp, VersionRead};

/// An expiry long past: DynamoDB's sweeper may delete the item, queries must hide it.
pub const EXPIRED: u64 = 1_000_000_000;
/// An expiry far ahead.
pub const LIVE: u64 = 4_000_000_000;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Kind {
    Doc,
    Item,
}

/// A logical key: the entity, the logical partition (`group`) and the item's id.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Key {
    pub kind: Kind,
    pub group: u8,
    pub id: u16,
}

/// An item's content (`expires` only for items, `version` only for docs).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Rec {
    pub status: String,
    pub points: i64,
    pub expires: Option<u64>,
    pub version: u64,
}

impl Rec {
    /// A placeholder content, for an operation that names a key the model does not hold.
    pub fn placeholder() -> Rec {
        Rec {
            status: "red".into(),
            points: 0,
            expires: None,
            version: 0,
        }
    }

    pub fn expired(&self) -> bool {
        self.expires.is_some_and(|e| e < now())
    }
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A typed condition on the stored item; false when there is none.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Cond {
    StatusEq(String),
    PointsGe(i64),
    PointsLt(i64),
}

impl Cond {
    pub fn holds(&self, rec: Option<&Rec>) -> bool {
        match (self, rec) {
            (_, None) => false,
            (Cond::StatusEq(s), Some(r)) => r.status == *s,
            (Cond::PointsGe(p), Some(r)) => r.points >= *p,
            (Cond::PointsLt(p), Some(r)) => r.points < *p,
        }
    }
}

/// The layouts a sequence walks through: `A3 | U3 -> S3 -> T5 -> S5 -> T3 -> S3 -> ..`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Adopting 3 shards over the legacy unsharded key.
    A3,
    /// Adopting 3 shards over items another service placed on them at random.
    U3,
    S3,
    T5,
    S5,
    T3,
}

impl Phase {
    pub fn transition(self) -> bool {
        matches!(self, Phase::A3 | Phase::U3 | Phase::T5 | Phase::T3)
    }
    /// Whether another service still writes untagged items its own way (the legacy key, or
    /// a shard of its choosing).
    pub fn adopting(self) -> bool {
        matches!(self, Phase::A3 | Phase::U3)
    }
    /// The layout after declaring a transition (steady phases only).
    pub fn declared(self) -> Option<Phase> {
        match self {
            Phase::S3 => Some(Phase::T5),
            Phase::S5 => Some(Phase::T3),
            _ => None,
        }
    }
    /// The layout once the transition is migrated and its declaration removed.
    pub fn completed(self) -> Option<Phase> {
        match self {
            Phase::A3 | Phase::U3 | Phase::T3 => Some(Phase::S3),
            Phase::T5 => Some(Phase::S5),
            _ => None,
        }
    }
}

/// What an operation answers.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Outcome {
    Ok,
    AlreadyExists,
    ConditionFailed,
    VersionConflict,
    /// A transaction canceled; the actions whose conditions fail.
    Canceled(Vec<usize>),
    /// A token used before with another request (`IdempotentParameterMismatch`).
    IdempotentMismatch,
    /// The operation does not apply to the model's state (a sequence shortened by the
    /// minimizer): not sent.
    Skipped,
}

/// The model's state.
#[derive(Clone, Debug)]
pub struct Model {
    pub items: BTreeMap<Key, Rec>,
    /// The sharded counter's total.
    pub counter: i64,
    /// The `by` of each token an increment was sent under.
    pub counter_tokens: BTreeMap<u8, i8>,
    pub phase: Phase,
    /// Whether a listing is being paged (`PageStart` .. `PageNext` to its end).
    pub paging: bool,
    /// The time-bucketed events (`events.rs`), by stream, time and id: their payload.
    pub events: BTreeMap<EventKey, i64>,
    /// The tasks (`gsis.rs`), by id.
    pub tasks: BTreeMap<u8, TaskRec>,
    /// Whether a migration re-keyed the planted record another service keyed `I#9 9` (a raw
    /// space, not in canonical form): from then on it is the item [`REKEYED_ID`] of group
    /// `a`, and no longer a foreign record.
    pub rekeyed: bool,
    /// Whether the table's entities are recognised by their tag (not by their keys' shape).
    pub tagged: bool,
}

/// The model id of the item the planted `I#9 9` record becomes once re-keyed (its `id` is
/// `9 9`, which no generated id spells; see `layouts::id_name`).
pub const REKEYED_ID: u16 = 909;

impl Model {
    /// Whether a full migration run now, asked to `rekey` or not, re-keys the planted `I#9 9`
    /// record: when asked, once, in a transition (every run reads the shard it is planted
    /// on), where the untagged record may be the entity's item: in a table without a tag, or
    /// on a partition of the layout being left (which may hold items written before they were
    /// tagged). Adopting the legacy unsharded key, the shards are the new layout's only: in a
    /// tagged table an untagged record there is another service's, left alone.
    pub fn rekeys(&self, rekey: bool) -> bool {
        rekey
            && !self.rekeyed
            && self.phase.transition()
            && (!self.tagged || self.phase != Phase::A3)
    }

    /// The model of a sequence starting in `phase`, on a table whose entities are `tagged`
    /// (recognised by their tag) or not (by their keys' shape).
    pub fn new(phase: Phase, tagged: bool) -> Self {
        Model {
            items: BTreeMap::new(),
            counter: 0,
            counter_tokens: BTreeMap::new(),
            phase,
            paging: false,
            events: BTreeMap::new(),
            tasks: BTreeMap::new(),
            rekeyed: false,
            tagged,
        }
    }

    /// The version a write sends, from what it claims to have read.
    pub fn version_read(&self, key: &Key, read: VersionRead) -> u64 {
        let stored = self.items.get(key).map(|r| r.version);
        match (read, stored) {
            (VersionRead::Current, stored) => stored.unwrap_or(0),
            (VersionRead::Stale, Some(v)) if v > 0 => v - 1,
            (VersionRead::Stale, Some(v)) => v + 3,
            (VersionRead::Stale, None) => 2,
        }
    }

    /// The visible items of `kind` in `group`, in sort-key order (ascending).
    pub fn view(&self, kind: Kind, group: u8, include_expired: bool) -> Vec<(Key, Rec)> {
        self.items
            .iter()
            .filter(|(k, r)| {
                k.kind == kind && k.group == group && (include_expired || !r.expired())
            })
            .map(|(k, r)| (*k, r.clone()))
            .collect()
    }

    /// The collection of both kinds in `group`: `D#..` sorts before `I#..`.
    pub fn collection(&self, group: u8, include_expired: bool) -> Vec<(Key, Rec)> {
        let mut all = self.view(Kind::Doc, group, include_expired);
        all.extend(self.view(Kind::Item, group, include_expired));
        all
    }

    /// Applies `op` to the model and returns what it must answer. The keys it wrote are
    /// returned too (for the read history and the point reads checked after the step).
    pub fn apply(&mut self, op: &Op) -> (Outcome, Vec<Key>) {
        let before = self.items.clone();
        match op {
            Op::Put { key, rec, read } => {
                let mut rec = rec.clone();
                if key.kind == Kind::Doc {
                    let sent = self.version_read(key, *read);
                    let stored = before.get(key).map(|r| r.version);
                    if stored.unwrap_or(0) != sent || (stored.is_none() && sent != 0) {
                        return (Outcome::VersionConflict, vec![]);
                    }
                    rec.version = sent + 1;
                }
                self.items.insert(*key, rec);
                (Outcome::Ok, vec![*key])
            }
            Op::PutNew { key, rec } => match before.get(key) {
                Some(stored) if stored == rec => (Outcome::Ok, vec![]),
                Some(_) => (Outcome::AlreadyExists, vec![]),
                None => {
                    self.items.insert(*key, rec.clone());
                    (Outcome::Ok, vec![*key])
                }
            },
            Op::PutIf { key, rec, cond } => {
                if cond.holds(before.get(key)) {
                    self.items.insert(*key, rec.clone());
                    (Outcome::Ok, vec![*key])
                } else {
                    (Outcome::ConditionFailed, vec![])
                }
            }
            Op::Update(update) => match self.update_refusal(update) {
                Some(refusal) => (refusal, vec![]),
                None => {
                    self.apply_update(update);
                    (Outcome::Ok, vec![update.key])
                }
            },
            Op::Delete { key } => {
                self.items.remove(key);
                (Outcome::Ok, vec![*key])
            }
            Op::DeleteIf { key, cond } => {
                if cond.holds(before.get(key)) {
                    self.items.remove(key);
                    (Outcome::Ok, vec![*key])
                } else {
                    (Outcome::ConditionFailed, vec![])
                }
            }
            Op::BatchPut(puts) => {
                for (key, rec) in puts {
                    self.items.insert(*key, rec.clone());
                }
                (Outcome::Ok, puts.iter().map(|(k, _)| *k).collect())
            }
            Op::BatchDelete(keys) => {
                for key in keys {
                    self.items.remove(key);
                }
                (Outcome::Ok, keys.clone())
            }
            Op::Faulted { op, .. } => self.apply(op),
            Op::PartialRead { .. } if self.phase.transition() => (Outcome::Skipped, vec![]),
            Op::BatchGet(_)
            | Op::TransactGet(_)
            | Op::CounterTotal { .. }
            | Op::Scan(_)
            | Op::PartialRead { .. } => (Outcome::Ok, vec![]),
            Op::Increment { by, how } => {
                if let Counting::Token(token) = how {
                    match self.counter_tokens.get(token) {
                        Some(sent) if sent == by => return (Outcome::Ok, vec![]),
                        Some(_) => return (Outcome::IdempotentMismatch, vec![]),
                        None => {
                            self.counter_tokens.insert(*token, *by);
                        }
                    }
                }
                self.counter += i64::from(*by);
                (Outcome::Ok, vec![])
            }
            Op::Transact(actions) | Op::Prepared { actions, .. } => self.transact(actions),
            Op::LegacyPut { key, rec, .. } => {
                if !self.phase.adopting() || before.contains_key(key) {
                    return (Outcome::Skipped, vec![]);
                }
                self.items.insert(*key, rec.clone());
                (Outcome::Ok, vec![*key])
            }
            Op::Sweep => {
                let expired: Vec<Key> = before
                    .iter()
                    .filter(|(_, r)| r.expired())
                    .map(|(k, _)| *k)
                    .collect();
                for key in &expired {
                    self.items.remove(key);
                }
                (Outcome::Ok, expired)
            }
            Op::PageStart { .. } => {
                if self.paging {
                    return (Outcome::Skipped, vec![]);
                }
                self.paging = true;
                (Outcome::Ok, vec![])
            }
            Op::PageNext => {
                if !self.paging {
                    return (Outcome::Skipped, vec![]);
                }
                (Outcome::Ok, vec![])
            }
            Op::MigratePartial { .. } | Op::MigrateResume { .. } | Op::MigrateUnit { .. } => {
                if !self.phase.transition() {
                    return (Outcome::Skipped, vec![]);
                }
                (Outcome::Ok, vec![])
            }
            Op::Complete { rekey } => match self.phase.completed() {
                Some(next) => {
                    if self.rekeys(*rekey) {
                        self.rekeyed = true;
                        self.items.insert(
                            Key {
                                kind: Kind::Item,
                                group: 0,
                                id: REKEYED_ID,
                            },
                            Rec {
                                status: "red".into(),
                                points: 7,
                                expires: None,
                                version: 0,
                            },
                        );
                    }
                    self.phase = next;
                    self.paging = false;
                    (Outcome::Ok, vec![])
                }
                None => (Outcome::Skipped, vec![]),
            },
            Op::EventPut(_) | Op::EventDelete { .. } | Op::Range(_) => self.apply_event(op),
            Op::TaskPut(_) | Op::TaskUpdate(_) | Op::TaskDelete { .. } | Op::GsiRead(_) => {
                self.apply_task(op)
            }
            Op::Declare => match self.phase.declared() {
                Some(next) => {
                    self.phase = next;
                    self.paging = false;
                    (Outcome::Ok, vec![])
                }
                None => (Outcome::Skipped, vec![]),
            },
        }
    }

    /// Why an update is refused, if it is: no item, a version other than the one required
    /// (`VersionConflict`), or a condition that does not hold.
    fn update_refusal(&self, update: &UpdateOp) -> Option<Outcome> {
        let Some(stored) = self.items.get(&update.key) else {
            return Some(Outcome::ConditionFailed);
        };
        if let Some(read) = update.version {
            if self.version_read(&update.key, read) != stored.version {
                return Some(Outcome::VersionConflict);
            }
        }
        match &update.cond {
            Some(cond) if !cond.holds(Some(stored)) => Some(Outcome::ConditionFailed),
            _ => None,
        }
    }

    fn apply_update(&mut self, update: &UpdateOp) {
        if let Some(stored) = self.items.get_mut(&update.key) {
            stored.points += update.add;
            if let Some(status) = &update.status {
                stored.status = status.clone();
            }
            if update.key.kind == Kind::Doc {
                stored.version += 1;
            }
        }
    }

    fn transact(&mut self, actions: &[TxAction]) -> (Outcome, Vec<Key>) {
        let mut keys: Vec<Key> = actions.iter().flat_map(TxAction::keys).collect();
        keys.sort();
        if actions.is_empty() || keys.windows(2).any(|w| w[0] == w[1]) {
            return (Outcome::Skipped, vec![]);
        }
        let failing: Vec<usize> = actions
            .iter()
            .enumerate()
            .filter(|(_, a)| !self.tx_action_holds(a))
            .map(|(i, _)| i)
            .collect();
        if !failing.is_empty() {
            return (Outcome::Canceled(failing), vec![]);
        }
        let mut written = Vec::new();
        for action in actions {
            match action {
                TxAction::Put { key, rec, read } => {
                    let mut rec = rec.clone();
                    if key.kind == Kind::Doc {
                        rec.version = self.version_read(key, *read) + 1;
                    }
                    self.items.insert(*key, rec);
                }
                TxAction::PutIf { key, rec, .. } => {
                    self.items.insert(*key, rec.clone());
                }
                TxAction::Update(update) => self.apply_update(update),
                TxAction::Delete { key } | TxAction::DeleteIf { key, .. } => {
                    self.items.remove(key);
                }
                TxAction::Check { .. } => {}
                TxAction::Move { from, to, rec } => {
                    self.items.remove(from);
                    self.items.insert(*to, rec.clone());
                }
            }
            written.extend(
                action
                    .keys()
                    .into_iter()
                    .filter(|_| !matches!(action, TxAction::Check { .. })),
            );
        }
        (Outcome::Ok, written)
    }

    fn tx_action_holds(&self, action: &TxAction) -> bool {
        match action {
            TxAction::Put { key, read, .. } => {
                key.kind == Kind::Item
                    || self.items.get(key).map_or(0, |r| r.version) == self.version_read(key, *read)
                        && (self.items.contains_key(key) || self.version_read(key, *read) == 0)
            }
            TxAction::PutIf { key, cond, .. }
            | TxAction::DeleteIf { key, cond }
            | TxAction::Check { key, cond } => cond.holds(self.items.get(key)),
            TxAction::Update(update) => self.update_refusal(update).is_none(),
            TxAction::Delete { .. } => true,
            TxAction::Move { from, to, .. } => {
                self.items.contains_key(from) && !self.items.contains_key(to)
            }
        }
    }
}
