//! Compile-time checks in the expansion, evaluated by the compiler in `const` items spanned
//! at the user's tokens: key field types encode and decode, a bucketed field is a time, and
//! the facts the runtime owns (the shard maximum, the entity attribute's name, the time-bucket
//! names) hold for what the user wrote.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::params::Ctx;
use crate::entity::model::Previous;
use crate::entity::resolve::{RTemplate, Resolved};
use crate::internals::spanned::respan;

/// `KeyPart` and `KeyPartDecode` bounds for every key field, spanned at the field's type so an
/// unsupported type is reported where the user wrote it.
pub(super) fn type_assertions(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    // One check per type, at its first key field: two fields of a type that does not encode
    // are one error (the type's), and the expansion spells each type's checks once.
    let mut checked: Vec<String> = Vec::new();
    let checks = cx.r.key_fields().into_iter().filter_map(|field| {
        let ty = field.ty()?;
        let written = quote!(#ty).to_string();
        if checked.contains(&written) {
            return None;
        }
        checked.push(written);
        let span = ty.span();
        Some(quote_spanned! {span=>
            const _: () = #rt::assert_key_field::<#ty>();
        })
    });
    let buckets = bucketed_templates(cx.r).filter_map(|template| {
        let (field, _) = template.bucket()?;
        let ty = field.ty()?;
        let span = ty.span();
        Some(quote_spanned! {span=>
            const _: () = #rt::assert_bucket_time::<#ty>();
        })
    });
    let facts = runtime_fact_checks(cx);
    quote!(#(#checks)* #(#buckets)* #facts)
}

/// Checks against facts the runtime owns (the shard maximum, which bounds `n`, `previous_n`
/// and `max_n` alike, and the entity attribute's name),
/// evaluated by the compiler in `const` items spanned at the user's tokens: the derive holds
/// no copy of either value, so the two can never disagree.
fn runtime_fact_checks(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let entity = cx.r.entity;
    let counts = entity
        .pk
        .iter()
        .chain(entity.gsis.iter().map(|g| &g.pk))
        .filter_map(|pk| pk.n.as_ref())
        .chain(entity.pk.iter().filter_map(|pk| match &pk.previous {
            Some(Previous::Shards { n, .. }) => Some(n),
            _ => None,
        }))
        .chain(entity.pk.iter().filter_map(|pk| pk.max_n.as_ref()))
        .map(|n| {
            let value = n.value;
            let rt = respan(rt, n.span);
            quote_spanned! {n.span=> const _: () = #rt::assert_shard_count(#value); }
        });
    // The attributes the runtime writes are the table's names, which only generated code
    // sees: every stored field is checked against them at compile time.
    // The list is one `const` the per-field checks share, so it is spelled once per entity.
    let keys = written_key_attributes(cx);
    let written = quote!(const __WRITTEN: &[(&str, &str)] = &[#(#keys),*];);
    let attributes = entity.fields.iter().filter(|f| f.serde_attribute).map(|f| {
        let name = &f.serde_name.value;
        let field = f.ident.to_string();
        let (how, fix) = crate::entity::validate::serde_fix(f);
        let rt = respan(rt, f.serde_name.span);
        quote_spanned! {f.serde_name.span=>
            const _: () = #rt::assert_not_written_by_sharded(__TABLE, __WRITTEN, #field, #name, #how, #fix);
        }
    });
    // A zero-padded suffix must hold every shard (up to `max_n` of a per-key layout).
    let suffixes = cx
        .r
        .pk
        .iter()
        .chain(cx.r.gsis.iter().map(|g| &g.pk))
        .filter_map(|pk| Some((pk.suffix?, pk.shard_bound())))
        .map(|(suffix, n)| {
            let checked = respan(rt, suffix.span());
            quote_spanned! {suffix.span()=>
                const _: () = #checked::assert_suffix_fits(#checked::ShardSuffix::declared(#suffix), #n);
            }
        });
    quote!(#(#counts)* #written #(#attributes)* #(#suffixes)*)
}

/// The key attributes the entity writes, as `(name, what it holds)` expressions over the
/// table (`__TABLE`).
fn written_key_attributes(cx: &Ctx) -> Vec<TokenStream> {
    let r = cx.r;
    let mut attrs = Vec::new();
    if let Some(pk) = &r.pk {
        attrs.push(pk.attribute);
    }
    if let Some(sk) = &r.sk {
        attrs.push(sk.attribute);
    }
    for g in &r.gsis {
        attrs.push(g.pk.attribute);
        attrs.extend(g.sk.as_ref().map(|sk| sk.attribute));
    }
    attrs
        .into_iter()
        .map(|attr| {
            let name = cx.key_attr(attr);
            let role = attr.role();
            quote!((#name, #role))
        })
        .collect()
}

/// The partition-key templates (base and GSIs) that have a time bucket.
fn bucketed_templates<'r, 'a>(r: &'r Resolved<'a>) -> impl Iterator<Item = &'r RTemplate<'a>> {
    r.pk.iter()
        .chain(r.gsis.iter().map(|g| &g.pk))
        .map(|pk| &pk.template)
        .filter(|t| t.bucket().is_some())
}
