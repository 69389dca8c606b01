//! The items a read met in an entity's partitions that are not the entity's: why each is
//! not, and the tally a read hands back. The rule that decides is `access/recognize`; these
//! are the values answers, reports and errors carry, so the error type needs nothing from
//! `access/`.

use std::fmt;

use crate::item::ItemKeyDisplay;

/// Why an item read in an entity's partitions is not the entity's.
///
/// ```
/// use sharded::query::{Answer, ForeignReason};
///
/// // What a dashboard shows of the records a query skipped.
/// fn explain<T>(answer: &Answer<T>) -> Vec<String> {
///     answer
///         .foreign
///         .examples
///         .iter()
///         .map(|skipped| match &skipped.reason {
///             ForeignReason::Untagged { attribute, .. } => {
///                 format!("{}: written without `{attribute}`", skipped.key)
///             }
///             other => format!("{}: {} ({other})", skipped.key, other.label()),
///         })
///         .collect()
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForeignReason {
    /// It carries no tag, in a table whose items are recognised by their tag: another
    /// service's record. Declare `recognize = "tag_or_key"` on the table if that service
    /// writes the entity's items untagged.
    #[non_exhaustive]
    Untagged {
        /// The tag attribute it lacks.
        attribute: &'static str,
    },
    /// Its tag is not a string.
    #[non_exhaustive]
    BadTag {
        /// The tag attribute.
        attribute: &'static str,
    },
    /// Its keys are not the entity's templates: another kind of record.
    #[non_exhaustive]
    OtherKeys {
        /// What did not match.
        reason: String,
    },
    /// Its keys have the entity's shape but a field is not in its canonical form (a score
    /// padded to 10 digits instead of 20, a raw space in a name): no key the entity builds
    /// is this one, so `get` could never find it. The migration re-keys such items only when
    /// asked (`Migration::rekey_non_canonical`).
    #[non_exhaustive]
    NotCanonical {
        /// The field and the form expected.
        reason: String,
    },
    /// Its keys are the entity's, but the item does not read as the entity, or its fields
    /// give other keys than the ones it is stored under.
    #[non_exhaustive]
    Unreadable {
        /// Why.
        reason: String,
    },
}

impl ForeignReason {
    /// A short name of the reason: the `reason` label of the `sharded.foreign_items` metric
    /// (`untagged`, `bad_tag`, `other_keys`, `not_canonical`, `unreadable`).
    pub fn label(&self) -> &'static str {
        match self {
            ForeignReason::Untagged { .. } => "untagged",
            ForeignReason::BadTag { .. } => "bad_tag",
            ForeignReason::OtherKeys { .. } => "other_keys",
            ForeignReason::NotCanonical { .. } => "not_canonical",
            ForeignReason::Unreadable { .. } => "unreadable",
        }
    }
}

impl fmt::Display for ForeignReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForeignReason::Untagged { attribute } => write!(
                f,
                "it has no `{attribute}` tag, and the table's items are recognised by their tag \
                 (declare `recognize = \"tag_or_key\"` on the table if other services write the \
                 entity's items untagged)"
            ),
            ForeignReason::BadTag { attribute } => {
                write!(f, "its `{attribute}` tag is not a string")
            }
            ForeignReason::OtherKeys { reason } => {
                write!(f, "its keys are not the entity's: {reason}")
            }
            ForeignReason::NotCanonical { reason } => write!(
                f,
                "its keys have the entity's shape but are not in canonical form: {reason}"
            ),
            ForeignReason::Unreadable { reason } => {
                write!(
                    f,
                    "its keys are the entity's but it cannot be read as it: {reason}"
                )
            }
        }
    }
}

/// One foreign item: its key and why it is not the entity's.
///
/// ```
/// # fn show(f: &sharded::query::ForeignItem) -> String {
/// format!("{} left alone: {}", f.key, f.reason)
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForeignItem {
    /// Where it is.
    pub key: ItemKeyDisplay,
    /// Why it is not the entity's.
    pub reason: ForeignReason,
}

/// How many examples a [`Foreign`] keeps; more are counted, not kept.
pub const MAX_FOREIGN_EXAMPLES: usize = 10;

/// The foreign items a read met and skipped: how many, and the first
/// [`MAX_FOREIGN_EXAMPLES`] with their keys and reasons.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// # #[sk(template = "SCORE#{score}#{player_id}")]
/// # struct Score { game_id: String, player_id: String, score: u64 }
/// # async fn demo(repo: &Repo<Score>) -> Result<(), sharded::Error> {
/// let answer = Score::query(repo, "g1").collect_answer().await?;
/// if answer.foreign.count > 0 {
///     for item in &answer.foreign.examples {
///         eprintln!("skipped {}: {}", item.key, item.reason);
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Foreign {
    /// Foreign items met.
    pub count: u64,
    /// The first of them.
    pub examples: Vec<ForeignItem>,
}

impl Foreign {
    /// Counts one more, keeping it as an example while there is room.
    pub(crate) fn add(&mut self, item: ForeignItem) {
        self.count += 1;
        if self.examples.len() < MAX_FOREIGN_EXAMPLES {
            self.examples.push(item);
        }
    }

    /// Adds another tally's counts and examples.
    pub(crate) fn merge(&mut self, other: Foreign) {
        self.count += other.count;
        let room = MAX_FOREIGN_EXAMPLES.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.into_iter().take(room));
    }
}
