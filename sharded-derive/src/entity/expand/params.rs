//! How key fields become the parameters and arguments of generated functions: `&str` for a
//! `String`, by value for an integer or `bool`, by reference otherwise (see
//! [`crate::internals::types::param_kind`]), and the bodies the fallback replaces.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use crate::entity::model::KeyAttr;
use crate::entity::resolve::{KeyField, RSegment, RTemplate, Resolved};
use crate::internals::types::{param_kind, Param};

/// What every generator reads: the resolved entity, the runtime path, and whether the input
/// was refused.
pub(super) struct Ctx<'a> {
    pub r: &'a Resolved<'a>,
    pub rt: &'a TokenStream,
    /// Validation failed: emit signatures with bodies that cannot run.
    pub fallback: bool,
}

impl<'a> Ctx<'a> {
    /// The name of the table attribute `attr`, as generated code reads it from the entity's
    /// table (`__TABLE`, the `TableSchema` of `#[sharded(table = ..)]` or the default).
    pub fn key_attr(&self, attr: KeyAttr) -> TokenStream {
        match attr {
            KeyAttr::Pk => quote!(__TABLE.partition_key),
            KeyAttr::Sk => quote!(__TABLE.sort_key),
            KeyAttr::GsiPk(n) => quote!(__TABLE.index(#n).partition_key),
            KeyAttr::GsiSk(n) => quote!(__TABLE.index(#n).sort_key),
        }
    }

    /// The name of index `number`: the entity's `index = ".."`, or the table's.
    pub fn index_name(&self, number: u8, explicit: Option<&syn::LitStr>) -> TokenStream {
        match explicit {
            Some(name) => quote!(#name),
            None => quote!(__TABLE.index(#number).index),
        }
    }

    /// A name for a parameter generated code adds beside the key fields (`shard`, `repo`,
    /// `key`): `base` itself, or, when a key field has that name, the first of `base_value`,
    /// `__base` that none has, so a field named `shard` never binds a name twice.
    pub fn fresh(&self, base: &str) -> Ident {
        let taken = |name: &str| self.r.entity.fields.iter().any(|f| f.ident == name);
        [
            base.to_owned(),
            format!("{base}_value"),
            format!("__{base}"),
        ]
        .into_iter()
        .find(|name| !taken(name))
        .map_or_else(
            || format_ident!("__{}_", base),
            |name| Ident::new(&name, Span::call_site()),
        )
    }

    /// The body of a generated function, or one that cannot run in the fallback (the crate
    /// does not compile, so it never runs).
    pub fn body(&self, body: TokenStream) -> TokenStream {
        if self.fallback {
            let rt = self.rt;
            quote!(#rt::never())
        } else {
            body
        }
    }

    /// `name: &str`, `score: u64`, `at: &DateTime<Utc>`.
    pub fn param(&self, field: KeyField) -> TokenStream {
        let name = field.ident();
        let ty = self.param_type(field);
        quote!(#name: #ty)
    }

    /// `&str`, `u64`, `&DateTime<Utc>`; after a refused input, an unknown name accepts any
    /// value.
    pub fn param_type(&self, field: KeyField) -> TokenStream {
        match field.ty() {
            Some(ty) => match param_kind(ty) {
                Param::Str => quote!(&str),
                Param::Copy => quote!(#ty),
                Param::Ref => quote!(&#ty),
            },
            None => quote!(impl ::core::marker::Sized),
        }
    }

    /// The parameters for `fields`. After a refused input, two names may resolve to one field
    /// (`{gme_id}#{game_id}`): the repeated parameter is `_`, so the signature keeps the
    /// arity the user wrote without binding a name twice.
    pub fn params(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> Vec<TokenStream> {
        let mut seen: Vec<KeyField> = Vec::new();
        fields
            .into_iter()
            .map(|f| {
                if seen.iter().any(|s| s.same(&f)) {
                    let ty = self.param_type(f);
                    return quote!(_: #ty);
                }
                seen.push(f);
                self.param(f)
            })
            .collect()
    }

    /// The same argument taken from `self`.
    pub fn self_arg(&self, field: KeyField) -> TokenStream {
        let name = field.ident();
        match field.ty().map(param_kind) {
            Some(Param::Copy) => quote!(self.#name),
            _ => quote!(&self.#name),
        }
    }

    /// The argument for `field` from a local of its name (`value` or `&value`), as
    /// [`Ctx::self_arg`] takes it from `self`.
    pub fn local_arg(&self, field: KeyField) -> TokenStream {
        let name = field.ident();
        match field.ty().map(param_kind) {
            Some(Param::Copy) => quote!(#name),
            _ => quote!(&#name),
        }
    }

    pub fn self_args(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> Vec<TokenStream> {
        fields.into_iter().map(|f| self.self_arg(f)).collect()
    }

    /// `&[&a, &b]` for a `&[&dyn KeyPart]` argument.
    pub fn values(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> TokenStream {
        let rt = self.rt;
        let parts = fields.into_iter().map(|f| {
            let name = f.ident();
            quote!((&#rt::Probe(&#name)).part())
        });
        quote!(&[#(#parts),*])
    }

    /// An expression of type `&T` for the parameter of `field` (of type `T`): the parameter
    /// itself when it is taken by reference, else a borrow of it.
    pub fn value_ref(&self, field: KeyField, name: &Ident) -> TokenStream {
        match field.ty().map(param_kind) {
            Some(Param::Str | Param::Ref) => quote!(#name),
            _ => quote!(&#name),
        }
    }

    /// `&[..]` for the fields of `template`, as the runtime's template builders take them: a
    /// bucketed field (`{at:day}`) is written as the label of its bucket.
    pub fn template_values(&self, template: &RTemplate<'a>) -> TokenStream {
        let rt = self.rt;
        let parts = template.segments.iter().filter_map(|s| match s {
            RSegment::Literal(_) => None,
            RSegment::Field(f) => {
                let name = f.ident();
                Some(quote!((&#rt::Probe(&#name)).part()))
            }
            RSegment::Bucket(f, granularity) => {
                let value = self.value_ref(*f, f.ident());
                let variant = Ident::new(&format!("{granularity:?}"), Span::call_site());
                Some(quote! {
                    &#rt::BucketLabel::new((&#rt::Probe(#value)).time(), #rt::Granularity::#variant)
                })
            }
        });
        quote!(&[#(#parts),*])
    }

    /// The names of `fields`, as arguments of another generated function.
    pub fn names(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> Vec<TokenStream> {
        fields
            .into_iter()
            .map(|f| {
                let name = f.ident();
                quote!(#name)
            })
            .collect()
    }

    /// The types a parser returns, and the generic parameters (`<__Unknown0>`, or nothing)
    /// that stand for the types of unknown names after a refused input.
    pub fn decoded_types(&self, fields: &[KeyField]) -> (Vec<TokenStream>, TokenStream) {
        let mut generics = Vec::new();
        let types = fields
            .iter()
            .map(|f| match f.ty() {
                Some(ty) => quote!(#ty),
                None => {
                    let g = format_ident!("__Unknown{}", generics.len());
                    generics.push(g.clone());
                    quote!(#g)
                }
            })
            .collect();
        let generics = if generics.is_empty() {
            TokenStream::new()
        } else {
            quote!(<#(#generics),*>)
        };
        (types, generics)
    }
}
