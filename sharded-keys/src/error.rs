//! Errors of the key model: a key that cannot be built or parsed.

/// A key could not be built or parsed.
///
/// Every variant names the entity, the key attribute and, where there is one, the field, so
/// the message points at the value to fix.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::{KeyError, ShardedEntity};
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "USER#{id}")]
/// struct User { id: String }
///
/// let err = User::pk("").unwrap_err();
/// assert!(matches!(err, KeyError::EmptyValue { field: "id", .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A key field holds an empty string.
    #[error(
        "`{entity}.{field}` is empty, but it is part of the `{attribute}` key: DynamoDB keys cannot \
         hold empty values and an empty field would make the key ambiguous; give `{field}` a \
         non-empty value"
    )]
    EmptyValue {
        /// The entity type.
        entity: &'static str,
        /// The key attribute being built.
        attribute: &'static str,
        /// The empty field.
        field: &'static str,
    },
    /// A key field's value has no key encoding (e.g. a timestamp outside the years 0..=9999).
    #[error("`{entity}.{field}` cannot be written into the `{attribute}` key: {reason}")]
    Unencodable {
        /// The entity type.
        entity: &'static str,
        /// The key attribute being built.
        attribute: &'static str,
        /// The field.
        field: &'static str,
        /// Why the value has no encoding.
        reason: String,
    },
    /// A shard number outside `0..n` was asked for.
    #[error(
        "shard {shard} does not exist for the `{attribute}` key of {entity}: shards are 0..{n}"
    )]
    ShardOutOfRange {
        /// The entity type.
        entity: &'static str,
        /// The key attribute.
        attribute: &'static str,
        /// The shard asked for.
        shard: u32,
        /// The shard count.
        n: u32,
    },
    /// A physical key does not match its template.
    #[error("`{key}` is not a `{attribute}` key of {entity} (template `{template}`): {reason}")]
    Malformed {
        /// The entity type.
        entity: &'static str,
        /// The key attribute.
        attribute: &'static str,
        /// The template the key should match.
        template: &'static str,
        /// The key as given.
        key: String,
        /// What did not match.
        reason: String,
    },
    /// A key is longer than DynamoDB allows: 2,048 bytes for a partition key, 1,024 for a
    /// sort key (UTF-8 bytes of the value), on the table and on every index. Refused before
    /// anything is sent.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use sharded::{Error, KeyError, ShardedEntity};
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "DOC#{id}")]
    /// #[sk(template = "PATH#{path}")]
    /// struct Doc { id: String, path: String }
    ///
    /// let doc = Doc { id: "d1".into(), path: "a".repeat(2_000) };
    /// match doc.to_item() {
    ///     Err(Error::Key(KeyError::KeyTooLong { attribute, size, limit, .. })) => {
    ///         assert_eq!((attribute, size, limit), ("sk", 2_005, 1_024));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    #[error(
        "the `{attribute}` key of {entity} is {size} bytes, over DynamoDB's limit of {limit} \
         bytes for this key, so nothing was sent: shorten the values of its fields (a long value \
         can be stored as an attribute, with a short id or hash of it in the key)"
    )]
    KeyTooLong {
        /// The entity type.
        entity: &'static str,
        /// The key attribute (`pk`, `sk`, `gsi1pk`, ...).
        attribute: &'static str,
        /// The key's length in UTF-8 bytes.
        size: usize,
        /// DynamoDB's limit for this key: [`MAX_PARTITION_KEY_BYTES`] or
        /// [`MAX_SORT_KEY_BYTES`].
        ///
        /// [`MAX_PARTITION_KEY_BYTES`]: crate::schema::MAX_PARTITION_KEY_BYTES
        /// [`MAX_SORT_KEY_BYTES`]: crate::schema::MAX_SORT_KEY_BYTES
        limit: usize,
    },
    /// A typed sort-key range whose lower bound is above its upper bound
    /// (`Score::sk_sort().between(200, 100)`).
    #[error(
        "the `{attribute}` range of {entity} on `{field}` has its lower bound above its upper \
         bound: give `between` the smaller value first"
    )]
    InvertedRange {
        /// The entity type.
        entity: &'static str,
        /// The sort-key attribute.
        attribute: &'static str,
        /// The ranged field.
        field: &'static str,
    },
    /// A typed sort-key condition was given to a query of another key: a base-table condition
    /// (`Score::sk_*`) to a GSI query, or the reverse.
    #[error(
        "a condition on `{given}` was given to a query of {entity} whose sort key is `{expected}`: \
         use the `{expected}_*` condition functions for this query"
    )]
    WrongSortKey {
        /// The entity type.
        entity: &'static str,
        /// The sort-key attribute of the query (empty when it has no sort key).
        expected: &'static str,
        /// The attribute the condition was built for.
        given: &'static str,
    },
    /// A multi-attribute sort condition (`Score::gsi2_sort()`) given to a query with nothing
    /// in it.
    #[error(
        "the sort condition on `{attribute}` holds no term: add `.eq(..)` or a range \
         (`lt`, `le`, `gt`, `ge`, `between`, `begins_with`), or leave `.sk(..)` out to read \
         every item of the partition"
    )]
    EmptySortCondition {
        /// The first sort attribute.
        attribute: &'static str,
    },
    /// A shard suffix declaration that could not be parsed back (see
    /// [`ShardSuffix`](crate::ShardSuffix)).
    ///
    /// ```
    /// use sharded::{keys::ShardSuffix, KeyError};
    /// assert!(matches!(ShardSuffix::parse("_{shard}"), Err(KeyError::InvalidSuffix { .. })));
    /// ```
    #[error("the shard suffix `{suffix}` is refused: {reason}")]
    InvalidSuffix {
        /// The suffix as given.
        suffix: &'static str,
        /// Why, and what to write instead.
        reason: &'static str,
    },
    /// Generated code passed the wrong number of values for a template. This is a bug in
    /// `sharded`, not in your code: please report it.
    #[error("internal error: wrong number of values for the `{attribute}` template `{template}` of {entity}")]
    Arity {
        /// The entity type.
        entity: &'static str,
        /// The key attribute.
        attribute: &'static str,
        /// The template.
        template: &'static str,
    },
}
