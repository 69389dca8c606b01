//! From `syn` to the model: reads the attributes, records syntax errors in the context.
//! Checks that need the whole model (does a field exist, is a key hot) live in `validate`.
//! This module dispatches the attributes and reads the container, the fields' roles and the
//! counters; `keys` reads the template keys, `attribute_gsi` the indexes of field lists.

use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, Lit, LitStr};

use crate::entity::model::Counter;
use crate::entity::model::{Container, Entity, Field, FieldRole, KeyAttr, SerdeName, Sp, TableRef};
use crate::internals::attr::{accepted_key, gsi_number, meta_key, set_once};
use crate::internals::ctxt::Ctxt;
use crate::internals::serde_attr::{serde_field, serde_name, serde_rename_all};
use crate::internals::suggest::did_you_mean;
use crate::internals::symbol::*;

mod attribute_gsi;
mod keys;

use attribute_gsi::{attribute_gsi, keyed_by_attributes};
use keys::{gsi, partition_key, sort_key};

pub fn entity(cx: &Ctxt, input: &DeriveInput) -> Option<Entity> {
    let named = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named),
            Fields::Unnamed(fields) => {
                cx.error_spanned_by(
                    fields,
                    "#[derive(ShardedEntity)] needs named fields: key templates refer to fields by \
                     name; turn this tuple struct into `struct Name { field: Type, .. }`",
                );
                None
            }
            Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    "#[derive(ShardedEntity)] needs a struct with named fields, and a unit struct \
                     has none to build keys from; add the fields the keys are made of",
                );
                None
            }
        },
        Data::Enum(data) => {
            cx.error_spanned_by(
                data.enum_token,
                "#[derive(ShardedEntity)] works on structs, not enums: derive it on one struct per \
                 entity and let them share a table",
            );
            None
        }
        Data::Union(data) => {
            cx.error_spanned_by(
                data.union_token,
                "#[derive(ShardedEntity)] works on structs with named fields, not unions",
            );
            None
        }
    };
    let generic = !input.generics.params.is_empty();
    if generic {
        cx.error_spanned_by(
            &input.generics,
            "#[derive(ShardedEntity)] does not support generic structs: an entity's keys and \
             schema are fixed at compile time; use a concrete struct (wrap a generic one if needed)",
        );
    }
    let named = named?;

    let rename_all = serde_rename_all(&input.attrs);
    let fields = named
        .named
        .iter()
        .filter_map(|f| {
            let ident = f.ident.clone()?;
            let serde = serde_field(&f.attrs);
            let serde_name = serde_name(&ident, &serde, rename_all.as_ref());
            let serde_source = match (&serde.rename, &rename_all) {
                (Some(_), _) => SerdeName::Rename,
                (None, Some((_, written))) => SerdeName::RenameAll(written.clone()),
                (None, None) => SerdeName::Ident,
            };
            Some(Field {
                ident,
                ty: f.ty.clone(),
                serde_name,
                serde_source,
                serde_attribute: !serde.flatten && !serde.skip,
                serde_flatten: serde.flatten,
                serde_with: serde.with,
                role: field_role(cx, &f.attrs),
            })
        })
        .collect();

    let mut entity = Entity {
        ident: input.ident.clone(),
        counters: Vec::new(),
        vis: input.vis.clone(),
        fields,
        container: Container::default(),
        pk: None,
        sk: None,
        gsis: Vec::new(),
        attribute_gsis: Vec::new(),
    };

    let mut seen_container = false;
    for attr in &input.attrs {
        let Some(name) = attr.path().get_ident().map(Ident::to_string) else {
            continue;
        };
        if name == SHARDED {
            if std::mem::replace(&mut seen_container, true) {
                cx.error_spanned_by(
                    attr.path(),
                    "duplicate #[sharded(...)] attribute: merge them into one",
                );
            }
            container(cx, attr, &mut entity.container);
        } else if name == PK {
            let pk = partition_key(cx, attr, PK, PK_KEYS, KeyAttr::Pk);
            if entity.pk.is_some() {
                cx.error_spanned_by(
                    attr.path(),
                    "duplicate #[pk(...)] attribute: an entity has one partition key",
                );
            } else {
                entity.pk = pk;
            }
        } else if name == SK {
            let sk = sort_key(cx, attr);
            if entity.sk.is_some() {
                cx.error_spanned_by(
                    attr.path(),
                    "duplicate #[sk(...)] attribute: an entity has one sort key",
                );
            } else {
                entity.sk = sk;
            }
        } else if name == COUNTER {
            if let Some(counter) = counter(cx, attr) {
                entity.counters.push(counter);
            }
        } else if let Some(number) = gsi_number(&name) {
            if entity.gsis.iter().any(|g| g.number == number)
                || entity.attribute_gsis.iter().any(|g| g.number == number)
            {
                cx.error_spanned_by(
                    attr.path(),
                    format!("duplicate #[{name}(...)] attribute: merge them into one"),
                );
            } else if keyed_by_attributes(attr) {
                if let Some(gsi) = attribute_gsi(cx, attr, number) {
                    entity.attribute_gsis.push(gsi);
                }
            } else if let Some(gsi) = gsi(cx, attr, number) {
                entity.gsis.push(gsi);
            }
        }
    }
    entity.gsis.sort_by_key(|g| g.number);
    entity.attribute_gsis.sort_by_key(|g| g.number);
    if generic {
        // The attributes were read for their errors; an entity (and so the fallback impl, which
        // would name the struct without its generics) would only add follow-on errors.
        return None;
    }
    if entity.pk.is_none() && !cx.has_errors() {
        cx.error_spanned_by(
            &input.ident,
            "missing #[pk(...)]: every entity needs a partition key, e.g. \
             #[pk(template = \"GAME#{game_id}\", shard = \"hash(player_id)\", n = 10)]",
        );
    }
    Some(entity)
}

fn container(cx: &Ctxt, attr: &Attribute, out: &mut Container) {
    let result = attr.parse_nested_meta(|meta| {
        match accepted_key(cx, &meta, SHARDED, CONTAINER_KEYS)? {
            Some(TABLE) => {
                // A string names the table in DynamoDB; a path names the type that declares
                // the table (`#[derive(ShardedTable)]`).
                let mut value: syn::Expr = meta.value()?.parse()?;
                // A type or path passed through a `macro_rules!` arrives in an invisible group.
                while let syn::Expr::Group(group) = value {
                    value = *group.expr;
                }
                let table = match value {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: Lit::Str(lit), ..
                    }) => Some(TableRef::Name(lit)),
                    syn::Expr::Path(path) if path.qself.is_none() => {
                        Some(TableRef::Type(path.path))
                    }
                    other => {
                        cx.error_spanned_by(
                            &other,
                            "`table` is the table's name in DynamoDB (`table = \"scores\"`) or \
                             the type that declares it with #[derive(ShardedTable)] \
                             (`table = Leaderboards`)",
                        );
                        None
                    }
                };
                if let Some(table) = table {
                    set_once(cx, &meta, SHARDED, &mut out.table, table);
                }
            }
            Some(ENTITY) => {
                let lit: LitStr = meta.value()?.parse()?;
                if lit.value().is_empty() {
                    cx.error_spanned_by(&lit, "the entity name must not be empty");
                }
                set_once(cx, &meta, SHARDED, &mut out.entity, lit);
            }
            Some(_) => {
                // `crate = "path"`, serde's spelling: a path to the `sharded` facade.
                if let Some(path) = crate::internals::attr::crate_value(cx, &meta)? {
                    set_once(cx, &meta, SHARDED, &mut out.krate, path);
                }
            }
            None => {}
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
    }
}

/// `#[sharded(version)]`, `#[sharded(ttl)]`, `#[sharded(created_at)]` or
/// `#[sharded(updated_at)]` on a field.
fn field_role(cx: &Ctxt, attrs: &[Attribute]) -> Option<Sp<FieldRole>> {
    let mut role: Option<Sp<FieldRole>> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident(SHARDED)) {
        let result = attr.parse_nested_meta(|meta| {
            let name = meta_key(&meta);
            let parsed = match name.as_str() {
                "version" => FieldRole::Version,
                "ttl" => FieldRole::Ttl,
                "created_at" => FieldRole::CreatedAt,
                "updated_at" => FieldRole::UpdatedAt,
                _ => {
                    let hint = did_you_mean(&name, FIELD_KEYS.iter().copied())
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
                    cx.error_spanned_by(
                        &meta.path,
                        format!(
                            "unknown field attribute `{name}`: {hint}#[sharded(...)] on a field \
                             takes one of `version`, `ttl`, `created_at`, `updated_at`"
                        ),
                    );
                    return Ok(());
                }
            };
            let span = meta.path.span();
            if let Some(earlier) = &role {
                cx.error_at(
                    span,
                    format!(
                        "this field is already `{}`: a field has one role; use another field \
                         for `{}`",
                        earlier.value.key(),
                        parsed.key()
                    ),
                );
            } else {
                role = Some(Sp::new(parsed, span));
            }
            Ok(())
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    role
}

/// `#[counter(name = "votes", n = 10)]`. A missing key is reported once: not after an
/// unknown key, which most likely was meant to be it (`shards = 10`). A counter without `n`
/// (reported) is still modelled, so the surface emitted next to the error keeps its function.
fn counter(cx: &Ctxt, attr: &Attribute) -> Option<Counter> {
    let mut name: Option<LitStr> = None;
    let mut n: Option<syn::LitInt> = None;
    let mut unknown = false;
    let result = attr.parse_nested_meta(|meta| {
        match accepted_key(cx, &meta, COUNTER, COUNTER_KEYS)? {
            Some(NAME) => {
                let lit: LitStr = meta.value()?.parse()?;
                set_once(cx, &meta, COUNTER, &mut name, lit);
            }
            Some(_) => {
                let lit: syn::LitInt = meta.value()?.parse()?;
                set_once(cx, &meta, COUNTER, &mut n, lit);
            }
            None => unknown = true,
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    let Some(name) = name else {
        if !unknown {
            cx.error_spanned_by(
                attr,
                "#[counter(...)] needs `name = \"...\"`: it names the generated \
                 `<name>_counter` function, e.g. #[counter(name = \"votes\", n = 10)]",
            );
        }
        return None;
    };
    if n.is_none() && !unknown {
        cx.error_spanned_by(
            attr,
            "#[counter(...)] needs `n = ..`: the number of shards its writes spread over, \
             e.g. #[counter(name = \"votes\", n = 10)]",
        );
    }
    let n = n.and_then(|lit| match lit.base10_parse::<u32>() {
        Ok(value) => Some(Sp::new(value, lit.span())),
        Err(_) => {
            cx.error_spanned_by(
                &lit,
                "a counter needs at least 1 shard: n = 10 spreads its writes over 10 items",
            );
            None
        }
    });
    Some(Counter { name, n })
}
