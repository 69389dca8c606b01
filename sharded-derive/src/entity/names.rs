//! The names of generated functions that are built from the user's names: the prefixes
//! `sk_prefix_<field>`, the range queries `<query>_range` and the counters `<name>_counter`
//! (and the one name of a sort key's typed conditions, `sk_sort`). `validate` checks them for
//! collisions and `expand` emits them, both through this module, so the rule is written once.
//!
//! The rule: each part is the name as written, without `r#` and without leading or trailing
//! underscores, and the parts are joined by one `_`. A snake_case field (`player_id`) keeps
//! its name (`sk_prefix_player_id`); `u8_` gives `sk_prefix_u8` (not `sk_prefix_u8_`),
//! `_tenant` gives `sk_prefix_tenant`, `r#type` gives `sk_prefix_type`. A name the
//! user did not write in snake case (`userID`) stays as written; the generated code allows
//! `non_snake_case`, since the user's own field already says it.

use std::collections::HashSet;

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::Ident;

use crate::entity::model::{Entity, Segment, SerdeName};
use crate::internals::ctxt::Ctxt;

/// What a name contributes to a generated name: without `r#`, without leading or trailing
/// underscores. Empty for a name of underscores only (`__`), which validation refuses in a
/// sort key.
pub fn part(ident: &Ident) -> String {
    ident.unraw().to_string().trim_matches('_').to_owned()
}

/// `parts` joined by one `_`, each without leading or trailing underscores.
pub fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| p.trim_matches('_'))
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// The typed conditions of a sort key: `sk_sort` for `sk`, `gsi1_sort` for `gsi1_sk` (the
/// name a multi-attribute GSI's conditions have too).
pub fn sort_builder(fn_name: &str) -> String {
    format!("{}_sort", fn_name.strip_suffix("_sk").unwrap_or(fn_name))
}

/// `<fn_name>_prefix_<field>`: `sk_prefix_score`.
pub fn sort_prefix(fn_name: &str, field: &Ident) -> String {
    join(&[fn_name, "prefix", &part(field)])
}

/// `<query>_range`: `query_range`, `query_gsi1_range`.
pub fn range(query: &Ident) -> String {
    join(&[&part(query), "range"])
}

/// `<name>_counter`: `votes_counter`. A counter's name is a string, which no lint reads as the
/// user wrote it, so its runs of `_` count as one and its edge underscores are dropped:
/// `votes_` and `vote__count` give `votes_counter` and `vote_count_counter`.
pub fn counter_function(name: &str) -> String {
    let words: Vec<&str> = name.split('_').filter(|w| !w.is_empty()).collect();
    join(&[&words.join("_"), "counter"])
}

/// A generated name as an identifier, with the span of the user's token it comes from (so an
/// IDE's "go to definition" lands there). Every generated name joins two parts or more, so it
/// is never a keyword.
pub fn ident(name: &str, span: Span) -> Ident {
    Ident::new(name, span)
}

/// Where a generated name comes from, for the message that refuses a second one.
struct Origin {
    /// What the user wrote: "`{a_}`", "`query = \"q_\"`".
    written: String,
    /// Where: " in template \"S#{a_}#{a}\"", or nothing.
    place: String,
    /// The field or query name the generated name is built from.
    from: String,
}

/// Refuses what would make a generated name empty or twice: a sort-key field of underscores
/// only, and two names that join alike (`{a_}` and `{a}` both give `sk_prefix_a`; query names
/// `q_` and `q` both give `q_range`). Each pair is reported once, under the template or the
/// `query` literal, naming both and the fix.
pub fn check(cx: &Ctxt, entity: &Entity) {
    let mut seen: Vec<(String, Origin)> = Vec::new();
    let mut reported: HashSet<(String, String)> = HashSet::new();
    let mut claim = |name: String, origin: Origin, span: Span| {
        let Some((_, earlier)) = seen.iter().find(|(n, _)| *n == name) else {
            seen.push((name, origin));
            return;
        };
        if earlier.from == origin.from
            || !reported.insert((earlier.from.clone(), origin.from.clone()))
        {
            return;
        }
        let both = if earlier.place == origin.place {
            format!("{} and {}{}", earlier.written, origin.written, origin.place)
        } else {
            format!(
                "{}{} and {}{}",
                earlier.written, earlier.place, origin.written, origin.place
            )
        };
        // Suggest renaming the one whose name loses something (`a_`, not `a`).
        let unusual = [&origin.from, &earlier.from]
            .into_iter()
            .find(|from| from.trim_start_matches("r#").trim_matches('_') != from.as_str())
            .unwrap_or(&origin.from);
        cx.error_at(
            span,
            format!(
                "{both} would both generate `{}::{name}`: a generated name drops `r#` and the \
                 leading and trailing underscores of the name it is built from (see the derive's \
                 docs, \"Generated names\"); rename one of them, e.g. `{unusual}`{}",
                entity.ident,
                rename_hint(entity, unusual),
            ),
        );
    };
    let sort_keys = entity.sk.iter().map(|sk| ("sk".to_owned(), sk)).chain(
        entity
            .gsis
            .iter()
            .filter_map(|g| g.sk.as_ref().map(|sk| (format!("gsi{}_sk", g.number), sk))),
    );
    for (fn_name, sk) in sort_keys {
        let lit = &sk.template.lit;
        let text = lit.value();
        let segments = &sk.template.segments;
        for (i, segment) in segments.iter().enumerate() {
            // Only a field followed by a literal names a function (`sk_prefix_<field>`); the
            // typed conditions are one `sk_sort()` whatever the fields are called.
            let (Segment::Field(field), Some(Segment::Literal(_))) = (segment, segments.get(i + 1))
            else {
                continue;
            };
            let written = format!("`{{{field}}}`");
            let place = format!(" in template \"{text}\"");
            if part(field).is_empty() {
                cx.error_spanned_by(
                    lit,
                    format!(
                        "{written}{place} cannot name its prefix builder (`{fn_name}_prefix_<field>`): a \
                         generated name drops the field's leading and trailing underscores, and \
                         `{field}` has nothing else; rename the field{}",
                        rename_hint(entity, &field.to_string()),
                    ),
                );
                continue;
            }
            let origin = Origin {
                written,
                place,
                from: field.to_string(),
            };
            claim(sort_prefix(&fn_name, field), origin, lit.span());
        }
    }
    let keys = entity
        .pk
        .iter()
        .map(|pk| (pk, None))
        .chain(entity.gsis.iter().map(|g| (&g.pk, Some(g.number))));
    for (pk, gsi) in keys {
        if pk.template.bucket().is_none() {
            continue;
        }
        let query = pk.query_name(gsi);
        let written = match &pk.query {
            Some(q) => format!("`query = \"{q}\"`"),
            None => format!("the default query name `{query}`"),
        };
        claim(
            range(&query),
            Origin {
                written,
                place: String::new(),
                from: query.to_string(),
            },
            query.span(),
        );
    }
}

/// " (with `#[serde(rename = "a_")]` on it, its stored attribute keeps its name)", when
/// `from` is a field stored under a name serde derives from the field's.
fn rename_hint(entity: &Entity, from: &str) -> String {
    match entity.fields.iter().find(|f| f.ident == from) {
        Some(f) if f.serde_attribute && !matches!(f.serde_source, SerdeName::Rename) => format!(
            " (with `#[serde(rename = \"{}\")]` on it, its stored attribute keeps its name)",
            f.serde_name.value
        ),
        _ => String::new(),
    }
}
