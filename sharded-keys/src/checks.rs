//! The compile-time checks of generated code: `const fn`s over the key model (schemas,
//! templates, suffixes, granularities) that the derive calls in `const` items spanned at the
//! user's tokens, so a refusal is reported where it was written and the rule lives once, here,
//! beside the limits it checks. Not an API: the runtime's `__private` re-exports them for
//! generated code.

use crate::attribute::KeyAttribute;
use crate::bucket::BucketTime;
use crate::encoding::{KeyPart, KeyPartDecode};
use crate::schema::{
    self, same_previous, same_suffix, same_template_shape, shard_count, str_eq, EntitySchema,
    KeyAttributeSchema, PartitionKeySchema, Sharding,
};
use crate::suffix::ShardSuffix;
use crate::table::TableSchema;
use crate::template::KeyTemplate;

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

/// Requires `T: KeyPart` and `T: KeyPartDecode` at compile time, for a key field of an entity
/// (written into keys and parsed back out): the derive spans the call at the field's type, so
/// an unsupported type is reported there, each unmet bound once.
pub const fn assert_key_field<T: KeyPart + KeyPartDecode>() {}

/// Requires `T: BucketTime`, for fields bucketed by a template (`{at:day}`); the derive
/// spans the call at the field's type.
pub const fn assert_bucket_time<T: BucketTime>() {}

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

/// Fails compilation when a declared shard count is above `MAX_SHARDS`. The derive calls it
/// in a `const` item spanned at the user's `n = ...`, so the key model owns the limit and the
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

/// A message assembled at compile time, for a `const` check whose refusal names what the
/// user wrote and the table's names (which only generated code sees). Longer text is cut.
struct ConstMessage {
    buf: [u8; 1024],
    len: usize,
}

impl ConstMessage {
    const fn new() -> Self {
        ConstMessage {
            buf: [0; 1024],
            len: 0,
        }
    }

    const fn push(mut self, text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() && self.len < self.buf.len() {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(text) => text,
            // Cut inside a character: the message up to its last whole one is not worth the
            // search; this never happens with the ASCII names attributes have.
            Err(_) => "a field is stored as an attribute `sharded` writes itself: rename it",
        }
    }
}

/// Fails compilation when a field is stored (as `attribute`) under a name the runtime writes
/// itself in the entity's table: one of the entity's key attributes (`keys`: name and what it
/// holds), an index key attribute the table declares, the table's tag, or its move marker. The derive calls it
/// in a `const` item spanned at the field's name, with the field (`field`), how its name came
/// about (`how`) and the fix (`fix`) to say.
pub const fn assert_not_written_by_sharded(
    table: &TableSchema,
    keys: &[(&str, &str)],
    field: &str,
    attribute: &str,
    how: &str,
    fix: &str,
) {
    let mut role: Option<&str> = None;
    let mut i = 0;
    while i < keys.len() {
        if str_eq(keys[i].0, attribute) {
            role = Some(keys[i].1);
        }
        i += 1;
    }
    let mut i = 0;
    while i < table.indexes.len() {
        if str_eq(table.indexes[i].partition_key, attribute)
            || str_eq(table.indexes[i].sort_key, attribute)
        {
            role = Some("a key attribute of an index the table declares");
        }
        i += 1;
    }
    if let Some(tag) = table.recognition.tag_attribute() {
        if str_eq(tag, attribute) {
            role = Some("the tag holding the entity's name");
        }
    }
    if str_eq(table.move_attribute, attribute) {
        role = Some("the marker of a layout move's writes");
    }
    if let Some(role) = role {
        let message = ConstMessage::new()
            .push("field `")
            .push(field)
            .push("` is stored as the attribute `")
            .push(attribute)
            .push("`")
            .push(how)
            .push(", which `sharded` writes itself (")
            .push(role)
            .push(", in table `")
            .push(table.declared_by)
            .push("`): ")
            .push(fix);
        panic!("{}", message.as_str());
    }
}

/// Fails compilation when a zero-padded shard suffix cannot hold every shard below `n`
/// (`{shard:02}` with `n = 101`). Spanned at the suffix.
pub const fn assert_suffix_fits(suffix: ShardSuffix, n: u32) {
    if !suffix.fits(n) {
        let message = ConstMessage::new()
            .push("the suffix `")
            .push(suffix.source)
            .push(
                "` pads the shard to fewer digits than the highest shard below n has: widen \
                   the padding (`{shard:03}` holds up to 1000 shards) or lower n",
            );
        panic!("{}", message.as_str());
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
/// first member: the same table, template shape, shard count and suffix, transition and
/// sort-key presence. The derive calls it in a `const` item spanned at the member's type.
pub const fn assert_collection_member(first: &EntitySchema, member: &EntitySchema) {
    assert_distinct_entities(first, member);
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
    if !first.table_schema.same_as(member.table_schema) {
        panic!(
            "this member lives in another table than the collection's first member (its \
             #[sharded(table = ..)] declares other key names, indexes or tag): a collection \
             reads one table's partitions; give every member the same table type"
        );
    }
    if !same_suffix(&first.pk.suffix, &member.pk.suffix) {
        panic!(
            "this member spells its shard suffix differently from the collection's first \
             member (`suffix = ..` on #[pk]): a collection reads one set of partitions; give \
             every member the same suffix"
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

/// Fails compilation when a collection's member decides its layout per logical key (`max_n`
/// on its `#[pk]`): a collection reads one layout for every member, the default, and would
/// miss the items of a widened key. `member` and `collection` are the types as written; the
/// derive spans the call at the member's type.
pub const fn assert_member_not_per_key(schema: &EntitySchema, member: &str, collection: &str) {
    if schema.pk.per_key.is_some() {
        let message = ConstMessage::new()
            .push("the member `")
            .push(member)
            .push("` of `")
            .push(collection)
            .push(
                "` decides its layout per logical key (`max_n` on its #[pk]), and a collection \
                 reads one layout for all its members, so it would miss the items of a widened \
                 key: query `",
            )
            .push(member)
            .push("` on its own (`")
            .push(member)
            .push(
                "::query`), or remove `max_n` from its #[pk] and give it the `n` of the other \
                 members",
            );
        panic!("{}", message.as_str());
    }
}

/// Fails compilation when two members share an entity name; [`assert_collection_member`]
/// asks it about the first member, the derive about every later pair.
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
