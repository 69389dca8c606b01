//! From `syn` to the model: reads the attributes, records syntax errors in the context.
//! Checks that need the whole model (does a field exist, is a key hot) live in `validate`.

use quote::format_ident;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, Lit, LitStr};

use crate::internals::attr::{accepted_key, gsi_number, meta_key, set_once, skip};
use crate::internals::ctxt::Ctxt;
use crate::internals::serde_attr::{serde_field, serde_name, serde_rename_all};
use crate::internals::shard::shard_expression;
use crate::internals::spanned::at_span;
use crate::internals::suggest::did_you_mean;
use crate::internals::symbol::*;
use crate::internals::template::template;
use crate::entity::model::Counter;
use crate::entity::model::{
    AttributeGsi, Container, Entity, Field, FieldRole, Gsi, KeyAttr, PartitionKey, Previous,
    SerdeName, Shard, SortKey, Sp, TableRef,
};

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
                let lit: LitStr = meta.value()?.parse()?;
                match lit.parse_with(syn::Path::parse_mod_style) {
                    Ok(path) => set_once(cx, &meta, SHARDED, &mut out.krate, path),
                    Err(_) => cx.error_spanned_by(
                        &lit,
                        format!(
                            "`crate` must be the path of the `sharded` crate as your code reaches it, \
                             e.g. `crate = \"::sharded\"` or `crate = \"my_facade::sharded\"`; \
                             `{}` is not a path",
                            lit.value()
                        ),
                    ),
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

/// The raw keys of a `#[pk(...)]` or `#[gsiN(...)]`, before they become a model.
#[derive(Default)]
struct RawPartition {
    template: Option<LitStr>,
    shard: Option<Lit>,
    n: Option<syn::LitInt>,
    single_partition: Option<LitStr>,
    query: Option<LitStr>,
    index: Option<LitStr>,
    sk: Option<LitStr>,
    previous_n: Option<syn::LitInt>,
    legacy: Option<LitStr>,
    suffix: Option<LitStr>,
    previous_suffix: Option<LitStr>,
    previous_shard: Option<LitStr>,
}

fn read_partition(
    cx: &Ctxt,
    attr: &Attribute,
    name: &str,
    allowed: &[&'static str],
) -> Option<RawPartition> {
    let mut raw = RawPartition::default();
    let result = attr.parse_nested_meta(|meta| {
        if name != PK
            && [PREVIOUS_N, LEGACY, PREVIOUS_SUFFIX, PREVIOUS_SHARD]
                .iter()
                .any(|key| meta.path.is_ident(key))
        {
            cx.syn_error(meta.error(format!(
                "a layout transition is declared on the base table's #[pk], not on #[{name}]: \
                 an index key is rewritten by every put, so to change it, change #[{name}] and \
                 re-put the items"
            )));
            return skip(&meta);
        }
        let Some(key) = accepted_key(cx, &meta, name, allowed)? else {
            return Ok(());
        };
        match key {
            // `#[pk(template = ..)]` and `#[gsi1(pk = ..)]` both name the partition template.
            TEMPLATE | PK => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.template, v);
            }
            SK => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.sk, v);
            }
            SHARD => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.shard, v);
            }
            N => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.n, v);
            }
            SINGLE_PARTITION => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.single_partition, v);
            }
            QUERY => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.query, v);
            }
            PREVIOUS_N => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.previous_n, v);
            }
            LEGACY => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.legacy, v);
            }
            SUFFIX => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.suffix, v);
            }
            PREVIOUS_SUFFIX => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.previous_suffix, v);
            }
            PREVIOUS_SHARD => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.previous_shard, v);
            }
            _ => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.index, v);
            }
        }
        Ok(())
    });
    match result {
        Ok(()) => Some(raw),
        Err(e) => {
            cx.syn_error(e);
            None
        }
    }
}

fn partition_key(
    cx: &Ctxt,
    attr: &Attribute,
    name: &str,
    allowed: &[&'static str],
    attribute: KeyAttr,
) -> Option<PartitionKey> {
    let raw = read_partition(cx, attr, name, allowed)?;
    partition_from_raw(cx, attr, name, raw, attribute)
}

fn partition_from_raw(
    cx: &Ctxt,
    attr: &Attribute,
    name: &str,
    raw: RawPartition,
    attribute: KeyAttr,
) -> Option<PartitionKey> {
    let is_gsi = name != PK;
    let template_key = if is_gsi { PK } else { TEMPLATE };
    let Some(template_lit) = raw.template else {
        cx.error_spanned_by(
            attr.path(),
            format!("#[{name}(...)] needs `{template_key} = \"...\"`, the key template, e.g. `{template_key} = \"GAME#{{game_id}}\"`"),
        );
        return None;
    };
    let template = template(cx, &template_lit);

    let mut n = raw
        .n
        .as_ref()
        .and_then(|lit| match lit.base10_parse::<u32>() {
            Ok(v) => Some(Sp::new(v, lit.span())),
            Err(_) => {
                cx.error_spanned_by(
                    lit,
                    "`n` must be a whole number of shards: at least 1, at most `sharded::schema::MAX_SHARDS`",
                );
                None
            }
        });
    let shard = match &raw.shard {
        None => Sp::new(Shard::None, attr.path().span()),
        Some(Lit::Str(expr)) => Sp::new(shard_expression(cx, expr), expr.span()),
        Some(Lit::Int(count)) if is_gsi => {
            if let Some(n_lit) = &raw.n {
                cx.error_spanned_by(
                    n_lit,
                    format!("`n` is not needed here: `shard = {count}` already sets the shard count of #[{name}]"),
                );
            }
            match count.base10_parse::<u32>() {
                Ok(v) => n = Some(Sp::new(v, count.span())),
                Err(_) => cx.error_spanned_by(
                    count,
                    "the shard count must be a whole number: at least 1, at most `sharded::schema::MAX_SHARDS`",
                ),
            }
            Sp::new(Shard::Identity, count.span())
        }
        Some(other) => {
            let expected = if is_gsi {
                "`shard = N` (a count: hash the item's primary key), or `shard = \"hash(field)\", n = N`"
            } else {
                "`shard = \"hash(field, ...)\"` or `shard = \"random\"`, with `n = N`"
            };
            cx.error_spanned_by(
                other,
                format!("unsupported shard value: expected {expected}"),
            );
            Sp::new(Shard::Invalid { meant: None }, other.span())
        }
    };
    let query = raw
        .query
        .and_then(|lit| match syn::parse_str::<Ident>(&lit.value()) {
            Ok(ident) => Some(at_span(ident, lit.span())),
            Err(_) => {
                cx.error_spanned_by(
                    &lit,
                    "`query` must be a function name, e.g. `query = \"query_game\"`",
                );
                None
            }
        });
    let unknown_placement = match &raw.previous_shard {
        None => false,
        Some(lit) if lit.value() == UNKNOWN => true,
        Some(lit) => {
            cx.error_spanned_by(
                lit,
                format!(
                    "`previous_shard` says where the previous layout put an item when it is not \
                     this key's rule: `previous_shard = \"{UNKNOWN}\"` (written with random shards, \
                     or another hash: any previous shard may hold an item); leave it out when \
                     the previous layout placed items as this key does"
                ),
            );
            // Some other placement was meant: checked on as unknown, so one mistake is one
            // error.
            true
        }
    };
    let shards_only = |lit: &Option<LitStr>, key: &str| {
        if let Some(lit) = lit {
            cx.error_spanned_by(
                lit,
                format!(
                    "`{key}` describes the previous shards of a resharding: declare \
                     `previous_n = N` with it (a `legacy` key is unsharded)"
                ),
            );
        }
    };
    let previous = match (raw.previous_n, raw.legacy) {
        (Some(count), Some(legacy)) => {
            cx.error_spanned_by(
                &legacy,
                "declare one transition at a time: `previous_n` (resharding) or `legacy` \
                 (adopting sharding), not both; finish the first migration, then declare the next",
            );
            count.base10_parse::<u32>().ok().map(|v| Previous::Shards {
                n: Sp::new(v, count.span()),
                suffix: raw.previous_suffix,
                unknown_placement,
            })
        }
        (Some(count), None) => match count.base10_parse::<u32>() {
            Ok(v) => Some(Previous::Shards {
                n: Sp::new(v, count.span()),
                suffix: raw.previous_suffix,
                unknown_placement,
            }),
            Err(_) => {
                cx.error_spanned_by(
                    &count,
                    "`previous_n` must be the whole number of shards the key had before, e.g. `previous_n = 10`",
                );
                None
            }
        },
        (None, legacy) => {
            shards_only(&raw.previous_suffix, PREVIOUS_SUFFIX);
            shards_only(&raw.previous_shard, PREVIOUS_SHARD);
            legacy.and_then(|legacy| self::template(cx, &legacy).map(Previous::Legacy))
        }
    };
    Some(PartitionKey {
        attribute,
        template: template?,
        shard,
        n,
        single_partition: raw.single_partition,
        query,
        previous,
        suffix: raw.suffix,
    })
}

fn sort_key(cx: &Ctxt, attr: &Attribute) -> Option<SortKey> {
    let mut lit = None;
    let result = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident(SHARD) || meta.path.is_ident(N) {
            cx.syn_error(meta.error(
                "a sort key is never sharded: shard the partition key with #[pk(shard = ..., n = ...)]",
            ));
            return skip(&meta);
        }
        if accepted_key(cx, &meta, SK, SK_KEYS)?.is_some() {
            let v: LitStr = meta.value()?.parse()?;
            set_once(cx, &meta, SK, &mut lit, v);
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    let Some(lit) = lit else {
        cx.error_spanned_by(
            attr.path(),
            "#[sk(...)] needs `template = \"...\"`, e.g. `template = \"SCORE#{score}\"`",
        );
        return None;
    };
    Some(SortKey {
        attribute: KeyAttr::Sk,
        template: template(cx, &lit)?,
    })
}

fn gsi(cx: &Ctxt, attr: &Attribute, number: u8) -> Option<Gsi> {
    let name = format!("{GSI_PREFIX}{number}");
    let mut raw = read_partition(cx, attr, &name, GSI_KEYS)?;
    let index_name = raw.index.take();
    let sk_lit = raw.sk.take();
    let pk = partition_from_raw(cx, attr, &name, raw, KeyAttr::GsiPk(number));
    let sk = match sk_lit {
        Some(lit) => Some(SortKey {
            attribute: KeyAttr::GsiSk(number),
            template: template(cx, &lit)?,
        }),
        None => None,
    };
    Some(Gsi {
        number,
        index_name,
        pk: pk?,
        sk,
    })
}

/// Whether a `#[gsiN(..)]` names its keys as field lists (`pk = [game_id]`): an index keyed
/// by the fields' own attributes.
fn keyed_by_attributes(attr: &Attribute) -> bool {
    let Ok(list) = attr.meta.require_list() else {
        return false;
    };
    let mut found = false;
    let _ = list.parse_nested_meta(|meta| {
        if meta.input.peek(syn::Token![=]) {
            let value = meta.value()?;
            found |= (meta.path.is_ident(PK) || meta.path.is_ident(SK))
                && value.peek(syn::token::Bracket);
            value.parse::<syn::Expr>()?;
        } else if meta.input.peek(syn::token::Paren) {
            meta.parse_nested_meta(|inner| skip(&inner))?;
        }
        Ok(())
    });
    found
}

/// A `[field, ..]` list of `pk = [..]` or `sk = [..]`, with the span of the brackets. An
/// element that is not a field name is reported and left out.
fn field_list(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Sp<Vec<Ident>>> {
    let array: syn::ExprArray = meta.value()?.parse()?;
    let span = array.bracket_token.span.join();
    let mut fields = Vec::new();
    for element in &array.elems {
        let ident = match element {
            syn::Expr::Path(path) => path.path.get_ident(),
            _ => None,
        };
        match ident {
            Some(ident) => fields.push(ident.clone()),
            None => cx.error_spanned_by(
                element,
                "expected a field name: the list names the struct's fields, e.g. \
                 `pk = [game_id]`, `sk = [score, player_id]`",
            ),
        }
    }
    Ok(Sp::new(fields, span))
}

/// `#[gsiN(pk = [a, b], sk = [c, d], shard = n)]`.
fn attribute_gsi(cx: &Ctxt, attr: &Attribute, number: u8) -> Option<AttributeGsi> {
    let name = format!("{GSI_PREFIX}{number}");
    let (mut pk, mut sk, mut shard, mut shard_attribute, mut query, mut index) =
        (None, None, None, None, None, None);
    let result = attr.parse_nested_meta(|meta| {
        let Some(key) = accepted_key(cx, &meta, &name, ATTRIBUTE_GSI_KEYS)? else {
            return Ok(());
        };
        match key {
            PK => {
                let list = field_list(cx, &meta)?;
                set_once(cx, &meta, &name, &mut pk, list);
            }
            SK => {
                let list = field_list(cx, &meta)?;
                set_once(cx, &meta, &name, &mut sk, list);
            }
            SHARD => {
                let value: Lit = meta.value()?.parse()?;
                match &value {
                    Lit::Int(count) => match count.base10_parse::<u32>() {
                        Ok(v) => set_once(cx, &meta, &name, &mut shard, Sp::new(v, count.span())),
                        Err(_) => cx.error_spanned_by(
                            count,
                            "the shard count must be a whole number: at least 1, at most `sharded::schema::MAX_SHARDS`",
                        ),
                    },
                    other => cx.error_spanned_by(
                        other,
                        "a multi-attribute index's shard is a count, `shard = N`: the item's \
                         primary key hashed over N shards, written to its own number attribute",
                    ),
                }
            }
            SHARD_ATTRIBUTE => {
                let lit: LitStr = meta.value()?.parse()?;
                set_once(cx, &meta, &name, &mut shard_attribute, lit);
            }
            QUERY => {
                let lit: LitStr = meta.value()?.parse()?;
                set_once(cx, &meta, &name, &mut query, lit);
            }
            _ => {
                let lit: LitStr = meta.value()?.parse()?;
                set_once(cx, &meta, &name, &mut index, lit);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        cx.syn_error(e);
        return None;
    }
    let Some(pk) = pk else {
        cx.error_spanned_by(
            attr.path(),
            format!("#[{name}(sk = [..])] needs `pk = [..]`, the partition fields, e.g. `pk = [game_id]`"),
        );
        return None;
    };
    if shard.is_none() {
        cx.error_spanned_by(
            attr.path(),
            format!(
                "#[{name}(pk = [..])] needs `shard = N`: a multi-attribute index is sharded \
                 by the item's primary key hashed over N shards (use 1 for an unsharded index)"
            ),
        );
    }
    let query = match query {
        Some(lit) => match syn::parse_str::<Ident>(&lit.value()) {
            Ok(ident) => at_span(ident, lit.span()),
            Err(_) => {
                cx.error_spanned_by(
                    &lit,
                    "`query` must be a function name, e.g. `query = \"query_game\"`",
                );
                format_ident!("query_{}", name)
            }
        },
        None => format_ident!("query_{}", name),
    };
    if let Some(sk) = sk.as_ref().filter(|sk| sk.value.is_empty()) {
        cx.error_at(
            sk.span,
            format!("an empty `sk = []` in #[{name}]: name the sort fields, or leave `sk` out for an index without a sort key"),
        );
    }
    Some(AttributeGsi {
        number,
        index_name: index,
        sk: sk.unwrap_or_else(|| Sp::new(Vec::new(), pk.span)),
        pk,
        n: shard,
        shard_attribute: match shard_attribute {
            Some(lit) => Sp::new(lit.value(), lit.span()),
            None => Sp::new(format!("{name}_shard"), attr.path().span()),
        },
        query,
    })
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
