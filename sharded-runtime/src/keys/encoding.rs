//! How field values are written into key strings: the [`KeyPart`] trait and its encodings.
//!
//! The encodings are documented on [`KeyPart`], where users of the crate read them; the shard
//! hash specification ([`hash`](crate::hash)) restates them as canonical bytes.

use std::fmt;

/// A value that can be written into a DynamoDB key by a key template.
///
/// ```
/// use sharded::KeyPart;
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
/// Your own types join by implementing [`KeyPart`] (and [`KeyPartDecode`] to parse keys back):
///
/// ```
/// use sharded::{KeyPart, KeyPartDecode, KeyPartError};
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
    note = "key fields need an order-preserving encoding: use an integer, `String`, `bool`, or implement `sharded::KeyPart` (and `KeyPartDecode`) for `{Self}`"
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
/// use sharded::KeyPartDecode;
///
/// assert_eq!(u64::decode_key("00000000000000001234").unwrap(), 1234);
/// assert_eq!(String::decode_key("a$20b$23c").unwrap(), "a b#c");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be parsed back out of a DynamoDB key",
    label = "this key field type has no key decoding",
    note = "key fields are parsed back by the generated `parse_*` functions: implement `sharded::KeyPartDecode` for `{Self}` next to its `KeyPart`"
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
/// use sharded::{KeyPart, KeyPartError};
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
    /// let e = sharded::KeyPartError::invalid("too long");
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

impl KeyPartDecode for String {
    fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
        if encoded.is_empty() {
            return Err(KeyPartError::Empty);
        }
        if encoded.bytes().all(|b| b > ESCAPE_AT_OR_BELOW) {
            return Ok(encoded.to_owned());
        }
        let bytes = encoded.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'$' {
                let hex = bytes.get(i + 1..i + 3).ok_or_else(|| {
                    KeyPartError::invalid(format!(
                        "`$` at byte {i} is not followed by two hex digits"
                    ))
                })?;
                let value = hex_value(hex[0])
                    .zip(hex_value(hex[1]))
                    .map(|(hi, lo)| hi << 4 | lo)
                    .filter(|&b| b <= ESCAPE_AT_OR_BELOW)
                    .ok_or_else(|| {
                        KeyPartError::invalid(format!(
                            "`${}` is not a valid escape",
                            String::from_utf8_lossy(hex)
                        ))
                    })?;
                out.push(value);
                i += 3;
            } else if bytes[i] < ESCAPE_AT_OR_BELOW {
                return Err(KeyPartError::invalid(format!(
                    "byte 0x{:02X} at {i} should have been escaped",
                    bytes[i]
                )));
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        // Only ASCII bytes were replaced, so the result is valid UTF-8 whenever the input was.
        String::from_utf8(out).map_err(|_| KeyPartError::invalid("escaped text is not valid UTF-8"))
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

fn parse_digits(encoded: &str, width: usize, type_name: &str) -> Result<u128, KeyPartError> {
    if encoded.len() != width || !encoded.bytes().all(|b| b.is_ascii_digit()) {
        return Err(KeyPartError::invalid(format!(
            "`{encoded}` is not a {type_name} key part: expected exactly {width} digits"
        )));
    }
    encoded
        .parse::<u128>()
        .map_err(|e| KeyPartError::invalid(format!("`{encoded}`: {e}")))
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
                let v = parse_digits(encoded, $width, stringify!($t))?;
                <$t>::try_from(v).map_err(|_| {
                    KeyPartError::invalid(format!("`{encoded}` is out of range for {}", stringify!($t)))
                })
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
                let invalid = || KeyPartError::invalid(format!(
                    "`{encoded}` is not a {} key part: expected `-` or `0` and {} digits",
                    stringify!($t), $width
                ));
                let (sign, digits) = encoded.split_at_checked(1).ok_or_else(invalid)?;
                let magnitude = parse_digits(digits, $width, stringify!($t))?;
                let magnitude = <$u>::try_from(magnitude).map_err(|_| invalid())?;
                match sign {
                    "0" => <$t>::try_from(magnitude).map_err(|_| invalid()),
                    "-" => {
                        let value = <$t>::MIN.checked_add_unsigned(magnitude).ok_or_else(invalid)?;
                        if value < 0 { Ok(value) } else { Err(invalid()) }
                    }
                    _ => Err(invalid()),
                }
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
            _ => Err(KeyPartError::invalid(format!(
                "`{encoded}` is not `true` or `false`"
            ))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Feature-gated types

#[cfg(feature = "chrono")]
mod chrono_impls {
    use super::{KeyPart, KeyPartDecode, KeyPartError};
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
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            DateTime::parse_from_rfc3339(encoded)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    KeyPartError::invalid(format!("`{encoded}` is not an RFC 3339 timestamp: {e}"))
                })
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
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            NaiveDate::parse_from_str(encoded, "%Y-%m-%d").map_err(|e| {
                KeyPartError::invalid(format!("`{encoded}` is not a YYYY-MM-DD date: {e}"))
            })
        }
    }
}

#[cfg(feature = "uuid")]
mod uuid_impls {
    use super::{KeyPart, KeyPartDecode, KeyPartError};
    use uuid::Uuid;

    impl KeyPart for Uuid {
        fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
            let mut buf = Uuid::encode_buffer();
            out.push_str(self.hyphenated().encode_lower(&mut buf));
            Ok(())
        }
    }

    impl KeyPartDecode for Uuid {
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            Uuid::try_parse(encoded)
                .map_err(|e| KeyPartError::invalid(format!("`{encoded}` is not a UUID: {e}")))
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
}
