//! Items used by the code `#[derive(ShardedEntity)]` generates. Not a public API: no
//! stability promise, hidden from the docs. Generated code reaches every runtime item through
//! this one module, so the rest of the runtime can change freely.

pub use crate::access::condition::{Data, Field, PrimaryKey};
pub use crate::access::entity::{Item, ItemKeys, ShardedEntity};
pub use crate::access::read::query::Query;
pub use crate::access::read::range::RangeQuery;
pub use crate::access::repo::range_query;
pub use crate::access::repo::Repo;
pub use crate::access::sort_condition::{
    sort_key_condition, sort_key_prefix_condition, AttributeSort, EndsInLiteral, SortKeyCondition,
    SortOp, TemplateSort,
};
pub use crate::access::source::{
    CollectionMember, QuerySource, ShardedCollection, ShardedProjection,
};
pub use crate::access::write::counter::ShardedCounter;
pub use crate::access::write::transaction::ItemKey;
pub use crate::access::write::update::{GsiRewrite, Update, UpdateKey};
pub use crate::error::Error;
pub use crate::keys::attribute::{KeyArg, KeyAttribute, KeyValue};
pub use crate::keys::bucket::{Bucket, BucketTime, Granularity};
pub use crate::keys::encoding::{KeyPart, KeyPartDecode, UnknownField};
pub use crate::keys::error::KeyError;
pub use crate::keys::layout::ShardBy;

/// The key model's layout functions generated code calls (`layout::identity_shard`, ...).
pub mod layout {
    pub use crate::keys::layout::*;
}
pub use crate::keys::schema::ENTITY_ATTRIBUTE;
pub use crate::keys::schema::{
    AttributeKeySchema, EntitySchema, GsiSchema, IndexNames, KeyAttributeSchema,
    PartitionKeySchema, PreviousLayout, PreviousPlacement, Recognition, ShardSuffix, ShardedTable,
    Sharding, SortKeySchema, TableSchema, TimeAttribute, TimeFormat,
};
pub use crate::keys::shards::{Partitions, ShardKeys};
pub use crate::keys::template::{
    build_key, build_key_prefix, canonical, loosely_same_key, parse_key, BucketLabel, KeyContext,
    KeyTemplate, ParsedKey, Segment,
};
pub use aws_sdk_dynamodb::types::AttributeValue;
pub use core::result::Result;
pub use std::string::String;
pub use std::vec::Vec;

use crate::access::entity::ShardedEntity as Entity;
use crate::error::UpdateRefusal;

/// One `GetItem` by physical key: the body of the generated `Entity::get`.
pub async fn get_by_key<E: Entity>(
    repo: &Repo<E>,
    pk: String,
    sk: Option<String>,
) -> Result<Option<E>, Error> {
    repo.get_by_key(pk, sk).await
}

/// Every shard's copy of a randomly sharded item: the body of `Entity::get_from_all_shards`.
pub async fn get_from_all_shards<E: Entity>(
    repo: &Repo<E>,
    shards: ShardKeys,
    sk: Option<String>,
) -> Result<Vec<E>, Error> {
    repo.get_from_all_shards(shards, sk).await
}

/// A point read through the layout, by the item's key (`Entity::key(..)`): the current place,
/// then, when nothing is there during a transition, the previous one. The body of the
/// generated `Entity::get`.
pub async fn get_item<E: Entity>(
    repo: &Repo<E>,
    key: Result<ItemKey<E>, KeyError>,
) -> Result<Option<E>, Error> {
    repo.get_in_layout(&key?).await
}

/// A delete through the layout, by the item's key (`Entity::key(..)`): the previous place
/// (during a transition), then the current one. The body of the generated `Entity::delete`.
pub async fn delete_item<E: Entity>(
    repo: &Repo<E>,
    key: Result<ItemKey<E>, KeyError>,
) -> Result<(), Error> {
    repo.delete_in_layout(&key?).await
}

/// A typed `UpdateItem` of the item with this key (`Entity::key(..)`) whose key fields are
/// stored as `key_values` (attribute, value; `stored_value`'s results): the body of the
/// generated `Entity::update`. The first error, the key's then the values', fails `send`.
pub fn update_item<E: Entity + GsiRewrite>(
    repo: &Repo<E>,
    key: Result<ItemKey<E>, KeyError>,
    key_values: Vec<(&'static str, Result<AttributeValue, Error>)>,
) -> Update<E> {
    let key = key.map_err(Error::from).and_then(|key| {
        let shard_input = key.shard_input().cloned();
        let (pk, previous, sk) = key_parts(key);
        let key_values = key_values
            .into_iter()
            .map(|(attribute, value)| Ok((attribute, value?)))
            .collect::<Result<_, Error>>()?;
        Ok(UpdateKey {
            pk,
            sk,
            key_values,
            previous,
            shard_input,
        })
    });
    Update::new(repo, key)
}

/// The current partition key, the previous one (during a transition) and the sort key.
fn key_parts<E: Entity>(key: ItemKey<E>) -> (String, Option<String>, Option<String>) {
    (
        key.partition_key().to_owned(),
        key.previous_partition_key().map(str::to_owned),
        key.sort_key().map(str::to_owned),
    )
}

/// One `DeleteItem` by physical key: the body of the generated `Entity::delete`.
pub async fn delete_by_key<E: Entity>(
    repo: &Repo<E>,
    pk: String,
    sk: Option<String>,
) -> Result<(), Error> {
    repo.delete_by_key(pk, sk).await
}

/// A scatter-gather query over every shard of a logical key: the body of the generated
/// `query*` functions.
pub fn query_shards<E: Entity>(
    repo: &Repo<E>,
    index: Option<u8>,
    shards: Result<ShardKeys, KeyError>,
) -> Query<E> {
    repo.query_of(index, shards.map(|keys| Partitions::new(keys, None)))
}

/// A scatter-gather query of the base table over every partition of the entity's layout (the
/// previous layout's too, during a transition): the body of the generated `query`.
pub fn query_partitions<E: Entity>(
    repo: &Repo<E>,
    partitions: Result<Partitions, KeyError>,
) -> Query<E> {
    repo.query_of(None, partitions)
}

/// A scatter-gather query of index `index`, keyed by the item's own attributes, over every
/// shard of the partition whose attributes have these values: the body of the generated
/// `query_gsiN` of a `#[gsiN(pk = [..])]` index.
pub fn query_attributes<E: Entity>(
    repo: &Repo<E>,
    index: u8,
    equalities: Vec<(&'static str, KeyValue)>,
) -> Query<E> {
    repo.query_of(
        Some(index),
        crate::keys::layout::attribute_partitions(E::SCHEMA, index, equalities),
    )
}

/// The shard of an item in an index keyed by its own attributes, as the text `item_keys`
/// carries it (written as a number).
pub fn attribute_shard(key: &PartitionKeySchema, identity: &str) -> String {
    crate::keys::layout::identity_shard(key, identity).to_string()
}

pub use crate::keys::generated::{debug_fields, never, EntityKey, Probe, RangeBound};

/// The autoref-specialisation traits of the key model's probes and of [`DecodeProbe`], in
/// scope anonymously: the expansion says `use __rt::probes::*;` once.
pub mod probes {
    pub use super::{DecodeFallback as _, DecodeVia as _};
    pub use crate::keys::generated::probes::*;
}

/// The same trick for decoding: `(&DecodeProbe::<T>::new()).decode_at(&parsed, i)`.
pub struct DecodeProbe<T>(core::marker::PhantomData<fn() -> T>);

impl<T> DecodeProbe<T> {
    /// A probe for `T`.
    pub fn new() -> Self {
        DecodeProbe(core::marker::PhantomData)
    }
}

impl<T> Default for DecodeProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The `KeyPartDecode` path of [`DecodeProbe`].
pub trait DecodeVia<T> {
    /// Decodes field `index` of `parsed`.
    fn decode_at(
        &self,
        parsed: &crate::keys::template::ParsedKey<'_>,
        index: usize,
    ) -> Result<T, KeyError>;

    /// The decoder of a stored key field of type `T`, for [`key_attributes`].
    fn attribute_decoder(&self) -> KeyFieldDecoder
    where
        T: serde::Serialize;
}

/// Decodes field `index` of a parsed key into the attribute its stored field holds; the
/// entity and the field name are for the error. One per key field, in [`key_attributes`].
pub type KeyFieldDecoder =
    fn(&ParsedKey<'_>, usize, &'static str, &'static str) -> Result<AttributeValue, KeyError>;

fn decode_key_field<T: KeyPartDecode + KeyPart + serde::Serialize>(
    parsed: &ParsedKey<'_>,
    index: usize,
    entity: &'static str,
    field: &'static str,
) -> Result<AttributeValue, KeyError> {
    key_field_attribute(entity, field, &parsed.decode::<T>(index)?)
}

// `KeyPart` too: `ParsedKey::decode` writes the value back to check the text was its canonical
// key. Every key field is asserted to have both (`assert_key_field`),
// so a type lacking either is reported there and this probe falls back silently.
impl<T: KeyPartDecode + KeyPart> DecodeVia<T> for DecodeProbe<T> {
    fn decode_at(
        &self,
        parsed: &crate::keys::template::ParsedKey<'_>,
        index: usize,
    ) -> Result<T, KeyError> {
        parsed.decode::<T>(index)
    }

    fn attribute_decoder(&self) -> KeyFieldDecoder
    where
        T: serde::Serialize,
    {
        decode_key_field::<T>
    }
}

/// The fallback of [`DecodeProbe`], reached only when compilation already failed.
pub trait DecodeFallback<T> {
    /// Always an error.
    fn decode_at(
        &self,
        parsed: &crate::keys::template::ParsedKey<'_>,
        index: usize,
    ) -> Result<T, KeyError>;

    /// A decoder that always fails.
    fn attribute_decoder(&self) -> KeyFieldDecoder;
}

impl<T> DecodeFallback<T> for &DecodeProbe<T> {
    fn decode_at(&self, _: &crate::keys::template::ParsedKey<'_>, _: usize) -> Result<T, KeyError> {
        Err(KeyError::Arity {
            entity: "",
            attribute: "",
            template: "",
        })
    }

    fn attribute_decoder(&self) -> KeyFieldDecoder {
        |_, _, entity, _| {
            Err(KeyError::Arity {
                entity,
                attribute: "",
                template: "",
            })
        }
    }
}

pub use crate::keys::checks::*;
pub use crate::keys::shards::identity;

/// A key field's decoded value as the attribute serde stores it: what completes an untagged
/// item that carries the field only in its key.
pub fn key_field_attribute<T: serde::Serialize>(
    entity: &'static str,
    field: &'static str,
    value: &T,
) -> Result<AttributeValue, KeyError> {
    serde_dynamo::to_attribute_value(value).map_err(|e| KeyError::Unencodable {
        entity,
        attribute: field,
        field,
        reason: format!("its value read from the key cannot be stored as an attribute: {e}"),
    })
}
pub use crate::access::recognize::{recognize_member, Depth, NotOurs, Recognize};

/// The error for an item of no member of the collection `collection` (whose first member's
/// layout is `layout`): another entity's, or foreign (a query leaves both out, so only a
/// hand-built item reaches it).
pub fn not_a_member(
    collection: &'static str,
    layout: &'static EntitySchema,
    item: &Item,
    not_ours: NotOurs,
) -> Error {
    let key = crate::item::describe_key(layout, item);
    match not_ours {
        NotOurs::OtherEntity(other) => Error::WrongEntity {
            expected: collection,
            found: format!("a `{other}`, which is not a member"),
            attribute: layout.tag_attribute().unwrap_or_default(),
            key,
        },
        NotOurs::Foreign(reason) => Error::ForeignItem {
            entity: collection,
            key,
            reason,
        },
    }
}

/// The key fields of a stored item, decoded from its partition key `pk` (under whichever
/// layout it is stored, see `layout::parse_stored`) and sort key `sk` (by `sk_key`, the
/// entity's sort key): each field of `fields` (its name, the attribute serde stores it as, and
/// its decoder, generated where the field's type is known) that a key holds, and not as a
/// time bucket, is written as that attribute. The body of the generated
/// `ShardedEntity::__key_attributes`.
pub fn key_attributes(
    pk_key: (&'static str, &'static PartitionKeySchema),
    sk_key: Option<&EntityKey>,
    pk: &str,
    sk: Option<&str>,
    fields: &[(&'static str, &'static str, KeyFieldDecoder)],
) -> Result<Item, KeyError> {
    let entity = pk_key.0;
    let mut out = Item::new();
    let mut fill = |parsed: &ParsedKey<'_>| -> Result<(), KeyError> {
        for i in 0..parsed.len() {
            let Some((name, false)) = parsed.field(i) else {
                continue;
            };
            if let Some((field, stored, decode)) = fields.iter().find(|f| f.0 == name) {
                out.insert((*stored).into(), decode(parsed, i, entity, field)?);
            }
        }
        Ok(())
    };
    fill(&layout::parse_stored(entity, pk_key.1, pk)?)?;
    if let (Some(sk_key), Some(sk)) = (sk_key, sk) {
        fill(&sk_key.parse(sk)?)?;
    }
    Ok(out)
}

/// The stored value of a key field, for an update's GSI rewrite (`UpdateKey::key_values`).
pub fn stored_value<T: serde::Serialize + ?Sized>(
    entity: &'static str,
    attribute: &'static str,
    value: &T,
) -> Result<aws_sdk_dynamodb::types::AttributeValue, Error> {
    serde_dynamo::to_attribute_value(value).map_err(|source| {
        UpdateRefusal::Unstorable {
            entity,
            attribute,
            source,
        }
        .into()
    })
}

/// A field a GSI key is rebuilt from, read back from the update's values: the field's new
/// value when the update sets it, else the key field's value. `gsi` and `changed` name the
/// index and what changed it, for the error when the value is not known.
pub fn rebuilt_field<T: serde::de::DeserializeOwned>(
    values: &std::collections::HashMap<&'static str, aws_sdk_dynamodb::types::AttributeValue>,
    attribute: &'static str,
    gsi: &'static str,
    changed: &[&'static str],
) -> Result<T, Error> {
    let value = values
        .get(attribute)
        .ok_or_else(|| UpdateRefusal::GsiFieldNotSet {
            changed: changed.to_vec(),
            gsi,
            attribute,
        })?;
    serde_dynamo::from_attribute_value(value.clone()).map_err(|source| {
        UpdateRefusal::GsiFieldUnreadable {
            gsi,
            attribute,
            source,
        }
        .into()
    })
}

/// The counter `name` of the item whose layout-independent identity is `pk` (its logical
/// partition key, and for a hash-sharded key `#` and the canonical text of its hash fields)
/// and `sk`: the body of a generated `<name>_counter`. Its shards are
/// `COUNTER#<name>#<pk>[#<sk>]#0..n`, in the repository's table: they stay where they are
/// when the item's layout changes (`previous_n`, `legacy`).
pub fn entity_counter<E: Entity>(
    repo: &Repo<E>,
    name: &str,
    n: u32,
    pk: &str,
    sk: Option<&str>,
) -> ShardedCounter {
    let logical = match sk {
        Some(sk) => format!("COUNTER#{name}#{pk}#{sk}"),
        None => format!("COUNTER#{name}#{pk}"),
    };
    ShardedCounter::for_entity_item(
        repo.client().clone(),
        repo.table(),
        &E::table_definition(),
        logical,
        n,
    )
}
