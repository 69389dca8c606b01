//! The base table's layout and its transitions: `pk_partitions` (every partition a logical
//! key's items may be in), while `previous_n` or `legacy` is declared `pk_previous`, and for a
//! layout decided per logical key (`max_n`) `__pk_shard_input`.

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
    out.extend(shard_input_method(cx, pk));
    let Some(previous) = &pk.previous else {
        return out;
    };
    let params = cx.params(pk.physical_args());
    // What places the item under the previous layout: the current sharding's input for a
    // previous shard count; nothing for an unsharded legacy key.
    let (sort_key, shard_by) = match previous {
        RPrevious::Shards { .. } => shard_by(cx, &pk.shard),
        RPrevious::Legacy(_) => (quote!(), quote!(#rt::ShardBy::Unsharded)),
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

/// What an item's shard is computed from, as the runtime's `ShardBy`, and the statement that
/// builds the sort key it may borrow (`__sk`): the hashed fields, the item's identity for
/// random shards, nothing for an unsharded key (or, refused by validation, a previous count
/// or a per-key layout on one).
fn shard_by(cx: &Ctx, shard: &RShard) -> (TokenStream, TokenStream) {
    let rt = cx.rt;
    match shard {
        RShard::Hash(fields) => {
            let shard_values = cx.values(fields.iter().copied());
            (quote!(), quote!(#rt::ShardBy::Fields(#shard_values)))
        }
        RShard::Random(sk_fields) => (
            random_sort_key(cx, sk_fields),
            quote!(#rt::ShardBy::SortKey(&__sk)),
        ),
        _ => (quote!(), quote!(#rt::ShardBy::Unsharded)),
    }
}

/// `__pk_shard_input`, for a layout decided per logical key (`max_n`): what places one item
/// under any shard count of its key, read by `key` and `ShardedEntity::__shard_input`. Hidden:
/// where a widened key's items are is the runtime's layout directory's to say.
fn shard_input_method(cx: &Ctx, pk: &RPartition) -> TokenStream {
    if pk.max_n.is_none() {
        return TokenStream::new();
    }
    let rt = cx.rt;
    let entity_name = &cx.r.entity_name;
    let params = cx.params(pk.physical_args());
    let template_values = cx.template_values(&pk.template);
    let (sort_key, shard_by) = shard_by(cx, &pk.shard);
    let body = cx.body(quote! {
        #sort_key
        #rt::layout::shard_input(#entity_name, &__SCHEMA.pk, #template_values, #shard_by)
    });
    quote! {
        #[doc(hidden)]
        pub fn __pk_shard_input(#(#params),*) -> #rt::Result<#rt::layout::ShardInput, #rt::KeyError> {
            #body
        }
    }
}
