//! What is left to migrate, counted without moving anything.

use std::fmt;

use sharded_runtime::query::Foreign;

/// What is left to migrate, counted without moving anything
/// ([`Migration::remaining`](super::Migration::remaining)): the entity's items not at
/// their current place, and the items in its partitions that are not the entity's (which a run
/// leaves where they are), with the reasons. Compares with a number: `remaining == 0`.
///
/// ```no_run
/// use sharded::migrate::Migrate;
/// # async fn demo<E: sharded::ShardedEntity>(repo: &sharded::Repo<E>) -> Result<(), sharded::migrate::MigrateError> {
/// let left = repo.migration_remaining().await?;
/// if left == 0 {
///     println!("migrated; {} items that are not the entity's stay where they are", left.left_alone.count);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Remaining {
    /// The entity's items not at their current place: what a run would move.
    pub items: u64,
    /// The items in the entity's partitions that are not the entity's, with the first few
    /// keys and reasons: what a run leaves alone and lists.
    pub left_alone: Foreign,
}

impl PartialEq<u64> for Remaining {
    fn eq(&self, items: &u64) -> bool {
        self.items == *items
    }
}

impl fmt::Display for Remaining {
    /// `12 items to move (3 not the entity's, left alone)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} items to move", self.items)?;
        if self.left_alone.count > 0 {
            write!(
                f,
                " ({} not the entity's, left alone)",
                self.left_alone.count
            )?;
        }
        Ok(())
    }
}
