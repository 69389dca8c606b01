//! Model and validation tested directly with `parse_quote!` (as sqlx-macros-core does), so
//! the compiler's logic is checked without trybuild; trybuild covers what users see.

use syn::{parse_quote, DeriveInput};

use crate::ctxt::Ctxt;
use crate::model::Shard;
use crate::{parse, validate};

/// The messages the derive reports for `input`, in order.
fn errors(input: DeriveInput) -> Vec<String> {
    let cx = Ctxt::new();
    if let Some(entity) = parse::entity(&cx, &input) {
        validate::entity(&cx, &entity);
    }
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

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
    assert_eq!(
        entity.generated_attributes(),
        ["_entity", "pk", "sk", "gsi1pk", "gsi1sk"]
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
        struct S { game_id: String }
    });
    assert!(missing[0].contains("no shard count"), "{missing:?}");
    let zero = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "random", n = 0)]
        struct S { game_id: String }
    });
    assert!(zero[0].contains("0 shards"), "{zero:?}");
    let big = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "random", n = 5000)]
        struct S { game_id: String }
    });
    assert!(big[0].contains("above the maximum of 1000"), "{big:?}");
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
        #[gsi1(pk = "ELECTION#2024")]
        struct Vote { candidate: String }
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

#[test]
fn serde_renames_that_clash_with_key_attributes_are_refused() {
    let errs = errors(parse_quote! {
        #[pk(template = "U#{id}")]
        struct U { id: String, #[serde(rename = "sk")] other: String }
    });
    assert!(errs.is_empty(), "no sk attribute without #[sk]: {errs:?}");
    let errs = errors(parse_quote! {
        #[serde(rename_all = "UPPERCASE")]
        #[pk(template = "U#{id}")]
        #[sk(template = "X")]
        struct U { id: String, _entity: String, #[serde(rename = "sk")] other: String }
    });
    assert_eq!(
        errs.len(),
        1,
        "_entity becomes _ENTITY under UPPERCASE: {errs:?}"
    );
    assert!(errs[0].contains("`sk`"), "{errs:?}");
}

#[test]
fn serde_names_follow_serde_derive() {
    // camelCase is PascalCase with the first character lowered: `_pk` is stored as `pk`.
    let errs = errors(parse_quote! {
        #[serde(rename_all = "camelCase")]
        #[pk(template = "O#{order_id}")]
        struct O { order_id: String, _pk: String, gsi1_pk: String }
    });
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].contains("rename_all = \"camelCase\""), "{errs:?}");
    assert!(errs[0].contains("the partition key"), "{errs:?}");
    // rename(serialize = ..) names the attribute; flatten and skip write none of their own.
    let errs = errors(parse_quote! {
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
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].contains("the sort key"), "{errs:?}");
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
