//! Key templates: building physical keys from field values, and parsing them back.
//!
//! A template such as `GAME#{game_id}` is a list of [`Segment`]s: literal text and fields.
//! The derive checks templates at compile time and emits them as `static` data; the functions
//! here do the work, so generated code stays a list of arguments.
//!
//! # Physical form
//!
//! ```text
//! unsharded partition key   <template>                 GAME#g1
//! sharded partition key     <template><suffix>         GAME#g1#3      (default suffix `#{shard}`: decimal, 0..n, no padding)
//!                                                      ACTIVE_USERS#SHARD_7  (`suffix = "#SHARD_{shard}"`)
//! sort key                  <template>                 SCORE#00000000000000000042#p1
//! ```
//!
//! Field values are written with their [`KeyPart`] encoding, which never contains `#`, and a
//! shard suffix starts with `#` and ends in the shard's digits after a literal that ends in no
//! digit (see [`ShardSuffix`]), so every key parses back unambiguously.
//!
//! A time-bucketed field (`{at:day}`, a [`Segment::Bucket`]) is written as the label of the
//! [`Bucket`] its value falls in (`2026-11-22`): fixed-width digits and `-`, `T`, `W`, never
//! `#`. Parsing accepts only canonical labels, so one bucket is one partition key.

use crate::bucket::{Bucket, BucketTime, Granularity};
use crate::encoding::{ensure_canonical, KeyPart, KeyPartDecode, KeyPartError};
use crate::error::KeyError;
use crate::hash;
use crate::suffix::ShardSuffix;

/// One piece of a key template.
///
/// ```
/// use sharded::schema::Segment;
/// let template = [Segment::literal("GAME#"), Segment::field("game_id")];
/// assert_eq!(template[1], Segment::Field("game_id"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Segment {
    /// Text copied into the key as written.
    Literal(&'static str),
    /// The encoded value of the named struct field.
    Field(&'static str),
    /// `{at:day}`: the label of the time bucket the named field's value falls in
    /// (`2026-11-22`), see [`Bucket`].
    ///
    /// ```
    /// use sharded::schema::Segment;
    /// use sharded::bucket::Granularity;
    /// let s = Segment::bucket("at", Granularity::Day);
    /// assert!(matches!(s, Segment::Bucket { field: "at", granularity: Granularity::Day }));
    /// ```
    Bucket {
        /// The struct field.
        field: &'static str,
        /// The size of its buckets.
        granularity: Granularity,
    },
}

/// A key template: the text the user wrote and its segments.
///
/// ```
/// use sharded::schema::{KeyTemplate, Segment};
/// static GAME: KeyTemplate = KeyTemplate::new(
///     "GAME#{game_id}",
///     &[Segment::literal("GAME#"), Segment::field("game_id")],
/// );
/// assert_eq!(GAME.fields().collect::<Vec<_>>(), ["game_id"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyTemplate {
    /// The template as written in the attribute, for error messages.
    pub source: &'static str,
    /// Literal and field segments, in order.
    pub segments: &'static [Segment],
}

impl Segment {
    /// Text copied into the key as written.
    pub const fn literal(text: &'static str) -> Segment {
        Segment::Literal(text)
    }

    /// The encoded value of struct field `name`.
    pub const fn field(name: &'static str) -> Segment {
        Segment::Field(name)
    }

    /// The label of the `granularity` bucket holding struct field `name`'s value: `{at:day}`.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, Segment};
    /// use sharded::bucket::Granularity;
    /// static OPS: KeyTemplate = KeyTemplate::new(
    ///     "OPS#{at:day}",
    ///     &[Segment::literal("OPS#"), Segment::bucket("at", Granularity::Day)],
    /// );
    /// assert_eq!(OPS.fields().collect::<Vec<_>>(), ["at"]);
    /// ```
    pub const fn bucket(name: &'static str, granularity: Granularity) -> Segment {
        Segment::Bucket {
            field: name,
            granularity,
        }
    }

    /// The field this segment writes, bucketed or whole; `None` for a literal.
    fn field_name(&self) -> Option<&'static str> {
        match *self {
            Segment::Field(f) | Segment::Bucket { field: f, .. } => Some(f),
            Segment::Literal(_) => None,
        }
    }
}

impl KeyTemplate {
    /// The template `source` (as written in the attribute) with its `segments`.
    pub const fn new(source: &'static str, segments: &'static [Segment]) -> Self {
        KeyTemplate { source, segments }
    }

    /// The field names of the template, in order (a bucketed field included).
    ///
    /// ```
    /// # use sharded::schema::{KeyTemplate, Segment};
    /// static T: KeyTemplate = KeyTemplate::new("A#{x}#{y}", &[
    ///     Segment::literal("A#"), Segment::field("x"), Segment::literal("#"), Segment::field("y")]);
    /// let t = &T;
    /// assert_eq!(t.fields().collect::<Vec<_>>(), ["x", "y"]);
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.segments.iter().filter_map(Segment::field_name)
    }

    /// The time bucket of the template: its segment index, field and granularity, if it has
    /// a `{field:granularity}`.
    ///
    /// ```
    /// # use sharded::schema::{KeyTemplate, Segment};
    /// use sharded::bucket::Granularity;
    /// static T: KeyTemplate = KeyTemplate::new("OPS#{at:day}", &[
    ///     Segment::literal("OPS#"), Segment::bucket("at", Granularity::Day)]);
    /// assert_eq!(T.bucket(), Some((1, "at", Granularity::Day)));
    /// ```
    pub fn bucket(&self) -> Option<(usize, &'static str, Granularity)> {
        self.segments
            .iter()
            .enumerate()
            .find_map(|(i, s)| match *s {
                Segment::Bucket { field, granularity } => Some((i, field, granularity)),
                _ => None,
            })
    }

    /// A capacity guess for a built key: literals plus a typical field width.
    fn capacity_hint(&self) -> usize {
        self.segments
            .iter()
            .map(|s| match s {
                Segment::Literal(l) => l.len(),
                Segment::Field(_) => 24,
                Segment::Bucket { granularity, .. } => granularity.label_len(),
            })
            .sum::<usize>()
            + 4
    }
}

/// Where a key goes, for error messages: the entity and the key attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyContext {
    /// The entity type name.
    pub entity: &'static str,
    /// The key attribute (`pk`, `sk`, `gsi1pk`, ...).
    pub attribute: &'static str,
}

fn field_error(ctx: KeyContext, field: &'static str, err: KeyPartError) -> KeyError {
    match err {
        KeyPartError::Empty => KeyError::EmptyValue {
            entity: ctx.entity,
            attribute: ctx.attribute,
            field,
        },
        KeyPartError::Invalid(reason) => KeyError::Unencodable {
            entity: ctx.entity,
            attribute: ctx.attribute,
            field,
            reason,
        },
    }
}

/// Writes `template` with `values` (one per field segment, in order) into `out`.
#[inline]
fn write_template(
    out: &mut String,
    ctx: KeyContext,
    template: &KeyTemplate,
    values: &[&dyn KeyPart],
) -> Result<(), KeyError> {
    let mut values = values.iter();
    for segment in template.segments {
        match *segment {
            Segment::Literal(text) => out.push_str(text),
            // A bucketed field's value is a `BucketLabel`: it writes the label.
            Segment::Field(field) | Segment::Bucket { field, .. } => {
                let value = values.next().ok_or(KeyError::Arity {
                    entity: ctx.entity,
                    attribute: ctx.attribute,
                    template: template.source,
                })?;
                value
                    .write_key(out)
                    .map_err(|e| field_error(ctx, field, e))?;
            }
        }
    }
    Ok(())
}

/// The value of a bucketed field as a key part: it writes the label of the `granularity`
/// bucket its time falls in (`2026-11-22` for a day). The value given for a
/// [`Segment::Bucket`] to the builders here; generated code makes it.
///
/// ```
/// use sharded::__private::BucketLabel;
/// use sharded::{bucket::Granularity, keys::KeyPart};
/// let mut key = String::from("OPS#");
/// // 2026-11-22T13:34:56Z in epoch seconds.
/// BucketLabel::new(&1_795_354_496i64, Granularity::Day).write_key(&mut key).unwrap();
/// assert_eq!(key, "OPS#2026-11-22");
/// ```
#[derive(Clone, Copy)]
pub struct BucketLabel<'a> {
    time: &'a dyn BucketTime,
    granularity: Granularity,
}

impl<'a> BucketLabel<'a> {
    /// The bucket of `time` at `granularity`, as a key part.
    ///
    /// ```
    /// use sharded::__private::BucketLabel;
    /// use sharded::{bucket::Granularity, keys::KeyPart};
    /// let mut label = String::new();
    /// BucketLabel::new(&0i64, Granularity::Week).write_key(&mut label).unwrap();
    /// assert_eq!(label, "1970-W01"); // 1970-01-01 was a Thursday
    /// ```
    pub fn new(time: &'a dyn BucketTime, granularity: Granularity) -> Self {
        BucketLabel { time, granularity }
    }
}

impl KeyPart for BucketLabel<'_> {
    fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
        let seconds = self
            .time
            .epoch_seconds()
            .map_err(|e| KeyPartError::invalid(e.to_string()))?;
        let bucket = Bucket::containing(self.granularity, seconds)
            .map_err(|e| KeyPartError::invalid(e.to_string()))?;
        bucket.write_label(out);
        Ok(())
    }
}

/// The logical key of a time-bucketed template around its bucket: the text before the
/// bucket label and the text after it, written from `values` (one per field segment other than
/// the bucket, in order). `OPS#{region}#{at:day}` with `"eu"` is `("OPS#eu#", "")`.
#[doc(hidden)]
pub fn build_around_bucket(
    ctx: KeyContext,
    template: &KeyTemplate,
    values: &[&dyn KeyPart],
) -> Result<(String, String), KeyError> {
    let arity = KeyError::Arity {
        entity: ctx.entity,
        attribute: ctx.attribute,
        template: template.source,
    };
    let (at, _, _) = template.bucket().ok_or(arity.clone())?;
    let mut values = values.iter();
    let mut write = |out: &mut String, segments: &[Segment]| -> Result<(), KeyError> {
        for segment in segments {
            match *segment {
                Segment::Literal(text) => out.push_str(text),
                Segment::Field(field) => values
                    .next()
                    .ok_or(arity.clone())?
                    .write_key(out)
                    .map_err(|e| field_error(ctx, field, e))?,
                Segment::Bucket { .. } => return Err(arity.clone()),
            }
        }
        Ok(())
    };
    let (mut before, mut after) = (String::new(), String::new());
    write(&mut before, &template.segments[..at])?;
    write(&mut after, &template.segments[at + 1..])?;
    Ok((before, after))
}

/// Builds an unsharded key (a sort key, or a partition key without a shard).
pub fn build_key(
    ctx: KeyContext,
    template: &KeyTemplate,
    values: &[&dyn KeyPart],
) -> Result<String, KeyError> {
    let mut out = String::with_capacity(template.capacity_hint());
    write_template(&mut out, ctx, template, values)?;
    Ok(out)
}

/// Builds the first `segments` segments of a template: a sort-key prefix for
/// `begins_with` and range conditions (the generated `sk_prefix_*` functions).
pub fn build_key_prefix(
    ctx: KeyContext,
    template: &KeyTemplate,
    values: &[&dyn KeyPart],
    segments: usize,
) -> Result<String, KeyError> {
    let prefix = KeyTemplate {
        source: template.source,
        segments: &template.segments[..segments.min(template.segments.len())],
    };
    build_key(ctx, &prefix, values)
}

/// Builds a sharded partition key on an explicit shard: `<template><suffix>`, the shard
/// spelled by `suffix` (`GAME#g1#3` by default).
pub fn build_key_on_shard(
    ctx: KeyContext,
    template: &KeyTemplate,
    values: &[&dyn KeyPart],
    shard: u32,
    n: u32,
    suffix: &ShardSuffix,
) -> Result<String, KeyError> {
    if shard >= n {
        return Err(KeyError::ShardOutOfRange {
            entity: ctx.entity,
            attribute: ctx.attribute,
            shard,
            n,
        });
    }
    let mut out = String::with_capacity(template.capacity_hint());
    write_template(&mut out, ctx, template, values)?;
    suffix.write(&mut out, shard);
    Ok(out)
}

/// Builds a hash-sharded partition key: the shard is the [spec hash](crate::hash) of
/// `shard_values`.
///
/// The shard fields are encoded into the same buffer after the template, hashed there and cut
/// off again, so building a key allocates exactly one `String`.
// `#[inline]` so the generated builder's constant `n` reaches `h % n`: a multiply instead of a
// 64-bit `div`, which alone is a sizeable part of building a key.
#[inline]
pub fn build_hashed_key(
    ctx: KeyContext,
    template: &KeyTemplate,
    values: &[&dyn KeyPart],
    shard_fields: &[&'static str],
    shard_values: &[&dyn KeyPart],
    n: u32,
    suffix: &ShardSuffix,
) -> Result<String, KeyError> {
    let mut out = String::with_capacity(template.capacity_hint() + 24);
    write_template(&mut out, ctx, template, values)?;
    let end = out.len();
    write_canonical(&mut out, ctx, shard_fields, shard_values)?;
    let shard = hash::shard_of_bytes(&out.as_bytes()[end..], n);
    out.truncate(end);
    suffix.write(&mut out, shard);
    Ok(out)
}

/// The shard of `shard_values` under `n` shards, per the [hash spec](crate::hash).
#[inline]
pub fn shard_of(
    ctx: KeyContext,
    shard_fields: &[&'static str],
    shard_values: &[&dyn KeyPart],
    n: u32,
) -> Result<u32, KeyError> {
    let mut canonical = String::with_capacity(32);
    write_canonical(&mut canonical, ctx, shard_fields, shard_values)?;
    Ok(hash::shard_of_bytes(canonical.as_bytes(), n))
}

/// The canonical text of hash fields (rule 3 of the [hash spec](crate::hash)): what
/// `shard_of` hashes, before the modulo. Part of an item's layout-independent identity (the
/// key of the counters beside it), which must not change when `n` does.
pub fn canonical(
    ctx: KeyContext,
    fields: &[&'static str],
    values: &[&dyn KeyPart],
) -> Result<String, KeyError> {
    let mut out = String::with_capacity(32);
    write_canonical(&mut out, ctx, fields, values)?;
    Ok(out)
}

/// The shard of an already-built text: used for identity-sharded GSIs, whose canonical bytes
/// are the item's logical partition key, `#`, and its sort key (rule 4 of the
/// [hash spec](crate::hash)).
pub fn shard_of_text(canonical: &str, n: u32) -> u32 {
    hash::shard_of_bytes(canonical.as_bytes(), n)
}

#[inline]
fn write_canonical(
    out: &mut String,
    ctx: KeyContext,
    fields: &[&'static str],
    values: &[&dyn KeyPart],
) -> Result<(), KeyError> {
    for (i, (field, value)) in fields.iter().zip(values).enumerate() {
        if i > 0 {
            out.push('#');
        }
        value
            .write_key(out)
            .map_err(|e| field_error(ctx, field, e))?;
    }
    Ok(())
}

/// Whether a stored key spells the same values as the canonical key `canonical`, only not in
/// canonical form: each `#`-separated piece the same, or the same number with other zero
/// padding (`0000000999` for `00000000000000000999`), or the same text without its escapes
/// (`Jane Doe` for `Jane$20Doe`), or the same time with fewer fraction digits
/// (`…:00.123Z` for `…:00.123000000Z`). What tells a key another service spelled its own way
/// (re-keyable) from a key of another record altogether (`BEST#player-1`).
///
/// ```
/// use sharded::__private::loosely_same_key;
/// assert!(loosely_same_key("0000000999#Jane Doe", "00000000000000000999#Jane$20Doe"));
/// assert!(loosely_same_key("T#2026-06-22T01:00:00.123Z", "T#2026-06-22T01:00:00.123000000Z"));
/// assert!(!loosely_same_key("BEST#player-1", "00000000000000000999#player-1"));
/// ```
pub fn loosely_same_key(stored: &str, canonical: &str) -> bool {
    let (stored, canonical): (Vec<&str>, Vec<&str>) =
        (stored.split('#').collect(), canonical.split('#').collect());
    stored.len() == canonical.len()
        && stored
            .iter()
            .zip(&canonical)
            .all(|(s, c)| loosely_same_piece(s, c))
}

fn loosely_same_piece(stored: &str, canonical: &str) -> bool {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let trim_zeros = |t: &str| t.trim_start_matches('0').to_owned();
    let trim_fraction = |t: &str| -> String {
        match t.strip_suffix('Z').and_then(|t| t.rsplit_once('.')) {
            Some((whole, fraction)) if digits(fraction) => {
                let fraction = fraction.trim_end_matches('0');
                if fraction.is_empty() {
                    format!("{whole}Z")
                } else {
                    format!("{whole}.{fraction}Z")
                }
            }
            _ => t.to_owned(),
        }
    };
    stored == canonical
        || (digits(stored) && digits(canonical) && trim_zeros(stored) == trim_zeros(canonical))
        || unescaped(canonical).as_deref() == Some(stored)
        || trim_fraction(stored) == trim_fraction(canonical)
}

/// The text a string key part was escaped from (`$20` back to a space), if it is one.
fn unescaped(key: &str) -> Option<String> {
    <String as KeyPartDecode>::decode_key(key).ok()
}

/// The encoded field values and shard number of a parsed physical key.
///
/// Produced by [`parse_key`]; the generated `parse_*` functions decode each raw value with
/// [`KeyPartDecode`] into the field's type, through [`ParsedKey::decode`], which accepts a raw
/// value only in its canonical form (the text [`KeyPart`] writes for the value decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    ctx: KeyContext,
    template: &'static KeyTemplate,
    key: &'a str,
    values: Vec<(&'static str, &'a str)>,
    /// The shard number, for a sharded key.
    pub shard: Option<u32>,
}

impl<'a> ParsedKey<'a> {
    /// The still-encoded value of the `index`-th field.
    pub fn raw(&self, index: usize) -> Option<&'a str> {
        self.values.get(index).map(|(_, v)| *v)
    }

    /// The number of field values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the key has no field values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The `index`-th field's name, and whether the key holds its bucket (`{at:day}`) rather
    /// than its value.
    pub fn field(&self, index: usize) -> Option<(&'static str, bool)> {
        let segment = self
            .template
            .segments
            .iter()
            .filter(|s| s.field_name().is_some())
            .nth(index)?;
        Some((
            segment.field_name()?,
            matches!(segment, Segment::Bucket { .. }),
        ))
    }

    /// Decodes the `index`-th field into `T`, and only from `T`'s canonical key form.
    ///
    /// The value decoded is written again with [`KeyPart::write_key`]; a text that does not
    /// come back exactly (a lenient [`KeyPartDecode`] took another spelling) is refused, so a
    /// parsed key always builds back to the key it was parsed from.
    pub fn decode<T: KeyPartDecode + KeyPart>(&self, index: usize) -> Result<T, KeyError> {
        let (field, raw) = self.values.get(index).copied().ok_or(KeyError::Arity {
            entity: self.ctx.entity,
            attribute: self.ctx.attribute,
            template: self.template.source,
        })?;
        T::decode_key(raw)
            .and_then(|value| ensure_canonical(&value, raw).map(|()| value))
            .map_err(|e| self.malformed(format!("field `{field}`: {e}")))
    }

    /// The bucket of the `index`-th field, which the template buckets (`{at:day}`): the key
    /// holds the bucket's label, not the field's value.
    ///
    /// ```
    /// use sharded::__private::{parse_key, KeyContext};
    /// use sharded::schema::{KeyTemplate, Segment};
    /// use sharded::bucket::Granularity;
    /// static OPS: KeyTemplate = KeyTemplate::new(
    ///     "OPS#{at:day}",
    ///     &[Segment::literal("OPS#"), Segment::bucket("at", Granularity::Day)],
    /// );
    /// let ctx = KeyContext { entity: "Ops", attribute: "pk" };
    /// let parsed = parse_key(ctx, &OPS, "OPS#2026-11-22#3", Some(4)).unwrap();
    /// assert_eq!(parsed.bucket(0).unwrap().label(), "2026-11-22");
    /// assert!(parse_key(ctx, &OPS, "OPS#2026-11-22T13#3", Some(4)).is_err());
    /// ```
    pub fn bucket(&self, index: usize) -> Result<Bucket, KeyError> {
        let arity = || KeyError::Arity {
            entity: self.ctx.entity,
            attribute: self.ctx.attribute,
            template: self.template.source,
        };
        let granularity = match self
            .template
            .segments
            .iter()
            .filter(|s| s.field_name().is_some())
            .nth(index)
        {
            Some(Segment::Bucket { granularity, .. }) => *granularity,
            _ => return Err(arity()),
        };
        let (field, raw) = self.values.get(index).copied().ok_or_else(arity)?;
        Bucket::parse(granularity, raw).map_err(|e| self.malformed(format!("field `{field}`: {e}")))
    }

    fn malformed(&self, reason: String) -> KeyError {
        malformed(self.ctx, self.template, self.key, reason)
    }
}

fn malformed(ctx: KeyContext, template: &KeyTemplate, key: &str, reason: String) -> KeyError {
    KeyError::Malformed {
        entity: ctx.entity,
        attribute: ctx.attribute,
        template: template.source,
        key: key.to_owned(),
        reason,
    }
}

/// Splits a physical key into its encoded field values and shard number.
///
/// `shards` is `Some(n)` for a sharded key (with the default suffix `#<shard>`, a shard
/// below `n`); `parse_key_with` takes another suffix. Every mismatch is an error naming the
/// template and what did not match; nothing is guessed.
pub fn parse_key<'a>(
    ctx: KeyContext,
    template: &'static KeyTemplate,
    key: &'a str,
    shards: Option<u32>,
) -> Result<ParsedKey<'a>, KeyError> {
    parse_key_with(
        ctx,
        template,
        key,
        shards.map(|n| (n, ShardSuffix::DEFAULT)),
    )
}

/// [`parse_key`] of a key whose shard (below `n`) is spelled by `suffix`.
pub fn parse_key_with<'a>(
    ctx: KeyContext,
    template: &'static KeyTemplate,
    key: &'a str,
    shards: Option<(u32, ShardSuffix)>,
) -> Result<ParsedKey<'a>, KeyError> {
    let (body, shard) = match shards {
        None => (key, None),
        Some((n, suffix)) => {
            let (body, shard) = suffix
                .split(key, n)
                .map_err(|reason| malformed(ctx, template, key, reason))?;
            (body, Some(shard))
        }
    };
    let mut rest = body;
    let mut values = Vec::with_capacity(template.segments.len());
    for segment in template.segments {
        match *segment {
            Segment::Literal(text) => {
                rest = rest.strip_prefix(text).ok_or_else(|| {
                    malformed(ctx, template, key, format!("expected `{text}` at `{rest}`"))
                })?;
            }
            Segment::Field(field) | Segment::Bucket { field, .. } => {
                // Encoded values never contain `#`, and the derive makes every field end the
                // template or be followed by a literal starting with `#`.
                let end = rest.find('#').unwrap_or(rest.len());
                if end == 0 {
                    return Err(malformed(
                        ctx,
                        template,
                        key,
                        format!("field `{field}` is empty"),
                    ));
                }
                if let Segment::Bucket { granularity, .. } = *segment {
                    // Only the canonical label: one bucket is one partition key.
                    if let Err(e) = Bucket::parse(granularity, &rest[..end]) {
                        return Err(malformed(
                            ctx,
                            template,
                            key,
                            format!("field `{field}`: {e}"),
                        ));
                    }
                }
                values.push((field, &rest[..end]));
                rest = &rest[end..];
            }
        }
    }
    if !rest.is_empty() {
        return Err(malformed(
            ctx,
            template,
            key,
            format!("unexpected trailing `{rest}`"),
        ));
    }
    Ok(ParsedKey {
        ctx,
        template,
        key,
        values,
        shard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    static PK: KeyTemplate = KeyTemplate {
        source: "GAME#{game_id}",
        segments: &[Segment::Literal("GAME#"), Segment::Field("game_id")],
    };
    static SK: KeyTemplate = KeyTemplate {
        source: "SCORE#{score}#{player_id}",
        segments: &[
            Segment::Literal("SCORE#"),
            Segment::Field("score"),
            Segment::Literal("#"),
            Segment::Field("player_id"),
        ],
    };
    const PK_CTX: KeyContext = KeyContext {
        entity: "Score",
        attribute: "pk",
    };
    const SK_CTX: KeyContext = KeyContext {
        entity: "Score",
        attribute: "sk",
    };

    #[test]
    fn empty_values_name_the_field() {
        let err = build_key(SK_CTX, &SK, &[&1u64, &""]).unwrap_err();
        assert!(matches!(
            err,
            KeyError::EmptyValue {
                field: "player_id",
                attribute: "sk",
                ..
            }
        ));
        assert!(err.to_string().contains("player_id"), "{err}");
    }

    #[test]
    fn tampered_keys_are_refused() {
        for bad in [
            "GAME#g1",
            "GAME#g1#x",
            "GAME#g1#10",
            "GAME#g1#03",
            "GAMX#g1#3",
            "GAME##3",
            "GAME#g1#",
        ] {
            assert!(
                parse_key(PK_CTX, &PK, bad, Some(10)).is_err(),
                "{bad} parsed"
            );
        }
        assert!(parse_key(SK_CTX, &SK, "SCORE#1#p1", None)
            .unwrap()
            .decode::<u64>(0)
            .is_err());
        assert!(parse_key(SK_CTX, &SK, "SCORE#00000000000000000001#p1#x", None).is_err());
    }

    /// A user's type with a lenient decoder: written as ten digits, read from any `u32`
    /// syntax (`7`, `+7`, `007`).
    #[derive(Debug, PartialEq)]
    struct Lenient(u32);

    impl KeyPart for Lenient {
        fn write_key(&self, out: &mut String) -> Result<(), KeyPartError> {
            self.0.write_key(out)
        }
    }

    impl KeyPartDecode for Lenient {
        fn decode_key(encoded: &str) -> Result<Self, KeyPartError> {
            encoded
                .parse()
                .map(Lenient)
                .map_err(|e| KeyPartError::invalid(format!("{e}")))
        }
    }

    static LENIENT: KeyTemplate = KeyTemplate {
        source: "N#{n}",
        segments: &[Segment::Literal("N#"), Segment::Field("n")],
    };

    #[test]
    fn a_lenient_decoder_cannot_parse_another_spelling() {
        let key = build_key(SK_CTX, &LENIENT, &[&Lenient(7)]).unwrap();
        assert_eq!(key, "N#0000000007");
        let parsed = parse_key(SK_CTX, &LENIENT, &key, None).unwrap();
        assert_eq!(parsed.decode::<Lenient>(0).unwrap(), Lenient(7));

        let err = parse_key(SK_CTX, &LENIENT, "N#+7", None)
            .unwrap()
            .decode::<Lenient>(0)
            .unwrap_err();
        assert!(
            matches!(&err, KeyError::Malformed { reason, .. } if reason
                == "field `n`: `+7` is not the canonical key form of its value: expected `0000000007`"),
            "{err:?}"
        );
    }

    static OPS: KeyTemplate = KeyTemplate {
        source: "OPS#{region}#{at:day}",
        segments: &[
            Segment::Literal("OPS#"),
            Segment::Field("region"),
            Segment::Literal("#"),
            Segment::Bucket {
                field: "at",
                granularity: Granularity::Day,
            },
        ],
    };

    #[test]
    fn bucket_segments_write_and_parse_canonical_labels() {
        // 2026-11-22T13:34:56Z
        let at = 1_795_354_496i64;
        let label = BucketLabel::new(&at, Granularity::Day);
        let key = build_key_on_shard(PK_CTX, &OPS, &[&"eu", &label], 3, 4, &ShardSuffix::DEFAULT)
            .unwrap();
        assert_eq!(key, "OPS#eu#2026-11-22#3");
        let parsed = parse_key(PK_CTX, &OPS, &key, Some(4)).unwrap();
        assert_eq!(parsed.decode::<String>(0).unwrap(), "eu");
        assert_eq!(parsed.bucket(1).unwrap().label(), "2026-11-22");
        assert!(parsed.bucket(0).is_err(), "`region` is not bucketed");
        for bad in [
            "OPS#eu#2026-11-2#3",
            "OPS#eu#2026-11-32#3",
            "OPS#eu#2026-11-22T13#3",
            "OPS#eu#2026-W47#3",
            "OPS#eu#+026-11-22#3",
        ] {
            assert!(
                parse_key(PK_CTX, &OPS, bad, Some(4)).is_err(),
                "{bad} parsed"
            );
        }
        assert_eq!(
            build_around_bucket(PK_CTX, &OPS, &[&"eu"]).unwrap(),
            ("OPS#eu#".to_owned(), String::new())
        );
        // A time without a bucket (year 10000) is an error naming the field, not a key.
        let far = BucketLabel::new(&i64::MAX, Granularity::Day);
        let err = build_key(PK_CTX, &OPS, &[&"eu", &far]).unwrap_err();
        assert!(
            matches!(err, KeyError::Unencodable { field: "at", .. }),
            "{err}"
        );
    }

    proptest! {
        /// parse(build(x)) == x for time-bucketed keys, at every granularity: the label parses
        /// back to the bucket the time falls in.
        #[test]
        fn bucketed_keys_round_trip(
            at in -62_167_219_200i64..253_402_300_799,
            g in prop::sample::select(vec![Granularity::Hour, Granularity::Day, Granularity::Week, Granularity::Month]),
            region in "[a-z#]{1,6}",
            n in 1u32..50,
        ) {
            let segments: &'static [Segment] = Box::leak(Box::new([
                Segment::Literal("OPS#"),
                Segment::Field("region"),
                Segment::Literal("#"),
                Segment::bucket("at", g),
            ]));
            let template: &'static KeyTemplate =
                Box::leak(Box::new(KeyTemplate::new("OPS#{region}#{at:..}", segments)));
            let Ok(expected) = Bucket::containing(g, at) else {
                // An ISO week of the first or last days of the years 0000/9999 has no label.
                return Ok(());
            };
            let key = build_key_on_shard(PK_CTX, template, &[&region, &BucketLabel::new(&at, g)], n - 1, n, &ShardSuffix::DEFAULT).unwrap();
            let parsed = parse_key(PK_CTX, template, &key, Some(n)).unwrap();
            prop_assert_eq!(parsed.decode::<String>(0).unwrap(), region);
            prop_assert_eq!(parsed.bucket(1).unwrap(), expected);
            prop_assert!(expected.start() <= at && at < expected.end());
        }

        /// Keys of one logical key sort like their buckets: labels are fixed width.
        #[test]
        fn bucketed_keys_sort_like_time(a in 0i64..253_402_300_799, b in 0i64..253_402_300_799) {
            let ka = build_key(PK_CTX, &OPS, &[&"eu", &BucketLabel::new(&a, Granularity::Day)]).unwrap();
            let kb = build_key(PK_CTX, &OPS, &[&"eu", &BucketLabel::new(&b, Granularity::Day)]).unwrap();
            let (ba, bb) = (Bucket::containing(Granularity::Day, a).unwrap(), Bucket::containing(Granularity::Day, b).unwrap());
            prop_assert_eq!(ka.cmp(&kb), ba.start().cmp(&bb.start()));
        }
    }

    proptest! {
        /// The parsers' safety net: whatever a decoder accepts, `decode` returns a value only
        /// when the value's key is the text read, so the key built from a parsed key is the key.
        #[test]
        fn decode_returns_only_values_whose_key_is_the_text(n: u32, raw in "[+0-9]{1,12}|\\PC{1,12}") {
            let candidates = [raw, n.to_string(), format!("+{n}"), format!("{n:011}"), format!("{n:010}")];
            for raw in candidates.into_iter().filter(|r| !r.contains('#')) {
                let key = format!("N#{raw}");
                if let Ok(value) = parse_key(SK_CTX, &LENIENT, &key, None).unwrap().decode::<Lenient>(0) {
                    prop_assert_eq!(build_key(SK_CTX, &LENIENT, &[&value]).unwrap(), key);
                }
            }
        }

        /// parse(build(x)) == x for sharded partition keys and composite sort keys.
        #[test]
        fn parse_inverts_build(game in "\\PC{1,12}", player in "[ -~]{1,12}", score: u64, n in 1u32..1000) {
            let pk = build_hashed_key(PK_CTX, &PK, &[&game], &["player_id"], &[&player], n, &ShardSuffix::DEFAULT).unwrap();
            let parsed = parse_key(PK_CTX, &PK, &pk, Some(n)).unwrap();
            prop_assert_eq!(parsed.decode::<String>(0).unwrap(), game.clone());
            prop_assert_eq!(parsed.shard.unwrap(), shard_of(PK_CTX, &["player_id"], &[&player], n).unwrap());

            let sk = build_key(SK_CTX, &SK, &[&score, &player]).unwrap();
            let parsed = parse_key(SK_CTX, &SK, &sk, None).unwrap();
            prop_assert_eq!(parsed.decode::<u64>(0).unwrap(), score);
            prop_assert_eq!(parsed.decode::<String>(1).unwrap(), player);
        }

        /// Sort keys built from (score, player) sort like the tuples, the leaderboard's need.
        #[test]
        fn sort_keys_sort_like_tuples(a: u64, b in "[ -~]{1,6}", c: u64, d in "[ -~]{1,6}") {
            let k1 = build_key(SK_CTX, &SK, &[&a, &b]).unwrap();
            let k2 = build_key(SK_CTX, &SK, &[&c, &d]).unwrap();
            prop_assert_eq!((a, b.as_bytes()).cmp(&(c, d.as_bytes())), k1.as_bytes().cmp(k2.as_bytes()));
        }
    }
}

#[cfg(test)]
mod doc_examples {
    //! Examples of crate-internal items, kept as tests.
    use super::*;

    static GAME_PK: KeyTemplate = KeyTemplate::new(
        "GAME#{game_id}",
        &[Segment::Literal("GAME#"), Segment::Field("game_id")],
    );
    static SCORE_ONLY_SK: KeyTemplate = KeyTemplate::new(
        "SCORE#{score}",
        &[Segment::Literal("SCORE#"), Segment::Field("score")],
    );
    static SCORE_SK: KeyTemplate = KeyTemplate::new(
        "SCORE#{score}#{player_id}",
        &[
            Segment::Literal("SCORE#"),
            Segment::Field("score"),
            Segment::Literal("#"),
            Segment::Field("player_id"),
        ],
    );

    fn context(entity: &'static str, attribute: &'static str) -> KeyContext {
        KeyContext { entity, attribute }
    }

    #[test]
    fn example_keycontext() {
        let at = KeyContext {
            entity: "Score",
            attribute: "pk",
        };
        assert_eq!(at.attribute, "pk");
    }

    #[test]
    fn example_build_key() {
        let ctx = context("Score", "sk");
        assert_eq!(
            build_key(ctx, &SCORE_ONLY_SK, &[&42u64]).unwrap(),
            "SCORE#00000000000000000042"
        );
    }

    #[test]
    fn example_build_key_prefix() {
        let ctx = context("Score", "sk");
        assert_eq!(
            build_key_prefix(ctx, &SCORE_SK, &[&7u64], 3).unwrap(),
            "SCORE#00000000000000000007#"
        );
    }

    #[test]
    fn example_build_key_on_shard() {
        let ctx = context("Score", "pk");
        assert_eq!(
            build_key_on_shard(ctx, &GAME_PK, &[&"g1"], 3, 10, &ShardSuffix::DEFAULT).unwrap(),
            "GAME#g1#3"
        );
        assert!(
            build_key_on_shard(ctx, &GAME_PK, &[&"g1"], 10, 10, &ShardSuffix::DEFAULT).is_err()
        );
    }

    #[test]
    fn example_build_hashed_key() {
        let ctx = context("Score", "pk");
        let key = build_hashed_key(
            ctx,
            &GAME_PK,
            &[&"g1"],
            &["player_id"],
            &[&"player-1"],
            10,
            &ShardSuffix::DEFAULT,
        )
        .unwrap();
        assert_eq!(key, "GAME#g1#0"); // shard of "player-1" mod 10 is 0 (see the hash test vectors)
    }

    #[test]
    fn example_shard_of() {
        let ctx = context("Score", "pk");
        assert_eq!(
            shard_of(ctx, &["player_id"], &[&"player-1"], 10).unwrap(),
            0
        );
    }

    #[test]
    fn example_shard_of_text() {
        let s = shard_of_text("GAME#g1#SCORE#00000000000000000042#p1", 4);
        assert!(s < 4);
    }

    #[test]
    fn example_parsedkey() {
        let ctx = context("Score", "pk");
        let parsed = parse_key(ctx, &GAME_PK, "GAME#g$231#7", Some(10)).unwrap();
        assert_eq!(parsed.raw(0), Some("g$231"));
        assert_eq!(parsed.decode::<String>(0).unwrap(), "g#1");
        assert_eq!(parsed.shard, Some(7));
    }

    #[test]
    fn example_parsedkey_decode() {
        let ctx = context("Score", "sk");
        let parsed = parse_key(ctx, &SCORE_ONLY_SK, "SCORE#00000000000000000042", None).unwrap();
        assert_eq!(parsed.decode::<u64>(0).unwrap(), 42);
        // Only the canonical form: `42` is the number, but not its key.
        let parsed = parse_key(ctx, &SCORE_ONLY_SK, "SCORE#42", None).unwrap();
        assert!(parsed.decode::<u64>(0).is_err());
    }

    #[test]
    fn example_parse_key() {
        let ctx = context("Score", "sk");
        let parsed = parse_key(ctx, &SCORE_SK, "SCORE#00000000000000000042#p1", None).unwrap();
        assert_eq!(parsed.decode::<u64>(0).unwrap(), 42);
        assert!(parse_key(ctx, &SCORE_SK, "GAME#g1", None).is_err());
    }
}
