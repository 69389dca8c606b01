//! The repository functions: `get`, `delete`, `key`, `update` (and, for a randomly sharded
//! key, `get_from_all_shards` and `delete_on_shard`), the counters, `query`/`query_gsiN` and
//! the `<query>_range` of a time-bucketed key.

use proc_macro2::TokenStream;
use quote::quote;

use super::counters::counter_methods;
use super::item_args::{item_args, ItemArgs};
use super::params::Ctx;
use crate::entity::resolve::{push_new, KeyField, RPartition, RShard};

/// `get`/`delete` (or, for random shards, also `get_from_all_shards`/`delete_on_shard`),
/// the counters, `key` and `update`.
pub(super) fn repository_methods(cx: &Ctx, pk: &RPartition) -> TokenStream {
    let args = item_args(cx, pk);
    let all_shard_path = all_shard_path(cx, pk, &args);
    let counters = counter_methods(cx, pk, &args);
    let key_and_update = key_and_update(cx, pk, &args);
    let get_and_delete = get_and_delete(cx, pk, &args);
    quote! {
        #all_shard_path
        #counters
        #key_and_update
        #get_and_delete
    }
}

/// The explicit all-shard path of a randomly sharded entity, for items whose place is not
/// known (written by other code, or before its place was the item's own hash).
fn all_shard_path(cx: &Ctx, pk: &RPartition, item: &ItemArgs) -> TokenStream {
    if !matches!(pk.shard, RShard::Random(_)) {
        return TokenStream::new();
    }
    let (rt, r) = (cx.rt, cx.r);
    let ident = &r.entity.ident;
    let sk_expr = &item.sk_expr;
    let (repo, shard) = (cx.fresh("repo"), cx.fresh("shard"));
    let mut args: Vec<KeyField> = pk.template.fields().collect();
    push_new(&mut args, r.sk.iter().flat_map(|sk| sk.template.fields()));
    let params = cx.params(args);
    let pk_args = cx.names(pk.template.fields());
    let get_doc = format!(
        "Reads `{ident}` items with this key from every shard, in one `BatchGetItem` per 100 \
         shards, in shard order: the explicit all-shard path for items whose shard is not \
         their own hash (written by other code). `get` reads the one shard an item is on."
    );
    let delete_doc = format!(
        "Deletes the `{ident}` item with this key on one given shard (as `parse_pk` returns \
         it): for items found by `get_from_all_shards`. `delete` removes an item from the \
         shard it is on."
    );
    let get_body = cx.body(quote! {
        let __sk = #sk_expr;
        #rt::get_from_all_shards(#repo, Self::pk_all_shards(#(#pk_args),*)?, __sk).await
    });
    let delete_body = cx.body(quote! {
        let __sk = #sk_expr;
        #rt::delete_by_key(#repo, Self::pk_on_shard(#(#pk_args,)* #shard)?, __sk).await
    });
    quote! {
        #[doc = #get_doc]
        #[inline]
        pub async fn get_from_all_shards(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<#rt::Vec<Self>, #rt::Error> {
            #get_body
        }
        #[doc = #delete_doc]
        #[inline]
        pub async fn delete_on_shard(#repo: &#rt::Repo<Self>, #(#params,)* #shard: u32) -> #rt::Result<(), #rt::Error> {
            #delete_body
        }
    }
}

/// `key` (for transactional reads) and `update` (a typed `UpdateItem`).
fn key_and_update(cx: &Ctx, pk: &RPartition, item: &ItemArgs) -> TokenStream {
    let (rt, r) = (cx.rt, cx.r);
    let repo = cx.fresh("repo");
    let ident = &r.entity.ident;
    let entity_name = &r.entity_name;
    let ItemArgs {
        params,
        names,
        pk_args,
        sk_expr,
        previous_expr,
    } = item;
    let mut key_fields = pk.physical_args();
    push_new(
        &mut key_fields,
        r.sk.iter().flat_map(|sk| sk.template.fields()),
    );
    let key_values = key_fields.iter().filter_map(|f| {
        let KeyField::Field(field) = f else {
            return None;
        };
        let (name, attribute) = (&field.ident, &field.serde_name.value);
        Some(quote! {
            (#attribute, #rt::stored_value(#entity_name, #attribute, &#name))
        })
    });
    // The key is `key`'s; the runtime turns it and the stored key fields into the update.
    let update_body = cx.body(quote! {
        #rt::update_item(#repo, Self::key(#(#names),*), #rt::Vec::from([#(#key_values),*]))
    });
    let update_doc = format!(
        "A typed `UpdateItem` of one `{ident}`, on the shard its key gives: chain \
         `set`, `set_if_absent`, `add`, `append`, `remove` with fields of \
         `{ident}::fields()`, then `send()` (see `sharded::Update`)."
    );
    // A per-key layout (`max_n`): the key carries what places the item under its logical
    // key's own layout, which the runtime looks up.
    let item_key = if pk.max_n.is_some() {
        quote!(#rt::ItemKey::per_key(Self::__pk_shard_input(#(#pk_args),*)?, __sk))
    } else {
        quote!(#rt::ItemKey::in_layout(Self::pk(#(#pk_args),*)?, #previous_expr, __sk))
    };
    let key_body = cx.body(quote! {
        let __sk = #sk_expr;
        ::core::result::Result::Ok(#item_key)
    });
    let key_doc = format!(
        "The primary key of one `{ident}`, on the shard its key gives (and, during a declared \
         layout transition, its previous place): for transactional reads \
         (`sharded::transaction::TransactGet`), which read both places."
    );
    quote! {
        #[doc = #key_doc]
        #[inline]
        pub fn key(#(#params),*) -> #rt::Result<#rt::ItemKey<Self>, #rt::KeyError> {
            #key_body
        }
        #[doc = #update_doc]
        #[inline]
        pub fn update(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Update<Self> {
            #update_body
        }
    }
}

/// `get` and `delete`, at the item's current place and, during a declared transition, its
/// previous one.
fn get_and_delete(cx: &Ctx, pk: &RPartition, item: &ItemArgs) -> TokenStream {
    let rt = cx.rt;
    let repo = cx.fresh("repo");
    let ident = &cx.r.entity.ident;
    let (params, names) = (&item.params, &item.names);
    let how = match (&pk.shard, &pk.previous) {
        (RShard::Hash(_), None) => "exactly one `GetItem`, on the shard its hash fields give",
        (RShard::Random(_), None) => "exactly one `GetItem`, on the shard its key hashes to",
        (_, None) => "one `GetItem`",
        (_, Some(_)) => {
            "one `GetItem` on its current shard, and, when nothing is there \
                         during the declared transition, one at its previous place"
        }
    };
    let get_doc =
        format!("Reads one `{ident}` by its key: {how}. `None` if there is no such item.");
    let delete_doc = if pk.previous.is_some() {
        format!("Deletes one `{ident}` by its key, at its current place and at its previous one (no error if there is none).")
    } else {
        format!("Deletes one `{ident}` by its key (no error if there is none).")
    };
    // Both read the item's place from `key`, which computes it once for every operation.
    let get_body = cx.body(quote!(#rt::get_item(#repo, Self::key(#(#names),*)).await));
    let delete_body = cx.body(quote!(#rt::delete_item(#repo, Self::key(#(#names),*)).await));
    quote! {
        #[doc = #get_doc]
        #[inline]
        pub async fn get(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<::core::option::Option<Self>, #rt::Error> {
            #get_body
        }
        #[doc = #delete_doc]
        #[inline]
        pub async fn delete(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<(), #rt::Error> {
            #delete_body
        }
    }
}
