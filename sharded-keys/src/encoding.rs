//! How field values are written into key strings: the [`KeyPart`] trait and its encodings.
//!
//! The encodings are documented on [`KeyPart`], where users of the crate read them; the shard
//! hash specification ([`hash`](crate::hash)) restates them as canonical bytes.

use std::fmt;

/// A value that can be written into a DynamoDB key by a key template.
///
/// ```
/// use sharded::keys::KeyPart;
///
/// let mut key = String::from("SCORE#");
/// 1234u64.write_key(&mut key).unwrap();
/// assert_eq!(key, "SCORE#00000000000000001234");
/// ```
///
/// Implementations must be *order-preserving* (if `a < b` then the encoding of `a` is
/// byte-wise smaller than the encoding of `b`), *injective* (two different values never encode
/// the same) and must never write `#` or any byte below `0x24`, so that fields joined with `#`
/// stay unambiguous. The encoding is also what the shard hash hashes
/// ([`hash`](crate::hash)), so changing the encoding of a type moves its items to other shards.
///
/// # Built-in encodings
///
/// DynamoDB compares string keys by their UTF-8 bytes. Every encoding here is chosen so that
/// comparing two *encoded* keys byte by byte gives the same answer as comparing the original
/// values, also when several fields are joined into one composite key with `#`:
///
/// | type | encoding | example |
/// |---|---|---|
/// | `u8` `u16` `u32` `u64` `u128` `usize` | zero-padded decimal, fixed width (3, 5, 10, 20, 39, 20 digits) | `42u64` -> `00000000000000000042` |
/// | `i8` `i16` `i32` `i64` `i128` `isize` | sign byte (`-` below `0`), then for a negative value its offset from `MIN`, else the value, zero-padded to the digits of `MAX` (3, 5, 10, 19, 39, 19) | `-1i64` -> `-9223372036854775807`, `5i64` -> `00000000000000000005` |
/// | `bool` | `false` / `true` | |
/// | `str`, `String` | the text, with every byte `<= 0x24` (controls, space, `!`, `"`, `#`, `$`) written as `$` and two upper-case hex digits; an empty string is refused | `a b#c` -> `a$20b$23c` |
/// | `chrono::DateTime<Utc>` (feature `chrono`) | RFC 3339, UTC, nine fraction digits, `Z`: fixed width; years 0 to 9999 | `2026-06-22T01:00:00.000000000Z` |
/// | `chrono::NaiveDate` (feature `chrono`) | `YYYY-MM-DD`; years 0 to 9999 | `2026-06-22` |
/// | `uuid::Uuid` (feature `uuid`) | lower-case hyphenated | `67e55044-10b1-426f-9247-bb680e5fe0c8` |
///
/// Why the string escape is order-preserving and unforgeable: after escaping, no encoded value
/// contains `#` (0x23), and every byte of an encoded value is `>= 0x24`. So the `#` that joins
/// two fields is smaller than any byte a value can continue with: a value that is a prefix of
/// another sorts first, exactly as in a tuple comparison; and a value containing `#` can never
/// end a field early and forge the key of another item. Escaped bytes keep their order among
/// themselves (upper-case hex sorts like the byte) and sort below every unescaped byte, as the
/// original bytes did. Multi-byte UTF-8 is never escaped and keeps code point order.
///
/// Floats are not key parts: they have no exact decimal form, `NaN` has no order, and `-0.0`
/// equals `0.0` while encoding differently. Store an integer (cents, micro-units) instead.
///
/// Each encoding is also the only text its type parses back from ([`KeyPartDecode`]): a
/// key is refused in any other spelling (`2026-06-22T01:00:00Z`, an upper-case UUID, `42`
/// for a `u64`), so a parsed key always builds back to itself.
///
/// Your own types join by implementing [`KeyPart`] (and [`KeyPartDecode`] to parse keys back,
/// accepting exactly what `write_key` writes):
///
/// ```
/// use sharded::{keys::KeyPart, keys::KeyPartDecode, keys::KeyPartError};
///
/// /// A region code, always two ASCII upper-case letters.
/// struct Region([u8; 2]);
///
/// impl KeyPart for Region {
///     fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
///         out.push(self.0[0] as char);
///         out.push(self.0[1] as char);
///         Ok(())
///     }
/// }
///
/// impl KeyPartDecode for Region {
///     fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
///         match encoded.as_bytes() {
///             [a, b] if a.is_ascii_uppercase() && b.is_ascii_uppercase() => Ok(Region([*a, *b])),
///             _ => Err(KeyPartError::invalid("a region is two upper-case letters")),
///         }
///     }
/// }
///
/// let mut key = String::new();
/// Region(*b"EU").write_key(&mut key).unwrap();
/// assert_eq!(key, "EU");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used in a DynamoDB key",
    label = "this type has no key encoding",
    note = "key fields need an order-preserving encoding: use an integer, `String`, `bool`, or implement `sharded::keys::KeyPart` (and `KeyPartDecode`) for `{Self}`"
)]
pub trait KeyPart {
    /// Appends the encoded value to `out`.
    ///
    /// Returns an error when the value cannot be part of a key (an empty string, a timestamp
    /// outside the years 0 to 9999).
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError>;
}

/// A [`KeyPart`] that can be read back from its encoding, used when parsing physical keys.
///
/// ```
/// use sharded::keys::KeyPartDecode;
///
/// assert_eq!(u64::decode_key("00000000000000001234").unwrap(), 1234);
/// assert_eq!(String::decode_key("a$20b$23c").unwrap(), "a b#c");
///
/// // Only the exact text `write_key` writes parses back: `1234` is the same number, but
/// // not its key.
/// let err = u64::decode_key("1234").unwrap_err();
/// assert!(err.to_string().contains("`00000000000000001234`"), "{err}");
/// ```
///
/// # Canonical only
///
/// A decoder must accept exactly the texts its [`KeyPart`] writes: `decode_key(s)` succeeds
/// only when writing the result gives back `s` itself. A decoder that also took another
/// spelling (upper-case hex, a `+00:00` offset, an unpadded number) would read a key into a
/// value whose own key is a different one: a `get` or `delete` built from the parsed fields
/// would address another item than the one the key was read from, and the shard hash would
/// hash other bytes. Every built-in decoder is canonical-only and refuses other spellings with a
/// [`KeyPartError::Invalid`] that names the form expected: for `2026-1-2` read as a date,
/// "expected YYYY-MM-DD such as `2026-01-02`".
///
/// The generated `parse_*` functions enforce the rule for every type, your own included: after
/// decoding a field they write the value again with [`KeyPart::write_key`] and refuse the key
/// when that differs from the text they read. A lenient decoder therefore costs a refused key,
/// never a wrong one; it is still better to refuse at the source, with a message that names
/// the form.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be parsed back out of a DynamoDB key",
    label = "this key field type has no key decoding",
    note = "key fields are parsed back by the generated `parse_*` functions: implement `sharded::keys::KeyPartDecode` for `{Self}` next to its `KeyPart`"
)]
pub trait KeyPartDecode: Sized {
    /// Parses one encoded field value (never containing `#`).
    fn decode_key(encoded: &str) -> Result<Self, KeyPartError>;
}

/// Why a single value could not be encoded into, or decoded from, a key.
///
/// The key builders wrap it into a [`KeyError`](crate::KeyError) that names the entity and
/// the field.
///
/// ```
/// use sharded::{keys::KeyPart, keys::KeyPartError};
///
/// let err = "".write_key(&mut String::new()).unwrap_err();
/// assert_eq!(err, KeyPartError::Empty);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPartError {
    /// The value is empty; DynamoDB rejects empty key strings, and an empty field would make a
    /// key that reads like a different template.
    Empty,
    /// The value (or the encoded text) is not valid for this type; the text says why.
    Invalid(String),
}

impl KeyPartError {
    /// An [`KeyPartError::Invalid`] with the given reason.
    ///
    /// ```
    /// let e = sharded::keys::KeyPartError::invalid("too long");
    /// assert_eq!(e.to_string(), "too long");
    /// ```
    pub fn invalid(reason: impl Into<String>) -> Self {
        KeyPartError::Invalid(reason.into())
    }
}

impl fmt::Display for KeyPartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyPartError::Empty => f.write_str("the value is empty"),
            KeyPartError::Invalid(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for KeyPartError {}

impl<T: KeyPart + ?Sized> KeyPart for &T {
    #[inline]
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        (**self).write_key(out)
    }
}

/// A value a typed sort-key condition takes for a key field of type `T`: the field's own type,
/// a reference to it, or a `&str` for a `String` field.
///
/// It is what makes `Score::sk_sort().eq(100).le("p5")` typed: each step takes the next
/// field's values only, so a `&str` where the template has a `u64` does not compile.
///
/// ```
/// use sharded::keys::{KeyPart, PartArg};
///
/// fn encoded<T, A: PartArg<T>>(value: A) -> String {
///     let mut out = String::new();
///     value.part().write_key(&mut out).unwrap();
///     out
/// }
/// assert_eq!(encoded::<String, _>("p5"), "p5");
/// assert_eq!(encoded::<u64, _>(7), "00000000000000000007");
/// assert_eq!(encoded::<u64, _>(&7), "00000000000000000007");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a value of the key field's type `{T}`",
    label = "expected a `{T}` here",
    note = "a sort-key condition takes the field's own type, a reference to it, or a `&str` for a `String` field, in the template's order"
)]
pub trait PartArg<T: ?Sized> {
    /// The value as a key part.
    fn part(&self) -> &dyn KeyPart;
}

impl<T: KeyPart> PartArg<T> for T {
    fn part(&self) -> &dyn KeyPart {
        self
    }
}

impl<T: KeyPart + ?Sized> PartArg<T> for &T {
    fn part(&self) -> &dyn KeyPart {
        self
    }
}

impl PartArg<String> for &str {
    fn part(&self) -> &dyn KeyPart {
        self
    }
}

/// The type of a key field the derive could not resolve (its input was refused and reported):
/// any value is accepted, so the user sees the real error and not one per condition.
#[doc(hidden)]
#[derive(Debug)]
pub enum UnknownField {}

impl<T: ?Sized> PartArg<UnknownField> for T {
    fn part(&self) -> &dyn KeyPart {
        &Unencodable
    }
}

/// The key part of a value whose type has no key encoding, or whose field the derive could
/// not resolve: what generated code falls back to after it reported the error, so it is never
/// written (the crate does not compile). One for every such fallback.
#[doc(hidden)]
#[derive(Debug)]
pub struct Unencodable;

impl KeyPart for Unencodable {
    fn write_key(&self, _: &mut String) -> Result<(), KeyPartError> {
        Err(KeyPartError::invalid("this value has no key encoding"))
    }
}

// ---------------------------------------------------------------------------------------------
// The canonical form: the one rule every decoder keeps

/// The key `value` writes, or `None` when it cannot be written.
fn key_of<T: KeyPart + ?Sized>(value: &T) -> Option<String> {
    let mut key = String::new();
    value.write_key(&mut key).ok().map(|()| key)
}

/// Checks that `value`, decoded from `encoded`, writes exactly `encoded` back.
///
/// The generated parsers run it after every [`KeyPartDecode::decode_key`], so a lenient
/// decoder of a user's type cannot turn a key into a value whose own key is another one.
#[doc(hidden)]
pub fn ensure_canonical<T: KeyPart + ?Sized>(value: &T, encoded: &str) -> Result<(), KeyPartError> {
    let mut again = String::with_capacity(encoded.len());
    match value.write_key(&mut again) {
        Ok(()) if again == encoded => Ok(()),
        Ok(()) => Err(KeyPartError::invalid(format!(
            "`{encoded}` is not the canonical key form of its value: expected `{again}`"
        ))),
        Err(e) => Err(KeyPartError::invalid(format!(
            "`{encoded}` decodes to a value that cannot be written into a key ({e})"
        ))),
    }
}

/// The refusal of `encoded`, which is not the canonical key form of `what` (`a date`):
/// `expected` names that form, `example` is a canonical key, `reason` what the decoder saw.
fn not_canonical(
    encoded: &str,
    what: &str,
    expected: impl fmt::Display,
    example: &str,
    reason: Option<&dyn fmt::Display>,
) -> KeyPartError {
    let mut message =
        format!("`{encoded}` is not the canonical key form of {what}: expected {expected}");
    if !example.is_empty() {
        message.push_str(&format!(" such as `{example}`"));
    }
    if let Some(reason) = reason {
        message.push_str(&format!(" ({reason})"));
    }
    KeyPartError::Invalid(message)
}

/// The canonical key of `near` (what a forgiving reading of the refused text gave), so the
/// message shows the key the user probably meant; else the key of `sample`.
fn example_key<T: KeyPart>(near: Option<T>, sample: T) -> String {
    near.as_ref()
        .and_then(key_of)
        .or_else(|| key_of(&sample))
        .unwrap_or_default()
}

/// `lenient` (what a forgiving parser read from `encoded`) when it writes exactly `encoded`
/// back, else the refusal naming the canonical form (`expected`) with an example.
///
/// Types whose parser accepts more than the key form (chrono's RFC 3339, `Uuid::try_parse`)
/// decode through this: one comparison makes them canonical-only, and the forgiving read
/// gives the message its example, the key the text should have been.
#[cfg(any(feature = "chrono", feature = "uuid"))]
fn canonical_only<T: KeyPart, E: fmt::Display>(
    encoded: &str,
    lenient: Result<T, E>,
    what: &str,
    expected: &str,
    sample: T,
) -> Result<T, KeyPartError> {
    match lenient {
        Ok(value) => {
            let mut key = String::with_capacity(encoded.len());
            match value.write_key(&mut key) {
                Ok(()) if key == encoded => Ok(value),
                Ok(()) => Err(not_canonical(encoded, what, expected, &key, None)),
                Err(e) => Err(not_canonical(
                    encoded,
                    what,
                    expected,
                    &example_key(None, sample),
                    Some(&e),
                )),
            }
        }
        Err(e) => Err(not_canonical(
            encoded,
            what,
            expected,
            &example_key(None, sample),
            Some(&e),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// Strings

/// Bytes at or below this are escaped as `$XX`; see the module docs for why this bound.
const ESCAPE_AT_OR_BELOW: u8 = b'$';
const HEX: &[u8; 16] = b"0123456789ABCDEF";

impl KeyPart for str {
    #[inline]
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        if self.is_empty() {
            return Err(KeyPartError::Empty);
        }
        let bytes = self.as_bytes();
        // Fast path: most ids need no escape at all, and one `push_str` is what a hand-written
        // `format!` would cost.
        if !needs_escape(bytes) {
            out.push_str(self);
            return Ok(());
        }
        out.reserve(bytes.len() + 8);
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b <= ESCAPE_AT_OR_BELOW {
                out.push_str(&self[start..i]);
                out.push('$');
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 0x0f)] as char);
                start = i + 1;
            }
        }
        out.push_str(&self[start..]);
        Ok(())
    }
}

/// Whether any byte of `bytes` must be escaped.
///
/// Deliberately without an early exit (unlike `iter().any`): an OR over the whole slice
/// compiles to a vectorised loop, 16 bytes per step, where the short-circuiting scan goes byte
/// by byte. Keys are short and nearly never need an escape, so reading to the end costs nothing.
#[inline]
fn needs_escape(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .fold(false, |found, &b| found | (b <= ESCAPE_AT_OR_BELOW))
}

impl KeyPart for String {
    #[inline]
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        self.as_str().write_key(out)
    }
}

/// The canonical string form, for messages.
const STRING_FORM: &str =
    "the text with every byte up to 0x24 written as `$` and two upper-case hex digits";

impl KeyPartDecode for String {
    fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
        if encoded.is_empty() {
            return Err(KeyPartError::Empty);
        }
        if encoded.bytes().all(|b| b > ESCAPE_AT_OR_BELOW) {
            return Ok(encoded.to_owned());
        }
        let refuse = |reason: String| {
            not_canonical(encoded, "a string", STRING_FORM, "a$20b$23c", Some(&reason))
        };
        let bytes = encoded.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'$' {
                // Upper-case hex only, and only for the bytes that must be escaped: `$2a` and
                // `$41` decode to bytes whose key is `$2A` and `A`, so they are not keys.
                let value = bytes
                    .get(i + 1..i + 3)
                    .and_then(|hex| hex_value(hex[0]).zip(hex_value(hex[1])))
                    .map(|(hi, lo)| hi << 4 | lo)
                    .filter(|&b| b <= ESCAPE_AT_OR_BELOW)
                    .ok_or_else(|| {
                        let escape: String = encoded[i..].chars().take(3).collect();
                        refuse(format!("`{escape}` at byte {i} is not an escape"))
                    })?;
                out.push(value);
                i += 3;
            } else if bytes[i] < ESCAPE_AT_OR_BELOW {
                return Err(refuse(format!(
                    "byte 0x{:02X} at {i} is not escaped",
                    bytes[i]
                )));
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        // Only ASCII bytes were replaced, so the result is valid UTF-8 whenever the input was.
        String::from_utf8(out).map_err(|_| refuse("escaped text is not valid UTF-8".into()))
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Integers

/// Writes `value` as exactly `width` decimal digits. Callers guarantee it fits.
fn push_padded(out: &mut String, value: u128, width: usize) {
    // Written by hand (not `format!("{:0w$}")`): key building is on every write's hot path and
    // the formatting machinery costs more than the digits themselves.
    let mut digits = [b'0'; 39];
    let mut i = digits.len();
    // 128-bit division is a library call; every type but `u128`/`i128` fits 64 bits.
    if let Ok(mut v) = u64::try_from(value) {
        while v > 0 {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    } else {
        let mut v = value;
        while v > 0 {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    let start = digits.len() - width;
    debug_assert!(i >= start, "value does not fit the width");
    // SAFETY-free: the slice is ASCII digits.
    out.push_str(std::str::from_utf8(&digits[start..]).unwrap_or("0"));
}

/// `encoded` as a number, when it is exactly `width` ASCII digits.
fn parse_digits(encoded: &str, width: usize) -> Option<u128> {
    if encoded.len() != width || !encoded.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    encoded.parse::<u128>().ok()
}

/// The refusal of `encoded` as an integer `what`: the fixed-width `form` from the key of
/// `min` to that of `max`, with the key of what `encoded` reads as in Rust's own syntax
/// (`12`, `+12`, `-5`) as the example, else the key of 42.
fn not_canonical_integer<T: KeyPart + std::str::FromStr>(
    encoded: &str,
    what: &str,
    form: &str,
    [min, max, sample]: [T; 3],
) -> KeyPartError {
    let (min, max) = (example_key(None, min), example_key(None, max));
    let example = example_key(encoded.parse::<T>().ok(), sample);
    not_canonical(
        encoded,
        what,
        format_args!("{form} between `{min}` and `{max}`"),
        &example,
        None,
    )
}

macro_rules! unsigned_key_part {
    ($($t:ty => $width:expr),* $(,)?) => {$(
        impl KeyPart for $t {
            #[inline]
            fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
                push_padded(out, *self as u128, $width);
                Ok(())
            }
        }
        impl KeyPartDecode for $t {
            fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
                // Exactly `$width` digits: one text per value, so the form is canonical.
                parse_digits(encoded, $width)
                    .and_then(|v| <$t>::try_from(v).ok())
                    .ok_or_else(|| not_canonical_integer(
                        encoded,
                        concat!("a ", stringify!($t)),
                        concat!(stringify!($width), " digits"),
                        [<$t>::MIN, <$t>::MAX, 42],
                    ))
            }
        }
    )*};
}

unsigned_key_part!(u8 => 3, u16 => 5, u32 => 10, u64 => 20, u128 => 39, usize => 20);

macro_rules! signed_key_part {
    ($($t:ty as $u:ty => $width:expr),* $(,)?) => {$(
        impl KeyPart for $t {
            #[inline]
            fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
                if *self < 0 {
                    // `-` (0x2D) sorts below `0` (0x30): every negative before every positive.
                    // The offset from MIN grows with the value, so negatives keep their order.
                    out.push('-');
                    push_padded(out, self.abs_diff(<$t>::MIN) as u128, $width);
                } else {
                    out.push('0');
                    push_padded(out, *self as u128, $width);
                }
                Ok(())
            }
        }
        impl KeyPartDecode for $t {
            fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
                // A sign byte and exactly `$width` digits; a negative's offset from MIN is
                // below `-MIN`, a positive is at most MAX: one text per value.
                let decoded = encoded.split_at_checked(1).and_then(|(sign, digits)| {
                    let magnitude = <$u>::try_from(parse_digits(digits, $width)?).ok()?;
                    match sign {
                        "0" => <$t>::try_from(magnitude).ok(),
                        "-" => <$t>::MIN
                            .checked_add_unsigned(magnitude)
                            .filter(|value| *value < 0),
                        _ => None,
                    }
                });
                decoded.ok_or_else(|| not_canonical_integer(
                    encoded,
                    concat!("an ", stringify!($t)),
                    concat!("`-` or `0` and ", stringify!($width), " digits"),
                    [<$t>::MIN, <$t>::MAX, 42],
                ))
            }
        }
    )*};
}

signed_key_part!(
    i8 as u8 => 3,
    i16 as u16 => 5,
    i32 as u32 => 10,
    i64 as u64 => 19,
    i128 as u128 => 39,
    isize as usize => 19,
);

// ---------------------------------------------------------------------------------------------
// bool

impl KeyPart for bool {
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        out.push_str(if *self { "true" } else { "false" });
        Ok(())
    }
}

impl KeyPartDecode for bool {
    fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
        match encoded {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(not_canonical(
                encoded,
                "a bool",
                "`true` or `false`",
                "",
                None,
            )),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Feature-gated types

#[cfg(feature = "chrono")]
mod chrono_impls {
    use super::{canonical_only, KeyPart, KeyPartDecode, KeyPartError};
    use chrono::{DateTime, Datelike, NaiveDate, SecondsFormat, Utc};

    fn check_year(year: i32) -> Result<(), KeyPartError> {
        if (0..=9999).contains(&year) {
            Ok(())
        } else {
            Err(KeyPartError::invalid(format!(
                "year {year} is outside 0..=9999, where the fixed-width timestamp encoding sorts correctly"
            )))
        }
    }

    impl KeyPart for DateTime<Utc> {
        fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
            check_year(self.year())?;
            out.push_str(&self.to_rfc3339_opts(SecondsFormat::Nanos, true));
            Ok(())
        }
    }

    impl KeyPartDecode for DateTime<Utc> {
        /// Any RFC 3339 text is read, and kept only when it is the key of what it reads as:
        /// `Z`, not `+00:00` or another offset; nine fraction digits; upper-case `T`.
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            canonical_only(
                encoded,
                DateTime::parse_from_rfc3339(encoded).map(|t| t.with_timezone(&Utc)),
                "a timestamp",
                "YYYY-MM-DDThh:mm:ss.nnnnnnnnnZ (UTC, nine fraction digits)",
                DateTime::UNIX_EPOCH,
            )
        }
    }

    impl KeyPart for NaiveDate {
        fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
            check_year(self.year())?;
            out.push_str(&self.format("%Y-%m-%d").to_string());
            Ok(())
        }
    }

    impl KeyPartDecode for NaiveDate {
        /// chrono's `%Y-%m-%d` also reads unpadded and signed numbers; only the key of the
        /// date read is kept.
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            canonical_only(
                encoded,
                NaiveDate::parse_from_str(encoded, "%Y-%m-%d"),
                "a date",
                "YYYY-MM-DD",
                NaiveDate::from_ymd_opt(2026, 1, 2).unwrap_or_default(),
            )
        }
    }
}

#[cfg(feature = "uuid")]
mod uuid_impls {
    use super::{canonical_only, KeyPart, KeyPartDecode, KeyPartError};
    use uuid::Uuid;

    impl KeyPart for Uuid {
        fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
            let mut buf = Uuid::encode_buffer();
            out.push_str(self.hyphenated().encode_lower(&mut buf));
            Ok(())
        }
    }

    impl KeyPartDecode for Uuid {
        /// `Uuid::try_parse` also reads upper case, braces, `urn:uuid:` and the simple form;
        /// only the key of the UUID read is kept.
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            canonical_only(
                encoded,
                Uuid::try_parse(encoded),
                "a UUID",
                "lower-case hyphenated hex",
                Uuid::from_u128(0x67e5_5044_10b1_426f_9247_bb68_0e5f_e0c8),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc<T: KeyPart + ?Sized>(v: &T) -> String {
        let mut s = String::new();
        v.write_key(&mut s).unwrap();
        s
    }

    #[test]
    fn integers_have_documented_fixed_width_forms() {
        assert_eq!(enc(&42u64), "00000000000000000042");
        assert_eq!(enc(&u64::MAX), "18446744073709551615");
        assert_eq!(enc(&7u8), "007");
        assert_eq!(enc(&-1i64), "-9223372036854775807");
        assert_eq!(enc(&i64::MIN), "-0000000000000000000");
        assert_eq!(enc(&5i64), "00000000000000000005");
        assert_eq!(enc(&i64::MAX), "09223372036854775807");
        assert_eq!(enc(&-128i8), "-000");
        assert_eq!(enc(&127i8), "0127");
    }

    #[test]
    fn strings_escape_the_delimiter_and_low_bytes() {
        assert_eq!(enc("player-1"), "player-1");
        assert_eq!(enc("a b#c"), "a$20b$23c");
        assert_eq!(enc("$"), "$24");
        assert_eq!(enc("ünï"), "ünï");
        assert_eq!("".write_key(&mut String::new()), Err(KeyPartError::Empty));
    }

    #[test]
    fn bad_encodings_are_refused_not_misread() {
        assert!(String::decode_key("a$2").is_err());
        assert!(String::decode_key("a$41").is_err(), "`A` is never escaped");
        assert!(String::decode_key("a#b").is_err());
        assert!(u64::decode_key("12").is_err());
        assert!(u8::decode_key("999").is_err());
        assert!(i64::decode_key("+0000000000000000001").is_err());
        assert!(i8::decode_key("-200").is_err());
        assert!(bool::decode_key("yes").is_err());
    }

    /// Encodes a tuple the way a template `{a}#{b}` does.
    fn composite(a: &str, b: i64) -> String {
        let mut s = String::new();
        a.write_key(&mut s).unwrap();
        s.push('#');
        b.write_key(&mut s).unwrap();
        s
    }

    proptest! {
        #[test]
        fn u64_order_and_roundtrip(a: u64, b: u64) {
            prop_assert_eq!(a.cmp(&b), enc(&a).cmp(&enc(&b)));
            prop_assert_eq!(u64::decode_key(&enc(&a)).unwrap(), a);
        }

        #[test]
        fn i64_order_and_roundtrip(a: i64, b: i64) {
            prop_assert_eq!(a.cmp(&b), enc(&a).cmp(&enc(&b)));
            prop_assert_eq!(i64::decode_key(&enc(&a)).unwrap(), a);
        }

        #[test]
        fn i32_and_u16_order_and_roundtrip(a: i32, b: i32, c: u16, d: u16) {
            prop_assert_eq!(a.cmp(&b), enc(&a).cmp(&enc(&b)));
            prop_assert_eq!(i32::decode_key(&enc(&a)).unwrap(), a);
            prop_assert_eq!(c.cmp(&d), enc(&c).cmp(&enc(&d)));
            prop_assert_eq!(u16::decode_key(&enc(&c)).unwrap(), c);
        }

        #[test]
        fn string_roundtrip_and_no_delimiter(s in "\\PC{1,20}|[ -%a#]{1,8}") {
            let e = enc(s.as_str());
            prop_assert!(!e.contains('#'));
            prop_assert!(e.bytes().all(|b| b >= b'$'));
            prop_assert_eq!(String::decode_key(&e).unwrap(), s);
        }

        /// Byte order of the encoded composite key equals tuple order of the values: the
        /// property DynamoDB's sort needs. Includes prefixes and low bytes on purpose.
        #[test]
        fn composite_keys_sort_like_tuples(
            a in "[ -%a-c#]{1,4}", b: i64, c in "[ -%a-c#]{1,4}", d: i64,
        ) {
            let by_tuple = (a.as_bytes(), b).cmp(&(c.as_bytes(), d));
            prop_assert_eq!(by_tuple, composite(&a, b).cmp(&composite(&c, d)));
        }

        /// Distinct tuples never encode to the same key (no forging through `#`).
        #[test]
        fn distinct_tuples_give_distinct_keys(
            a in "[a#$ ]{1,4}", b in "[a#$ ]{1,4}", c in "[a#$ ]{1,4}", d in "[a#$ ]{1,4}",
        ) {
            let k1 = { let mut s = enc(a.as_str()); s.push('#'); s.push_str(&enc(b.as_str())); s };
            let k2 = { let mut s = enc(c.as_str()); s.push('#'); s.push_str(&enc(d.as_str())); s };
            prop_assert_eq!(a == c && b == d, k1 == k2);
        }
    }

    #[cfg(feature = "chrono")]
    #[test]
    fn timestamps_are_fixed_width_and_roundtrip() {
        use chrono::{TimeZone, Utc};
        let t = Utc.with_ymd_and_hms(2026, 6, 22, 1, 0, 0).unwrap();
        assert_eq!(enc(&t), "2026-06-22T01:00:00.000000000Z");
        assert_eq!(chrono::DateTime::<Utc>::decode_key(&enc(&t)).unwrap(), t);
        // Four-digit years below 1000, nine fraction digits always.
        let early =
            Utc.with_ymd_and_hms(999, 1, 2, 3, 4, 5).unwrap() + chrono::Duration::nanoseconds(7);
        assert_eq!(enc(&early), "0999-01-02T03:04:05.000000007Z");
        let date = chrono::NaiveDate::from_ymd_opt(999, 1, 2).unwrap();
        assert_eq!(enc(&date), "0999-01-02");
        let too_late = chrono::NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap();
        assert!(too_late.write_key(&mut String::new()).is_err());
    }

    #[cfg(feature = "uuid")]
    #[test]
    fn uuids_roundtrip() {
        let u = uuid::Uuid::from_u128(0x67e5504410b1426f9247bb680e5fe0c8);
        assert_eq!(enc(&u), "67e55044-10b1-426f-9247-bb680e5fe0c8");
        assert_eq!(uuid::Uuid::decode_key(&enc(&u)).unwrap(), u);
    }

    // -----------------------------------------------------------------------------------------
    // Canonical only: one property, checked the same way for every type.

    /// What [`one_edit_away`] inserts and substitutes: the alphabet of every key form and the
    /// characters of the spellings other parsers accept (signs, offsets, braces, case).
    const EDITS: &str = "0159aAfFtTzZ-+:. {}$#_";

    /// Every text one edit away from `key`: each character removed, doubled, case-flipped or
    /// replaced by one of [`EDITS`], and each of [`EDITS`] inserted at each position.
    fn one_edit_away(key: &str) -> Vec<String> {
        let bounds: Vec<usize> = key
            .char_indices()
            .map(|(i, _)| i)
            .chain([key.len()])
            .collect();
        let mut out = Vec::new();
        for pair in bounds.windows(2) {
            let (before, c, after) = (&key[..pair[0]], &key[pair[0]..pair[1]], &key[pair[1]..]);
            out.push(format!("{before}{after}"));
            out.push(format!("{before}{c}{c}{after}"));
            let flipped: String = c
                .chars()
                .map(|c| match c {
                    'a'..='z' => c.to_ascii_uppercase(),
                    _ => c.to_ascii_lowercase(),
                })
                .collect();
            out.push(format!("{before}{flipped}{after}"));
            out.extend(EDITS.chars().map(|e| format!("{before}{e}{after}")));
        }
        for &at in &bounds {
            let (before, after) = key.split_at(at);
            out.extend(EDITS.chars().map(|e| format!("{before}{e}{after}")));
        }
        out
    }

    /// The key-form property, the same for every type:
    /// (1) `decode(encode(value)) == value`;
    /// (2) every other text `s` (each one edit away from the key, each of `spellings`)
    ///     decodes only when `encode(decode(s)) == s`, and a refusal is `Empty` or names the
    ///     canonical form.
    fn assert_canonical_only<T>(
        value: &T,
        spellings: impl IntoIterator<Item = String>,
    ) -> Result<(), TestCaseError>
    where
        T: KeyPart + KeyPartDecode + PartialEq + fmt::Debug,
    {
        let key = enc(value);
        match T::decode_key(&key) {
            Ok(decoded) => prop_assert_eq!(&decoded, value, "`{}` decoded to another value", key),
            Err(e) => prop_assert!(false, "the key `{}` of {:?} is refused: {}", key, value, e),
        }
        for s in one_edit_away(&key).into_iter().chain(spellings) {
            match T::decode_key(&s) {
                Ok(decoded) => {
                    let mut again = String::new();
                    let written = decoded.write_key(&mut again);
                    prop_assert!(
                        written.is_ok() && again == s,
                        "`{}` decoded to {:?}, whose key is `{}` ({:?})",
                        s,
                        decoded,
                        again,
                        written
                    );
                }
                Err(KeyPartError::Empty) => prop_assert!(s.is_empty()),
                Err(KeyPartError::Invalid(reason)) => prop_assert!(
                    reason.starts_with(&format!("`{s}` is not the canonical key form of ")),
                    "the refusal of `{}` does not name the form: {}",
                    s,
                    reason
                ),
            }
        }
        Ok(())
    }

    /// Arbitrary text: any printable, and text over the alphabet of the key forms.
    fn any_text() -> impl Strategy<Value = String> {
        prop_oneof!["\\PC{0,40}", "[-+:. 0-9a-fA-FtTzZ{}$#]{0,40}"]
    }

    /// How integers are written elsewhere: Rust's own syntax, with and without a `+`, padded
    /// to every width up to and past the key's.
    fn integer_spellings<T: fmt::Display>(x: T) -> Vec<String> {
        (0..=41)
            .flat_map(|w| [format!("{x:0w$}"), format!("{x:+0w$}")])
            .collect()
    }

    macro_rules! integers_are_canonical_only {
        ($($name:ident: $t:ty),* $(,)?) => {
            proptest! {
                #![proptest_config(ProptestConfig::with_cases(64))]
                $(
                    #[test]
                    fn $name(
                        x in prop_oneof![
                            5 => any::<$t>(),
                            1 => Just(<$t>::MIN),
                            1 => Just(<$t>::MAX),
                            1 => Just(0),
                        ],
                        s in any_text(),
                    ) {
                        assert_canonical_only(&x, integer_spellings(x).into_iter().chain([s]))?;
                    }
                )*
            }
        };
    }

    integers_are_canonical_only!(
        u8_is_canonical_only: u8,
        u16_is_canonical_only: u16,
        u32_is_canonical_only: u32,
        u64_is_canonical_only: u64,
        u128_is_canonical_only: u128,
        usize_is_canonical_only: usize,
        i8_is_canonical_only: i8,
        i16_is_canonical_only: i16,
        i32_is_canonical_only: i32,
        i64_is_canonical_only: i64,
        i128_is_canonical_only: i128,
        isize_is_canonical_only: isize,
    );

    /// How a string might be written by hand: unescaped, with lower-case hex, with every
    /// ASCII byte escaped.
    fn string_spellings(s: &str) -> Vec<String> {
        let key = enc(s);
        let over_escaped: String = s
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    format!("${:02X}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
        vec![s.to_owned(), key.to_ascii_lowercase(), over_escaped]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn bool_is_canonical_only(x: bool, s in any_text()) {
            let spellings = ["True", "TRUE", "False", "FALSE", "1", "0", "t", "f", "yes", "no", ""];
            assert_canonical_only(&x, spellings.map(String::from).into_iter().chain([s]))?;
        }

        #[test]
        fn string_is_canonical_only(x in "\\PC{1,20}|[ -%a#$]{1,8}", s in any_text()) {
            assert_canonical_only(&x, string_spellings(&x).into_iter().chain([s]))?;
        }
    }

    #[cfg(feature = "chrono")]
    mod chrono_canonical {
        use super::*;
        use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, SecondsFormat, Utc};

        /// Any instant the key form holds (years 0 to 9999, often the first or last second),
        /// often with a round fraction.
        fn any_timestamp() -> impl Strategy<Value = DateTime<Utc>> {
            let first = NaiveDate::from_ymd_opt(0, 1, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap();
            let last = NaiveDate::from_ymd_opt(9999, 12, 31)
                .unwrap()
                .and_hms_opt(23, 59, 59)
                .unwrap();
            let (first, last) = (first.and_utc().timestamp(), last.and_utc().timestamp());
            let secs = prop_oneof![4 => first..=last, 1 => Just(first), 1 => Just(last)];
            let nanos = prop_oneof![
                0u32..1_000_000_000,
                Just(0u32),
                Just(999_999_999u32),
                (0u32..1000).prop_map(|ms| ms * 1_000_000),
                (0u32..1_000_000).prop_map(|us| us * 1000),
            ];
            (secs, nanos).prop_map(|(secs, nanos)| DateTime::from_timestamp(secs, nanos).unwrap())
        }

        /// Any date the key form holds (years 0 to 9999, often the first or last day).
        fn any_date() -> impl Strategy<Value = NaiveDate> {
            let first = NaiveDate::from_ymd_opt(0, 1, 1).unwrap().num_days_from_ce();
            let last = NaiveDate::from_ymd_opt(9999, 12, 31)
                .unwrap()
                .num_days_from_ce();
            prop_oneof![4 => first..=last, 1 => Just(first), 1 => Just(last)]
                .prop_map(|days| NaiveDate::from_num_days_from_ce_opt(days).unwrap())
        }

        /// The same instant as other RFC 3339 writers put it: `+00:00`, fewer (or automatic)
        /// fraction digits, lower-case `t`/`z`, a space, other offsets, ten fraction digits.
        fn timestamp_spellings(t: DateTime<Utc>) -> Vec<String> {
            use SecondsFormat::{AutoSi, Micros, Millis, Nanos, Secs};
            let key = enc(&t);
            let mut out: Vec<String> = [Secs, Millis, Micros, Nanos, AutoSi]
                .into_iter()
                .flat_map(|f| [t.to_rfc3339_opts(f, true), t.to_rfc3339_opts(f, false)])
                .collect();
            out.extend([
                key.replacen('T', "t", 1),
                key.replacen('T', " ", 1),
                key.replace('Z', "z"),
                key.replace('Z', "+00:00"),
                key.replace('Z', "-00:00"),
                key.replace('Z', "0Z"),
            ]);
            for hours in [-14, -1, 1, 14] {
                let offset = FixedOffset::east_opt(hours * 3600).unwrap();
                out.push(t.with_timezone(&offset).to_rfc3339_opts(Nanos, true));
            }
            out
        }

        /// The same date as other writers put it: unpadded, signed, basic, ordinal, with a time.
        fn date_spellings(d: NaiveDate) -> Vec<String> {
            let (y, m, day) = (d.year(), d.month(), d.day());
            let key = enc(&d);
            vec![
                format!("{y}-{m}-{day}"),
                format!("{y}-{m:02}-{day:02}"),
                format!("{y:05}-{m:02}-{day:02}"),
                format!("+{key}"),
                d.format("%Y%m%d").to_string(),
                d.format("%Y-%j").to_string(),
                format!("{key}T00:00:00Z"),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn timestamp_is_canonical_only(t in any_timestamp(), s in any_text()) {
                assert_canonical_only(&t, timestamp_spellings(t).into_iter().chain([s]))?;
            }

            #[test]
            fn date_is_canonical_only(d in any_date(), s in any_text()) {
                assert_canonical_only(&d, date_spellings(d).into_iter().chain([s]))?;
            }
        }

        #[test]
        fn other_spellings_are_refused_with_the_canonical_form() {
            let date = NaiveDate::decode_key("2026-1-2").unwrap_err();
            assert_eq!(
                date.to_string(),
                "`2026-1-2` is not the canonical key form of a date: expected YYYY-MM-DD such as `2026-01-02`"
            );
            let offset = DateTime::<Utc>::decode_key("2026-06-22T01:00:00.000000000+00:00");
            assert_eq!(
                offset.unwrap_err().to_string(),
                "`2026-06-22T01:00:00.000000000+00:00` is not the canonical key form of a \
                 timestamp: expected YYYY-MM-DDThh:mm:ss.nnnnnnnnnZ (UTC, nine fraction digits) \
                 such as `2026-06-22T01:00:00.000000000Z`"
            );
            for other in [
                "2026-06-22T01:00:00Z",
                "2026-06-22T01:00:00.000Z",
                "2026-06-22t01:00:00.000000000z",
                "2026-06-22 01:00:00.000000000Z",
                "2026-06-22T02:00:00.000000000+01:00",
            ] {
                let err = DateTime::<Utc>::decode_key(other).unwrap_err().to_string();
                assert!(
                    err.ends_with("such as `2026-06-22T01:00:00.000000000Z`"),
                    "{err}"
                );
            }
            let garbage = NaiveDate::decode_key("2026-02-30").unwrap_err().to_string();
            assert!(
                garbage.contains("expected YYYY-MM-DD such as `2026-01-02` ("),
                "{garbage}"
            );
        }

        /// A leap second is its own canonical key (`:60`), between `:59` and the next minute.
        #[test]
        fn leap_seconds_keep_their_key() {
            let key = "2016-12-31T23:59:60.500000000Z";
            let leap = DateTime::<Utc>::decode_key(key).unwrap();
            assert_eq!(enc(&leap), key);
            let before = DateTime::<Utc>::decode_key("2016-12-31T23:59:59.999999999Z").unwrap();
            let after = DateTime::<Utc>::decode_key("2017-01-01T00:00:00.000000000Z").unwrap();
            assert!(before < leap && leap < after);
        }
    }

    #[cfg(feature = "uuid")]
    mod uuid_canonical {
        use super::*;
        use uuid::Uuid;

        /// The same UUID as other writers put it: upper case, simple, braced, URN.
        fn uuid_spellings(u: Uuid) -> Vec<String> {
            let key = enc(&u);
            vec![
                key.to_ascii_uppercase(),
                u.simple().to_string(),
                u.simple().to_string().to_ascii_uppercase(),
                u.braced().to_string(),
                u.braced().to_string().to_ascii_uppercase(),
                u.urn().to_string(),
                u.urn().to_string().to_ascii_uppercase(),
                format!("{{{key}}}"),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn uuid_is_canonical_only(
                x in prop_oneof![4 => any::<u128>(), 1 => Just(0), 1 => Just(u128::MAX)],
                s in any_text(),
            ) {
                let u = Uuid::from_u128(x);
                assert_canonical_only(&u, uuid_spellings(u).into_iter().chain([s]))?;
            }
        }

        #[test]
        fn other_spellings_are_refused_with_the_canonical_form() {
            let err = Uuid::decode_key("{67E55044-10B1-426F-9247-BB680E5FE0C8}").unwrap_err();
            assert_eq!(
                err.to_string(),
                "`{67E55044-10B1-426F-9247-BB680E5FE0C8}` is not the canonical key form of a \
                 UUID: expected lower-case hyphenated hex such as \
                 `67e55044-10b1-426f-9247-bb680e5fe0c8`"
            );
        }
    }

    #[test]
    fn refusals_name_the_canonical_form() {
        let msg = |r: Result<(), KeyPartError>| r.unwrap_err().to_string();
        assert_eq!(
            msg(u64::decode_key("12").map(drop)),
            "`12` is not the canonical key form of a u64: expected 20 digits between \
             `00000000000000000000` and `18446744073709551615` such as `00000000000000000012`"
        );
        assert_eq!(
            msg(u8::decode_key("999").map(drop)),
            "`999` is not the canonical key form of a u8: expected 3 digits between `000` and \
             `255` such as `042`"
        );
        assert_eq!(
            msg(i8::decode_key("-1").map(drop)),
            "`-1` is not the canonical key form of an i8: expected `-` or `0` and 3 digits \
             between `-000` and `0127` such as `-127`"
        );
        assert_eq!(
            msg(bool::decode_key("TRUE").map(drop)),
            "`TRUE` is not the canonical key form of a bool: expected `true` or `false`"
        );
        assert_eq!(
            msg(String::decode_key("a$2a").map(drop)),
            "`a$2a` is not the canonical key form of a string: expected the text with every \
             byte up to 0x24 written as `$` and two upper-case hex digits such as `a$20b$23c` \
             (`$2a` at byte 1 is not an escape)"
        );
    }
}
