//! Errors: what went wrong, and what the caller needs to recover.
//!
//! The folder holds the error type and the values its variants carry (a cursor's refusal, a
//! canceled transaction's actions, items that are not the entity's), so that it imports
//! only the key model and the item vocabulary: `access/` and `capacity/` import it, never the
//! other way round.

pub(crate) mod cursor;
pub(crate) mod foreign;
pub(crate) mod layout;
pub(crate) mod refusal;
pub(crate) mod transaction;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;

pub use crate::item::ItemKeyDisplay;

pub use crate::keys::error::KeyError;

pub use refusal::{QueryRefusal, TransactionRefusal, UpdateRefusal};

/// `std::result::Result` with [`Error`] as the error unless another is named: what the
/// crate's fallible operations return, the way `std::io::Result` and `sqlx::Result` are.
///
/// Only the name `sharded::Result` is new: `Result<T, sharded::Error>` written out is the same
/// type, and the crate has no prelude, so `Result` in your code stays std's unless you import
/// this one.
///
/// ```
/// use sharded::cursor::CursorKey;
///
/// fn cursor_key(secret: &[u8]) -> sharded::Result<CursorKey> {
///     Ok(CursorKey::new(secret)?) // a refused secret converts into `Error::CursorKey`
/// }
/// assert!(cursor_key(&[7; 32]).is_ok());
/// assert!(matches!(cursor_key(b"short"), Err(sharded::Error::CursorKey(_))));
///
/// // Another error type, named as the second parameter:
/// use sharded::bucket::{Bucket, BucketError, Granularity};
/// fn day_of(at: i64) -> sharded::Result<String, BucketError> {
///     Ok(Bucket::containing(Granularity::Day, at)?.label().to_string())
/// }
/// assert_eq!(day_of(1_763_856_000).unwrap(), "2025-11-23");
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error type of everything `sharded` does at run time.
///
/// ```
/// use sharded::Error;
/// fn handle(e: Error) -> String {
///     match e {
///         Error::Key(k) => format!("fix the key value: {k}"),
///         other => other.to_string(),
///     }
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A key could not be built or parsed.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The entity could not be converted into a DynamoDB item.
    #[error("cannot convert {entity} into a DynamoDB item: {source}")]
    Serialize {
        /// The entity type.
        entity: &'static str,
        /// What serde_dynamo reported.
        #[source]
        source: serde_dynamo::Error,
    },
    /// An item could not be read back into the entity's struct.
    #[error("cannot read the item {key} as {entity}: {source}; does the struct still match what was written?")]
    Deserialize {
        /// The entity type.
        entity: &'static str,
        /// The item's key, for finding it.
        key: ItemKeyDisplay,
        /// What serde_dynamo reported.
        #[source]
        source: serde_dynamo::Error,
    },
    /// An item of another entity (or none) was read where this entity was expected.
    #[error(
        "the item {key} is {found}, not {expected}: the `{attribute}` attribute says so; query \
         with the entity the item belongs to"
    )]
    WrongEntity {
        /// The entity that was expected.
        expected: &'static str,
        /// What the item's entity attribute holds (`no entity attribute` if missing).
        found: String,
        /// The entity attribute's name.
        attribute: &'static str,
        /// The item's key.
        key: ItemKeyDisplay,
    },
    /// A point read found, at the item's key, an item that is not the entity's: another
    /// service's record, or one whose keys are not in canonical form (see
    /// [`ForeignReason`](crate::query::ForeignReason)). "No item" would not be true, so it is
    /// an error; lists skip such items and count them instead.
    #[error(
        "the item at {key} is not a {entity}: {reason}; it was left as it is (a write through \
         the repository refuses to overwrite it)"
    )]
    ForeignItem {
        /// The entity read.
        entity: &'static str,
        /// The item's key.
        key: ItemKeyDisplay,
        /// Why it is not the entity's.
        reason: foreign::ForeignReason,
    },
    /// A struct field serialises to the same attribute name as a generated key attribute.
    #[error(
        "{entity} serialises an attribute `{attribute}` that `sharded` writes itself (a key or the \
         entity attribute); rename the field or use #[serde(rename = \"...\")]"
    )]
    AttributeClash {
        /// The entity type.
        entity: &'static str,
        /// The clashing attribute name.
        attribute: String,
    },
    /// One shard of a scatter-gather failed, so the merged answer would be incomplete.
    #[error(
        "shard {shard} of {shards} (partition key `{partition_key}`{}) failed: {source}; the query was \
         stopped rather than return results missing that shard (use `.collect_partial()` to accept \
         partial results)",
        index.map(|i| format!(", index `{i}`")).unwrap_or_default()
    )]
    ShardFailed {
        /// The shard number.
        shard: u32,
        /// The shard count of the query.
        shards: u32,
        /// The physical partition key of the failed shard.
        partition_key: String,
        /// The index queried, if any.
        index: Option<&'static str>,
        /// What went wrong, after the SDK's retries.
        #[source]
        source: Box<Error>,
    },
    /// One segment of a parallel scan failed, so the scan stopped: its answer would be
    /// missing that segment's items.
    #[error(
        "segment {segment} of {segments} of the scan of table `{table}` failed: {source}; the \
         scan was stopped, so the items it returned are not all of them: run it again (if \
         DynamoDB throttled it, with a lower `read_units_per_second` or `concurrency`)"
    )]
    SegmentFailed {
        /// The segment number (DynamoDB's `Segment`, from 0).
        segment: u32,
        /// The segment count of the scan (`TotalSegments`).
        segments: u32,
        /// The table scanned.
        table: String,
        /// What went wrong, after the SDK's retries.
        #[source]
        source: Box<Error>,
    },
    /// The query shared its answer with an identical query in flight (single flight), and
    /// that answer was the error `source`: the same error this query would most likely have
    /// met. Any caller of the shared flight may get it, the one whose requests ran included,
    /// so match on [`unshared`](Error::unshared) to see the error itself
    /// (`Error::ShardFailed`, ...). Its checks (`is_throttling`, `throttling_reasons`,
    /// `is_validation`, `outcome_unknown`) answer as `source`'s.
    #[error("{source} (the error of an identical query running at the same time, whose answer this query shared)")]
    Coalesced {
        /// The shared query's error.
        #[source]
        source: std::sync::Arc<Error>,
    },
    /// A DynamoDB request failed (after the SDK's retries).
    #[error(
        "DynamoDB {operation} on table `{table}` failed: {}",
        sdk_error_text(source)
    )]
    Dynamo {
        /// The operation (`PutItem`, `Query`, ...).
        operation: &'static str,
        /// The table.
        table: String,
        /// What DynamoDB (or the network) reported.
        #[source]
        source: Box<aws_sdk_dynamodb::Error>,
    },
    /// `put_new` found an item with the same key.
    #[error("{entity} {key} already exists; use `put` to overwrite it")]
    AlreadyExists {
        /// The entity type.
        entity: &'static str,
        /// The existing item's key.
        key: ItemKeyDisplay,
    },
    /// The item is larger than DynamoDB's 400 KB limit; it was not sent.
    #[error(
        "{entity} {key} is {size} bytes, over DynamoDB's item limit of {limit} bytes: move large \
         attributes to S3 and store a reference, or split the item"
    )]
    ItemTooLarge {
        /// The entity type.
        entity: &'static str,
        /// The item's key.
        key: ItemKeyDisplay,
        /// Its size as DynamoDB counts it.
        size: usize,
        /// The limit (409,600 bytes).
        limit: usize,
    },
    /// A key attribute value is empty; DynamoDB would reject it.
    #[error("the key attribute `{attribute}` is empty; DynamoDB keys must be non-empty")]
    EmptyKeyAttribute {
        /// The attribute.
        attribute: String,
    },
    /// A cursor was refused.
    #[error(transparent)]
    Cursor(#[from] cursor::CursorError),
    /// A secret was refused as a cursor key (shorter than 16 bytes).
    #[error(transparent)]
    CursorKey(#[from] cursor::CursorKeyError),
    /// A batch operation could not finish every item within its retry budget, or a request
    /// of it failed with an error retrying cannot fix. Nothing is lost: what was not done is
    /// in `unprocessed` and, for `BatchGetItem`, what was read is in `retrieved`.
    ///
    /// [`Error::is_throttling`] says whether DynamoDB's capacity was the cause; the message
    /// gives the advice that fits the cause.
    ///
    /// ```
    /// use sharded::{Error, Repo, ShardedEntity};
    ///
    /// async fn put_all<E: ShardedEntity>(repo: &Repo<E>, items: &[E]) -> Result<Vec<E>, Error> {
    ///     let err = match repo.batch_put(items).await {
    ///         Ok(()) => return Ok(Vec::new()),
    ///         Err(err) if err.is_throttling() => err, // worth retrying later
    ///         Err(err) => return Err(err),
    ///     };
    ///     // Hand back what was not written, to be retried later.
    ///     match err {
    ///         Error::BatchIncomplete { unprocessed, .. } => {
    ///             unprocessed.into_iter().map(E::from_item).collect()
    ///         }
    ///         other => Err(other),
    ///     }
    /// }
    /// ```
    #[error(
        "{operation} left {} item(s) unprocessed after {attempts} attempt(s){}; they are in this \
         error (`unprocessed`{}): {}",
        unprocessed.len(),
        source.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default(),
        if retrieved.is_empty() { String::new() } else {
            format!(", and the {} item(s) read are in `retrieved`", retrieved.len())
        },
        batch_advice(source.as_deref())
    )]
    BatchIncomplete {
        /// `BatchWriteItem` or `BatchGetItem`.
        operation: &'static str,
        /// Every item not processed: for puts the full item, for deletes and reads the key.
        unprocessed: Vec<crate::item::Item>,
        /// For `BatchGetItem`, every item that was read before giving up (`E::from_item`
        /// reads them); empty for writes.
        retrieved: Vec<crate::item::Item>,
        /// Attempts made for the batch that failed.
        attempts: u32,
        /// The error of the last attempt when that request failed outright; `None` when
        /// DynamoDB answered but kept returning items unprocessed (what it does when the
        /// table or a key is over its throughput).
        #[source]
        source: Option<Box<Error>>,
    },
    /// A batch write of an entity with a `#[sharded(version)]` field: `BatchWriteItem` takes no
    /// conditions, so it could neither check the version read nor bump it, and a batch would
    /// silently undo a racing writer's change. Refused before anything is sent; write such
    /// items with `Repo::put` (or several in one `Transaction`, up to 100 actions).
    #[error(
        "{operation} cannot write {entity} items: {entity} is versioned (#[sharded(version)]) \
         and a batch takes no conditions, so it would bypass the version check; write them \
         with `Repo::put`, or several at once with a `Transaction`"
    )]
    VersionedBatch {
        /// The batch operation refused (`batch_put`).
        operation: &'static str,
        /// The versioned entity.
        entity: &'static str,
    },
    /// A write was refused because the item at its key belongs to another entity: two
    /// entities' key templates produced the same physical key. Nothing was changed.
    ///
    /// `Repo::put`, `put_new` and the generated `delete` only write over an item of their own
    /// entity (a condition on the entity attribute); batch writes cannot carry conditions and
    /// are not guarded. [`TableDefinition::merge`](crate::schema::TableDefinition::merge)
    /// finds such templates before there is data.
    ///
    /// ```
    /// use sharded::Error;
    /// fn explain(e: &Error) -> Option<String> {
    ///     match e {
    ///         Error::KeyTakenByOtherEntity { other: Some(other), key, .. } => {
    ///             Some(format!("{key} belongs to a {other}"))
    ///         }
    ///         _ => None,
    ///     }
    /// }
    /// ```
    #[error(
        "{operation} of {entity} {key} was refused: the item with this key is {}, not a \
         {entity}, and nothing was changed. Two entities whose key templates can produce the \
         same physical key would overwrite each other's items: give their templates distinct \
         literal prefixes (`TableDefinition::merge` names the templates that can meet)",
        other.as_ref().map(|o| format!("a {o}")).unwrap_or_else(|| {
            "of another entity (it has no entity attribute)".to_owned()
        })
    )]
    KeyTakenByOtherEntity {
        /// `PutItem` or `DeleteItem`.
        operation: &'static str,
        /// The entity that was to be written or deleted.
        entity: &'static str,
        /// The entity of the item found at the key, from its entity attribute; `None` when it
        /// has none.
        other: Option<String>,
        /// The key.
        key: ItemKeyDisplay,
    },
    /// The query cannot be run as asked ([`QueryRefusal`] says what was refused).
    #[error("invalid query: {0}")]
    InvalidQuery(#[from] QueryRefusal),
    /// The update cannot be sent as built (nothing to change, an attribute changed twice, a
    /// GSI key that cannot be rebuilt from what the update sets); nothing was sent
    /// ([`UpdateRefusal`] says what was refused).
    #[error("invalid update: {0}")]
    InvalidUpdate(#[from] UpdateRefusal),
    /// A transaction cannot be sent as built (too many actions, too large, two actions on one
    /// key); nothing was sent ([`TransactionRefusal`] says what was refused).
    #[error("invalid transaction: {0}")]
    InvalidTransaction(#[from] TransactionRefusal),
    /// A DynamoDB request could not be built (the SDK's builder refused it); nothing was sent.
    #[error("{what} could not be built: {source}")]
    Build {
        /// What was being built.
        what: &'static str,
        /// What the SDK's builder reported.
        #[source]
        source: aws_sdk_dynamodb::error::BuildError,
    },
    /// A state only a bug in `sharded` reaches; nothing more was sent.
    #[error("{0} (a bug in sharded; please report it)")]
    Bug(String),
    /// A `ClientRequestToken` DynamoDB would refuse (empty, or over 36 characters); nothing
    /// was sent.
    #[error("invalid ClientRequestToken `{token}`: {reason}")]
    InvalidToken {
        /// The token given.
        token: String,
        /// Why it is refused, and what to use instead.
        reason: String,
    },
    /// DynamoDB refused a transaction because its `ClientRequestToken` was used, within the
    /// last 10 minutes, for a request with other parameters
    /// (`IdempotentParameterMismatchException`). This request was not applied; the earlier
    /// one with this token reached DynamoDB and may have been. Typical cause: a retry that
    /// rebuilt the transaction (new timestamps, other values) instead of sending the prepared
    /// one again. Read the items to see whether the earlier request was applied; send a new
    /// request under a new token.
    #[error(
        "the ClientRequestToken `{token}` was used in the last 10 minutes for a different request, so DynamoDB refused this one (nothing of it was applied); the earlier request with this token may have been: read the items to find out, and retry with the same prepared transaction (`Transaction::prepare`), never a rebuilt one, or with a new token for a new request"
    )]
    IdempotentParameterMismatch {
        /// The token.
        token: String,
    },
    /// An earlier send of this transaction (same `ClientRequestToken`) was still in progress
    /// when this one arrived (`TransactionInProgressException`), and it was still so after
    /// the retries. Nothing of this send was applied; the earlier one may yet be. Commit the
    /// same prepared transaction again after a moment: it is applied at most once.
    #[error(
        "a transaction with ClientRequestToken `{token}` is still in progress at DynamoDB: commit the same prepared transaction again in a moment (it applies at most once)"
    )]
    TransactionInProgress {
        /// The token.
        token: String,
    },
    /// An earlier send of this token-carrying write (the SDK's own retries included) got no
    /// answer (a timeout, a lost connection), DynamoDB's own failure, or found a send still in
    /// progress, so it may have been applied; the last send was then refused for a reason
    /// that says nothing about that one (`last`: a throttle, a conflict with another
    /// transaction). Send the identical request again: commit the same
    /// [`PreparedTransaction`](crate::transaction::PreparedTransaction), or increment with the
    /// same token. It is applied at most once; a rebuilt request under a new token may apply
    /// the change twice.
    #[error(
        "the write with ClientRequestToken `{token}` may have been applied: an earlier send got \
         no answer, and the last was refused ({last}); send the identical request again with \
         the same token (it applies at most once), never a rebuilt one under a new token"
    )]
    OutcomeUnknown {
        /// The token.
        token: String,
        /// Why the last send was refused.
        last: Box<Error>,
    },
    /// A conditional write (`put_new`, a versioned `put`, `put_if`, `delete_if`, an update
    /// with a condition or a version) whose earlier attempt got no answer (a timeout, a dropped
    /// connection, DynamoDB's own failure) was sent again by the SDK, and that attempt was
    /// refused (`last`): the earlier one may have been applied, and the refusal may be its
    /// own doing. Nothing tells which without reading: read the item and see whether it holds
    /// this write. A `put` or `put_new` whose refusal returns exactly the item it wrote is its
    /// own write, and succeeds instead.
    ///
    /// ```
    /// # fn demo(e: sharded::Error) {
    /// if let sharded::Error::WriteOutcomeUnknown { last, .. } = &e {
    ///     assert!(e.outcome_unknown());
    ///     eprintln!("may have been applied; the retry was refused: {last}");
    /// }
    /// # }
    /// ```
    #[error(
        "the {operation} of {entity} {key} may have been applied: an earlier attempt got no \
         answer, and the SDK's retry was refused ({last}); read the item to see whether it \
         holds this write"
    )]
    WriteOutcomeUnknown {
        /// The operation (`PutItem`, `DeleteItem`, `UpdateItem`).
        operation: &'static str,
        /// The entity written.
        entity: &'static str,
        /// The item's key.
        key: ItemKeyDisplay,
        /// The refusal of the last attempt, as it would be reported had no attempt been lost.
        last: Box<Error>,
    },
    /// A prepared transaction was first sent more than 9 minutes ago: DynamoDB remembers a
    /// `ClientRequestToken` for 10 minutes, so sending it again could apply it twice. Nothing
    /// was sent. Read the items to see whether the transaction was applied, and build a new
    /// one if it was not.
    #[error(
        "the transaction with ClientRequestToken `{token}` was first sent more than 9 minutes ago, and DynamoDB forgets a token after 10: sending it again could apply it twice, so it was not sent; read the items to see whether it was applied, and build a new transaction if not"
    )]
    TokenExpired {
        /// The token.
        token: String,
    },
    /// DynamoDB canceled a transaction: nothing of it was applied. `actions` lists each action
    /// DynamoDB gave a reason for, with its entity and key.
    #[error(
        "the transaction was canceled, nothing was applied: {}",
        actions.iter().map(|a| format!("action {} ({} of {} {}): {}{}", a.index, a.kind, a.entity, a.key, a.code, a.message.as_ref().map(|m| format!(" ({m})")).unwrap_or_default())).collect::<Vec<_>>().join("; ")
    )]
    TransactionCanceled {
        /// The actions that caused the cancellation.
        actions: Vec<transaction::CanceledAction>,
    },
    /// Optimistic locking: the stored `#[sharded(version)]` is not the one the write expected
    /// (another writer got there first). Nothing was written: read the item again, reapply
    /// the change, and write with the new version.
    #[error(
        "{entity} {key} is at version {}, not {expected}: another writer changed it first; \
         read it again and retry with the new version",
        found.map_or("(none: the item is gone)".to_owned(), |v| v.to_string())
    )]
    VersionConflict {
        /// The entity written.
        entity: &'static str,
        /// The item's key.
        key: ItemKeyDisplay,
        /// The version the write expected (the one read).
        expected: u64,
        /// The version stored, `None` when there is no item.
        found: Option<u64>,
    },
    /// A sharded counter's total does not fit an `i64` (its shards hold values whose sum
    /// overflows): nothing is wrapped or saturated.
    #[error(
        "the counter `{logical_key}` sums beyond i64: its shards were driven past the range; \
         read `shard_values` and reset the counter"
    )]
    CounterOverflow {
        /// The counter's logical key.
        logical_key: String,
    },
    /// A write's condition did not hold: the item is absent, of another entity, or your
    /// condition is false for it. Nothing was written.
    #[error(
        "the condition of a write to {entity} {key} did not hold ({}): nothing was written; read \
         the item again and decide",
        match current { Some(_) => "the stored item is in this error, `current`", None => "there is no such item" }
    )]
    ConditionFailed {
        /// The entity written.
        entity: &'static str,
        /// The item's key.
        key: ItemKeyDisplay,
        /// The item as stored when the condition was checked, if there was one.
        current: Option<crate::item::Item>,
    },
    /// A per-key layout could not be read or changed ([`LayoutError`](layout::LayoutError)
    /// says why, and what to do).
    #[error(transparent)]
    Layout(#[from] layout::LayoutError),
    /// `Repo::in_default_table` on an entity without `#[sharded(table = "...")]`.
    #[error("{entity} has no default table: add #[sharded(table = \"...\")] or use Repo::new(client, table)")]
    NoDefaultTable {
        /// The entity type.
        entity: &'static str,
    },
}

impl Error {
    /// The error itself, or for [`Error::Coalesced`] the error of the query whose answer this
    /// one shared (single flight): what to match on when a query's failure matters, whichever
    /// caller of a shared flight got it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use sharded::query::QueryRefusal;
    /// use sharded::Error;
    /// let refused = Error::InvalidQuery(QueryRefusal::EmptyPage);
    /// let shared = Error::Coalesced { source: Arc::new(refused) };
    /// assert!(matches!(shared.unshared(), Error::InvalidQuery(QueryRefusal::EmptyPage)));
    /// ```
    pub fn unshared(&self) -> &Error {
        match self {
            Error::Coalesced { source } => source.unshared(),
            other => other,
        }
    }

    /// Whether DynamoDB refused the request for capacity (a hot key, a throttled index, a
    /// request rate limit), here or in the shard or scan segment that failed.
    ///
    /// ```
    /// let e = sharded::Error::InvalidQuery(sharded::query::QueryRefusal::EmptyPage);
    /// assert!(!e.is_throttling());
    /// ```
    pub fn is_throttling(&self) -> bool {
        !self.throttling_reasons().is_empty()
    }

    /// The throttling reasons DynamoDB gave (`TableWriteKeyRangeThroughputExceeded`, ...),
    /// each with the index it names, if any. A throttle without a reason is reported as its
    /// exception name.
    ///
    /// ```
    /// let e = sharded::Error::InvalidQuery(sharded::query::QueryRefusal::EmptyPage);
    /// assert!(e.throttling_reasons().is_empty());
    /// ```
    pub fn throttling_reasons(&self) -> Vec<(String, Option<String>)> {
        use aws_sdk_dynamodb::Error as Sdk;
        match self {
            Error::ShardFailed { source, .. } | Error::SegmentFailed { source, .. } => {
                source.throttling_reasons()
            }
            Error::Coalesced { source } => source.throttling_reasons(),
            Error::OutcomeUnknown { last, .. } => last.throttling_reasons(),
            Error::BatchIncomplete {
                source: Some(source),
                ..
            } => source.throttling_reasons(),
            // DynamoDB answered every attempt and returned items unprocessed: what it does
            // when the table or a key is over its throughput.
            Error::BatchIncomplete { source: None, .. } => {
                vec![(UNPROCESSED_ITEMS.to_owned(), None)]
            }
            Error::Dynamo { source, .. } => match source.as_ref() {
                // DynamoDB can name its reasons on each of its three throttling exceptions.
                Sdk::ProvisionedThroughputExceededException(e) => {
                    named_reasons(e.throttling_reasons(), "ProvisionedThroughputExceeded")
                }
                Sdk::ThrottlingException(e) => {
                    named_reasons(e.throttling_reasons(), "ThrottlingException")
                }
                Sdk::RequestLimitExceeded(e) => {
                    named_reasons(e.throttling_reasons(), "RequestLimitExceeded")
                }
                // A transaction canceled (after its resends) because an item was throttled.
                Sdk::TransactionCanceledException(e) => e
                    .cancellation_reasons()
                    .iter()
                    .filter_map(|r| r.code())
                    .filter(|code| {
                        matches!(*code, "ThrottlingError" | "ProvisionedThroughputExceeded")
                    })
                    .map(|code| (code.to_owned(), None))
                    .collect(),
                other => match other.code() {
                    Some(code) if is_throttling_code(code) => vec![(code.to_owned(), None)],
                    _ => Vec::new(),
                },
            },
            // A transaction whose actions were throttled.
            Error::TransactionCanceled { actions } => actions
                .iter()
                .filter(|a| {
                    matches!(
                        a.code.as_str(),
                        "ThrottlingError" | "ProvisionedThroughputExceeded"
                    )
                })
                .map(|a| (a.code.clone(), None))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether DynamoDB refused the request as invalid (`ValidationException`): an error of
    /// the request itself, never of one shard, scan segment or attempt.
    ///
    /// ```
    /// let e = sharded::Error::InvalidQuery(sharded::query::QueryRefusal::EmptyPage);
    /// assert!(!e.is_validation());
    /// ```
    pub fn is_validation(&self) -> bool {
        match self {
            Error::ShardFailed { source, .. } | Error::SegmentFailed { source, .. } => {
                source.is_validation()
            }
            Error::BatchIncomplete {
                source: Some(source),
                ..
            } => source.is_validation(),
            Error::Coalesced { source } => source.is_validation(),
            Error::Dynamo { source, .. } => source.code() == Some(VALIDATION_ERROR_CODE),
            _ => false,
        }
    }

    /// Whether the error leaves unknown whether a write was applied: its answer never came (a
    /// timeout, a dropped connection), DynamoDB failed on its side (a 5xx), or an earlier send
    /// with the same token was still in progress, in the last send or in any send before it
    /// ([`Error::OutcomeUnknown`]: a lost answer followed by throttles is still unknown), or a
    /// conditional write's retry was refused after an attempt without answer
    /// ([`Error::WriteOutcomeUnknown`]). For a token-carrying write (a
    /// [`PreparedTransaction`](crate::transaction::PreparedTransaction), a counter increment with a token)
    /// sending the identical request again settles it: it is applied at most once.
    ///
    /// ```
    /// let e = sharded::Error::TransactionInProgress { token: "t1".into() };
    /// assert!(e.outcome_unknown());
    /// assert!(!sharded::Error::InvalidQuery(sharded::query::QueryRefusal::EmptyPage).outcome_unknown());
    /// ```
    pub fn outcome_unknown(&self) -> bool {
        match self {
            Error::Coalesced { source } => source.outcome_unknown(),
            Error::TransactionInProgress { .. }
            | Error::OutcomeUnknown { .. }
            | Error::WriteOutcomeUnknown { .. } => true,
            Error::Dynamo { source, .. } => match source.code() {
                None => true,
                Some(code) => matches!(code, "InternalServerError" | "ServiceUnavailable"),
            },
            _ => false,
        }
    }

    /// Whether DynamoDB answered that the table (or index) does not exist.
    pub(crate) fn is_missing_table(&self) -> bool {
        match self {
            Error::ShardFailed { source, .. } => source.is_missing_table(),
            Error::BatchIncomplete {
                source: Some(source),
                ..
            } => source.is_missing_table(),
            Error::Dynamo { source, .. } => matches!(
                source.as_ref(),
                aws_sdk_dynamodb::Error::ResourceNotFoundException(_)
            ),
            _ => false,
        }
    }

    /// What a failed SDK builder becomes: [`Error::Build`] of `what`.
    pub(crate) fn build(
        what: &'static str,
    ) -> impl FnOnce(aws_sdk_dynamodb::error::BuildError) -> Error {
        move |source| Error::Build { what, source }
    }

    /// Wraps an SDK error of `operation` on `table`.
    pub(crate) fn dynamo<E>(operation: &'static str, table: &str, err: E) -> Error
    where
        aws_sdk_dynamodb::Error: From<E>,
    {
        Error::Dynamo {
            operation,
            table: table.to_owned(),
            source: Box::new(aws_sdk_dynamodb::Error::from(err)),
        }
    }
}

/// The throttling reason of a batch whose items DynamoDB kept returning unprocessed.
pub(crate) const UNPROCESSED_ITEMS: &str = "UnprocessedItems";

/// What to do about an unfinished batch, by what stopped it.
fn batch_advice(source: Option<&Error>) -> &'static str {
    match source {
        None => {
            "DynamoDB kept returning them unprocessed, which it does when the table or a key is \
             over its throughput: retry them later, raise the retry budget \
             (`Repo::with_batch_retry`), give the table more capacity, or spread hot keys over \
             more shards"
        }
        Some(e) if e.is_throttling() => {
            "DynamoDB throttled the requests: retry them later, give the table more capacity, or \
             spread hot keys over more shards"
        }
        Some(e) if e.is_validation() => {
            "DynamoDB refused the request as invalid: fix the request; retrying it will fail the \
             same way"
        }
        Some(e) if e.is_missing_table() => {
            "the table does not exist: create it (`Repo::create_table`) or check the table name; \
             retrying will not help until it exists"
        }
        Some(_) => "retry them later",
    }
}

/// The error codes with which DynamoDB refuses a request for capacity: a hot key or index
/// (`ProvisionedThroughputExceededException`), the account's request rate
/// (`RequestLimitExceeded`), or the service's own throttling (`ThrottlingException`).
pub(crate) const THROTTLING_ERROR_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "ThrottlingException",
];

/// An SDK error as DynamoDB worded it: `Code: message` when both are known (the SDK prints an
/// error it has no variant for, such as `ValidationException`, as "unhandled error" without
/// the message), otherwise the SDK's own text and its causes (a timeout or a dropped
/// connection is otherwise just "unhandled error").
fn sdk_error_text(error: &aws_sdk_dynamodb::Error) -> String {
    match (error.code(), error.message()) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        _ => {
            let mut text = error.to_string();
            let mut cause = std::error::Error::source(error);
            while let Some(e) = cause {
                text.push_str(": ");
                text.push_str(&e.to_string());
                cause = e.source();
            }
            text
        }
    }
}

/// Each `ThrottlingReasons` entry as its reason and the index its resource names, if any;
/// `fallback` (the exception's name) when DynamoDB gave none.
fn named_reasons(
    reasons: &[aws_sdk_dynamodb::types::ThrottlingReason],
    fallback: &str,
) -> Vec<(String, Option<String>)> {
    if reasons.is_empty() {
        return vec![(fallback.to_owned(), None)];
    }
    reasons
        .iter()
        .map(|r| {
            let index = r
                .resource()
                .and_then(|arn| arn.split_once("/index/"))
                .map(|(_, index)| index.to_owned());
            (r.reason().unwrap_or(fallback).to_owned(), index)
        })
        .collect()
}

/// The error code with which DynamoDB refuses an invalid request (a malformed expression, a
/// key condition it cannot evaluate, a bad `ExclusiveStartKey`).
pub(crate) const VALIDATION_ERROR_CODE: &str = "ValidationException";

/// Whether an error `code` is one of the [`THROTTLING_ERROR_CODES`].
pub(crate) fn is_throttling_code(code: &str) -> bool {
    THROTTLING_ERROR_CODES.contains(&code)
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::types::error::{InternalServerError, ThrottlingException};

    use super::*;

    fn dynamo(source: aws_sdk_dynamodb::Error) -> Error {
        Error::Dynamo {
            operation: "Query",
            table: "t".to_owned(),
            source: Box::new(source),
        }
    }

    fn meta(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder().code(code).build()
    }

    #[test]
    fn throttling_codes_are_reasons_other_codes_are_not() {
        let throttled = dynamo(aws_sdk_dynamodb::Error::ThrottlingException(
            ThrottlingException::builder()
                .meta(meta("ThrottlingException"))
                .build(),
        ));
        assert_eq!(
            throttled.throttling_reasons(),
            vec![("ThrottlingException".to_owned(), None)]
        );
        let failed = dynamo(aws_sdk_dynamodb::Error::InternalServerError(
            InternalServerError::builder()
                .message("x")
                .meta(meta("InternalServerError"))
                .build(),
        ));
        assert!(!failed.is_throttling());
        assert!(THROTTLING_ERROR_CODES.iter().all(|c| is_throttling_code(c)));
    }

    #[test]
    fn every_throttling_exception_names_its_reasons_and_throttled_transactions_count() {
        use aws_sdk_dynamodb::types::{CancellationReason, ThrottlingReason};
        let reason = ThrottlingReason::builder()
            .reason("TableWriteMaxOnDemandThroughputExceeded")
            .resource("arn:aws:dynamodb:us-east-1:1:table/t")
            .build();
        let throttled = dynamo(aws_sdk_dynamodb::Error::ThrottlingException(
            ThrottlingException::builder()
                .throttling_reasons(reason)
                .meta(meta("ThrottlingException"))
                .build(),
        ));
        assert_eq!(
            throttled.throttling_reasons(),
            vec![("TableWriteMaxOnDemandThroughputExceeded".to_owned(), None)]
        );
        let canceled = dynamo(aws_sdk_dynamodb::Error::TransactionCanceledException(
            aws_sdk_dynamodb::types::error::TransactionCanceledException::builder()
                .cancellation_reasons(CancellationReason::builder().code("None").build())
                .cancellation_reasons(
                    CancellationReason::builder()
                        .code("ThrottlingError")
                        .build(),
                )
                .meta(meta("TransactionCanceledException"))
                .build(),
        ));
        assert!(canceled.is_throttling());
        let typed = Error::TransactionCanceled {
            actions: vec![transaction::CanceledAction {
                index: 0,
                kind: "put",
                entity: "E",
                key: ItemKeyDisplay::default(),
                code: "ThrottlingError".to_owned(),
                message: None,
                current: None,
            }],
        };
        assert!(typed.is_throttling());
    }

    #[test]
    fn a_failed_scan_segment_is_throttled_when_its_request_was() {
        let segment = |source| Error::SegmentFailed {
            segment: 3,
            segments: 8,
            table: "t".to_owned(),
            source: Box::new(dynamo(source)),
        };
        let throttled = segment(aws_sdk_dynamodb::Error::ThrottlingException(
            ThrottlingException::builder()
                .meta(meta("ThrottlingException"))
                .build(),
        ));
        assert!(throttled.is_throttling());
        assert!(!throttled.is_validation());
        let text = throttled.to_string();
        assert!(
            text.starts_with("segment 3 of 8 of the scan of table `t` failed"),
            "{text}"
        );
        assert!(text.contains("run it again"), "{text}");
    }
}
