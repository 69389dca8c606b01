//! The model and its validation: what is accepted, modelled, and refused with which message.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{parse_quote, DeriveInput};

use super::{errors, generated};
use crate::entity::model::{KeyAttr, Shard};
use crate::entity::{parse, validate};
use crate::internals::ctxt::Ctxt;

#[test]
fn the_issue_example_is_accepted_and_modelled() {
    let input: DeriveInput = parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
        struct Score { game_id: String, player_id: String, score: u64, at: String }
    };
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).expect("parsed");
    validate::entity(&cx, &entity);
    cx.check().expect("no errors");
    let pk = entity.pk.as_ref().unwrap();
    assert!(matches!(&pk.shard.value, Shard::Hash(f) if f.len() == 1 && f[0] == "player_id"));
    assert_eq!(pk.n.as_ref().unwrap().value, 10);
    assert_eq!(entity.gsis.len(), 1);
    assert!(matches!(entity.gsis[0].pk.shard.value, Shard::Identity));
    assert_eq!(entity.gsis[0].pk.n.as_ref().unwrap().value, 4);
    // The key attributes are the table's: named by role, resolved by generated code.
    assert_eq!(pk.attribute, KeyAttr::Pk);
    assert_eq!(entity.sk.as_ref().unwrap().attribute, KeyAttr::Sk);
    assert_eq!(entity.gsis[0].pk.attribute, KeyAttr::GsiPk(1));
    assert_eq!(
        entity.gsis[0].sk.as_ref().unwrap().attribute,
        KeyAttr::GsiSk(1)
    );
}

#[test]
fn errors_accumulate_across_attributes() {
    let errs = errors(parse_quote! {
        #[pk(template = "GAME#{gme_id}", shard = "hsh(player_id)", n = 10)]
        #[sk(template = "SCORE#{scor}")]
        struct Score { game_id: String, player_id: String, score: u64 }
    });
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert!(errs[0].contains("did you mean `hash`"), "{}", errs[0]);
    assert!(
        errs.iter().any(|e| e.contains("did you mean `game_id`")),
        "{errs:#?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("did you mean `score`")),
        "{errs:#?}"
    );
}

#[test]
fn shard_counts_are_checked() {
    let missing = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "random")]
        #[sk(template = "{id}")]
        struct S { game_id: String, id: String }
    });
    assert!(missing[0].contains("no shard count"), "{missing:?}");
    let zero = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "random", n = 0)]
        #[sk(template = "{id}")]
        struct S { game_id: String, id: String }
    });
    assert!(zero[0].contains("0 shards"), "{zero:?}");
    // The maximum is the runtime's: the expansion asks the compiler to check it there.
    let big: DeriveInput = parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "random", n = 5000)]
        #[sk(template = "{id}")]
        struct S { game_id: String, id: String }
    };
    assert!(errors(big.clone()).is_empty());
    let out = crate::entity::derive(&big).to_string().replace(' ', "");
    assert!(out.contains("assert_shard_count(5000u32)"), "{out}");
}

#[test]
fn hot_keys_are_refused_unless_explained() {
    let hot = errors(parse_quote! {
        #[pk(template = "OPS_LOG")]
        #[sk(template = "{at}")]
        struct Log { at: String }
    });
    assert!(hot[0].contains("no field and no shard"), "{hot:?}");
    let explained = errors(parse_quote! {
        #[pk(template = "BRAND_INDEX", single_partition = "brand registrations: < 100/day")]
        #[sk(template = "{brand}")]
        struct Brand { brand: String }
    });
    assert!(explained.is_empty(), "{explained:?}");
    let gsi = errors(parse_quote! {
        #[pk(template = "CANDIDATE#{candidate}", shard = "random", n = 10)]
        #[sk(template = "VOTER#{voter}")]
        #[gsi1(pk = "ELECTION#2024")]
        struct Vote { candidate: String, voter: String }
    });
    assert!(gsi[0].contains("undoes the base key's sharding"), "{gsi:?}");
    let same_fields = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
        #[gsi1(pk = "G#{game_id}")]
        struct Score { game_id: String, player_id: String }
    });
    assert!(same_fields[0].contains("GSI hotspot"), "{same_fields:?}");
}

#[test]
fn templates_must_parse_back() {
    for (template, needle) in [
        ("A#{a}{b}", "need a `#` between them"),
        ("A#{a", "unclosed"),
        ("A#}", "unmatched"),
        ("A#{}", "empty `{}`"),
        ("{a}-{b}", "must be followed by `#`"),
        ("{a}#{a}", "appears twice"),
        ("", "must not be empty"),
    ] {
        let input: DeriveInput = syn::parse_str(&format!(
            "#[pk(template = {template:?}, shard = \"random\", n = 2)] struct S {{ a: String, b: String }}"
        ))
        .unwrap();
        let errs = errors(input);
        assert!(
            errs.iter().any(|e| e.contains(needle)),
            "{template}: {errs:?}"
        );
    }
}

/// The stored names of a struct's fields, as the expansion checks them against the table's
/// names at compile time: `(field, attribute, how the name came about)` for each
/// `assert_not_written_by_sharded` it emits.
fn checked_attributes(input: TokenStream) -> Vec<(String, String, String)> {
    let out = generated(input);
    out.split("assert_not_written_by_sharded(__TABLE,")
        .skip(1)
        .map(|call| {
            // After the key list (the shared `__WRITTEN`): `"field","attribute","how","fix")`.
            let after_keys = call.split_once("__WRITTEN,").map_or(call, |(_, rest)| rest);
            let strings: Vec<String> = after_keys
                .split('"')
                .skip(1)
                .step_by(2)
                .take(3)
                .map(str::to_owned)
                .collect();
            (strings[0].clone(), strings[1].clone(), strings[2].clone())
        })
        .collect()
}

#[test]
fn every_stored_field_is_checked_against_the_tables_names_under_its_serde_name() {
    // The table's names are known only to generated code (a `#[derive(ShardedTable)]` type
    // may rename them): each stored field is checked at compile time, with its serde name.
    let checked = checked_attributes(quote! {
        #[serde(rename_all = "UPPERCASE")]
        #[pk(template = "U#{id}")]
        #[sk(template = "X")]
        struct U { id: String, _entity: String, #[serde(rename = "sk")] other: String }
    });
    let names: Vec<(&str, &str)> = checked
        .iter()
        .map(|(f, a, _)| (f.as_str(), a.as_str()))
        .collect();
    assert_eq!(
        names,
        [("id", "ID"), ("_entity", "_ENTITY"), ("other", "sk")]
    );
    assert!(checked[2].2.contains("rename"), "{checked:?}");
}

#[test]
fn serde_names_follow_serde_derive() {
    // camelCase is PascalCase with the first character lowered: `_pk` is stored as `pk`.
    let checked = checked_attributes(quote! {
        #[serde(rename_all = "camelCase")]
        #[pk(template = "O#{order_id}")]
        struct O { order_id: String, _pk: String, gsi1_pk: String }
    });
    let pk = checked
        .iter()
        .find(|(f, _, _)| f == "_pk")
        .expect("checked");
    assert_eq!(pk.1, "pk");
    assert!(pk.2.contains("rename_all"), "{checked:?}");
    // rename(serialize = ..) names the attribute; flatten and skip write none of their own.
    let checked = checked_attributes(quote! {
        #[serde(rename_all(serialize = "UPPERCASE"))]
        #[pk(template = "O#{order_id}")]
        #[sk(template = "X")]
        struct O {
            order_id: String,
            #[serde(rename(serialize = "sk", deserialize = "other"))] a: String,
            #[serde(flatten)] pk: Extra,
            #[serde(skip)] _entity: String,
        }
    });
    let names: Vec<(&str, &str)> = checked
        .iter()
        .map(|(f, a, _)| (f.as_str(), a.as_str()))
        .collect();
    assert_eq!(names, [("order_id", "ORDER_ID"), ("a", "sk")]);
}

#[test]
fn generic_structs_are_refused_without_an_entity() {
    let input: DeriveInput = parse_quote! {
        #[pk(template = "D#{id}")]
        struct D<T> { id: String, body: T }
    };
    let cx = Ctxt::new();
    assert!(parse::entity(&cx, &input).is_none());
    let errs: Vec<String> = cx
        .check()
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].contains("generic"), "{errs:?}");
}

#[test]
fn confusable_keys_and_shard_expressions_are_explained() {
    for (input, needle) in [
        (
            quote::quote! {
                #[pk(template = "A#{a}")]
                #[gsi1(template = "B#{b}", shard = 4)]
                struct S { a: String, b: String }
            },
            "a GSI names its key templates `pk",
        ),
        (
            quote::quote! {
                #[pk(pk = "A#{a}")]
                struct S { a: String }
            },
            "the template of #[pk(...)] is `template",
        ),
        (
            quote::quote! {
                #[pk(template = "A#{a}", shard = "hash()", n = 2)]
                struct S { a: String, b: String }
            },
            "`hash()` needs the fields",
        ),
        (
            quote::quote! {
                #[pk(template = "A#{a}", shard = "hash(b, b)", n = 2)]
                struct S { a: String, b: String }
            },
            "appears twice",
        ),
        (
            quote::quote! {
                #[pk(template = "A#{a}", shard = "hash(b)", n = 2)]
                #[gsi1(pk = "B#{b}", shard = 4, single_partition = "small")]
                struct S { a: String, b: String }
            },
            "but #[gsi1] is sharded",
        ),
    ] {
        let errs = errors(syn::parse2(input).unwrap());
        assert!(
            errs.iter().any(|e| e.contains(needle)),
            "{needle}: {errs:#?}"
        );
    }
}
