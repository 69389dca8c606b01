//! Shard expressions: `shard = "hash(a, b)"` or `shard = "random"`, what they parse to, and
//! the parser that reads a misspelling as the expression it most likely meant.

use syn::{Ident, LitStr};

use super::ctxt::Ctxt;
use super::spanned::at_span;
use super::suggest::did_you_mean;

/// How a partition key is spread over shards, as written.
pub enum Shard {
    None,
    /// `shard = "hash(a, b)"`
    Hash(Vec<Ident>),
    /// `shard = "random"`
    Random,
    /// GSI `shard = 4`: hash the item's identity; the count is the literal.
    Identity,
    /// The expression was refused (already reported); later checks skip it. `meant` is the
    /// expression the user most likely meant (`hsh(a)` -> `hash(a)`), so that the surface
    /// emitted next to the error keeps the arity of the key builders.
    Invalid {
        meant: Option<Box<Shard>>,
    },
}

/// `"hash(a, b)"` or `"random"`. A refused expression is recorded and becomes
/// `Shard::Invalid`, with the expression a misspelling most likely meant.
pub(crate) fn shard_expression(cx: &Ctxt, lit: &LitStr) -> Shard {
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
