//! `<name>_counter(repo, key..)` for each `#[counter(name = "..", n = ..)]`: a
//! `ShardedCounter` beside the item, keyed by the item's identity.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

use super::item_args::ItemArgs;
use super::keys::key_context;
use super::params::Ctx;
use crate::entity::resolve::{RPartition, RShard};
use crate::internals::spanned::respan;

/// The counter functions of the resolved counters (a refused or repeated name has none).
pub(super) fn counter_methods(cx: &Ctx, pk: &RPartition, args: &ItemArgs) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let identity = identity(cx, pk);
    let (params, sk_expr) = (&args.params, &args.sk_expr);
    let counters = cx.r.counters.iter().map(|counter| {
        let (name, function) = (&counter.name, &counter.function);
        let n = counter.n.value;
        let doc = format!(
            "The `{name}` counter of one `{ident}` ({n} shards, in the same table, \
             beside the item): `increment` (exactly once), `increment_at_least_once`, \
             `total` (one `BatchGetItem`)."
        );
        let repo = cx.fresh("repo");
        let body = cx.body(quote! {
            let __sk: ::core::option::Option<#rt::String> = #sk_expr;
            ::core::result::Result::Ok(#rt::entity_counter(#repo, #name, #n, &#identity, __sk.as_deref()))
        });
        let n_span = counter.n.span;
        let rt_n = respan(rt, n_span);
        let check = quote_spanned! {n_span=> const _: () = #rt_n::assert_shard_count(#n); };
        quote! {
            #[doc = #doc]
            #[inline]
            pub fn #function(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<#rt::ShardedCounter, #rt::KeyError> {
                #check
                #body
            }
        }
    });
    quote!(#(#counters)*)
}

/// The counters' key: the item's identity, independent of its shard and of `n`.
fn identity(cx: &Ctx, pk: &RPartition) -> TokenStream {
    let rt = cx.rt;
    let ctx = key_context(cx, cx.key_attr(pk.attribute));
    let logical_args = cx.names(pk.template.fields());
    match &pk.shard {
        RShard::Hash(fields) => {
            let names: Vec<String> = fields.iter().map(|f| f.ident().to_string()).collect();
            let values = cx.values(fields.iter().copied());
            quote!(
                ::std::format!("{}#{}", Self::pk_logical(#(#logical_args),*)?, #rt::canonical(#ctx, &[#(#names),*], #values)?)
            )
        }
        _ => quote!(Self::pk_logical(#(#logical_args),*)?),
    }
}
