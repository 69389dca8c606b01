//! The cross-shard cursor: where each shard of a scatter-gather query stopped.
//!
//! # Format (version 1)
//!
//! base64url (no padding) of:
//!
//! ```text
//! u8   version = 1
//! u64  query fingerprint (entity, index, logical key, sort condition, order; see `Fingerprint`)
//! u32  shard count
//! per shard, in shard order:
//!   u8 tag: 0 = not started, 1 = finished, 2 = after an item
//!   for tag 2: u8 count, then that many key values, then u8 (0/1) and, if 1, the next
//!              item's sort key value; a value is u8 type (0 = S, 1 = N, 2 = B), u32 length, bytes
//! u64  checksum: FNV-1a 64 of every byte above
//! ```
//!
//! A shard's position is the key of the last item the merge *emitted* from it (not the last
//! one DynamoDB returned: buffered items that were not emitted are fetched again), so
//! resuming yields exactly the next items: no duplicate, no gap, at any page size.
//!
//! When the engine already saw the shard's next item, the cursor also records that item's
//! sort key. The next page then seeds the merge with it and fetches the shard only when the
//! merge reaches it: a page of 1 from 10 shards costs one request, not ten.
//!
//! The checksum catches corrupted or edited tokens and the fingerprint catches a cursor
//! passed to another query. They are integrity checks, not a secret: a cursor holds only keys
//! of items the caller was already shown, and the engine takes only the sort position from it
//! (the partition key of every shard request is rebuilt from the query), so a forged cursor
//! cannot reach another partition.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::keys::hash::fnv1a64;

const VERSION: u8 = 1;

/// An opaque position in a scatter-gather query, to resume from with
/// [`Query::page`](crate::access::query::Query::page).
///
/// It is a plain string, safe in URLs: hand it to clients and take it back.
///
/// ```
/// use sharded::Cursor;
/// let c: Cursor = "AQ".parse().unwrap(); // parsing only stores the text; checks happen on use
/// assert_eq!(c.as_str(), "AQ");
/// ```
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
