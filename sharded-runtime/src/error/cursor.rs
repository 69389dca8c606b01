//! Why a cursor was refused: the error `Error::Cursor` carries, beside the error type so that
//! it imports nothing from `access/` (the cursor codec, which raises it, is `access/engine/cursor.rs`;
//! the wire codec every token shares is the leaf `token`).

use crate::token::Malformed;

/// The cursor format version written and read by a query.
pub(crate) const VERSION: u8 = 4;
/// The cursor format version written and read by a range query.
pub(crate) const RANGE_VERSION: u8 = 5;
/// The shortest secret a [`CursorKey`](crate::cursor::CursorKey) accepts, in bytes.
pub(crate) const MIN_KEY_LEN: usize = 16;

/// Why a cursor was refused. Nothing is guessed: a refused cursor never yields a page.
///
/// ```
/// use sharded::cursor::CursorError;
/// let e = CursorError::ShardCount { cursor: 10, query: 20 };
/// assert!(e.to_string().contains("10 shards"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CursorError {
    /// Not a cursor at all: not base64url, truncated, or trailing bytes.
    #[error(
        "the cursor is not a valid token ({0}); pass back the cursor exactly as a page returned it"
    )]
    Malformed(String),
    /// A cursor format this version does not read: versions 1 to 3 were written by earlier
    /// releases, whose cursors were bound to a part of the query only.
    ///
    /// ```
    /// let e = sharded::cursor::CursorError::Version(2);
    /// assert!(e.to_string().contains("restart the listing"));
    /// ```
    #[error(
        "the cursor has format version {0}, this version of sharded reads version {VERSION} \
         (and {RANGE_VERSION} for range queries): it was issued by another release of sharded \
         (versions 1 to 3 by earlier ones); restart the listing"
    )]
    Version(u8),
    /// The checksum of a plain cursor does not match: the token was changed.
    #[error("the cursor was modified or corrupted (checksum mismatch); pass it back unchanged")]
    Tampered,
    /// A sealed cursor whose seal does not verify under the query's [`CursorKey`](crate::cursor::CursorKey): it was
    /// modified, or sealed with another key.
    ///
    /// ```
    /// assert!(sharded::cursor::CursorError::Unverified.to_string().contains("another key"));
    /// ```
    #[error(
        "the sealed cursor does not verify: it was modified, or sealed with another key \
         (was the key rotated? accept the old key too: `CursorKey::accepting`); pass it back \
         unchanged to the service that issued it, or restart the listing"
    )]
    Unverified,
    /// A plain cursor given to a query that accepts only sealed cursors
    /// ([`Query::seal_cursors`](crate::Query::seal_cursors)).
    ///
    /// ```
    /// assert!(sharded::cursor::CursorError::NotSealed.to_string().contains("not sealed"));
    /// ```
    #[error("the query accepts only sealed cursors and this cursor is not sealed; pass back a cursor this service issued")]
    NotSealed,
    /// A sealed cursor given to a query without a [`CursorKey`](crate::cursor::CursorKey) to verify it.
    ///
    /// ```
    /// assert!(sharded::cursor::CursorError::Sealed.to_string().contains("seal_cursors"));
    /// ```
    #[error("the cursor is sealed but the query has no key to verify it; run the query with `.seal_cursors(&key)`")]
    Sealed,
    /// The cursor was made for a different shard count.
    #[error("the cursor was made for {cursor} shards but the query has {query} (was `n` changed?); restart the listing")]
    ShardCount {
        /// Shards in the cursor.
        cursor: u32,
        /// Shards in the query.
        query: u32,
    },
    /// The cursor was issued by this query under another layout of its key: `n` changed, or
    /// a transition (`previous_n`, `legacy`) was declared or has ended since. Its positions
    /// name partitions of that layout, so it is refused rather than continued.
    ///
    /// ```
    /// let e = sharded::cursor::CursorError::Layout { issued: "G#{g}#<shard 0..10>".into(), current: "G#{g}#<shard 0..20>, previously #<shard 0..10>".into() };
    /// assert!(e.to_string().contains("restart the listing"));
    /// ```
    #[error("the cursor was issued under the layout `{issued}` and the query now reads `{current}` (the key's layout changed); restart the listing")]
    Layout {
        /// The layout the cursor was issued under.
        issued: String,
        /// The layout the query reads now.
        current: String,
    },
    /// The cursor belongs to another query: anything that shapes the answer differs (see
    /// [`Cursor`](crate::Cursor), "The query description").
    #[error(
        "the cursor belongs to another query (entity, index, partition key, sort-key condition, \
         filter, projection, order or expired-items mode differ, or the key's layout changed: a \
         transition was declared or ended); use it only with the query that returned it, or \
         restart the listing"
    )]
    WrongQuery,
}

/// Why a secret was refused as a [`CursorKey`](crate::cursor::CursorKey): it is shorter than 16
/// bytes, too short to keep anyone from guessing it.
///
/// ```
/// let e = sharded::cursor::CursorKey::new(b"short").unwrap_err();
/// assert_eq!(e.len(), 5);
/// assert!(e.to_string().contains("at least 16 bytes"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a cursor key needs at least {MIN_KEY_LEN} bytes of secret and this one has {len}: \
     generate 32 random bytes (`openssl rand -base64 32`, decoded), keep them in your secrets \
     manager and pass the bytes to `CursorKey::new`"
)]
pub struct CursorKeyError {
    len: usize,
}

/// A cursor whose bytes the wire codec could not read is malformed.
impl From<Malformed> for CursorError {
    fn from(malformed: Malformed) -> Self {
        CursorError::Malformed(malformed.0)
    }
}

impl CursorKeyError {
    pub(crate) fn new(len: usize) -> Self {
        CursorKeyError { len }
    }

    /// The length of the refused secret, in bytes.
    ///
    /// ```
    /// assert_eq!(sharded::cursor::CursorKey::new([0u8; 3]).unwrap_err().len(), 3);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}
