//! The canonical description of a query: everything that shapes its answer, as bytes that a
//! cursor is bound to.
//!
//! A [`Query`](crate::Query) and a [`RangeQuery`](crate::query::RangeQuery) describe themselves
//! through the one type here, [`QueryShape`], so a part added to what shapes an answer is
//! added for both. The bytes are specified on [`Cursor`](crate::Cursor) ("The query
//! description"); [`Description`] holds them with their fingerprint. They are written with
//! the wire codec every token shares (`token`): every variable-length part is length-prefixed
//! (`u32` BE) and every list count-prefixed, so two different descriptions never share their
//! bytes.

use aws_sdk_dynamodb::types::AttributeValue;
use sha2::{Digest, Sha256};

use crate::access::condition::{Condition, Names, Values};
use crate::access::sort_condition::SortCondition;
use crate::error::Error;
use crate::token::Writer;

/// Bytes of a query fingerprint: the first 16 bytes (128 bits) of the description's SHA-256.
pub(crate) const FINGERPRINT_LEN: usize = 16;

/// Where a query reads: one logical partition key, or a time range over bucketed keys.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyShape<'a> {
    /// The logical partition key (`GAME#g1`).
    Logical(&'a str),
    /// The buckets of a range query: the logical key before and after the bucket label, the
    /// granularity (`day`) and the `from` and `to` bounds as the sort key encodes them.
    Buckets {
        before: &'a str,
        after: &'a str,
        granularity: &'a str,
        from: &'a str,
        to: &'a str,
    },
}

/// Everything that shapes a query's answer: what its cursors are bound to.
///
/// Left out on purpose: the page size, the limit and the per-shard `Limit` (they decide where
/// a page stops, not what the listing holds), and strongly consistent reads (they change how
/// fresh each read is, not which items the query selects; a listing may continue with either).
/// A shard count is not here either: it is in the cursor's own bytes, checked against the
/// query ([`CursorError::ShardCount`](crate::cursor::CursorError::ShardCount)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryShape<'a> {
    /// The entity or collection queried.
    pub entity: &'a str,
    /// The index (`""` for the base table).
    pub index: &'a str,
    pub key: KeyShape<'a>,
    /// The sort-key condition the requests carry (the implicit `begins_with` of the sort
    /// key's literal prefix included).
    pub sort: Option<&'a SortCondition>,
    /// The caller's filter.
    pub filter: Option<&'a Condition<()>>,
    /// The projected attributes, as the projection declares them.
    pub projection: Option<&'a [&'a str]>,
    pub descending: bool,
    /// The `ttl` attribute expired items are hidden by; `None` when every item is returned
    /// (`include_expired`, or no `ttl` field).
    pub expiry: Option<&'a str>,
    /// The layout transition read (`""` for a steady layout).
    pub layout: &'a str,
}

impl QueryShape<'_> {
    /// The canonical bytes of this shape. Fails only when the filter holds a value that
    /// cannot be stored, which fails the query anyway ([`Error::InvalidQuery`]).
    pub fn describe(&self) -> Result<Description, Error> {
        let mut out = Writer::default();
        match self.key {
            KeyShape::Logical(_) => out.str("query"),
            KeyShape::Buckets { .. } => out.str("range"),
        }
        out.str(self.entity);
        out.str(self.index);
        match self.key {
            KeyShape::Logical(logical) => out.str(logical),
            KeyShape::Buckets {
                before,
                after,
                granularity,
                from,
                to,
            } => {
                for part in [before, after, granularity, from, to] {
                    out.str(part);
                }
            }
        }
        match self.sort {
            None => out.u8(0),
            Some(condition) => {
                out.u8(1);
                out.str(condition.expression());
                let values = condition.values();
                out.u32(values.len() as u32);
                for value in values {
                    out.str(value);
                }
            }
        }
        match self.filter {
            None => out.u8(0),
            Some(filter) => {
                out.u8(1);
                write_filter(&mut out, filter)?;
            }
        }
        match self.projection {
            None => out.u8(0),
            Some(attributes) => {
                out.u8(1);
                out.u32(attributes.len() as u32);
                for attribute in attributes {
                    out.str(attribute);
                }
            }
        }
        out.str(if self.descending { "desc" } else { "asc" });
        match self.expiry {
            None => out.u8(0),
            Some(attribute) => {
                out.u8(1);
                out.str(attribute);
            }
        }
        out.str(self.layout);
        Ok(Description::new(out.into_bytes()))
    }

    /// The same shape read under another layout (how a cursor of another layout is told).
    pub fn with_layout<'b>(&self, layout: &'b str) -> QueryShape<'b>
    where
        Self: 'b,
    {
        QueryShape { layout, ..*self }
    }
}

/// The filter as DynamoDB is sent it, rendered alone: its expression with placeholders
/// numbered from 0 in order of first use (so the same filter always renders the same way),
/// then its names and its values, each in placeholder order.
fn write_filter(out: &mut Writer, filter: &Condition<()>) -> Result<(), Error> {
    let (mut names, mut values) = (Names::new(), Values::new());
    let expression = filter.render(&mut names, &mut values)?;
    out.str(&expression);
    let mut names: Vec<(String, String)> = names.into_iter().collect();
    names.sort_by(|a, b| placeholder_order(&a.0, &b.0));
    out.u32(names.len() as u32);
    for (placeholder, attribute) in &names {
        out.str(placeholder);
        out.str(attribute);
    }
    let mut values: Vec<(String, AttributeValue)> = values.into_iter().collect();
    values.sort_by(|a, b| placeholder_order(&a.0, &b.0));
    out.u32(values.len() as u32);
    for (placeholder, value) in &values {
        out.str(placeholder);
        write_value(out, value);
    }
    Ok(())
}

/// `#c2` before `#c10`: shorter first, then by bytes.
fn placeholder_order(a: &str, b: &str) -> std::cmp::Ordering {
    (a.len(), a).cmp(&(b.len(), b))
}

/// A value, tagged with its type. Sets are written sorted (a set has no order, and one
/// serialised from a `HashSet` comes out in any order); a map's entries sorted by name.
fn write_value(out: &mut Writer, value: &AttributeValue) {
    match value {
        // S, N and B as every token spells a key value (0, 1, 2).
        AttributeValue::S(_) | AttributeValue::N(_) | AttributeValue::B(_) => {
            out.scalar(value);
        }
        AttributeValue::Bool(b) => {
            out.u8(3);
            out.u8(u8::from(*b));
        }
        AttributeValue::Null(_) => out.u8(4),
        AttributeValue::L(list) => {
            out.u8(5);
            out.u32(list.len() as u32);
            for item in list {
                write_value(out, item);
            }
        }
        AttributeValue::M(map) => {
            out.u8(6);
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.u32(entries.len() as u32);
            for (name, item) in entries {
                out.str(name);
                write_value(out, item);
            }
        }
        AttributeValue::Ss(set) => write_set(out, 7, set.iter().map(|s| s.as_bytes())),
        AttributeValue::Ns(set) => write_set(out, 8, set.iter().map(|s| s.as_bytes())),
        AttributeValue::Bs(set) => write_set(out, 9, set.iter().map(|b| b.as_ref())),
        // A type this SDK version does not know: never built by a typed condition.
        _ => out.u8(255),
    }
}

fn write_set<'a>(out: &mut Writer, tag: u8, members: impl Iterator<Item = &'a [u8]>) {
    let mut members: Vec<&[u8]> = members.collect();
    members.sort_unstable();
    out.u8(tag);
    out.u32(members.len() as u32);
    for member in members {
        out.bytes(member);
    }
}

/// A query's canonical description and its fingerprint: a sealed cursor's HMAC covers the
/// description itself, a plain cursor carries the fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Description {
    bytes: Vec<u8>,
    fingerprint: [u8; FINGERPRINT_LEN],
}

impl Description {
    fn new(bytes: Vec<u8>) -> Self {
        let digest = Sha256::digest(&bytes);
        let mut fingerprint = [0; FINGERPRINT_LEN];
        fingerprint.copy_from_slice(&digest[..FINGERPRINT_LEN]);
        Description { bytes, fingerprint }
    }

    /// The canonical bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The first 16 bytes of the description's SHA-256.
    pub fn fingerprint(&self) -> &[u8; FINGERPRINT_LEN] {
        &self.fingerprint
    }

    /// A description of arbitrary bytes, for the codec's tests.
    #[cfg(test)]
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Description::new(bytes.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::condition::Field;

    struct Note;
    const NOTE: Field<Note, String> = Field::new("note");
    const SCORE: Field<Note, u64> = Field::new("score");

    fn shape<'a>(filter: Option<&'a Condition<()>>) -> QueryShape<'a> {
        QueryShape {
            entity: "Note",
            index: "",
            key: KeyShape::Logical("BOARD#b1"),
            sort: None,
            filter,
            projection: None,
            descending: false,
            expiry: None,
            layout: "",
        }
    }

    fn describe(filter: Option<Condition<Note>>) -> Description {
        let filter = filter.map(Condition::erase);
        shape(filter.as_ref()).describe().unwrap()
    }

    #[test]
    fn two_different_filters_differ() {
        let a = describe(Some(NOTE.eq("a")));
        let b = describe(Some(NOTE.eq("b")));
        let none = describe(None);
        assert_ne!(a, b, "another value");
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_ne!(a, none, "no filter");
        assert_ne!(describe(Some(NOTE.ne("a"))), a, "another operator");
        assert_ne!(
            describe(Some(SCORE.eq(1))),
            describe(Some(Field::<Note, String>::new("score").eq("1"))),
            "another value type"
        );
        assert_ne!(
            describe(Some(NOTE.eq("a").and(SCORE.gt(1)))),
            describe(Some(SCORE.gt(1).and(NOTE.eq("a")))),
            "another expression (and values in another order)"
        );
    }

    #[test]
    fn the_same_filter_built_twice_is_described_the_same() {
        let build = || {
            NOTE.eq("a")
                .or(SCORE.between(1, 5))
                .and(NOTE.begins_with("x"))
        };
        let first = describe(Some(build()));
        // Placeholders are numbered as they are rendered, never in a map's (random) order.
        for _ in 0..16 {
            assert_eq!(describe(Some(build())), first);
        }
    }

    #[test]
    fn sets_and_maps_are_described_in_a_canonical_order() {
        let value = |v: AttributeValue| {
            let mut out = Writer::default();
            write_value(&mut out, &v);
            out.into_bytes()
        };
        let ss = |m: &[&str]| AttributeValue::Ss(m.iter().map(|s| s.to_string()).collect());
        assert_eq!(value(ss(&["b", "a", "c"])), value(ss(&["c", "a", "b"])));
        assert_ne!(value(ss(&["a", "b"])), value(ss(&["a", "c"])));
        let map = |entries: &[(&str, &str)]| {
            AttributeValue::M(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), AttributeValue::S(v.to_string())))
                    .collect(),
            )
        };
        let many: Vec<(String, String)> = (0..32)
            .map(|i| (format!("k{i}"), format!("v{i}")))
            .collect();
        let forward: Vec<(&str, &str)> =
            many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let backward: Vec<(&str, &str)> = forward.iter().rev().copied().collect();
        assert_eq!(value(map(&forward)), value(map(&backward)));
        // A list keeps its order: DynamoDB compares lists element by element.
        let list = |m: &[&str]| {
            AttributeValue::L(m.iter().map(|s| AttributeValue::S(s.to_string())).collect())
        };
        assert_ne!(value(list(&["a", "b"])), value(list(&["b", "a"])));
    }

    #[test]
    fn every_part_of_the_shape_changes_the_description() {
        let filter = NOTE.eq("a").erase();
        let sort = SortCondition::BeginsWith("N#".into());
        let base = QueryShape {
            sort: Some(&sort),
            filter: Some(&filter),
            projection: Some(&["note"]),
            expiry: Some("expires"),
            ..shape(None)
        };
        let other_sort = SortCondition::BeginsWith("N$".into());
        let projection: &[&str] = &["note", "score"];
        let variants = [
            QueryShape {
                entity: "Other",
                ..base
            },
            QueryShape {
                index: "gsi1",
                ..base
            },
            QueryShape {
                key: KeyShape::Logical("BOARD#b2"),
                ..base
            },
            QueryShape { sort: None, ..base },
            QueryShape {
                sort: Some(&other_sort),
                ..base
            },
            QueryShape {
                filter: None,
                ..base
            },
            QueryShape {
                projection: None,
                ..base
            },
            QueryShape {
                projection: Some(projection),
                ..base
            },
            QueryShape {
                descending: true,
                ..base
            },
            QueryShape {
                expiry: None,
                ..base
            },
            base.with_layout("B#<shard 0..4>, previously #<shard 0..2>"),
            QueryShape {
                key: KeyShape::Buckets {
                    before: "BOARD#b1",
                    after: "",
                    granularity: "day",
                    from: "1",
                    to: "2",
                },
                ..base
            },
        ];
        let base = base.describe().unwrap();
        for (i, variant) in variants.iter().enumerate() {
            let variant = variant.describe().unwrap();
            assert_ne!(variant, base, "variant {i}");
            assert_ne!(variant.fingerprint(), base.fingerprint(), "variant {i}");
        }
    }

    /// The bytes of the `Cursor` docs ("The query description"), byte by byte, and the
    /// fingerprint computed independently (Python: `hashlib.sha256(body).digest()[:16]`).
    #[test]
    fn description_layout_is_pinned() {
        let filter = NOTE.eq("a").erase();
        let sort = SortCondition::BeginsWith("N#".into());
        let d = QueryShape {
            sort: Some(&sort),
            filter: Some(&filter),
            projection: Some(&["note"]),
            expiry: Some("exp"),
            ..shape(None)
        }
        .describe()
        .unwrap();
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0, 0, 0, 5, b'q', b'u', b'e', b'r', b'y',           // kind
            0, 0, 0, 4, b'N', b'o', b't', b'e',                 // entity
            0, 0, 0, 0,                                         // index: base table
            0, 0, 0, 8, b'B', b'O', b'A', b'R', b'D', b'#', b'b', b'1', // logical key
            1,                                                  // sort condition follows
            0, 0, 0, 22, b'b', b'e', b'g', b'i', b'n', b's', b'_', b'w', b'i', b't', b'h',
                b'(', b'#', b's', b'k', b',', b' ', b':', b's', b'k', b'0', b')',
            0, 0, 0, 1,                                         //   1 value
            0, 0, 0, 2, b'N', b'#',
            1,                                                  // filter follows
            0, 0, 0, 9, b'#', b'c', b'0', b' ', b'=', b' ', b':', b'c', b'0',
            0, 0, 0, 1,                                         //   1 name
            0, 0, 0, 3, b'#', b'c', b'0', 0, 0, 0, 4, b'n', b'o', b't', b'e',
            0, 0, 0, 1,                                         //   1 value
            0, 0, 0, 3, b':', b'c', b'0', 0, 0, 0, 0, 1, b'a',  //   :c0 = S "a"
            1,                                                  // projection follows
            0, 0, 0, 1, 0, 0, 0, 4, b'n', b'o', b't', b'e',
            0, 0, 0, 3, b'a', b's', b'c',                       // order
            1, 0, 0, 0, 3, b'e', b'x', b'p',                    // expired items hidden by `exp`
            0, 0, 0, 0,                                         // steady layout
        ];
        assert_eq!(d.bytes(), expected);
        assert_eq!(
            d.fingerprint(),
            &[
                0x21, 0x78, 0x51, 0x41, 0x89, 0x56, 0x26, 0x02, 0x2c, 0x4f, 0xbf, 0x4b, 0x61, 0x4a,
                0x09, 0x76
            ]
        );
    }
}
