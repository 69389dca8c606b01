//! Resolution, the fallback surface, and spelling-independent signatures.

use proc_macro2::{Delimiter, Group, TokenStream};
use quote::quote;
use syn::{parse_quote, DeriveInput};

use super::{errors, generated};
use crate::entity::resolve::{resolve, KeyField, RSegment, RShard};
use crate::entity::{parse, validate};
use crate::internals::ctxt::Ctxt;
use crate::internals::types::{param_kind, Param};

fn is_field(field: KeyField, name: &str) -> bool {
    matches!(field, KeyField::Field(f) if f.ident == name)
}

#[test]
fn key_fields_resolve_to_the_struct_fields_themselves() {
    let input: DeriveInput = parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct Score { game_id: String, player_id: String, score: u64 }
    };
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).unwrap();
    validate::entity(&cx, &entity);
    cx.check().unwrap();
    let r = resolve(&entity);
    let pk = r.pk.as_ref().unwrap();
    assert!(
        matches!(&pk.template.segments[1], RSegment::Field(KeyField::Field(game))
            if std::ptr::eq(*game, &entity.fields[0])),
        "the template's field segment resolves to the field"
    );
    assert!(
        matches!(&pk.shard, RShard::Hash(hashed)
            if matches!(hashed[0], KeyField::Field(f) if std::ptr::eq(f, &entity.fields[1]))),
        "hash sharding over the field"
    );
    // The physical key and the point lookup take each field once.
    let names: Vec<String> = r
        .key_fields()
        .iter()
        .map(|f| f.ident().to_string())
        .collect();
    assert_eq!(names, ["game_id", "player_id", "score"]);
}

#[test]
fn refused_names_resolve_to_what_was_meant() {
    let input: DeriveInput = parse_quote! {
        #[pk(template = "GAME#{gme_id}", shard = "hsh(player_id)", n = 10)]
        #[sk(template = "SCORE#{score}#{zzz}")]
        struct Score { game_id: String, player_id: String, score: u64 }
    };
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).unwrap();
    validate::entity(&cx, &entity);
    assert!(cx.check().is_err());
    let r = resolve(&entity);
    let pk = r.pk.as_ref().unwrap();
    assert!(is_field(pk.template.fields().next().unwrap(), "game_id"));
    assert!(
        matches!(&pk.shard, RShard::Hash(hashed) if is_field(hashed[0], "player_id")),
        "`hsh(..)` resolves to the `hash(..)` it meant"
    );
    let sk: Vec<KeyField> = r.sk.as_ref().unwrap().template.fields().collect();
    assert!(is_field(sk[0], "score"));
    assert!(matches!(sk[1], KeyField::Unknown(name) if name == "zzz"));
}

#[test]
fn a_misspelled_key_is_one_error_and_is_read_as_the_key_it_meant() {
    let input: DeriveInput = parse_quote! {
        #[pk(templte = "GAME#{game_id}", shard = "hash(player_id)", nn = 10)]
        struct Score { game_id: String, player_id: String }
    };
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).unwrap();
    validate::entity(&cx, &entity);
    let errs: Vec<String> = cx
        .check()
        .unwrap_err()
        .into_iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].contains("did you mean `template`"), "{errs:?}");
    assert!(errs[1].contains("did you mean `n`"), "{errs:?}");
    let pk = entity.pk.as_ref().unwrap();
    assert_eq!(pk.template.lit.value(), "GAME#{game_id}");
    assert_eq!(pk.n.as_ref().unwrap().value, 10);
}

#[test]
fn a_refused_entity_still_gets_its_whole_surface() {
    let out = generated(quote! {
        #[pk(template = "GAME#{gme_id}", shard = "hash(player_id)", n = 10)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
        struct Score { game_id: String, player_id: String, score: u64 }
    });
    assert_eq!(out.matches("compile_error!").count(), 1, "{out}");
    for signature in [
        "fnpk(game_id:&str,player_id:&str)",
        "fnpk_logical(game_id:&str)",
        "fnpk_on_shard(game_id:&str,shard:u32)",
        "fnpk_all_shards(game_id:&str)",
        "fnshard_for(player_id:&str)",
        "fnparse_pk(key:&str)",
        "fnsk(score:u64,player_id:&str)",
        "fnsk_prefix()",
        "fnsk_prefix_score(score:u64)",
        "fnsk_sort()->::sharded::__private::TemplateSort<(u64,(String,()))>",
        "fngsi1_pk_on_shard(player_id:&str,shard:u32)",
        "fngsi1_sk(game_id:&str)",
        "fnquery(repo:&::sharded::__private::Repo<Self>,game_id:&str)",
        "asyncfnget(repo:&::sharded::__private::Repo<Self>,game_id:&str,player_id:&str,score:u64)",
        "asyncfndelete(",
        "fnquery_gsi1(",
        "implShardedEntityforScore",
        "FALLBACK_SCHEMA",
    ] {
        // Inside the expansion's `const` block the runtime path is the alias `__rt`.
        let found = out.contains(signature)
            || out.contains(&signature.replace("::sharded::__private::", ""))
            || out.contains(&signature.replace("::sharded::__private::", "__rt::"))
            || out.contains(&signature.replace(
                "implShardedEntityfor",
                "impl::sharded::__private::ShardedEntityfor",
            ))
            || out
                .contains(&signature.replace("implShardedEntityfor", "impl__rt::ShardedEntityfor"));
        assert!(found, "missing `{signature}` in {out}");
    }
    assert!(
        !out.contains("build_key"),
        "fallback bodies do not run: {out}"
    );
}

#[test]
fn an_unknown_name_takes_any_value_in_the_fallback() {
    let out = generated(quote! {
        #[pk(template = "A#{zzz}")]
        struct S { a: String }
    });
    assert!(out.contains("fnpk(zzz:impl::core::marker::Sized)"), "{out}");
    assert!(out.contains("fnparse_pk<__Unknown0>(key:&str)"), "{out}");
}

#[test]
fn crate_path_replaces_the_runtime_path() {
    let out = generated(quote! {
        #[sharded(crate = "my_facade::inner")]
        #[pk(template = "A#{a}")]
        struct S { a: String }
    });
    // The expansion names the runtime once, as the alias its `const` block uses.
    assert!(
        out.contains("usemy_facade::inner::__privateas__rt;"),
        "{out}"
    );
    assert!(out.contains("__rt::ShardedEntity"), "{out}");
    assert!(!out.contains("::sharded::"), "{out}");
    let errs = errors(parse_quote! {
        #[sharded(crate = "my facade")]
        #[pk(template = "A#{a}")]
        struct S { a: String }
    });
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("`crate` must be the path"), "{errs:?}");
}

#[test]
fn param_kinds_do_not_depend_on_spelling() {
    // A `$ty:ty` fragment of a `macro_rules!` arrives wrapped in an invisible group.
    let group = |ty: TokenStream| -> syn::Type {
        let grouped = Group::new(Delimiter::None, ty);
        syn::parse2(quote!(#grouped)).unwrap()
    };
    let grouped_u8 = group(quote!(u8));
    assert!(matches!(grouped_u8, syn::Type::Group(_)));
    for (ty, kind) in [
        (grouped_u8, Param::Copy),
        (group(quote!(String)), Param::Str),
        (parse_quote!((u64)), Param::Copy),
        (parse_quote!(std::string::String), Param::Str),
        (parse_quote!(alloc::string::String), Param::Str),
        (parse_quote!(::core::primitive::u64), Param::Copy),
        (parse_quote!(PlayerId), Param::Ref),
        (parse_quote!(chrono::DateTime<chrono::Utc>), Param::Ref),
    ] {
        assert_eq!(param_kind(&ty), kind, "{}", quote!(#ty));
    }
    // End to end: the derive input of a struct declared in a macro.
    let (u8_ty, string_ty) = (
        Group::new(Delimiter::None, quote!(u8)),
        Group::new(Delimiter::None, quote!(String)),
    );
    let out = generated(quote! {
        #[pk(template = "X#{name}")]
        #[sk(template = "V#{v}")]
        struct X { name: #string_ty, v: #u8_ty }
    });
    assert!(out.contains("fnsk(v:u8)"), "{out}");
    assert!(out.contains("fnpk(name:&str)"), "{out}");
}

#[test]
fn two_names_meaning_one_field_bind_it_once_in_the_fallback() {
    let out = generated(quote! {
        #[pk(template = "A#{gme_id}#B#{game_id}")]
        struct S { game_id: String }
    });
    assert!(out.contains("fnpk(game_id:&str,_:&str)"), "{out}");
}

#[test]
fn typed_sort_key_conditions_follow_the_template() {
    let out = generated(quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct Score { game_id: String, player_id: String, score: u64 }
    });
    // One function, typed by the template's fields in order; the steps are the runtime's.
    assert!(
        out.contains("fnsk_sort()->__rt::TemplateSort<(u64,(String,()))>"),
        "{out}"
    );
    assert!(!out.contains("fnsk_score_eq"), "{out}");

    // No fields: no conditions (documented, not refused).
    let out = generated(quote! {
        #[pk(template = "CANDIDATE#{candidate}")]
        #[sk(template = "VOTES")]
        struct VoteShard { candidate: String, votes: i64 }
    });
    assert!(!out.contains("SortKeyCondition"), "{out}");

    // A GSI's sort key has its own, named after the index.
    let out = generated(quote! {
        #[pk(template = "T#{t}")]
        #[sk(template = "{low}#{x}")]
        #[gsi1(pk = "X#{x}", sk = "T#{t}")]
        struct Band { t: String, low: u32, x: u32 }
    });
    assert!(
        out.contains("fngsi1_sort()->__rt::TemplateSort<(String,())>"),
        "{out}"
    );
}

#[test]
fn time_buckets_are_modelled() {
    use crate::entity::model::{Granularity, Segment};
    let input: DeriveInput = parse_quote! {
        #[pk(template = "OPS#{region}#{at:day}", shard = "random", n = 4)]
        #[sk(template = "{at}#{id}")]
        #[gsi1(pk = "AGENT#{agent}#{at: month }", sk = "{at}", shard = 2)]
        struct Ops { region: String, at: i64, id: String, agent: String }
    };
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).expect("parsed");
    validate::entity(&cx, &entity);
    cx.check().expect("no errors");
    let pk = entity.pk.as_ref().unwrap();
    assert!(matches!(&pk.template.segments[3], Segment::Bucket(f, Granularity::Day) if f == "at"));
    assert_eq!(
        pk.template
            .fields()
            .map(|f| f.to_string())
            .collect::<Vec<_>>(),
        ["region", "at"]
    );
    let (at, g) = entity.gsis[0].pk.template.bucket().unwrap();
    assert_eq!((at.to_string(), g), ("at".to_owned(), Granularity::Month));
}

#[test]
fn time_bucket_misuses_are_refused_with_the_fix() {
    let unknown = errors(parse_quote! {
        #[pk(template = "OPS#{at:daily}", shard = "random", n = 4)]
        #[sk(template = "{at}#{id}")]
        struct S { at: i64, id: String }
    });
    assert!(unknown[0].contains("did you mean `day`?"), "{unknown:?}");
    let empty = errors(parse_quote! {
        #[pk(template = "OPS#{at:}", shard = "random", n = 4)]
        #[sk(template = "{at}#{id}")]
        struct S { at: i64, id: String }
    });
    assert!(empty[0].contains("names no time bucket"), "{empty:?}");
    let in_sk = errors(parse_quote! {
        #[pk(template = "OPS#{id}")]
        #[sk(template = "{at:day}")]
        struct S { at: i64, id: String }
    });
    assert!(in_sk[0].contains("belong in partition keys"), "{in_sk:?}");
    let order = errors(parse_quote! {
        #[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
        #[sk(template = "{id}#{at}")]
        struct S { at: i64, id: String }
    });
    assert_eq!(order.len(), 1, "{order:?}");
    assert!(
        order[0].contains(r#"`#[sk(template = "{at}#{id}")]`"#),
        "{order:?}"
    );
    let hashed = errors(parse_quote! {
        #[pk(template = "OPS#{at:day}", shard = "hash(at)", n = 4)]
        #[sk(template = "{at}#{id}")]
        struct S { at: i64, id: String }
    });
    assert!(hashed[0].contains("same moment"), "{hashed:?}");
    // Hashing a field that varies between writes made together is the fix.
    assert!(errors(parse_quote! {
        #[pk(template = "OPS#{at:day}", shard = "hash(at, id)", n = 4)]
        #[sk(template = "{at}#{id}")]
        struct S { at: i64, id: String }
    })
    .is_empty());
    let hot = errors(parse_quote! {
        #[pk(template = "OPS#{at:hour}")]
        #[sk(template = "{at}#{id}")]
        struct S { at: i64, id: String }
    });
    assert!(hot[0].contains("moves the hot partition"), "{hot:?}");
    // ... unless opted in, like a constant key.
    assert!(errors(parse_quote! {
        #[pk(template = "OPS#{at:hour}", single_partition = "a few writes per hour")]
        #[sk(template = "{at}#{id}")]
        struct S { at: i64, id: String }
    })
    .is_empty());
    let gsi_hot = errors(parse_quote! {
        #[pk(template = "OPS#{id}", shard = "random", n = 4)]
        #[sk(template = "{at}")]
        #[gsi1(pk = "DAY#{at:day}", sk = "{at}")]
        struct S { at: i64, id: String }
    });
    assert!(
        gsi_hot[0].contains("the same for every write"),
        "{gsi_hot:?}"
    );
}

#[test]
fn counters_are_resolved_once_and_refused_once() {
    // A repeated name: one error, and one function (not two, which rustc would refuse too).
    let repeated: DeriveInput = parse_quote! {
        #[pk(template = "E#{election}")]
        #[sk(template = "C#{name}")]
        #[counter(name = "votes", n = 10)]
        #[counter(name = "votes", n = 4)]
        struct Candidate { election: String, name: String }
    };
    assert_eq!(errors(repeated.clone()).len(), 1);
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &repeated).unwrap();
    let _ = cx.check();
    let resolved = resolve(&entity);
    assert_eq!(resolved.counters.len(), 1);
    assert_eq!(resolved.counters[0].n.value, 10);
    assert_eq!(
        generated(quote!(#repeated))
            .matches("fnvotes_counter")
            .count(),
        1
    );

    // An unknown key (most likely `n`): that error alone, and the function stays.
    let unknown: DeriveInput = parse_quote! {
        #[pk(template = "E#{election}")]
        #[sk(template = "C#{name}")]
        #[counter(name = "votes", shards = 10)]
        struct Candidate { election: String, name: String }
    };
    let messages = errors(unknown.clone());
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].contains("unknown key `shards`"), "{messages:?}");
    assert!(generated(quote!(#unknown)).contains("fnvotes_counter"));
}

#[test]
fn field_roles_resolve_their_time_format() {
    use crate::entity::resolve::TimeFormat;
    let input: DeriveInput = parse_quote! {
        #[pk(template = "G#{id}")]
        struct Game {
            id: String,
            #[sharded(created_at)]
            created: Option<chrono::DateTime<chrono::Utc>>,
            #[sharded(updated_at)]
            updated: (u64),
        }
    };
    assert!(errors(input.clone()).is_empty());
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).unwrap();
    let formats: Vec<TimeFormat> = resolve(&entity).roles.iter().map(|r| r.format).collect();
    assert_eq!(formats, [TimeFormat::Rfc3339, TimeFormat::EpochSeconds]);
}

#[test]
fn a_bucketed_random_key_without_sort_key_is_one_error() {
    let missing = errors(parse_quote! {
        #[pk(template = "OPS#{at:day}", shard = "random", n = 4)]
        struct S { at: i64, id: String }
    });
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing[0].contains("it has no sort key"), "{missing:?}");
    // Without a bucket, the random shard's own message says it.
    let unbucketed = errors(parse_quote! {
        #[pk(template = "OPS#{region}", shard = "random", n = 4)]
        struct S { region: String, id: String }
    });
    assert!(
        unbucketed[0].contains("spreads a logical key's items"),
        "{unbucketed:?}"
    );
}

#[test]
fn a_multi_attribute_index_is_modelled_from_field_lists() {
    let input: DeriveInput = parse_quote! {
        #[pk(template = "PLAYER#{player_id}")]
        #[gsi2(pk = [game_id, region], sk = [score, player_id], shard = 8, shard_attribute = "s2")]
        #[gsi1(pk = "GAME#{game_id}", shard = 4)]
        struct Run { player_id: String, game_id: String, region: String, score: u64 }
    };
    let cx = Ctxt::new();
    let entity = parse::entity(&cx, &input).expect("parsed");
    validate::entity(&cx, &entity);
    cx.check().expect("no errors");
    // The string-keyed index keeps its model; the list-keyed one has its own.
    assert_eq!(entity.gsis.len(), 1);
    assert_eq!(entity.attribute_gsis.len(), 1);
    let g = &entity.attribute_gsis[0];
    assert_eq!(g.number, 2);
    assert_eq!(g.pk.value, ["game_id", "region"]);
    assert_eq!(g.sk.value, ["score", "player_id"]);
    assert_eq!(g.n.as_ref().unwrap().value, 8);
    assert_eq!(g.shard_attribute.value, "s2");
    assert_eq!(g.query, "query_gsi2");
}

#[test]
fn a_multi_attribute_index_reports_each_problem_under_its_token() {
    let errs = errors(parse_quote! {
        #[pk(template = "PLAYER#{player_id}")]
        #[gsi1(pk = [gme_id], sk = [score, score], shard = 0)]
        #[gsi2(pk = [], sk = [])]
        struct Run { player_id: String, game_id: String, score: u64, gsi1_shard: u32 }
    });
    let has = |needle: &str| errs.iter().any(|e| e.contains(needle));
    assert!(has("did you mean `game_id`"), "{errs:#?}");
    assert!(has("`score` is named twice"), "{errs:#?}");
    assert!(has("has 0 shards"), "{errs:#?}");
    assert!(has("an empty `sk = []`"), "{errs:#?}");
    assert!(has("needs `shard = N`"), "{errs:#?}");
    assert!(has("has no partition field"), "{errs:#?}");
    assert!(
        has("which `sharded` writes itself (the shard of #[gsi1])"),
        "{errs:#?}"
    );
    assert_eq!(errs.len(), 7, "{errs:#?}");
}

#[test]
fn generated_names_join_parts_without_their_outer_underscores() {
    use crate::entity::names::{range, sort_builder, sort_prefix};
    use proc_macro2::Span;
    use syn::Ident;
    let ident = |s: &str| syn::parse_str::<Ident>(s).unwrap();
    // The names users call today for snake_case fields do not change.
    assert_eq!(sort_builder("sk"), "sk_sort");
    assert_eq!(sort_builder("gsi1_sk"), "gsi1_sort");
    assert_eq!(sort_prefix("sk", &ident("score"),), "sk_prefix_score");
    assert_eq!(
        range(&Ident::new("query_gsi2", Span::call_site())),
        "query_gsi2_range"
    );
    // Unusual names: `r#` and outer underscores dropped, inner ones kept.
    assert_eq!(sort_prefix("sk", &ident("u8_")), "sk_prefix_u8");
    assert_eq!(sort_prefix("sk", &ident("_tenant")), "sk_prefix_tenant");
    assert_eq!(sort_prefix("sk", &ident("id__")), "sk_prefix_id");
    assert_eq!(sort_prefix("sk", &ident("größe")), "sk_prefix_größe");
    assert_eq!(sort_prefix("sk", &ident("r#match")), "sk_prefix_match");
    assert_eq!(range(&ident("by_day_")), "by_day_range");
}

#[test]
fn generated_names_that_collide_or_vanish_are_refused() {
    let errs = errors(parse_quote! {
        #[pk(template = "G#{g}", shard = "hash(a)", n = 4)]
        #[sk(template = "S#{a_}#{a}#{_b}#{b}#T")]
        struct Score { g: String, a_: u32, a: String, _b: u8, b: u8 }
    });
    assert_eq!(errs.len(), 2, "one error per colliding pair: {errs:#?}");
    assert!(
        errs[0].contains("`{a_}` and `{a}` in template"),
        "{}",
        errs[0]
    );
    assert!(errs[0].contains("`Score::sk_prefix_a`"), "{}", errs[0]);
    assert!(errs[0].contains("e.g. `a_`"), "{}", errs[0]);
    assert!(errs[1].contains("`Score::sk_prefix_b`"), "{}", errs[1]);
    // The same names on different keys do not collide.
    assert!(errors(parse_quote! {
        #[pk(template = "G#{g}", shard = "hash(a)", n = 4)]
        #[sk(template = "S#{a_}")]
        #[gsi1(pk = "A#{g}", sk = "{a}", shard = 2)]
        struct Score { g: String, a_: u32, a: String }
    })
    .is_empty());
    let errs = errors(parse_quote! {
        #[pk(template = "G#{g}", shard = "hash(__)", n = 4)]
        #[sk(template = "S#{__}#T")]
        struct Score { g: String, __: u32 }
    });
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].contains("`__` has nothing else"), "{}", errs[0]);
}

#[test]
fn raw_identifiers_name_fields_in_templates_and_keywords_get_a_hint() {
    assert!(errors(parse_quote! {
        #[pk(template = "T#{r#type}", shard = "hash(r#ref)", n = 4, query = "r#match")]
        #[sk(template = "{r#loop}")]
        struct Item { r#type: String, r#ref: String, r#loop: u64 }
    })
    .is_empty());
    let errs = errors(parse_quote! {
        #[pk(template = "T#{type}", shard = "hash(id)", n = 4)]
        struct Item { r#type: String, id: String }
    });
    assert!(
        errs[0].contains("is a keyword: write the field as the struct does, `{r#type}`"),
        "{errs:#?}"
    );
}
