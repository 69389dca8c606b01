//! What a query, an update or a transaction refused before anything was sent: one enum per
//! [`Error`] variant that carries a refusal, each refusal with what a caller can match on.

use super::Error;
use crate::item::{Item, ItemKeyDisplay};
use aws_sdk_dynamodb::types::AttributeValue;

/// Why a query (or a scan, a counter, a read's bound) cannot run as asked: the payload of
/// [`Error::InvalidQuery`]. Its text is the advice; its fields say what was refused.
///
/// ```
/// use sharded::query::QueryRefusal;
/// use sharded::Error;
///
/// fn missing_index(e: &Error) -> Option<u8> {
///     match e {
///         Error::InvalidQuery(QueryRefusal::NoGsi { number, .. }) => Some(*number),
///         _ => None,
///     }
/// }
/// let e = Error::InvalidQuery(QueryRefusal::NoGsi { entity: "Score", number: 2 });
/// assert_eq!(missing_index(&e), Some(2));
/// assert_eq!(e.to_string(), "invalid query: Score has no gsi2");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryRefusal {
    /// The entity declares no GSI of this number.
    #[error("{entity} has no gsi{number}")]
    NoGsi {
        /// The entity queried.
        entity: &'static str,
        /// The GSI number asked for.
        number: u8,
    },
    /// A range query of keys that have no time bucket followed by a sort key on its field.
    #[error("a range query needs a partition key with a time bucket and a sort key that starts with its field; `{attribute}` of {entity} is `{template}`")]
    NotBucketed {
        /// The entity queried.
        entity: &'static str,
        /// The partition key attribute (of the table or the GSI).
        attribute: &'static str,
        /// Its template, as declared.
        template: &'static str,
    },
    /// A range query whose `from` is after its `to`.
    #[error("range of `{field}` from `{from}` to `{to}`: `from` is after `to`, so no item could match; swap the bounds")]
    BoundsReversed {
        /// The bucketed field.
        field: &'static str,
        /// The encoded `from` bound.
        from: String,
        /// The encoded `to` bound.
        to: String,
    },
    /// A range query of an entity whose layout is decided per key (`max_n`).
    #[error("{entity} has a layout per key (`max_n`): a range query over time buckets reads many keys, each under its own layout, which is not supported; query each bucket's key with `query`")]
    PerKeyRange {
        /// The entity queried.
        entity: &'static str,
    },
    /// A collection query of a GSI that a member does not write with the same partition layout.
    #[error("a collection query of gsi{number} needs every member to write gsi{number} with the same partition key template and shard count, and `{member}` does not: query the base table, or give every member the same #[gsi{number}(pk = ..)]")]
    CollectionGsi {
        /// The GSI number.
        number: u8,
        /// The member that does not share it.
        member: &'static str,
    },
    /// `consistent_read(true)` on a GSI query.
    #[error("consistent reads are not available on a GSI (`{index}`); DynamoDB indexes are eventually consistent: drop consistent_read(true) or query the base table")]
    ConsistentGsi {
        /// The index name.
        index: &'static str,
    },
    /// A GSI queried with a key of the other kind (a string key for a multi-attribute one,
    /// or the other way round).
    #[error(
        "gsi{number} of {entity} is keyed {keyed}: query it with the generated `query_gsi{number}`"
    )]
    GsiKeyedOtherwise {
        /// The entity queried.
        entity: &'static str,
        /// The GSI number.
        number: u8,
        /// How the GSI is keyed.
        keyed: String,
    },
    /// A condition's value could not be converted into a DynamoDB attribute.
    #[error("a condition's value cannot be stored as a DynamoDB attribute: {reason}")]
    ConditionValue {
        /// What serde_dynamo reported.
        reason: String,
    },
    /// A bound item of an entity the query does not read.
    #[error("a bound item of `{entity}` given to a query of {}: give an item the query reads, or a whole key", .entities.join(", "))]
    BoundOfOtherEntity {
        /// The bound item's entity.
        entity: &'static str,
        /// The entities the query reads.
        entities: Vec<&'static str>,
    },
    /// A bound item that could not be converted into a DynamoDB item.
    #[error("the bound item of `{entity}` could not be written: {reason}")]
    BoundUnwritable {
        /// The bound item's entity.
        entity: &'static str,
        /// What serde_dynamo reported.
        reason: String,
    },
    /// A bound item without the queried index's sort attribute (a sparse index).
    #[error("the bound item of `{entity}` has no `{attribute}`: it is not in the queried index (a sparse index); give a whole key instead")]
    BoundNotInIndex {
        /// The bound item's entity.
        entity: &'static str,
        /// The sort attribute it lacks.
        attribute: &'static str,
    },
    /// A bound on an index without a sort key.
    #[error("{} has no sort key on the queried index: a bound orders nothing there", .entities.join(", "))]
    NoSortKey {
        /// The entities the query reads.
        entities: Vec<&'static str>,
    },
    /// `page(0, ..)`: its cursor could never advance.
    #[error("page(0, ..): a page must hold at least one item, or its cursor could never advance")]
    EmptyPage,
    /// A scan's `segments(n)` outside DynamoDB's range.
    #[error("segments({segments}): DynamoDB splits a scan into 1 to {max} segments; choose a count in that range (a few per unit of concurrency is plenty)")]
    ScanSegments {
        /// The count given.
        segments: u32,
        /// DynamoDB's most.
        max: u32,
    },
    /// A scan's `concurrency(0)`.
    #[error("concurrency(0): no segment could ever be read; use at least 1")]
    ScanConcurrency,
    /// A scan's `page_size(p)` outside DynamoDB's `Limit` range.
    #[error("page_size({page_size}): DynamoDB's Limit is 1 to {max}; use a size in that range, or leave it unset for DynamoDB's 1 MB pages")]
    ScanPageSize {
        /// The size given.
        page_size: u32,
        /// DynamoDB's most.
        max: i32,
    },
    /// A `read_units_per_second(r)` that is not a positive, finite number.
    #[error("read_units_per_second({rate}): a rate must be a positive, finite number of read units per second; leave it unset for no limit")]
    ReadRate {
        /// The rate given.
        rate: f64,
    },
    /// DynamoDB kept the keys of a transition check unprocessed (throttled).
    #[error("DynamoDB left {unprocessed} keys of a transition check unprocessed after {rounds} rounds (throttled): retry the query later, or give the table more read capacity")]
    TransitionCheckThrottled {
        /// The keys left.
        unprocessed: usize,
        /// The rounds tried.
        rounds: u32,
    },
    /// The task of one shard's request stopped (panicked or was canceled) before answering.
    #[error("the request of shard {shard} stopped before answering: {reason}")]
    ShardStopped {
        /// The shard.
        shard: usize,
        /// What the runtime reported.
        reason: String,
    },
    /// A counter of no shards, or more than the most.
    #[error("a counter needs 1 to {max} shards, not {n}")]
    CounterShards {
        /// The count given.
        n: u32,
        /// The most.
        max: u32,
    },
    /// A counter shard whose number is not a whole number.
    #[error("counter shard {shard} holds `{value}`, not a whole number")]
    CounterNotWhole {
        /// The shard.
        shard: usize,
        /// The number it holds.
        value: String,
    },
    /// A counter shard whose attribute is not a number.
    #[error("counter shard {shard} attribute `{attribute}` is not a number: {value:?}")]
    CounterNotNumber {
        /// The shard.
        shard: usize,
        /// The counter's attribute.
        attribute: String,
        /// What it holds.
        value: AttributeValue,
    },
}

/// Why an update (or a put's version) cannot be sent as built, or a move was refused: the
/// payload of [`Error::InvalidUpdate`].
///
/// ```
/// use sharded::update::UpdateRefusal;
/// use sharded::Error;
///
/// fn twice(e: &Error) -> Option<&str> {
///     match e {
///         Error::InvalidUpdate(UpdateRefusal::ChangedTwice { attribute, .. }) => Some(attribute),
///         _ => None,
///     }
/// }
/// let e = Error::InvalidUpdate(UpdateRefusal::ChangedTwice { entity: "Wallet", attribute: "coins" });
/// assert_eq!(twice(&e), Some("coins"));
/// assert!(e.to_string().starts_with("invalid update: `coins` is changed twice"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateRefusal {
    /// A key field's value that cannot be stored, for a GSI key's rewrite.
    #[error("{entity}.{attribute} cannot be stored as a DynamoDB attribute: {source}")]
    Unstorable {
        /// The entity.
        entity: &'static str,
        /// The field's attribute.
        attribute: &'static str,
        /// What serde_dynamo reported.
        #[source]
        source: serde_dynamo::Error,
    },
    /// An update changes part of a GSI key without setting the rest of it.
    #[error("this update changes `{}`, part of {gsi}'s key, which is built from `{attribute}` too: set `{attribute}` in the same update with `set` (a GSI key is rebuilt from known values, so its fields must all be set together, and not by `add` or `remove`)", .changed.join("`, `"))]
    GsiFieldNotSet {
        /// The attributes of the key the update changes.
        changed: Vec<&'static str>,
        /// The GSI.
        gsi: &'static str,
        /// The attribute it does not set.
        attribute: &'static str,
    },
    /// A GSI key field that could not be read back from the update's values.
    #[error("`{attribute}` could not be read back for {gsi}'s key: {source}")]
    GsiFieldUnreadable {
        /// The GSI.
        gsi: &'static str,
        /// The field's attribute.
        attribute: &'static str,
        /// What serde_dynamo reported.
        #[source]
        source: serde_dynamo::Error,
    },
    /// A put whose version is not a whole number from 0.
    #[error("{entity}.{attribute} is the version and must be a whole number from 0")]
    VersionNotWhole {
        /// The entity.
        entity: &'static str,
        /// The version attribute.
        attribute: &'static str,
    },
    /// A put whose version is `u64::MAX`.
    #[error("{entity}.{attribute} cannot grow past u64")]
    VersionOverflow {
        /// The entity.
        entity: &'static str,
        /// The version attribute.
        attribute: &'static str,
    },
    /// An update that changes the version itself.
    #[error("`{attribute}` is {entity}'s version, which every update adds 1 to: leave it out, and use `if_version` to require the one you read")]
    VersionChanged {
        /// The entity.
        entity: &'static str,
        /// The version attribute.
        attribute: &'static str,
    },
    /// An update of no operation.
    #[error("an update of {entity} needs at least one operation (set, add, append, remove)")]
    NoOperation {
        /// The entity.
        entity: &'static str,
    },
    /// An update that changes one attribute twice.
    #[error("`{attribute}` is changed twice in one update of {entity}; DynamoDB allows one operation per attribute: combine them")]
    ChangedTwice {
        /// The entity.
        entity: &'static str,
        /// The attribute.
        attribute: &'static str,
    },
    /// An update's value that cannot be stored.
    #[error("the value for `{attribute}` cannot be stored as a DynamoDB attribute: {reason}")]
    ValueUnstorable {
        /// The attribute.
        attribute: &'static str,
        /// What serde_dynamo reported.
        reason: String,
    },
    /// `send_returning` got no item back.
    #[error("DynamoDB returned no item after the update")]
    NoItemReturned,
    /// An item at its previous place kept changing while a write moved it (a transition).
    #[error("the {entity} item at {at} kept changing while it was moved to its current place ({attempts} attempts); retry the write")]
    KeptChangingWhileMoved {
        /// The entity.
        entity: &'static str,
        /// The previous place's partition key.
        at: String,
        /// The attempts made.
        attempts: usize,
    },
    /// An item at its previous place kept changing while a put superseded it (a transition).
    #[error("the {entity} item at {at} kept changing while a put superseded it ({attempts} attempts); retry the put")]
    KeptChangingWhileSuperseded {
        /// The entity.
        entity: &'static str,
        /// The previous place's partition key.
        at: String,
        /// The attempts made.
        attempts: usize,
    },
    /// A move's transaction canceled for reasons no outcome explains; nothing was written.
    #[error("moving the {entity} item {key} to its current place was refused by DynamoDB for reasons {codes:?}{}; nothing was written", .message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default())]
    MoveRefused {
        /// The entity.
        entity: &'static str,
        /// The item's old key.
        key: ItemKeyDisplay,
        /// DynamoDB's cancellation codes.
        codes: Vec<String>,
        /// DynamoDB's message, if any.
        message: Option<String>,
    },
    /// A migration deleted an old copy that had changed since it was read, and could not put
    /// it back: the item is here, to be written back.
    #[error("the migration deleted an old copy that had gained an attribute after it was read, and could not put it back ({source}): the item was {item:?}; write it back yourself")]
    PutBackFailed {
        /// The deleted item.
        item: Item,
        /// Why the put failed.
        #[source]
        source: Box<Error>,
    },
}

/// Why a transaction (or a transactional read) cannot be sent as built: the payload of
/// [`Error::InvalidTransaction`]. Nothing was sent.
///
/// ```
/// use sharded::transaction::TransactionRefusal;
/// use sharded::Error;
///
/// fn split_into(e: &Error) -> Option<usize> {
///     match e {
///         Error::InvalidTransaction(TransactionRefusal::TooManyActions { actions, max }) => {
///             Some(actions.div_ceil(*max))
///         }
///         _ => None,
///     }
/// }
/// let e = Error::InvalidTransaction(TransactionRefusal::TooManyActions { actions: 150, max: 100 });
/// assert_eq!(split_into(&e), Some(2));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TransactionRefusal {
    /// A transaction of no action.
    #[error("a transaction needs at least one action")]
    Empty,
    /// More actions than DynamoDB takes in one transaction.
    #[error("{actions} actions, and DynamoDB takes at most {max} in one transaction (during a layout transition, a write's delete of its previous place counts too): split it (each part is then atomic on its own)")]
    TooManyActions {
        /// The actions built (with the deletes of previous places).
        actions: usize,
        /// DynamoDB's most.
        max: usize,
    },
    /// More bytes than DynamoDB takes in one transaction.
    #[error("{bytes} bytes of items, keys, expressions and their values, and DynamoDB takes at most {max} in one transaction: split it, or store large values elsewhere")]
    TooLarge {
        /// The transaction's size.
        bytes: usize,
        /// DynamoDB's most.
        max: usize,
    },
    /// Two actions on one item.
    #[error("action {index} ({kind} of {entity} {key}) is on a key an earlier action already uses; DynamoDB allows one action per item in a transaction: combine them")]
    SameKey {
        /// The later action's index, as added.
        index: usize,
        /// Its kind (`put`, `update`, `delete`, `check`).
        kind: &'static str,
        /// Its entity.
        entity: &'static str,
        /// The key.
        key: ItemKeyDisplay,
    },
    /// One item added twice to a transactional read.
    #[error("the item {entity} {pk:?} {sk:?} is read twice; DynamoDB allows one get per item in a transactional read: add each key once")]
    ReadTwice {
        /// The entity.
        entity: &'static str,
        /// The partition key.
        pk: String,
        /// The sort key, if any.
        sk: Option<String>,
    },
    /// A transactional read of no get, or more than DynamoDB takes.
    #[error("a transactional read takes 1 to {max} gets, not {gets} (during a layout transition an item's previous place is a get too)")]
    Gets {
        /// The gets built.
        gets: usize,
        /// DynamoDB's most.
        max: usize,
    },
}
