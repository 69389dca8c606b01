//! The one wire codec of every token the crate hands out: the query and range cursors, the
//! description of the query a cursor is bound to, and the migration's checkpoint
//! (`sharded-ops`, through `__ops`). Each format is its list of fields; how a field is
//! spelled, and how a reader refuses a token that overruns, is written once here.
//!
//! Fields, big-endian:
//!
//! ```text
//! u8, u32             themselves
//! bytes, str          u32 length + the bytes (a str's are UTF-8)
//! key value           u8 type (0 S, 1 N, 2 B) + bytes; any other type is written as an empty S
//! checksum            u64 FNV-1a 64 (sharded::hash::fnv1a64) of every byte before it
//! token               the bytes in base64url, without padding
//! ```
//!
//! A leaf: it imports only the key model's hash, so the error type can convert its refusal.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::keys::hash::fnv1a64;

/// Why a token's bytes could not be read, in a few words (`truncated`, `trailing bytes`): each
/// format wraps it in its own error, with what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

/// The bytes of a token, field by field.
#[derive(Debug, Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    /// A writer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Writer(Vec::with_capacity(capacity))
    }

    /// One byte: a version, a flag, a tag.
    pub fn u8(&mut self, byte: u8) {
        self.0.push(byte);
    }

    /// A `u32`, big-endian: a count.
    pub fn u32(&mut self, n: u32) {
        self.0.extend_from_slice(&n.to_be_bytes());
    }

    /// Bytes as they are, with no length: a fingerprint, a tag of known size.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// Bytes behind their length.
    pub fn bytes(&mut self, bytes: &[u8]) {
        self.u32(bytes.len() as u32);
        self.raw(bytes);
    }

    /// Text behind its length.
    pub fn str(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    /// A key attribute's value: S, N or B, each behind its type (0, 1, 2). Returns `false`,
    /// writing nothing, for a value of another type, which the format spells its own way.
    pub fn scalar(&mut self, value: &AttributeValue) -> bool {
        let (tag, bytes): (u8, &[u8]) = match value {
            AttributeValue::S(s) => (0, s.as_bytes()),
            AttributeValue::N(n) => (1, n.as_bytes()),
            AttributeValue::B(b) => (2, b.as_ref()),
            _ => return false,
        };
        self.u8(tag);
        self.bytes(bytes);
        true
    }

    /// A key value ([`scalar`](Self::scalar)); a key attribute is S, N or B, so anything else
    /// is written as an empty S.
    pub fn key_value(&mut self, value: &AttributeValue) {
        if !self.scalar(value) {
            self.u8(0);
            self.bytes(b"");
        }
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes, without a checksum (the caller seals them, or hashes them).
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The token: the bytes and their checksum, in base64url.
    pub fn checksummed(mut self) -> String {
        let checksum = fnv1a64(&self.0);
        self.0.extend_from_slice(&checksum.to_be_bytes());
        encode(&self.0)
    }
}

/// Bytes as a token: base64url, without padding.
pub fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A token's bytes; anything but base64url is refused.
pub fn decode(token: &str) -> Result<Vec<u8>, Malformed> {
    URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|e| Malformed(format!("not base64url: {e}")))
}

/// The bytes before the checksum that ends `bytes`, when it is theirs; `None` when it is not
/// (a token changed or cut) or there is no room for one.
pub fn verify_checksum(bytes: &[u8]) -> Option<&[u8]> {
    let split = bytes.len().checked_sub(8)?;
    let (body, checksum) = bytes.split_at(split);
    let checksum = u64::from_be_bytes(checksum.try_into().ok()?);
    (fnv1a64(body) == checksum).then_some(body)
}

/// Reads a token's fields in order, refusing any overrun.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.bytes.len() < n {
            return Err(Malformed("truncated".to_owned()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    /// A `u32`, big-endian.
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(b))
    }

    /// Bytes behind their length.
    pub fn bytes(&mut self) -> Result<Vec<u8>, Malformed> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    /// Text behind its length.
    pub fn str(&mut self) -> Result<String, Malformed> {
        String::from_utf8(self.bytes()?).map_err(|_| Malformed("text that is not UTF-8".to_owned()))
    }

    /// A value of type `tag` written by [`Writer::scalar`]: `None` for a type it does not
    /// write, which the format reads its own way.
    pub fn scalar(&mut self, tag: u8) -> Result<Option<AttributeValue>, Malformed> {
        Ok(Some(match tag {
            0 => AttributeValue::S(self.str()?),
            1 => AttributeValue::N(self.str()?),
            2 => AttributeValue::B(Blob::new(self.bytes()?)),
            _ => return Ok(None),
        }))
    }

    /// A key value written by [`Writer::key_value`].
    pub fn key_value(&mut self) -> Result<AttributeValue, Malformed> {
        let tag = self.u8()?;
        self.scalar(tag)?
            .ok_or_else(|| Malformed(format!("unknown value type {tag}")))
    }

    /// Refuses bytes left after the last field.
    pub fn finish(self) -> Result<(), Malformed> {
        match self.bytes.is_empty() {
            true => Ok(()),
            false => Err(Malformed("trailing bytes".to_owned())),
        }
    }
}
