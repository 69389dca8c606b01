//! One action of a canceled transaction: what `Error::TransactionCanceled` carries, beside the
//! error type so that it imports nothing from `access/`.

use crate::item::{Item, ItemKeyDisplay};

/// One action of a failed transaction, as DynamoDB reported it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CanceledAction {
    /// The action's position in the transaction (0-based, in the order it was sent: during a
    /// layout transition an action's delete or check of its item's previous place follows it).
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
