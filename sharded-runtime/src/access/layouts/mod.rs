//! Per-key layouts (`max_n` on `#[pk]`): the layout directory that lists the keys whose shard
//! count is not the declared `n`, how a process caches it, and what any process reads of it
//! ([`Layouts`]). The steps that change one key online are the operator's: `sharded-ops`'
//! `layouts` (`ChangeLayout`), which reaches the directory's item and the handle through
//! `__ops`; the protocol they follow is here, because every read and write obeys it.
//!
//! The directory is one item per entity, in the entity's own table: partition
//! `_sharded#layouts#<Entity>` (sort key `_sharded#layouts` when the table has one), tagged
//! `_sharded#layouts` where the table tags items, so no query, scan or recognition of any
//! entity takes it for one of its items. It holds a map from logical key to [`KeyEntry`] and
//! a revision every change is conditioned on. Hot keys are few, so the item stays small (an
//! entry is about 60 bytes: thousands fit in DynamoDB's 400 KB).
//!
//! ## The protocol of a change (widening 1 -> 20, or narrowing back)
//!
//! Every process reads the directory at most a *lease* ago (it reads it again before using an
//! older copy; half way through the lease it refreshes in the background). A change is three
//! steps, each written to the directory, each at least *lease + margin* after the one before:
//!
//! | phase | the key is read at | a put goes to | and first checks/replaces |
//! |---|---|---|---|
//! | steady (no entry) | `n` | `n` | - |
//! | `reading` | `from` and `to` | `from` | a copy at `to` |
//! | `writing` | `to` and `from` | `to` | - (deletes and conditional writes check `from`) |
//! | migrated, then steady | `to` | `to` | - |
//!
//! - While one process still holds the steady layout, nobody writes at `to`: writers only
//!   start there (`writing`) once every process reads both places (`reading` is a lease old).
//! - Where both places hold a copy, the copy at `to` wins unless it is marked `moved`
//!   ([`KeyState`]): in `writing` a put is one `PutItem` at `to` (the hot key's writes spread
//!   at once), and a process still in `reading` replaces (and marks) the copy at `to` with
//!   each write at `from`, so an unmarked copy at `to` is always the newest.
//! - The key's migration starts when `writing` is a lease old (no process writes at `from`
//!   any more) and moves each item still at `from` to its place at `to`; the last step
//!   removes the entry (or keeps it at `to` when `to` is not the declared `n`) once no item is
//!   left at `from`.
//!
//! The margin covers what a lease does not: a request sent under the previous phase that
//! arrives late (set it above the longest a request takes, retries included), and the
//! difference between the wall clocks of the machines that run the steps.

mod cache;
mod read;

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;

pub(crate) use cache::{layout_schema, Directory, Snapshot, WallClock};

pub use read::{check_key, declared_n, max_n, stored, Layouts};

use crate::error::layout::LayoutError;
use crate::item::Item;
use crate::keys::schema::{EntitySchema, KeyLayout};

/// The partition key prefix of a layout directory item (the entity's name follows); one of
/// [`OWN_ITEMS_PREFIX`](crate::keys::layout::OWN_ITEMS_PREFIX)'s, never an entity's key.
pub const DIRECTORY_PREFIX: &str = "_sharded#layouts#";

/// The sort key of a directory item, in a table with a sort key; also its tag.
pub const DIRECTORY_MARK: &str = "_sharded#layouts";

/// How long a process may use the directory it read, and how long a step waits beyond that.
///
/// ```
/// use std::time::Duration;
/// use sharded::layouts::LayoutTiming;
/// let timing = LayoutTiming::default();
/// assert_eq!(timing.lease, Duration::from_secs(10));
/// assert_eq!(timing.step_wait(), Duration::from_secs(20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayoutTiming {
    /// The longest a process uses the directory it read (counted from when it sent the read).
    pub lease: Duration,
    /// What a step waits beyond the lease: above the longest a request takes (retries
    /// included), plus the wall-clock difference between the machines that run steps.
    pub margin: Duration,
    /// Whether a process reads the directory again in the background half way through its
    /// lease, so that requests do not wait for it.
    pub refresh_ahead: bool,
}

impl Default for LayoutTiming {
    fn default() -> Self {
        LayoutTiming {
            lease: Duration::from_secs(10),
            margin: Duration::from_secs(10),
            refresh_ahead: true,
        }
    }
}

impl LayoutTiming {
    /// A lease and a margin; background refresh on.
    pub fn new(lease: Duration, margin: Duration) -> Self {
        LayoutTiming {
            lease,
            margin,
            refresh_ahead: true,
        }
    }

    /// The same timing, with background refresh on or off (off: a process reads the
    /// directory only when its lease ran out, before the request that needs it).
    pub fn with_refresh_ahead(mut self, on: bool) -> Self {
        self.refresh_ahead = on;
        self
    }

    /// The least time between two steps of a change: lease + margin.
    pub fn step_wait(&self) -> Duration {
        self.lease + self.margin
    }
}

/// Where one key's change stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Read at both counts, written at `from` (the other place checked).
    Reading,
    /// Read at both counts, written at `to` (the other place checked); the migration moves
    /// what is left at `from`.
    Writing,
    /// At `to`, which is not the declared `n`.
    Steady,
}

impl Phase {
    /// The phase as the layout directory's item spells it (and the command line prints it):
    /// `reading`, `writing` or `steady`.
    ///
    /// ```
    /// use sharded::layouts::Phase;
    /// assert_eq!(Phase::Writing.name(), "writing");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Phase::Reading => "reading",
            Phase::Writing => "writing",
            Phase::Steady => "steady",
        }
    }

    fn parse(text: &str) -> Option<Phase> {
        match text {
            "reading" => Some(Phase::Reading),
            "writing" => Some(Phase::Writing),
            "steady" => Some(Phase::Steady),
            _ => None,
        }
    }
}

/// One key's entry in the layout directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyEntry {
    /// The count the key had when the change began.
    pub from: u32,
    /// The count it changes to.
    pub to: u32,
    /// Where the change stands.
    pub phase: Phase,
    /// When the phase was written, by the wall clock of the process that wrote it.
    pub since: Duration,
}

impl KeyEntry {
    /// The layout processes read and write the key with in this phase.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sharded::layouts::{KeyEntry, Phase};
    /// use sharded::schema::KeyLayout;
    /// let entry = KeyEntry { from: 1, to: 20, phase: Phase::Reading, since: Duration::ZERO };
    /// assert_eq!(entry.layout(), KeyLayout::moving(1, 20)); // written at 1, 20 checked too
    /// let entry = KeyEntry { phase: Phase::Writing, ..entry };
    /// assert_eq!(entry.layout(), KeyLayout::moving(20, 1));
    /// ```
    pub fn layout(&self) -> KeyLayout {
        match self.phase {
            Phase::Reading => KeyLayout::moving(self.from, self.to),
            Phase::Writing => KeyLayout::moving(self.to, self.from),
            Phase::Steady => KeyLayout::steady(self.to),
        }
    }
}

/// How a process treats one key, by the phase its directory copy says: where the key's
/// items are written and read ([`KeyLayout`]), and which copy wins where both places hold
/// one.
///
/// While a key changes, the copy at the *target* count wins (unless marked `moved`): in
/// `writing`, plain puts go to the target without checking the previous count (so the hot
/// key's writes spread at once, instead of each checking one hot partition), and a copy
/// left at the previous count is older; in `reading`, writes still go to the previous count,
/// each replacing (and marking) a copy at the target, so the target's unmarked copy is
/// always the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyState {
    pub layout: KeyLayout,
    pub phase: Option<Phase>,
}

impl KeyState {
    /// A key the directory does not list, or one steady at its count.
    pub(crate) fn steady(n: u32) -> KeyState {
        KeyState {
            layout: KeyLayout::steady(n),
            phase: None,
        }
    }

    /// The copy at the previous place wins over the current place's (`reading`: the
    /// previous place is the target).
    pub(crate) fn prefer_previous(&self) -> bool {
        self.phase == Some(Phase::Reading)
    }

    /// A plain put checks the previous place in the same transaction (not in `writing`).
    pub(crate) fn put_checks_previous(&self) -> bool {
        self.phase != Some(Phase::Writing)
    }
}

impl KeyEntry {
    pub(crate) fn state(&self) -> KeyState {
        KeyState {
            layout: self.layout(),
            phase: (self.phase != Phase::Steady).then_some(self.phase),
        }
    }
}

/// The directory as stored: its entries and revision (0: no item yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stored {
    /// Every key listed, with its entry.
    pub entries: BTreeMap<String, KeyEntry>,
    /// What every write of the directory is conditioned on, and raises by one.
    pub revision: u64,
}

/// The primary key of `schema`'s directory item.
pub(crate) fn directory_key(schema: &EntitySchema) -> Item {
    let mut key = Item::from([(
        schema.pk.attribute.to_owned(),
        AttributeValue::S(format!("{DIRECTORY_PREFIX}{}", schema.entity)),
    )]);
    if let Some(sk) = schema.sk {
        key.insert(
            sk.attribute.to_owned(),
            AttributeValue::S(DIRECTORY_MARK.to_owned()),
        );
    }
    key
}

/// The directory item holding `stored` (its revision as given).
pub fn to_item(schema: &EntitySchema, stored: &Stored) -> Item {
    let mut item = directory_key(schema);
    if let Some(tag) = schema.tag_attribute() {
        item.insert(tag.to_owned(), AttributeValue::S(DIRECTORY_MARK.to_owned()));
    }
    let number = |n: u64| AttributeValue::N(n.to_string());
    let entries = stored
        .entries
        .iter()
        .map(|(key, entry)| {
            let fields = std::collections::HashMap::from([
                ("from".to_owned(), number(entry.from.into())),
                ("to".to_owned(), number(entry.to.into())),
                (
                    "phase".to_owned(),
                    AttributeValue::S(entry.phase.name().to_owned()),
                ),
                (
                    "since_ms".to_owned(),
                    number(entry.since.as_millis().try_into().unwrap_or(u64::MAX)),
                ),
            ]);
            (key.clone(), AttributeValue::M(fields))
        })
        .collect();
    item.insert("keys".to_owned(), AttributeValue::M(entries));
    item.insert("revision".to_owned(), number(stored.revision));
    item
}

/// Reads a directory item back.
pub(crate) fn from_item(schema: &EntitySchema, item: &Item) -> Result<Stored, LayoutError> {
    let malformed = |reason: String| LayoutError::Malformed {
        entity: schema.entity,
        partition: format!("{DIRECTORY_PREFIX}{}", schema.entity),
        reason,
    };
    let number = |value: Option<&AttributeValue>, what: &str| -> Result<u64, LayoutError> {
        value
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| malformed(format!("`{what}` is not a whole number")))
    };
    let revision = number(item.get("revision"), "revision")?;
    let mut entries = BTreeMap::new();
    let Some(keys) = item.get("keys") else {
        return Ok(Stored { entries, revision });
    };
    let keys = keys
        .as_m()
        .map_err(|_| malformed("`keys` is not a map".to_owned()))?;
    let max_n = schema.pk.shard_bound().unwrap_or(1);
    for (key, fields) in keys {
        let fields = fields
            .as_m()
            .map_err(|_| malformed(format!("the entry of `{key}` is not a map")))?;
        let count = |what: &str| -> Result<u32, LayoutError> {
            let n = number(fields.get(what), &format!("{key}.{what}"))?;
            u32::try_from(n)
                .ok()
                .filter(|n| (1..=max_n).contains(n))
                .ok_or_else(|| malformed(format!("`{key}.{what}` = {n} is not in 1..={max_n}")))
        };
        let phase = fields
            .get("phase")
            .and_then(|p| p.as_s().ok())
            .and_then(|p| Phase::parse(p))
            .ok_or_else(|| {
                malformed(format!(
                    "`{key}.phase` is not `reading`, `writing` or `steady`"
                ))
            })?;
        let entry = KeyEntry {
            from: count("from")?,
            to: count("to")?,
            phase,
            since: Duration::from_millis(number(fields.get("since_ms"), "since_ms")?),
        };
        entries.insert(key.clone(), entry);
    }
    Ok(Stored { entries, revision })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding, SortKeySchema};

    static T: KeyTemplate = KeyTemplate::new(
        "GAME#{game_id}",
        &[Segment::literal("GAME#"), Segment::field("game_id")],
    );
    static S: KeyTemplate =
        KeyTemplate::new("S#{s}", &[Segment::literal("S#"), Segment::field("s")]);
    static SCHEMA: EntitySchema = EntitySchema::new(
        "Score",
        None,
        PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 1)).with_per_key(64),
        Some(SortKeySchema::new("sk", &S)),
        &[],
    );

    #[test]
    fn a_directory_reads_back_as_written() {
        let mut stored = Stored {
            revision: 7,
            ..Stored::default()
        };
        stored.entries.insert(
            "GAME#g1".into(),
            KeyEntry {
                from: 1,
                to: 20,
                phase: Phase::Writing,
                since: Duration::from_millis(1_700_000_000_123),
            },
        );
        stored.entries.insert(
            "GAME#g2".into(),
            KeyEntry {
                from: 1,
                to: 8,
                phase: Phase::Steady,
                since: Duration::from_millis(5),
            },
        );
        let item = to_item(&SCHEMA, &stored);
        assert_eq!(from_item(&SCHEMA, &item), Ok(stored));
        assert_eq!(
            item.get("sk")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str),
            Some(DIRECTORY_MARK)
        );
    }

    #[test]
    fn a_malformed_entry_is_refused_naming_it() {
        let mut stored = Stored::default();
        stored.entries.insert(
            "GAME#g1".into(),
            KeyEntry {
                from: 1,
                to: 65,
                phase: Phase::Reading,
                since: Duration::ZERO,
            },
        );
        let item = to_item(&SCHEMA, &stored);
        let error = from_item(&SCHEMA, &item).unwrap_err().to_string();
        assert!(
            error.contains("GAME#g1.to") && error.contains("1..=64"),
            "{error}"
        );
    }
}
