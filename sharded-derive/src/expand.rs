//! Code generation from the resolved model. Generated code is thin: static key descriptions
//! and typed wrappers around runtime functions, inside `const _: () = { ... };`, reaching the
//! runtime through one hidden path (`::sharded::__private`, or `<crate>::__private` with
//! `#[sharded(crate = "...")]`).
//!
//! The same functions generate the fallback: when validation refused the input, every
//! inherent function is still emitted with its signature and a body that cannot run, plus a
//! stub trait impl (thiserror's `fallback.rs`), so the user sees the one real error and not a
//! "no function `query` found" at every call site.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use crate::model::FieldRole;
use crate::resolve::{
    push_new, KeyField, RPartition, RPrevious, RSegment, RShard, RSort, RTemplate, Resolved,
};

/// How a key field is passed to a generated builder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Param {
    /// `String` fields take `&str`.
    Str,
    /// Small `Copy` scalars are taken by value.
    Copy,
    /// Everything else by reference.
    Ref,
}

/// Classifies a field type by how it is spelled, independently of the spelling's wrapping: a
/// `$ty:ty` fragment of a `macro_rules!` arrives as an invisible group, `(u8)` as parens, and
/// `std::string::String` or `::core::primitive::u64` are recognised by their last segment.
/// A type alias cannot be seen through (a derive sees tokens, not types): it is taken by
/// reference.
pub(crate) fn param_kind(ty: &Type) -> Param {
    match ty {
        Type::Group(group) => param_kind(&group.elem),
        Type::Paren(paren) => param_kind(&paren.elem),
        Type::Path(path) if path.qself.is_none() => match path.path.segments.last() {
            Some(last) if last.arguments.is_empty() => match last.ident.to_string().as_str() {
                "String" => Param::Str,
                "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64"
                | "i128" | "isize" | "bool" => Param::Copy,
                _ => Param::Ref,
            },
            _ => Param::Ref,
        },
        _ => Param::Ref,
    }
}

struct Ctx<'a> {
    r: &'a Resolved<'a>,
    rt: &'a TokenStream,
    /// Validation failed: emit signatures with bodies that cannot run.
    fallback: bool,
}

impl<'a> Ctx<'a> {
    /// The body of a generated function, or one that cannot run in the fallback (the crate
    /// does not compile, so it never runs).
    fn body(&self, body: TokenStream) -> TokenStream {
        if self.fallback {
            quote!(::core::unreachable!())
        } else {
            body
        }
    }

    /// `name: &str`, `score: u64`, `at: &DateTime<Utc>`.
    fn param(&self, field: KeyField) -> TokenStream {
        let name = field.ident();
        let ty = self.param_type(field);
        quote!(#name: #ty)
    }

    /// `&str`, `u64`, `&DateTime<Utc>`; after a refused input, an unknown name accepts any
    /// value.
    fn param_type(&self, field: KeyField) -> TokenStream {
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
    fn params(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> Vec<TokenStream> {
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
    fn self_arg(&self, field: KeyField) -> TokenStream {
        let name = field.ident();
        match field.ty().map(param_kind) {
            Some(Param::Copy) => quote!(self.#name),
            _ => quote!(&self.#name),
        }
    }

    fn self_args(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> Vec<TokenStream> {
        fields.into_iter().map(|f| self.self_arg(f)).collect()
    }

    /// `&[&a, &b]` for a `&[&dyn KeyPart]` argument.
    fn values(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> TokenStream {
        let rt = self.rt;
        let parts = fields.into_iter().map(|f| {
            let name = f.ident();
            quote!((&#rt::Probe(&#name)).part())
        });
        quote!(&[#(#parts),*])
    }

    /// An expression of type `&T` for the parameter of `field` (of type `T`): the parameter
    /// itself when it is taken by reference, else a borrow of it.
    fn value_ref(&self, field: KeyField, name: &Ident) -> TokenStream {
        match field.ty().map(param_kind) {
            Some(Param::Str | Param::Ref) => quote!(#name),
            _ => quote!(&#name),
        }
    }

    /// `&[..]` for the fields of `template`, as the runtime's template builders take them: a
    /// bucketed field (`{at:day}`) is written as the label of its bucket.
    fn template_values(&self, template: &RTemplate<'a>) -> TokenStream {
        let rt = self.rt;
        let parts = template.segments.iter().filter_map(|s| match s {
            RSegment::Literal(_) => None,
            RSegment::Field(f) => {
                let name = f.ident();
                Some(quote!((&#rt::Probe(&#name)).part()))
            }
            RSegment::Bucket(f, granularity) => {
                let value = self.value_ref(*f, f.ident());
                let variant = Ident::new(granularity.variant(), Span::call_site());
                Some(quote! {
                    &#rt::BucketLabel::new((&#rt::Probe(#value)).time(), #rt::Granularity::#variant)
                })
            }
        });
        quote!(&[#(#parts),*])
    }

    /// The names of `fields`, as arguments of another generated function.
    fn names(&self, fields: impl IntoIterator<Item = KeyField<'a>>) -> Vec<TokenStream> {
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
    fn decoded_types(&self, fields: &[KeyField]) -> (Vec<TokenStream>, TokenStream) {
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

/// The generated code of a valid entity.
pub fn expand(r: &Resolved) -> TokenStream {
    surface(r, false, TokenStream::new())
}

/// When validation failed: the errors, the stub trait impl, and every inherent function with
/// a body that cannot run, so the user sees the real errors and nothing else.
pub fn fallback(r: &Resolved, errors: TokenStream) -> TokenStream {
    surface(r, true, errors)
}

fn surface(r: &Resolved, fallback: bool, errors: TokenStream) -> TokenStream {
    let rt = &r.rt;
    let cx = Ctx { r, rt, fallback };
    let ident = &r.entity.ident;
    let entity_name = r.entity.entity_name();

    let mut methods = Vec::new();
    if let Some(pk) = &r.pk {
        methods.push(partition_methods(
            &cx,
            pk,
            "pk",
            "",
            &entity_name,
            quote!(__SCHEMA.pk),
        ));
        methods.push(layout_methods(&cx, pk, &entity_name));
    }
    if let Some(sk) = &r.sk {
        methods.push(sort_methods(&cx, sk, "sk", &entity_name));
    }
    for (position, g) in r.gsis.iter().enumerate() {
        let name = format!("gsi{}", g.number);
        methods.push(partition_methods(
            &cx,
            &g.pk,
            &format!("{name}_pk"),
            &format!("{name}_"),
            &entity_name,
            gsi_key_schema(position),
        ));
        if let Some(sk) = &g.sk {
            methods.push(sort_methods(&cx, sk, &format!("{name}_sk"), &entity_name));
        }
    }
    // Two keys may have been given the same query name (already reported): emit it once.
    let mut query_names: Vec<String> = Vec::new();
    let mut new_query = |pk: &RPartition| {
        let name = pk.query.to_string();
        let new = !query_names.contains(&name);
        query_names.push(name);
        new
    };
    if let Some(pk) = &r.pk {
        if new_query(pk) {
            methods.push(query_method(&cx, pk, None));
        }
        methods.push(repository_methods(&cx, pk));
    }
    for g in &r.gsis {
        if new_query(&g.pk) {
            methods.push(query_method(&cx, &g.pk, Some(g.number)));
        }
    }
    // Time-bucketed keys: `<query>_range`, named after the (deduplicated) query functions.
    let mut range_names: Vec<String> = Vec::new();
    let keys = r.pk.iter().map(|pk| (pk, None));
    for (pk, gsi) in keys.chain(r.gsis.iter().map(|g| (&g.pk, Some(g.number)))) {
        if pk.template.bucket().is_some() && !range_names.contains(&pk.query.to_string()) {
            range_names.push(pk.query.to_string());
            methods.push(range_method(&cx, pk, gsi));
        }
    }

    let item_keys = cx.body(item_keys_body(&cx));
    let previous_pk = match &r.pk {
        Some(pk) if pk.previous.is_some() => {
            let args = cx.self_args(pk.physical_args());
            let body = cx.body(quote!(Self::pk_previous(#(#args),*)));
            quote! {
                fn previous_pk(&self) -> #rt::Result<::core::option::Option<#rt::String>, #rt::KeyError> {
                    #body
                }
            }
        }
        _ => TokenStream::new(),
    };
    let schema = if fallback {
        quote!(&#rt::FALLBACK_SCHEMA)
    } else {
        quote!(&__SCHEMA)
    };
    let shape = entity_shape(&cx);
    let gsi_rewrite = gsi_rewrite(&cx);
    // At module level, outside the anonymous `const` block below, so users can name it.
    let fields = typed_fields(&cx);
    let impls = quote! {
        #shape
        #gsi_rewrite

        #[automatically_derived]
        impl #rt::ShardedEntity for #ident {
            const SCHEMA: &'static #rt::EntitySchema = #schema;

            fn item_keys(&self) -> #rt::Result<#rt::ItemKeys, #rt::KeyError> {
                #item_keys
            }

            #previous_pk
        }

        #[automatically_derived]
        impl #ident {
            #(#methods)*
        }
    };

    if fallback {
        return quote! {
            #errors
            #fields
            #[doc(hidden)]
            #[allow(non_upper_case_globals, unused_variables, unreachable_code, clippy::all)]
            const _: () = {
                #impls
            };
        };
    }

    // Only a valid entity has a `#[pk]` (validation reports its absence).
    let Some(pk) = &r.pk else {
        return TokenStream::new();
    };
    let table = match &r.entity.container.table {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    };
    let mut templates = vec![template_static(rt, "__PK_TEMPLATE", &pk.template)];
    if let Some(RPrevious::Legacy(legacy)) = &pk.previous {
        templates.push(template_static(rt, "__PK_LEGACY_TEMPLATE", legacy));
    }
    if let Some(sk) = &r.sk {
        templates.push(template_static(rt, "__SK_TEMPLATE", &sk.template));
    }
    for g in &r.gsis {
        let number = g.number;
        templates.push(template_static(
            rt,
            &format!("__GSI{number}_PK_TEMPLATE"),
            &g.pk.template,
        ));
        if let Some(sk) = &g.sk {
            templates.push(template_static(
                rt,
                &format!("__GSI{number}_SK_TEMPLATE"),
                &sk.template,
            ));
        }
    }

    let pk_schema = partition_schema(rt, pk, &format_ident!("__PK_TEMPLATE"));
    let pk_schema = match &pk.previous {
        None => pk_schema,
        Some(RPrevious::Shards(old)) => {
            quote!(#pk_schema.with_previous(#rt::PreviousLayout::shards(#old)))
        }
        Some(RPrevious::Legacy(_)) => {
            quote!(#pk_schema.with_previous(#rt::PreviousLayout::legacy(&__PK_LEGACY_TEMPLATE)))
        }
    };
    let sk_schema = match &r.sk {
        Some(sk) => {
            let attr = sk.attribute;
            quote!(::core::option::Option::Some(#rt::SortKeySchema::new(#attr, &__SK_TEMPLATE)))
        }
        None => quote!(::core::option::Option::None),
    };
    let gsi_schemas = r.gsis.iter().map(|g| {
        let number = g.number;
        let index = g.index_name;
        let pk_s = partition_schema(rt, &g.pk, &format_ident!("__GSI{}_PK_TEMPLATE", number));
        let sk_s = match &g.sk {
            Some(sk) => {
                let attr = sk.attribute;
                let t = format_ident!("__GSI{}_SK_TEMPLATE", number);
                quote!(::core::option::Option::Some(#rt::SortKeySchema::new(#attr, &#t)))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#rt::GsiSchema::new(#number, #index, #pk_s, #sk_s))
    });
    let assertions = type_assertions(&cx);
    let roles = role_schema(&cx);

    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::all)]
        const _: () = {
            #[allow(unused_imports)]
            use #rt::{
                DecodeFallback as _, DecodeVia as _, FallbackProbe as _, KeyPartProbe as _,
                NotATime as _, TimeProbe as _, RangeBoundProbe as _, RangeBoundWhole as _,
                RangeBoundFallback as _,
            };
            #(#templates)*

            static __SCHEMA: #rt::EntitySchema = #rt::EntitySchema::new(
                #entity_name,
                #table,
                #pk_schema,
                #sk_schema,
                &[#(#gsi_schemas),*],
            )#roles;

            #assertions
            #impls
        };

        #fields
    }
}

fn template_static(rt: &TokenStream, name: &str, template: &RTemplate) -> TokenStream {
    let name = Ident::new(name, Span::call_site());
    let source = template.source();
    let segments = template.segments.iter().map(|s| match s {
        RSegment::Literal(text) => quote!(#rt::Segment::literal(#text)),
        RSegment::Field(f) => {
            let f = f.ident().to_string();
            quote!(#rt::Segment::field(#f))
        }
        RSegment::Bucket(f, granularity) => {
            let f = f.ident().to_string();
            let variant = Ident::new(granularity.variant(), Span::call_site());
            quote!(#rt::Segment::bucket(#f, #rt::Granularity::#variant))
        }
    });
    quote! {
        static #name: #rt::KeyTemplate = #rt::KeyTemplate::new(#source, &[#(#segments),*]);
    }
}

fn partition_schema(rt: &TokenStream, pk: &RPartition, template: &Ident) -> TokenStream {
    let attribute = pk.attribute;
    let n = pk.n;
    let sharding = match &pk.shard {
        RShard::None => quote!(#rt::Sharding::None),
        RShard::Hash(fields) => {
            let names = fields.iter().map(|f| f.ident().to_string());
            quote!(#rt::Sharding::hash(&[#(#names),*], #n))
        }
        RShard::Random(_) => quote!(#rt::Sharding::random(#n)),
        RShard::Identity => quote!(#rt::Sharding::identity(#n)),
    };
    quote!(#rt::PartitionKeySchema::new(#attribute, &#template, #sharding))
}

fn template_ident(attr_fn: &str) -> Ident {
    // `pk` -> __PK_TEMPLATE, `gsi1_pk` -> __GSI1_PK_TEMPLATE
    Ident::new(
        &format!("__{}_TEMPLATE", attr_fn.to_uppercase()),
        Span::call_site(),
    )
}

fn key_context(rt: &TokenStream, entity_name: &str, attribute: &str) -> TokenStream {
    quote!(#rt::KeyContext { entity: #entity_name, attribute: #attribute })
}

/// The expression naming the partition key schema of the GSI at `position` in
/// `EntitySchema::gsis` (the order of `Resolved::gsis`).
fn gsi_key_schema(position: usize) -> TokenStream {
    quote!(__SCHEMA.gsis[#position].pk)
}

/// Builders and parser of one partition key. `fn_name` is `pk` or `gsi1_pk`; `prefix` is ``
/// or `gsi1_` (for `shard_for`); `key` names the key's schema in the generated `__SCHEMA`.
///
/// The bodies pass the schema to `layout`'s functions, which read the shard count, the hashed
/// fields and the template there: the attribute's numbers are written once, in the schema.
fn partition_methods(
    cx: &Ctx,
    pk: &RPartition,
    fn_name: &str,
    prefix: &str,
    entity_name: &str,
    key: TokenStream,
) -> TokenStream {
    let rt = cx.rt;
    let template = template_ident(fn_name);
    let ctx = key_context(rt, entity_name, pk.attribute);
    let source = pk.template.source();
    let n = pk.n;
    let template_fields: Vec<KeyField> = pk.template.fields().collect();
    let template_params = cx.params(template_fields.iter().copied());
    let template_values = cx.template_values(&pk.template);
    let entity_ident = &cx.r.entity.ident;

    let build = Ident::new(fn_name, Span::call_site());
    let on_shard = format_ident!("{}_on_shard", fn_name);
    let all_shards = format_ident!("{}_all_shards", fn_name);
    let parse = format_ident!("parse_{}", fn_name);
    let shard_for = format_ident!("{}shard_for", prefix);
    let logical = format_ident!("{}_logical", fn_name);

    let mut out = TokenStream::new();

    // The logical key: the template alone, no shard.
    let logical_doc =
        format!("The logical key `{source}` of `{entity_ident}`, without a shard suffix.");
    let body = cx.body(quote!(#rt::build_key(#ctx, &#template, #template_values)));
    out.extend(quote! {
        #[doc = #logical_doc]
        pub fn #logical(#(#template_params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
            #body
        }
    });

    // The physical key of one item.
    match &pk.shard {
        RShard::None => {
            let doc =
                format!("Builds the partition key `{source}` of `{entity_ident}` (unsharded).");
            let body = cx.body(quote!(#rt::build_key(#ctx, &#template, #template_values)));
            out.extend(quote! {
                #[doc = #doc]
                pub fn #build(#(#template_params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #body
                }
            });
        }
        RShard::Hash(fields) => {
            let params = cx.params(pk.physical_args());
            let names: Vec<String> = fields.iter().map(|f| f.ident().to_string()).collect();
            let shard_values = cx.values(fields.iter().copied());
            let shard_params = cx.params(fields.iter().copied());
            let doc = format!(
                "Builds the physical partition key `{source}#<shard>` of `{entity_ident}`; the shard is \
                 `hash({}) mod {n}` (see `sharded::hash`).",
                names.join(", ")
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
            out.extend(quote! {
                #[doc = #doc]
                pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #build_body
                }
                #[doc = #shard_doc]
                pub fn #shard_for(#(#shard_params),*) -> #rt::Result<u32, #rt::KeyError> {
                    #shard_body
                }
            });
        }
        RShard::Random(sk_fields) => {
            let params = cx.params(pk.physical_args());
            let doc = format!(
                "Builds the physical partition key `{source}#<shard>` of one `{entity_ident}`: the shard \
                 (`0..{n}`) is the spec hash of the item's logical key and sort key (`shard = \"random\"`), \
                 so items spread evenly and one item is always on the same shard."
            );
            let sort_key = random_sort_key(cx, sk_fields);
            let body = cx.body(quote! {
                #sort_key
                #rt::layout::item_key(#entity_name, &#key, #template_values, #rt::ShardBy::SortKey(&__sk))
            });
            out.extend(quote! {
                #[doc = #doc]
                pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #body
                }
            });
        }
        // The shard of an identity-sharded GSI key comes from the whole item (`item_keys`).
        RShard::Identity => {}
    }

    let sharded = pk.sharded();
    if sharded {
        let doc = format!("Builds the physical partition key `{source}#<shard>` of `{entity_ident}` on the given shard (`0..{n}`).");
        let body = cx
            .body(quote!(#rt::layout::key_on_shard(#entity_name, &#key, #template_values, shard)));
        out.extend(quote! {
            #[doc = #doc]
            pub fn #on_shard(#(#template_params,)* shard: u32) -> #rt::Result<#rt::String, #rt::KeyError> {
                #body
            }
        });
    }
    let all_doc = format!(
        "Every physical partition key of the logical key `{source}`: {} (what a scatter-gather query reads).",
        if sharded { format!("`{source}#0` to `{source}#{}`", n.saturating_sub(1)) } else { "just the one, it is unsharded".to_owned() }
    );
    let body = cx.body(quote!(#rt::layout::all_shards(#entity_name, &#key, #template_values)));
    out.extend(quote! {
        #[doc = #all_doc]
        pub fn #all_shards(#(#template_params),*) -> #rt::Result<#rt::ShardKeys, #rt::KeyError> {
            #body
        }
    });

    // Parsing back. A bucketed field's key holds its bucket, not its value.
    let (mut field_types, generics) = cx.decoded_types(&template_fields);
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
    let (ret, shard_part) = if sharded {
        (
            quote!((#(#field_types,)* u32)),
            quote!(__parsed.shard.unwrap_or(0)),
        )
    } else {
        (quote!((#(#field_types,)*)), quote!())
    };
    let parse_doc = format!(
        "Parses a physical `{}` key of `{entity_ident}` back into its fields{} (template `{source}`); \
         refuses keys that do not match.",
        pk.attribute,
        if sharded { " and shard number" } else { "" }
    );
    let body = cx.body(quote! {
        let __parsed = #rt::layout::parse(#entity_name, &#key, key)?;
        #rt::Result::Ok((#(#decodes,)* #shard_part))
    });
    out.extend(quote! {
        #[doc = #parse_doc]
        pub fn #parse #generics(key: &str) -> #rt::Result<#ret, #rt::KeyError> {
            #body
        }
    });
    out
}

/// The sort key a randomly sharded key builder hashes with the logical key (the item's
/// identity), built from the builder's parameters into `__sk`.
fn random_sort_key(cx: &Ctx, sk_fields: &[KeyField]) -> TokenStream {
    let rt = cx.rt;
    let sk_args = cx.names(sk_fields.iter().copied());
    quote!(let __sk: #rt::String = Self::sk(#(#sk_args),*)?;)
}

/// The base table's layout: `pk_partitions` (every partition a logical key's items may be
/// in) and, while a transition is declared, `pk_previous` (an item's key under the previous
/// layout) and the legacy template.
fn layout_methods(cx: &Ctx, pk: &RPartition, entity_name: &str) -> TokenStream {
    let rt = cx.rt;
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
        Some(RPrevious::Shards(old)) => {
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
        (RPrevious::Shards(_), RShard::Hash(fields)) => {
            let shard_values = cx.values(fields.iter().copied());
            (quote!(), quote!(#rt::ShardBy::Fields(#shard_values)))
        }
        (RPrevious::Shards(_), RShard::Random(sk_fields)) => (
            random_sort_key(cx, sk_fields),
            quote!(#rt::ShardBy::SortKey(&__sk)),
        ),
        // A legacy key, or (refused by validation) a previous count on an unsharded key.
        _ => (quote!(), quote!(#rt::ShardBy::Unsharded)),
    };
    let previous_doc = format!(
        "The partition key one `{entity_ident}` had under the previous layout, while the \
         transition is declared: where `get` looks after the current shard, and what `delete` \
         removes too."
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

fn sort_methods(cx: &Ctx, sk: &RSort, fn_name: &str, entity_name: &str) -> TokenStream {
    let rt = cx.rt;
    let template = template_ident(fn_name);
    let ctx = key_context(rt, entity_name, sk.attribute);
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
    let doc = format!(
        "Builds the `{}` key `{source}` of `{entity_ident}`.",
        sk.attribute
    );
    let parse_doc = format!(
        "Parses a `{}` key of `{entity_ident}` back into its fields (template `{source}`); refuses keys that do not match.",
        sk.attribute
    );
    let prefixes = sort_prefixes(cx, sk, fn_name, &ctx, &template);
    let conditions = sort_conditions(cx, sk, fn_name, &ctx, &template);
    let build_body = cx.body(quote!(#rt::build_key(#ctx, &#template, #values)));
    let parse_body = cx.body(quote! {
        let __parsed = #rt::parse_key(#ctx, &#template, key, ::core::option::Option::None)?;
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

fn item_keys_body(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let r = cx.r;
    let Some(pk) = &r.pk else {
        return quote!(::core::unreachable!());
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
        .any(|g| matches!(g.pk.shard, RShard::Identity));
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
    quote! {
        let __sk: ::core::option::Option<#rt::String> = #sk_expr;
        #identity
        let __pk: #rt::String = #pk_expr;
        let __gsis = #rt::Vec::from([#(#gsis),*]);
        #rt::Result::Ok(#rt::ItemKeys::new(__pk, __sk, __gsis))
    }
}

/// `.with_version(..)`, `.with_ttl(..)`, ... on the schema, for the fields that have a role.
fn role_schema(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let setters = cx.r.entity.fields.iter().filter_map(|f| {
        let role = f.role.as_ref()?;
        let attribute = &f.serde_name.value;
        let (inner, _) = crate::validate::peel_option(&f.ty);
        let format = if crate::validate::is_date_time(inner) {
            quote!(#rt::TimeFormat::Rfc3339)
        } else {
            quote!(#rt::TimeFormat::EpochSeconds)
        };
        Some(match role.value {
            FieldRole::Version => quote!(.with_version(#attribute)),
            FieldRole::Ttl => quote!(.with_ttl(#attribute)),
            FieldRole::CreatedAt => {
                quote!(.with_created_at(#rt::TimeAttribute::new(#attribute, #format)))
            }
            FieldRole::UpdatedAt => {
                quote!(.with_updated_at(#rt::TimeAttribute::new(#attribute, #format)))
            }
        })
    });
    quote!(#(#setters)*)
}

/// `GsiRewrite`: the GSI key attributes a typed update must rewrite, rebuilt from the values
/// it sets and the key fields' values, so an index never goes stale.
fn gsi_rewrite(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let r = cx.r;
    let ident = &r.entity.ident;
    let attribute_of = |f: &KeyField| match f {
        KeyField::Field(field) => field.serde_name.value.clone(),
        KeyField::Unknown(name) => name.to_string(),
    };
    let blocks = r.gsis.iter().enumerate().map(|(position, g)| {
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
        let arg = |f: KeyField| {
            let local = f.ident();
            match f.ty().map(param_kind) {
                Some(Param::Copy) => quote!(#local),
                _ => quote!(&#local),
            }
        };
        let pk_attr = g.pk.attribute;
        let pk_value = if identity {
            let logical_args: Vec<_> = r
                .pk
                .iter()
                .flat_map(|pk| pk.template.fields())
                .map(arg)
                .collect();
            let sk_value = match &r.sk {
                Some(sk) => {
                    let args: Vec<_> = sk.template.fields().map(arg).collect();
                    quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
                }
                None => quote!(::core::option::Option::None),
            };
            let on_shard = format_ident!("{}_pk_on_shard", name);
            let args: Vec<_> = g.pk.template.fields().map(arg).collect();
            let key = gsi_key_schema(position);
            quote! {{
                let __sk: ::core::option::Option<#rt::String> = #sk_value;
                let __identity = #rt::identity(&Self::pk_logical(#(#logical_args),*)?, __sk.as_deref());
                Self::#on_shard(#(#args,)* #rt::layout::identity_shard(&#key, &__identity))?
            }}
        } else {
            let pk_fn = format_ident!("{}_pk", name);
            let args: Vec<_> = g.pk.physical_args().into_iter().map(arg).collect();
            quote!(Self::#pk_fn(#(#args),*)?)
        };
        let sk_push = g.sk.as_ref().map(|sk| {
            let sk_fn = format_ident!("{}_sk", name);
            let attr = sk.attribute;
            let args: Vec<_> = sk.template.fields().map(arg).collect();
            quote!(out.push((#attr, Self::#sk_fn(#(#args),*)?));)
        });
        quote! {
            if changed.iter().any(|c| [#(#triggers),*].contains(c)) {
                #(#locals)*
                out.push((#pk_attr, #pk_value));
                #sk_push
            }
        }
    });
    let body = cx.body(quote! {
        let mut out = #rt::Vec::new();
        #(#blocks)*
        ::core::result::Result::Ok(out)
    });
    quote! {
        #[automatically_derived]
        impl #rt::GsiRewrite for #ident {
            #[allow(unused_variables)]
            fn gsi_keys(
                values: &::std::collections::HashMap<&'static str, #rt::AttributeValue>,
                changed: &[&'static str],
            ) -> #rt::Result<#rt::Vec<(&'static str, #rt::String)>, #rt::Error> {
                #body
            }
        }
    }
}

/// `{Entity}Fields` and `Entity::fields()`: each stored field as a typed `Field`, the operand
/// of conditions and filters.
fn typed_fields(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let entity = cx.r.entity;
    let ident = &entity.ident;
    let vis = &entity.vis;
    let fields_ident = format_ident!("{}Fields", ident);
    let stored: Vec<_> = entity.fields.iter().filter(|f| f.serde_attribute).collect();
    let primary = cx.r.primary_key_fields();
    let decls = stored.iter().map(|f| {
        let (name, ty, attribute) = (&f.ident, &f.ty, &f.serde_name.value);
        let in_key = primary
            .iter()
            .any(|k| matches!(k, KeyField::Field(k) if std::ptr::eq(*k, *f)));
        let (role, doc) = if in_key {
            (
                quote!(#rt::PrimaryKey),
                format!("`{name}`, stored as the attribute `{attribute}`; part of the primary key (compared, never updated)."),
            )
        } else {
            (
                quote!(#rt::Data),
                format!("`{name}`, stored as the attribute `{attribute}`."),
            )
        };
        quote!(#[doc = #doc] pub #name: #rt::Field<#ident, #ty, #role>,)
    });
    let inits = stored.iter().map(|f| {
        let (name, attribute) = (&f.ident, &f.serde_name.value);
        quote!(#name: #rt::Field::new(#attribute),)
    });
    let doc = format!(
        "The stored fields of [`{ident}`], typed: operands of conditions and query filters          (`{ident}::fields()`). Generated by `#[derive(ShardedEntity)]`."
    );
    let fn_doc = format!(
        "The stored fields of `{ident}`, typed, for conditions and filters:          `{ident}::fields().<field>.eq(..)`, `.between(..)`, `.exists()`, ..."
    );
    quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug)]
        #vis struct #fields_ident {
            #(#decls)*
        }

        #[automatically_derived]
        impl #ident {
            #[doc = #fn_doc]
            #vis const fn fields() -> #fields_ident {
                #fields_ident { #(#inits)* }
            }
        }
    }
}

/// The facts the collection and projection derives check against: the partition-key field
/// types (members of a collection must agree) and the stored attribute names (a projection
/// may only name those).
fn entity_shape(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    // After a refused input a template may name no field: its type is unknown, and nothing
    // is checked against a crate that does not compile anyway.
    let types: Option<Vec<&Type>> =
        cx.r.pk
            .as_ref()
            .and_then(|pk| pk.template.fields().map(|f| f.ty()).collect());
    let types = types.unwrap_or_default();
    let fields = &cx.r.entity.fields;
    let names = fields
        .iter()
        .filter(|f| f.serde_attribute)
        .map(|f| &f.serde_name.value);
    let open = fields.iter().any(|f| f.serde_flatten);
    quote! {
        #[automatically_derived]
        impl #rt::EntityShape for #ident {
            type PartitionTypes = (#(#types,)*);
            const ATTRIBUTES: &'static [&'static str] = &[#(#names),*];
            const OPEN: bool = #open;
        }
    }
}

/// `KeyPart` and `KeyPartDecode` bounds for every key field, spanned at the field's type so an
/// unsupported type is reported where the user wrote it.
fn type_assertions(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let checks = cx.r.key_fields().into_iter().filter_map(|field| {
        let ty = field.ty()?;
        let span = ty.span();
        Some(quote_spanned! {span=>
            const _: () = #rt::assert_key_part::<#ty>();
            const _: () = #rt::assert_key_part_decode::<#ty>();
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

/// `tokens` with every span set to `span`. A const-evaluation error is reported at the span
/// of the failing call, which starts at the runtime path's first token: re-spanned, it points
/// at the user's token instead of at `#[derive(ShardedEntity)]`.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                return proc_macro2::TokenTree::Group(inner);
            }
            token.set_span(span);
            token
        })
        .collect()
}

/// Checks against facts the runtime owns (the shard maximum, the entity attribute's name),
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
            Some(crate::model::Previous::Shards(old)) => Some(old),
            _ => None,
        }))
        .map(|n| {
            let value = n.value;
            let rt = respan(rt, n.span);
            quote_spanned! {n.span=> const _: () = #rt::assert_shard_count(#value); }
        });
    let attributes = entity.fields.iter().filter(|f| f.serde_attribute).map(|f| {
        let name = &f.serde_name.value;
        let rt = respan(rt, f.serde_name.span);
        quote_spanned! {f.serde_name.span=> const _: () = #rt::assert_not_entity_attribute(#name); }
    });
    // The granularity names the derive accepts are the runtime's `Granularity::NAMES`.
    let granularities = bucketed_templates(cx.r).next().map(|_| {
        let names = crate::model::Granularity::ALL.map(|g| g.name());
        quote!(const _: () = #rt::assert_granularity_names(&[#(#names),*]);)
    });
    quote!(#(#counts)* #(#attributes)* #granularities)
}

/// The partition-key templates (base and GSIs) that have a time bucket.
fn bucketed_templates<'r, 'a>(r: &'r Resolved<'a>) -> impl Iterator<Item = &'r RTemplate<'a>> {
    r.pk.iter()
        .chain(r.gsis.iter().map(|g| &g.pk))
        .map(|pk| &pk.template)
        .filter(|t| t.bucket().is_some())
}

/// `sk_prefix()` (the leading literal) and `sk_prefix_<field>(..)` for every field that does
/// not end the template: typed prefixes for `begins_with` and range conditions.
fn sort_prefixes(
    cx: &Ctx,
    sk: &RSort,
    fn_name: &str,
    ctx: &TokenStream,
    template: &Ident,
) -> TokenStream {
    let rt = cx.rt;
    let source = sk.template.source();
    let segments = &sk.template.segments;
    let mut out = TokenStream::new();
    if let Some(RSegment::Literal(literal)) = segments.first() {
        if segments.len() > 1 {
            let name = format_ident!("{}_prefix", fn_name);
            let doc = format!(
                "The constant prefix `{literal}` of every `{}` key of this entity (template `{source}`).",
                sk.attribute
            );
            let body = cx.body(quote!(#literal));
            out.extend(quote! {
                #[doc = #doc]
                pub fn #name() -> &'static str { #body }
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
        let name = format_ident!("{}_prefix_{}", fn_name, written);
        let params = cx.params(fields_so_far.iter().copied());
        let values = cx.values(fields_so_far.iter().copied());
        let doc = format!(
            "The `{}` key prefix shared by every item with these values, up to and including `{{{written}}}` \
             and the separator after it (template `{source}`). Use it with `sk_begins_with`, or as \
             range bounds: `sk_between(prefix(lo), prefix(hi))` selects `lo <= {written} < hi`.",
            sk.attribute
        );
        let body = cx.body(quote!(#rt::build_key_prefix(#ctx, &#template, #values, #count)));
        out.extend(quote! {
            #[doc = #doc]
            pub fn #name(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                #body
            }
        });
    }
    out
}

/// The typed sort-key conditions `<fn_name>_<field>_<op>`: for each field of the template, the
/// fields before it held equal (parameters, in template order) and a comparison on it. `_lt`
/// on the field that ends the template exists only when no field comes before it: DynamoDB's
/// `BETWEEN` is closed, and that key cannot be excluded below an equal field (see the
/// runtime's `sort_condition` module). A template without fields gets none.
fn sort_conditions(
    cx: &Ctx,
    sk: &RSort,
    fn_name: &str,
    ctx: &TokenStream,
    template: &Ident,
) -> TokenStream {
    let rt = cx.rt;
    let source = sk.template.source();
    let segments = &sk.template.segments;
    let mut out = TokenStream::new();
    let mut leading: Vec<KeyField> = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let RSegment::Field(field) = segment else {
            continue;
        };
        let field = *field;
        let ends_template = i + 1 == segments.len();
        let written = field.ident();
        let lead_params = cx.params(leading.iter().copied());
        let lead_values = cx.values(leading.iter().copied());
        let held: String = leading
            .iter()
            .map(|f| format!("`{0} == {0}` and ", f.ident()))
            .collect();
        let ty = cx.param_type(field);
        let taken = |name: &str| leading.iter().any(|f| f.ident() == name);
        let (low, high) = if taken("low") || taken("high") {
            (format_ident!("low_"), format_ident!("high_"))
        } else {
            (format_ident!("low"), format_ident!("high"))
        };
        let ops: [(&str, String, Vec<&Ident>); 6] = [
            ("eq", format!("`{written} == {written}`"), vec![written]),
            ("lt", format!("`{written} < {written}`"), vec![written]),
            ("le", format!("`{written} <= {written}`"), vec![written]),
            ("gt", format!("`{written} > {written}`"), vec![written]),
            ("ge", format!("`{written} >= {written}`"), vec![written]),
            (
                "between",
                format!("`{low} <= {written} <= {high}` (closed: both bounds included)"),
                vec![&low, &high],
            ),
        ];
        // `<` on the field that ends the template, below an equal field, is not one key
        // condition: its `_le` says so, where a user looking for `_lt` reads.
        let no_lt = ends_template && !leading.is_empty();
        for (op, says, names) in ops {
            if op == "lt" && no_lt {
                // A stub whose bound is never met, so the call reports why (and not rustc's
                // "similar name" hint, which names `_gt`).
                let name = format_ident!("{}_{}_{}", fn_name, written, op);
                let lead_types = leading.iter().map(|f| cx.param_type(*f));
                out.extend(quote! {
                    #[doc(hidden)]
                    pub fn #name<__V>(#(_: #lead_types,)* _: __V) -> #rt::SortKeyCondition
                    where
                        __V: #rt::NoStrictUpperBound,
                    {
                        ::core::unreachable!()
                    }
                });
                continue;
            }
            let name = format_ident!("{}_{}_{}", fn_name, written, op);
            let params = names.iter().map(|n| quote!(#n: #ty));
            let parts: Vec<TokenStream> = names
                .iter()
                .map(|n| quote!((&#rt::Probe(&#n)).part()))
                .collect();
            let variant = match op {
                "eq" => quote!(Eq),
                "lt" => quote!(Lt),
                "le" => quote!(Le),
                "gt" => quote!(Gt),
                "ge" => quote!(Ge),
                _ => quote!(Between),
            };
            let mut doc = format!(
                "Sort-key condition for `Query::sk`: items with {held}{says} \
                 (`{}` template `{source}`). A value that cannot be encoded fails the query, not this call.",
                sk.attribute
            );
            if op == "le" && no_lt {
                doc.push_str(&format!(
                    "\n\nThere is no `{fn_name}_{written}_lt`: `{written}` ends the template, so the key of \
                     an item with `{written}` equal to the bound is the bound itself, and DynamoDB's \
                     `BETWEEN` (needed below the equal fields) includes it. Use `_le` with the value \
                     before (`n - 1` for an integer), or drop the first item if it is equal."
                ));
            }
            let body = cx.body(quote! {
                #rt::sort_key_condition(#ctx, &#template, #lead_values, #rt::SortOp::#variant(#(#parts),*))
            });
            out.extend(quote! {
                #[doc = #doc]
                pub fn #name(#(#lead_params,)* #(#params),*) -> #rt::SortKeyCondition {
                    #body
                }
            });
        }
        leading.push(field);
    }
    out
}

/// `get`/`delete` (or, for random shards, `get_from_all_shards`/`delete_on_shard`).
fn repository_methods(cx: &Ctx, pk: &RPartition) -> TokenStream {
    let rt = cx.rt;
    let r = cx.r;
    let ident = &r.entity.ident;
    let sk_expr = match &r.sk {
        Some(sk) => {
            let args = cx.names(sk.template.fields());
            quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
        }
        None => quote!(::core::option::Option::None),
    };
    let sk_fields = r.sk.iter().flat_map(|sk| sk.template.fields());
    // The explicit all-shard path of a randomly sharded entity, for items whose place is not
    // known (written by other code, or before its place was the item's own hash).
    let all_shard_path = if matches!(pk.shard, RShard::Random(_)) {
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
            let sk = #sk_expr;
            #rt::get_from_all_shards(repo, Self::pk_all_shards(#(#pk_args),*)?, sk).await
        });
        let delete_body = cx.body(quote! {
            let sk = #sk_expr;
            #rt::delete_by_key(repo, Self::pk_on_shard(#(#pk_args,)* shard)?, sk).await
        });
        quote! {
            #[doc = #get_doc]
            pub async fn get_from_all_shards(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<#rt::Vec<Self>, #rt::Error> {
                #get_body
            }
            #[doc = #delete_doc]
            pub async fn delete_on_shard(repo: &#rt::Repo<Self>, #(#params,)* shard: u32) -> #rt::Result<(), #rt::Error> {
                #delete_body
            }
        }
    } else {
        TokenStream::new()
    };
    // The physical partition key's arguments, then the sort key's.
    let mut args = pk.physical_args();
    push_new(&mut args, sk_fields);
    let params = cx.params(args);
    let pk_args = cx.names(pk.physical_args());
    let how = match (&pk.shard, &pk.previous) {
        (RShard::Hash(_), None) => "exactly one `GetItem`, on the shard its hash fields give",
        (RShard::Random(_), None) => "exactly one `GetItem`, on the shard its key hashes to",
        (_, None) => "one `GetItem`",
        (_, Some(_)) => {
            "one `GetItem` on its current shard, and, when nothing is there \
                         during the declared transition, one at its previous place"
        }
    };
    let previous_expr = if pk.previous.is_some() {
        quote!(Self::pk_previous(#(#pk_args),*)?)
    } else {
        quote!(::core::option::Option::None)
    };
    let get_doc =
        format!("Reads one `{ident}` by its key: {how}. `None` if there is no such item.");
    let delete_doc = if pk.previous.is_some() {
        format!("Deletes one `{ident}` by its key, at its current place and at its previous one (no error if there is none).")
    } else {
        format!("Deletes one `{ident}` by its key (no error if there is none).")
    };
    let get_body = cx.body(quote! {
        let sk = #sk_expr;
        #rt::get_in_layout(repo, Self::pk(#(#pk_args),*)?, #previous_expr, sk).await
    });
    let delete_body = cx.body(quote! {
        let sk = #sk_expr;
        #rt::delete_in_layout(repo, Self::pk(#(#pk_args),*)?, #previous_expr, sk).await
    });
    let entity_name = r.entity.entity_name();
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
            (#attribute, #rt::stored_value(#entity_name, #attribute, &#name)?)
        })
    });
    let update_body = cx.body(quote! {
        let key = (|| -> #rt::Result<#rt::UpdateKey, #rt::Error> {
            let sk = #sk_expr;
            ::core::result::Result::Ok(#rt::UpdateKey {
                pk: Self::pk(#(#pk_args),*)?,
                sk,
                key_values: ::std::collections::HashMap::from([#(#key_values),*]),
                previous: #previous_expr,
            })
        })();
        #rt::Update::new(repo, key)
    });
    let update_doc = format!(
        "A typed `UpdateItem` of one `{ident}`, on the shard its key gives: chain \
         `set`, `set_if_absent`, `add`, `append`, `remove` with fields of \
         `{ident}::fields()`, then `send()` (see `sharded::Update`)."
    );
    let key_body = cx.body(quote! {
        let sk = #sk_expr;
        ::core::result::Result::Ok(#rt::ItemKey::in_layout(Self::pk(#(#pk_args),*)?, #previous_expr, sk))
    });
    let key_doc = format!(
        "The primary key of one `{ident}`, on the shard its key gives (and, during a declared \
         layout transition, its previous place): for transactional reads \
         (`sharded::TransactGet`), which read both places."
    );
    // A name that is no identifier was reported by validation; it gets no function.
    // The counters' key: the item's identity, independent of its shard and of `n`.
    let identity = {
        let entity_name = r.entity.entity_name();
        let ctx = key_context(rt, &entity_name, pk.attribute);
        let logical_args = cx.names(pk.template.fields());
        match &pk.shard {
            RShard::Hash(fields) => {
                let names: Vec<String> = fields.iter().map(|f| f.ident().to_string()).collect();
                let values = cx.values(fields.iter().copied());
                quote!(
                    ::std::format!("{}#{}", Self::pk_logical(#(#logical_args),*)?, #rt::canonical(#ctx, &[#(#names),*], #values)?)
                )
            }
            _ => quote!(Self::pk_logical(#(#logical_args),*)?),
        }
    };
    let counters = r.entity.counters.iter().filter(|c| crate::validate::is_counter_name(&c.name.value())).map(|counter| {
        let name = counter.name.value();
        let n = counter.n.base10_parse::<u32>().unwrap_or(1);
        let function = format_ident!("{}_counter", name, span = counter.name.span());
        let doc = format!(
            "The `{name}` counter of one `{ident}` ({n} shards, in the same table, \
             beside the item): `increment` (exactly once), `increment_at_least_once`, \
             `total` (one `BatchGetItem`)."
        );
        let body = cx.body(quote! {
            let sk = #sk_expr;
            ::core::result::Result::Ok(#rt::entity_counter(repo, #name, #n, &#identity, sk.as_deref()))
        });
        let n_span = counter.n.span();
        let rt_n = respan(rt, n_span);
        let check = quote_spanned! {n_span=> const _: () = #rt_n::assert_shard_count(#n); };
        quote! {
            #[doc = #doc]
            pub fn #function(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<#rt::ShardedCounter, #rt::KeyError> {
                #check
                #body
            }
        }
    });
    quote! {
        #all_shard_path
        #(#counters)*
        #[doc = #key_doc]
        pub fn key(#(#params),*) -> #rt::Result<#rt::ItemKey<Self>, #rt::KeyError> {
            #key_body
        }
        #[doc = #update_doc]
        pub fn update(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Update<Self> {
            #update_body
        }
        #[doc = #get_doc]
        pub async fn get(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<::core::option::Option<Self>, #rt::Error> {
            #get_body
        }
        #[doc = #delete_doc]
        pub async fn delete(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<(), #rt::Error> {
            #delete_body
        }
    }
}

/// `query` (base table) or `query_gsiN`, named by `query = "..."` when given.
fn query_method(cx: &Ctx, pk: &RPartition, gsi: Option<u8>) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let name = &pk.query;
    let all_shards = match gsi {
        None => Ident::new("pk_all_shards", Span::call_site()),
        Some(n) => format_ident!("gsi{}_pk_all_shards", n),
    };
    let index = match gsi {
        None => quote!(::core::option::Option::None),
        Some(n) => quote!(::core::option::Option::Some(#n)),
    };
    let params = cx.params(pk.template.fields());
    let args = cx.names(pk.template.fields());
    let shards = pk.n;
    let source = pk.template.source();
    let doc = format!(
        "Queries every `{ident}` under the logical key `{source}`{}: {shards} shard(s) queried concurrently and \
         merged by sort key. Refine with `.limit`, `.descending`, `.sk_*`, then `.collect()`, `.stream()`, \
         `.page(..)` or `.count()`.",
        gsi.map(|n| format!(" of index gsi{n}")).unwrap_or_default()
    );
    let body = match gsi {
        None => cx.body(quote!(#rt::query_partitions(repo, Self::pk_partitions(#(#args),*)))),
        Some(_) => cx.body(quote!(#rt::query_shards(repo, #index, Self::#all_shards(#(#args),*)))),
    };
    quote! {
        #[doc = #doc]
        pub fn #name(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Query<Self> {
            #body
        }
    }
}

/// `<query>_range(repo, <other template fields>, from, to)` for a partition key bucketed on a
/// time field: every item with `from <= field < to`, bucket after bucket (see
/// `sharded::RangeQuery`).
fn range_method(cx: &Ctx, pk: &RPartition, gsi: Option<u8>) -> TokenStream {
    let rt = cx.rt;
    let ident = &cx.r.entity.ident;
    let Some((at, granularity)) = pk.template.bucket() else {
        return TokenStream::new();
    };
    let name = format_ident!("{}_range", pk.query);
    let others: Vec<KeyField> = pk.template.fields().filter(|f| !f.same(&at)).collect();
    let params = cx.params(others.iter().copied());
    let values = cx.values(others.iter().copied());
    let taken = |n: &str| others.iter().any(|f| f.ident() == n);
    let (from, to) = if taken("from") || taken("to") {
        (format_ident!("from_"), format_ident!("to_"))
    } else {
        (format_ident!("from"), format_ident!("to"))
    };
    let ty = cx.param_type(at);
    let (from_ref, to_ref) = (cx.value_ref(at, &from), cx.value_ref(at, &to));
    let index = match gsi {
        None => quote!(::core::option::Option::None),
        Some(n) => quote!(::core::option::Option::Some(#n)),
    };
    let source = pk.template.source();
    let written = at.ident();
    let doc = format!(
        "Every `{ident}` with `{from} <= {written} < {to}` under `{source}`{}: the {} buckets \
         that intersect the range, each over its {} shard(s), merged in `{written}` order (see \
         `sharded::RangeQuery`). Refine with `.limit`, `.descending`, `.page_size`, then \
         `.collect()`, `.stream()`, `.page(..)`, `.count()` or `.count_by_bucket()`.",
        gsi.map(|n| format!(" (index gsi{n})")).unwrap_or_default(),
        granularity.name(),
        pk.n,
    );
    let body = cx.body(quote! {
        #rt::range_query(
            repo,
            #index,
            #values,
            (&&#rt::Probe(#from_ref)).range_bound(),
            (&&#rt::Probe(#to_ref)).range_bound(),
        )
    });
    quote! {
        #[doc = #doc]
        pub fn #name(repo: &#rt::Repo<Self>, #(#params,)* #from: #ty, #to: #ty) -> #rt::RangeQuery<Self> {
            #body
        }
    }
}
