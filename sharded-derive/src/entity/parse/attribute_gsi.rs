//! `#[gsiN(pk = [..], sk = [..], shard = n)]`: an index keyed by the fields' own attributes
//! (DynamoDB's multi-attribute keys), told apart from a `#[gsiN]` of templates by its lists.

use quote::format_ident;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, Lit, LitStr};

use crate::entity::model::{AttributeGsi, Sp};
use crate::internals::attr::{accepted_key, set_once, skip};
use crate::internals::ctxt::Ctxt;
use crate::internals::spanned::at_span;
use crate::internals::symbol::*;

/// Whether a `#[gsiN(..)]` names its keys as field lists (`pk = [game_id]`): an index keyed
/// by the fields' own attributes.
pub(super) fn keyed_by_attributes(attr: &Attribute) -> bool {
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
pub(super) fn attribute_gsi(cx: &Ctxt, attr: &Attribute, number: u8) -> Option<AttributeGsi> {
    let name = format!("{GSI_PREFIX}{number}");
    let (mut pk, mut sk, mut shard, mut shard_attribute, mut query, mut index) =
        (None, None, None, None, None, None);
    let result = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident(MAX_N) {
            cx.syn_error(super::keys::max_n_on_index(&meta, &name));
            return skip(&meta);
        }
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
