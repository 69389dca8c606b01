//! Where an item lives: its current place and, while a layout transition is declared
//! (`previous_n` or `legacy` on `#[pk]`), its previous place; and how each operation treats
//! that previous place. Every point operation asks this module, none computes it itself.
//!
//! The rule of writes: **no write leaves a copy of its item at the previous place**, so a
//! stale copy can never outlive the current one (and come back through a read that falls back
//! to it, or through the migration copying it back).
//!
//! | operation | the previous place |
//! |---|---|
//! | `get`, `TransactGet` | read after the current place; the current copy wins |
//! | `put` | a `ConditionCheck` that it is empty, in the same `TransactWriteItems`; when it holds the item, the put *supersedes* it (see `repo/replace`): written marked `replace`, the old copy marked `moved` in the same transaction, then deleted |
//! | `delete`, a transaction's `delete` | a guarded `Delete` in the same `TransactWriteItems` (a real delete: unmarked) |
//! | `put_new`, `move_item`'s target | a `ConditionCheck` that it is empty, in the same transaction |
//! | `put_if`, versioned `put`, a transaction's `put`, `update`, `delete_if`, a transaction's `check` and `move_item`'s source | *settled* first: an item still there is moved to its current place (copied and marked, then deleted), so the condition sees it; then the write, with the previous place's check (`put_if`, versioned `put`) or guarded `Delete` (a transaction) |
//! | `batch_put` | settled first; deleted after the put was written |
//! | `batch_delete` | deleted first, in a phase of its own |
//! | counters | none: a counter's shards are named by the item's identity, which no layout change moves |
//!
//! Every write that removes an old copy because its item lives at its current place marks it
//! `moved` first (the table's `move_attribute`), so its stream record is told from a delete.
//!
//! The guard of the previous place: no item, one of this entity, or (during a `legacy`
//! transition) an untagged item written before the table adopted `sharded`.

use aws_sdk_dynamodb::types::AttributeValue;

use crate::access::layouts::KeyState;
use crate::error::Error;
use crate::item::Item;
use crate::keys::layout::ShardInput;
use crate::keys::schema::{EntitySchema, KeyLayout, MOVE_MOVED};

/// Where one item of an entity lives: its partition key and sort key now, and its partition
/// key under the previous layout while a transition is declared and that place differs.
#[derive(Debug, Clone)]
pub struct Placement {
    schema: &'static EntitySchema,
    pk: String,
    sk: Option<String>,
    previous: Option<String>,
    /// While a previous layout of unknown placement is declared (`previous_shard =
    /// "unknown"`): every previous shard but the current place, any of which may hold the
    /// item. A point read asks them all; a write first [settles](Self::settle) the item (finds
    /// its old copy there and moves it), so nothing is left behind.
    candidates: Vec<String>,
    /// The layout of the item's logical key, for an entity whose layout is decided per key
    /// (`max_n` on `#[pk]`): read from the layout directory; `pk` and `previous` are the
    /// item's places under it.
    layout: Option<KeyLayout>,
    /// The previous place's copy wins over the current place's (a per-key layout in
    /// `reading`: the previous place is the change's target; see `layouts::KeyState`).
    prefer_previous: bool,
    /// A plain put checks the previous place (not in a per-key layout's `writing`).
    put_checks_previous: bool,
}

impl Placement {
    /// The placement of an item of a per-key layout: its places under its key's `layout`
    /// (the directory's), from what places it under any count.
    pub(crate) fn per_key(
        schema: &'static EntitySchema,
        input: &ShardInput,
        state: KeyState,
        sk: Option<String>,
    ) -> Self {
        let layout = state.layout;
        let pk = input.key_under(&schema.pk, layout.n);
        let previous = layout
            .previous
            .map(|n| input.key_under(&schema.pk, n))
            .filter(|previous| *previous != pk);
        Placement {
            schema,
            pk,
            sk,
            previous,
            candidates: Vec::new(),
            layout: Some(layout),
            prefer_previous: state.prefer_previous(),
            put_checks_previous: state.put_checks_previous(),
        }
    }

    /// Whether the previous place's copy wins (see [`Placement::per_key`]).
    pub(crate) fn prefers_previous(&self) -> bool {
        self.prefer_previous && self.previous.is_some()
    }

    /// Whether a plain put checks the previous place in its transaction.
    pub(crate) fn put_checks_previous(&self) -> bool {
        self.put_checks_previous
    }

    /// The same item with its two places swapped: how a read that prefers the previous
    /// place reads (that place first).
    pub(crate) fn swapped(&self) -> Placement {
        let mut swapped = self.clone();
        if let Some(previous) = swapped.previous.take() {
            swapped.previous = Some(std::mem::replace(&mut swapped.pk, previous));
        }
        swapped.prefer_previous = false;
        swapped
    }

    /// The layout of the item's key, for a per-key layout (see [`Placement::per_key`]).
    pub(crate) fn layout(&self) -> Option<KeyLayout> {
        self.layout
    }

    /// The placement of the item with current partition key `pk` (and `previous`, as the
    /// generated code computes it from the key fields during a transition).
    pub(crate) fn of_key(
        schema: &'static EntitySchema,
        pk: String,
        previous: Option<String>,
        sk: Option<String>,
    ) -> Self {
        let previous = previous.filter(|p| *p != pk);
        let candidates = crate::keys::layout::previous_shards(&schema.pk, &pk)
            .map(|shards| shards.filter(|key| *key != pk).collect())
            .unwrap_or_default();
        Placement {
            schema,
            pk,
            sk,
            previous,
            candidates,
            layout: None,
            prefer_previous: false,
            put_checks_previous: true,
        }
    }

    /// The placement of an item whose key does not depend on the layout (found by the
    /// explicit all-shard path of a randomly sharded entity, by its physical key): no
    /// previous place.
    pub(crate) fn fixed(schema: &'static EntitySchema, pk: String, sk: Option<String>) -> Self {
        Placement {
            schema,
            pk,
            sk,
            previous: None,
            candidates: Vec::new(),
            layout: None,
            prefer_previous: false,
            put_checks_previous: true,
        }
    }

    /// The previous shards that may hold the item (a previous layout of unknown placement),
    /// in shard order.
    pub(crate) fn schema(&self) -> &'static EntitySchema {
        self.schema
    }

    pub(crate) fn candidates(&self) -> &[String] {
        &self.candidates
    }

    /// Whether the item may be at one of several previous places, none known (a previous
    /// layout of unknown placement): a write settles it first.
    pub(crate) fn previous_unknown(&self) -> bool {
        !self.candidates.is_empty()
    }

    /// The current partition key.
    pub fn pk(&self) -> &str {
        &self.pk
    }

    /// The sort key, if the entity has one.
    pub fn sk(&self) -> Option<&str> {
        self.sk.as_deref()
    }

    /// The previous partition key, while a transition is declared and it differs.
    pub(crate) fn previous(&self) -> Option<&str> {
        self.previous.as_deref()
    }

    /// Whether an item stored under partition key `stored` (which parses under `place` of
    /// the layouts) may be this one: at its current place, at its previous place (any of the
    /// previous shards when their placement is unknown), or on another shard of its logical
    /// key (written there by a service that places items its own way: queries read every
    /// shard, so it is the item).
    pub fn may_be_at(&self, stored: &str, place: crate::keys::layout::Place) -> bool {
        let key = &self.schema.pk;
        stored == self.pk
            || self.previous.as_deref() == Some(stored)
            || (place.previous
                && crate::keys::layout::previous_shards(key, &self.pk)
                    .is_some_and(|mut shards| shards.any(|s| s == stored)))
            || (place.current && crate::keys::layout::same_logical_key(key, stored, &self.pk))
    }

    /// Whether the item may also be at a previous place.
    pub(crate) fn has_previous(&self) -> bool {
        self.previous.is_some()
    }

    /// The key attributes of the current place (sizes checked).
    pub(crate) fn current_key(&self) -> Result<Item, Error> {
        key_item(self.schema, self.pk.clone(), self.sk.clone())
    }

    /// The key attributes of the previous place, during a transition.
    pub(crate) fn previous_key(&self) -> Result<Option<Item>, Error> {
        self.previous
            .clone()
            .map(|previous| key_item(self.schema, previous, self.sk.clone()))
            .transpose()
    }

    /// The keys a point read asks, in order: the current place first (whose copy wins), then
    /// the previous one, or every previous shard when the previous placement is unknown.
    pub(crate) fn read_keys(&self) -> Result<Vec<Item>, Error> {
        let mut keys = vec![self.current_key()?];
        keys.extend(self.previous_key()?);
        keys.extend(self.candidate_keys()?);
        Ok(keys)
    }

    /// The key attributes of every previous shard that may hold the item (unknown placement).
    pub(crate) fn candidate_keys(&self) -> Result<Vec<Item>, Error> {
        self.candidates
            .iter()
            .map(|pk| key_item(self.schema, pk.clone(), self.sk.clone()))
            .collect()
    }
}

/// Whether `item` carries the mark `moved` in `attribute` (the table's move attribute): an old
/// copy whose item lived at its current place when it was marked, never the item itself (see
/// `TableSchema::move_attribute`).
pub(crate) fn marked_moved(attribute: &str, item: &Item) -> bool {
    matches!(item.get(attribute), Some(AttributeValue::S(mark)) if mark == MOVE_MOVED)
}

/// The key of shard `pk` of a sharded counter: a counter has no previous place, because its
/// shards (`<identity>#0` .. `#(n-1)`) are named by the item's identity and its own `n`, which
/// no layout transition of the entity changes.
pub(crate) fn counter_shard_key(
    pk_attribute: &str,
    sk_attribute: Option<&str>,
    sort_key: &str,
    pk: String,
) -> Item {
    let mut key = Item::from([(pk_attribute.to_owned(), AttributeValue::S(pk))]);
    if let Some(sk) = sk_attribute {
        key.insert(sk.to_owned(), AttributeValue::S(sort_key.to_owned()));
    }
    key
}

/// The key attributes of one item at partition `pk`: refuses empty keys and keys over
/// DynamoDB's size limits before anything is sent.
pub(crate) fn key_item(
    schema: &EntitySchema,
    pk: String,
    sk: Option<String>,
) -> Result<Item, Error> {
    if pk.is_empty() {
        return Err(Error::EmptyKeyAttribute {
            attribute: schema.pk.attribute.to_owned(),
        });
    }
    schema.pk.check_size(schema.entity, &pk)?;
    let mut key = Item::from([(schema.pk.attribute.to_owned(), AttributeValue::S(pk))]);
    match (schema.sk, sk) {
        (Some(attr), Some(sk)) if !sk.is_empty() => {
            attr.check_size(schema.entity, &sk)?;
            key.insert(attr.attribute.to_owned(), AttributeValue::S(sk));
        }
        (Some(attr), _) => {
            return Err(Error::EmptyKeyAttribute {
                attribute: attr.attribute.to_owned(),
            })
        }
        (None, _) => {}
    }
    Ok(key)
}
