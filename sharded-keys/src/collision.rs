//! Whether two key templates can produce the same physical key, decided on the templates.
//!
//! Two entities in one table overwrite each other's items when their partition keys and sort
//! keys can both come out equal: `ORG#{org}` sharded over 4 writes `ORG#acme#3`, and so does
//! an unsharded `ORG#{org}#{team}` with team `3`. [`TableDefinition::merge`] refuses such
//! entities with the key they can share, found here.
//!
//! # The model, and why the answer is exact for it
//!
//! A physical key is a word over bytes; a template describes a regular language of them:
//!
//! * a literal is its own bytes;
//! * a field is one or more bytes, each at least `$` (0x24). That is what every
//!   [`KeyPart`](crate::KeyPart) may write (never `#`, nothing below `$`, never empty), and
//!   a `String` field can write any such text (its escape makes every byte sequence
//!   reachable);
//! * a shard suffix is its literal (starting with `#`, see [`ShardSuffix`]) and a shard
//!   number below `n` in decimal: without leading zeros, or zero-padded to exactly the
//!   suffix's width;
//! * a time bucket (`{at:day}`) is exactly as many bytes as its label has (13 for an hour,
//!   10 for a day, 8 for a week, 7 for a month), each a digit, `-`, `T` or `W`. That is more
//!   than the labels a bucket writes (`9999-99-99` is no date), so the model stays on the side
//!   of reporting: a bucket meets any field, and every literal of that width spelled with those
//!   bytes.
//!
//! Two templates can collide exactly when the two languages intersect. That is decided by
//! walking both automata in step over every byte that can make a difference (each byte of
//! both templates' literals, the ten digits, and one stand-in for all other bytes, which
//! only fields accept and which they treat alike), breadth first, so the key found is a
//! shortest one.
//!
//! What the model does not know is a field's type: a `u64` field only ever writes twenty
//! digits, a `bool` only `true` or `false`. So templates that could only meet through a value
//! the field's type never writes (`SCORE#{score}` with a numeric `score` and `SCORE#LATEST`)
//! are reported too. The check errs on the side of refusing: a distinct literal prefix per
//! entity is cheap and makes the layout obvious to every reader.
//!
//! [`TableDefinition::merge`]: crate::schema::TableDefinition::merge

use std::collections::{HashMap, VecDeque};

use crate::suffix::ShardSuffix;
use crate::template::{KeyTemplate, Segment};

/// The smallest byte a key field may write (`$`): see [`KeyPart`](crate::KeyPart).
const FIELD_MIN_BYTE: u8 = 0x24;

/// One position of a key's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    /// This byte.
    Byte(u8),
    /// One or more bytes, each at least [`FIELD_MIN_BYTE`].
    Field,
    /// A shard number below `n`: decimal, no leading zeros (width 0), or exactly `width`
    /// digits.
    Shard { n: u32, width: u8 },
    /// A bucket label: exactly this many bytes, each [`bucket_byte`].
    Bucket(u32),
}

/// Whether a bucket label can hold `byte`: digits and the separators of the labels
/// (`2026-11-22T13`, `2026-W47`).
fn bucket_byte(byte: u8) -> bool {
    byte.is_ascii_digit() || matches!(byte, b'-' | b'T' | b'W')
}

/// The pattern of the keys a template writes: with `shards = Some((n, suffix))`, followed by
/// the suffix's literal and a shard number below `n`.
fn pattern(template: &KeyTemplate, shards: Option<(u32, ShardSuffix)>) -> Vec<Element> {
    let mut elements = Vec::new();
    for segment in template.segments {
        match *segment {
            Segment::Literal(text) => elements.extend(text.bytes().map(Element::Byte)),
            Segment::Field(_) => elements.push(Element::Field),
            Segment::Bucket { granularity, .. } => {
                elements.push(Element::Bucket(granularity.label_len() as u32));
            }
        }
    }
    if let Some((n, suffix)) = shards {
        elements.extend(suffix.literal.bytes().map(Element::Byte));
        elements.push(Element::Shard {
            n,
            width: suffix.width,
        });
    }
    elements
}

/// A place in a pattern: before element `at`, or inside it having read something (`inside`:
/// for a field, 1; for a shard, the number read so far plus one; for a bucket, the bytes read
/// so far; `digits`: for a shard, the digits read so far). `at == len` is the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Place {
    at: usize,
    inside: u32,
    digits: u8,
}

impl Place {
    /// Before element `at`.
    fn at(at: usize) -> Place {
        Place {
            at,
            inside: 0,
            digits: 0,
        }
    }
}

/// Where both patterns are after reading the same bytes.
type Pair = (Place, Place);

/// A place and every place reachable from it without reading a byte: a field or an
/// unpadded shard that has read something may end there, a padded shard once it has read
/// its width.
fn close(pattern: &[Element], place: Place, out: &mut Vec<Place>) {
    let may_end = match pattern.get(place.at) {
        Some(Element::Shard { width, .. }) if *width > 0 => place.digits == *width,
        _ => place.inside > 0,
    };
    out.push(place);
    if may_end {
        out.push(Place::at(place.at + 1));
    }
}

/// The places after reading `byte` at `place`.
fn step(pattern: &[Element], place: Place, byte: u8, out: &mut Vec<Place>) {
    let Some(element) = pattern.get(place.at) else {
        return;
    };
    match *element {
        Element::Byte(b) if b == byte => close(pattern, Place::at(place.at + 1), out),
        Element::Byte(_) => {}
        Element::Field if byte >= FIELD_MIN_BYTE => {
            close(pattern, Place { inside: 1, ..place }, out)
        }
        Element::Field => {}
        Element::Shard { n, width } if byte.is_ascii_digit() => {
            let digit = u32::from(byte - b'0');
            let number = match (place.inside, width) {
                (0, _) => Some(digit),
                // An unpadded shard number has no leading zero: "0" is complete.
                (1, 0) => None,
                (read, _) => (read - 1)
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(digit)),
            };
            let digits = place.digits + 1;
            let fits = width == 0 || digits <= width;
            if let Some(number) = number.filter(|&v| v < n && fits) {
                close(
                    pattern,
                    Place {
                        at: place.at,
                        inside: number + 1,
                        digits,
                    },
                    out,
                );
            }
        }
        Element::Shard { .. } => {}
        Element::Bucket(width) if bucket_byte(byte) => {
            let read = place.inside + 1;
            out.push(if read >= width {
                Place::at(place.at + 1)
            } else {
                Place {
                    inside: read,
                    ..place
                }
            });
        }
        Element::Bucket(_) => {}
    }
}

/// The bytes that can tell places apart: every literal byte of both patterns, the digits, and
/// one stand-in for every other byte a field may write (all such bytes act alike: only fields
/// take them). The stand-in comes first, so the key found reads well.
fn alphabet(a: &[Element], b: &[Element]) -> Vec<u8> {
    let mut bytes: Vec<u8> = a
        .iter()
        .chain(b)
        .filter_map(|e| match e {
            Element::Byte(byte) => Some(*byte),
            _ => None,
        })
        .chain(b'0'..=b'9')
        .collect();
    let stand_in = (b'a'..=b'z')
        .chain(b'A'..=b'Z')
        .chain(FIELD_MIN_BYTE..=u8::MAX)
        .find(|c| !bytes.contains(c) && *c != b'#');
    bytes.sort_unstable();
    bytes.dedup();
    let mut alphabet: Vec<u8> = stand_in.into_iter().collect();
    alphabet.extend(bytes);
    alphabet
}

/// A shortest key both patterns match, if there is one.
fn shared_word(a: &[Element], b: &[Element]) -> Option<Vec<u8>> {
    let alphabet = alphabet(a, b);
    // Each pair of places, with the pair and byte it was first reached from: a breadth-first
    // walk of the product automaton, so the first accepting pair ends a shortest key.
    let start = Place::at(0);
    let mut parent: HashMap<Pair, Option<(Pair, u8)>> = HashMap::from([((start, start), None)]);
    let mut queue = VecDeque::from([(start, start)]);
    let (mut next_a, mut next_b) = (Vec::new(), Vec::new());
    while let Some(pair) = queue.pop_front() {
        let (pa, pb) = pair;
        if pa.at == a.len() && pb.at == b.len() {
            let mut word = Vec::new();
            let mut at = pair;
            while let Some(Some((from, byte))) = parent.get(&at) {
                word.push(*byte);
                at = *from;
            }
            word.reverse();
            return Some(word);
        }
        for &byte in &alphabet {
            next_a.clear();
            next_b.clear();
            step(a, pa, byte, &mut next_a);
            if next_a.is_empty() {
                continue;
            }
            step(b, pb, byte, &mut next_b);
            for &na in &next_a {
                for &nb in &next_b {
                    if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry((na, nb))
                    {
                        slot.insert(Some((pair, byte)));
                        queue.push_back((na, nb));
                    }
                }
            }
        }
    }
    None
}

/// A shortest physical key that both `a` (sharded over `a_shards`, if `Some`, with that
/// suffix) and `b` can produce, or `None` when no values of their fields make them equal.
#[doc(hidden)]
pub fn shared_key(
    a: &KeyTemplate,
    a_shards: Option<(u32, ShardSuffix)>,
    b: &KeyTemplate,
    b_shards: Option<(u32, ShardSuffix)>,
) -> Option<String> {
    shared_word(&pattern(a, a_shards), &pattern(b, b_shards))
        .map(|word| String::from_utf8_lossy(&word).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{parse_key, KeyContext};

    macro_rules! template {
        ($source:literal, [$($segment:expr),* $(,)?]) => {{
            static T: KeyTemplate = KeyTemplate::new($source, &[$($segment),*]);
            &T
        }};
    }
    use Segment::{Field as F, Literal as L};

    const CTX: KeyContext = KeyContext {
        entity: "Test",
        attribute: "pk",
    };

    /// [`super::shared_key`] with the default suffix `#{shard}`.
    fn shared_key(
        a: &KeyTemplate,
        a_shards: Option<u32>,
        b: &KeyTemplate,
        b_shards: Option<u32>,
    ) -> Option<String> {
        let spelled = |n: Option<u32>| n.map(|n| (n, ShardSuffix::DEFAULT));
        super::shared_key(a, spelled(a_shards), b, spelled(b_shards))
    }

    #[test]
    fn suffixes_are_part_of_the_key() {
        use crate::template::parse_key_with;
        let base = template!("ACTIVE_USERS", [L("ACTIVE_USERS")]);
        let user = template!("ACTIVE_USERS#{id}", [L("ACTIVE_USERS#"), F("id")]);
        let ddb = ShardSuffix::parse("#SHARD_{shard}").unwrap();
        let hashed = ShardSuffix::parse("#SHARD#{shard}").unwrap();
        let padded = ShardSuffix::parse("#{shard:02}").unwrap();
        // A field can spell `SHARD_7`: the two collide.
        let key = super::shared_key(base, Some((10, ddb)), user, None).unwrap();
        assert_eq!(key, "ACTIVE_USERS#SHARD_0");
        assert!(parse_key_with(CTX, base, &key, Some((10, ddb))).is_ok());
        // `#SHARD#0` has two `#` after the prefix, one field cannot write it.
        assert_eq!(
            super::shared_key(base, Some((10, hashed)), user, None),
            None
        );
        // Two spellings of the same shards never meet: `#07` is no `#SHARD_..` key.
        assert_eq!(
            super::shared_key(base, Some((10, padded)), base, Some((10, ddb))),
            None
        );
        // A padded shard is exactly its width: `#07` but never `#7`.
        assert_eq!(
            super::shared_key(
                base,
                Some((10, padded)),
                base,
                Some((10, ShardSuffix::DEFAULT))
            ),
            None
        );
        assert_eq!(
            super::shared_key(base, Some((10, padded)), base, Some((20, padded))).as_deref(),
            Some("ACTIVE_USERS#00")
        );
    }

    /// The shared key, checked to parse under both templates: the witness is real.
    fn shared(
        a: &'static KeyTemplate,
        a_shards: Option<u32>,
        b: &'static KeyTemplate,
        b_shards: Option<u32>,
    ) -> Option<String> {
        let key = shared_key(a, a_shards, b, b_shards)?;
        parse_key(CTX, a, &key, a_shards)
            .unwrap_or_else(|e| panic!("{key} is not an `a` key: {e}"));
        parse_key(CTX, b, &key, b_shards).unwrap_or_else(|e| panic!("{key} is not a `b` key: {e}"));
        assert!(
            shared_key(b, b_shards, a, a_shards).is_some(),
            "the relation is symmetric"
        );
        Some(key)
    }

    #[test]
    fn a_shard_suffix_meets_a_field() {
        let org = template!("ORG#{org}", [L("ORG#"), F("org")]);
        let team = template!("ORG#{org}#{team}", [L("ORG#"), F("org"), L("#"), F("team")]);
        assert_eq!(shared(org, Some(4), team, None).as_deref(), Some("ORG#a#0"));
        // Unsharded, `ORG#{org}` has one `#` and the other two: they never meet.
        assert_eq!(shared(org, None, team, None), None);
    }

    #[test]
    fn distinct_literal_prefixes_never_meet() {
        let user = template!("USER#{id}", [L("USER#"), F("id")]);
        let team = template!("TEAM#{id}", [L("TEAM#"), F("id")]);
        assert_eq!(shared(user, Some(8), team, Some(8)), None);
        assert_eq!(shared(user, None, team, None), None);
    }

    #[test]
    fn identical_templates_meet() {
        let user = template!("USER#{id}", [L("USER#"), F("id")]);
        assert_eq!(shared(user, None, user, None).as_deref(), Some("USER#a"));
        assert_eq!(
            shared(user, Some(3), user, Some(5)).as_deref(),
            Some("USER#a#0")
        );
    }

    #[test]
    fn a_field_meets_a_literal_it_can_spell() {
        let score = template!("SCORE#{score}", [L("SCORE#"), F("score")]);
        let latest = template!("SCORE#LATEST", [L("SCORE#LATEST")]);
        // Reported although a numeric `score` never writes `LATEST`: the model knows no types.
        assert_eq!(
            shared(score, None, latest, None).as_deref(),
            Some("SCORE#LATEST")
        );
        let comment = template!("COMMENT#{id}", [L("COMMENT#"), F("id")]);
        let badge = template!("{player}#BADGE", [F("player"), L("#BADGE")]);
        assert_eq!(
            shared(comment, None, badge, None).as_deref(),
            Some("COMMENT#BADGE")
        );
    }

    #[test]
    fn fields_cannot_write_bytes_below_dollar() {
        let a = template!("A#{x}", [L("A#"), F("x")]);
        let b = template!("A# x", [L("A# x")]);
        assert_eq!(
            shared(a, None, b, None),
            None,
            "a field cannot write a space"
        );
        let c = template!("A#$x", [L("A#$x")]);
        assert_eq!(shared(a, None, c, None).as_deref(), Some("A#$x"));
    }

    #[test]
    fn shard_numbers_are_below_n_and_have_no_leading_zero() {
        let a = template!("A", [L("A")]);
        let a7 = template!("A#7", [L("A#7")]);
        let a07 = template!("A#07", [L("A#07")]);
        let a12 = template!("A#12", [L("A#12")]);
        assert_eq!(shared(a, Some(4), a7, None), None, "7 is not below 4");
        assert_eq!(shared(a, Some(8), a7, None).as_deref(), Some("A#7"));
        assert_eq!(shared(a, Some(100), a07, None), None, "07 is no shard");
        assert_eq!(shared(a, Some(12), a12, None), None);
        assert_eq!(shared(a, Some(13), a12, None).as_deref(), Some("A#12"));
        assert_eq!(shared(a, Some(1000), a, Some(2)).as_deref(), Some("A#0"));
    }

    #[test]
    fn multi_byte_literals_stay_whole() {
        let a = template!("É#{x}", [L("É#"), F("x")]);
        let b = template!("É#é", [L("É#é")]);
        assert_eq!(shared(a, None, b, None).as_deref(), Some("É#é"));
    }

    #[test]
    fn a_field_covers_any_text_but_never_a_hash() {
        let a = template!("{a}#Z", [F("a"), L("#Z")]);
        let b = template!("XY#Z", [L("XY#Z")]);
        assert_eq!(shared(a, None, b, None).as_deref(), Some("XY#Z"));
        let c = template!("X#{a}", [L("X#"), F("a")]);
        let d = template!("X#{b}#Y", [L("X#"), F("b"), L("#Y")]);
        assert_eq!(shared(c, None, d, None), None, "a field cannot cover `#`");
        assert_eq!(shared(c, Some(5), d, None), None, "nor `Y` be a shard");
    }

    #[test]
    fn a_bucket_meets_fields_and_label_shaped_literals_only() {
        use crate::bucket::Granularity;
        let day = template!(
            "OPS#{at:day}",
            [L("OPS#"), Segment::bucket("at", Granularity::Day)]
        );
        let latest = template!("OPS#LATEST", [L("OPS#LATEST")]);
        let named = template!("OPS#{name}", [L("OPS#"), F("name")]);
        let dated = template!("OPS#2026-11-22", [L("OPS#2026-11-22")]);
        let month = template!(
            "OPS#{at:month}",
            [L("OPS#"), Segment::bucket("at", Granularity::Month)]
        );
        // The witness of a bucket is label-shaped, not always a label: checked here without
        // parsing it back.
        assert_eq!(shared_key(day, Some(4), latest, None), None);
        assert_eq!(
            shared_key(day, None, named, None).as_deref(),
            Some("OPS#0000000000")
        );
        assert_eq!(
            shared_key(day, None, dated, None).as_deref(),
            Some("OPS#2026-11-22")
        );
        assert!(shared_key(day, Some(4), dated, Some(2)).is_some());
        // Labels of two granularities differ in width: they never meet.
        assert_eq!(shared_key(day, Some(4), month, Some(4)), None);
        assert!(shared_key(day, Some(4), day, Some(8)).is_some());
    }

    /// A template as the derive allows them (each field ends it or is followed by a literal
    /// starting with `#`) over a small alphabet, so that keys often meet.
    fn legal_template() -> impl Strategy<Value = &'static KeyTemplate> {
        let literal = prop::sample::select(vec!["A", "#", "#A", "A#", "#1", "B#A"]);
        prop::collection::vec((prop::bool::ANY, literal), 1..5).prop_map(|parts| {
            let mut segments = Vec::new();
            let mut last_was_field = false;
            for (field, text) in parts {
                if field && !last_was_field {
                    segments.push(Segment::Field("f"));
                    last_was_field = true;
                } else if !last_was_field || text.starts_with('#') {
                    segments.push(Segment::Literal(text));
                    last_was_field = false;
                }
            }
            let segments: &'static [Segment] = Box::leak(segments.into_boxed_slice());
            &*Box::leak(Box::new(KeyTemplate::new("generated", segments)))
        })
    }

    /// The key `template` writes with these field values (in turn) and shard.
    fn build(template: &KeyTemplate, values: &[String], shard: Option<u32>) -> String {
        let mut values = values.iter().cycle();
        let mut key = String::new();
        for segment in template.segments {
            match segment {
                Segment::Literal(text) => key.push_str(text),
                Segment::Field(_) | Segment::Bucket { .. } => {
                    key.push_str(values.next().map_or("x", String::as_str))
                }
            }
        }
        if let Some(shard) = shard {
            key.push_str(&format!("#{shard}"));
        }
        key
    }

    use proptest::prelude::*;

    proptest! {
        /// No false negatives: keys that came out equal were reported, and every reported
        /// key is one both templates parse.
        #[test]
        fn equal_keys_are_always_reported(
            a in legal_template(),
            b in legal_template(),
            a_values in prop::collection::vec("[AB01]{1,2}", 1..3),
            b_values in prop::collection::vec("[AB01]{1,2}", 1..3),
            a_shards in prop::option::of(1u32..12),
            b_shards in prop::option::of(1u32..12),
            shard_pick in 0u32..12,
        ) {
            let a_key = build(a, &a_values, a_shards.map(|n| shard_pick % n));
            let b_key = build(b, &b_values, b_shards.map(|n| shard_pick % n));
            let found = shared_key(a, a_shards, b, b_shards);
            if a_key == b_key {
                prop_assert!(found.is_some(), "{a_key} is written by both");
            }
            if let Some(key) = found {
                prop_assert!(parse_key(CTX, a, &key, a_shards).is_ok(), "{key}");
                prop_assert!(parse_key(CTX, b, &key, b_shards).is_ok(), "{key}");
            }
        }

        /// No false negatives where keys surely meet: `b` is cut from a key `a` wrote, some
        /// of its `#`-separated pieces made fields and its shard suffix, maybe, a shard.
        #[test]
        fn a_template_cut_from_a_key_is_reported(
            a in legal_template(),
            values in prop::collection::vec("[AB01]{1,2}", 1..3),
            a_shards in prop::option::of(1u32..12),
            shard_pick in 0u32..12,
            fields in prop::collection::vec(prop::bool::ANY, 12),
            as_shard in prop::bool::ANY,
            more_shards in 1u32..5,
        ) {
            let key = build(a, &values, a_shards.map(|n| shard_pick % n));
            let suffix = key
                .rsplit_once('#')
                .and_then(|(body, digits)| Some((body, digits.parse::<u32>().ok()?, digits)))
                .filter(|(_, shard, digits)| *digits == shard.to_string());
            let (body, b_shards) = match suffix {
                Some((body, shard, _)) if as_shard => (body.to_owned(), Some(shard + more_shards)),
                _ => (key.clone(), None),
            };
            let mut segments = Vec::new();
            for (i, piece) in body.split('#').enumerate() {
                if i > 0 {
                    segments.push(Segment::Literal("#"));
                }
                if piece.is_empty() {
                    continue;
                }
                let piece: &'static str = Box::leak(piece.to_owned().into_boxed_str());
                segments.push(if fields[i % fields.len()] {
                    Segment::Field("g")
                } else {
                    Segment::Literal(piece)
                });
            }
            let segments: &'static [Segment] = Box::leak(segments.into_boxed_slice());
            let b: &'static KeyTemplate = Box::leak(Box::new(KeyTemplate::new("cut", segments)));
            let found = shared_key(a, a_shards, b, b_shards);
            prop_assert!(found.is_some(), "{key} is written by both");
        }
    }
}
