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

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use hmac::{KeyInit, Mac};

use crate::access::engine::description::{Description, FINGERPRINT_LEN};
pub use crate::error::cursor::{CursorError, CursorKeyError};
// The format versions written and read: defined beside the error that names them.
use crate::error::cursor::{MIN_KEY_LEN, RANGE_VERSION, VERSION};
use crate::token::{self, Reader, Writer};

/// The seal byte of a cursor checked by FNV-1a only.
const PLAIN: u8 = 0;
/// The seal byte of a cursor sealed with HMAC-SHA256.
const SEALED: u8 = 1;
/// Bytes of an HMAC-SHA256 tag.
const TAG_LEN: usize = 32;
/// Bytes of a plain cursor's checksum.
const CHECKSUM_LEN: usize = 8;
/// Bytes before the shard count: version, seal, fingerprint.
const HEADER_LEN: usize = 2 + FINGERPRINT_LEN;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// A position in a scatter-gather query, to resume from with
/// [`Query::page`](crate::access::read::query::Query::page).
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
/// # Format (version 4)
///
/// The token is base64url without padding (RFC 4648 section 5, alphabet `A-Z a-z 0-9 - _`, no
/// `=`) of the bytes below. Every multi-byte integer is unsigned and **big-endian** (network
/// byte order).
///
/// ```text
/// u8      version = 4
/// u8      seal: 0 = plain (FNV-1a checksum at the end), 1 = sealed (HMAC-SHA256 at the end)
/// 16 x u8 query fingerprint: the first 16 bytes of the SHA-256 of the query description (below)
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
///         seal 1: 32 bytes HMAC-SHA256, under the CursorKey, of every byte above followed
///                 by the query description (which is not in the token)
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
/// items not yet shown. Versions 1 to 3 (earlier releases: a 64-bit fingerprint of part of
/// the query) are refused with [`CursorError::Version`]; clients restart their listing.
///
/// A cursor is accepted only by a query whose description (below), shard count and number of
/// position values match: a plain cursor's fingerprint must equal the query's, a sealed
/// cursor's HMAC must verify over the query's own description. A cursor of the same query
/// issued under another layout of the key is never continued: its shard positions name
/// another set of partitions. A query recognises the layouts its entity declares (its own,
/// and during a transition the previous one and the one after it) and refuses their cursors
/// with [`CursorError::Layout`], naming both; after a transition's declaration is removed
/// the steady layout no longer knows it, and a cursor issued during it is
/// [`CursorError::WrongQuery`]. One with another shard count is
/// [`CursorError::ShardCount`]; anything else is [`CursorError::WrongQuery`].
///
/// # The query description
///
/// What a cursor is bound to: everything that shapes the query's answer, written canonically
/// (the same query always gives the same bytes, two different queries never do). A
/// [`Query`](crate::Query) and a [`RangeQuery`](crate::query::RangeQuery) write it the same way:
///
/// ```text
/// text    kind: `query`, or `range` for a range query
/// text    the entity's name (the collection's, after `collection`)
/// text    the index name (empty for the base table)
/// key     query: text the logical partition key (`GAME#g1`)
///         range: text the logical key before the bucket label, text the key after it,
///                text the granularity (`day`), text `from` and text `to` (encoded as the
///                sort key encodes the time)
/// u8      0 = no sort-key condition, 1 = one follows: text its key-condition fragment
///           (`#sk BETWEEN :sk0 AND :sk1`), u32 BE count, count x text its values.
///           Without an explicit condition, a query of one entity carries `begins_with` on
///           the sort key's literal prefix (`SCORE#`); a range query writes 0 (its bounds
///           are `from` and `to`)
/// u8      0 = no filter, 1 = the filter follows:
///           text    its FilterExpression alone, with placeholders `#c0, #c1, ..` and
///                   `:c0, :c1, ..` numbered from 0 in order of first use
///           u32 BE  count, then per name: text placeholder, text attribute (placeholder order)
///           u32 BE  count, then per value: text placeholder, described value (placeholder order)
/// u8      0 = whole items, 1 = a projection: u32 BE count, count x text attribute (as declared)
/// text    `asc` or `desc`
/// u8      0 = every item is returned (`include_expired`, or no `ttl` field),
///         1 = expired items are hidden: text the `ttl` attribute
/// text    the layout transition read: empty for a steady layout; during a transition
///         `GAME#{game_id}#<shard 0..20>, previously #<shard 0..10>`
///
/// text            = u32 BE byte length, the UTF-8 bytes
/// described value = u8 type, then 0 S: text | 1 N: text | 2 B: u32 BE length, bytes |
///                   3 BOOL: u8 0 or 1 | 4 NULL: nothing | 5 L: u32 BE count, values |
///                   6 M: u32 BE count, (text name, value) sorted by name bytes |
///                   7 SS, 8 NS, 9 BS: u32 BE count, (u32 BE length, bytes) sorted by bytes
/// ```
///
/// Left out, because they do not change which items the listing holds: the page size, the
/// limit and `page_size` (where a page stops), and strongly consistent reads (how fresh each
/// read is: a listing may continue with either). The shard count is in the token itself.
///
/// # Range cursors (version 5)
///
/// A [`RangeQuery`](crate::query::RangeQuery) over time buckets pages with the same cursor, one
/// token across buckets and shards. Its layout is version 4's with `version = 5` and, right
/// after the fingerprint, the bucket the query stands in:
///
/// ```text
/// u32 BE  label length, then the label's UTF-8 bytes (`2026-11-22`)
/// ```
///
/// The rest (shard count, merge position, shard entries, trailer) is the position inside that
/// bucket, as above; its fingerprint and seal are over the range query's description (kind
/// `range`). A range cursor given to a plain query, or the other way round, is
/// [`CursorError::WrongQuery`], as is a label outside the query's range.
///
/// The size grows with the shard count: 31 bytes (55 sealed), plus the merge position
/// (`5 + 5 + key bytes`), plus per shard 1 byte (not started) or
/// `2 + 5 x values + key bytes`, then a third more for base64. Ten shards of a leaderboard
/// (38-byte `SCORE#<20 digits>#player-0042` sort keys) make a plain token of 529 bytes,
/// 706 characters.
///
/// # A plain cursor: integrity-checked, not authenticated
///
/// The checksum (FNV-1a) and the fingerprint (SHA-256 of the description) have no key and no
/// secret. They catch accidents (a truncated or corrupted token, a token pasted into another
/// query, another entity, another filter or another shard count: [`CursorError`]). They do
/// **not** stop someone who means to: anyone can decode a plain cursor, edit it, and compute
/// a new valid checksum.
///
/// What holds even for a cursor a client forged:
///
/// - Every request goes to the query's own partitions: the partition key of each shard
///   request is rebuilt from the query (the logical key the server passed to `query`), never
///   read from the cursor; the cursor only supplies the rest of `ExclusiveStartKey`.
/// - Every request keeps the query's own sort-key condition, filter and `_entity` filter, so
///   no item of another partition key, another entity, or outside the conditions comes back.
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
/// items the caller has already been shown. The fingerprint is a hash of the query: it does
/// not reveal the filter's values, but whoever can guess them can confirm a guess.
///
/// So hand a plain cursor to an untrusted client only if the client may run that query
/// anyway; decide who may read what from the request's own credentials, never from the
/// cursor.
///
/// # A sealed cursor: authenticated
///
/// A query run with [`Query::seal_cursors`](crate::Query::seal_cursors) returns cursors
/// sealed with HMAC-SHA256 under a [`CursorKey`] your service keeps, and accepts only cursors
/// sealed with that key (or a key it still accepts during a rotation; checked in constant
/// time, before anything else in the token is read). The HMAC covers the token's bytes and
/// the query's whole description, so a client can neither edit a cursor nor make one, nor
/// carry one over to another query: every cursor it hands back is one your service issued for
/// that very query, with the same filter values, projection and expired-items mode. Sealing
/// does not encrypt (the keys listed above stay readable) and does not expire: an old cursor
/// of the same query stays valid, so a client can page again from any point it was given.
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
/// API page tokens, with the older keys it still accepts while keys are rotated.
///
/// Give it to [`Query::seal_cursors`](crate::Query::seal_cursors): the query's pages then
/// carry sealed cursors, and only cursors sealed with this key (or one it accepts) are
/// accepted. Use 32 random bytes (at least 16: a shorter secret is refused with
/// [`CursorKeyError`]), keep them out of the code (a secrets manager), and use the same key
/// on every instance that serves the listing.
///
/// The key is never printed: its `Debug` form is `CursorKey(..)`.
///
/// ```
/// use sharded::cursor::CursorKey;
/// let key = CursorKey::new(b"32 random bytes from your secrets manager")?;
/// assert_eq!(format!("{key:?}"), "CursorKey(..)");
/// assert!(CursorKey::new(b"too short").is_err());
/// # Ok::<(), sharded::cursor::CursorKeyError>(())
/// ```
///
/// # Rotating the key
///
/// A key that only seals with a new secret refuses every cursor sealed with the old one
/// ([`CursorError::Unverified`]), and clients would restart their listings. Rotate in three
/// deployments instead, so that no instance ever sees a cursor it cannot open:
///
/// 1. Every instance keeps sealing with the old key and also accepts the new one:
///    `CursorKey::new(old)?.accepting(&CursorKey::new(new)?)`.
/// 2. Once every instance runs step 1, every instance seals with the new key and still accepts
///    the old one: `CursorKey::new(new)?.accepting(&CursorKey::new(old)?)`.
/// 3. Once the cursors sealed with the old key have aged out (sealed cursors do not expire by
///    themselves: decide how long a page token stays valid for your clients, say a day), drop
///    the old key: `CursorKey::new(new)?`. A cursor sealed with it is then refused.
///
/// ```
/// use sharded::cursor::CursorKey;
/// # fn secret(name: &str) -> Vec<u8> { format!("{name}: 32 random bytes, from a vault").into_bytes() }
/// // Step 2: seal with the new key, still open the old key's cursors.
/// let key = CursorKey::new(secret("cursor-key-2026-11"))?
///     .accepting(&CursorKey::new(secret("cursor-key-2026-10"))?);
/// # let _ = key;
/// # Ok::<(), sharded::cursor::CursorKeyError>(())
/// ```
#[derive(Clone)]
pub struct CursorKey {
    /// The sealing key first, then every key it still accepts.
    keys: Arc<[HmacSha256]>,
}

impl CursorKey {
    /// A key from secret bytes: at least 16 bytes, 32 random bytes recommended (HMAC hashes
    /// keys longer than 64 bytes). A shorter secret is refused with [`CursorKeyError`], which
    /// converts into [`Error`](crate::Error) with `?`.
    ///
    /// ```
    /// let key = sharded::cursor::CursorKey::new([7u8; 32])?;
    /// # let _ = key;
    /// assert!(sharded::cursor::CursorKey::new(b"").is_err());
    /// # Ok::<(), sharded::cursor::CursorKeyError>(())
    /// ```
    pub fn new(secret: impl AsRef<[u8]>) -> Result<CursorKey, CursorKeyError> {
        let secret = secret.as_ref();
        if secret.len() < MIN_KEY_LEN {
            return Err(CursorKeyError::new(secret.len()));
        }
        // HMAC accepts keys of any length: `new_from_slice` does not fail for it.
        let mac =
            HmacSha256::new_from_slice(secret).map_err(|_| CursorKeyError::new(secret.len()))?;
        Ok(CursorKey {
            keys: Arc::from([mac]),
        })
    }

    /// This key, also accepting the cursors `older` seals or accepts: this key seals, `older`
    /// only opens. For a key rotation (see [Rotating the key](CursorKey#rotating-the-key)).
    ///
    /// ```
    /// use sharded::cursor::CursorKey;
    /// let old = CursorKey::new(b"the old secret, 32 random bytes.")?;
    /// let key = CursorKey::new(b"the new secret, 32 random bytes.")?.accepting(&old);
    /// # let _ = key;
    /// # Ok::<(), sharded::cursor::CursorKeyError>(())
    /// ```
    pub fn accepting(self, older: &CursorKey) -> CursorKey {
        let keys: Vec<HmacSha256> = self.keys.iter().chain(older.keys.iter()).cloned().collect();
        CursorKey {
            keys: Arc::from(keys),
        }
    }

    /// The seal of a cursor's `bytes` for the query described by `description`, under the
    /// sealing key.
    fn tag(&self, bytes: &[u8], description: &Description) -> [u8; TAG_LEN] {
        let mut mac = self.keys[0].clone();
        mac.update(bytes);
        mac.update(description.bytes());
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` seals `bytes` for `description` under any accepted key (each compared in
    /// constant time).
    fn verify(&self, bytes: &[u8], description: &Description, tag: &[u8]) -> bool {
        self.keys.iter().any(|key| {
            let mut mac = key.clone();
            mac.update(bytes);
            mac.update(description.bytes());
            mac.verify_slice(tag).is_ok()
        })
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
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

/// Encodes a resume point of the query described by `description` into a cursor, sealed
/// with `key` when one is given.
pub(crate) fn encode(
    description: &Description,
    resume: &Resume,
    key: Option<&CursorKey>,
) -> Cursor {
    encode_with(VERSION, description, None, resume, key)
}

/// Encodes a range query's resume point: the bucket `label` it stands in and the position of
/// that bucket's scatter-gather (the range format version).
pub(crate) fn encode_labeled(
    description: &Description,
    label: &str,
    resume: &Resume,
    key: Option<&CursorKey>,
) -> Cursor {
    encode_with(RANGE_VERSION, description, Some(label), resume, key)
}

fn encode_with(
    version: u8,
    description: &Description,
    label: Option<&str>,
    resume: &Resume,
    key: Option<&CursorKey>,
) -> Cursor {
    let mut out = Writer::with_capacity(64 + resume.shards.len() * 48);
    out.u8(version);
    out.u8(if key.is_some() { SEALED } else { PLAIN });
    out.raw(description.fingerprint());
    if let Some(label) = label {
        out.str(label);
    }
    out.u32(resume.shards.len() as u32);
    match &resume.merge {
        None => out.u8(0),
        Some(merge) => {
            out.u8(1);
            out.u32(merge.shard);
            match &merge.sort {
                None => out.u8(0),
                Some(value) => {
                    out.u8(1);
                    write_value(&mut out, value);
                }
            }
        }
    }
    for position in &resume.shards {
        match position {
            ShardPosition::Start => out.u8(0),
            ShardPosition::Done => out.u8(1),
            ShardPosition::After(key) => {
                out.u8(2);
                out.u8(key.len() as u8);
                for value in key {
                    write_value(&mut out, value);
                }
            }
        }
    }
    match key {
        Some(key) => {
            let tag = key.tag(out.as_bytes(), description);
            out.raw(&tag);
            Cursor(token::encode(out.as_bytes()))
        }
        None => Cursor(out.checksummed()),
    }
}

fn write_value(out: &mut Writer, value: &AttributeValue) {
    // A multi-attribute sort key's merge position: tag 3, the count, then each value.
    if let AttributeValue::L(values) = value {
        out.u8(3);
        out.u32(values.len() as u32);
        for value in values {
            write_value(out, value);
        }
        return;
    }
    out.key_value(value);
}

/// Decodes a cursor of the query described by `description`, checking its seal (when the
/// query has a `key`, only sealed cursors are accepted; without one, only plain cursors),
/// then its fingerprint and shard count.
pub(crate) fn decode(
    cursor: &Cursor,
    description: &Description,
    shards: u32,
    key: Option<&CursorKey>,
) -> Result<Resume, CursorError> {
    decode_with(VERSION, cursor, description, shards, key).map(|(_, resume)| resume)
}

/// Decodes a range query's cursor ([`encode_labeled`]): the bucket label and the position in
/// that bucket. A plain query's cursor is another query's ([`CursorError::WrongQuery`]).
pub(crate) fn decode_labeled(
    cursor: &Cursor,
    description: &Description,
    shards: u32,
    key: Option<&CursorKey>,
) -> Result<(String, Resume), CursorError> {
    let (label, resume) = decode_with(RANGE_VERSION, cursor, description, shards, key)?;
    Ok((label.unwrap_or_default(), resume))
}

fn decode_with(
    expected: u8,
    cursor: &Cursor,
    description: &Description,
    shards: u32,
    key: Option<&CursorKey>,
) -> Result<(Option<String>, Resume), CursorError> {
    let bytes = token::decode(&cursor.0)?;
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
    // The fingerprint the token claims (authentic only once the seal or checksum verified).
    let claims_this_query = bytes.get(2..HEADER_LEN) == Some(&description.fingerprint()[..]);
    let body = match (bytes.get(1).copied(), key) {
        (Some(PLAIN), None) => {
            if bytes.len() < HEADER_LEN + 4 + 1 + CHECKSUM_LEN {
                return Err(CursorError::Malformed("too short".into()));
            }
            token::verify_checksum(&bytes).ok_or(CursorError::Tampered)?
        }
        (Some(SEALED), Some(key)) => {
            let verified = bytes.len() >= HEADER_LEN + TAG_LEN && {
                let (body, tag) = bytes.split_at(bytes.len() - TAG_LEN);
                key.verify(body, description, tag)
            };
            if !verified {
                // The seal covers the query's description: a cursor of another query does not
                // verify either. Say which, from the fingerprint it claims (a forger can only
                // choose which of the two refusals it gets).
                return Err(if claims_this_query || bytes.len() < HEADER_LEN {
                    CursorError::Unverified
                } else {
                    CursorError::WrongQuery
                });
            }
            &bytes[..bytes.len() - TAG_LEN]
        }
        (Some(PLAIN), Some(_)) => return Err(CursorError::NotSealed),
        (Some(SEALED), None) => return Err(CursorError::Sealed),
        (Some(other), _) => return Err(CursorError::Malformed(format!("unknown seal {other}"))),
        (None, _) => return Err(CursorError::Malformed("too short".into())),
    };
    // The query first: a cursor of another entity, index, key, filter, projection, order or
    // expiry mode is that, whatever its shard count. Only a cursor of this very query with
    // another count means `n` changed.
    if !claims_this_query {
        return Err(CursorError::WrongQuery);
    }
    let mut reader = Reader::new(&body[HEADER_LEN..]);
    let label = match version {
        RANGE_VERSION => Some(reader.str()?),
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
                1 => Some(read_value(&mut reader, 0)?),
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
                    .map(|_| read_value(&mut reader, 0))
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
    reader.finish()?;
    Ok((
        label,
        Resume {
            merge,
            shards: positions,
        },
    ))
}

/// A value written by [`write_value`]: a key value, or (at the top) a list of them.
fn read_value(reader: &mut Reader<'_>, depth: u8) -> Result<AttributeValue, CursorError> {
    let tag = reader.u8()?;
    if tag == 3 {
        // A list of key values (a multi-attribute sort key has at most four), never nested.
        let count = reader.u32()? as usize;
        if depth > 0 || count > crate::keys::schema::MAX_KEY_ATTRIBUTES {
            return Err(CursorError::Malformed("invalid key value list".into()));
        }
        let values = (0..count)
            .map(|_| read_value(reader, depth + 1))
            .collect::<Result<_, _>>()?;
        return Ok(AttributeValue::L(values));
    }
    reader
        .scalar(tag)?
        .ok_or_else(|| CursorError::Malformed(format!("unknown value type {tag}")))
}

/// Refuses a page of no items, which `Query::page` and `RangeQuery::page` share: its cursor
/// could never advance.
pub(crate) fn page_size(size: usize) -> Result<(), crate::error::Error> {
    if size == 0 {
        return Err(crate::error::QueryRefusal::EmptyPage.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::primitives::Blob;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;

    use crate::keys::hash::fnv1a64;

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
        CursorKey::new(b"0123456789abcdef").unwrap()
    }

    /// The description of a query (any bytes will do for the codec).
    fn query(name: &str) -> Description {
        Description::of_bytes(name.as_bytes())
    }

    #[test]
    fn range_cursors_carry_their_bucket_and_are_not_query_cursors() {
        let (a, b) = (query("a"), query("b"));
        for sealing in [None, Some(key())] {
            let c = encode_labeled(&a, "2026-11-22", &sample(), sealing.as_ref());
            let (label, resume) = decode_labeled(&c, &a, 4, sealing.as_ref()).unwrap();
            assert_eq!((label.as_str(), resume), ("2026-11-22", sample()));
            // A range cursor is not a plain query's, nor the other way round.
            assert_eq!(
                decode(&c, &a, 4, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
            let plain = encode(&a, &sample(), sealing.as_ref());
            assert_eq!(
                decode_labeled(&plain, &a, 4, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
            assert_eq!(
                decode_labeled(&c, &b, 4, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
        }
        // Every truncation is refused, never a panic.
        let c = encode_labeled(&a, "2026-W47", &sample(), None);
        let bytes = URL_SAFE_NO_PAD.decode(c.as_str()).unwrap();
        for cut in 0..bytes.len() {
            let cut = Cursor(URL_SAFE_NO_PAD.encode(&bytes[..cut]));
            assert!(decode_labeled(&cut, &a, 4, None).is_err());
        }
    }

    #[test]
    fn roundtrip() {
        let q = query("q");
        for sealing in [None, Some(key())] {
            let c = encode(&q, &sample(), sealing.as_ref());
            assert!(c
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(decode(&c, &q, 4, sealing.as_ref()).unwrap(), sample());
        }
        let fresh = Resume::start(3);
        assert_eq!(
            decode(&encode(&q, &fresh, None), &q, 3, None).unwrap(),
            fresh
        );
        // Another query's cursor is named as such, even when its shard count differs too;
        // only this query's cursor with another count blames `n`.
        for sealing in [None, Some(key())] {
            let other = encode(&query("other"), &Resume::start(7), sealing.as_ref());
            assert_eq!(
                decode(&other, &q, 10, sealing.as_ref()),
                Err(CursorError::WrongQuery)
            );
            let resharded = encode(&q, &Resume::start(7), sealing.as_ref());
            assert!(matches!(
                decode(&resharded, &q, 10, sealing.as_ref()),
                Err(CursorError::ShardCount {
                    cursor: 7,
                    query: 10
                })
            ));
        }
    }

    /// The byte layout of the `Cursor` docs, byte by byte: big-endian integers, the
    /// fingerprint, the state tags, the value tags and lengths, the checksum and the seal
    /// over the bytes and the description. The token texts were computed independently
    /// (Python: `hashlib.sha256(description).digest()[:16]`, `struct.pack(">Q", ...)`,
    /// `hmac.new(key, body + description, hashlib.sha256)`, `base64.urlsafe_b64encode`).
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
        let description = Description::of_bytes(b"\0\0\0\x05query");
        let c = encode(&description, &resume, None);
        #[rustfmt::skip]
        let body: &[u8] = &[
            4,                                  // version
            0,                                  // plain (FNV-1a checksum)
            28, 139, 13, 152, 74, 19, 4, 211,   // fingerprint: SHA-256 of the description,
            88, 114, 201, 196, 154, 127, 162, 106, //   first 16 bytes
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
        assert_eq!(&body[2..HEADER_LEN], description.fingerprint());
        let mut raw = body.to_vec();
        raw.extend_from_slice(&0x6b73_a937_6731_3a90u64.to_be_bytes()); // checksum, u64 BE
        assert_eq!(fnv1a64(body), 0x6b73_a937_6731_3a90);
        assert_eq!(URL_SAFE_NO_PAD.decode(c.as_str()).unwrap(), raw);
        assert_eq!(
            c.as_str(),
            "BAAciw2YShME01hyycSaf6JqAAAABAEAAAACAQAAAAACYWIAAQIBAAAAAAJhYgICAQAAAAE3AgAAAAH_a3OpN2cxOpA"
        );
        assert_eq!(decode(&c, &description, 4, None).unwrap(), resume);

        // Sealed: seal byte 1, and 32 bytes of HMAC-SHA256(key = b"0123456789abcdef") over
        // the bytes followed by the description, instead of FNV-1a.
        let sealed = encode(&description, &resume, Some(&key()));
        assert_eq!(
            sealed.as_str(),
            "BAEciw2YShME01hyycSaf6JqAAAABAEAAAACAQAAAAACYWIAAQIBAAAAAAJhYgICAQAAAAE3AgAAAAH_dZJ0B1QXHNdUib0iHlXvDb0L-9AaJdBLCpVxz5tFTWA"
        );
        assert_eq!(
            decode(&sealed, &description, 4, Some(&key())).unwrap(),
            resume
        );
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
        let q = query("q");
        let c = encode(&q, &sample(), None);
        let forged = forge(&c, CHECKSUM_LEN, |body| {
            let at = body.windows(5).rposition(|w| w == b"SCORE").unwrap();
            body[at + 6] = b'9'; // SCORE#001 -> SCORE#901, in shard 2's position
        });
        let resume = decode(&forged, &q, 4, None).unwrap();
        assert!(matches!(
            &resume.shards[2],
            ShardPosition::After(key) if key[0] == AttributeValue::S("SCORE#901#p$231".into())
        ));
    }

    /// Sealing: an edit (even re-checksummed, even turning the token into a plain one), a
    /// token sealed with another key, or a plain token for a sealing query: all refused.
    #[test]
    fn sealed_cursors_refuse_tampering_other_keys_and_plain_tokens() {
        let q = query("q");
        let sealed = encode(&q, &sample(), Some(&key()));
        let raw = URL_SAFE_NO_PAD.decode(sealed.as_str()).unwrap();
        for i in 0..raw.len() {
            let mut bad = raw.clone();
            bad[i] ^= 1;
            let token = Cursor(URL_SAFE_NO_PAD.encode(&bad));
            let result = decode(&token, &q, 4, Some(&key()));
            assert!(result.is_err(), "flip at byte {i} accepted");
            if (2..HEADER_LEN).contains(&i) {
                // The token now claims another query: refused as such.
                assert_eq!(result, Err(CursorError::WrongQuery), "byte {i}");
            } else if i >= HEADER_LEN {
                assert_eq!(result, Err(CursorError::Unverified), "byte {i}");
            }
        }
        let other = CursorKey::new(b"another key, another service").unwrap();
        assert_eq!(
            decode(&sealed, &q, 4, Some(&other)),
            Err(CursorError::Unverified)
        );
        assert_eq!(decode(&sealed, &q, 4, None), Err(CursorError::Sealed));
        let plain = encode(&q, &sample(), None);
        assert_eq!(
            decode(&plain, &q, 4, Some(&key())),
            Err(CursorError::NotSealed)
        );
        // Strip the seal, mark the token plain and add a valid FNV-1a: still refused.
        let unsealed = forge(&sealed, TAG_LEN - CHECKSUM_LEN, |body| {
            body.truncate(body.len() - CHECKSUM_LEN);
            body[1] = PLAIN;
        });
        assert_eq!(
            decode(&unsealed, &q, 4, Some(&key())),
            Err(CursorError::NotSealed)
        );
        let truncated = Cursor(URL_SAFE_NO_PAD.encode(&raw[..30]));
        assert_eq!(
            decode(&truncated, &q, 4, Some(&key())),
            Err(CursorError::Unverified)
        );
    }

    /// The seal covers the whole description, not the fingerprint the token carries: a
    /// sealed cursor of one query, its fingerprint rewritten to another query's, does not
    /// open for that other query.
    #[test]
    fn a_sealed_cursor_opens_only_for_the_query_it_was_issued_for() {
        let (a, b) = (query("note == a"), query("note == b"));
        let sealed = encode(&a, &sample(), Some(&key()));
        assert_eq!(
            decode(&sealed, &b, 4, Some(&key())),
            Err(CursorError::WrongQuery)
        );
        let mut raw = URL_SAFE_NO_PAD.decode(sealed.as_str()).unwrap();
        raw[2..HEADER_LEN].copy_from_slice(b.fingerprint());
        let moved = Cursor(URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(
            decode(&moved, &b, 4, Some(&key())),
            Err(CursorError::Unverified)
        );
        assert_eq!(decode(&sealed, &a, 4, Some(&key())).unwrap(), sample());
    }

    #[test]
    fn keys_shorter_than_16_bytes_are_refused() {
        for len in [0, 1, 8, 15] {
            let error = CursorKey::new(vec![7u8; len]).unwrap_err();
            assert_eq!(error.len(), len);
            let message = error.to_string();
            assert!(message.contains("at least 16 bytes"), "{message}");
            assert!(message.contains("openssl rand"), "{message}");
        }
        assert!(CursorKey::new([7u8; 16]).is_ok());
        assert!(CursorKey::new([7u8; 100]).is_ok());
    }

    /// A rotation: the new key seals, the old one still opens; the old key alone does not
    /// open the new key's cursors.
    #[test]
    fn a_rotated_key_opens_old_cursors_and_seals_with_the_new_key() {
        let q = query("q");
        let old = CursorKey::new(b"the old secret, 32 random bytes.").unwrap();
        let new = CursorKey::new(b"the new secret, 32 random bytes.").unwrap();
        let rotated = new.clone().accepting(&old);
        let issued_before = encode(&q, &sample(), Some(&old));
        assert_eq!(
            decode(&issued_before, &q, 4, Some(&rotated)).unwrap(),
            sample()
        );
        let issued_after = encode(&q, &sample(), Some(&rotated));
        assert_eq!(
            issued_after,
            encode(&q, &sample(), Some(&new)),
            "sealed with the new key"
        );
        assert_eq!(decode(&issued_after, &q, 4, Some(&new)).unwrap(), sample());
        assert_eq!(
            decode(&issued_after, &q, 4, Some(&old)),
            Err(CursorError::Unverified)
        );
        // Step 3 of the rotation: the old key dropped, its cursors refused.
        assert_eq!(
            decode(&issued_before, &q, 4, Some(&new)),
            Err(CursorError::Unverified)
        );
        // Accepting a key accepts what it accepts, too.
        let newest = CursorKey::new(b"the newest secret, 32 random by.").unwrap();
        let twice = newest.clone().accepting(&rotated);
        for issued in [&issued_before, &issued_after] {
            assert_eq!(decode(issued, &q, 4, Some(&twice)).unwrap(), sample());
        }
        assert_eq!(
            encode(&q, &sample(), Some(&twice)),
            encode(&q, &sample(), Some(&newest))
        );
    }

    #[test]
    fn earlier_versions_are_refused_clearly() {
        // Tokens of earlier releases: version 1, version 2 (a query), version 3 (a range).
        let v1 = Cursor(
            "AQECAwQFBgcIAAAABAABAgEAAAAAAmFiAQAAAAABYwICAQAAAAE3AgAAAAH_ADlKhGUyxBwX".into(),
        );
        let v2 = Cursor(
            "AgABAgMEBQYHCAAAAAQBAAAAAgEAAAAAAmFiAAECAQAAAAACYWICAgEAAAABNwIAAAAB_56oTKpQXk2M"
                .into(),
        );
        let q = query("q");
        for (token, version) in [(&v1, 1), (&v2, 2)] {
            let error = decode(token, &q, 4, None).unwrap_err();
            assert_eq!(error, CursorError::Version(version));
            assert!(error.to_string().contains("reads version 4"), "{error}");
            assert!(error.to_string().contains("another release"), "{error}");
            assert_eq!(
                decode_labeled(token, &q, 4, None),
                Err(CursorError::Version(version))
            );
        }
        let mut v3 = URL_SAFE_NO_PAD.decode(v2.as_str()).unwrap();
        v3[0] = 3;
        let v3 = Cursor(URL_SAFE_NO_PAD.encode(&v3));
        assert_eq!(
            decode_labeled(&v3, &q, 4, None),
            Err(CursorError::Version(3))
        );
    }

    #[test]
    fn every_single_byte_change_is_refused() {
        let q = query("q");
        let c = encode(&q, &sample(), None);
        let raw = URL_SAFE_NO_PAD.decode(c.as_str()).unwrap();
        for i in 0..raw.len() {
            for bit in [1u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let token = Cursor(URL_SAFE_NO_PAD.encode(&bad));
                assert!(
                    decode(&token, &q, 4, None).is_err(),
                    "flip of bit {bit} at byte {i} accepted"
                );
            }
        }
    }

    /// Re-checksummed garbage after a valid header: refused as malformed, never a panic.
    #[test]
    fn forged_structure_is_malformed_not_a_panic() {
        let q = query("q");
        let c = encode(&q, &sample(), None);
        // The merge position on shard 9 of 4 (the last byte of its u32 shard).
        let forged = forge(&c, CHECKSUM_LEN, |body| body[HEADER_LEN + 8] = 9);
        assert!(matches!(
            decode(&forged, &q, 4, None),
            Err(CursorError::Malformed(_))
        ));
        // A value length far past the end (the merge position's sort key).
        let forged = forge(&c, CHECKSUM_LEN, |body| {
            body[HEADER_LEN + 11..HEADER_LEN + 15].copy_from_slice(&[0xff; 4])
        });
        assert!(matches!(
            decode(&forged, &q, 4, None),
            Err(CursorError::Malformed(_))
        ));
        // Trailing bytes.
        let forged = forge(&c, CHECKSUM_LEN, |body| body.push(0));
        assert!(matches!(
            decode(&forged, &q, 4, None),
            Err(CursorError::Malformed(_))
        ));
    }

    #[test]
    fn other_queries_and_garbage_are_refused_with_reasons() {
        let q = query("q");
        let c = encode(&q, &sample(), None);
        assert_eq!(
            decode(&c, &query("r"), 4, None),
            Err(CursorError::WrongQuery)
        );
        assert_eq!(
            decode(&c, &q, 5, None),
            Err(CursorError::ShardCount {
                cursor: 4,
                query: 5
            })
        );
        for garbage in ["!!", "AAAA", "", "BA", "BAA", "BAI", "Ag"] {
            assert!(
                matches!(
                    decode(&Cursor(garbage.into()), &q, 4, None),
                    Err(CursorError::Malformed(_) | CursorError::Version(_))
                ),
                "{garbage:?}"
            );
        }
        let mut truncated = c.as_str().to_owned();
        truncated.truncate(truncated.len() - 3);
        assert!(decode(&Cursor(truncated), &q, 4, None).is_err());
    }
}
