//! Where a migration is: the position of every scan segment (or partition) in an opaque,
//! checksummed token, so a migration stopped by a crash resumes where it was.
//!
//! Token bytes, before base64url without padding:
//!
//! ```text
//! u8      version (1)
//! str     table, entity, layout (the entity's layout description when it was taken)
//! u8      scope: 0 = the table (segments), 1 = one logical key (partitions),
//!         2 = a unit of the table's segments
//! [scope 1] str logical key
//! [scope 2] u32 BE first segment, u32 BE total segments (the parts are the unit's segments)
//! u32 BE  parts, then per part:
//!         [scope 1] str partition key
//!         u8 0 = not started, 1 = done, 2 = after a key: u8 attributes, then per attribute
//!            str name, u8 type (0 S, 1 N, 2 B), str value (bytes for B)
//! u64 BE  FNV-1a 64 (sharded::hash::fnv1a64) of every byte above
//! str = u32 BE length + UTF-8 bytes
//! ```
//!
//! Written and read with the runtime's wire codec (`token`, through `__ops`), the one every
//! token of the crate uses.

use std::fmt;
use std::str::FromStr;

use aws_sdk_dynamodb::types::AttributeValue;
use sharded_runtime::__ops::{decode_token, verify_checksum, Malformed, Reader, Writer};
use sharded_runtime::keys::Item;

const VERSION: u8 = 1;

/// Where a migration is: for every scan segment (or, for one logical key, every partition),
/// whether it is done and the key it resumes after. Offered after every page a migration
/// finishes (`Migration::on_checkpoint`); give it to `Migration::resume_from` to go on from
/// there after a crash.
///
/// A checkpoint never passes an item the migration could not move: a segment (or partition)
/// whose page held such an item stays at the start of that page, so a run resumed from it
/// reads the page again and retries the item, and a checkpoint is
/// [complete](Self::is_complete) only when every item was dealt with.
///
/// It is an opaque token ([`to_token`](Self::to_token), [`Display`](fmt::Display)), URL-safe,
/// checksummed against typing errors (not authenticated: it holds table keys, keep it where
/// the table's data may go), and serialises as that string with serde, so it fits a state
/// file or a table item. A token from another table, entity or layout is refused when the
/// migration starts, naming what differs.
///
/// ```
/// use sharded::migrate::Checkpoint;
/// # fn demo(checkpoint: &Checkpoint) -> Result<(), sharded::migrate::CheckpointError> {
/// let saved = checkpoint.to_token();                      // store it anywhere
/// let restored: Checkpoint = saved.parse()?;     // after the crash
/// assert_eq!(&restored, checkpoint);
/// println!("{} of {} segments done", restored.parts_done(), restored.parts());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub(crate) table: String,
    pub(crate) entity: String,
    pub(crate) layout: String,
    pub(crate) scope: Scope,
    pub(crate) positions: Vec<Position>,
}

/// Why a token is not a migration checkpoint (not base64url, cut, changed, of another release),
/// from [`Checkpoint::from_token`] or `parse`. It converts into
/// [`MigrateError::InvalidCheckpoint`](super::MigrateError::InvalidCheckpoint) with `?`.
///
/// ```
/// use sharded::migrate::{Checkpoint, CheckpointError, MigrateError};
/// let refused: CheckpointError = "%%%".parse::<Checkpoint>().unwrap_err();
/// assert!(matches!(MigrateError::from(refused), MigrateError::InvalidCheckpoint(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid migration checkpoint: {0}")]
pub struct CheckpointError(pub(crate) String);

/// What a migration reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The whole table, in this many scan segments (one position each).
    Table,
    /// The segments `first..first + positions` of a scan of the table in `total` segments:
    /// one unit of a migration cut into units (one position per segment of the unit).
    Segments {
        /// The unit's first segment.
        first: u32,
        /// The scan's `TotalSegments`.
        total: u32,
    },
    /// The partitions of one logical key (one position each).
    Key {
        /// The logical key.
        logical: String,
        /// Its previous layout's partition keys, one position each.
        partitions: Vec<String>,
    },
}

/// Where one segment or partition is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Position {
    /// Not read yet.
    Start,
    /// Read up to and including this key (DynamoDB's `LastEvaluatedKey`); every item of the
    /// pages before it has been dealt with, none of them failed.
    After(Item),
    /// Read to the end.
    Done,
}

impl Eq for Position {}

impl Checkpoint {
    /// The checkpoint as a token: base64url, no padding.
    ///
    /// ```
    /// # fn demo(checkpoint: &sharded::migrate::Checkpoint) {
    /// let token: String = checkpoint.to_token();
    /// assert!(token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    /// # }
    /// ```
    pub fn to_token(&self) -> String {
        let mut out = Writer::default();
        out.u8(VERSION);
        out.str(&self.table);
        out.str(&self.entity);
        out.str(&self.layout);
        let partitions = match &self.scope {
            Scope::Table => {
                out.u8(0);
                None
            }
            Scope::Segments { first, total } => {
                out.u8(2);
                out.u32(*first);
                out.u32(*total);
                None
            }
            Scope::Key {
                logical,
                partitions,
            } => {
                out.u8(1);
                out.str(logical);
                Some(partitions)
            }
        };
        out.u32(self.positions.len() as u32);
        for (i, position) in self.positions.iter().enumerate() {
            if let Some(partitions) = partitions {
                out.str(partitions.get(i).map_or("", String::as_str));
            }
            match position {
                Position::Start => out.u8(0),
                Position::Done => out.u8(1),
                Position::After(key) => {
                    out.u8(2);
                    let mut attributes: Vec<(&String, &AttributeValue)> = key.iter().collect();
                    attributes.sort_by(|a, b| a.0.cmp(b.0));
                    out.u8(attributes.len().min(u8::MAX as usize) as u8);
                    for (name, value) in attributes.into_iter().take(u8::MAX as usize) {
                        out.str(name);
                        // Key attributes are S, N or B; sharded's keys are all S.
                        out.key_value(value);
                    }
                }
            }
        }
        out.checksummed()
    }

    /// Reads a token made by [`to_token`](Self::to_token); anything else (truncated, edited,
    /// not base64url) is a [`CheckpointError`] saying what is wrong.
    ///
    /// ```
    /// use sharded::migrate::Checkpoint;
    /// let refused = Checkpoint::from_token("not a token").unwrap_err();
    /// assert!(refused.to_string().contains("not a migration checkpoint"));
    /// ```
    pub fn from_token(token: &str) -> Result<Self, CheckpointError> {
        let invalid = |why: &str| {
            CheckpointError(format!(
                "not a migration checkpoint ({why}): pass the token `Checkpoint::to_token` \
                 made, unchanged"
            ))
        };
        let bytes = decode_token(token.trim()).map_err(|_| invalid("not base64url"))?;
        if bytes.len() < 9 {
            return Err(invalid("too short"));
        }
        let body = verify_checksum(&bytes)
            .ok_or_else(|| invalid("checksum mismatch: the token was changed or cut"))?;
        let read = |malformed: Malformed| invalid(&malformed.0);
        let mut r = Reader::new(body);
        if r.u8().map_err(read)? != VERSION {
            return Err(invalid(
                "an unknown version: made by another release of sharded",
            ));
        }
        let table = r.str().map_err(read)?;
        let entity = r.str().map_err(read)?;
        let layout = r.str().map_err(read)?;
        let (keyed, segments) = match r.u8().map_err(read)? {
            0 => (None, None),
            1 => (Some(r.str().map_err(read)?), None),
            2 => (None, Some((r.u32().map_err(read)?, r.u32().map_err(read)?))),
            _ => return Err(invalid("an unknown scope")),
        };
        let count = r.u32().map_err(read)? as usize;
        // Every part takes at least one byte: a count beyond the bytes left is a lie.
        if count > r.remaining() {
            return Err(invalid("more parts than bytes"));
        }
        let mut partitions = Vec::new();
        let mut positions = Vec::with_capacity(count);
        for _ in 0..count {
            if keyed.is_some() {
                partitions.push(r.str().map_err(read)?);
            }
            positions.push(match r.u8().map_err(read)? {
                0 => Position::Start,
                1 => Position::Done,
                2 => {
                    let mut key = Item::new();
                    for _ in 0..r.u8().map_err(read)? {
                        let name = r.str().map_err(read)?;
                        let value = r.key_value().map_err(read)?;
                        key.insert(name, value);
                    }
                    Position::After(key)
                }
                _ => return Err(invalid("an unknown position")),
            });
        }
        r.finish().map_err(read)?;
        let scope = match (keyed, segments) {
            (Some(logical), _) => Scope::Key {
                logical,
                partitions,
            },
            (None, Some((first, total))) => {
                let fits = u32::try_from(positions.len())
                    .ok()
                    .and_then(|count| first.checked_add(count))
                    .is_some_and(|end| end <= total);
                if !fits {
                    return Err(invalid("a unit's segments beyond the scan's total"));
                }
                Scope::Segments { first, total }
            }
            (None, None) => Scope::Table,
        };
        Ok(Checkpoint {
            table,
            entity,
            layout,
            scope,
            positions,
        })
    }

    /// The number of scan segments (or partitions) the migration reads.
    ///
    /// ```
    /// # fn demo(checkpoint: &sharded::migrate::Checkpoint) {
    /// assert!(checkpoint.parts_done() <= checkpoint.parts());
    /// # }
    /// ```
    pub fn parts(&self) -> usize {
        self.positions.len()
    }

    /// How many of them have been read to the end.
    ///
    /// ```
    /// # fn demo(checkpoint: &sharded::migrate::Checkpoint) {
    /// println!("{}/{} segments done", checkpoint.parts_done(), checkpoint.parts());
    /// # }
    /// ```
    pub fn parts_done(&self) -> usize {
        self.positions
            .iter()
            .filter(|p| matches!(p, Position::Done))
            .count()
    }

    /// Whether every segment (or partition) has been read to the end with every item dealt
    /// with: a migration resumed from here has nothing left to read. Never true for a run
    /// with an item it could not move, whose segment stays at the page that holds the item.
    ///
    /// ```
    /// # fn demo(checkpoint: &sharded::migrate::Checkpoint) {
    /// if checkpoint.is_complete() {
    ///     println!("done");
    /// }
    /// # }
    /// ```
    pub fn is_complete(&self) -> bool {
        self.parts_done() == self.parts()
    }

    /// The table the migration runs on.
    ///
    /// ```
    /// # fn demo(checkpoint: &sharded::migrate::Checkpoint) {
    /// println!("migrating table {}", checkpoint.table());
    /// # }
    /// ```
    pub fn table(&self) -> &str {
        &self.table
    }
}

impl fmt::Display for Checkpoint {
    /// The token ([`Checkpoint::to_token`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_token())
    }
}

impl FromStr for Checkpoint {
    type Err = CheckpointError;

    /// [`Checkpoint::from_token`].
    fn from_str(token: &str) -> Result<Self, CheckpointError> {
        Checkpoint::from_token(token)
    }
}

impl serde::Serialize for Checkpoint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_token())
    }
}

impl<'de> serde::Deserialize<'de> for Checkpoint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let token = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Checkpoint::from_token(&token).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::primitives::Blob;
    use sharded_runtime::__ops::encode_token;

    fn sample(scope: Scope) -> Checkpoint {
        let after = Item::from([
            ("pk".to_owned(), AttributeValue::S("GAME#g1".into())),
            ("sk".to_owned(), AttributeValue::S("SCORE#1#p$231".into())),
            ("n".to_owned(), AttributeValue::N("-1.5".into())),
            ("b".to_owned(), AttributeValue::B(Blob::new(vec![0, 255]))),
        ]);
        Checkpoint {
            table: "leaderboard".into(),
            entity: "Score".into(),
            layout: "GAME#{game_id}#<shard 0..20>, previously #<shard 0..10>".into(),
            positions: match &scope {
                Scope::Table | Scope::Segments { .. } => {
                    vec![Position::Start, Position::After(after), Position::Done]
                }
                Scope::Key { partitions, .. } => partitions
                    .iter()
                    .map(|_| Position::After(after.clone()))
                    .collect(),
            },
            scope,
        }
    }

    #[test]
    fn tokens_read_back_as_they_were() {
        for scope in [
            Scope::Table,
            Scope::Segments {
                first: 4,
                total: 16,
            },
            Scope::Key {
                logical: "GAME#g1".into(),
                partitions: vec!["GAME#g1#0".into(), "GAME#g1".into()],
            },
        ] {
            let checkpoint = sample(scope);
            let token = checkpoint.to_token();
            assert_eq!(Checkpoint::from_token(&token).unwrap(), checkpoint);
            assert_eq!(token.parse::<Checkpoint>().unwrap(), checkpoint);
        }
        let checkpoint = sample(Scope::Table);
        assert_eq!((checkpoint.parts(), checkpoint.parts_done()), (3, 1));
        assert!(!checkpoint.is_complete());
    }

    #[test]
    fn a_changed_or_cut_token_is_refused_never_misread() {
        let token = sample(Scope::Table).to_token();
        let mut bytes = decode_token(&token).unwrap();
        for i in 0..bytes.len() {
            bytes[i] ^= 0x20;
            let edited = encode_token(&bytes);
            assert!(Checkpoint::from_token(&edited).is_err(), "byte {i}");
            bytes[i] ^= 0x20;
        }
        for cut in 0..token.len() {
            assert!(
                Checkpoint::from_token(&token[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        for junk in ["", "%%%", "AAAA", &"A".repeat(200)] {
            let err = Checkpoint::from_token(junk).unwrap_err().to_string();
            assert!(err.contains("not a migration checkpoint"), "{err}");
        }
    }

    #[test]
    fn a_forged_count_with_a_valid_checksum_is_refused_without_allocating_it() {
        let mut body = Writer::default();
        body.u8(VERSION);
        for s in ["t", "E", "L"] {
            body.str(s);
        }
        body.u8(0);
        body.u32(u32::MAX);
        let token = body.checksummed();
        assert!(Checkpoint::from_token(&token).is_err());
    }
}
