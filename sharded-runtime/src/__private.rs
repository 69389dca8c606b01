//! Items used by the code `#[derive(ShardedEntity)]` generates. Not a public API: no
//! stability promise, hidden from the docs. Generated code reaches every runtime item through
//! this one module, so the rest of the runtime can change freely.

pub use crate::access::condition::{Data, Field, PrimaryKey};
pub use crate::access::counter::ShardedCounter;
pub use crate::access::entity::{Item, ItemKeys, ShardedEntity};
pub use crate::access::query::Query;
pub use crate::access::range::{range_query, RangeBound, RangeQuery};
pub use crate::access::repo::Repo;
pub use crate::access::sort_condition::{
    sort_key_condition, sort_key_prefix_condition, AttributeSort, SortKeyCondition, SortOp,
};
pub use crate::access::source::{
    CollectionMember, QuerySource, ShardedCollection, ShardedProjection,
};
pub use crate::access::transaction::ItemKey;
pub use crate::access::update::{GsiRewrite, Update, UpdateKey};
pub use crate::error::Error;
pub use crate::keys::attribute::{KeyArg, KeyAttribute, KeyValue};
pub use crate::keys::bucket::{Bucket, BucketTime, Granularity};
pub use crate::keys::encoding::{KeyPart, KeyPartDecode};
pub use crate::keys::error::KeyError;
pub use crate::keys::layout::ShardBy;

/// The key model's layout functions generated code calls (`layout::identity_shard`, ...).
pub mod layout {
    pub use crate::keys::layout::*;
}
pub use crate::keys::schema::{
    AttributeKeySchema, EntitySchema, GsiSchema, KeyAttributeSchema, PartitionKeySchema,
    PreviousLayout, Sharding, SortKeySchema, TimeAttribute, TimeFormat,
};
pub use crate::keys::shards::{Partitions, ShardKeys};
pub use crate::keys::template::{
    build_key, build_key_prefix, canonical, parse_key, BucketLabel, KeyContext, KeyTemplate,
    ParsedKey, Segment,
};
pub use aws_sdk_dynamodb::types::AttributeValue;
pub use core::result::Result;
pub use std::string::String;
pub use std::vec::Vec;

use crate::access::entity::ShardedEntity as Entity;
use crate::keys::schema::{self, same_previous, same_template_shape, shard_count, str_eq};

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

/// A point read through the layout: the current place, then, when nothing is there during a
/// transition, the previous one. The body of the generated `Entity::get`.
pub async fn get_in_layout<E: Entity>(
    repo: &Repo<E>,
    pk: String,
    previous: Option<String>,
    sk: Option<String>,
) -> Result<Option<E>, Error> {
    repo.get_in_layout(pk, previous, sk).await
}

/// A delete through the layout: the previous place (during a transition), then the current
/// one. The body of the generated `Entity::delete`.
pub async fn delete_in_layout<E: Entity>(
    repo: &Repo<E>,
    pk: String,
    previous: Option<String>,
    sk: Option<String>,
) -> Result<(), Error> {
    repo.delete_in_layout(pk, previous, sk).await
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
    repo.query_shards(index, shards)
}

/// A scatter-gather query of the base table over every partition of the entity's layout (the
/// previous layout's too, during a transition): the body of the generated `query`.
pub fn query_partitions<E: Entity>(
    repo: &Repo<E>,
    partitions: Result<Partitions, KeyError>,
) -> Query<E> {
    repo.query_partitions(partitions)
}

/// A scatter-gather query of index `index`, keyed by the item's own attributes, over every
/// shard of the partition whose attributes have these values: the body of the generated
/// `query_gsiN` of a `#[gsiN(pk = [..])]` index.
pub fn query_attributes<E: Entity>(
    repo: &Repo<E>,
    index: u8,
    equalities: Vec<(&'static str, KeyValue)>,
) -> Query<E> {
    repo.query_attributes(index, equalities)
}

/// The shard of an item in an index keyed by its own attributes, as the text `item_keys`
/// carries it (written as a number).
pub fn attribute_shard(key: &PartitionKeySchema, identity: &str) -> String {
    crate::keys::layout::identity_shard(key, identity).to_string()
}

/// The attribute `name` of a multi-attribute key, typed as its field's type `T` is stored.
/// Spanned at the field named in `pk = [..]` / `sk = [..]`, so a type that cannot be a key
/// attribute is reported there.
pub const fn key_attribute<T: KeyAttribute>(name: &'static str) -> KeyAttributeSchema {
    KeyAttributeSchema::new(name, T::TYPE)
}

/// Fails compilation when a multi-attribute index names more partition fields than DynamoDB
/// takes (the shard attribute counted). Spanned at the user's `pk = [..]`.
pub const fn assert_partition_attributes(fields: usize) {
    if fields + 1 > schema::MAX_KEY_ATTRIBUTES {
        panic!(concat!(
            "a multi-attribute index key has at most ",
            schema::max_key_attributes!(),
            " partition attributes (`sharded::schema::MAX_KEY_ATTRIBUTES`), and the shard \
             attribute is one of them: name at most three fields in `pk = [..]`"
        ));
    }
}

/// Fails compilation when a multi-attribute index names more sort fields than DynamoDB
/// takes. Spanned at the user's `sk = [..]`.
pub const fn assert_sort_attributes(fields: usize) {
    if fields > schema::MAX_KEY_ATTRIBUTES {
        panic!(concat!(
            "a multi-attribute index key has at most ",
            schema::max_key_attributes!(),
            " sort attributes (`sharded::schema::MAX_KEY_ATTRIBUTES`): name at most four fields \
             in `sk = [..]`"
        ));
    }
}

/// The autoref-specialisation traits of [`Probe`], [`DecodeProbe`] and the range bounds, in
/// scope anonymously: the expansion says `use __rt::probes::*;` once.
pub mod probes {
    pub use super::{
        DecodeFallback as _, DecodeVia as _, FallbackProbe as _, KeyPartProbe as _, NotATime as _,
        RangeBoundFallback as _, RangeBoundProbe as _, RangeBoundWhole as _, TimeProbe as _,
    };
}

/// The body of a generated function that cannot run: a `_lt` stub (whose bound no type
/// meets) and every function of the fallback emitted beside a derive error (the crate does
/// not compile). One call instead of an `unreachable!()` expanded in every such body.
#[cold]
pub fn never() -> ! {
    unreachable!("a function generated only to carry a signature ran")
}

/// `Debug` of a generated `{Entity}Fields`: the struct's name and each field, as
/// `#[derive(Debug)]` writes them, without expanding a derive per entity.
pub fn debug_fields(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    fields: &[(&str, &dyn core::fmt::Debug)],
) -> core::fmt::Result {
    let mut out = f.debug_struct(name);
    for (field, value) in fields {
        out.field(field, value);
    }
    out.finish()
}

/// One key template of one entity with the context its errors name: what the generated
/// builders, parsers, prefixes and typed conditions of an unsharded key (a sort key, or a
/// partition key's logical form) call, so each of them is one line.
#[derive(Clone, Copy)]
pub struct EntityKey {
    ctx: KeyContext,
    template: &'static KeyTemplate,
}

impl EntityKey {
    /// The key `attribute` of `entity`, built from `template`.
    pub const fn new(
        entity: &'static str,
        attribute: &'static str,
        template: &'static KeyTemplate,
    ) -> Self {
        EntityKey {
            ctx: KeyContext { entity, attribute },
            template,
        }
    }

    /// The whole key from its fields' values.
    pub fn build(&self, values: &[&dyn KeyPart]) -> Result<String, KeyError> {
        build_key(self.ctx, self.template, values)
    }

    /// The key's first `segments` segments (a `sk_prefix_<field>`).
    pub fn prefix(&self, values: &[&dyn KeyPart], segments: usize) -> Result<String, KeyError> {
        build_key_prefix(self.ctx, self.template, values, segments)
    }

    /// A key back into its encoded fields (a `parse_sk`).
    pub fn parse<'k>(&self, key: &'k str) -> Result<ParsedKey<'k>, KeyError> {
        parse_key(self.ctx, self.template, key, None)
    }

    /// Every key of the entity: `begins_with` the template's leading literal (a `sk_all`).
    pub fn all(&self) -> SortKeyCondition {
        sort_key_prefix_condition(self.ctx, self.template)
    }

    /// `leading` fields equal and the next one `== v`.
    pub fn eq(&self, leading: &[&dyn KeyPart], v: &dyn KeyPart) -> SortKeyCondition {
        sort_key_condition(self.ctx, self.template, leading, SortOp::Eq(v))
    }

    /// `leading` fields equal and the next one `< v`.
    pub fn lt(&self, leading: &[&dyn KeyPart], v: &dyn KeyPart) -> SortKeyCondition {
        sort_key_condition(self.ctx, self.template, leading, SortOp::Lt(v))
    }

    /// `leading` fields equal and the next one `<= v`.
    pub fn le(&self, leading: &[&dyn KeyPart], v: &dyn KeyPart) -> SortKeyCondition {
        sort_key_condition(self.ctx, self.template, leading, SortOp::Le(v))
    }

    /// `leading` fields equal and the next one `> v`.
    pub fn gt(&self, leading: &[&dyn KeyPart], v: &dyn KeyPart) -> SortKeyCondition {
        sort_key_condition(self.ctx, self.template, leading, SortOp::Gt(v))
    }

    /// `leading` fields equal and the next one `>= v`.
    pub fn ge(&self, leading: &[&dyn KeyPart], v: &dyn KeyPart) -> SortKeyCondition {
        sort_key_condition(self.ctx, self.template, leading, SortOp::Ge(v))
    }

    /// `leading` fields equal and `low <= next <= high`.
    pub fn between(
        &self,
        leading: &[&dyn KeyPart],
        low: &dyn KeyPart,
        high: &dyn KeyPart,
    ) -> SortKeyCondition {
        sort_key_condition(self.ctx, self.template, leading, SortOp::Between(low, high))
    }
}

/// Autoref specialisation: `(&Probe(&v)).part()` is `&v as &dyn KeyPart` when the value's
/// type has a `KeyPart`, and otherwise resolves to [`FallbackProbe`], so a key field type
/// without an encoding is reported once, by [`assert_key_part`] at the user's type, and
/// not again at every generated builder.
pub struct Probe<'a, T: ?Sized>(pub &'a T);

/// The `KeyPart` path of [`Probe`].
pub trait KeyPartProbe {
    /// The value as a key part.
    fn part(&self) -> &dyn KeyPart;
}

impl<T: KeyPart + ?Sized> KeyPartProbe for Probe<'_, T> {
    fn part(&self) -> &dyn KeyPart {
        // `&&T` coerces because `&T: KeyPart` for every `T: KeyPart + ?Sized`.
        &self.0
    }
}

/// The fallback of [`Probe`], reached only when compilation already failed.
pub trait FallbackProbe {
    /// A key part that refuses to encode.
    fn part(&self) -> &dyn KeyPart;
}

impl<T: ?Sized> FallbackProbe for &Probe<'_, T> {
    fn part(&self) -> &dyn KeyPart {
        &Unencodable
    }
}

struct Unencodable;

impl KeyPart for Unencodable {
    fn write_key(&self, _: &mut String) -> Result<(), crate::keys::encoding::KeyPartError> {
        Err(crate::keys::encoding::KeyPartError::invalid(
            "this type has no key encoding",
        ))
    }
}

/// The time of a bucketed field: `(&Probe(v)).time()` is `v as &dyn BucketTime` when the
/// value's type is a time, and otherwise resolves to [`NotATime`], so a bucketed field that is
/// not a time is reported once, by [`assert_bucket_time`] at the user's type.
pub trait TimeProbe {
    /// The value as a time.
    fn time(&self) -> &dyn BucketTime;
}

impl<T: BucketTime> TimeProbe for Probe<'_, T> {
    fn time(&self) -> &dyn BucketTime {
        self.0
    }
}

/// The fallback of [`TimeProbe`], reached only when compilation already failed.
pub trait NotATime {
    /// A time that has no bucket.
    fn time(&self) -> &dyn BucketTime;
}

impl<T: ?Sized> NotATime for &Probe<'_, T> {
    fn time(&self) -> &dyn BucketTime {
        &NoTime
    }
}

struct NoTime;

impl BucketTime for NoTime {
    fn epoch_seconds(&self) -> Result<i64, crate::keys::bucket::BucketError> {
        Err(crate::keys::bucket::BucketError::TimeOutOfRange {
            epoch_seconds: u64::MAX,
        })
    }
}

/// A bound of a range query, exact to the nanosecond: `(&&Probe(v)).range_bound()` resolves,
/// in this order, to [`RangeBoundProbe`] for a `chrono::DateTime<Utc>` (which has sub-second
/// parts), [`RangeBoundWhole`] for any other time with a key encoding (whole seconds), and
/// [`RangeBoundFallback`] (reached only when compilation already failed).
pub trait RangeBoundProbe {
    /// The bound.
    fn range_bound(&self) -> RangeBound;
}

#[cfg(feature = "chrono")]
impl RangeBoundProbe for &Probe<'_, chrono::DateTime<chrono::Utc>> {
    fn range_bound(&self) -> RangeBound {
        use chrono::Timelike;
        let time = self.0;
        RangeBound::new(time, time.nanosecond() % 1_000_000_000, time)
    }
}

/// The whole-second path of [`RangeBoundProbe`].
pub trait RangeBoundWhole {
    /// The bound.
    fn range_bound(&self) -> RangeBound;
}

impl<T: BucketTime + KeyPart> RangeBoundWhole for &&Probe<'_, T> {
    fn range_bound(&self) -> RangeBound {
        RangeBound::new(self.0, 0, self.0)
    }
}

/// The fallback of [`RangeBoundProbe`], reached only when compilation already failed.
pub trait RangeBoundFallback {
    /// A bound that cannot be used.
    fn range_bound(&self) -> RangeBound;
}

impl<T: ?Sized> RangeBoundFallback for Probe<'_, T> {
    fn range_bound(&self) -> RangeBound {
        RangeBound::invalid("this type is not a time with a key encoding")
    }
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
}

// `KeyPart` too: `ParsedKey::decode` writes the value back to check the text was its canonical
// key. Every key field is asserted to have both (`assert_key_part`, `assert_key_part_decode`),
// so a type lacking either is reported there and this probe falls back silently.
impl<T: KeyPartDecode + KeyPart> DecodeVia<T> for DecodeProbe<T> {
    fn decode_at(
        &self,
        parsed: &crate::keys::template::ParsedKey<'_>,
        index: usize,
    ) -> Result<T, KeyError> {
        parsed.decode::<T>(index)
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
}

impl<T> DecodeFallback<T> for &DecodeProbe<T> {
    fn decode_at(&self, _: &crate::keys::template::ParsedKey<'_>, _: usize) -> Result<T, KeyError> {
        Err(KeyError::Arity {
            entity: "",
            attribute: "",
            template: "",
        })
    }
}

/// Never implemented: the bound of the generated `_lt` stub on a field that ends the sort-key
/// template below equal fields, so calling it fails to compile with this message.
#[diagnostic::on_unimplemented(
    message = "a strict `<` on the last field of a sort-key template cannot follow equal fields",
    label = "no `_lt` here: use the `_le` condition with the value before this one",
    note = "the key of an item whose last field equals the bound is the bound itself, and DynamoDB's `BETWEEN` (needed below the equal fields) includes it; see the `_le` function's docs"
)]
pub trait NoStrictUpperBound {}

/// Requires `T: KeyPart` at compile time; the derive spans the call at the field's type so
/// an unsupported type is reported there.
pub const fn assert_key_part<T: KeyPart + ?Sized>() {}

/// Requires `T: KeyPartDecode`, for fields that are parsed back out of keys.
pub const fn assert_key_part_decode<T: KeyPartDecode>() {}

/// Requires `T: BucketTime`, for fields bucketed by a template (`{at:day}`); the derive
/// spans the call at the field's type.
pub const fn assert_bucket_time<T: BucketTime>() {}

/// Fails compilation when the granularities the derive accepts (`names`, in order) are not the
/// runtime's [`Granularity::NAMES`]: the runtime owns them, the derive's list is checked.
pub const fn assert_granularity_names(names: &[&str]) {
    let ours = Granularity::NAMES;
    if names.len() != ours.len() {
        panic!("sharded-derive and sharded-runtime disagree on the time bucket granularities: use matching versions");
    }
    let mut i = 0;
    while i < ours.len() {
        if !str_eq(names[i], ours[i]) {
            panic!("sharded-derive and sharded-runtime disagree on the time bucket granularities: use matching versions");
        }
        i += 1;
    }
}

static FALLBACK_TEMPLATE: KeyTemplate = KeyTemplate::new("", &[]);

/// The schema of the stub impl emitted next to derive errors; never used at run time
/// because the crate does not compile.
pub static FALLBACK_SCHEMA: EntitySchema = EntitySchema::new(
    "",
    None,
    PartitionKeySchema::new("pk", &FALLBACK_TEMPLATE, Sharding::None),
    None,
    &[],
);

pub use crate::keys::shards::identity;

/// Fails compilation when a declared shard count is above `MAX_SHARDS`. The derive calls it
/// in a `const` item spanned at the user's `n = ...`, so the runtime owns the limit and the
/// compiler reports it under the user's token.
pub const fn assert_shard_count(n: u32) {
    if n > schema::MAX_SHARDS {
        panic!(concat!(
            "this shard count is above the maximum of ",
            schema::max_shards!(),
            " (`sharded::schema::MAX_SHARDS`): every read asks every shard; give the key more \
             cardinality (a finer template) instead"
        ));
    }
}

/// Fails compilation when a field is stored as `ENTITY_ATTRIBUTE`, the attribute the
/// runtime writes itself. Called like `assert_shard_count`, spanned at the field.
pub const fn assert_not_entity_attribute(attribute: &str) {
    if str_eq(attribute, schema::ENTITY_ATTRIBUTE) {
        panic!(concat!(
            "this field is stored as the attribute `",
            schema::entity_attribute!(),
            "`, which `sharded` writes itself (the entity name): rename the field, or give it \
             another name with #[serde(rename = \"...\")]"
        ));
    }
}

/// Holds when two members write their partition-key fields with the same types (and so the
/// same encoding): `A` and `B` are the members' `ShardedEntity::__PartitionTypes`.
#[diagnostic::on_unimplemented(
    message = "this member writes its partition-key fields as `{Self}`, the collection's first member as `{B}`",
    label = "partition-key field types differ from the first member's",
    note = "a collection reads one set of partitions: every member's `#[pk(template = ..)]` fields need the same types in the same order, so the same logical key is encoded the same way"
)]
pub trait SamePartitionTypes<B> {}

impl<T> SamePartitionTypes<T> for T {}

/// Requires [`SamePartitionTypes`]; the derive spans the call at the member's type.
pub const fn assert_same_partition_types<A: SamePartitionTypes<B>, B>() {}

/// Fails compilation when `member` cannot share partitions with `first`, the collection's
/// first member. (Key attribute names are fixed, `pk` and `sk`, so they always agree.) The derive calls it in a `const` item spanned at the member's type.
pub const fn assert_collection_member(first: &EntitySchema, member: &EntitySchema) {
    if str_eq(first.entity, member.entity) {
        panic!(
            "this member has the entity name of an earlier member: items would be ambiguous; \
             give one of them another name with #[sharded(entity = \"...\")], or remove the \
             repeated variant"
        );
    }
    if !same_template_shape(first.pk.template, member.pk.template) {
        panic!(
            "this member's #[pk(template = ..)] differs from the collection's first member's: \
             a collection reads one set of partitions, so every member needs the same literals \
             with fields at the same places (e.g. \"GAME#{{game_id}}\" for all)"
        );
    }
    if shard_count(first.pk.sharding) != shard_count(member.pk.sharding) {
        panic!(
            "this member's shard count differs from the collection's first member's: a \
             collection reads the same shards for every member, so give every member the same \
             `n = ..` (how each picks its shard may differ)"
        );
    }
    if !same_previous(first.pk.previous, member.pk.previous) {
        panic!(
            "this member's layout transition (`previous_n` or `legacy` on #[pk]) differs from \
             the collection's first member's: a collection reads one set of partitions, so \
             declare the same transition on every member, or on none"
        );
    }
    let same_sort_attribute = match (first.sk, member.sk) {
        (Some(a), Some(b)) => str_eq(a.attribute, b.attribute),
        (None, None) => true,
        _ => false,
    };
    if !same_sort_attribute {
        panic!(
            "this member has a sort key and the collection's first member has none, or the other \
             way round: a collection merges its members by their sort key; give every member a \
             #[sk(template = ..)]"
        );
    }
}

/// Fails compilation when two members other than the first share an entity name (the first
/// is compared by [`assert_collection_member`]).
pub const fn assert_distinct_entities(earlier: &EntitySchema, member: &EntitySchema) {
    if str_eq(earlier.entity, member.entity) {
        panic!(
            "this member has the entity name of an earlier member: items would be ambiguous; \
             give one of them another name with #[sharded(entity = \"...\")], or remove the \
             repeated variant"
        );
    }
}

/// Fails compilation when a projection names an attribute its entity does not store. The
/// derive calls it in a `const` item spanned at the projection's field.
pub const fn assert_projected_attribute(stored: &[&str], open: bool, attribute: &str) {
    if open {
        return;
    }
    let mut i = 0;
    while i < stored.len() {
        if str_eq(stored[i], attribute) {
            return;
        }
        i += 1;
    }
    panic!(
        "the projected entity stores no attribute of this name: a projection reads attributes \
         its entity stores; fix the field's name (or its #[serde(rename = \"...\")]), or remove it"
    );
}

/// The entity name an item carries: what a collection's decoding dispatches on.
pub fn entity_name(item: &Item) -> Option<&str> {
    crate::access::entity::entity_of(item)
}

/// The error for an item of no member of the collection `collection` (the query filters them
/// out, so only a hand-built item reaches it).
pub fn not_a_member(collection: &'static str, item: &Item) -> Error {
    let found = match entity_name(item) {
        Some(other) => format!("a `{other}`, which is not a member"),
        None => "an item without an entity attribute".to_owned(),
    };
    Error::WrongEntity {
        expected: collection,
        found,
        attribute: schema::ENTITY_ATTRIBUTE,
        key: crate::error::ItemKeyDisplay { pk: None, sk: None },
    }
}

/// The stored value of a key field, for an update's GSI rewrite (`UpdateKey::key_values`).
pub fn stored_value<T: serde::Serialize + ?Sized>(
    entity: &'static str,
    attribute: &'static str,
    value: &T,
) -> Result<aws_sdk_dynamodb::types::AttributeValue, Error> {
    serde_dynamo::to_attribute_value(value).map_err(|e| {
        Error::InvalidUpdate(format!(
            "{entity}.{attribute} cannot be stored as a DynamoDB attribute: {e}"
        ))
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
    let value = values.get(attribute).ok_or_else(|| {
        Error::InvalidUpdate(format!(
            "this update changes `{}`, part of {gsi}'s key, which is built from `{attribute}` too: \
             set `{attribute}` in the same update with `set` (a GSI key is rebuilt from known \
             values, so its fields must all be set together, and not by `add` or `remove`)",
            changed.join("`, `")
        ))
    })?;
    serde_dynamo::from_attribute_value(value.clone()).map_err(|e| {
        Error::InvalidUpdate(format!(
            "`{attribute}` could not be read back for {gsi}'s key: {e}"
        ))
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
