//! The cross-shard cursor: where each shard of a scatter-gather query stopped.
//!
//! The byte format, and what the cursor does and does not guarantee, are documented on
//! [`Cursor`], where users of the crate read them.
//!
//! # Resuming
//!
//! A shard's position is the key of the last item the merge *emitted* from it (not the last
//! one DynamoDB returned: buffered items that were not emitted are fetched again), so
//! resuming yields exactly the next items: no duplicate, no gap, at any page size.
//!
//! When the engine already saw the shard's next item, the cursor also records that item's
//! sort key. The next page then starts the merge with it and fetches the shard only when the
//! merge reaches it: a page of 1 from 10 shards costs one request, not ten.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::keys::hash::fnv1a64;

const VERSION: u8 = 1;

/// A position in a scatter-gather query, to resume from with
/// [`Query::page`](crate::access::query::Query::page).
///
/// It is a plain string, safe in URLs. Treat it as opaque, but know that whoever holds it can
/// read and edit it: it is integrity-checked, not authenticated or encrypted (read the last
/// section before handing it to untrusted clients).
///
/// ```
/// use sharded::Cursor;
/// let c: Cursor = "AQ".parse().unwrap(); // parsing only stores the text; checks happen on use
/// assert_eq!(c.as_str(), "AQ");
/// ```
///
/// # Format (version 1)
///
/// The token is base64url without padding (RFC 4648 section 5, alphabet `A-Z a-z 0-9 - _`, no
/// `=`) of the bytes below. Every multi-byte integer is unsigned and **big-endian** (network
/// byte order).
///
/// ```text
/// u8      version = 1
/// u64 BE  query fingerprint (see below)
/// u32 BE  shard count n; then n entries, shard 0 first:
///           u8 state: 0 = not started, 1 = finished, 2 = after an item
///           state 2 only:
///             u8      k = number of position values (see below)
///             k x     value
///             u8      0 = no next sort key, 1 = a value follows: the shard's next sort key
/// u64 BE  checksum: FNV-1a 64 (sharded::hash::fnv1a64) of every byte above, version included
///
/// value = u8 type (0 = S, 1 = N, 2 = B), u32 BE byte length, the bytes
///         (S: UTF-8 text; N: DynamoDB's decimal text, UTF-8; B: the raw bytes)
/// ```
///
/// The position values of a shard are the key attributes DynamoDB needs to resume after the
/// last item the merge *emitted* from that shard, in this order:
///
/// - a base table query: the sort key (`sk`); none when the entity has no sort key;
/// - a GSI query: the index sort key (`gsiNsk`, if the index has one), then the base table's
///   partition key (`pk`, with its shard) and sort key (`sk`, if any).
///
/// The fingerprint is FNV-1a 64 over five parts, each written as its `u32 BE` byte length and
/// its UTF-8 bytes: the entity name, the index name (empty for the base table), the logical
/// partition key (`GAME#g1`), a text form of the sort-key condition (also the implicit
/// `begins_with` on the sort key's literal prefix; empty when there is none), and `asc` or
/// `desc`. A cursor is accepted only by a query whose fingerprint, shard count and
/// number of position values match.
///
/// The size grows with the shard count: 21 bytes, plus per shard 1 byte (not started,
/// finished) or about `3 + 5 x (values + 1) + key bytes`, then a third more for base64. Ten
/// shards of a leaderboard (`SCORE#<20 digits>#<player>` sort keys) make a token of roughly
/// a kilobyte.
///
/// # Integrity-checked, not authenticated
///
/// The checksum and the fingerprint are plain FNV-1a: there is no key and no secret. They
/// catch accidents (a truncated or corrupted token, a token pasted into another query,
/// another entity or another shard count: [`CursorError`]). They do **not** stop someone who
/// means to: anyone can decode a cursor, edit it, and compute a new valid checksum.
///
/// What holds even for a cursor a client forged:
///
/// - Every request goes to the query's own partitions: the partition key of each shard
///   request is rebuilt from the query (the logical key the server passed to `query`), never
///   read from the cursor; the cursor only supplies the rest of `ExclusiveStartKey`.
/// - Every request keeps the query's own sort-key condition and its `_entity` filter, so no
///   item of another partition key, another entity, or outside the condition comes back.
///
/// What a forged cursor can do: choose where each shard resumes, so a client can skip items,
/// see items again, or get a page out of order (a false "next sort key" delays a shard), and
/// it can make DynamoDB refuse the request (an invalid `ExclusiveStartKey` is an error). It
/// never sees an item the same query could not return.
///
/// What a cursor reveals: it is readable by anyone who holds it. It contains the key values
/// of the last item emitted from each shard (for a GSI query, that item's base table keys,
/// too) and the sort key of each shard's *next* item, which the caller has not been shown
/// yet (on a leaderboard: the next score and player id of every shard).
///
/// So hand a cursor to an untrusted client only if the client may run that query anyway and
/// may see the keys it contains; decide who may read what from the request's own
/// credentials, never from the cursor. To make it tamper-proof or secret, wrap it: sign it
/// with an HMAC, or encrypt it, with a key your service keeps, or keep it server-side and give
/// the client an id.
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
    #[error("the cursor has format version {0}, this version of sharded reads version 1; restart the listing")]
    Version(u8),
    /// The checksum does not match: the token was changed.
    #[error("the cursor was modified or corrupted (checksum mismatch); pass it back unchanged")]
    Tampered,
    /// The cursor was made for a different shard count.
    #[error("the cursor was made for {cursor} shards but the query has {query} (was `n` changed?); restart the listing")]
    ShardCount {
        /// Shards in the cursor.
        cursor: u32,
        /// Shards in the query.
        query: u32,
    },
    /// The cursor belongs to another query.
    #[error(
        "the cursor belongs to another query (entity, index, partition key, sort-key condition or \
         order differ); use it only with the query that returned it"
    )]
    WrongQuery,
}

/// Where one shard stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ShardPosition {
    /// Not queried yet: start at the beginning.
    Start,
    /// Every item was emitted.
    Done,
    /// Continue after the item with these key values (in the engine's key order).
    After {
        /// Key values of the last emitted item.
        key: Vec<AttributeValue>,
        /// The sort key of the shard's next item, when it was seen.
        next: Option<AttributeValue>,
    },
}

/// A hash identifying a query, so a cursor cannot be replayed against another one.
#[derive(Debug, Default)]
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

/// Encodes shard positions into a cursor.
pub(crate) fn encode(fingerprint: u64, positions: &[ShardPosition]) -> Cursor {
    let mut out = Vec::with_capacity(16 + positions.len() * 48);
    out.push(VERSION);
    out.extend_from_slice(&fingerprint.to_be_bytes());
    out.extend_from_slice(&(positions.len() as u32).to_be_bytes());
    for position in positions {
        match position {
            ShardPosition::Start => out.push(0),
            ShardPosition::Done => out.push(1),
            ShardPosition::After { key, next } => {
                out.push(2);
                out.push(key.len() as u8);
                for value in key {
                    write_value(&mut out, value);
                }
                match next {
                    Some(value) => {
                        out.push(1);
                        write_value(&mut out, value);
                    }
                    None => out.push(0),
                }
            }
        }
    }
    let checksum = fnv1a64(&out);
    out.extend_from_slice(&checksum.to_be_bytes());
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

/// Decodes a cursor, checking it against the query's fingerprint and shard count.
pub(crate) fn decode(
    cursor: &Cursor,
    fingerprint: u64,
    shards: u32,
) -> Result<Vec<ShardPosition>, CursorError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor.0.as_bytes())
        .map_err(|e| CursorError::Malformed(format!("not base64url: {e}")))?;
    if bytes.len() < 1 + 8 + 4 + 8 {
        return Err(CursorError::Malformed("too short".into()));
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 8);
    if body[0] != VERSION {
        return Err(CursorError::Version(body[0]));
    }
    let checksum = u64::from_be_bytes(
        checksum
            .try_into()
            .map_err(|_| CursorError::Malformed("checksum".into()))?,
    );
    if fnv1a64(body) != checksum {
        return Err(CursorError::Tampered);
    }
    let mut reader = Reader { bytes: &body[1..] };
    let found_fingerprint = reader.u64()?;
    let count = reader.u32()?;
    if count != shards {
        return Err(CursorError::ShardCount {
            cursor: count,
            query: shards,
        });
    }
    if found_fingerprint != fingerprint {
        return Err(CursorError::WrongQuery);
    }
    let mut positions = Vec::with_capacity(count as usize);
    for _ in 0..count {
        positions.push(match reader.u8()? {
            0 => ShardPosition::Start,
            1 => ShardPosition::Done,
            2 => {
                let n = reader.u8()?;
                let key = (0..n)
                    .map(|_| reader.value())
                    .collect::<Result<Vec<_>, _>>()?;
                let next = match reader.u8()? {
                    0 => None,
                    1 => Some(reader.value()?),
                    other => {
                        return Err(CursorError::Malformed(format!(
                            "unknown next-key flag {other}"
                        )))
                    }
                };
                ShardPosition::After { key, next }
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
    Ok(positions)
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

    fn sample() -> Vec<ShardPosition> {
        vec![
            ShardPosition::Start,
            ShardPosition::Done,
            ShardPosition::After {
                key: vec![
                    AttributeValue::S("SCORE#001#p$231".into()),
                    AttributeValue::N("-1.5".into()),
                ],
                next: Some(AttributeValue::S("SCORE#002#p".into())),
            },
            ShardPosition::After {
                key: vec![AttributeValue::B(Blob::new(vec![0, 255]))],
                next: None,
            },
        ]
    }

    #[test]
    fn roundtrip() {
        let c = encode(42, &sample());
        assert!(c
            .as_str()
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(decode(&c, 42, 4).unwrap(), sample());
    }

    /// The byte layout of the `Cursor` docs, byte by byte: big-endian integers, the state
    /// tags, the value tags and lengths, the checksum. The token text was computed
    /// independently (Python: `struct.pack(">Q", ...)`, `base64.urlsafe_b64encode`).
    #[test]
    fn byte_layout_is_pinned() {
        let positions = vec![
            ShardPosition::Start,
            ShardPosition::Done,
            ShardPosition::After {
                key: vec![AttributeValue::S("ab".into())],
                next: Some(AttributeValue::S("c".into())),
            },
            ShardPosition::After {
                key: vec![
                    AttributeValue::N("7".into()),
                    AttributeValue::B(Blob::new(vec![0xff])),
                ],
                next: None,
            },
        ];
        let c = encode(0x0102_0304_0506_0708, &positions);
        #[rustfmt::skip]
        let body: &[u8] = &[
            1,                                  // version
            1, 2, 3, 4, 5, 6, 7, 8,             // fingerprint, u64 BE
            0, 0, 0, 4,                         // shard count, u32 BE
            0,                                  // shard 0: not started
            1,                                  // shard 1: finished
            2, 1,                               // shard 2: after an item, 1 position value
            0, 0, 0, 0, 2, b'a', b'b',          //   S, length 2 (u32 BE), "ab"
            1, 0, 0, 0, 0, 1, b'c',             //   next sort key follows: S "c"
            2, 2,                               // shard 3: after an item, 2 position values
            1, 0, 0, 0, 1, b'7',                //   N "7"
            2, 0, 0, 0, 1, 0xff,                //   B [0xff]
            0,                                  //   no next sort key
        ];
        let mut raw = body.to_vec();
        raw.extend_from_slice(&0x394a_8465_32c4_1c17u64.to_be_bytes()); // checksum, u64 BE
        assert_eq!(fnv1a64(body), 0x394a_8465_32c4_1c17);
        assert_eq!(URL_SAFE_NO_PAD.decode(c.as_str()).unwrap(), raw);
        assert_eq!(
            c.as_str(),
            "AQECAwQFBgcIAAAABAABAgEAAAAAAmFiAQAAAAABYwICAQAAAAE3AgAAAAH_ADlKhGUyxBwX"
        );
        assert_eq!(decode(&c, 0x0102_0304_0506_0708, 4).unwrap(), positions);
    }

    /// The fingerprint's parts are length-prefixed (u32 BE) UTF-8.
    #[test]
    fn fingerprint_layout_is_pinned() {
        let fp = Fingerprint::new().part("Score").part("").finish();
        assert_eq!(fp, fnv1a64(b"\0\0\0\x05Score\0\0\0\0"));
        assert_eq!(fp, 0xe11f_034a_2a3d_7e84);
    }

    /// What the docs promise *not* to do: the checksum has no key, so an edited cursor with a
    /// recomputed checksum is accepted. Safety against forged cursors comes from the engine
    /// rebuilding the partition key, condition and entity filter from the query.
    #[test]
    fn cursor_is_not_authenticated_an_edit_with_a_new_checksum_is_accepted() {
        let c = encode(42, &sample());
        let raw = URL_SAFE_NO_PAD.decode(c.as_str()).unwrap();
        let mut body = raw[..raw.len() - 8].to_vec();
        let at = body.windows(5).position(|w| w == b"SCORE").unwrap();
        body[at + 6] = b'9'; // SCORE#001 -> SCORE#901
        let checksum = fnv1a64(&body);
        body.extend_from_slice(&checksum.to_be_bytes());
        let forged = Cursor(URL_SAFE_NO_PAD.encode(&body));
        let positions = decode(&forged, 42, 4).unwrap();
        assert!(matches!(
            &positions[2],
            ShardPosition::After { key, .. } if key[0] == AttributeValue::S("SCORE#901#p$231".into())
        ));
    }

    #[test]
    fn every_single_byte_change_is_refused() {
        let c = encode(42, &sample());
        let raw = URL_SAFE_NO_PAD.decode(c.as_str()).unwrap();
        for i in 0..raw.len() {
            for bit in [1u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let token = Cursor(URL_SAFE_NO_PAD.encode(&bad));
                assert!(
                    decode(&token, 42, 4).is_err(),
                    "flip of bit {bit} at byte {i} accepted"
                );
            }
        }
    }

    #[test]
    fn other_queries_and_garbage_are_refused_with_reasons() {
        let c = encode(42, &sample());
        assert_eq!(decode(&c, 43, 4), Err(CursorError::WrongQuery));
        assert_eq!(
            decode(&c, 42, 5),
            Err(CursorError::ShardCount {
                cursor: 4,
                query: 5
            })
        );
        assert!(matches!(
            decode(&Cursor("!!".into()), 42, 4),
            Err(CursorError::Malformed(_))
        ));
        assert!(matches!(
            decode(&Cursor("AAAA".into()), 42, 4),
            Err(CursorError::Malformed(_))
        ));
        assert!(matches!(
            decode(&Cursor(String::new()), 42, 4),
            Err(CursorError::Malformed(_))
        ));
        let mut truncated = c.as_str().to_owned();
        truncated.truncate(truncated.len() - 3);
        assert!(decode(&Cursor(truncated), 42, 4).is_err());
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
