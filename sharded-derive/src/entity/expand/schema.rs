//! The schema static: `__SCHEMA`, the `EntitySchema` the runtime reads every key, shard
//! count and maintained field from, its key templates, and the facts the collection and
//! projection derives check against (hidden items of the `ShardedEntity` impl).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Type};

use super::keys::{key_ident, template_ident};
use super::params::Ctx;
use crate::entity::model::{FieldRole, KeyAttr, TableRef};
use crate::entity::resolve::{RPartition, RPrevious, RSegment, RShard, RTemplate, TimeFormat};
use crate::internals::spanned::respan;

/// The key templates and `__SCHEMA` of a valid entity, whose base partition key is `pk`.
pub(super) fn schema_static(cx: &Ctx, pk: &RPartition) -> TokenStream {
    let (rt, r) = (cx.rt, cx.r);
    let entity_name = &r.entity_name;
    let table = match &r.entity.container.table {
        Some(TableRef::Name(t)) => quote!(::core::option::Option::Some(#t)),
        _ => quote!(::core::option::Option::None),
    };
    // The entity's table: its names and recognition, read by every key attribute below and
    // by the runtime through `EntitySchema::table_schema`.
    let table_schema = match r.table_type {
        Some(path) => {
            let checked = respan(rt, path.span());
            quote_spanned!(path.span()=> <#path as #checked::ShardedTable>::SCHEMA)
        }
        None => quote!(&#rt::TableSchema::DEFAULT),
    };
    let templates = templates(cx, pk);
    let pk_schema = partition_schema(cx, pk, &format_ident!("__PK_TEMPLATE"));
    let pk_schema = match &pk.previous {
        None => pk_schema,
        Some(RPrevious::Shards {
            n: old,
            suffix,
            unknown_placement,
        }) => {
            let mut previous = quote!(#rt::PreviousLayout::shards(#old));
            if let Some(suffix) = suffix {
                let declared = declared_suffix(rt, suffix);
                previous = quote!(#previous.with_suffix(#declared));
            }
            if *unknown_placement {
                previous = quote!(#previous.with_placement(#rt::PreviousPlacement::Unknown));
            }
            quote!(#pk_schema.with_previous(#previous))
        }
        Some(RPrevious::Legacy(_)) => {
            quote!(#pk_schema.with_previous(#rt::PreviousLayout::legacy(&__PK_LEGACY_TEMPLATE)))
        }
    };
    let pk_schema = match pk.max_n {
        Some(max_n) => quote!(#pk_schema.with_per_key(#max_n)),
        None => pk_schema,
    };
    let sk_schema = match &r.sk {
        Some(sk) => {
            let attr = cx.key_attr(sk.attribute);
            quote!(::core::option::Option::Some(#rt::SortKeySchema::new(#attr, &__SK_TEMPLATE)))
        }
        None => quote!(::core::option::Option::None),
    };
    let gsi_schemas = r.gsis.iter().map(|g| {
        let number = g.number;
        let index = cx.index_name(number, g.index_name);
        let pk_s = partition_schema(cx, &g.pk, &format_ident!("__GSI{}_PK_TEMPLATE", number));
        let sk_s = match &g.sk {
            Some(sk) => {
                let attr = cx.key_attr(sk.attribute);
                let t = format_ident!("__GSI{}_SK_TEMPLATE", number);
                quote!(::core::option::Option::Some(#rt::SortKeySchema::new(#attr, &#t)))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#rt::GsiSchema::new(#number, #index, #pk_s, #sk_s))
    });
    let (attribute_gsis, attribute_statics) = super::attribute_gsi::schema_entries(cx);
    let gsi_schemas = gsi_schemas.chain(attribute_gsis);
    let roles = role_schema(cx);
    quote! {
        const __TABLE: &'static #rt::TableSchema = #table_schema;
        #(#templates)*
        #(#attribute_statics)*

        static __SCHEMA: #rt::EntitySchema = #rt::EntitySchema::new(
            #entity_name,
            #table,
            #pk_schema,
            #sk_schema,
            &[#(#gsi_schemas),*],
        ).in_table(__TABLE)#roles;
    }
}

/// `ShardSuffix::declared("..")`, spanned at the user's literal: the runtime's rules decide
/// whether the spelling parses back, and a refusal is a compile error under the literal.
fn declared_suffix(rt: &TokenStream, suffix: &LitStr) -> TokenStream {
    let checked = respan(rt, suffix.span());
    quote_spanned!(suffix.span()=> #checked::ShardSuffix::declared(#suffix))
}

/// The `KeyTemplate` statics (`__PK_TEMPLATE`, `__PK_LEGACY_TEMPLATE`, `__SK_TEMPLATE`,
/// `__GSI1_PK_TEMPLATE`, ..) and, beside each current one, its `EntityKey` (`__PK`, `__SK`,
/// `__GSI1_PK`, ..): the template with the entity and attribute its errors name.
fn templates(cx: &Ctx, pk: &RPartition) -> Vec<TokenStream> {
    let r = cx.r;
    let mut templates = vec![keyed_template(cx, "pk", pk.attribute, &pk.template)];
    if let Some(RPrevious::Legacy(legacy)) = &pk.previous {
        templates.push(template_static(cx.rt, "__PK_LEGACY_TEMPLATE", legacy));
    }
    if let Some(sk) = &r.sk {
        templates.push(keyed_template(cx, "sk", sk.attribute, &sk.template));
    }
    for g in &r.gsis {
        let number = g.number;
        let name = format!("gsi{number}_pk");
        templates.push(keyed_template(cx, &name, g.pk.attribute, &g.pk.template));
        if let Some(sk) = &g.sk {
            let name = format!("gsi{number}_sk");
            templates.push(keyed_template(cx, &name, sk.attribute, &sk.template));
        }
    }
    templates
}

/// The template static of the key function `fn_name` and its `EntityKey`.
fn keyed_template(
    cx: &Ctx,
    fn_name: &str,
    attribute: KeyAttr,
    template: &RTemplate,
) -> TokenStream {
    let rt = cx.rt;
    let attribute = cx.key_attr(attribute);
    let entity_name = &cx.r.entity_name;
    let template_name = template_ident(fn_name);
    let key = key_ident(fn_name);
    let template = template_static(rt, &template_name.to_string(), template);
    quote! {
        #template
        const #key: #rt::EntityKey = #rt::EntityKey::new(#entity_name, #attribute, &#template_name);
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
            let variant = Ident::new(&format!("{granularity:?}"), Span::call_site());
            quote!(#rt::Segment::bucket(#f, #rt::Granularity::#variant))
        }
    });
    quote! {
        static #name: #rt::KeyTemplate = #rt::KeyTemplate::new(#source, &[#(#segments),*]);
    }
}

fn partition_schema(cx: &Ctx, pk: &RPartition, template: &Ident) -> TokenStream {
    let rt = cx.rt;
    let attribute = cx.key_attr(pk.attribute);
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
    let schema = quote!(#rt::PartitionKeySchema::new(#attribute, &#template, #sharding));
    match pk.suffix {
        Some(suffix) => {
            let declared = declared_suffix(rt, suffix);
            quote!(#schema.with_suffix(#declared))
        }
        None => schema,
    }
}

/// `.with_version(..)`, `.with_ttl(..)`, ... on the schema, for the fields that have a role.
fn role_schema(cx: &Ctx) -> TokenStream {
    let rt = cx.rt;
    let setters = cx.r.roles.iter().map(|role| {
        let attribute = role.attribute;
        let format = match role.format {
            TimeFormat::Rfc3339 => quote!(#rt::TimeFormat::Rfc3339),
            TimeFormat::EpochSeconds => quote!(#rt::TimeFormat::EpochSeconds),
        };
        match role.role {
            FieldRole::Version => quote!(.with_version(#attribute)),
            FieldRole::Ttl => quote!(.with_ttl(#attribute)),
            FieldRole::CreatedAt => {
                quote!(.with_created_at(#rt::TimeAttribute::new(#attribute, #format)))
            }
            FieldRole::UpdatedAt => {
                quote!(.with_updated_at(#rt::TimeAttribute::new(#attribute, #format)))
            }
        }
    });
    quote!(#(#setters)*)
}

/// The facts the collection and projection derives check against, as hidden items of the
/// `ShardedEntity` impl (one trait, so a type that is no entity is reported once): the
/// partition-key field types (members of a collection must agree) and the stored attribute
/// names (a projection may only name those).
pub(super) fn entity_shape(cx: &Ctx) -> TokenStream {
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
        type __PartitionTypes = (#(#types,)*);
        const __ATTRIBUTES: &'static [&'static str] = &[#(#names),*];
        const __OPEN: bool = #open;
    }
}
