//! How a shard number is written after a logical key: the shard suffix of a physical key.
//!
//! `sharded` writes `GAME#g1#3` by default (`#{shard}`). Tables that were sharded by hand
//! before they met `sharded` spell it their own way (`ACTIVE_USERS#SHARD_7`,
//! `STATUS#ACTIVE#SHARD#7`, `EVENTS#07`), and the suffix is declared on the key so every read,
//! write, cursor, migration and report uses that spelling:
//!
//! ```text
//! #[pk(template = "ACTIVE_USERS", shard = "random", n = 10, suffix = "#SHARD_{shard}")]
//! ```
//!
//! A suffix is a literal that starts with `#` and does not end with a digit, then `{shard}`
//! (the shard in decimal, no padding) or `{shard:0W}` (zero-padded to exactly `W` digits, `W`
//! from 1 to 4). Those rules are what make every physical key parse back: a field's encoding
//! never holds `#`, so the literal's `#` cannot be forged by a value, and the digits after a
//! literal that ends in no digit are exactly the shard's.

/// How the shard of a physical key is spelled: a literal (starting with `#`), then the shard
/// number in decimal, zero-padded to `width` digits when `width` is above 0.
///
/// ```
/// use sharded::keys::ShardSuffix;
/// let ddb_lib = ShardSuffix::parse("#SHARD_{shard}")?;
/// let mut key = String::from("ACTIVE_USERS");
/// ddb_lib.write(&mut key, 7);
/// assert_eq!(key, "ACTIVE_USERS#SHARD_7");
/// assert_eq!(ddb_lib.split("ACTIVE_USERS#SHARD_7", 10), Ok(("ACTIVE_USERS", 7)));
///
/// let padded = ShardSuffix::parse("#{shard:02}")?;
/// assert_eq!(padded.split("EVENTS#07", 10), Ok(("EVENTS", 7)));
/// assert!(padded.split("EVENTS#7", 10).is_err(), "not the canonical spelling");
/// assert_eq!(ShardSuffix::DEFAULT.source, "#{shard}");
/// # Ok::<(), sharded::KeyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ShardSuffix {
    /// The suffix as declared (`#SHARD_{shard}`), for messages and descriptions.
    pub source: &'static str,
    /// The text before the shard number (`#SHARD_`).
    pub literal: &'static str,
    /// The number of digits the shard is zero-padded to; 0 for no padding.
    pub width: u8,
}

/// The widest zero padding a suffix may ask for: enough for `MAX_SHARDS` (1,000) shards.
pub const MAX_SUFFIX_WIDTH: u8 = 4;

impl ShardSuffix {
    /// `#{shard}`: `GAME#g1#3`, what `sharded` writes unless a key declares another suffix.
    pub const DEFAULT: ShardSuffix = ShardSuffix {
        source: "#{shard}",
        literal: "#",
        width: 0,
    };

    /// Reads a suffix declaration (`#SHARD_{shard}`, `#{shard:02}`), refusing one that could
    /// not be parsed back, with what to write instead. A `const fn`: the derive evaluates the
    /// same function at compile time, so a refused suffix is a compile error under the
    /// attribute, and the runtime owns the rules.
    ///
    /// ```
    /// use sharded::keys::ShardSuffix;
    /// assert!(ShardSuffix::parse("#SHARD#{shard}").is_ok());
    /// assert!(ShardSuffix::parse("_{shard}").is_err(), "must start with `#`");
    /// assert!(ShardSuffix::parse("#V2{shard}").is_err(), "the literal must not end in a digit");
    /// assert!(ShardSuffix::parse("#{shard}#x").is_err(), "the shard ends the key");
    /// ```
    pub const fn parse(source: &'static str) -> Result<ShardSuffix, crate::KeyError> {
        match parse_suffix(source) {
            Ok(suffix) => Ok(suffix),
            Err(reason) => Err(crate::KeyError::InvalidSuffix {
                suffix: source,
                reason,
            }),
        }
    }

    /// [`parse`](Self::parse) in a `const` item: a refused suffix fails compilation with
    /// the reason. What generated code calls.
    pub const fn declared(source: &'static str) -> ShardSuffix {
        match parse_suffix(source) {
            Ok(suffix) => suffix,
            Err(reason) => panic!("{}", reason),
        }
    }

    /// Whether every shard below `n` fits the padding (`{shard:02}` holds shards up to 99).
    ///
    /// ```
    /// use sharded::keys::ShardSuffix;
    /// let two = ShardSuffix::parse("#{shard:02}")?;
    /// assert!(two.fits(100) && !two.fits(101));
    /// assert!(ShardSuffix::DEFAULT.fits(1000));
    /// # Ok::<(), sharded::KeyError>(())
    /// ```
    pub const fn fits(&self, n: u32) -> bool {
        if self.width == 0 || n <= 1 {
            return true;
        }
        digits(n - 1) <= self.width as u32
    }

    /// Appends `shard`, spelled by this suffix, to `out`.
    #[inline]
    pub fn write(&self, out: &mut String, shard: u32) {
        out.push_str(self.literal);
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        let mut v = shard;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for _ in (digits.len() - i)..usize::from(self.width) {
            out.push('0');
        }
        // Only ASCII digits were written.
        out.push_str(std::str::from_utf8(&digits[i..]).unwrap_or("0"));
    }

    /// Splits a physical key into its logical key and its shard below `n`, accepting only
    /// the canonical spelling (no leading zero unpadded; exactly `width` digits padded).
    pub fn split<'a>(&self, key: &'a str, n: u32) -> Result<(&'a str, u32), String> {
        let digit_count = key.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (body, digits) = key.split_at(key.len() - digit_count);
        let Some(logical) = body.strip_suffix(self.literal) else {
            return Err(format!("no `{}` suffix", self.source));
        };
        let canonical = match self.width {
            0 => !digits.is_empty() && (digits == "0" || !digits.starts_with('0')),
            width => digits.len() == usize::from(width),
        };
        let shard = digits
            .parse::<u32>()
            .ok()
            .filter(|_| canonical)
            .ok_or_else(|| {
                format!(
                    "shard `{digits}` is not written as `{}` writes it",
                    self.source
                )
            })?;
        if shard >= n {
            return Err(format!("shard {shard} is not below n = {n}"));
        }
        Ok((logical, shard))
    }

    /// The suffix of `n` shards as shown in layout descriptions: `#<shard 0..10>`,
    /// `#SHARD_<shard 0..10>`, `#<shard 00..10>`.
    pub fn describe(&self, n: u32) -> String {
        let zeros = "0".repeat(usize::from(self.width).max(1));
        format!("{}<shard {zeros}..{n}>", self.literal)
    }
}

impl Default for ShardSuffix {
    fn default() -> Self {
        ShardSuffix::DEFAULT
    }
}

/// How many decimal digits `v` has.
const fn digits(mut v: u32) -> u32 {
    let mut count = 1;
    while v >= 10 {
        v /= 10;
        count += 1;
    }
    count
}

/// The rules of a suffix declaration; the reason, when refused.
const fn parse_suffix(source: &'static str) -> Result<ShardSuffix, &'static str> {
    let bytes = source.as_bytes();
    // `{shard}` or `{shard:0W}` must end the declaration.
    let open = {
        let mut i = bytes.len();
        let mut found = None;
        while i > 0 {
            i -= 1;
            if bytes[i] == b'{' {
                found = Some(i);
                break;
            }
        }
        match found {
            Some(i) => i,
            None => {
                return Err(
                    "a shard suffix names the shard as `{shard}` (or `{shard:02}` for zero \
                     padding) at its end, e.g. `#SHARD_{shard}`",
                )
            }
        }
    };
    if bytes[bytes.len() - 1] != b'}' {
        return Err(
            "the shard ends the key: write the suffix as a literal followed by `{shard}` (nothing \
             after it), e.g. `#SHARD_{shard}`",
        );
    }
    let (literal_bytes, placeholder) = bytes.split_at(open);
    let width = match placeholder {
        b"{shard}" => 0,
        [b'{', b's', b'h', b'a', b'r', b'd', b':', b'0', w, b'}'] if w.is_ascii_digit() => {
            let w = *w - b'0';
            if w == 0 || w > MAX_SUFFIX_WIDTH {
                return Err(
                    "a zero-padded shard is `{shard:0W}` with a width W from 1 to 4, e.g. \
                     `{shard:02}`",
                );
            }
            w
        }
        _ => {
            return Err(
                "the placeholder is `{shard}`, or `{shard:0W}` for a shard zero-padded to W \
                 digits (`{shard:02}`)",
            )
        }
    };
    if literal_bytes.is_empty() || literal_bytes[0] != b'#' {
        return Err(
            "a shard suffix starts with `#` (`#{shard}`, `#SHARD_{shard}`, `#SHARD#{shard}`): \
             `#` is the one separator a field value can never contain, so the suffix cannot be \
             mistaken for part of the logical key",
        );
    }
    if literal_bytes[literal_bytes.len() - 1].is_ascii_digit() {
        return Err(
            "the text before `{shard}` must not end in a digit, or the shard number's first \
             digit could not be told from it: e.g. `#V2_{shard}` instead of `#V2{shard}`",
        );
    }
    let mut i = 0;
    while i < literal_bytes.len() {
        if literal_bytes[i] == b'{' || literal_bytes[i] == b'}' {
            return Err(
                "a shard suffix holds one placeholder, `{shard}` at its end; the text before it \
                 is copied as written and holds no braces",
            );
        }
        i += 1;
    }
    let literal = match core::str::from_utf8(literal_bytes) {
        Ok(literal) => literal,
        // A prefix of a `str` that ends before an ASCII `{` is valid UTF-8.
        Err(_) => return Err("a shard suffix must be valid UTF-8"),
    };
    Ok(ShardSuffix {
        source,
        literal,
        width,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_spelling_round_trips() {
        for (source, shard, key) in [
            ("#{shard}", 3, "G#3"),
            ("#{shard}", 12, "G#12"),
            ("#SHARD_{shard}", 7, "G#SHARD_7"),
            ("#SHARD#{shard}", 0, "G#SHARD#0"),
            ("#{shard:02}", 7, "G#07"),
            ("#{shard:03}", 999, "G#999"),
            ("#S-{shard:04}", 42, "G#S-0042"),
        ] {
            let suffix = ShardSuffix::parse(source).unwrap();
            let mut out = String::from("G");
            suffix.write(&mut out, shard);
            assert_eq!(out, key, "{source}");
            assert_eq!(suffix.split(key, 1000), Ok(("G", shard)), "{source}");
        }
    }

    #[test]
    fn only_the_canonical_spelling_parses() {
        let plain = ShardSuffix::DEFAULT;
        for bad in ["G#03", "G#", "G#x", "G3", "G#10"] {
            assert!(plain.split(bad, 10).is_err(), "{bad}");
        }
        let padded = ShardSuffix::parse("#{shard:02}").unwrap();
        for bad in ["G#7", "G#007", "G#", "G#10"] {
            assert!(padded.split(bad, 10).is_err(), "{bad}");
        }
        let ddb = ShardSuffix::parse("#SHARD_{shard}").unwrap();
        assert!(ddb.split("G#7", 10).is_err(), "another suffix");
        // A logical key that ends in digits keeps them: the literal stands between.
        assert_eq!(ddb.split("G42#SHARD_7", 10), Ok(("G42", 7)));
    }

    #[test]
    fn refused_declarations_say_why() {
        for bad in [
            "",
            "#",
            "{shard}",
            "_{shard}",
            "#V2{shard}",
            "#{shard}#",
            "#{shard:2}",
            "#{shard:00}",
            "#{shard:05}",
            "#{shar}",
            "#{x}{shard}",
            "#{shard:0a}",
        ] {
            let err = ShardSuffix::parse(bad).unwrap_err();
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn padding_must_hold_every_shard() {
        let two = ShardSuffix::parse("#{shard:02}").unwrap();
        assert!(two.fits(1) && two.fits(100));
        assert!(!two.fits(101));
        assert_eq!(two.describe(10), "#<shard 00..10>");
        assert_eq!(ShardSuffix::DEFAULT.describe(10), "#<shard 0..10>");
    }
}
