//! The query functions: `query` (base table) or `query_gsiN`, named by `query = ".."`, and
//! the `<query>_range` of a time-bucketed partition key.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::params::Ctx;
use crate::entity::names;
use crate::entity::resolve::{KeyField, RPartition};

/// `query` (base table) or `query_gsiN`, named by `query = "..."` when given.
pub(super) fn query_method(cx: &Ctx, pk: &RPartition, gsi: Option<u8>) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let name = &pk.query;
    let all_shards = match gsi {
        None => Ident::new("pk_all_shards", Span::call_site()),
        Some(n) => format_ident!("gsi{}_pk_all_shards", n),
    };
    let index = match gsi {
        None => quote!(::core::option::Option::None),
        Some(n) => quote!(::core::option::Option::Some(#n)),
    };
    let params = cx.params(pk.template.fields());
    let args = cx.names(pk.template.fields());
    let shards = pk.n;
    let source = pk.template.source();
    let doc = format!(
        "Queries every `{ident}` under the logical key `{source}`{}: {shards} shard(s) queried concurrently and \
         merged by sort key. Refine with `.limit`, `.descending`, `.sk_*`, then `.collect()`, `.stream()`, \
         `.page(..)` or `.count()`.",
        gsi.map(|n| format!(" of index gsi{n}")).unwrap_or_default()
    );
    let repo = cx.fresh("repo");
    let body = match gsi {
        None => cx.body(quote!(#rt::query_partitions(#repo, Self::pk_partitions(#(#args),*)))),
        Some(_) => cx.body(quote!(#rt::query_shards(#repo, #index, Self::#all_shards(#(#args),*)))),
    };
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #name(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Query<Self> {
            #body
        }
    }
}

/// `<query>_range(repo, <other template fields>, from, to)` for a partition key bucketed on a
/// time field: every item with `from <= field < to`, bucket after bucket (see
/// `sharded::query::RangeQuery`).
pub(super) fn range_method(cx: &Ctx, pk: &RPartition, gsi: Option<u8>) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let Some((at, granularity)) = pk.template.bucket() else {
        return TokenStream::new();
    };
    let name = names::ident(&names::range(&pk.query), pk.query.span());
    let others: Vec<KeyField> = pk.template.fields().filter(|f| !f.same(&at)).collect();
    let params = cx.params(others.iter().copied());
    let values = cx.values(others.iter().copied());
    let taken = |n: &str| others.iter().any(|f| f.ident() == n);
    let (from, to) = if taken("from") || taken("to") {
        (format_ident!("from_"), format_ident!("to_"))
    } else {
        (format_ident!("from"), format_ident!("to"))
    };
    let ty = cx.param_type(at);
    let (from_ref, to_ref) = (cx.value_ref(at, &from), cx.value_ref(at, &to));
    let index = match gsi {
        None => quote!(::core::option::Option::None),
        Some(n) => quote!(::core::option::Option::Some(#n)),
    };
    let source = pk.template.source();
    let written = at.ident();
    let doc = format!(
        "Every `{ident}` with `{from} <= {written} < {to}` under `{source}`{}: the {} buckets \
         that intersect the range, each over its {} shard(s), merged in `{written}` order (see \
         `sharded::query::RangeQuery`). Refine with `.limit`, `.descending`, `.page_size`, then \
         `.collect()`, `.stream()`, `.page(..)`, `.count()` or `.count_by_bucket()`.",
        gsi.map(|n| format!(" (index gsi{n})")).unwrap_or_default(),
        granularity.name(),
        pk.n,
    );
    let repo = cx.fresh("repo");
    let body = cx.body(quote! {
        #rt::range_query(
            #repo,
            #index,
            #values,
            (&&#rt::Probe(#from_ref)).range_bound(),
            (&&#rt::Probe(#to_ref)).range_bound(),
        )
    });
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #name(#repo: &#rt::Repo<Self>, #(#params,)* #from: #ty, #to: #ty) -> #rt::RangeQuery<Self> {
            #body
        }
    }
}
