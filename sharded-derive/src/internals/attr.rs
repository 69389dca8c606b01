//! Reading attribute keys, shared by every derive: the accepted key a misspelling meant, one
//! value per key, skipping what another derive's attribute holds, `gsiN` names and
//! `#[sharded(crate = "..")]`.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Ident, LitStr};

use super::ctxt::Ctxt;
use super::suggest::did_you_mean;
use super::symbol::*;

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
pub(crate) fn meta_key(meta: &ParseNestedMeta) -> String {
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

/// Consumes whatever value a nested meta item has, so unrelated serde keys parse.
pub(crate) fn skip(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip(&inner))?;
    }
    Ok(())
}

/// The value of `crate = "path"` (serde's spelling): the path of the `sharded` facade, or
/// `None` after reporting a literal that is not a path. Every derive reads it here, so the
/// message is one.
pub(crate) fn crate_value(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<Option<syn::Path>> {
    let lit: LitStr = meta.value()?.parse()?;
    match lit.parse_with(syn::Path::parse_mod_style) {
        Ok(path) => Ok(Some(path)),
        Err(_) => {
            cx.error_spanned_by(
                &lit,
                format!(
                    "`crate` must be the path of the `sharded` crate as your code reaches it, \
                     e.g. `crate = \"::sharded\"` or `crate = \"my_facade::sharded\"`; `{}` is \
                     not a path",
                    lit.value()
                ),
            );
            Ok(None)
        }
    }
}

/// `#[sharded(crate = "path")]` on a collection or projection, whose `#[sharded]` takes only
/// that key: the path of the `sharded` facade as the user's code reaches it.
pub(crate) fn crate_path(cx: &Ctxt, attrs: &[Attribute], derive: &str) -> Option<syn::Path> {
    let mut krate: Option<syn::Path> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident(SHARDED)) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(CRATE) {
                if let Some(path) = crate_value(cx, &meta)? {
                    set_once(cx, &meta, SHARDED, &mut krate, path);
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
    krate
}
