//! The key builders and parsers: `pk`, `pk_logical`, `pk_on_shard`, `pk_all_shards`,
//! `shard_for`, `parse_pk`, the same for each GSI (`gsi1_pk`, ..), `sk`, its prefixes and
//! `parse_sk`, and the `item_keys` of the `ShardedEntity` impl.
//!
//! The bodies pass the key's schema to the runtime's `layout` functions, which read the shard
//! count, the hashed fields and the template there: the attribute's numbers are written once,
//! in the schema.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::conditions::sort_conditions;
use super::params::Ctx;
use crate::entity::names;
use crate::entity::resolve::{push_new, KeyField, RPartition, RSegment, RShard, RSort};

/// The generated template static of a key function: `pk` -> `__PK_TEMPLATE`, `gsi1_pk` ->
/// `__GSI1_PK_TEMPLATE`.
pub(super) fn template_ident(attr_fn: &str) -> Ident {
    Ident::new(
        &format!("__{}_TEMPLATE", attr_fn.to_uppercase()),
        Span::call_site(),
    )
}

/// The generated `EntityKey` constant of a key function: `pk` -> `__PK`, `gsi1_sk` ->
/// `__GSI1_SK`: its template with the entity and attribute its errors name.
pub(super) fn key_ident(attr_fn: &str) -> Ident {
    Ident::new(&format!("__{}", attr_fn.to_uppercase()), Span::call_site())
}

/// The `KeyContext` a runtime key builder reports errors with (`attribute`: the expression
/// of the attribute's name, see [`Ctx::key_attr`]).
pub(super) fn key_context(cx: &Ctx, attribute: TokenStream) -> TokenStream {
    let rt = cx.rt;
    let entity_name = &cx.r.entity_name;
    quote!(#rt::KeyContext { entity: #entity_name, attribute: #attribute })
}

/// The expression naming the partition key schema of the GSI at `position` in
/// `EntitySchema::gsis` (the order of `Resolved::gsis`).
pub(super) fn gsi_key_schema(position: usize) -> TokenStream {
    quote!(__SCHEMA.gsis[#position].pk)
}

/// One partition key's functions, and what they share.
struct PartitionFns<'c, 'a> {
    cx: &'c Ctx<'a>,
    pk: &'c RPartition<'a>,
    /// `pk` or `gsi1_pk`.
    fn_name: &'c str,
    /// The key's schema in the generated `__SCHEMA`.
    key: TokenStream,
    template_fields: Vec<KeyField<'a>>,
    template_params: Vec<TokenStream>,
    template_values: TokenStream,
    source: String,
    /// The physical form's shard part for docs: `#<shard>`, `#SHARD_<shard>`.
    shard_form: String,
}

/// Builders and parser of one partition key. `fn_name` is `pk` or `gsi1_pk`; `prefix` is ``
/// or `gsi1_` (for `shard_for`); `key` names the key's schema in the generated `__SCHEMA`.
pub(super) fn partition_methods(
    cx: &Ctx,
    pk: &RPartition,
    fn_name: &str,
    prefix: &str,
    key: TokenStream,
) -> TokenStream {
    let template_fields: Vec<KeyField> = pk.template.fields().collect();
    let fns = PartitionFns {
        cx,
        pk,
        fn_name,
        key,
        template_params: cx.params(template_fields.iter().copied()),
        template_fields,
        template_values: cx.template_values(&pk.template),
        source: pk.template.source(),
        shard_form: shard_form(pk),
    };
    let mut out = fns.logical();
    out.extend(fns.physical(prefix));
    out.extend(fns.shards());
    out.extend(fns.parser());
    out
}

impl PartitionFns<'_, '_> {
    /// The logical key: the template alone, no shard.
    fn logical(&self) -> TokenStream {
        let (cx, rt, source) = (self.cx, self.cx.rt, &self.source);
        let entity_ident = &cx.r.entity.ident;
        let key = key_ident(self.fn_name);
        let logical = format_ident!("{}_logical", self.fn_name);
        let (params, values) = (&self.template_params, &self.template_values);
        let doc =
            format!("The logical key `{source}` of `{entity_ident}`, without a shard suffix.");
        let body = cx.body(quote!(#key.build(#values)));
        quote! {
            #[doc = #doc]
            pub fn #logical(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                #body
            }
        }
    }

    /// The physical key of one item (`pk`), and for a hashed key `shard_for`.
    fn physical(&self, prefix: &str) -> TokenStream {
        let (cx, rt, pk, source, n) = (self.cx, self.cx.rt, self.pk, &self.source, self.pk.n);
        let shard_form = &self.shard_form;
        let entity_ident = &cx.r.entity.ident;
        let entity_name = &cx.r.entity_name;
        let (key, template_values) = (&self.key, &self.template_values);
        let build = Ident::new(self.fn_name, Span::call_site());
        match &pk.shard {
            RShard::None => {
                let doc =
                    format!("Builds the partition key `{source}` of `{entity_ident}` (unsharded).");
                let key = key_ident(self.fn_name);
                let body = cx.body(quote!(#key.build(#template_values)));
                let params = &self.template_params;
                quote! {
                    #[doc = #doc]
                    pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                        #body
                    }
                }
            }
            RShard::Hash(fields) => {
                let shard_for = format_ident!("{}shard_for", prefix);
                let params = cx.params(pk.physical_args());
                let names: Vec<String> = fields.iter().map(|f| f.ident().to_string()).collect();
                let shard_values = cx.values(fields.iter().copied());
                let shard_params = cx.params(fields.iter().copied());
                let doc = format!(
                    "Builds the physical partition key `{source}{shard_form}` of `{entity_ident}`; the shard is \
                     `hash({}) mod {n}` (see `sharded::hash`).{}",
                    names.join(", "),
                    per_key_note(pk),
                );
                let shard_doc = format!(
                    "The shard (`0..{n}`) that `hash({}) mod {n}` gives these values.",
                    names.join(", ")
                );
                let build_body = cx.body(quote! {
                    #rt::layout::item_key(#entity_name, &#key, #template_values, #rt::ShardBy::Fields(#shard_values))
                });
                let shard_body =
                    cx.body(quote!(#rt::layout::shard_for(#entity_name, &#key, #shard_values)));
                quote! {
                    #[doc = #doc]
                    pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                        #build_body
                    }
                    #[doc = #shard_doc]
                    pub fn #shard_for(#(#shard_params),*) -> #rt::Result<u32, #rt::KeyError> {
                        #shard_body
                    }
                }
            }
            RShard::Random(sk_fields) => {
                let params = cx.params(pk.physical_args());
                let doc = format!(
                    "Builds the physical partition key `{source}{shard_form}` of one `{entity_ident}`: the shard \
                     (`0..{n}`) is the spec hash of the item's logical key and sort key (`shard = \"random\"`), \
                     so items spread evenly and one item is always on the same shard.{}",
                    per_key_note(pk),
                );
                let sort_key = random_sort_key(cx, sk_fields);
                let body = cx.body(quote! {
                    #sort_key
                    #rt::layout::item_key(#entity_name, &#key, #template_values, #rt::ShardBy::SortKey(&__sk))
                });
                quote! {
                    #[doc = #doc]
                    pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                        #body
                    }
                }
            }
            // The shard of an identity-sharded GSI key comes from the whole item (`item_keys`).
            RShard::Identity => TokenStream::new(),
        }
    }

    /// `pk_on_shard` (sharded keys) and `pk_all_shards`.
    fn shards(&self) -> TokenStream {
        let (cx, rt, source, n) = (self.cx, self.cx.rt, &self.source, self.pk.n);
        let entity_ident = &cx.r.entity.ident;
        let entity_name = &cx.r.entity_name;
        let (key, params, values) = (&self.key, &self.template_params, &self.template_values);
        let on_shard = format_ident!("{}_on_shard", self.fn_name);
        let all_shards = format_ident!("{}_all_shards", self.fn_name);
        let mut out = TokenStream::new();
        let sharded = self.pk.sharded();
        let shard_form = &self.shard_form;
        if sharded {
            let doc = format!("Builds the physical partition key `{source}{shard_form}` of `{entity_ident}` on the given shard (`0..{n}`).");
            let shard = cx.fresh("shard");
            let body =
                cx.body(quote!(#rt::layout::key_on_shard(#entity_name, &#key, #values, #shard)));
            out.extend(quote! {
                #[doc = #doc]
                pub fn #on_shard(#(#params,)* #shard: u32) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #body
                }
            });
        }
        let all_doc = format!(
            "Every physical partition key of the logical key `{source}`: {} (what a scatter-gather query reads).",
            if sharded { format!("`{source}{}` for each shard `0..{n}`", shard_form) } else { "just the one, it is unsharded".to_owned() }
        );
        let body = cx.body(quote!(#rt::layout::all_shards(#entity_name, &#key, #values)));
        out.extend(quote! {
            #[doc = #all_doc]
            pub fn #all_shards(#(#params),*) -> #rt::Result<#rt::ShardKeys, #rt::KeyError> {
                #body
            }
        });
        out
    }

    /// `parse_pk`: a physical key back into its fields (and shard). A bucketed field's key
    /// holds its bucket, not its value.
    fn parser(&self) -> TokenStream {
        let (cx, rt, pk, source) = (self.cx, self.cx.rt, self.pk, &self.source);
        let entity_ident = &cx.r.entity.ident;
        let entity_name = &cx.r.entity_name;
        let key = &self.key;
        let parse = format_ident!("parse_{}", self.fn_name);
        let (mut field_types, generics) = cx.decoded_types(&self.template_fields);
        for (i, ty) in field_types.iter_mut().enumerate() {
            if pk.template.is_bucket(i) {
                *ty = quote!(#rt::Bucket);
            }
        }
        let decodes = field_types.iter().enumerate().map(|(i, ty)| {
            if pk.template.is_bucket(i) {
                quote!(__parsed.bucket(#i)?)
            } else {
                quote!((&#rt::DecodeProbe::<#ty>::new()).decode_at(&__parsed, #i)?)
            }
        });
        let sharded = pk.sharded();
        let (ret, shard_part) = if sharded {
            (
                quote!((#(#field_types,)* u32)),
                quote!(__parsed.shard.unwrap_or(0)),
            )
        } else {
            (quote!((#(#field_types,)*)), quote!())
        };
        let parse_doc = format!(
            "Parses a physical key of `{entity_ident}` ({}) back into its fields{} (template `{source}`); \
             refuses keys that do not match.",
            pk.attribute,
            if sharded { " and shard number" } else { "" }
        );
        let body = cx.body(quote! {
            let __parsed = #rt::layout::parse(#entity_name, &#key, key)?;
            #rt::Result::Ok((#(#decodes,)* #shard_part))
        });
        quote! {
            #[doc = #parse_doc]
            pub fn #parse #generics(key: &str) -> #rt::Result<#ret, #rt::KeyError> {
                #body
            }
        }
    }
}

/// For the docs of a key whose layout is decided per logical key (`max_n`): what its builder
/// gives is the place under the default `n`.
fn per_key_note(pk: &RPartition) -> String {
    match pk.max_n {
        Some(max_n) => format!(
            " This is the item's place under the default layout of `n = {}` shards: a logical \
             key the table's layout directory lists as widened has its own count, up to \
             `max_n = {max_n}`.",
            pk.n
        ),
        None => String::new(),
    }
}

/// The shard part of a partition key's physical form, for docs: `#<shard>` by default,
/// `#SHARD_<shard>` for `suffix = "#SHARD_{shard}"`.
fn shard_form(pk: &RPartition) -> String {
    let declared = pk
        .suffix
        .map_or_else(|| "#{shard}".to_owned(), |s| s.value());
    match declared.rfind('{') {
        Some(at) => format!("{}<shard>", &declared[..at]),
        None => declared,
    }
}

/// The sort key a randomly sharded key builder hashes with the logical key (the item's
/// identity), built from the builder's parameters into `__sk`.
pub(super) fn random_sort_key(cx: &Ctx, sk_fields: &[KeyField]) -> TokenStream {
    let rt = cx.rt;
    let sk_args = cx.names(sk_fields.iter().copied());
    quote!(let __sk: #rt::String = Self::sk(#(#sk_args),*)?;)
}

/// The builder, prefixes, typed conditions and parser of one sort key (`sk`, `gsi1_sk`).
pub(super) fn sort_methods(cx: &Ctx, sk: &RSort, fn_name: &str) -> TokenStream {
    let rt = cx.rt;
    let key = key_ident(fn_name);
    let source = sk.template.source();
    let fields: Vec<KeyField> = sk.template.fields().collect();
    let params = cx.params(fields.iter().copied());
    let values = cx.values(fields.iter().copied());
    let build = Ident::new(fn_name, Span::call_site());
    let parse = format_ident!("parse_{}", fn_name);
    let entity_ident = &cx.r.entity.ident;
    let (types, generics) = cx.decoded_types(&fields);
    let decodes = types
        .iter()
        .enumerate()
        .map(|(i, ty)| quote!((&#rt::DecodeProbe::<#ty>::new()).decode_at(&__parsed, #i)?));
    let doc = format!("Builds {} `{source}` of `{entity_ident}`.", sk.attribute);
    let parse_doc = format!(
        "Parses {} of `{entity_ident}` back into its fields (template `{source}`); refuses keys that do not match.",
        sk.attribute
    );
    let mut emitted = HashSet::new();
    let prefixes = sort_prefixes(cx, sk, fn_name, &key, &mut emitted);
    let conditions = sort_conditions(cx, sk, fn_name, &key);
    let build_body = cx.body(quote!(#key.build(#values)));
    let parse_body = cx.body(quote! {
        let __parsed = #key.parse(key)?;
        #rt::Result::Ok((#(#decodes,)*))
    });
    quote! {
        #[doc = #doc]
        pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
            #build_body
        }
        #prefixes
        #conditions
        #[doc = #parse_doc]
        pub fn #parse #generics(key: &str) -> #rt::Result<(#(#types,)*), #rt::KeyError> {
            #parse_body
        }
    }
}

/// `sk_prefix()` (the leading literal), `sk_all()` (the condition "every key of the entity")
/// and `sk_prefix_<field>(..)` for every field that does not end the template (each name
/// once, see [`sort_conditions`]).
fn sort_prefixes(
    cx: &Ctx,
    sk: &RSort,
    fn_name: &str,
    key: &Ident,
    emitted: &mut HashSet<String>,
) -> TokenStream {
    let rt = cx.rt;
    let source = sk.template.source();
    let segments = &sk.template.segments;
    let mut out = TokenStream::new();
    if let Some(RSegment::Literal(literal)) = segments.first() {
        if segments.len() > 1 {
            let name = format_ident!("{}_prefix", fn_name);
            let doc = format!(
                "The constant prefix `{literal}` of every key of this entity in {} (template `{source}`).",
                sk.attribute
            );
            let body = cx.body(quote!(#literal));
            let all = format_ident!("{}_all", fn_name);
            let all_doc = format!(
                "Sort-key condition for `Query::sk`: every item of this entity, whatever its \
                 fields (`begins_with` `{literal}` on {}, template `{source}`). What picks one \
                 entity's items out of a collection query.",
                sk.attribute
            );
            let all_body = cx.body(quote!(#key.all()));
            out.extend(quote! {
                #[doc = #doc]
                pub fn #name() -> &'static str { #body }
                #[doc = #all_doc]
                pub fn #all() -> #rt::SortKeyCondition { #all_body }
            });
        }
    }
    let mut fields_so_far: Vec<KeyField> = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let RSegment::Field(field) = segment else {
            continue;
        };
        fields_so_far.push(*field);
        // A field that ends the template has no prefix beyond the whole key.
        let Some(RSegment::Literal(_)) = segments.get(i + 1) else {
            continue;
        };
        let count = i + 2;
        let written = field.ident();
        // A field of underscores only has no name part (refused and reported): its prefix
        // would be `sk_prefix()` again.
        if names::part(written).is_empty() {
            continue;
        }
        let name = names::sort_prefix(fn_name, written);
        if !emitted.insert(name.clone()) {
            continue;
        }
        let name = names::ident(&name, written.span());
        let eq = names::sort_builder(fn_name);
        let params = cx.params(fields_so_far.iter().copied());
        let values = cx.values(fields_so_far.iter().copied());
        let doc = format!(
            "The prefix of {} shared by every item with these values, up to and including `{{{written}}}` \
             and the separator after it (template `{source}`): the key of a cursor or a log line. \
             A query's condition on it is the typed `{eq}()` with `.eq(..)` on each of these fields.",
            sk.attribute
        );
        let body = cx.body(quote!(#key.prefix(#values, #count)));
        out.extend(quote! {
            #[doc = #doc]
            pub fn #name(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                #body
            }
        });
    }
    out
}

/// The body of `ShardedEntity::item_keys`: every key attribute of one item, built by the
/// generated builders from its fields.
pub(super) fn item_keys_body(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let r = cx.r;
    // Without a partition key the entity is refused (reported); the body cannot run.
    let Some(pk) = &r.pk else {
        return quote!(#rt::never());
    };
    let pk_args = cx.self_args(pk.physical_args());
    let pk_expr = quote!(Self::pk(#(#pk_args),*)?);
    let sk_expr = match &r.sk {
        Some(sk) => {
            let args = cx.self_args(sk.template.fields());
            quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
        }
        None => quote!(::core::option::Option::None),
    };
    let needs_identity = r
        .gsis
        .iter()
        .any(|g| matches!(g.pk.shard, RShard::Identity))
        || !r.entity.attribute_gsis.is_empty();
    let identity = if needs_identity {
        let logical_args = cx.self_args(pk.template.fields());
        quote! {
            let __identity = #rt::identity(&Self::pk_logical(#(#logical_args),*)?, __sk.as_deref());
        }
    } else {
        quote!()
    };
    let gsis = r.gsis.iter().enumerate().map(|(position, g)| {
        let name = format!("gsi{}", g.number);
        let pk_fn = format_ident!("{}_pk", name);
        let on_shard = format_ident!("{}_pk_on_shard", name);
        let pk_value = match &g.pk.shard {
            RShard::Identity => {
                let args = cx.self_args(g.pk.template.fields());
                let key = gsi_key_schema(position);
                quote!(Self::#on_shard(#(#args,)* #rt::layout::identity_shard(&#key, &__identity))?)
            }
            _ => {
                let args = cx.self_args(g.pk.physical_args());
                quote!(Self::#pk_fn(#(#args),*)?)
            }
        };
        let sk_value = match &g.sk {
            Some(sk) => {
                let sk_fn = format_ident!("{}_sk", name);
                let args = cx.self_args(sk.template.fields());
                quote!(::core::option::Option::Some(Self::#sk_fn(#(#args),*)?))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!((#pk_value, #sk_value))
    });
    let gsis = gsis.chain(super::attribute_gsi::item_keys(cx));
    quote! {
        let __sk: ::core::option::Option<#rt::String> = #sk_expr;
        #identity
        let __pk: #rt::String = #pk_expr;
        let __gsis = #rt::Vec::from([#(#gsis),*]);
        #rt::Result::Ok(#rt::ItemKeys::new(__pk, __sk, __gsis))
    }
}

/// `ShardedEntity::__key_attributes`: the key fields of a stored item, decoded from its
/// partition key (under whichever layout it is stored: current, previous, legacy) and sort
/// key, each only from its canonical form, and written as the attributes serde stores them
/// as. What completes an untagged item written by another service that carries its key fields
/// only in its keys. A bucketed field's key holds its bucket, not its value, and a field
/// stored its own way (`#[serde(with)]`) or not at all is not filled in: the item must carry
/// those.
pub(super) fn key_attributes_fn(cx: &Ctx) -> TokenStream {
    let (rt, r) = (cx.rt, cx.r);
    if cx.fallback || r.pk.is_none() {
        return TokenStream::new();
    }
    let entity_name = &r.entity_name;
    let mut fields: Vec<KeyField> = Vec::new();
    if let Some(pk) = &r.pk {
        push_new(&mut fields, pk.template.fields());
        if let Some(crate::entity::resolve::RPrevious::Legacy(legacy)) = &pk.previous {
            push_new(&mut fields, legacy.fields());
        }
    }
    if let Some(sk) = &r.sk {
        push_new(&mut fields, sk.template.fields());
    }
    let arms = fields.iter().filter_map(|f| {
        let KeyField::Field(field) = f else {
            return None;
        };
        if !field.serde_attribute || field.serde_with {
            return None;
        }
        let (name, ty, stored) = (field.ident.to_string(), &field.ty, &field.serde_name.value);
        Some(quote! {
            (#name, #stored, (&#rt::DecodeProbe::<#ty>::new()).attribute_decoder())
        })
    });
    let sk_key = match &r.sk {
        Some(_) => quote!(::core::option::Option::Some(&__SK)),
        None => quote!(::core::option::Option::None),
    };
    // The walk over the keys is the runtime's; only the decoders, which know the types, are
    // here.
    quote! {
        fn __key_attributes(
            pk: &str,
            sk: ::core::option::Option<&str>,
        ) -> #rt::Result<#rt::Item, #rt::KeyError> {
            #rt::key_attributes((#entity_name, &__SCHEMA.pk), #sk_key, pk, sk, &[#(#arms),*])
        }
    }
}
