//! Checks on the fields: a field a key or an index names exists, key fields have types that
//! encode, no stored name clashes with an attribute `sharded` writes, the runtime's
//! maintained fields (`version`, `ttl`, `created_at`, `updated_at`) and the counters are
//! declared once and usable.

use std::collections::HashSet;

use syn::{Ident, Type};

use crate::entity::model::{Entity, FieldRole, PartitionKey, SerdeName, Shard, Template};
use crate::entity::names;
use crate::internals::ctxt::Ctxt;
use crate::internals::suggest::did_you_mean;
use crate::internals::types::{self, TimeShape};

pub(super) fn unknown_field(cx: &Ctxt, entity: &Entity, field: &Ident, context: &str) {
    let name = field.to_string();
    let names: Vec<String> = entity.fields.iter().map(|f| f.ident.to_string()).collect();
    let hint = did_you_mean(&name, names.iter().map(String::as_str))
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    cx.error_spanned_by(
        field,
        format!(
            "{context} names `{name}`, which is not a field of `{}`: {hint}fields are: {}",
            entity.ident,
            names.join(", ")
        ),
    );
}

pub(super) fn template_fields(cx: &Ctxt, entity: &Entity, template: &Template) {
    for field in template.fields() {
        if entity.field(field).is_none() {
            unknown_field(
                cx,
                entity,
                field,
                &format!("template \"{}\"", template.lit.value()),
            );
        }
    }
}

/// Why a type cannot be a key field, for the types we can recognise by their name.
fn unsupported_key_type(ty: &Type) -> Option<String> {
    match types::ungroup(ty) {
        Type::Path(path) => {
            let last = path.path.segments.last()?.ident.to_string();
            match last.as_str() {
                "f32" | "f64" => Some(format!(
                    "`{last}` cannot be a key field: floats have no exact, order-preserving text form (NaN, \
                     -0.0, rounding); store an integer (e.g. cents or micro-units as u64/i64) or a String"
                )),
                "Option" => Some(
                    "`Option` cannot be a key field: DynamoDB keys always have a value; use the inner type, \
                     or keep the optional value out of the key"
                        .to_owned(),
                ),
                "Vec" | "VecDeque" | "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet" => Some(format!(
                    "`{last}` cannot be a key field: a collection has no single sortable key value; put one \
                     element (or a joined String) in its own field"
                )),
                _ => None,
            }
        }
        Type::Reference(_) => Some(
            "a reference cannot be a key field: entities are owned data that serde reads back; use an owned type"
                .to_owned(),
        ),
        Type::Tuple(_) | Type::Array(_) | Type::Slice(_) => Some(
            "tuples and arrays cannot be key fields: name each part as its own field and list them in the template"
                .to_owned(),
        ),
        _ => None,
    }
}

pub(super) fn key_field_types(cx: &Ctxt, entity: &Entity) {
    let mut checked = HashSet::new();
    for ident in key_fields(entity) {
        if !checked.insert(ident.to_string()) {
            continue;
        }
        if let Some(field) = entity.field(ident) {
            if let Some(reason) = unsupported_key_type(&field.ty) {
                cx.error_spanned_by(&field.ty, reason);
            }
        }
    }
}

/// Every field referenced by a key template or a shard expression.
pub fn key_fields(entity: &Entity) -> Vec<&Ident> {
    fn add_partition<'a>(pk: &'a PartitionKey, out: &mut Vec<&'a Ident>) {
        out.extend(pk.template.fields());
        if let Shard::Hash(fields) = &pk.shard.value {
            out.extend(fields.iter());
        }
    }
    let mut out = Vec::new();
    if let Some(pk) = &entity.pk {
        add_partition(pk, &mut out);
    }
    if let Some(sk) = &entity.sk {
        out.extend(sk.template.fields());
    }
    for gsi in &entity.gsis {
        add_partition(&gsi.pk, &mut out);
        if let Some(sk) = &gsi.sk {
            out.extend(sk.template.fields());
        }
    }
    out
}

/// A field stored as an attribute `sharded` writes itself: the table's key attributes and
/// tag are the table's (checked in the expansion, at compile time, where they are known);
/// the shard attribute of a multi-attribute index is the entity's own, checked here.
pub(super) fn attribute_clashes(cx: &Ctxt, entity: &Entity) {
    for field in entity.fields.iter().filter(|f| f.serde_attribute) {
        let name = &field.serde_name.value;
        let Some(gsi) = entity
            .attribute_gsis
            .iter()
            .find(|g| g.shard_attribute.value == *name)
        else {
            continue;
        };
        let (how, fix) = serde_fix(field);
        cx.error_at(
            field.serde_name.span,
            format!(
                "field `{}` is stored as the attribute `{name}`{how}, which `sharded` writes itself \
                 (the shard of #[gsi{}]): {fix}",
                field.ident, gsi.number
            ),
        );
    }
}

/// How a field got its stored name, and the fix for a clash: what both the derive's and the
/// expansion's clash messages say.
pub(crate) fn serde_fix(field: &crate::entity::model::Field) -> (String, String) {
    let name = &field.serde_name.value;
    match &field.serde_source {
        SerdeName::Ident => (
            String::new(),
            format!("rename the field, or keep its name with #[serde(rename = \"{name}_value\")]"),
        ),
        SerdeName::Rename => (
            " (by its #[serde(rename)])".to_owned(),
            format!("choose another name, e.g. #[serde(rename = \"{name}_value\")]"),
        ),
        SerdeName::RenameAll(rule) => (
            format!(" (by #[serde(rename_all = \"{rule}\")])"),
            format!(
                "rename the field, or give it its own name with #[serde(rename = \"{name}_value\")], \
                 which overrides rename_all"
            ),
        ),
    }
}

/// `#[sharded(version)]`, `ttl`, `created_at`, `updated_at`: one of each, on a stored field
/// outside the keys, of a type the runtime can maintain.
pub(super) fn field_roles(cx: &Ctxt, entity: &Entity) {
    let keys: Vec<String> = key_fields(entity).iter().map(|i| i.to_string()).collect();
    let mut seen: Vec<FieldRole> = Vec::new();
    for field in &entity.fields {
        let Some(role) = &field.role else { continue };
        let key = role.value.key();
        if seen.contains(&role.value) {
            cx.error_at(
                role.span,
                format!("a second `{key}` field: an entity has at most one; remove this one"),
            );
            continue;
        }
        seen.push(role.value);
        if keys.contains(&field.ident.to_string()) {
            cx.error_at(
                role.span,
                format!(
                    "`{}` is part of a key, and a `{key}` field changes on every write (or \
                     expires): keep it out of the key templates, or drop #[sharded({key})]",
                    field.ident
                ),
            );
            continue;
        }
        if !field.serde_attribute {
            cx.error_at(
                role.span,
                format!(
                    "`{}` is not stored (#[serde(skip)] or flatten), so it cannot be the `{key}` \
                     field: store it, or drop #[sharded({key})]",
                    field.ident
                ),
            );
            continue;
        }
        let (inner, optional) = types::peel_option(&field.ty);
        let shape = types::time_shape(inner);
        let problem = match role.value {
            FieldRole::Version if optional || shape != TimeShape::Integer => Some(
                "a `version` field counts writes: make it an integer (`u64`), starting at 0"
                    .to_owned(),
            ),
            FieldRole::Ttl => match shape {
                TimeShape::Integer => None,
                TimeShape::DateTime if field.serde_with => None,
                TimeShape::DateTime => Some(
                    "DynamoDB expires items by a number of epoch seconds, and serde stores a \
                     `DateTime` as text: add #[serde(with = \"chrono::serde::ts_seconds\")] \
                     (or ts_seconds_option for an Option), or use a `u64` of epoch seconds"
                        .to_owned(),
                ),
                TimeShape::Other => Some(
                    "a `ttl` field holds the expiry as epoch seconds: use a `u64` (or \
                     `chrono::DateTime<Utc>` stored with chrono::serde::ts_seconds), optionally \
                     in an `Option`"
                        .to_owned(),
                ),
            },
            FieldRole::CreatedAt | FieldRole::UpdatedAt => match shape {
                TimeShape::Integer => None,
                TimeShape::DateTime if !field.serde_with => None,
                TimeShape::DateTime => Some(format!(
                    "a `{key}` `DateTime` is written by `sharded` as RFC 3339 text, serde's \
                     default for it: drop the #[serde(with = ..)], or use a `u64` of epoch seconds"
                )),
                TimeShape::Other => Some(format!(
                    "a `{key}` field holds a time: use `chrono::DateTime<Utc>` (stored as RFC \
                     3339 text) or a `u64` of epoch seconds, optionally in an `Option`"
                )),
            },
            FieldRole::Version => None,
        };
        if let Some(problem) = problem {
            cx.error_spanned_by(&field.ty, problem);
        }
    }
}

/// Counter names become `<name>_counter` functions: a Rust identifier, once each, and no two
/// names whose functions join alike (`votes`, `votes_`); `n` in 1..=1000 (the runtime's
/// maximum is checked again by the compiler, as for keys).
pub(super) fn counters(cx: &Ctxt, entity: &Entity) {
    let mut seen: Vec<String> = Vec::new();
    for counter in &entity.counters {
        let name = counter.name.value();
        if !is_counter_name(&name) {
            cx.error_spanned_by(
                &counter.name,
                format!(
                    "counter name `{name}` must be a lowercase Rust identifier (it names the \
                     generated `{name}_counter` function): use letters, digits and `_`, e.g. \
                     \"votes\""
                ),
            );
        } else if seen.contains(&name) {
            cx.error_spanned_by(
                &counter.name,
                format!("a second counter named `{name}`: give each counter its own name"),
            );
        } else if let Some(other) = (seen.iter())
            .find(|other| names::counter_function(other) == names::counter_function(&name))
        {
            let function = names::counter_function(&name);
            cx.error_spanned_by(
                &counter.name,
                format!(
                    "counters `{other}` and `{name}` would both generate `{function}` (a \
                     counter's function keeps one `_` of a run and none at the edges): \
                     rename one of them, e.g. \"{other}_2\""
                ),
            );
        }
        seen.push(name);
        if let Some(n) = counter.n.as_ref().filter(|n| n.value == 0) {
            cx.error_at(
                n.span,
                "a counter needs at least 1 shard: n = 10 spreads its writes over 10 items",
            );
        }
    }
}

/// Whether `name` can start a generated function name (`<name>_counter`): lowercase ASCII
/// letters, digits and `_`, not starting with a digit. Expansion skips any other name.
pub fn is_counter_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
