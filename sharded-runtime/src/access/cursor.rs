//! The cross-shard cursor: where a scatter-gather query stopped, in terms of what the caller
//! has already seen.
//!
//! The byte format, and what the cursor does and does not guarantee, are documented on
//! [`Cursor`], where users of the crate read them; sealing on [`CursorKey`].
//!
//! # Resuming
//!
//! A cursor holds the *merge position* (the sort key and shard of the last item emitted) and,
//! per shard, the key of the last item emitted from that shard (not the last one DynamoDB
//! returned: buffered items that were not emitted are fetched again). The engine resumes each
//! shard after its own last emitted item and never emits an item behind the merge position
//! (see `scatter`), so resuming yields exactly the next items: no duplicate, no gap, at any
//! page size, and items written behind the position meanwhile are never emitted late.
//!
//! Nothing the caller was not shown is recorded, so a resumed page must ask every unfinished
//! shard for its next item: the real cost is documented on [`Query::page`](crate::Query::page).

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{KeyInit, Mac};

use crate::keys::hash::fnv1a64;

/// The format version written and read.
const VERSION: u8 = 2;
/// The format of a range query's cursor: version 2 with the bucket label after the
/// fingerprint (see [`RangeQuery::page`](crate::RangeQuery::page)).
const RANGE_VERSION: u8 = 3;
/// The seal byte of a cursor checked by FNV-1a only.
const PLAIN: u8 = 0;
/// The seal byte of a cursor sealed with HMAC-SHA256.
const SEALED: u8 = 1;
/// Bytes of an HMAC-SHA256 tag.
const TAG_LEN: usize = 32;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A position in a scatter-gather query, to resume from with
/// [`Query::page`](crate::access::query::Query::page).
///
/// It is a plain string, safe in URLs. Treat it as opaque, but know that whoever holds it can
/// read it, and, unless it is sealed with a [`CursorKey`], edit it (read the last sections
/// before handing it to untrusted clients).
///
/// ```
/// use sharded::Cursor;
/// let c: Cursor = "Ag".parse().unwrap(); // parsing only stores the text; checks happen on use
/// assert_eq!(c.as_str(), "Ag");
/// ```
///
/// # Format (version 2)
///
/// The token is base64url without padding (RFC 4648 section 5, alphabet `A-Z a-z 0-9 - _`, no
/// `=`) of the bytes below. Every multi-byte integer is unsigned and **big-endian** (network
/// byte order).
///
/// ```text
/// u8      version = 2
/// u8      seal: 0 = plain (FNV-1a checksum at the end), 1 = sealed (HMAC-SHA256 at the end)
/// u64 BE  query fingerprint (see below)
/// u32 BE  partition count n: the shards read (during a transition, the current layout's, then the previous layout's other keys)
/// u8      merge position: 0 = no item emitted yet, 1 = after the last emitted item:
///           u32 BE  the shard that item came from
///           u8      0 = the queried key has no sort key, 1 = a value follows: its sort key
/// n x     shard entry, shard 0 first:
///           u8 state: 0 = not started, 1 = finished (see below), 2 = after an item
///           state 2 only:
///             u8      k = number of position values (see below)
///             k x     value
/// trailer seal 0: u64 BE FNV-1a 64 (sharded::hash::fnv1a64) of every byte above
///         seal 1: 32 bytes HMAC-SHA256, under the CursorKey, of every byte above
///
/// value = u8 type (0 = S, 1 = N, 2 = B), u32 BE byte length, the bytes
///         (S: UTF-8 text; N: DynamoDB's decimal text, UTF-8; B: the raw bytes)
/// ```
///
/// A shard is never recorded as finished: one that ended on a page is recorded where it
/// stands (after its last returned item, or not started), and the next page reads it again,
/// so an item written or moved there since, ahead of the merge position, is returned. State 1
/// is written only by earlier versions; it is still read, as "from the shard's start, every
/// item at or behind the merge position already returned".
///
/// The merge position is the sort key (of the queried index) of the last item the page
/// returned, and its shard. The position values of a shard are the key attributes DynamoDB
/// needs to resume after the last item the merge returned *from that shard*, in this order:
///
/// - a base table query: the sort key (`sk`); none when the entity has no sort key;
/// - a GSI query: the index sort key (`gsiNsk`, if the index has one), then the base table's
///   partition key (`pk`, with its shard) and sort key (`sk`, if any).
///
/// Every value in a cursor is a key of an item the query already returned: nothing about
/// items not yet shown (version 1 also held each shard's *next* sort key; version 1 cursors
/// are refused with [`CursorError::Version`]).
///
/// The fingerprint is FNV-1a 64 over six parts, each written as its `u32 BE` byte length and
/// its UTF-8 bytes: the entity name, the index name (empty for the base table), the logical
/// partition key (`GAME#g1`), a text form of the sort-key condition (also the implicit
/// `begins_with` on the sort key's literal prefix; empty when there is none), `asc` or
/// `desc`, and the transition the query reads (empty for a steady layout; during a
/// transition `GAME#{game_id}#<shard 0..20>, previously #<shard 0..10>`). A cursor is
/// accepted only by a query whose fingerprint, shard count and number of position values
/// match. A cursor of the same query issued under another layout of the key (before a
/// transition was declared, during it, or after it ended) is recognised and refused with
/// [`CursorError::Layout`]: its shard positions name another set of partitions, so it is
/// never continued.
///
/// # Range cursors (version 3)
///
/// A [`RangeQuery`](crate::RangeQuery) over time buckets pages with the same cursor, one
/// token across buckets and shards. Its layout is version 2's with `version = 3` and, right
/// after the fingerprint, the bucket the query stands in:
///
/// ```text
/// u32 BE  label length, then the label's UTF-8 bytes (`2026-11-22`)
/// ```
///
/// The rest (shard count, merge position, shard entries, trailer) is the position inside that
/// bucket, as above. The fingerprint of a range cursor is FNV-1a 64 over, as length-prefixed
/// parts: `range`, the entity name, the index name, the logical partition key before and
/// after the bucket label, the granularity (`day`), the encoded `from` and `to` bounds, and
/// `asc` or `desc`. A range cursor given to a plain query, or the other way round, is
/// [`CursorError::WrongQuery`], as is a label outside the query's range.
///
/// The size grows with the shard count: 23 bytes (47 sealed), plus the merge position
/// (`5 + 5 + key bytes`), plus per shard 1 byte (not started) or
/// `2 + 5 x values + key bytes`, then a third more for base64. Ten shards of a leaderboard
/// (`SCORE#<20 digits>#<player>` sort keys) make a token of roughly 700 bytes.
///
/// # A plain cursor: integrity-checked, not authenticated
///
/// The checksum and the fingerprint are plain FNV-1a: there is no key and no secret. They
/// catch accidents (a truncated or corrupted token, a token pasted into another query,
/// another entity or another shard count: [`CursorError`]). They do **not** stop someone who
/// means to: anyone can decode a plain cursor, edit it, and compute a new valid checksum.
///
/// What holds even for a cursor a client forged:
///
/// - Every request goes to the query's own partitions: the partition key of each shard
///   request is rebuilt from the query (the logical key the server passed to `query`), never
///   read from the cursor; the cursor only supplies the rest of `ExclusiveStartKey`.
/// - Every request keeps the query's own sort-key condition and its `_entity` filter, so no
///   item of another partition key, another entity, or outside the condition comes back.
/// - Decoding and comparing never panic, whatever the bytes (numbers with absurd exponents
///   included).
///
/// What a forged cursor can do: choose where each shard resumes and where the merge stands,
/// so a client can skip items or see items again, and it can make DynamoDB refuse the request
/// (an invalid `ExclusiveStartKey` is an error). It never sees an item the same query could
/// not return.
///
/// What a cursor reveals: it is readable by anyone who holds it, sealed or not. It contains
/// the sort key of the last item returned, and per shard the key values of the last item
/// returned from that shard (for a GSI query, that item's base table keys, too): only keys of
/// items the caller has already been shown.
///
/// So hand a plain cursor to an untrusted client only if the client may run that query
/// anyway; decide who may read what from the request's own credentials, never from the
/// cursor.
///
/// # A sealed cursor: authenticated
///
/// A query run with [`Query::seal_cursors`](crate::Query::seal_cursors) returns cursors
/// sealed with HMAC-SHA256 under a [`CursorKey`] your service keeps, and accepts only cursors
/// sealed with that key (checked in constant time, before anything else in the token is
/// read). A client can then neither edit a cursor nor make one: every cursor it hands back is
/// one your service issued for that same query. Sealing does not encrypt (the keys listed
/// above stay readable) and does not expire: an old cursor of the same query stays valid, so
/// a client can page again from any point it was given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor(String);

impl Cursor {
    /// The token text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Cursor {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Cursor(s.to_owned()))
    }
}

impl From<String> for Cursor {
    fn from(s: String) -> Self {
        Cursor(s)
    }
}

/// A secret key that seals cursors (HMAC-SHA256), for cursors handed to untrusted clients as
/// API page tokens.
///
/// Give it to [`Query::seal_cursors`](crate::Query::seal_cursors): the query's pages then
/// carry sealed cursors, and only cursors sealed with the same key are accepted. Use at least
/// 32 random bytes, keep them out of the code (a secrets manager), and use the same key on
/// every instance that serves the listing. Rotating the key invalidates the cursors sealed
/// with the old one ([`CursorError::Unverified`]): clients restart their listing.
///
/// The key is never printed: its `Debug` form is `CursorKey(..)`.
///
/// ```
/// use sharded::CursorKey;
/// let key = CursorKey::new(b"32 random bytes from your secrets manager");
/// assert_eq!(format!("{key:?}"), "CursorKey(..)");
/// ```
#[derive(Clone)]
pub struct CursorKey(HmacSha256);

impl CursorKey {
    /// A key from secret bytes (any length; HMAC hashes keys longer than 64 bytes).
    ///
    /// ```
    /// let key = sharded::CursorKey::new([7u8; 32]);
    /// # let _ = key;
    /// ```
    pub fn new(secret: impl AsRef<[u8]>) -> CursorKey {
        // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
        match HmacSha256::new_from_slice(secret.as_ref()) {
            Ok(mac) => CursorKey(mac),
            Err(_) => unreachable!("HMAC takes keys of any length"),
        }
    }

    fn tag(&self, bytes: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = self.0.clone();
        mac.update(bytes);
        mac.finalize().into_bytes().into()
    }

    /// Constant-time check of `tag` over `bytes`.
    fn verify(&self, bytes: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.0.clone();
        mac.update(bytes);
        mac.verify_slice(tag).is_ok()
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

/// Why a cursor was refused. Nothing is guessed: a refused cursor never yields a page.
///
/// ```
/// use sharded::CursorError;
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
    /// A cursor format this version does not read.
    #[error("the cursor has format version {0}, this version of sharded reads version {VERSION}; restart the listing")]
    Version(u8),
    /// The checksum of a plain cursor does not match: the token was changed.
    #[error("the cursor was modified or corrupted (checksum mismatch); pass it back unchanged")]
    Tampered,
    /// A sealed cursor whose seal does not verify under the query's [`CursorKey`]: it was
    /// modified, or sealed with another key.
    ///
    /// ```
    /// assert!(sharded::CursorError::Unverified.to_string().contains("another key"));
    /// ```
    #[error(
        "the sealed cursor does not verify: it was modified, or sealed with another key          (was the key rotated?); pass it back unchanged to the service that issued it, or restart the listing"
    )]
    Unverified,
    /// A plain cursor given to a query that accepts only sealed cursors
    /// ([`Query::seal_cursors`](crate::Query::seal_cursors)).
    ///
    /// ```
    /// assert!(sharded::CursorError::NotSealed.to_string().contains("not sealed"));
    /// ```
    #[error("the query accepts only sealed cursors and this cursor is not sealed; pass back a cursor this service issued")]
    NotSealed,
    /// A sealed cursor given to a query without a [`CursorKey`] to verify it.
    ///
    /// ```
    /// assert!(sharded::CursorError::Sealed.to_string().contains("seal_cursors"));
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
    /// let e = sharded::CursorError::Layout { issued: "G#{g}#<shard 0..10>".into(), current: "G#{g}#<shard 0..20>, previously #<shard 0..10>".into() };
    /// assert!(e.to_string().contains("restart the listing"));
    /// ```
    #[error("the cursor was issued under the layout `{issued}` and the query now reads `{current}` (the key's layout changed); restart the listing")]
    Layout {
        /// The layout the cursor was issued under.
        issued: String,
        /// The layout the query reads now.
        current: String,
    },
    /// The cursor belongs to another query.
    #[error(
        "the cursor belongs to another query (entity, index, partition key, sort-key condition or \
         order differ, or the key's layout changed: a transition was declared or ended); use it \
         only with the query that returned it, or restart the listing"
    )]
    WrongQuery,
}

/// Where one shard stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ShardPosition {
    /// Nothing emitted from it yet: start at the beginning (or at the merge position).
    Start,
    /// Every item was emitted, as earlier versions recorded a finished shard (never written
    /// now: a finished shard is recorded where it stands). Read as the shard's start, with
    /// every item at or behind the merge position, its own shard's included, already emitted.
    Done,
    /// Continue after the last emitted item, with these key values (in the engine's key order).
    After(Vec<AttributeValue>),
}

/// The last item emitted by the merge: the global position every shard resumes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MergePosition {
    /// The shard it came from (ties on the sort key go to the lower shard).
    pub shard: u32,
    /// Its sort key; `None` when the queried key schema has no sort key.
    pub sort: Option<AttributeValue>,
}

/// Everything a cursor records: the merge position and each shard's own position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resume {
    pub merge: Option<MergePosition>,
    pub shards: Vec<ShardPosition>,
}

impl Resume {
    /// A fresh query: nothing emitted, every shard at its start.
    pub fn start(shards: usize) -> Resume {
        Resume {
            merge: None,
            shards: vec![ShardPosition::Start; shards],
        }
    }
}

/// A hash identifying a query, so a cursor cannot be replayed against another one.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fingerprint(Vec<u8>);

impl Fingerprint {
    /// An empty fingerprint.
    pub fn new() -> Self {
        Fingerprint::default()
    }

    /// Adds one length-prefixed part (so `("ab", "c")` and `("a", "bc")` differ).
    pub fn part(mut self, text: &str) -> Self {
        self.0.extend_from_slice(&(text.len() as u32).to_be_bytes());
        self.0.extend_from_slice(text.as_bytes());
        self
    }

    /// The 64-bit fingerprint.
    pub fn finish(&self) -> u64 {
        fnv1a64(&self.0)
    }
}

/// Encodes a resume point into a cursor, sealed with `key` when one is given.
pub(crate) fn encode(fingerprint: u64, resume: &Resume, key: Option<&CursorKey>) -> Cursor {
    encode_with(VERSION, fingerprint, None, resume, key)
}

/// Encodes a range query's resume point: the bucket `label` it stands in and the position of
/// that bucket's scatter-gather (format version 3).
pub(crate) fn encode_labeled(
    fingerprint: u64,
    label: &str,
    resume: &Resume,
    key: Option<&CursorKey>,
) -> Cursor {
    encode_with(RANGE_VERSION, fingerprint, Some(label), resume, key)
}

fn encode_with(
    version: u8,
    fingerprint: u64,
    label: Option<&str>,
    resume: &Resume,
    key: Option<&CursorKey>,
) -> Cursor {
    let mut out = Vec::with_capacity(64 + resume.shards.len() * 48);
    out.push(version);
    out.push(if key.is_some() { SEALED } else { PLAIN });
    out.extend_from_slice(&fingerprint.to_be_bytes());
    if let Some(label) = label {
        out.extend_from_slice(&(label.len() as u32).to_be_bytes());
        out.extend_from_slice(label.as_bytes());
    }
    out.extend_from_slice(&(resume.shards.len() as u32).to_be_bytes());
    match &resume.merge {
        None => out.push(0),
        Some(merge) => {
            out.push(1);
            out.extend_from_slice(&merge.shard.to_be_bytes());
            match &merge.sort {
                None => out.push(0),
                Some(value) => {
                    out.push(1);
                    write_value(&mut out, value);
                }
            }
        }
    }
    for position in &resume.shards {
        match position {
            ShardPosition::Start => out.push(0),
            ShardPosition::Done => out.push(1),
            ShardPosition::After(key) => {
                out.push(2);
                out.push(key.len() as u8);
                for value in key {
                    write_value(&mut out, value);
                }
            }
        }
    }
    match key {
        Some(key) => {
            let tag = key.tag(&out);
            out.extend_from_slice(&tag);
        }
        None => {
            let checksum = fnv1a64(&out);
            out.extend_from_slice(&checksum.to_be_bytes());
        }
    }
    Cursor(URL_SAFE_NO_PAD.encode(out))
}

fn write_value(out: &mut Vec<u8>, value: &AttributeValue) {
    let (tag, bytes): (u8, &[u8]) = match value {
        AttributeValue::N(n) => (1, n.as_bytes()),
        AttributeValue::B(b) => (2, b.as_ref()),
        AttributeValue::S(s) => (0, s.as_bytes()),
        // Key attributes are S, N or B; anything else cannot come from a key.
        _ => (0, b""),
    };
    out.push(tag);
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Decodes a cursor, checking its seal (when the query has a `key`, only sealed cursors are
/// accepted; without one, only plain cursors), then its fingerprint and shard count.
pub(crate) fn decode(
    cursor: &Cursor,
    fingerprint: u64,
    shards: u32,
    key: Option<&CursorKey>,
) -> Result<Resume, CursorError> {
    decode_with(VERSION, cursor, fingerprint, shards, key).map(|(_, resume)| resume)
}

/// Decodes a range query's cursor ([`encode_labeled`]): the bucket label and the position in
/// that bucket. A plain query's cursor is another query's ([`CursorError::WrongQuery`]).
pub(crate) fn decode_labeled(
    cursor: &Cursor,
    fingerprint: u64,
    shards: u32,
    key: Option<&CursorKey>,
) -> Result<(String, Resume), CursorError> {
    let (label, resume) = decode_with(RANGE_VERSION, cursor, fingerprint, shards, key)?;
    Ok((label.unwrap_or_default(), resume))
}

fn decode_with(
    expected: u8,
    cursor: &Cursor,
    fingerprint: u64,
    shards: u32,
    key: Option<&CursorKey>,
) -> Result<(Option<String>, Resume), CursorError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor.0.as_bytes())
        .map_err(|e| CursorError::Malformed(format!("not base64url: {e}")))?;
    let Some(&version) = bytes.first() else {
        return Err(CursorError::Malformed("empty".into()));
    };
    if version != expected {
        // A range query's cursor given to a plain query, or the other way round.
        if matches!(version, VERSION | RANGE_VERSION) {
            return Err(CursorError::WrongQuery);
        }
        return Err(CursorError::Version(version));
    }
    let body = match (bytes.get(1).copied(), key) {
        (Some(PLAIN), None) => {
            if bytes.len() < 2 + 8 + 4 + 1 + 8 {
                return Err(CursorError::Malformed("too short".into()));
            }
            let (body, checksum) = bytes.split_at(bytes.len() - 8);
            let checksum = u64::from_be_bytes(checksum.try_into().unwrap_or_default());
            if fnv1a64(body) != checksum {
                return Err(CursorError::Tampered);
            }
            body
        }
        (Some(SEALED), Some(key)) => {
            if bytes.len() < 2 + TAG_LEN {
                return Err(CursorError::Unverified);
            }
            let (body, tag) = bytes.split_at(bytes.len() - TAG_LEN);
            if !key.verify(body, tag) {
                return Err(CursorError::Unverified);
            }
            body
        }
        (Some(PLAIN), Some(_)) => return Err(CursorError::NotSealed),
        (Some(SEALED), None) => return Err(CursorError::Sealed),
        (Some(other), _) => return Err(CursorError::Malformed(format!("unknown seal {other}"))),
        (None, _) => return Err(CursorError::Malformed("too short".into())),
    };
    let mut reader = Reader { bytes: &body[2..] };
    let found_fingerprint = reader.u64()?;
    // The query first: a cursor of another entity, index, key or order is that, whatever its
    // shard count. Only a cursor of this very query with another count means `n` changed.
    if found_fingerprint != fingerprint {
        return Err(CursorError::WrongQuery);
    }
    let label = match version {
        RANGE_VERSION => {
            let len = reader.u32()? as usize;
            let raw = reader.take(len)?;
            Some(
                String::from_utf8(raw.to_vec())
                    .map_err(|_| CursorError::Malformed("bucket label is not UTF-8".into()))?,
            )
        }
        _ => None,
    };
    let count = reader.u32()?;
    if count != shards {
        return Err(CursorError::ShardCount {
            cursor: count,
            query: shards,
        });
    }
    let merge = match reader.u8()? {
        0 => None,
        1 => {
            let shard = reader.u32()?;
            if shard >= count {
                return Err(CursorError::Malformed(format!(
                    "merge position on shard {shard} of {count}"
                )));
            }
            let sort = match reader.u8()? {
                0 => None,
                1 => Some(reader.value()?),
                other => {
                    return Err(CursorError::Malformed(format!(
                        "unknown sort-key flag {other}"
                    )))
                }
            };
            Some(MergePosition { shard, sort })
        }
        other => {
            return Err(CursorError::Malformed(format!(
                "unknown merge position flag {other}"
            )))
        }
    };
    let mut positions = Vec::with_capacity(count.min(4096) as usize);
    for _ in 0..count {
        positions.push(match reader.u8()? {
            0 => ShardPosition::Start,
            1 => ShardPosition::Done,
            2 => {
                let n = reader.u8()?;
                let key = (0..n)
                    .map(|_| reader.value())
                    .collect::<Result<Vec<_>, _>>()?;
                ShardPosition::After(key)
            }
            other => {
                return Err(CursorError::Malformed(format!(
                    "unknown shard state {other}"
                )))
            }
        });
    }
    if !reader.bytes.is_empty() {
        return Err(CursorError::Malformed("trailing bytes".into()));
    }
    Ok((
        label,
        Resume {
            merge,
            shards: positions,
        },
    ))
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CursorError> {
        if self.bytes.len() < n {
            return Err(CursorError::Malformed("truncated".into()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, CursorError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, CursorError> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }
    fn u64(&mut self) -> Result<u64, CursorError> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
    fn value(&mut self) -> Result<AttributeValue, CursorError> {
        let tag = self.u8()?;
        let len = self.u32()? as usize;
        let raw = self.take(len)?;
        let text = || {
            String::from_utf8(raw.to_vec())
                .map_err(|_| CursorError::Malformed("key text is not UTF-8".into()))
        };
        Ok(match tag {
            0 => AttributeValue::S(text()?),
            1 => AttributeValue::N(text()?),
            2 => AttributeValue::B(Blob::new(raw.to_vec())),
            other => {
                return Err(CursorError::Malformed(format!(
                    "unknown value type {other}"
                )))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Resume {
        Resume {
            merge: Some(MergePosition {
                shard: 2,
                sort: Some(AttributeValue::S("SCORE#001#p$231".into())),
            }),
            shards: vec![
                ShardPosition::Start,
                ShardPosition::Done,
                ShardPosition::After(vec![
                    AttributeValue::S("SCORE#001#p$231".into()),
                    AttributeValue::N("-1.5".into()),
                ]),
                ShardPosition::After(vec![AttributeValue::B(Blob::new(vec![0, 255]))]),
            ],
        }
    }

    fn key() -> CursorKey {
        CursorKey::new(b"key")
    }

    #[test]
    fn range_cursors_carry_their_bucket_and_are_not_query_cursors() {
        for sealing in [None, Some(key())] {
            let c = encode_labeled(42, "2026-11-22", &sample(), sealing.as_ref());
            let (label, resume) = decode_labeled(&c, 42, 4, sealing.as_ref()).unwrap();
            assert_eq!((label.as_str(), resume), ("2026-11-22", sample()));
            // A range cursor is not a plain query's, nor the other way round.
            assert_eq!(
                decode(&c, 42, 4, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
            let plain = encode(42, &sample(), sealing.as_ref());
            assert_eq!(
                decode_labeled(&plain, 42, 4, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
            assert_eq!(
                decode_labeled(&c, 43, 4, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
        }
        // Every truncation is refused, never a panic.
        let c = encode_labeled(7, "2026-W47", &sample(), None);
        let bytes = URL_SAFE_NO_PAD.decode(c.as_str()).unwrap();
        for cut in 0..bytes.len() {
            let cut = Cursor(URL_SAFE_NO_PAD.encode(&bytes[..cut]));
            assert!(decode_labeled(&cut, 7, 4, None).is_err());
        }
    }

    #[test]
    fn roundtrip() {
        for sealing in [None, Some(key())] {
            let c = encode(42, &sample(), sealing.as_ref());
            assert!(c
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(decode(&c, 42, 4, sealing.as_ref()).unwrap(), sample());
        }
        let fresh = Resume::start(3);
        assert_eq!(decode(&encode(7, &fresh, None), 7, 3, None).unwrap(), fresh);
        // Another query's cursor is named as such, even when its shard count differs too;
        // only this query's cursor with another count blames `n`.
        let other = encode(8, &Resume::start(7), None);
        assert_eq!(decode(&other, 7, 10, None), Err(CursorError::WrongQuery));
        let resharded = encode(7, &Resume::start(7), None);
        assert!(matches!(
            decode(&resharded, 7, 10, None),
            Err(CursorError::ShardCount {
                cursor: 7,
                query: 10
            })
        ));
    }

    /// The byte layout of the `Cursor` docs, byte by byte: big-endian integers, the state
    /// tags, the value tags and lengths, the checksum and the seal. The token texts were
    /// computed independently (Python: `struct.pack(">Q", ...)`, `hmac.new(b"key", body,
    /// hashlib.sha256)`, `base64.urlsafe_b64encode`).
    #[test]
    fn byte_layout_is_pinned() {
        let resume = Resume {
            merge: Some(MergePosition {
                shard: 2,
                sort: Some(AttributeValue::S("ab".into())),
            }),
            shards: vec![
                ShardPosition::Start,
                ShardPosition::Done,
                ShardPosition::After(vec![AttributeValue::S("ab".into())]),
                ShardPosition::After(vec![
                    AttributeValue::N("7".into()),
                    AttributeValue::B(Blob::new(vec![0xff])),
                ]),
            ],
        };
        let c = encode(0x0102_0304_0506_0708, &resume, None);
        #[rustfmt::skip]
        let body: &[u8] = &[
            2,                                  // version
            0,                                  // plain (FNV-1a checksum)
            1, 2, 3, 4, 5, 6, 7, 8,             // fingerprint, u64 BE
            0, 0, 0, 4,                         // shard count, u32 BE
            1,                                  // merge position follows
            0, 0, 0, 2,                         //   its shard, u32 BE
            1, 0, 0, 0, 0, 2, b'a', b'b',       //   its sort key: S, length 2 (u32 BE), "ab"
            0,                                  // shard 0: not started
            1,                                  // shard 1: finished
            2, 1,                               // shard 2: after an item, 1 position value
            0, 0, 0, 0, 2, b'a', b'b',          //   S "ab"
            2, 2,                               // shard 3: after an item, 2 position values
            1, 0, 0, 0, 1, b'7',                //   N "7"
            2, 0, 0, 0, 1, 0xff,                //   B [0xff]
        ];
        let mut raw = body.to_vec();
        raw.extend_from_slice(&0x9ea8_4caa_505e_4d8cu64.to_be_bytes()); // checksum, u64 BE
        assert_eq!(fnv1a64(body), 0x9ea8_4caa_505e_4d8c);
        assert_eq!(URL_SAFE_NO_PAD.decode(c.as_str()).unwrap(), raw);
        assert_eq!(
            c.as_str(),
            "AgABAgMEBQYHCAAAAAQBAAAAAgEAAAAAAmFiAAECAQAAAAACYWICAgEAAAABNwIAAAAB_56oTKpQXk2M"
        );
        assert_eq!(decode(&c, 0x0102_0304_0506_0708, 4, None).unwrap(), resume);

        // Sealed: seal byte 1, and 32 bytes of HMAC-SHA256(key = b"key") instead of FNV-1a.
        let sealed = encode(0x0102_0304_0506_0708, &resume, Some(&key()));
        assert_eq!(
            sealed.as_str(),
            "AgEBAgMEBQYHCAAAAAQBAAAAAgEAAAAAAmFiAAECAQAAAAACYWICAgEAAAABNwIAAAAB_1l2rqAzp8oV6wFJCHTJEBxvL65RVVNfHfN3KwVCYSPx"
        );
        assert_eq!(
            decode(&sealed, 0x0102_0304_0506_0708, 4, Some(&key())).unwrap(),
            resume
        );
    }

    /// The fingerprint's parts are length-prefixed (u32 BE) UTF-8.
    #[test]
    fn fingerprint_layout_is_pinned() {
        let fp = Fingerprint::new().part("Score").part("").finish();
        assert_eq!(fp, fnv1a64(b"\0\0\0\x05Score\0\0\0\0"));
        assert_eq!(fp, 0xe11f_034a_2a3d_7e84);
    }

    /// Edits `token` (decoded bytes, trailer removed) and re-checksums it with FNV-1a, as the
    /// docs say anyone can.
    fn forge(token: &Cursor, trailer: usize, edit: impl FnOnce(&mut Vec<u8>)) -> Cursor {
        let raw = URL_SAFE_NO_PAD.decode(token.as_str()).unwrap();
        let mut body = raw[..raw.len() - trailer].to_vec();
        edit(&mut body);
        let checksum = fnv1a64(&body);
        body.extend_from_slice(&checksum.to_be_bytes());
        Cursor(URL_SAFE_NO_PAD.encode(&body))
    }

    /// What the docs promise *not* to do: the plain checksum has no key, so an edited cursor
    /// with a recomputed checksum is accepted. Safety against forged cursors comes from the
    /// engine rebuilding the partition key, condition and entity filter from the query.
    #[test]
    fn a_plain_cursor_is_not_authenticated_an_edit_with_a_new_checksum_is_accepted() {
        let c = encode(42, &sample(), None);
        let forged = forge(&c, 8, |body| {
            let at = body.windows(5).rposition(|w| w == b"SCORE").unwrap();
            body[at + 6] = b'9'; // SCORE#001 -> SCORE#901, in shard 2's position
        });
        let resume = decode(&forged, 42, 4, None).unwrap();
        assert!(matches!(
            &resume.shards[2],
            ShardPosition::After(key) if key[0] == AttributeValue::S("SCORE#901#p$231".into())
        ));
    }

    /// Sealing: an edit (even re-checksummed, even turning the token into a plain one), a
    /// token sealed with another key, or a plain token for a sealing query: all refused.
    #[test]
    fn sealed_cursors_refuse_tampering_other_keys_and_plain_tokens() {
        let sealed = encode(42, &sample(), Some(&key()));
        let raw = URL_SAFE_NO_PAD.decode(sealed.as_str()).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 1;
            let token = Cursor(URL_SAFE_NO_PAD.encode(&bad));
            let result = decode(&token, 42, 4, Some(&key()));
            assert!(result.is_err(), "flip at byte {i} accepted");
            if i >= 2 {
                assert_eq!(result, Err(CursorError::Unverified), "byte {i}");
            }
        }
        let other = CursorKey::new(b"another key");
        assert_eq!(
            decode(&sealed, 42, 4, Some(&other)),
            Err(CursorError::Unverified)
        );
        assert_eq!(decode(&sealed, 42, 4, None), Err(CursorError::Sealed));
        let plain = encode(42, &sample(), None);
        assert_eq!(
            decode(&plain, 42, 4, Some(&key())),
            Err(CursorError::NotSealed)
        );
        // Strip the seal, mark the token plain and add a valid FNV-1a: still refused.
        let unsealed = forge(&sealed, TAG_LEN - 8, |body| {
            body.truncate(body.len() - 8);
            body[1] = PLAIN;
        });
        assert_eq!(
            decode(&unsealed, 42, 4, Some(&key())),
            Err(CursorError::NotSealed)
        );
        let truncated = Cursor(URL_SAFE_NO_PAD.encode(&raw[..20]));
        assert_eq!(
            decode(&truncated, 42, 4, Some(&key())),
            Err(CursorError::Unverified)
        );
    }

    #[test]
    fn version_1_cursors_are_refused_clearly() {
        // A version 1 token, as the previous release wrote it.
        let v1 = Cursor(
            "AQECAwQFBgcIAAAABAABAgEAAAAAAmFiAQAAAAABYwICAQAAAAE3AgAAAAH_ADlKhGUyxBwX".into(),
        );
        let error = decode(&v1, 0x0102_0304_0506_0708, 4, None).unwrap_err();
        assert_eq!(error, CursorError::Version(1));
        assert!(error.to_string().contains("reads version 2"), "{error}");
    }

    #[test]
    fn every_single_byte_change_is_refused() {
        let c = encode(42, &sample(), None);
        let raw = URL_SAFE_NO_PAD.decode(c.as_str()).unwrap();
        for i in 0..raw.len() {
            for bit in [1u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let token = Cursor(URL_SAFE_NO_PAD.encode(&bad));
                assert!(
                    decode(&token, 42, 4, None).is_err(),
                    "flip of bit {bit} at byte {i} accepted"
                );
            }
        }
    }

    /// Re-checksummed garbage after a valid header: refused as malformed, never a panic.
    #[test]
    fn forged_structure_is_malformed_not_a_panic() {
        let c = encode(42, &sample(), None);
        // The merge position on shard 9 of 4.
        let forged = forge(&c, 8, |body| body[18] = 9);
        assert!(matches!(
            decode(&forged, 42, 4, None),
            Err(CursorError::Malformed(_))
        ));
        // A value length far past the end.
        let forged = forge(&c, 8, |body| body[21..25].copy_from_slice(&[0xff; 4]));
        assert!(matches!(
            decode(&forged, 42, 4, None),
            Err(CursorError::Malformed(_))
        ));
        // Trailing bytes.
        let forged = forge(&c, 8, |body| body.push(0));
        assert!(matches!(
            decode(&forged, 42, 4, None),
            Err(CursorError::Malformed(_))
        ));
    }

    #[test]
    fn other_queries_and_garbage_are_refused_with_reasons() {
        let c = encode(42, &sample(), None);
        assert_eq!(decode(&c, 43, 4, None), Err(CursorError::WrongQuery));
        assert_eq!(
            decode(&c, 42, 5, None),
            Err(CursorError::ShardCount {
                cursor: 4,
                query: 5
            })
        );
        for garbage in ["!!", "AAAA", "", "Ag", "AgA", "AgI"] {
            assert!(
                matches!(
                    decode(&Cursor(garbage.into()), 42, 4, None),
                    Err(CursorError::Malformed(_) | CursorError::Version(_))
                ),
                "{garbage:?}"
            );
        }
        let mut truncated = c.as_str().to_owned();
        truncated.truncate(truncated.len() - 3);
        assert!(decode(&Cursor(truncated), 42, 4, None).is_err());
    }
}

#[cfg(test)]
mod doc_examples {
    //! Examples of crate-internal items, kept as tests.
    use super::*;

    #[test]
    fn example_fingerprint() {
        let a = Fingerprint::new().part("Score").part("GAME#g1").finish();
        let b = Fingerprint::new().part("Score").part("GAME#g2").finish();
        assert_ne!(a, b);
    }
}
