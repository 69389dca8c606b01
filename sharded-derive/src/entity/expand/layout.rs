//! The base table's layout and its transitions: `pk_partitions` (every partition a logical
//! key's items may be in) and, while `previous_n` or `legacy` is declared, `pk_previous`.

use proc_macro2::TokenStream;
use quote::quote;

use super::keys::random_sort_key;
use super::params::Ctx;
use crate::entity::resolve::{KeyField, RPartition, RPrevious, RShard};

/// The base table's layout: `pk_partitions` (every partition a logical key's items may be
/// in) and, while a transition is declared, `pk_previous` (an item's key under the previous
/// layout) and the legacy template.
pub(super) fn layout_methods(cx: &Ctx, pk: &RPartition) -> TokenStream {
    let rt = cx.rt;
    let entity_name = &cx.r.entity_name;
    let source = pk.template.source();
    let entity_ident = &cx.r.entity.ident;
    let template_fields: Vec<KeyField> = pk.template.fields().collect();
    let template_params = cx.params(template_fields.iter().copied());
    let template_values = cx.template_values(&pk.template);
    // The legacy template's values (its fields are fields of the current template).
    let legacy_values = match &pk.previous {
        Some(RPrevious::Legacy(legacy)) => cx.values(legacy.fields()),
        _ => quote!(&[]),
    };
    let description = match &pk.previous {
        None => String::new(),
        Some(RPrevious::Shards { n: old, .. }) => {
            format!(" While the transition from `previous_n = {old}` is declared, also the {old} previous shards.")
        }
        Some(RPrevious::Legacy(legacy)) => format!(
            " While the transition from `legacy = \"{}\"` is declared, also that unsharded key.",
            legacy.source()
        ),
    };
    let doc = format!(
        "Every physical partition that may hold `{entity_ident}` items of the logical key `{source}`: \
         what `query` reads.{description}"
    );
    let body = cx.body(quote! {
        #rt::layout::partitions(#entity_name, &__SCHEMA.pk, #template_values, #legacy_values)
    });
    let mut out = quote! {
        #[doc = #doc]
        pub fn pk_partitions(#(#template_params),*) -> #rt::Result<#rt::Partitions, #rt::KeyError> {
            #body
        }
    };
    let Some(previous) = &pk.previous else {
        return out;
    };
    let params = cx.params(pk.physical_args());
    // What places the item under the previous layout: the current sharding's input for a
    // previous shard count; nothing for an unsharded legacy key.
    let (sort_key, shard_by) = match (previous, &pk.shard) {
        (RPrevious::Shards { .. }, RShard::Hash(fields)) => {
            let shard_values = cx.values(fields.iter().copied());
            (quote!(), quote!(#rt::ShardBy::Fields(#shard_values)))
        }
        (RPrevious::Shards { .. }, RShard::Random(sk_fields)) => (
            random_sort_key(cx, sk_fields),
            quote!(#rt::ShardBy::SortKey(&__sk)),
        ),
        // A legacy key, or (refused by validation) a previous count on an unsharded key.
        _ => (quote!(), quote!(#rt::ShardBy::Unsharded)),
    };
    let previous_doc = format!(
        "The partition key one `{entity_ident}` had under the previous layout, while the \
         transition is declared: where `get` looks after the current shard, and what `delete` \
         removes too (`None` when the previous layout's placement is unknown: then any of its \
         shards may hold the item, and the repository looks it up there)."
    );
    let previous_body = cx.body(quote! {
        #sort_key
        #rt::layout::previous_item_key(#entity_name, &__SCHEMA.pk, #template_values, #shard_by, #legacy_values)
    });
    out.extend(quote! {
        #[doc = #previous_doc]
        // A legacy key is built from some of the parameters; the signature is `pk`'s.
        #[allow(unused_variables)]
        pub fn pk_previous(#(#params),*) -> #rt::Result<::core::option::Option<#rt::String>, #rt::KeyError> {
            #previous_body
        }
    });
    out
}
