//! `#[derive(ShardedCollection)]`: an enum of entities read together from one partition.
//!
//! Parse: the enum's variants, each holding one entity. Validate: the shape (syntax only; the
//! derive cannot see the members' attributes). Expand: the `QuerySource` and membership
//! impls, and `const` checks of the members' layouts evaluated by the compiler against the
//! schemas the members' own derives generated, re-spanned at each member's type so a mismatch
//! is reported where the user named it.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::internals::attr::crate_path;
use crate::internals::ctxt::Ctxt;
use crate::internals::spanned::respan;

const DERIVE: &str = "ShardedCollection";

/// One variant: `Score(Score)`.
struct Member<'a> {
    variant: &'a Ident,
    ty: &'a Type,
}

struct Collection<'a> {
    ident: &'a Ident,
    members: Vec<Member<'a>>,
    rt: TokenStream,
}

pub fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let collection = parse(&cx, input);
    match (cx.check(), collection) {
        (Ok(()), Some(collection)) => expand(&collection),
        (Err(errors), _) => errors.to_compile_error(),
        (Ok(()), None) => TokenStream::new(),
    }
}

fn parse<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Collection<'a>> {
    let krate = crate_path(cx, &input.attrs, DERIVE);
    let rt = match krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::sharded::__private),
    };
    let data = match &input.data {
        Data::Enum(data) => data,
        Data::Struct(data) => {
            cx.error_spanned_by(
                data.struct_token,
                "#[derive(ShardedCollection)] works on an enum with one variant per entity, e.g. \
                 `enum GamePage { Game(Game), Score(Score) }`; derive ShardedEntity on a struct",
            );
            return None;
        }
        Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "#[derive(ShardedCollection)] works on an enum with one variant per entity, not \
                 a union",
            );
            return None;
        }
    };
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "#[derive(ShardedCollection)] does not support generic enums: a collection's members \
             are fixed entities; name them in the variants",
        );
    }
    if data.variants.is_empty() {
        cx.error_spanned_by(
            &input.ident,
            "a collection needs at least one member: add a variant per entity, e.g. \
             `Game(Game)`",
        );
    }
    let mut members = Vec::new();
    for variant in &data.variants {
        match &variant.fields {
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => members.push(Member {
                variant: &variant.ident,
                ty: &fields.unnamed[0].ty,
            }),
            Fields::Unit => cx.error_spanned_by(
                &variant.ident,
                format!(
                    "each variant of a collection holds one entity: write `{0}({0})` with the \
                     entity's type",
                    variant.ident
                ),
            ),
            fields => cx.error_spanned_by(
                fields,
                "each variant of a collection holds exactly one entity, as a tuple variant: \
                 `Score(Score)`",
            ),
        }
    }
    Some(Collection {
        ident: &input.ident,
        members,
        rt,
    })
}

fn expand(c: &Collection) -> TokenStream {
    let rt = &c.rt;
    let ident = c.ident;
    let name = ident.to_string();
    let Some(first) = c.members.first() else {
        return TokenStream::new();
    };
    let first_ty = first.ty;
    let types: Vec<&Type> = c.members.iter().map(|m| m.ty).collect();
    let schema = |ty: &Type| quote!(<#ty as #rt::ShardedEntity>::SCHEMA);
    let schemas: Vec<TokenStream> = types.iter().map(|ty| schema(ty)).collect();
    // Each member's check, in variant order: an item is the first member's that recognises
    // it (by its tag, or by its keys in a table whose items carry none).
    let member_checks: Vec<TokenStream> = types
        .iter()
        .map(|ty| quote!(<#ty as #rt::ShardedEntity>::__recognize as #rt::Recognize))
        .collect();
    let decode = c.members.iter().enumerate().map(|(i, m)| {
        let (variant, ty) = (m.variant, m.ty);
        quote! {
            ::core::result::Result::Ok(#i) => <#ty as #rt::ShardedEntity>::__decode(item).map(Self::#variant),
        }
    });
    let placement = c.members.iter().enumerate().map(|(i, m)| {
        let ty = m.ty;
        quote! {
            ::core::result::Result::Ok(#i) => <#ty as #rt::ShardedEntity>::__placement(item),
        }
    });
    // One membership impl per type: a repeated type is reported by the entity-name check.
    let mut seen: Vec<String> = Vec::new();
    let memberships = c.members.iter().filter_map(|m| {
        let ty = m.ty;
        let key = quote!(#ty).to_string();
        if seen.contains(&key) {
            return None;
        }
        seen.push(key);
        // The bound (higher-ranked, so a member that is no entity makes the impl inapplicable
        // instead of ill-formed) leaves "not a sharded entity" to the schema checks below,
        // which report it once, at the member's type.
        Some(quote_spanned! {ty.span()=>
            #[automatically_derived]
            impl #rt::CollectionMember<#ident> for #ty where for<'__a> #ty: #rt::ShardedEntity {}
        })
    });
    let first_schema = schema(first_ty);
    let per_key_checks = c.members.iter().map(|m| per_key_member(rt, ident, m));
    let checks = c.members.iter().enumerate().skip(1).map(|(i, m)| {
        let ty = m.ty;
        let span = ty.span();
        let rt_here = respan(rt, span);
        let member_schema = schema(ty);
        let earlier = c.members[..i].iter().skip(1).map(|e| {
            let e_schema = schema(e.ty);
            quote_spanned! {span=> const _: () = #rt_here::assert_distinct_entities(#e_schema, #member_schema); }
        });
        quote_spanned! {span=>
            const _: () = #rt_here::assert_collection_member(#first_schema, #member_schema);
            const _: () = #rt_here::assert_same_partition_types::<
                <#ty as #rt_here::ShardedEntity>::__PartitionTypes,
                <#first_ty as #rt_here::ShardedEntity>::__PartitionTypes,
            >();
            #(#earlier)*
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::all)]
        const _: () = {
            static __MEMBERS: &[#rt::Recognize] = &[#(#member_checks),*];

            #[automatically_derived]
            impl #rt::QuerySource for #ident {
                const LAYOUT: &'static #rt::EntitySchema = #first_schema;
                const NAME: &'static str = #name;
                const ENTITIES: &'static [&'static str] = &[#(#schemas.entity),*];

                fn from_source_item(mut item: #rt::Item) -> #rt::Result<Self, #rt::Error> {
                    match #rt::recognize_member(&mut item, #rt::Depth::Whole, __MEMBERS) {
                        #(#decode)*
                        ::core::result::Result::Ok(_) => #rt::never(),
                        ::core::result::Result::Err(not_ours) => #rt::Result::Err(
                            #rt::not_a_member(#name, #first_schema, &item, not_ours),
                        ),
                    }
                }

                fn recognize(
                    item: &mut #rt::Item,
                    depth: #rt::Depth,
                ) -> #rt::Result<usize, #rt::NotOurs> {
                    #rt::recognize_member(item, depth, __MEMBERS)
                }

                fn placement(
                    item: &#rt::Item,
                ) -> ::core::option::Option<(#rt::String, ::core::option::Option<#rt::String>)> {
                    let mut recognized = item.clone();
                    match #rt::recognize_member(&mut recognized, #rt::Depth::Keys, __MEMBERS) {
                        #(#placement)*
                        _ => ::core::option::Option::None,
                    }
                }
            }

            #[automatically_derived]
            impl #rt::ShardedCollection for #ident {
                const MEMBERS: &'static [&'static #rt::EntitySchema] = &[#(#schemas),*];
            }

            #(#memberships)*
            #(#per_key_checks)*
            #(#checks)*
        };
    }
}

/// Refuses, at the member's type, a member whose layout is decided per logical key (`max_n`
/// on its #[pk]); the check and its message are `assert_member_not_per_key`'s.
fn per_key_member(rt: &TokenStream, collection: &Ident, member: &Member) -> TokenStream {
    let ty = member.ty;
    let written = quote!(#ty).to_string().replace(' ', "");
    let collection = collection.to_string();
    let span = ty.span();
    let rt_here = respan(rt, span);
    quote_spanned! {span=>
        const _: () = #rt_here::assert_member_not_per_key(
            <#ty as #rt_here::ShardedEntity>::SCHEMA, #written, #collection,
        );
    }
}
