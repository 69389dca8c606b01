//! From `syn` to the model: reads the attributes, records syntax errors in the context.
//! Checks that need the whole model (does a field exist, is a key hot) live in `validate`.

use quote::format_ident;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, Lit, LitStr};

use crate::ctxt::Ctxt;
use crate::model::Counter;
use crate::model::{
    AttributeGsi, Container, Entity, Field, FieldRole, Granularity, Gsi, KeyAttr, PartitionKey,
    Previous, Segment, SerdeName, Shard, SortKey, Sp, TableRef, Template,
};
use crate::serde_attr::{serde_field, serde_name, serde_rename_all};
use crate::suggest::{did_you_mean, did_you_mean_keyword};
use crate::symbol::*;

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

pub(crate) fn gsi_number(name: &str) -> Option<u8> {
    let digits = name.strip_prefix(GSI_PREFIX)?;
    if digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().filter(|n| (1..=MAX_GSIS).contains(n))
}

/// The error for a key `attr` does not accept, and the accepted key the user most likely
/// meant: parsing goes on as if that key had been written, so one typo is one error and the
/// rest of the attribute is still read (and the generated surface keeps its shape).
fn unknown_key(
    meta: &ParseNestedMeta,
    attr: &str,
    allowed: &[&'static str],
) -> (syn::Error, Option<&'static str>) {
    let key = meta_key(meta);
    let (hint, meant) = match (attr == PK, key.as_str()) {
        (true, PK) => (
            format!("the template of #[{PK}(...)] is `{TEMPLATE} = \"...\"`; "),
            Some(TEMPLATE),
        ),
        (true, SK) => (
            format!("the sort key is its own attribute, #[{SK}({TEMPLATE} = \"...\")]; "),
            None,
        ),
        (false, TEMPLATE) if attr.starts_with(GSI_PREFIX) => (
            format!("a GSI names its key templates `{PK} = \"...\"` and `{SK} = \"...\"`; "),
            Some(PK),
        ),
        _ => match did_you_mean(&key, allowed.iter().copied()) {
            Some(s) => (format!("did you mean `{s}`? "), Some(s)),
            None => (String::new(), None),
        },
    };
    let error = meta.error(format!(
        "unknown key `{key}` in #[{attr}(...)]: {hint}expected one of: {}",
        allowed.join(", ")
    ));
    (error, meant)
}

/// The key of a nested meta item as written (`template` in `template = "..."`).
fn meta_key(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(Ident::to_string)
        .unwrap_or_default()
}

/// The accepted key `meta` stands for: itself, or (after recording the error) the key a
/// misspelling most likely meant. `None`: the unknown key's value has been skipped.
pub(crate) fn accepted_key(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    attr: &str,
    allowed: &[&'static str],
) -> syn::Result<Option<&'static str>> {
    let key = meta_key(meta);
    if let Some(known) = allowed.iter().find(|k| **k == key) {
        return Ok(Some(known));
    }
    let (error, meant) = unknown_key(meta, attr, allowed);
    cx.syn_error(error);
    if meant.is_none() {
        skip(meta)?;
    }
    Ok(meant)
}

/// Records `value` in `slot`, or a "duplicate key" error at the second occurrence.
pub(crate) fn set_once<T>(
    cx: &Ctxt,
    meta: &ParseNestedMeta,
    attr: &str,
    slot: &mut Option<T>,
    value: T,
) {
    if slot.is_some() {
        let key = meta_key(meta);
        cx.error_spanned_by(
            &meta.path,
            format!("duplicate key `{key}` in #[{attr}(...)]: keep one"),
        );
    } else {
        *slot = Some(value);
    }
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

/// `"hash(a, b)"` or `"random"`. A refused expression is recorded and becomes
/// `Shard::Invalid`, with the expression a misspelling most likely meant.
fn shard_expression(cx: &Ctxt, lit: &LitStr) -> Shard {
    let text = lit.value();
    let text = text.trim();
    if text == "random" {
        return Shard::Random;
    }
    let (func, args) = match text.split_once('(') {
        Some((func, rest)) if rest.ends_with(')') => (func.trim(), Some(&rest[..rest.len() - 1])),
        _ => (text, None),
    };
    match (func, args) {
        ("hash", Some(args)) => match hash_fields(text, args, lit) {
            Ok(fields) => Shard::Hash(fields),
            Err(message) => {
                cx.error_spanned_by(lit, message);
                Shard::Invalid { meant: None }
            }
        },
        _ => {
            let meant_name = did_you_mean(func, ["hash", "random"]);
            let hint = meant_name
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            cx.error_spanned_by(
                lit,
                format!(
                    "unknown shard expression `{text}`{hint}: expected `hash(field, ...)` (the shard follows \
                     the fields, so point lookups know it) or `random` (spread evenly; reads ask every shard)"
                ),
            );
            let meant = match (meant_name, args) {
                (Some("random"), _) => Some(Shard::Random),
                (Some("hash"), Some(args)) => hash_fields(text, args, lit).ok().map(Shard::Hash),
                _ => None,
            };
            Shard::Invalid {
                meant: meant.map(Box::new),
            }
        }
    }
}

/// A name parsed from a string (`"player_id"`, `"r#type"`), at the string's span. (Not
/// `Ident::new(&ident.to_string(), ..)`: that panics on a raw identifier.)
fn at_span(mut ident: Ident, span: proc_macro2::Span) -> Ident {
    ident.set_span(span);
    ident
}

/// The fields of `hash(args)`, or the message saying why they are refused.
fn hash_fields(text: &str, args: &str, lit: &LitStr) -> Result<Vec<Ident>, String> {
    if args.trim().is_empty() {
        return Err(
            "`hash()` needs the fields to hash: write `hash(field)` or `hash(field_a, field_b)`"
                .to_owned(),
        );
    }
    let mut fields: Vec<Ident> = Vec::new();
    for arg in args.split(',').map(str::trim) {
        if fields.iter().any(|f| f == arg) {
            return Err(format!(
                "`{arg}` appears twice in `{text}`: list each field once"
            ));
        }
        if arg.is_empty() {
            return Err(format!(
                "`{text}` has an empty field name: write `hash(field)` or `hash(field_a, field_b)`"
            ));
        }
        match syn::parse_str::<Ident>(arg) {
            Ok(ident) => fields.push(at_span(ident, lit.span())),
            Err(_) => {
                return Err(format!(
                    "`{arg}` is not a field name: write `hash(field)` or `hash(field_a, field_b)`"
                ))
            }
        }
    }
    Ok(fields)
}

/// Parses `GAME#{game_id}` into segments, refusing what could not be parsed back.
fn template(cx: &Ctxt, lit: &LitStr) -> Option<Template> {
    let text = lit.value();
    let fail = |message: String| {
        cx.error_spanned_by(lit, message);
        None
    };
    if text.is_empty() {
        return fail("a key template must not be empty: write literal text and `{field}`s, e.g. \"GAME#{game_id}\"".into());
    }
    let mut segments: Vec<Segment> = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices();
    while let Some((_, c)) = chars.next() {
        match c {
            '{' => {
                let mut name = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed || name.contains('{') {
                    return fail(format!(
                        "unclosed `{{` in template \"{text}\": write fields as `{{field}}`"
                    ));
                }
                let written = name.trim().to_owned();
                let (name, granularity) = match written.split_once(':') {
                    Some((field, granularity)) => (field.trim(), Some(granularity.trim())),
                    None => (written.as_str(), None),
                };
                if name.is_empty() {
                    return fail(format!(
                        "empty `{{{written}}}` in template \"{text}\": name a field inside the braces{}",
                        if granularity.is_some() { ", e.g. `{at:day}`" } else { "" }
                    ));
                }
                let Ok(ident) = syn::parse_str::<Ident>(name) else {
                    if syn::parse_str::<Ident>(&format!("r#{name}")).is_ok() {
                        return fail(format!(
                            "`{{{name}}}` in template \"{text}\" is a keyword: write the field as \
                             the struct does, `{{r#{name}}}`"
                        ));
                    }
                    return fail(format!(
                        "`{{{name}}}` in template \"{text}\" is not a field name"
                    ));
                };
                if !literal.is_empty() {
                    segments.push(Segment::Literal(std::mem::take(&mut literal)));
                }
                if let Some(Segment::Field(prev) | Segment::Bucket(prev, _)) = segments.last() {
                    return fail(format!(
                        "`{{{prev}}}{{{written}}}` in template \"{text}\": two fields need a `#` between them, or the key cannot be parsed back"
                    ));
                }
                if segments
                    .iter()
                    .any(|s| matches!(s, Segment::Field(f) | Segment::Bucket(f, _) if f == name))
                {
                    return fail(format!(
                        "field `{name}` appears twice in template \"{text}\": use it once"
                    ));
                }
                let ident = at_span(ident, lit.span());
                match granularity {
                    None => segments.push(Segment::Field(ident)),
                    Some(granularity) => {
                        if let Some((earlier, _)) = segments.iter().find_map(|s| match s {
                            Segment::Bucket(f, g) => Some((f, g)),
                            _ => None,
                        }) {
                            return fail(format!(
                                "template \"{text}\" buckets `{earlier}` and `{name}`: a key has one time bucket; \
                                 keep `{{{earlier}:..}}` and write `{{{name}}}` whole (or leave it out of the key)"
                            ));
                        }
                        let granularity = bucket_granularity(cx, lit, &text, name, granularity);
                        segments.push(Segment::Bucket(ident, granularity));
                    }
                }
            }
            '}' => return fail(format!("unmatched `}}` in template \"{text}\"")),
            c => {
                if literal.is_empty() && !c.eq(&'#') {
                    if let Some(Segment::Field(prev) | Segment::Bucket(prev, _)) = segments.last() {
                        return fail(format!(
                            "in template \"{text}\", `{{{prev}}}` must be followed by `#` or end the template: \
                             `#` is the one separator field values can never contain"
                        ));
                    }
                }
                literal.push(c);
            }
        }
    }
    if !literal.is_empty() {
        segments.push(Segment::Literal(literal));
    }
    Some(Template {
        lit: lit.clone(),
        segments,
    })
}

/// The granularity of `{field:granularity}`. An unknown one is reported under the template,
/// with the name it most likely meant, and read as that (or as `day`), so the generated
/// surface keeps its range query and only one error is shown.
fn bucket_granularity(
    cx: &Ctxt,
    lit: &LitStr,
    text: &str,
    field: &str,
    written: &str,
) -> Granularity {
    if let Some(granularity) = Granularity::from_name(written) {
        return granularity;
    }
    let names: Vec<&str> = Granularity::ALL.iter().map(|g| g.name()).collect();
    if written.is_empty() {
        cx.error_spanned_by(
            lit,
            format!(
                "`{{{field}:}}` in template \"{text}\" names no time bucket: write one of {} \
                 after the `:`, e.g. `{{{field}:day}}`",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        return Granularity::Day;
    }
    let meant = did_you_mean_keyword(&written.to_ascii_lowercase(), names.iter().copied());
    let hint = match meant {
        Some(m) => format!("did you mean `{m}`? "),
        None => String::new(),
    };
    let example = meant.unwrap_or("day");
    cx.error_spanned_by(
        lit,
        format!(
            "unknown time bucket `{written}` in `{{{field}:{written}}}` of template \"{text}\": {hint}\
             a bucket is one of {}, e.g. `{{{field}:{example}}}`",
            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
    );
    meant
        .and_then(Granularity::from_name)
        .unwrap_or(Granularity::Day)
}

/// Consumes whatever value a nested meta item has, so unrelated serde keys parse.
pub(crate) fn skip(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip(&inner))?;
    }
    Ok(())
}

/// `#[sharded(crate = "path")]` on a collection or projection, whose `#[sharded]` takes only
/// that key: the path of the `sharded` facade as the user's code reaches it.
pub(crate) fn crate_path(cx: &Ctxt, attrs: &[Attribute], derive: &str) -> Option<syn::Path> {
    let mut out = Container::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident(SHARDED)) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(CRATE) {
                let lit: LitStr = meta.value()?.parse()?;
                match lit.parse_with(syn::Path::parse_mod_style) {
                    Ok(path) => set_once(cx, &meta, SHARDED, &mut out.krate, path),
                    Err(_) => cx.error_spanned_by(
                        &lit,
                        "`crate` must be the path of the `sharded` crate as your code reaches it, \
                         e.g. `crate = \"::sharded\"`",
                    ),
                }
                Ok(())
            } else {
                Err(meta.error(format!(
                    "#[derive({derive})] accepts only `crate = \"...\"` in #[sharded(...)]; \
                     keys, tables and entity names belong on the entities"
                )))
            }
        });
        if let Err(e) = result {
            cx.syn_error(e);
        }
    }
    out.krate
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
