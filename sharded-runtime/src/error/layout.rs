//! Why a per-key layout could not be read or changed.

use std::time::Duration;

/// What stopped a read or a step of a [per-key layout](crate::schema::PerKeyLayout): each
/// variant names the entity and key, and what to do.
///
/// ```
/// use std::time::Duration;
/// use sharded::layouts::LayoutError;
/// let e = LayoutError::TooEarly { entity: "Score", key: "GAME#g1".into(), step: "write", wait: Duration::from_secs(3) };
/// assert!(e.to_string().contains("wait 3s"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The entity's partition key is not declared per key (`max_n` on `#[pk]`).
    #[error(
        "{entity} has one layout for every key: declare `max_n` on its #[pk] to change keys one \
         by one (see the guide, \"Shard only what is hot\")"
    )]
    NotPerKey {
        /// The entity.
        entity: &'static str,
    },
    /// The text given is no logical key of the entity's template.
    #[error(
        "`{key}` is no logical key of {entity} (template `{template}`, without the shard): {reason}"
    )]
    NotALogicalKey {
        /// The entity.
        entity: &'static str,
        /// The text given.
        key: String,
        /// The template.
        template: &'static str,
        /// Why it does not parse.
        reason: String,
    },
    /// The shard count asked for is outside `1..=max_n`.
    #[error(
        "{entity} keys have 1 to {max_n} shards (`max_n` on #[pk]); {n} was asked for `{key}`"
    )]
    OutOfRange {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
        /// The count asked for.
        n: u32,
        /// The declared maximum.
        max_n: u32,
    },
    /// The key is already at that count, or already changing.
    #[error("`{key}` of {entity} cannot start a change: {reason}")]
    CannotBegin {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
        /// Its state.
        reason: String,
    },
    /// The step asked for does not follow the key's phase.
    #[error("`{key}` of {entity} is {phase}: the step `{step}` does not follow; {hint}")]
    WrongPhase {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
        /// The key's phase (`steady`, `reading`, `writing`).
        phase: &'static str,
        /// The step asked for.
        step: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// A process may still use the layout before the last step: the next one must wait.
    #[error(
        "`{key}` of {entity}: the step `{step}` must wait {wait:?} more, until every process's \
         lease on the layout directory has run out since the last step (lease + margin)"
    )]
    TooEarly {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
        /// The step asked for.
        step: &'static str,
        /// How long to wait.
        wait: Duration,
    },
    /// Items of the key are still at their previous place.
    #[error(
        "`{key}` of {entity} still has {remaining} item(s) at their previous place: run the \
         key's migration (`migrate`) until it reports none, then finish"
    )]
    ItemsRemain {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
        /// How many.
        remaining: u64,
    },
    /// Items of the key cannot move: their new place holds an item that is not the entity's.
    #[error(
        "`{key}` of {entity}: {blocked} item(s) cannot move to their new place, which holds an \
         item that is not a {entity} (another service wrote it); move or delete those, then run \
         the key's migration again"
    )]
    Blocked {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
        /// How many items are blocked.
        blocked: u64,
    },
    /// A builder placed an item under a layout that changed before it was sent.
    #[error(
        "the layout of `{key}` of {entity} changed while this request was built (a step of a \
         change ran, or this process had not read the layout directory yet): nothing was sent; \
         build it again"
    )]
    Changed {
        /// The entity.
        entity: &'static str,
        /// The key.
        key: String,
    },
    /// Another change of the entity's directory was written since it was read.
    #[error(
        "the layout directory of {entity} changed while this step was written (another change \
         ran at the same time): nothing was written; read it again and retry"
    )]
    Conflict {
        /// The entity.
        entity: &'static str,
    },
    /// The directory item does not read as a layout directory.
    #[error(
        "the layout directory of {entity} (partition `{partition}`) is malformed: {reason}; \
         restore it or delete it (every key then reads at the declared `n`)"
    )]
    Malformed {
        /// The entity.
        entity: &'static str,
        /// The directory item's partition key.
        partition: String,
        /// What is wrong.
        reason: String,
    },
}
