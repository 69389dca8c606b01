//! A log of a test's writes, against which reads made while they ran are checked.
//!
//! A read concurrent with writes has no single right answer: a write in flight during the read
//! may or may not be in it. [`History`] records when every write started and when it was
//! acknowledged, on one logical clock, and [`History::check`] accepts exactly the answers some
//! moment of the read could have given, key by key:
//!
//! - a key whose last write before the read was an acknowledged put, and that no write touched
//!   while the read ran, **must** be in the answer (if it sorts within the answer's range);
//! - a key that was absent throughout (never put, or deleted and acknowledged before the read
//!   started, and not written during it) **must not** be;
//! - a key written while the read ran may be either;
//! - no key twice, and in order.
//!
//! So an item lost (or shown twice) by anything other than the writes themselves, a migration
//! moving it for instance, is a violation, while the writes' own races are not.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::{Mutex, PoisonError};

/// The writes of a test, by key, on a logical clock.
///
/// ```
/// use sharded_testkit::history::History;
///
/// let history = History::new();
/// history.put("a").done();
/// let write = history.put("b"); // in flight during the read below
/// let started = history.now();
/// let answer = ["a"];           // what a read returned
/// let ended = history.now();
/// write.done();
/// assert!(history.check(started, ended, &answer, None, Ord::cmp).is_ok());
/// // Missing `a`, which was there throughout, is a violation.
/// assert!(history.check(started, ended, &[], None, Ord::cmp).is_err());
/// ```
#[derive(Debug, Default)]
pub struct History<K> {
    inner: Mutex<Inner<K>>,
}

#[derive(Debug)]
struct Inner<K> {
    clock: u64,
    ops: BTreeMap<K, Vec<Op>>,
}

impl<K> Default for Inner<K> {
    fn default() -> Self {
        Inner {
            clock: 0,
            ops: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Op {
    /// What the write does to the key's presence: put (`Some(true)`), delete (`Some(false)`),
    /// or nothing (`None`, a [`touch`](History::touch)).
    put: Option<bool>,
    start: u64,
    /// When it was acknowledged; `None` while in flight, or forever when it failed (its
    /// effect is unknown).
    end: Option<u64>,
}

/// A write in flight: [`done`](Self::done) when DynamoDB acknowledged it. Dropped without
/// `done` (the write failed), its effect stays unknown: the key may or may not be in any
/// later read.
#[must_use = "call done() once the write is acknowledged"]
pub struct Write<'a, K: Ord + Clone + Debug> {
    history: &'a History<K>,
    key: K,
    index: usize,
}

impl<K: Ord + Clone + Debug> Write<'_, K> {
    /// Records the write as acknowledged now.
    ///
    /// ```
    /// let history = sharded_testkit::history::History::new();
    /// history.delete(7).done();
    /// ```
    pub fn done(self) {
        let mut inner = self.history.lock();
        inner.clock += 1;
        let now = inner.clock;
        if let Some(op) = inner
            .ops
            .get_mut(&self.key)
            .and_then(|ops| ops.get_mut(self.index))
        {
            op.end = Some(now);
        }
    }
}

/// What a key was during a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum During {
    Present,
    Absent,
    Either,
}

impl<K: Ord + Clone + Debug> History<K> {
    /// An empty history: every key absent.
    ///
    /// ```
    /// let history: sharded_testkit::history::History<u32> = sharded_testkit::history::History::new();
    /// assert!(history.present().unwrap().is_empty());
    /// ```
    pub fn new() -> Self {
        History {
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A tick of the clock: take one before sending a read and one after its answer.
    ///
    /// ```
    /// let history: sharded_testkit::history::History<u32> = sharded_testkit::history::History::new();
    /// assert!(history.now() < history.now());
    /// ```
    pub fn now(&self) -> u64 {
        let mut inner = self.lock();
        inner.clock += 1;
        inner.clock
    }

    fn begin(&self, key: K, put: Option<bool>) -> Write<'_, K> {
        let mut inner = self.lock();
        inner.clock += 1;
        let start = inner.clock;
        let ops = inner.ops.entry(key.clone()).or_default();
        ops.push(Op {
            put,
            start,
            end: None,
        });
        let index = ops.len() - 1;
        Write {
            history: self,
            key,
            index,
        }
    }

    /// A put of `key` starting now (call before sending it).
    ///
    /// ```
    /// let history = sharded_testkit::history::History::new();
    /// let write = history.put("k");
    /// // ... send the put ...
    /// write.done();
    /// ```
    pub fn put(&self, key: K) -> Write<'_, K> {
        self.begin(key, Some(true))
    }

    /// A delete of `key` starting now (call before sending it).
    ///
    /// ```
    /// let history = sharded_testkit::history::History::new();
    /// history.put("k").done();
    /// history.delete("k").done();
    /// assert!(history.present().unwrap().is_empty());
    /// ```
    pub fn delete(&self, key: K) -> Write<'_, K> {
        self.begin(key, Some(false))
    }

    /// A write of `key` that leaves whether it is present as it was, starting now: an update,
    /// which during a layout transition may move the item to its current place. A read it
    /// overlaps may or may not show the key; before and after, the key is what the puts and
    /// deletes made it. Acknowledged or not, it never makes the key's presence unknown.
    ///
    /// ```
    /// use sharded_testkit::history::History;
    /// let history = History::new();
    /// history.put("k").done();
    /// let started = history.now();
    /// let update = history.touch("k"); // in flight during the read
    /// let ended = history.now();
    /// assert!(history.check(started, ended, &[] as &[&str], None, Ord::cmp).is_ok());
    /// drop(update); // refused or failed: the key is still present
    /// assert_eq!(history.present().unwrap().len(), 1);
    /// ```
    pub fn touch(&self, key: K) -> Write<'_, K> {
        self.begin(key, None)
    }

    /// The keys present once every write has been acknowledged; an error naming the keys
    /// whose last write is unacknowledged (in flight, or failed).
    ///
    /// ```
    /// let history = sharded_testkit::history::History::new();
    /// history.put(1).done();
    /// let _lost = history.put(2); // never acknowledged
    /// assert!(history.present().is_err());
    /// ```
    pub fn present(&self) -> Result<BTreeSet<K>, String> {
        let inner = self.lock();
        let mut present = BTreeSet::new();
        let mut unknown = Vec::new();
        for (key, ops) in &inner.ops {
            // Touches leave presence as the puts and deletes made it.
            match ops.iter().rev().find(|op| op.put.is_some()) {
                Some(op) if op.end.is_none() => unknown.push(key.clone()),
                Some(op) if op.put == Some(true) => {
                    present.insert(key.clone());
                }
                _ => {}
            }
        }
        if unknown.is_empty() {
            Ok(present)
        } else {
            Err(format!("writes not acknowledged: {unknown:?}"))
        }
    }

    fn during(ops: &[Op], started: u64, ended: u64) -> During {
        let mut state = During::Absent;
        for op in ops {
            match op.end {
                // Acknowledged before the read started: the state it left.
                Some(end) if end < started => match op.put {
                    Some(true) => state = During::Present,
                    Some(false) => state = During::Absent,
                    None => {}
                },
                // Started before the read ended and not finished before it started: it may
                // have taken effect at any moment of the read.
                _ if op.start < ended => return During::Either,
                _ => {}
            }
        }
        state
    }

    /// Checks an `answer` read between the ticks `started` and `ended` (see the module
    /// documentation): no key twice, keys in `order`, nothing absent throughout, and every key
    /// present throughout that sorts before the answer's last key (or, with no `limit` or an
    /// answer shorter than it, every one). Returns every violation found, one per line.
    ///
    /// ```
    /// use sharded_testkit::history::History;
    /// let history = History::new();
    /// for k in [1, 2, 3] {
    ///     history.put(k).done();
    /// }
    /// let (s, e) = (history.now(), history.now());
    /// // A top-2, descending.
    /// let descending = |a: &i32, b: &i32| b.cmp(a);
    /// assert!(history.check(s, e, &[3, 2], Some(2), descending).is_ok());
    /// assert!(history.check(s, e, &[3, 1], Some(2), descending).is_err()); // 2 missing
    /// assert!(history.check(s, e, &[3, 3], Some(2), descending).is_err()); // 3 twice
    /// ```
    pub fn check(
        &self,
        started: u64,
        ended: u64,
        answer: &[K],
        limit: Option<usize>,
        order: impl Fn(&K, &K) -> Ordering,
    ) -> Result<(), String> {
        let inner = self.lock();
        let mut violations = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, key) in answer.iter().enumerate() {
            if !seen.insert(key) {
                violations.push(format!("{key:?} twice"));
            }
            if i > 0 && order(&answer[i - 1], key) != Ordering::Less {
                violations.push(format!("{:?} before {key:?}: out of order", answer[i - 1]));
            }
            let ops = inner.ops.get(key).map_or(&[][..], Vec::as_slice);
            if Self::during(ops, started, ended) == During::Absent {
                violations.push(format!("{key:?} was absent throughout the read"));
            }
        }
        let full = limit.is_none_or(|l| answer.len() < l);
        for (key, ops) in &inner.ops {
            if Self::during(ops, started, ended) != During::Present || seen.contains(key) {
                continue;
            }
            let within = full
                || answer
                    .last()
                    .is_some_and(|last| order(key, last) != Ordering::Greater);
            if within {
                violations.push(format!(
                    "{key:?} was present throughout the read and is missing"
                ));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations.join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_in_flight_may_or_may_not_be_seen() {
        let history = History::new();
        history.put(1).done();
        history.put(2).done();
        let s = history.now();
        let deleting = history.delete(2);
        let putting = history.put(3);
        let e = history.now();
        deleting.done();
        putting.done();
        for answer in [&[1, 2, 3][..], &[1, 2], &[1, 3], &[1]] {
            assert!(
                history.check(s, e, answer, None, Ord::cmp).is_ok(),
                "{answer:?}"
            );
        }
        assert!(
            history.check(s, e, &[2, 3], None, Ord::cmp).is_err(),
            "1 missing"
        );
        // After both acknowledged: exactly {1, 3}.
        let (s, e) = (history.now(), history.now());
        assert!(history.check(s, e, &[1, 3], None, Ord::cmp).is_ok());
        assert!(history.check(s, e, &[1, 2, 3], None, Ord::cmp).is_err());
        assert_eq!(history.present().unwrap(), BTreeSet::from([1, 3]));
    }

    #[test]
    fn a_write_started_after_the_read_ended_is_not_in_it() {
        let history = History::new();
        let (s, e) = (history.now(), history.now());
        history.put(1).done();
        assert!(history.check(s, e, &[1], None, Ord::cmp).is_err());
        assert!(history.check(s, e, &[], None, Ord::cmp).is_ok());
    }

    #[test]
    fn a_limited_answer_needs_only_what_sorts_before_its_last_key() {
        let history = History::new();
        for k in 0..10 {
            history.put(k).done();
        }
        let (s, e) = (history.now(), history.now());
        assert!(history.check(s, e, &[0, 1, 2], Some(3), Ord::cmp).is_ok());
        assert!(history.check(s, e, &[0, 2, 3], Some(3), Ord::cmp).is_err());
        assert!(
            history.check(s, e, &[0, 1], Some(3), Ord::cmp).is_err(),
            "too short"
        );
        assert!(
            history.check(s, e, &[1, 0, 2], Some(3), Ord::cmp).is_err(),
            "order"
        );
    }

    #[test]
    fn a_failed_write_leaves_its_key_unknown() {
        let history = History::new();
        drop(history.put(1));
        let (s, e) = (history.now(), history.now());
        assert!(history.check(s, e, &[1], None, Ord::cmp).is_ok());
        assert!(history.check(s, e, &[], None, Ord::cmp).is_ok());
        assert!(history.present().is_err());
    }
}
