//! [`ItemKey`]: the primary key of one item of an entity, as the generated `Entity::key(..)`
//! builds it, and where the item is and was. Its own file so the handle, the transactions and
//! the updates all take it from here, not from each other.

use crate::access::entity::ShardedEntity;
use crate::access::placement::Placement;

/// The primary key of one item of entity `E`, built by the generated `Entity::key(..)` (on
/// the shard the key's hash fields give).
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use sharded::ShardedEntity;
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// let key = Wallet::key("alice")?;
/// assert_eq!(key.partition_key(), "USER#alice");
/// # Ok::<(), sharded::KeyError>(())
/// ```
pub struct ItemKey<E> {
    pub(crate) pk: String,
    pub(crate) sk: Option<String>,
    /// The partition key under the previous layout, while a transition is declared.
    previous: Option<String>,
    /// What places the item under its logical key's own layout, for an entity whose layout
    /// is decided per key (`pk` is then its place under the default layout).
    shard_input: Option<crate::keys::layout::ShardInput>,
    _entity: std::marker::PhantomData<fn() -> E>,
}

impl<E> std::fmt::Debug for ItemKey<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemKey")
            .field("pk", &self.pk)
            .field("sk", &self.sk)
            .field("previous", &self.previous)
            .finish()
    }
}

impl<E> Clone for ItemKey<E> {
    fn clone(&self) -> Self {
        ItemKey {
            pk: self.pk.clone(),
            sk: self.sk.clone(),
            previous: self.previous.clone(),
            shard_input: self.shard_input.clone(),
            _entity: std::marker::PhantomData,
        }
    }
}

impl<E: ShardedEntity> ItemKey<E> {
    /// The key of `E`'s item with these physical keys. Called by generated code.
    #[doc(hidden)]
    pub fn new(pk: String, sk: Option<String>) -> Self {
        ItemKey::in_layout(pk, None, sk)
    }

    /// The key of `E`'s item at `pk` and, while a layout transition is declared, at its
    /// previous partition key `previous`. Called by generated code.
    #[doc(hidden)]
    pub fn in_layout(pk: String, previous: Option<String>, sk: Option<String>) -> Self {
        let placement = Placement::of_key(E::SCHEMA, pk, previous, sk);
        ItemKey {
            pk: placement.pk().to_owned(),
            sk: placement.sk().map(str::to_owned),
            previous: placement.previous().map(str::to_owned),
            shard_input: None,
            _entity: std::marker::PhantomData,
        }
    }

    /// The key of `E`'s item whose layout is decided per logical key (`max_n` on `#[pk]`):
    /// what places it under any shard count, and its sort key. Called by generated code.
    #[doc(hidden)]
    pub fn per_key(input: crate::keys::layout::ShardInput, sk: Option<String>) -> Self {
        let default = E::SCHEMA.pk.sharding.shard_count().unwrap_or(1);
        ItemKey {
            pk: input.key_under(&E::SCHEMA.pk, default),
            sk,
            previous: None,
            shard_input: Some(input),
            _entity: std::marker::PhantomData,
        }
    }

    /// The physical partition key (with its shard).
    pub fn partition_key(&self) -> &str {
        &self.pk
    }

    /// The sort key, if the entity has one.
    pub fn sort_key(&self) -> Option<&str> {
        self.sk.as_deref()
    }

    /// The partition key of the item's previous place, while a layout transition
    /// (`previous_n`, `legacy`) is declared and that place differs: where an item not yet
    /// migrated still is. [`TransactGet`](crate::transaction::TransactGet) reads it too.
    pub fn previous_partition_key(&self) -> Option<&str> {
        self.previous.as_deref()
    }

    /// What places the item under its key's layout, for a per-key layout.
    pub(crate) fn shard_input(&self) -> Option<&crate::keys::layout::ShardInput> {
        self.shard_input.as_ref()
    }

    pub(crate) fn placement(&self) -> Placement {
        Placement::of_key(
            E::SCHEMA,
            self.pk.clone(),
            self.previous.clone(),
            self.sk.clone(),
        )
    }
}
