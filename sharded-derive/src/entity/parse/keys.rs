//! The template keys: `#[pk(...)]`, `#[sk(...)]` and a `#[gsiN(...)]` of templates, read key
//! by key into a raw partition, then into the model (templates and shard expressions parsed,
//! a layout transition's previous keys read).

use syn::spanned::Spanned;
use syn::{Attribute, Ident, Lit, LitStr};

use crate::entity::model::{Gsi, KeyAttr, PartitionKey, Previous, Shard, SortKey, Sp};
use crate::internals::attr::{accepted_key, set_once, skip};
use crate::internals::ctxt::Ctxt;
use crate::internals::shard::shard_expression;
use crate::internals::spanned::at_span;
use crate::internals::symbol::*;
use crate::internals::template::template;

/// The raw keys of a `#[pk(...)]` or `#[gsiN(...)]`, before they become a model.
#[derive(Default)]
struct RawPartition {
    template: Option<LitStr>,
    shard: Option<Lit>,
    n: Option<syn::LitInt>,
    max_n: Option<syn::LitInt>,
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
        if name != PK && meta.path.is_ident(MAX_N) {
            cx.syn_error(max_n_on_index(&meta, name));
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
            MAX_N => {
                let v = meta.value()?.parse()?;
                set_once(cx, &meta, name, &mut raw.max_n, v);
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

/// `max_n` on an index: a per-key layout places the base table's items, and an index key,
/// rewritten by every put, has one shard count for all its keys.
pub(super) fn max_n_on_index(meta: &syn::meta::ParseNestedMeta, name: &str) -> syn::Error {
    meta.error(format!(
        "`max_n` is declared on the base table's #[pk], not on #[{name}]: a layout decided per \
         logical key places the table's items, and an index key is rewritten by every put; \
         remove `max_n` and give #[{name}] the shard count its writes need (`shard = N`)"
    ))
}

pub(super) fn partition_key(
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
    let max_n = raw
        .max_n
        .as_ref()
        .and_then(|lit| match lit.base10_parse::<u32>() {
            Ok(v) => Some(Sp::new(v, lit.span())),
            Err(_) => {
                cx.error_spanned_by(
                    lit,
                    "`max_n` must be a whole number of shards, the most one logical key may be \
                     widened to: above `n`, at most `sharded::schema::MAX_SHARDS`, e.g. `max_n = 64`",
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
        max_n,
        single_partition: raw.single_partition,
        query,
        previous,
        suffix: raw.suffix,
    })
}

pub(super) fn sort_key(cx: &Ctxt, attr: &Attribute) -> Option<SortKey> {
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

pub(super) fn gsi(cx: &Ctxt, attr: &Attribute, number: u8) -> Option<Gsi> {
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
