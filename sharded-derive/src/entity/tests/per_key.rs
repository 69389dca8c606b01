//! A layout decided per logical key (`max_n` on `#[pk]`): what is accepted and modelled, what
//! is refused with which message, and what the expansion adds (only for such an entity).

use syn::{parse_quote, DeriveInput};

use super::{errors, generated};
use crate::entity::resolve::resolve;
use crate::entity::{parse, validate};
use crate::internals::ctxt::Ctxt;

#[test]
fn hashed_and_random_keys_accept_max_n_above_n_and_resolve_it() {
    for input in [
        parse_quote! {
            #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
            #[sk(template = "SCORE#{score}#{player_id}")]
            struct Score { game_id: String, player_id: String, score: u64 }
        },
        parse_quote! {
            #[pk(template = "ORG#{org}", shard = "random", n = 2, max_n = 64, suffix = "#{shard:02}")]
            #[sk(template = "{at}#{id}")]
            struct Event { org: String, at: u64, id: String }
        },
    ] {
        let input: DeriveInput = input;
        let cx = Ctxt::new();
        let entity = parse::entity(&cx, &input).expect("parsed");
        validate::entity(&cx, &entity);
        cx.check().expect("no errors");
        let pk = entity.pk.as_ref().unwrap();
        assert_eq!(pk.max_n.as_ref().map(|m| m.value), Some(64));
        let resolved = resolve(&entity);
        let rpk = resolved.pk.as_ref().unwrap();
        assert_eq!(rpk.max_n, Some(64));
        assert_eq!(rpk.shard_bound(), 64);
    }
}

#[test]
fn max_n_must_widen_above_n() {
    let same = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 8, max_n = 8)]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(same.len(), 1, "{same:?}");
    assert!(
        same[0].contains("`max_n = 8` must be above `n = 8`"),
        "{same:?}"
    );
    let below = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 8, max_n = 4)]
        struct Score { game_id: String, player_id: String }
    });
    assert!(below[0].contains("must be above `n = 8`"), "{below:?}");
    // Without `n` (reported), a maximum of 1 widens nothing.
    let one = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", max_n = 1)]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(one.len(), 2, "{one:?}");
    assert!(one[0].contains("no shard count"), "{one:?}");
    assert!(one[1].contains("`max_n = 1` widens no key"), "{one:?}");
    let not_a_count = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 99999999999)]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(not_a_count.len(), 1, "{not_a_count:?}");
    assert!(
        not_a_count[0].contains("`max_n` must be a whole number of shards"),
        "{not_a_count:?}"
    );
    // `n = 0` is the shard count's own error, once.
    let zero = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 0, max_n = 8)]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(zero.len(), 1, "{zero:?}");
    assert!(zero[0].contains("0 shards"), "{zero:?}");
}

#[test]
fn max_n_needs_a_shard_expression_that_places_items_under_any_count() {
    let unsharded = errors(parse_quote! {
        #[pk(template = "USER#{user_id}", max_n = 64)]
        struct User { user_id: String }
    });
    assert_eq!(unsharded.len(), 1, "{unsharded:?}");
    assert!(
        unsharded[0].contains("no shard expression")
            && unsharded[0].contains("`shard = \"hash(field)\"`"),
        "{unsharded:?}"
    );
    // A refused shard expression is reported once, as itself.
    let invalid = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hsh(player_id)", n = 1, max_n = 64)]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert!(invalid[0].contains("did you mean `hash`"), "{invalid:?}");
}

#[test]
fn max_n_and_a_declared_transition_are_one_or_the_other() {
    let resharding = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 2, previous_n = 1, max_n = 64)]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(resharding.len(), 1, "{resharding:?}");
    assert!(
        resharding[0].contains("`max_n` and `previous_n` on one key")
            && resharding[0].contains("key by key; declare one or the other"),
        "{resharding:?}"
    );
    let adopting = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64, legacy = "GAME#{game_id}")]
        struct Score { game_id: String, player_id: String }
    });
    assert_eq!(adopting.len(), 1, "{adopting:?}");
    assert!(
        adopting[0].contains("`max_n` and `legacy` on one key"),
        "{adopting:?}"
    );
}

#[test]
fn max_n_is_refused_on_an_index() {
    let errs = errors(parse_quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1)]
        #[sk(template = "SCORE#{score}")]
        #[gsi1(pk = "PLAYER#{player_id}", shard = 4, max_n = 16)]
        #[gsi2(pk = [game_id], sk = [score], shard = 4, max_n = 16)]
        struct Score { game_id: String, player_id: String, score: u64 }
    });
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].contains("not on #[gsi1]"), "{errs:?}");
    assert!(errs[1].contains("not on #[gsi2]"), "{errs:?}");
}

#[test]
fn a_per_key_entity_generates_its_schema_maximum_and_shard_input() {
    let out = generated(quote::quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64, suffix = "#{shard:02}")]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct Score { game_id: String, player_id: String, score: u64 }
    });
    assert!(out.contains(".with_per_key(64u32)"), "{out}");
    // The maximum and the suffix's width are checked against the runtime's facts.
    assert!(out.contains("assert_shard_count(64u32)"), "{out}");
    assert!(out.contains("assert_suffix_fits("), "{out}");
    assert!(out.contains(",64u32);"), "{out}");
    assert!(out.contains("fn__shard_input(&self)"), "{out}");
    assert!(out.contains("pubfn__pk_shard_input("), "{out}");
    assert!(
        out.contains("layout::shard_input(\"Score\",&__SCHEMA.pk,"),
        "{out}"
    );
    assert!(out.contains("ItemKey::per_key(Self::__pk_shard_input(game_id,player_id)?,__sk)"));
    assert!(!out.contains("ItemKey::in_layout"), "{out}");
    let random = generated(quote::quote! {
        #[pk(template = "ORG#{org}", shard = "random", n = 1, max_n = 8)]
        #[sk(template = "{at}#{id}")]
        struct Event { org: String, at: u64, id: String }
    });
    assert!(random.contains("ShardBy::SortKey(&__sk)"), "{random}");
    assert!(random.contains("fn__shard_input(&self)"), "{random}");
}

#[test]
fn an_entity_without_max_n_generates_nothing_of_it() {
    let out = generated(quote::quote! {
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10, previous_n = 5)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct Score { game_id: String, player_id: String, score: u64 }
    });
    for absent in [
        "with_per_key",
        "__shard_input",
        "shard_input(",
        "ItemKey::per_key",
    ] {
        assert!(!out.contains(absent), "{absent}: {out}");
    }
    assert!(out.contains("ItemKey::in_layout"), "{out}");
}
