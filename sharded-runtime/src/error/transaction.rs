//! One action of a canceled transaction: what `Error::TransactionCanceled` carries, beside the
//! error type so that it imports nothing from `access/`.

use crate::item::{Item, ItemKeyDisplay};

/// One action of a failed transaction, as DynamoDB reported it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CanceledAction {
    /// The position of the call that added the action (0-based, in the order the calls were
    /// made: `put`, `update`, `move_item`, ... each count once). One call can send several
    /// actions (`move_item`'s delete and put; during a layout transition, the delete or check
    /// of an item's previous place): they all report their call's position, and `kind` and
    /// `key` say which one failed.
    pub index: usize,
    /// What the action did: `put`, `update`, `delete` or `check`.
    pub kind: &'static str,
    /// The entity it wrote.
    pub entity: &'static str,
    /// Its item's key.
    pub key: ItemKeyDisplay,
    /// DynamoDB's reason: `ConditionalCheckFailed`, `TransactionConflict`,
    /// `ProvisionedThroughputExceeded`, `ValidationError`, ...
    pub code: String,
    /// DynamoDB's message, if any.
    pub message: Option<String>,
    /// The item as stored when a condition failed, if DynamoDB returned it.
    pub current: Option<Item>,
}
