//! `#[derive(ShardedProjection)]`: a struct of some of an entity's fields, read with a
//! `ProjectionExpression`.
//!
//! Parse: `#[projection(of = Entity)]` and the fields' stored names (serde's renames applied,
//! as the entity derive applies them). Validate: the shape. Expand: the `Projection` impl,
//! and one `const` check per field, evaluated by the compiler against the attributes the
//! entity's derive listed, re-spanned at the field so a name the entity lacks is reported
//! there.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::internals::attr::crate_path;
use crate::internals::ctxt::Ctxt;
use crate::internals::serde_attr::{serde_field, serde_name, serde_rename_all};
use crate::internals::spanned::respan;
use crate::internals::spanned::Sp;

const DERIVE: &str = "ShardedProjection";
const PROJECTION: &str = "projection";
const OF: &str = "of";

struct Projection<'a> {
    ident: &'a Ident,
    entity: Type,
    /// The stored attribute names, with the span of the field (or its rename).
    attributes: Vec<Sp<String>>,
    rt: TokenStream,
}

pub fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let projection = parse(&cx, input);
    match (cx.check(), projection) {
        (Ok(()), Some(projection)) => expand(&projection),
        (Err(errors), _) => errors.to_compile_error(),
        (Ok(()), None) => TokenStream::new(),
    }
}

fn parse<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Projection<'a>> {
    let rt = match crate_path(cx, &input.attrs, DERIVE) {
        Some(path) => quote!(#path::__private),
        None => quote!(::sharded::__private),
    };
    let entity = entity_type(cx, input);
    let named = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named),
            _ => {
                cx.error_spanned_by(
                    &input.ident,
                    "#[derive(ShardedProjection)] needs named fields: each field names an \
                     attribute of the entity; write `struct Name { field: Type, .. }`",
                );
                None
            }
        },
        Data::Enum(data) => {
            cx.error_spanned_by(
                data.enum_token,
                "#[derive(ShardedProjection)] works on a struct of some of the entity's fields, \
                 not an enum (several entities in one answer: #[derive(ShardedCollection)])",
            );
            None
        }
        Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "#[derive(ShardedProjection)] works on a struct with named fields, not a union",
            );
            None
        }
    };
    if !input.generics.params.is_empty() {
        cx.error_spanned_by(
            &input.generics,
            "#[derive(ShardedProjection)] does not support generic structs: the attributes a \
             projection reads are fixed at compile time",
        );
    }
    let rename_all = serde_rename_all(&input.attrs);
    let mut attributes = Vec::new();
    for field in named?.named.iter() {
        let Some(ident) = &field.ident else { continue };
        let serde = serde_field(&field.attrs);
        if serde.flatten {
            cx.error_spanned_by(
                ident,
                "a projection lists the attributes it reads, and a #[serde(flatten)] field names \
                 none: list the fields you need one by one",
            );
        } else if !serde.skip {
            attributes.push(serde_name(ident, &serde, rename_all.as_ref()));
        }
    }
    if attributes.is_empty() && !cx.has_errors() {
        cx.error_spanned_by(
            &input.ident,
            "a projection reads at least one attribute: add the entity's fields you need",
        );
    }
    Some(Projection {
        ident: &input.ident,
        entity: entity?,
        attributes,
        rt,
    })
}

/// The `Entity` of `#[projection(of = Entity)]`.
fn entity_type(cx: &Ctxt, input: &DeriveInput) -> Option<Type> {
    let mut entity: Option<Type> = None;
    let mut attrs = input.attrs.iter().filter(|a| a.path().is_ident(PROJECTION));
    let Some(attr) = attrs.next() else {
        cx.error_spanned_by(
            &input.ident,
            "missing #[projection(of = Entity)]: name the entity this struct projects, e.g. \
             #[projection(of = Score)]",
        );
        return None;
    };
    for extra in attrs {
        cx.error_spanned_by(
            extra.path(),
            "duplicate #[projection(...)] attribute: a projection has one entity",
        );
    }
    let result = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident(OF) {
            let ty: Type = meta.value()?.parse()?;
            if entity.replace(ty).is_some() {
                return Err(meta.error("duplicate `of`: a projection has one entity"));
            }
            Ok(())
        } else {
            Err(meta.error(
                "#[projection(...)] takes one key, `of = Entity`: the entity this struct projects",
            ))
        }
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    if entity.is_none() {
        cx.error_spanned_by(
            attr,
            "#[projection(...)] needs `of = Entity`: the entity this struct projects",
        );
    }
    entity
}

fn expand(p: &Projection) -> TokenStream {
    let rt = &p.rt;
    let ident = p.ident;
    let entity = &p.entity;
    let names = p.attributes.iter().map(|a| &a.value);
    let checks = p.attributes.iter().map(|attribute| {
        let span = attribute.span;
        let name = &attribute.value;
        let rt_here = respan(rt, span);
        quote_spanned! {span=>
            const _: () = #rt_here::assert_projected_attribute(
                <#entity as #rt_here::ShardedEntity>::__ATTRIBUTES,
                <#entity as #rt_here::ShardedEntity>::__OPEN,
                #name,
            );
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::all)]
        const _: () = {
            #[automatically_derived]
            impl #rt::ShardedProjection for #ident {
                type Entity = #entity;
                const ATTRIBUTES: &'static [&'static str] = &[#(#names),*];
            }

            #(#checks)*
        };
    }
}
