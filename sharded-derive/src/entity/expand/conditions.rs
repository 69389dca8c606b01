//! The typed sort-key conditions of one sort key: one function, `sk_sort()` (`gsi1_sort()` for
//! a GSI's), returning the runtime's `TemplateSort` typed by the template's fields. The steps
//! (`.eq(..)`, `.between(..)`) are generic runtime code, so the expansion spells none of them.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

use super::params::Ctx;
use crate::entity::names;
use crate::entity::resolve::{RSegment, RSort};

/// `<sort>() -> TemplateSort<(F1, (F2, ()))>`, the fields in template order (ending in
/// `EndsInLiteral` instead of `()` when a literal follows the last field). A template
/// without fields gets none (its only condition is `sk_all()`).
pub(super) fn sort_conditions(cx: &Ctx, sk: &RSort, fn_name: &str, key: &Ident) -> TokenStream {
    let rt = cx.rt;
    let fields: Vec<_> = sk.template.fields().collect();
    if fields.is_empty() {
        return TokenStream::new();
    }
    // The nested pairs `(F1, (F2, ()))`, built from the last field out; after a refused input
    // an unknown name takes any value.
    // The end marks whether a literal follows the last field (a strict `<` on it is then one
    // key condition even below equal fields).
    let end = match sk.template.segments.last() {
        Some(RSegment::Literal(_)) => quote!(#rt::EndsInLiteral),
        _ => quote!(()),
    };
    let rest = fields.iter().rev().fold(end, |tail, field| {
        let head = match field.ty() {
            Some(ty) => quote!(#ty),
            None => quote!(#rt::UnknownField),
        };
        quote!((#head, #tail))
    });
    let order = fields
        .iter()
        .map(|f| format!("`{}`", f.ident()))
        .collect::<Vec<_>>()
        .join(", then ");
    let name = Ident::new(&names::sort_builder(fn_name), Span::call_site());
    let doc = format!(
        "The typed conditions on {} (template `{}`), for `Query::sk`: `eq` on its fields in \
         order ({order}), then at most one range on the next: `{name}().eq(..).between(..)`. \
         See `sharded::query::TemplateSort`.",
        sk.attribute,
        sk.template.source(),
    );
    let body = cx.body(quote!(#key.sort()));
    quote! {
        #[doc = #doc]
        pub fn #name() -> #rt::TemplateSort<#rest> {
            #body
        }
    }
}
