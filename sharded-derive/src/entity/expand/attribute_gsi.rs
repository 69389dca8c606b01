//! Indexes keyed by the fields' own attributes (`#[gsiN(pk = [game_id], sk = [score,
//! player_id], shard = 8)]`): their entries in `__SCHEMA` (after the string-keyed GSIs), the
//! shard each item writes, `query_gsiN(repo, game_id)` and `gsiN_sort()`, and the checks
//! that each field can be a key attribute and that the lists fit DynamoDB's maximum (the
//! runtime's `MAX_KEY_ATTRIBUTES`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::params::Ctx;
use crate::entity::model::{AttributeGsi, Field};
use crate::internals::spanned::respan;
use crate::internals::suggest::did_you_mean;

/// The field a list names: the field itself, or after a refused name, the field it most
/// likely meant (so the fallback keeps the signatures), or none.
fn field<'a>(cx: &Ctx<'a>, ident: &Ident) -> Option<&'a Field> {
    let entity = cx.r.entity;
    entity.field(ident).or_else(|| {
        let name = ident.to_string();
        let meant = did_you_mean(
            &name,
            entity
                .fields
                .iter()
                .map(|f| f.ident.to_string())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )?
        .to_owned();
        entity.fields.iter().find(|f| f.ident == meant)
    })
}

/// The field's type, or `String` for a name that resembles no field (already reported).
fn field_type(cx: &Ctx, ident: &Ident) -> TokenStream {
    match field(cx, ident) {
        Some(f) => {
            let ty = &f.ty;
            quote!(#ty)
        }
        None => {
            let rt = cx.rt;
            quote!(#rt::String)
        }
    }
}

/// The attribute a listed field is stored as.
fn attribute(cx: &Ctx, ident: &Ident) -> String {
    field(cx, ident).map_or_else(|| ident.to_string(), |f| f.serde_name.value.clone())
}

/// The `KeyAttributeSchema` of a listed field, spanned at the user's name in the list so a
/// type that cannot be a key attribute is reported there.
fn key_attribute(cx: &Ctx, ident: &Ident) -> TokenStream {
    let rt = cx.rt;
    let ty = field_type(cx, ident);
    let name = attribute(cx, ident);
    respan(&quote!(#rt::key_attribute::<#ty>(#name)), ident.span())
}

/// The `GsiSchema` entries of the attribute-keyed indexes, in `__SCHEMA.gsis` after the
/// string-keyed ones, and the template statics their messages show.
pub(super) fn schema_entries(cx: &Ctx) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let rt = cx.rt;
    let mut statics = Vec::new();
    let entries = cx
        .r
        .entity
        .attribute_gsis
        .iter()
        .map(|g| {
            let number = g.number;
            let index = cx.index_name(number, g.index_name.as_ref());
            let shard = &g.shard_attribute.value;
            let n = g.n.as_ref().map_or(1, |n| n.value);
            let template = format_ident!("__GSI{}_ATTRIBUTES", number);
            let names: Vec<String> = g.pk.value.iter().map(|i| attribute(cx, i)).collect();
            let source = names
                .iter()
                .map(|n| format!("{n}={{{n}}}"))
                .collect::<Vec<_>>()
                .join(",");
            let segments = names.iter().enumerate().map(|(i, n)| {
                let literal = if i == 0 { format!("{n}=") } else { format!(",{n}=") };
                quote!(#rt::Segment::literal(#literal), #rt::Segment::field(#n))
            });
            statics.push(quote! {
                static #template: #rt::KeyTemplate = #rt::KeyTemplate::new(#source, &[#(#segments),*]);
            });
            let pk = g.pk.value.iter().map(|i| key_attribute(cx, i));
            let sk = g.sk.value.iter().map(|i| key_attribute(cx, i));
            let pk_count = g.pk.value.len();
            let sk_count = g.sk.value.len();
            let pk_check = respan(&quote!(#rt::assert_partition_attributes(#pk_count)), g.pk.span);
            let sk_check = respan(&quote!(#rt::assert_sort_attributes(#sk_count)), g.sk.span);
            statics.push(quote! {
                const _: () = #pk_check;
                const _: () = #sk_check;
            });
            quote! {
                #rt::GsiSchema::new(
                    #number,
                    #index,
                    #rt::PartitionKeySchema::new(#shard, &#template, #rt::Sharding::identity(#n)),
                    ::core::option::Option::None,
                )
                .with_attributes(#rt::AttributeKeySchema::new(&[#(#pk),*], #shard, &[#(#sk),*]))
            }
        })
        .collect();
    (entries, statics)
}

/// The `item_keys` entries of the attribute-keyed indexes: each item's shard (its primary
/// key's identity hashed), which the runtime writes as a number.
pub(super) fn item_keys(cx: &Ctx) -> Vec<TokenStream> {
    let rt = cx.rt;
    let first = cx.r.gsis.len();
    (0..cx.r.entity.attribute_gsis.len())
        .map(|i| {
            let position = first + i;
            quote! {
                (#rt::attribute_shard(&__SCHEMA.gsis[#position].pk, &__identity), ::core::option::Option::None)
            }
        })
        .collect()
}

/// `query_gsiN(repo, ..partition fields)` and `gsiN_sort()` of every attribute-keyed index.
pub(super) fn methods(cx: &Ctx) -> Vec<TokenStream> {
    let first = cx.r.gsis.len();
    cx.r.entity
        .attribute_gsis
        .iter()
        .enumerate()
        .map(|(i, g)| gsi_methods(cx, first + i, g))
        .collect()
}

fn gsi_methods(cx: &Ctx, position: usize, g: &AttributeGsi) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let number = g.number;
    let query = &g.query;
    let params = g.pk.value.iter().map(|i| {
        let ty = field_type(cx, i);
        quote!(#i: impl #rt::KeyArg<#ty>)
    });
    let equalities = g.pk.value.iter().map(|i| {
        let ty = field_type(cx, i);
        let name = attribute(cx, i);
        quote!((#name, #rt::KeyArg::<#ty>::key_value(&#i)))
    });
    let n = g.n.as_ref().map_or(1, |n| n.value);
    let listed = |list: &[Ident]| {
        list.iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let query_doc = format!(
        "Queries every `{ident}` of index gsi{number} whose {} equal the given values: {n} \
         shard(s) (`{}`) queried concurrently and merged by the sort attributes. Refine with \
         `.sk(Self::gsi{number}_sort()..)`, `.limit`, `.descending`, then `.collect()`, \
         `.stream()`, `.page(..)` or `.count()`.",
        listed(&g.pk.value),
        g.shard_attribute.value,
    );
    let repo = cx.fresh("repo");
    let query_body =
        cx.body(quote!(#rt::query_attributes(#repo, #number, #rt::Vec::from([#(#equalities),*]))));
    let sort_fn = format_ident!("gsi{}_sort", number);
    let sort_type = g.sk.value.iter().rev().fold(quote!(()), |rest, i| {
        let ty = field_type(cx, i);
        quote!((#ty, #rest))
    });
    let sort_doc = format!(
        "A sort condition on index gsi{number}'s sort attributes ({}): `eq` on the leading ones \
         in order, then at most one range on the next; give it to `Query::sk`.",
        listed(&g.sk.value)
    );
    let sort_body = cx.body(quote! {
        #rt::AttributeSort::new(match __SCHEMA.gsis[#position].attributes {
            ::core::option::Option::Some(key) => key.sort,
            ::core::option::Option::None => &[],
        })
    });
    quote! {
        #[doc = #query_doc]
        #[inline]
        pub fn #query(#repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Query<Self> {
            #query_body
        }

        #[doc = #sort_doc]
        #[inline]
        pub fn #sort_fn() -> #rt::AttributeSort<#sort_type> {
            #sort_body
        }
    }
}
