//! The names `#[derive(ShardedEntity)]` builds from field and query names, for the names
//! Rust allows but snake_case joining does not expect: a trailing or leading underscore
//! (`u8_`, `_tenant`), a raw identifier (`r#type`, `r#match`), digits (`v2`), one letter
//! (`x`), a non-ASCII letter (`größe`), a field not in snake case that its struct allows
//! (`userID`), a query name ending in `_`, counter names with edge or doubled underscores.
//! Every generated name is used, and the crate denies
//! warnings: a generated name that rustc finds not snake case fails this build.
//!
//! The rule (the derive's docs, "Generated names"): each part without `r#` and without
//! leading or trailing underscores, joined by one `_`.
#![deny(warnings)]

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sharded::query::SortKeyCondition;
use sharded::{Repo, ShardedEntity};

/// Unusual names on every key template: the partition key, the sort key (conditions and
/// prefixes), a string-keyed GSI's partition and sort keys, an attribute-keyed GSI.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "T#{r#type}#{_tenant}", shard = "hash(u8_)", n = 4)]
#[sk(template = "S#{u8_}#{r#match}#{v2}#{x}")]
#[gsi1(pk = "G#{größe}#{userID}", sk = "{_tenant}#{id__}#END", shard = 3)]
#[gsi2(pk = [r#type], sk = [u8_, v2], shard = 2)]
#[allow(non_snake_case)] // for `userID`, the user's choice; what is generated needs none
struct Odd {
    r#type: String,
    _tenant: String,
    u8_: u8,
    r#match: String,
    v2: u32,
    x: String,
    größe: u16,
    userID: String,
    id__: String,
}

/// A time-bucketed key whose query is named with a trailing underscore, and a GSI sort key on
/// a raw identifier that ends the template.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "LOG#{at_:day}",
    shard = "hash(r#ref)",
    n = 2,
    query = "by_day_"
)]
#[sk(template = "{at_}#{r#ref}")]
#[gsi1(pk = "REF#{r#ref}", sk = "{r#loop}", shard = 2)]
#[counter(name = "views_", n = 2)]
#[counter(name = "_read__later", n = 2)]
// Clippy reads a second `#[counter(..)]` as the first repeated (its duplicated_attributes
// lint on a derive's helper attribute): two counters are two attributes by design.
#[allow(clippy::duplicated_attributes)]
struct Log {
    at_: DateTime<Utc>,
    r#ref: String,
    r#loop: u64,
}

fn odd() -> Odd {
    Odd {
        r#type: "t".into(),
        _tenant: "acme".into(),
        u8_: 7,
        r#match: "m".into(),
        v2: 2,
        x: "x".into(),
        größe: 40,
        userID: "u1".into(),
        id__: "i1".into(),
    }
}

fn values(c: impl Into<SortKeyCondition>) -> Vec<String> {
    c.into()
        .values()
        .unwrap()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

#[test]
fn sort_key_functions_of_unusual_fields_are_named_by_the_rule() {
    let sk = Odd::sk(7, "m", 2, "x").unwrap();
    // `u8_` -> `sk_u8_*`, `sk_prefix_u8`.
    let u8_prefix = Odd::sk_prefix_u8(7).unwrap();
    assert!(sk.starts_with(&u8_prefix), "{sk} {u8_prefix}");
    assert_eq!(values(Odd::sk_sort().eq(7)), [u8_prefix]);
    for c in [
        Odd::sk_sort().lt(7),
        Odd::sk_sort().le(7),
        Odd::sk_sort().gt(7),
        Odd::sk_sort().ge(7),
        Odd::sk_sort().between(1, 9),
    ] {
        assert!(c.expression().is_ok());
    }
    // `r#match` -> `sk_match_*`, `sk_prefix_match`.
    let match_prefix = Odd::sk_prefix_match(7, "m").unwrap();
    assert!(sk.starts_with(&match_prefix));
    assert_eq!(values(Odd::sk_sort().eq(7).eq("m")), [match_prefix]);
    for c in [
        Odd::sk_sort().eq(7).lt("m"),
        Odd::sk_sort().eq(7).le("m"),
        Odd::sk_sort().eq(7).gt("m"),
        Odd::sk_sort().eq(7).ge("m"),
        Odd::sk_sort().eq(7).between("a", "z"),
    ] {
        assert!(c.expression().is_ok());
    }
    // `v2` -> `sk_v2_*`, `sk_prefix_v2`; `x` (ends the template) -> `sk_x_*`, no `_lt`.
    assert!(sk.starts_with(&Odd::sk_prefix_v2(7, "m", 2).unwrap()));
    for c in [
        Odd::sk_sort().eq(7).eq("m").eq(2).into(),
        Odd::sk_sort().eq(7).eq("m").lt(2),
        Odd::sk_sort().eq(7).eq("m").le(2),
        Odd::sk_sort().eq(7).eq("m").gt(2),
        Odd::sk_sort().eq(7).eq("m").ge(2),
        Odd::sk_sort().eq(7).eq("m").between(1, 3),
        Odd::sk_sort().eq(7).eq("m").eq(2).eq("x").into(),
        Odd::sk_sort().eq(7).eq("m").eq(2).le("x"),
        Odd::sk_sort().eq(7).eq("m").eq(2).gt("x"),
        Odd::sk_sort().eq(7).eq("m").eq(2).ge("x"),
        Odd::sk_sort().eq(7).eq("m").eq(2).between("a", "z"),
    ] {
        assert!(c.expression().is_ok());
    }
    assert_eq!(
        values(Odd::sk_sort().eq(7).eq("m").eq(2).eq("x")),
        [sk.clone(), sk]
    );
}

#[test]
fn partition_and_gsi_functions_take_unusual_fields() {
    let item = odd();
    let pk = Odd::pk("t", "acme", 7).unwrap();
    assert_eq!(
        pk,
        format!("T#t#acme#{}", Odd::shard_for(7).unwrap()),
        "{pk}"
    );
    assert_eq!(Odd::parse_pk(&pk).unwrap().0, "t");
    // gsi1: `größe` and `userID` in the partition key; `_tenant`, `id__` in the sort key.
    assert_eq!(
        Odd::gsi1_pk_on_shard(40, "u1", 0).unwrap(),
        format!(
            "G#{}#u1#0",
            Odd::gsi1_pk_logical(40, "u1").unwrap()["G#".len()..]
                .split('#')
                .next()
                .unwrap()
        )
    );
    let gsi1_sk = Odd::gsi1_sk("acme", "i1").unwrap();
    assert_eq!(gsi1_sk, "acme#i1#END");
    assert_eq!(
        values(Odd::gsi1_sort().eq("acme")),
        [Odd::gsi1_sk_prefix_tenant("acme").unwrap()]
    );
    assert_eq!(
        values(Odd::gsi1_sort().eq("acme").eq("i1")),
        [Odd::gsi1_sk_prefix_id("acme", "i1").unwrap()]
    );
    for c in [
        Odd::gsi1_sort().lt("b"),
        Odd::gsi1_sort().le("b"),
        Odd::gsi1_sort().gt("b"),
        Odd::gsi1_sort().ge("b"),
        Odd::gsi1_sort().between("a", "b"),
        Odd::gsi1_sort().eq("acme").lt("i"),
        Odd::gsi1_sort().eq("acme").le("i"),
        Odd::gsi1_sort().eq("acme").gt("i"),
        Odd::gsi1_sort().eq("acme").ge("i"),
        Odd::gsi1_sort().eq("acme").between("a", "b"),
    ] {
        assert_eq!(c.attribute(), "gsi1sk");
    }
    let keys = item.item_keys().unwrap();
    assert_eq!(keys.pk, pk);
    assert_eq!(Odd::from_item(item.to_item().unwrap()).unwrap(), item);
    // The typed fields keep the names as written.
    let fields = Odd::fields();
    let _ = (
        fields.r#type,
        fields._tenant,
        fields.u8_,
        fields.userID,
        fields.größe,
    );
    let _ = Odd::gsi2_sort().eq(7u8);
}

#[test]
fn raw_and_trailing_underscore_names_on_a_bucketed_key() {
    let at: DateTime<Utc> = "2026-06-22T01:00:00Z".parse().unwrap();
    let sk = Log::sk(&at, "r1").unwrap();
    assert!(sk.starts_with(&Log::sk_prefix_at(&at).unwrap()));
    assert_eq!(values(Log::sk_sort().eq(at).eq("r1")), [sk.clone(), sk]);
    let _ = Log::sk_sort().between(at, at);
    assert_eq!(Log::gsi1_sk(5).unwrap(), Log::gsi1_sk(5).unwrap());
    let _ = Log::gsi1_sort().lt(5);
    let _ = Log::gsi1_sort().between(1, 9);
    assert_eq!(Log::gsi1_pk_on_shard("r1", 1).unwrap(), "REF#r1#1");
}

/// The query functions, by their names (`by_day_` -> `by_day_range`, `query_gsi2`); built,
/// never run (no database here).
#[allow(dead_code)]
fn queries(repo: &Repo<Odd>, logs: &Repo<Log>, at: &DateTime<Utc>) {
    let _ = Odd::query(repo, "t", "acme").sk(Odd::sk_sort().eq(7));
    let _ = Odd::query_gsi1(repo, 40, "u1").sk(Odd::gsi1_sort().eq("acme"));
    let _ = Odd::query_gsi2(repo, "t").sk(Odd::gsi2_sort().eq(7u8).between(1, 3));
    let _ = Log::by_day_(logs, at);
    let _ = Log::by_day_range(logs, at, at);
    let _ = Log::query_gsi1(logs, "r1").sk(Log::gsi1_sort().ge(3));
    // Counter names are strings: runs of `_` as one, edge underscores dropped.
    let _ = Log::views_counter(logs, at, "r1");
    let _ = Log::read_later_counter(logs, at, "r1");
}
