//! serde's field attributes, read as serde_derive reads them: the attribute name serde
//! writes for each field (its `rename`, the container's `rename_all`, or its own name), and
//! whether it writes one at all. A struct field must not serialise to a key attribute's name.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Ident, LitStr};

use super::attr::skip;
use super::case::RenameRule;
use super::spanned::Sp;

/// What serde does with one field's attribute name.
#[derive(Default)]
pub(crate) struct SerdeField {
    /// `rename = "x"` or `rename(serialize = "x")`.
    pub rename: Option<Sp<String>>,
    pub flatten: bool,
    /// `skip`: neither written nor read.
    pub skip: bool,
    /// `with = ".."` or `serialize_with = ".."`.
    pub with: bool,
}

pub(crate) fn serde_field(attrs: &[Attribute]) -> SerdeField {
    let mut out = SerdeField::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        // Errors here are serde's to report; we only read what parses.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                out.rename = serialize_name(&meta)?.or(out.rename.take());
            } else if meta.path.is_ident("flatten") {
                out.flatten = true;
            } else if meta.path.is_ident("skip") {
                out.skip = true;
            } else if meta.path.is_ident("with") || meta.path.is_ident("serialize_with") {
                out.with = true;
                skip(&meta)?;
            } else {
                skip(&meta)?;
            }
            Ok(())
        });
    }
    out
}

/// The serialize name of `key = "x"` or `key(serialize = "x", deserialize = "y")`.
fn serialize_name(meta: &ParseNestedMeta) -> syn::Result<Option<Sp<String>>> {
    if meta.input.peek(syn::Token![=]) {
        let lit: LitStr = meta.value()?.parse()?;
        return Ok(Some(Sp::new(lit.value(), lit.span())));
    }
    let mut found = None;
    if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| {
            if inner.path.is_ident("serialize") {
                let lit: LitStr = inner.value()?.parse()?;
                found = Some(Sp::new(lit.value(), lit.span()));
            } else {
                skip(&inner)?;
            }
            Ok(())
        })?;
    }
    Ok(found)
}

/// The container's `rename_all` rule for serialisation, with the rule as written.
pub(crate) fn serde_rename_all(attrs: &[Attribute]) -> Option<(RenameRule, String)> {
    let mut rule = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                if let Some(written) = serialize_name(&meta)? {
                    rule = RenameRule::from_name(&written.value).map(|r| (r, written.value));
                }
            } else {
                skip(&meta)?;
            }
            Ok(())
        });
    }
    rule
}

/// The attribute name serde writes for a field: its `rename`, the container's `rename_all`
/// applied to it, or its own name.
pub(crate) fn serde_name(
    ident: &Ident,
    serde: &SerdeField,
    rename_all: Option<&(RenameRule, String)>,
) -> Sp<String> {
    if let Some(rename) = &serde.rename {
        return rename.clone();
    }
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
    match rename_all {
        Some((rule, _)) => Sp::new(rule.apply_to_field(&name), ident.span()),
        None => Sp::new(name, ident.span()),
    }
}
