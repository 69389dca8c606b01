//! The model of one `#[derive(ShardedEntity)]` input: built once by `parse`, checked by
//! `validate`, read by `expand`. Every value keeps the span of the token it came from, so a
//! check that runs late can still point at what the user wrote.

use proc_macro2::Span;
use syn::{Ident, LitStr, Type};

pub use crate::internals::shard::Shard;
pub use crate::internals::spanned::Sp;
pub use crate::internals::template::{Granularity, Segment, Template};

/// `#[counter(name = "votes", n = 10)]`: a sharded counter per item.
pub struct Counter {
    /// The counter's name: `votes` generates `votes_counter(..)`.
    pub name: LitStr,
    /// Its shard count; `None` when it was missing or no number (already reported).
    pub n: Option<Sp<u32>>,
}

pub struct Entity {
    pub ident: Ident,
    /// `#[counter(..)]` attributes, in order.
    pub counters: Vec<Counter>,
    /// The struct's visibility, given to the generated `{Entity}Fields`.
    pub vis: syn::Visibility,
    pub fields: Vec<Field>,
    pub container: Container,
    /// `None` only when the input had no `#[pk]` (already reported).
    pub pk: Option<PartitionKey>,
    pub sk: Option<SortKey>,
    pub gsis: Vec<Gsi>,
    /// `#[gsiN(pk = [..], sk = [..], shard = n)]`: indexes keyed by the item's own attributes.
    pub attribute_gsis: Vec<AttributeGsi>,
}

/// `#[gsi2(pk = [game_id], sk = [score, player_id], shard = 8)]`: an index keyed by the
/// fields' own attributes (DynamoDB's multi-attribute keys) and a number attribute holding
/// the shard.
pub struct AttributeGsi {
    pub number: u8,
    /// `index = ".."` on the entity; `None`: the table's name for index N.
    pub index_name: Option<LitStr>,
    /// The partition fields, with the span of the `[..]` list.
    pub pk: Sp<Vec<Ident>>,
    /// The sort fields (possibly none), with the span of the `[..]` list.
    pub sk: Sp<Vec<Ident>>,
    /// The shard count (`shard = n`); `None` when missing or no number (already reported).
    pub n: Option<Sp<u32>>,
    /// The shard's attribute: `shard_attribute = ".."`, default `gsiN_shard`.
    pub shard_attribute: Sp<String>,
    /// The query function's name: `query = ".."`, default `query_gsiN`.
    pub query: Ident,
}

pub struct Field {
    pub ident: Ident,
    pub ty: Type,
    /// The attribute name serde writes, with the span of the `rename` literal or the ident.
    pub serde_name: Sp<String>,
    /// Where `serde_name` comes from, so a message can name the fix.
    pub serde_source: SerdeName,
    /// `#[serde(flatten)]` or `#[serde(skip)]`: the field writes no attribute of its own name.
    pub serde_attribute: bool,
    /// `#[serde(flatten)]`: the field may write attributes of any name.
    pub serde_flatten: bool,
    /// `#[serde(with = "..")]` or `serialize_with`: serde stores the value its own way.
    pub serde_with: bool,
    /// `#[sharded(version)]`, `#[sharded(ttl)]`, ...: what the runtime maintains in it.
    pub role: Option<Sp<FieldRole>>,
}

/// A field the runtime reads or writes itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldRole {
    /// `#[sharded(version)]`: optimistic locking.
    Version,
    /// `#[sharded(ttl)]`: DynamoDB's time to live, epoch seconds.
    Ttl,
    /// `#[sharded(created_at)]`: set by the first write.
    CreatedAt,
    /// `#[sharded(updated_at)]`: set by every write.
    UpdatedAt,
}

impl FieldRole {
    pub fn key(self) -> &'static str {
        match self {
            FieldRole::Version => "version",
            FieldRole::Ttl => "ttl",
            FieldRole::CreatedAt => "created_at",
            FieldRole::UpdatedAt => "updated_at",
        }
    }
}

/// How serde names a field's attribute.
pub enum SerdeName {
    /// The field's own name.
    Ident,
    /// `#[serde(rename = "...")]` on the field.
    Rename,
    /// The container's `#[serde(rename_all = "...")]`, with the rule as written.
    RenameAll(String),
}

/// `#[sharded(table = ..)]`: the table's name in DynamoDB, or the type that declares the
/// table (`#[derive(ShardedTable)]`: its names, tag and recognition).
pub enum TableRef {
    /// `table = "scores"`: the default table name; names and tag are the defaults.
    Name(LitStr),
    /// `table = Leaderboards`: the table type.
    Type(syn::Path),
}

/// Which key attribute of the table a key is stored in: its name is the table's (declared by
/// a `#[derive(ShardedTable)]` type, or the default `pk`, `sk`, `gsiNpk`, `gsiNsk`), known to
/// generated code and not to the derive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAttr {
    /// The base table's partition key.
    Pk,
    /// The base table's sort key.
    Sk,
    /// Index N's partition key.
    GsiPk(u8),
    /// Index N's sort key.
    GsiSk(u8),
}

impl std::fmt::Display for KeyAttr {
    /// What the attribute holds (`the partition key`), for docs and messages: its name is
    /// the table's, which the derive does not see.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.role())
    }
}

impl KeyAttr {
    /// What the attribute holds, for docs: `the partition key`, `the sort key of gsi1`.
    pub fn role(self) -> String {
        match self {
            KeyAttr::Pk => "the partition key".to_owned(),
            KeyAttr::Sk => "the sort key".to_owned(),
            KeyAttr::GsiPk(n) => format!("the partition key of gsi{n}"),
            KeyAttr::GsiSk(n) => format!("the sort key of gsi{n}"),
        }
    }
}

#[derive(Default)]
pub struct Container {
    pub table: Option<TableRef>,
    pub entity: Option<LitStr>,
    /// `crate = "path"`: where the `sharded` facade is reachable from the user's crate.
    pub krate: Option<syn::Path>,
}

pub struct PartitionKey {
    /// The table attribute the key is stored in.
    pub attribute: KeyAttr,
    pub template: Template,
    pub shard: Sp<Shard>,
    /// The shard count: `n = 10`, or the literal of a GSI's `shard = 4`.
    pub n: Option<Sp<u32>>,
    /// `max_n = 64` (base table only): the layout is decided per logical key, `n` being the
    /// default of every key and `max_n` the most one key may be widened to.
    pub max_n: Option<Sp<u32>>,
    /// `single_partition = "why"`: the explicit opt-in to an unsharded constant key.
    pub single_partition: Option<LitStr>,
    /// `query = "name"`: the generated query function's name.
    pub query: Option<Ident>,
    /// `previous_n = N` or `legacy = "..."`: the layout items are moving away from.
    pub previous: Option<Previous>,
    /// `suffix = "#SHARD_{shard}"`: how the shard is spelled after the logical key (the
    /// runtime checks the declaration at compile time).
    pub suffix: Option<LitStr>,
}

impl PartitionKey {
    /// The name of the key's query function: `query = ".."`, else `query` for the primary key
    /// (`gsi` is `None`) and `query_gsiN` for index N.
    pub fn query_name(&self, gsi: Option<u8>) -> Ident {
        self.query.clone().unwrap_or_else(|| match gsi {
            None => Ident::new("query", Span::call_site()),
            Some(n) => Ident::new(&format!("query_gsi{n}"), Span::call_site()),
        })
    }
}

/// The layout declared as previous on `#[pk]`, while a transition is under way.
pub enum Previous {
    /// `previous_n = N`: the same template over `N` shards, spelled by `suffix`
    /// (`previous_suffix = ".."`, else the current key's), placed as the current key places
    /// items, or anywhere (`previous_shard = "unknown"`).
    Shards {
        n: Sp<u32>,
        suffix: Option<LitStr>,
        unknown_placement: bool,
    },
    /// `legacy = "..."`: an unsharded template.
    Legacy(Template),
}

pub struct SortKey {
    pub attribute: KeyAttr,
    pub template: Template,
}

pub struct Gsi {
    pub number: u8,
    /// `index = ".."` on the entity; `None`: the table's name for index N.
    pub index_name: Option<LitStr>,
    pub pk: PartitionKey,
    pub sk: Option<SortKey>,
}

impl Entity {
    pub fn field(&self, name: &Ident) -> Option<&Field> {
        self.fields.iter().find(|f| f.ident == *name)
    }

    /// The entity name written to the entity attribute.
    pub fn entity_name(&self) -> String {
        self.container
            .entity
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_else(|| self.ident.to_string())
    }
}
