//! From the checked model to the one expansion reads: every field a key names is resolved to
//! the struct's `Field` once, here, so code generation never looks a name up again; the
//! counters (function name, shard count) and the maintained fields (attribute, time format)
//! are settled here too, so expansion reads facts and re-parses nothing.
//!
//! Resolution also runs when validation refused the input: the surface emitted next to the
//! errors must keep the shape the user meant (thiserror's `fallback.rs`, extended to every
//! generated function). A name that is no field then resolves to its "did you mean" target,
//! or to [`KeyField::Unknown`], whose parameter accepts any value; a refused shard expression
//! resolves to the one it most likely meant.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Ident, LitStr, Type};

use crate::entity::model::{
    Entity, Field, FieldRole, Granularity, Gsi, KeyAttr, PartitionKey, Previous, Segment, Shard,
    SortKey, Sp, TableRef, Template,
};
use crate::entity::names;
use crate::entity::validate::is_counter_name;
use crate::internals::suggest::did_you_mean;
use crate::internals::types::{self, TimeShape};

/// A field named by a key template or a shard expression.
#[derive(Clone, Copy)]
pub enum KeyField<'a> {
    /// The struct's field.
    Field(&'a Field),
    /// Only after a refused input: a name that is no field and resembles none.
    Unknown(&'a Ident),
}

impl<'a> KeyField<'a> {
    /// The name of the generated parameter.
    pub fn ident(&self) -> &'a Ident {
        match self {
            KeyField::Field(f) => &f.ident,
            KeyField::Unknown(name) => name,
        }
    }

    /// The field's type; `None` for an unknown name.
    pub fn ty(&self) -> Option<&'a Type> {
        match self {
            KeyField::Field(f) => Some(&f.ty),
            KeyField::Unknown(_) => None,
        }
    }

    /// Whether two references name the same field (so it is one parameter).
    pub fn same(&self, other: &KeyField) -> bool {
        match (self, other) {
            (KeyField::Field(a), KeyField::Field(b)) => std::ptr::eq(*a, *b),
            (KeyField::Unknown(a), KeyField::Unknown(b)) => a == b,
            _ => false,
        }
    }
}

pub enum RSegment<'a> {
    Literal(&'a str),
    Field(KeyField<'a>),
    /// `{at:day}`: the label of the bucket holding the field's value.
    Bucket(KeyField<'a>, Granularity),
}

pub struct RTemplate<'a> {
    pub model: &'a Template,
    pub segments: Vec<RSegment<'a>>,
}

impl<'a> RTemplate<'a> {
    pub fn fields(&self) -> impl Iterator<Item = KeyField<'a>> + '_ {
        self.segments.iter().filter_map(|s| match s {
            RSegment::Field(f) | RSegment::Bucket(f, _) => Some(*f),
            RSegment::Literal(_) => None,
        })
    }

    /// The bucketed field and its granularity, if the template has a `{field:granularity}`.
    pub fn bucket(&self) -> Option<(KeyField<'a>, Granularity)> {
        self.segments.iter().find_map(|s| match s {
            RSegment::Bucket(f, g) => Some((*f, *g)),
            _ => None,
        })
    }

    /// Whether the `index`-th field (as `fields()` counts) is bucketed.
    pub fn is_bucket(&self, index: usize) -> bool {
        self.segments
            .iter()
            .filter(|s| !matches!(s, RSegment::Literal(_)))
            .nth(index)
            .is_some_and(|s| matches!(s, RSegment::Bucket(..)))
    }

    /// The template as written, for docs and the static description.
    pub fn source(&self) -> String {
        self.model.lit.value()
    }
}

/// How a key's shard is computed, with every hashed field resolved.
pub enum RShard<'a> {
    None,
    Hash(Vec<KeyField<'a>>),
    /// `shard = "random"` on the base table: the item's identity (logical key and sort key)
    /// is hashed; these are the sort key's fields, taken by the physical key builder.
    Random(Vec<KeyField<'a>>),
    Identity,
}

pub struct RPartition<'a> {
    /// The table attribute the key is stored in.
    pub attribute: KeyAttr,
    /// `suffix = ".."`, as written (the default `#{shard}` when `None`).
    pub suffix: Option<&'a LitStr>,
    pub template: RTemplate<'a>,
    pub shard: RShard<'a>,
    /// The shard count (1 when unsharded; what was written otherwise): with `max_n`, the
    /// default of every logical key.
    pub n: u32,
    /// `max_n = ..` (base table only): the layout is decided per logical key, up to this many
    /// shards for one key.
    pub max_n: Option<u32>,
    /// The query function: `query`, `query_gsi1`, or `query = "..."`.
    pub query: Ident,
    /// The previous layout, while a transition is declared.
    pub previous: Option<RPrevious<'a>>,
}

/// The previous layout, resolved.
pub enum RPrevious<'a> {
    /// `previous_n = N`, its spelling (`previous_suffix`), and whether its placement is
    /// unknown (`previous_shard = "unknown"`).
    Shards {
        n: u32,
        suffix: Option<&'a LitStr>,
        unknown_placement: bool,
    },
    /// `legacy = "..."`.
    Legacy(RTemplate<'a>),
}

impl<'a> RPartition<'a> {
    pub fn sharded(&self) -> bool {
        !matches!(self.shard, RShard::None)
    }

    /// The highest shard count a key may have: `max_n` of a per-key layout, else `n`.
    pub fn shard_bound(&self) -> u32 {
        self.max_n.unwrap_or(self.n)
    }

    /// The template fields, then the hash fields that are not in the template: the
    /// arguments of the physical key builder.
    pub fn physical_args(&self) -> Vec<KeyField<'a>> {
        let mut args: Vec<KeyField<'a>> = self.template.fields().collect();
        match &self.shard {
            RShard::Hash(fields) | RShard::Random(fields) => {
                push_new(&mut args, fields.iter().copied())
            }
            _ => {}
        }
        args
    }
}

pub struct RSort<'a> {
    pub attribute: KeyAttr,
    pub template: RTemplate<'a>,
}

pub struct RGsi<'a> {
    pub number: u8,
    /// `index = ".."` on the entity; `None`: the table's name for the index.
    pub index_name: Option<&'a LitStr>,
    pub pk: RPartition<'a>,
    pub sk: Option<RSort<'a>>,
}

/// `#[counter(name = "votes", n = 10)]`, resolved: one per generated function.
pub struct RCounter {
    /// The name as written (`votes`), stored with the counter's items.
    pub name: String,
    /// The generated function, `votes_counter`, spanned at the name.
    pub function: Ident,
    /// The shard count, with the span of `n`'s literal (1 if it was missing, already
    /// reported).
    pub n: Sp<u32>,
}

/// How the runtime writes a time it maintains (`created_at`, `updated_at`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeFormat {
    /// A `DateTime`, stored as serde stores it: RFC 3339 text.
    Rfc3339,
    /// An integer of epoch seconds.
    EpochSeconds,
}

/// A field the runtime maintains (`#[sharded(version)]`, ..), resolved.
pub struct RRole<'a> {
    pub role: FieldRole,
    /// The attribute serde stores the field as.
    pub attribute: &'a str,
    /// How a time is written, read from the field's type (an `Option` is looked through).
    pub format: TimeFormat,
}

/// The entity as expansion reads it.
pub struct Resolved<'a> {
    pub entity: &'a Entity,
    /// The name written to the entity attribute (`#[sharded(entity = ..)]` or the struct's).
    pub entity_name: String,
    /// The path generated code reaches the runtime through: `::sharded::__private`, or
    /// `<crate>::__private` with `#[sharded(crate = "...")]`.
    pub rt: TokenStream,
    /// The type that declares the entity's table (`#[sharded(table = Type)]`), if any.
    pub table_type: Option<&'a syn::Path>,
    /// `None` only when the input had no usable `#[pk]` (already reported).
    pub pk: Option<RPartition<'a>>,
    pub sk: Option<RSort<'a>>,
    pub gsis: Vec<RGsi<'a>>,
    /// The counters that generate a function: a refused name (reported) generates none, and a
    /// repeated one (reported) only its first.
    pub counters: Vec<RCounter>,
    /// The fields the runtime maintains, in field order.
    pub roles: Vec<RRole<'a>>,
}

impl<'a> Resolved<'a> {
    /// Every distinct key field, in the order the keys name them.
    /// The fields the primary key (base partition and sort key) is built from: they decide
    /// which item this is, so they cannot be updated.
    pub fn primary_key_fields(&self) -> Vec<KeyField<'a>> {
        let mut out = Vec::new();
        if let Some(pk) = &self.pk {
            push_new(&mut out, pk.physical_args());
        }
        if let Some(sk) = &self.sk {
            push_new(&mut out, sk.template.fields());
        }
        out
    }

    pub fn key_fields(&self) -> Vec<KeyField<'a>> {
        let mut out = Vec::new();
        if let Some(pk) = &self.pk {
            push_new(&mut out, pk.physical_args());
        }
        if let Some(sk) = &self.sk {
            push_new(&mut out, sk.template.fields());
        }
        for gsi in &self.gsis {
            push_new(&mut out, gsi.pk.physical_args());
            if let Some(sk) = &gsi.sk {
                push_new(&mut out, sk.template.fields());
            }
        }
        out
    }
}

/// Appends the fields of `more` that `args` does not hold yet.
pub fn push_new<'a>(args: &mut Vec<KeyField<'a>>, more: impl IntoIterator<Item = KeyField<'a>>) {
    for f in more {
        if !args.iter().any(|a| a.same(&f)) {
            args.push(f);
        }
    }
}

pub fn resolve(entity: &Entity) -> Resolved<'_> {
    let rt = match &entity.container.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::sharded::__private),
    };
    Resolved {
        entity,
        entity_name: entity.entity_name(),
        rt,
        table_type: match &entity.container.table {
            Some(TableRef::Type(path)) => Some(path),
            _ => None,
        },
        pk: entity.pk.as_ref().map(|pk| {
            let mut pk = partition(entity, pk, None);
            if let (RShard::Random(fields), Some(sk)) = (&mut pk.shard, &entity.sk) {
                push_new(fields, template(entity, &sk.template).fields());
            }
            pk
        }),
        sk: entity.sk.as_ref().map(|sk| sort(entity, sk)),
        gsis: entity.gsis.iter().map(|g| gsi(entity, g)).collect(),
        counters: counters(entity),
        roles: roles(entity),
    }
}

fn counters(entity: &Entity) -> Vec<RCounter> {
    let mut out: Vec<RCounter> = Vec::new();
    for counter in &entity.counters {
        let name = counter.name.value();
        let function = names::counter_function(&name);
        // A refused name (reported by validation) generates nothing, so no follow-on error.
        if !is_counter_name(&name) || out.iter().any(|c| c.function == function) {
            continue;
        }
        out.push(RCounter {
            function: names::ident(&function, counter.name.span()),
            n: counter
                .n
                .clone()
                .unwrap_or_else(|| Sp::new(1, counter.name.span())),
            name,
        });
    }
    out
}

fn roles(entity: &Entity) -> Vec<RRole<'_>> {
    entity
        .fields
        .iter()
        .filter_map(|field| {
            let role = field.role.as_ref()?;
            let (inner, _) = types::peel_option(&field.ty);
            let format = match types::time_shape(inner) {
                TimeShape::DateTime => TimeFormat::Rfc3339,
                _ => TimeFormat::EpochSeconds,
            };
            Some(RRole {
                role: role.value,
                attribute: &field.serde_name.value,
                format,
            })
        })
        .collect()
}

fn field<'a>(entity: &'a Entity, name: &'a Ident) -> KeyField<'a> {
    if let Some(f) = entity.field(name) {
        return KeyField::Field(f);
    }
    // Only reached when validation has reported `name`: keep the type the user most likely
    // meant, so call sites written against the intended API still type-check.
    let name_str = name.to_string();
    let names: Vec<(String, &Field)> = entity
        .fields
        .iter()
        .map(|f| (f.ident.to_string(), f))
        .collect();
    did_you_mean(&name_str, names.iter().map(|(n, _)| n.as_str()))
        .and_then(|target| names.iter().find(|(n, _)| n == target))
        .map_or(KeyField::Unknown(name), |(_, f)| KeyField::Field(f))
}

fn template<'a>(entity: &'a Entity, template: &'a Template) -> RTemplate<'a> {
    let mut segments: Vec<RSegment<'a>> = Vec::new();
    for s in &template.segments {
        segments.push(match s {
            Segment::Literal(text) => RSegment::Literal(text),
            Segment::Field(name) => RSegment::Field(field(entity, name)),
            Segment::Bucket(name, granularity) => {
                RSegment::Bucket(field(entity, name), *granularity)
            }
        });
    }
    RTemplate {
        model: template,
        segments,
    }
}

fn shard<'a>(entity: &'a Entity, shard: &'a Shard) -> RShard<'a> {
    match shard {
        Shard::None => RShard::None,
        Shard::Hash(fields) => {
            let mut out = Vec::new();
            push_new(&mut out, fields.iter().map(|f| field(entity, f)));
            RShard::Hash(out)
        }
        Shard::Random => RShard::Random(Vec::new()),
        Shard::Identity => RShard::Identity,
        Shard::Invalid { meant: Some(meant) } => self::shard(entity, meant),
        Shard::Invalid { meant: None } => RShard::None,
    }
}

fn partition<'a>(entity: &'a Entity, pk: &'a PartitionKey, gsi: Option<u8>) -> RPartition<'a> {
    let query = pk.query_name(gsi);
    let shard = shard(entity, &pk.shard.value);
    let n = match &shard {
        RShard::None => 1,
        _ => pk.n.as_ref().map_or(1, |n| n.value),
    };
    let previous = pk.previous.as_ref().map(|p| match p {
        Previous::Shards {
            n,
            suffix,
            unknown_placement,
        } => RPrevious::Shards {
            n: n.value,
            suffix: suffix.as_ref(),
            unknown_placement: *unknown_placement,
        },
        Previous::Legacy(t) => RPrevious::Legacy(template(entity, t)),
    });
    RPartition {
        attribute: pk.attribute,
        suffix: pk.suffix.as_ref(),
        template: template(entity, &pk.template),
        shard,
        n,
        max_n: pk.max_n.as_ref().map(|max_n| max_n.value),
        query,
        previous,
    }
}

fn sort<'a>(entity: &'a Entity, sk: &'a SortKey) -> RSort<'a> {
    RSort {
        attribute: sk.attribute,
        template: template(entity, &sk.template),
    }
}

fn gsi<'a>(entity: &'a Entity, gsi: &'a Gsi) -> RGsi<'a> {
    RGsi {
        number: gsi.number,
        index_name: gsi.index_name.as_ref(),
        pk: partition(entity, &gsi.pk, Some(gsi.number)),
        sk: gsi.sk.as_ref().map(|sk| sort(entity, sk)),
    }
}
