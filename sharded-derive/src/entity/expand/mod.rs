//! Code generation from the resolved model, split by what it generates (as serde_derive
//! splits `de/`): `keys` (builders and parsers), `layout` (partitions and transitions),
//! `conditions` (typed sort-key conditions), `repository` and `counters` (functions taking a
//! `Repo`), `query`, `attribute_gsi` (indexes keyed by the fields' own attributes: their
//! schema entries, shard and functions), `fields` (`{Entity}Fields`), `gsi_rewrite`, `schema` (the `__SCHEMA`
//! static) and `checks` (compile-time assertions). `params` says how key fields are passed,
//! `item_args` what the functions of one item take (shared by `repository` and `counters`).
//!
//! Generated code is thin: static key descriptions and typed wrappers around runtime
//! functions, inside `const _: () = { ... };`, reaching the runtime through one hidden path
//! (`::sharded::__private`, or `<crate>::__private` with `#[sharded(crate = "...")]`).
//!
//! The same functions generate the fallback: when validation refused the input, every
//! inherent function is still emitted with its signature and a body that cannot run, plus a
//! stub trait impl (thiserror's `fallback.rs`), so the user sees the one real error and not a
//! "no function `query` found" at every call site.

mod attribute_gsi;
mod checks;
mod conditions;
mod counters;
mod fields;
mod gsi_rewrite;
mod item_args;
mod keys;
mod layout;
mod params;
mod query;
mod repository;
mod schema;

use proc_macro2::TokenStream;
use quote::quote;

use params::Ctx;

use crate::entity::names;
use crate::entity::resolve::{RPartition, Resolved};

/// The generated code of a valid entity.
pub fn expand(r: &Resolved) -> TokenStream {
    surface(r, false, TokenStream::new())
}

/// When validation failed: the errors, the stub trait impl, and every inherent function with
/// a body that cannot run, so the user sees the real errors and nothing else.
pub fn fallback(r: &Resolved, errors: TokenStream) -> TokenStream {
    surface(r, true, errors)
}

fn surface(r: &Resolved, fallback: bool, errors: TokenStream) -> TokenStream {
    // Inside the anonymous `const` block the runtime is `__rt` (one `use` of the hidden path):
    // every path the expansion writes is three tokens instead of eight.
    let full = &r.rt;
    let alias = quote!(__rt);
    let cx = Ctx {
        r,
        rt: &alias,
        fallback,
    };
    let impls = impls(&cx);
    // At module level, outside the anonymous `const` block below, so users can name it: it
    // reaches the runtime by its full path.
    let fields = fields::typed_fields(&Ctx { rt: full, ..cx });
    if fallback {
        return quote! {
            #errors
            #fields
            #[doc(hidden)]
            #[allow(non_upper_case_globals, non_snake_case, unused_variables, unreachable_code, clippy::all)]
            const _: () = {
                use #full as __rt;
                #impls
            };
        };
    }
    // Only a valid entity has a `#[pk]` (validation reports its absence).
    let Some(pk) = &r.pk else {
        return TokenStream::new();
    };
    let schema = schema::schema_static(&cx, pk);
    let assertions = checks::type_assertions(&cx);
    // `non_snake_case`: generated names are snake case for a snake_case field (see `names`);
    // a field the user named otherwise (`userID`) is a parameter and a name part as written.
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, non_snake_case, clippy::all)]
        const _: () = {
            use #full as __rt;
            #[allow(unused_imports)]
            use __rt::probes::*;
            #schema

            #assertions
            #impls
        };

        #fields
    }
}

/// The trait impls and the inherent functions.
fn impls(cx: &Ctx) -> TokenStream {
    let (rt, r) = (cx.rt, cx.r);
    let ident = &r.entity.ident;
    let methods = methods(cx);
    let item_keys = cx.body(keys::item_keys_body(cx));
    let previous_pk = match &r.pk {
        Some(pk) if pk.previous.is_some() => {
            let args = cx.self_args(pk.physical_args());
            let body = cx.body(quote!(Self::pk_previous(#(#args),*)));
            quote! {
                fn previous_pk(&self) -> #rt::Result<::core::option::Option<#rt::String>, #rt::KeyError> {
                    #body
                }
            }
        }
        _ => TokenStream::new(),
    };
    let shard_input = match &r.pk {
        Some(pk) if pk.max_n.is_some() => {
            let args = cx.self_args(pk.physical_args());
            let body = cx
                .body(quote!(Self::__pk_shard_input(#(#args),*).map(::core::option::Option::Some)));
            quote! {
                fn __shard_input(&self) -> #rt::Result<::core::option::Option<#rt::layout::ShardInput>, #rt::KeyError> {
                    #body
                }
            }
        }
        _ => TokenStream::new(),
    };
    let schema = if cx.fallback {
        quote!(&#rt::FALLBACK_SCHEMA)
    } else {
        quote!(&__SCHEMA)
    };
    let shape = schema::entity_shape(cx);
    let gsi_rewrite = gsi_rewrite::gsi_rewrite(cx);
    let key_attributes = keys::key_attributes_fn(cx);
    quote! {
        #gsi_rewrite

        #[automatically_derived]
        impl #rt::ShardedEntity for #ident {
            const SCHEMA: &'static #rt::EntitySchema = #schema;
            #shape
            fn item_keys(&self) -> #rt::Result<#rt::ItemKeys, #rt::KeyError> {
                #item_keys
            }

            #previous_pk
            #shard_input
            #key_attributes
        }

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    }
}

/// Every inherent function: the keys', then the repository's and the queries'.
fn methods(cx: &Ctx) -> Vec<TokenStream> {
    let r = cx.r;
    let mut methods = Vec::new();
    if let Some(pk) = &r.pk {
        methods.push(keys::partition_methods(
            cx,
            pk,
            "pk",
            "",
            quote!(__SCHEMA.pk),
        ));
        methods.push(layout::layout_methods(cx, pk));
    }
    if let Some(sk) = &r.sk {
        methods.push(keys::sort_methods(cx, sk, "sk"));
    }
    for (position, g) in r.gsis.iter().enumerate() {
        let name = format!("gsi{}", g.number);
        methods.push(keys::partition_methods(
            cx,
            &g.pk,
            &format!("{name}_pk"),
            &format!("{name}_"),
            keys::gsi_key_schema(position),
        ));
        if let Some(sk) = &g.sk {
            methods.push(keys::sort_methods(cx, sk, &format!("{name}_sk")));
        }
    }
    methods.extend(query_methods(cx));
    methods.extend(attribute_gsi::methods(cx));
    methods
}

/// `query` and `query_gsiN` (each name once: two keys may have been given the same one,
/// already reported), `get` and friends, and `<query>_range` for time-bucketed keys.
fn query_methods(cx: &Ctx) -> Vec<TokenStream> {
    let r = cx.r;
    let mut methods = Vec::new();
    let mut query_names: Vec<String> = Vec::new();
    let mut new_query = |pk: &RPartition| {
        let name = pk.query.to_string();
        let new = !query_names.contains(&name);
        query_names.push(name);
        new
    };
    if let Some(pk) = &r.pk {
        if new_query(pk) {
            methods.push(query::query_method(cx, pk, None));
        }
        methods.push(repository::repository_methods(cx, pk));
    }
    for g in &r.gsis {
        if new_query(&g.pk) {
            methods.push(query::query_method(cx, &g.pk, Some(g.number)));
        }
    }
    // Time-bucketed keys: `<query>_range`, named after the (deduplicated) query functions.
    let mut range_names: Vec<String> = Vec::new();
    let keys = r.pk.iter().map(|pk| (pk, None));
    for (pk, gsi) in keys.chain(r.gsis.iter().map(|g| (&g.pk, Some(g.number)))) {
        let range = names::range(&pk.query);
        if pk.template.bucket().is_some() && !range_names.contains(&range) {
            range_names.push(range);
            methods.push(query::range_method(cx, pk, gsi));
        }
    }
    methods
}
