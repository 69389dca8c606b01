//! Code generation from the validated model. Generated code is thin: static key descriptions
//! and typed wrappers around runtime functions, inside `const _: () = { ... };`, reaching the
//! runtime through the one hidden path `::sharded::__private`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use crate::model::{Entity, Field, PartitionKey, Segment, Shard, SortKey, Template};
use crate::validate::key_fields;

/// How a key field is passed to a generated builder.
enum Param {
    /// `String` fields take `&str`.
    Str,
    /// Small `Copy` scalars are taken by value.
    Copy,
    /// Everything else by reference.
    Ref,
}

fn param_kind(ty: &Type) -> Param {
    if let Type::Path(path) = ty {
        if path.qself.is_none() {
            if let Some(last) = path.path.segments.last() {
                if last.arguments.is_empty() {
                    return match last.ident.to_string().as_str() {
                        "String" => Param::Str,
                        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32"
                        | "i64" | "i128" | "isize" | "bool" => Param::Copy,
                        _ => Param::Ref,
                    };
                }
            }
        }
    }
    Param::Ref
}

struct Ctx<'a> {
    entity: &'a Entity,
    rt: TokenStream,
}

impl Ctx<'_> {
    fn field(&self, ident: &Ident) -> &Field {
        // validate() ran first: every referenced field exists.
        self.entity
            .field(ident)
            .unwrap_or_else(|| &self.entity.fields[0])
    }

    /// `name: &str`, `score: u64`, `at: &DateTime<Utc>`.
    fn param(&self, ident: &Ident) -> TokenStream {
        let field = self.field(ident);
        let ty = &field.ty;
        let name = &field.ident;
        match param_kind(ty) {
            Param::Str => quote!(#name: &str),
            Param::Copy => quote!(#name: #ty),
            Param::Ref => quote!(#name: &#ty),
        }
    }

    /// The same argument taken from `self`.
    fn self_arg(&self, ident: &Ident) -> TokenStream {
        let field = self.field(ident);
        let name = &field.ident;
        match param_kind(&field.ty) {
            Param::Str | Param::Ref => quote!(&self.#name),
            Param::Copy => quote!(self.#name),
        }
    }

    /// `&[&a, &b]` for a `&[&dyn KeyPart]` argument.
    fn values<'b>(&self, idents: impl IntoIterator<Item = &'b Ident>) -> TokenStream {
        let rt = &self.rt;
        let idents = idents.into_iter().map(|i| {
            let name = &self.field(i).ident;
            quote!((&#rt::Probe(&#name)).part())
        });
        quote!(&[#(#idents),*])
    }
}

pub fn expand(entity: &Entity) -> TokenStream {
    let rt = quote!(::sharded::__private);
    let cx = Ctx {
        entity,
        rt: rt.clone(),
    };
    let Some(pk) = &entity.pk else {
        return TokenStream::new();
    };
    let ident = &entity.ident;
    let entity_name = entity.entity_name();
    let table = match &entity.container.table {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    };

    let pk_template = template_static(&rt, "__PK_TEMPLATE", &pk.template);
    let sk_template = entity
        .sk
        .as_ref()
        .map(|sk| template_static(&rt, "__SK_TEMPLATE", &sk.template));
    let gsi_templates = entity.gsis.iter().map(|g| {
        let pk_t = template_static(
            &rt,
            &format!("__GSI{}_PK_TEMPLATE", g.number),
            &g.pk.template,
        );
        let sk_t = g.sk.as_ref().map(|sk| {
            template_static(&rt, &format!("__GSI{}_SK_TEMPLATE", g.number), &sk.template)
        });
        quote!(#pk_t #sk_t)
    });

    let pk_schema = partition_schema(&rt, pk, &format_ident!("__PK_TEMPLATE"));
    let sk_schema = match &entity.sk {
        Some(sk) => {
            let attr = &sk.attribute;
            quote!(::core::option::Option::Some(#rt::SortKeySchema::new(#attr, &__SK_TEMPLATE)))
        }
        None => quote!(::core::option::Option::None),
    };
    let gsi_schemas = entity.gsis.iter().map(|g| {
        let number = g.number;
        let index = &g.index_name;
        let pk_s = partition_schema(&rt, &g.pk, &format_ident!("__GSI{}_PK_TEMPLATE", number));
        let sk_s = match &g.sk {
            Some(sk) => {
                let attr = &sk.attribute;
                let t = format_ident!("__GSI{}_SK_TEMPLATE", number);
                quote!(::core::option::Option::Some(#rt::SortKeySchema::new(#attr, &#t)))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#rt::GsiSchema::new(#number, #index, #pk_s, #sk_s))
    });

    let mut methods = Vec::new();
    methods.push(partition_methods(&cx, pk, "pk", "", &entity_name));
    if let Some(sk) = &entity.sk {
        methods.push(sort_methods(&cx, sk, "sk", &entity_name));
    }
    for g in &entity.gsis {
        let name = format!("gsi{}", g.number);
        methods.push(partition_methods(
            &cx,
            &g.pk,
            &format!("{name}_pk"),
            &format!("{name}_"),
            &entity_name,
        ));
        if let Some(sk) = &g.sk {
            methods.push(sort_methods(&cx, sk, &format!("{name}_sk"), &entity_name));
        }
    }

    methods.push(repository_methods(&cx, pk));
    for g in &entity.gsis {
        methods.push(query_method(&cx, &g.pk, Some(g.number)));
    }

    let item_keys = item_keys_body(&cx, pk);
    let assertions = type_assertions(&cx);

    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, clippy::all)]
        const _: () = {
            #[allow(unused_imports)]
            use #rt::{DecodeFallback as _, DecodeVia as _, FallbackProbe as _, KeyPartProbe as _};
            #pk_template
            #sk_template
            #(#gsi_templates)*

            static __SCHEMA: #rt::EntitySchema = #rt::EntitySchema::new(
                #entity_name,
                #table,
                #pk_schema,
                #sk_schema,
                &[#(#gsi_schemas),*],
            );

            #assertions

            #[automatically_derived]
            impl #rt::ShardedEntity for #ident {
                const SCHEMA: &'static #rt::EntitySchema = &__SCHEMA;

                fn item_keys(&self) -> #rt::Result<#rt::ItemKeys, #rt::KeyError> {
                    #item_keys
                }
            }

            #[automatically_derived]
            impl #ident {
                #(#methods)*
            }
        };
    }
}

/// When validation failed: the errors plus a stub impl, so the user sees the real errors and
/// not a cascade of "ShardedEntity is not implemented" (thiserror's `fallback.rs`).
pub fn fallback(entity: &Entity, errors: TokenStream) -> TokenStream {
    let ident = &entity.ident;
    let rt = quote!(::sharded::__private);
    if entity.pk.is_none() && entity.fields.is_empty() {
        return errors;
    }
    quote! {
        #errors
        const _: () = {
            #[automatically_derived]
            impl #rt::ShardedEntity for #ident {
                const SCHEMA: &'static #rt::EntitySchema = &#rt::FALLBACK_SCHEMA;
                fn item_keys(&self) -> #rt::Result<#rt::ItemKeys, #rt::KeyError> {
                    #rt::fallback_item_keys()
                }
            }
        };
    }
}

fn template_static(rt: &TokenStream, name: &str, template: &Template) -> TokenStream {
    let name = Ident::new(name, Span::call_site());
    let source = template.lit.value();
    let segments = template.segments.iter().map(|s| match s {
        Segment::Literal(text) => quote!(#rt::Segment::literal(#text)),
        Segment::Field(f) => {
            let f = f.to_string();
            quote!(#rt::Segment::field(#f))
        }
    });
    quote! {
        static #name: #rt::KeyTemplate = #rt::KeyTemplate::new(#source, &[#(#segments),*]);
    }
}

fn shard_count(pk: &PartitionKey) -> u32 {
    pk.n.as_ref().map_or(1, |n| n.value)
}

fn partition_schema(rt: &TokenStream, pk: &PartitionKey, template: &Ident) -> TokenStream {
    let attribute = &pk.attribute;
    let n = shard_count(pk);
    let sharding = match &pk.shard.value {
        Shard::None => quote!(#rt::Sharding::None),
        Shard::Hash(fields) => {
            let names = fields.iter().map(Ident::to_string);
            quote!(#rt::Sharding::hash(&[#(#names),*], #n))
        }
        Shard::Random => quote!(#rt::Sharding::random(#n)),
        Shard::Identity => quote!(#rt::Sharding::identity(#n)),
        Shard::Invalid => quote!(#rt::Sharding::None),
    };
    quote!(#rt::PartitionKeySchema::new(#attribute, &#template, #sharding))
}

/// The template fields of a partition key, then the hash fields that are not in the template:
/// the arguments of its physical key builder.
fn physical_args(pk: &PartitionKey) -> Vec<&Ident> {
    let mut args: Vec<&Ident> = pk.template.fields().collect();
    if let Shard::Hash(fields) = &pk.shard.value {
        for f in fields {
            if !args.contains(&f) {
                args.push(f);
            }
        }
    }
    args
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

/// Builders and parser of one partition key. `fn_name` is `pk` or `gsi1_pk`; `prefix` is ``
/// or `gsi1_` (for `shard_for`).
fn partition_methods(
    cx: &Ctx,
    pk: &PartitionKey,
    fn_name: &str,
    prefix: &str,
    entity_name: &str,
) -> TokenStream {
    let rt = &cx.rt;
    let template = template_ident(fn_name);
    let ctx = key_context(rt, entity_name, &pk.attribute);
    let source = pk.template.lit.value();
    let n = shard_count(pk);
    let template_fields: Vec<&Ident> = pk.template.fields().collect();
    let template_params: Vec<TokenStream> = template_fields.iter().map(|f| cx.param(f)).collect();
    let template_values = cx.values(template_fields.iter().copied());
    let entity_ident = &cx.entity.ident;

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
    out.extend(quote! {
        #[doc = #logical_doc]
        pub fn #logical(#(#template_params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
            #rt::build_key(#ctx, &#template, #template_values)
        }
    });

    // The physical key of one item.
    match &pk.shard.value {
        Shard::None => {
            let doc =
                format!("Builds the partition key `{source}` of `{entity_ident}` (unsharded).");
            out.extend(quote! {
                #[doc = #doc]
                pub fn #build(#(#template_params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #rt::build_key(#ctx, &#template, #template_values)
                }
            });
        }
        Shard::Hash(fields) => {
            let args = physical_args(pk);
            let params = args.iter().map(|f| cx.param(f));
            let names: Vec<String> = fields.iter().map(Ident::to_string).collect();
            let shard_values = cx.values(fields.iter());
            let shard_params: Vec<TokenStream> = fields.iter().map(|f| cx.param(f)).collect();
            let doc = format!(
                "Builds the physical partition key `{source}#<shard>` of `{entity_ident}`; the shard is \
                 `hash({}) mod {n}` (see `sharded::hash`).",
                names.join(", ")
            );
            let shard_doc = format!(
                "The shard (`0..{n}`) that `hash({}) mod {n}` gives these values.",
                names.join(", ")
            );
            out.extend(quote! {
                #[doc = #doc]
                pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #rt::build_hashed_key(#ctx, &#template, #template_values, &[#(#names),*], #shard_values, #n)
                }
                #[doc = #shard_doc]
                pub fn #shard_for(#(#shard_params),*) -> #rt::Result<u32, #rt::KeyError> {
                    #rt::shard_of(#ctx, &[#(#names),*], #shard_values, #n)
                }
            });
        }
        Shard::Random => {
            let doc = format!(
                "Builds the physical partition key `{source}#<shard>` of `{entity_ident}` on a random shard in `0..{n}`."
            );
            out.extend(quote! {
                #[doc = #doc]
                pub fn #build(#(#template_params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                    #rt::build_random_key(#ctx, &#template, #template_values, #n)
                }
            });
        }
        Shard::Identity | Shard::Invalid => {}
    }

    let sharded = !matches!(pk.shard.value, Shard::None);
    if sharded {
        let doc = format!("Builds the physical partition key `{source}#<shard>` of `{entity_ident}` on the given shard (`0..{n}`).");
        out.extend(quote! {
            #[doc = #doc]
            pub fn #on_shard(#(#template_params,)* shard: u32) -> #rt::Result<#rt::String, #rt::KeyError> {
                #rt::build_key_on_shard(#ctx, &#template, #template_values, shard, #n)
            }
        });
    }
    let shards_expr = if sharded {
        quote!(::core::option::Option::Some(#n))
    } else {
        quote!(::core::option::Option::None)
    };
    let all_doc = format!(
        "Every physical partition key of the logical key `{source}`: {} (what a scatter-gather query reads).",
        if sharded { format!("`{source}#0` to `{source}#{}`", n - 1) } else { "just the one, it is unsharded".to_owned() }
    );
    out.extend(quote! {
        #[doc = #all_doc]
        pub fn #all_shards(#(#template_params),*) -> #rt::Result<#rt::ShardKeys, #rt::KeyError> {
            #rt::Result::Ok(#rt::ShardKeys::new(#rt::build_key(#ctx, &#template, #template_values)?, #shards_expr))
        }
    });

    // Parsing back.
    let field_types: Vec<&Type> = template_fields.iter().map(|f| &cx.field(f).ty).collect();
    let decodes = (0..template_fields.len()).map(|i| {
        let ty = field_types[i];
        quote!((&#rt::DecodeProbe::<#ty>::new()).decode_at(&__parsed, #i)?)
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
    out.extend(quote! {
        #[doc = #parse_doc]
        pub fn #parse(key: &str) -> #rt::Result<#ret, #rt::KeyError> {
            let __parsed = #rt::parse_key(#ctx, &#template, key, #shards_expr)?;
            #rt::Result::Ok((#(#decodes,)* #shard_part))
        }
    });
    out
}

fn sort_methods(cx: &Ctx, sk: &SortKey, fn_name: &str, entity_name: &str) -> TokenStream {
    let rt = &cx.rt;
    let template = template_ident(fn_name);
    let ctx = key_context(rt, entity_name, &sk.attribute);
    let source = sk.template.lit.value();
    let fields: Vec<&Ident> = sk.template.fields().collect();
    let params = fields.iter().map(|f| cx.param(f));
    let values = cx.values(fields.iter().copied());
    let build = Ident::new(fn_name, Span::call_site());
    let parse = format_ident!("parse_{}", fn_name);
    let entity_ident = &cx.entity.ident;
    let types: Vec<&Type> = fields.iter().map(|f| &cx.field(f).ty).collect();
    let decodes = (0..fields.len()).map(|i| {
        let ty = types[i];
        quote!((&#rt::DecodeProbe::<#ty>::new()).decode_at(&__parsed, #i)?)
    });
    let doc = format!(
        "Builds the `{}` key `{source}` of `{entity_ident}`.",
        sk.attribute
    );
    let parse_doc = format!(
        "Parses a `{}` key of `{entity_ident}` back into its fields (template `{source}`); refuses keys that do not match.",
        sk.attribute
    );
    let prefixes = sort_prefixes(cx, sk, fn_name, &ctx, &template);
    quote! {
        #[doc = #doc]
        pub fn #build(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
            #rt::build_key(#ctx, &#template, #values)
        }
        #prefixes
        #[doc = #parse_doc]
        pub fn #parse(key: &str) -> #rt::Result<(#(#types,)*), #rt::KeyError> {
            let __parsed = #rt::parse_key(#ctx, &#template, key, ::core::option::Option::None)?;
            #rt::Result::Ok((#(#decodes,)*))
        }
    }
}

fn item_keys_body(cx: &Ctx, pk: &PartitionKey) -> TokenStream {
    let rt = &cx.rt;
    let entity = cx.entity;
    let self_args = |idents: Vec<&Ident>| -> Vec<TokenStream> {
        idents.into_iter().map(|i| cx.self_arg(i)).collect()
    };

    let pk_args = self_args(physical_args(pk));
    let pk_expr = quote!(Self::pk(#(#pk_args),*)?);
    let sk_expr = match &entity.sk {
        Some(sk) => {
            let args = self_args(sk.template.fields().collect());
            quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
        }
        None => quote!(::core::option::Option::None),
    };
    let needs_identity = entity
        .gsis
        .iter()
        .any(|g| matches!(g.pk.shard.value, Shard::Identity));
    let identity = if needs_identity {
        let logical_args = self_args(pk.template.fields().collect());
        quote! {
            let __identity = #rt::identity(&Self::pk_logical(#(#logical_args),*)?, __sk.as_deref());
        }
    } else {
        quote!()
    };
    let gsis = entity.gsis.iter().map(|g| {
        let name = format!("gsi{}", g.number);
        let pk_fn = format_ident!("{}_pk", name);
        let on_shard = format_ident!("{}_pk_on_shard", name);
        let pk_value = match &g.pk.shard.value {
            Shard::Identity => {
                let args = self_args(g.pk.template.fields().collect());
                let n = shard_count(&g.pk);
                quote!(Self::#on_shard(#(#args,)* #rt::shard_of_text(&__identity, #n))?)
            }
            _ => {
                let args = self_args(physical_args(&g.pk));
                quote!(Self::#pk_fn(#(#args),*)?)
            }
        };
        let sk_value = match &g.sk {
            Some(sk) => {
                let sk_fn = format_ident!("{}_sk", name);
                let args = self_args(sk.template.fields().collect());
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

/// `KeyPart` and `KeyPartDecode` bounds for every key field, spanned at the field's type so an
/// unsupported type is reported where the user wrote it.
fn type_assertions(cx: &Ctx) -> TokenStream {
    let rt = &cx.rt;
    let mut seen = std::collections::HashSet::new();
    let checks = key_fields(cx.entity).into_iter().filter_map(|ident| {
        if !seen.insert(ident.to_string()) {
            return None;
        }
        let ty = &cx.field(ident).ty;
        let span = ty.span();
        Some(quote_spanned! {span=>
            const _: () = #rt::assert_key_part::<#ty>();
            const _: () = #rt::assert_key_part_decode::<#ty>();
        })
    });
    quote!(#(#checks)*)
}

/// `sk_prefix()` (the leading literal) and `sk_prefix_<field>(..)` for every field that does
/// not end the template: typed prefixes for `begins_with` and range conditions.
fn sort_prefixes(
    cx: &Ctx,
    sk: &SortKey,
    fn_name: &str,
    ctx: &TokenStream,
    template: &Ident,
) -> TokenStream {
    let rt = &cx.rt;
    let source = sk.template.lit.value();
    let segments = &sk.template.segments;
    let mut out = TokenStream::new();
    if let Some(Segment::Literal(literal)) = segments.first() {
        if segments.len() > 1 {
            let name = format_ident!("{}_prefix", fn_name);
            let doc = format!(
                "The constant prefix `{literal}` of every `{}` key of this entity (template `{source}`).",
                sk.attribute
            );
            out.extend(quote! {
                #[doc = #doc]
                pub fn #name() -> &'static str { #literal }
            });
        }
    }
    let mut fields_so_far: Vec<&Ident> = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let Segment::Field(field) = segment else {
            continue;
        };
        fields_so_far.push(field);
        // A field that ends the template has no prefix beyond the whole key.
        let Some(Segment::Literal(_)) = segments.get(i + 1) else {
            continue;
        };
        let count = i + 2;
        let name = format_ident!("{}_prefix_{}", fn_name, field);
        let params = fields_so_far.iter().map(|f| cx.param(f));
        let values = cx.values(fields_so_far.iter().copied());
        let doc = format!(
            "The `{}` key prefix shared by every item with these values, up to and including `{{{field}}}` \
             and the separator after it (template `{source}`). Use it with `sk_begins_with`, or as \
             range bounds: `sk_between(prefix(lo), prefix(hi))` selects `lo <= {field} < hi`.",
            sk.attribute
        );
        out.extend(quote! {
            #[doc = #doc]
            pub fn #name(#(#params),*) -> #rt::Result<#rt::String, #rt::KeyError> {
                #rt::build_key_prefix(#ctx, &#template, #values, #count)
            }
        });
    }
    out
}

/// The arguments of a point lookup: the physical partition key's, then the sort key's.
fn point_args<'a>(pk: &'a PartitionKey, sk: Option<&'a SortKey>) -> Vec<&'a Ident> {
    let mut args = physical_args(pk);
    if let Some(sk) = sk {
        for f in sk.template.fields() {
            if !args.contains(&f) {
                args.push(f);
            }
        }
    }
    args
}

/// `get`/`delete` (or, for random shards, `get_from_all_shards`/`delete_on_shard`) and the base
/// table query.
fn repository_methods(cx: &Ctx, pk: &PartitionKey) -> TokenStream {
    let rt = &cx.rt;
    let entity = cx.entity;
    let ident = &entity.ident;
    let sk = entity.sk.as_ref();
    let sk_value = |names: &dyn Fn(&Ident) -> TokenStream| match sk {
        Some(sk) => {
            let args = sk.template.fields().map(names);
            quote!(::core::option::Option::Some(Self::sk(#(#args),*)?))
        }
        None => quote!(::core::option::Option::None),
    };
    let arg_name = |i: &Ident| {
        let name = &cx.field(i).ident;
        quote!(#name)
    };
    let mut out = query_method(cx, pk, None);
    match &pk.shard.value {
        Shard::Random => {
            let args: Vec<&Ident> = {
                let mut a: Vec<&Ident> = pk.template.fields().collect();
                if let Some(sk) = sk {
                    a.extend(
                        sk.template
                            .fields()
                            .filter(|f| !pk.template.fields().any(|p| p == *f)),
                    );
                }
                a
            };
            let params: Vec<TokenStream> = args.iter().map(|f| cx.param(f)).collect();
            let pk_args = pk.template.fields().map(arg_name);
            let pk_args2 = pk.template.fields().map(arg_name);
            let sk_expr = sk_value(&arg_name);
            let get_doc = format!(
                "Reads `{ident}` from every shard (random sharding: the shard of an item is not known), \
                 in one `BatchGetItem` per 100 shards; returns every shard's copy, in shard order."
            );
            let delete_doc =
                format!("Deletes the `{ident}` item on one shard (as returned by `parse_pk`).");
            out.extend(quote! {
                #[doc = #get_doc]
                pub async fn get_from_all_shards(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<#rt::Vec<Self>, #rt::Error> {
                    let sk = #sk_expr;
                    #rt::get_from_all_shards(repo, Self::pk_all_shards(#(#pk_args),*)?, sk).await
                }
                #[doc = #delete_doc]
                pub async fn delete_on_shard(repo: &#rt::Repo<Self>, #(#params,)* shard: u32) -> #rt::Result<(), #rt::Error> {
                    let sk = #sk_expr;
                    #rt::delete_by_key(repo, Self::pk_on_shard(#(#pk_args2,)* shard)?, sk).await
                }
            });
        }
        _ => {
            let args = point_args(pk, sk);
            let params: Vec<TokenStream> = args.iter().map(|f| cx.param(f)).collect();
            let pk_args: Vec<TokenStream> = physical_args(pk).into_iter().map(arg_name).collect();
            let sk_expr = sk_value(&arg_name);
            let how = if matches!(pk.shard.value, Shard::Hash(_)) {
                "exactly one `GetItem`, on the shard its hash fields give"
            } else {
                "one `GetItem`"
            };
            let get_doc =
                format!("Reads one `{ident}` by its key: {how}. `None` if there is no such item.");
            let delete_doc =
                format!("Deletes one `{ident}` by its key (no error if there is none).");
            out.extend(quote! {
                #[doc = #get_doc]
                pub async fn get(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<::core::option::Option<Self>, #rt::Error> {
                    let sk = #sk_expr;
                    #rt::get_by_key(repo, Self::pk(#(#pk_args),*)?, sk).await
                }
                #[doc = #delete_doc]
                pub async fn delete(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Result<(), #rt::Error> {
                    let sk = #sk_expr;
                    #rt::delete_by_key(repo, Self::pk(#(#pk_args),*)?, sk).await
                }
            });
        }
    }
    out
}

/// `query` (base table) or `query_gsiN`, named by `query = "..."` when given.
fn query_method(cx: &Ctx, pk: &PartitionKey, gsi: Option<u8>) -> TokenStream {
    let rt = &cx.rt;
    let ident = &cx.entity.ident;
    let name = pk.query.clone().unwrap_or_else(|| match gsi {
        None => Ident::new("query", Span::call_site()),
        Some(n) => format_ident!("query_gsi{}", n),
    });
    let all_shards = match gsi {
        None => Ident::new("pk_all_shards", Span::call_site()),
        Some(n) => format_ident!("gsi{}_pk_all_shards", n),
    };
    let index = match gsi {
        None => quote!(::core::option::Option::None),
        Some(n) => quote!(::core::option::Option::Some(#n)),
    };
    let fields: Vec<&Ident> = pk.template.fields().collect();
    let params = fields.iter().map(|f| cx.param(f));
    let args = fields.iter().map(|f| {
        let name = &cx.field(f).ident;
        quote!(#name)
    });
    let shards = pk.n.as_ref().map_or(1, |n| n.value);
    let source = pk.template.lit.value();
    let doc = format!(
        "Queries every `{ident}` under the logical key `{source}`{}: {shards} shard(s) queried concurrently and \
         merged by sort key. Refine with `.limit`, `.descending`, `.sk_*`, then `.collect()`, `.stream()`, \
         `.page(..)` or `.count()`.",
        gsi.map(|n| format!(" of index gsi{n}")).unwrap_or_default()
    );
    quote! {
        #[doc = #doc]
        pub fn #name(repo: &#rt::Repo<Self>, #(#params),*) -> #rt::Query<Self> {
            #rt::query_shards(repo, #index, Self::#all_shards(#(#args),*))
        }
    }
}
