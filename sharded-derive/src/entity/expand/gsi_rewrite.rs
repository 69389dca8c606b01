//! `GsiRewrite`: the GSI key attributes a typed update must rewrite, rebuilt from the values
//! it sets and the key fields' values, so an index never goes stale.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::keys::gsi_key_schema;
use super::params::Ctx;
use crate::entity::resolve::{push_new, KeyField, RGsi, RShard};

/// The `GsiRewrite` impl: one block per GSI, run when the update changes one of its fields.
pub(super) fn gsi_rewrite(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let blocks =
        cx.r.gsis
            .iter()
            .enumerate()
            .map(|(position, g)| rewrite_block(cx, position, g));
    let body = cx.body(quote! {
        let mut out = #rt::Vec::new();
        #(#blocks)*
        ::core::result::Result::Ok(out)
    });
    quote! {
        #[automatically_derived]
        impl #rt::GsiRewrite for #ident {
            #[allow(unused_variables)]
            #[inline]
            fn gsi_keys(
                values: &::std::collections::HashMap<&'static str, #rt::AttributeValue>,
                changed: &[&'static str],
            ) -> #rt::Result<#rt::Vec<(&'static str, #rt::String)>, #rt::Error> {
                #body
            }
        }
    }
}

/// The attribute a key field is stored as (after a refused input, an unknown name's own).
fn attribute_of(field: &KeyField) -> String {
    match field {
        KeyField::Field(field) => field.serde_name.value.clone(),
        KeyField::Unknown(name) => name.to_string(),
    }
}

/// The keys of the GSI at `position`, rebuilt into `out` when a field they read changed.
fn rewrite_block(cx: &Ctx, position: usize, g: &RGsi) -> TokenStream {
    let (rt, r) = (cx.rt, cx.r);
    let name = format!("gsi{}", g.number);
    let mut own: Vec<KeyField> = g.pk.physical_args();
    push_new(&mut own, g.sk.iter().flat_map(|sk| sk.template.fields()));
    let triggers: Vec<String> = own.iter().map(attribute_of).collect();
    let mut needed = own.clone();
    let identity = matches!(g.pk.shard, RShard::Identity);
    if identity {
        if let Some(pk) = &r.pk {
            push_new(&mut needed, pk.template.fields());
        }
        push_new(&mut needed, r.sk.iter().flat_map(|sk| sk.template.fields()));
    }
    let locals = needed.iter().map(|f| {
        let local = f.ident();
        let attribute = attribute_of(f);
        let ty = f.ty().map(|t| quote!(#t)).unwrap_or(quote!(#rt::String));
        quote! {
            let #local: #ty = #rt::rebuilt_field(values, #attribute, #name, changed)?;
        }
    });
    let pk_attr = cx.key_attr(g.pk.attribute);
    let pk_value = if identity {
        identity_pk_value(cx, position, g)
    } else {
        let pk_fn = format_ident!("{}_pk", name);
        let args: Vec<_> =
            g.pk.physical_args()
                .into_iter()
                .map(|f| cx.local_arg(f))
                .collect();
        quote!(Self::#pk_fn(#(#args),*)?)
    };
    let sk_push = g.sk.as_ref().map(|sk| {
        let sk_fn = format_ident!("{}_sk", name);
        let attr = cx.key_attr(sk.attribute);
        let args: Vec<_> = sk.template.fields().map(|f| cx.local_arg(f)).collect();
        quote!(out.push((#attr, Self::#sk_fn(#(#args),*)?));)
    });
    quote! {
        if changed.iter().any(|c| [#(#triggers),*].contains(c)) {
            #(#locals)*
            out.push((#pk_attr, #pk_value));
            #sk_push
        }
    }
}

/// An identity-sharded GSI key: its shard is the hash of the item's logical key and sort
/// key, rebuilt from the locals.
fn identity_pk_value(cx: &Ctx, position: usize, g: &RGsi) -> TokenStream {
    let (rt, r) = (cx.rt, cx.r);
    let logical_args: Vec<_> =
        r.pk.iter()
            .flat_map(|pk| pk.template.fields())
            .map(|f| cx.local_arg(f))
            .collect();
    let sk_value = match &r.sk {
        Some(sk) => {
            let args: Vec<_> = sk.template.fields().map(|f| cx.local_arg(f)).collect();
            quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
        }
        None => quote!(::core::option::Option::None),
    };
    let on_shard = format_ident!("gsi{}_pk_on_shard", g.number);
    let args: Vec<_> = g.pk.template.fields().map(|f| cx.local_arg(f)).collect();
    let key = gsi_key_schema(position);
    quote! {{
        let __sk: ::core::option::Option<#rt::String> = #sk_value;
        let __identity = #rt::identity(&Self::pk_logical(#(#logical_args),*)?, __sk.as_deref());
        Self::#on_shard(#(#args,)* #rt::layout::identity_shard(&#key, &__identity))?
    }}
}
