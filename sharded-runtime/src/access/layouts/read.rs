//! What any process may read of the per-key layouts: [`Layouts`], the directory's entries and
//! one key's layout, read now. The steps that change a key are the operator's
//! (`sharded-ops`' `ChangeLayout`), which reach the handle through `__ops`.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use super::cache::read_stored;
use super::{KeyEntry, Stored};
use crate::access::entity::ShardedEntity;
use crate::access::handle::Handle;
use crate::error::layout::LayoutError;
use crate::error::Error;
use crate::keys::schema::KeyLayout;
use crate::keys::template::{parse_key_with, KeyContext};

/// The per-key layouts of entity `E` (`max_n` on `#[pk]`): what the layout directory lists,
/// read now. From [`Repo::layouts`](crate::Repo::layouts).
///
/// Any process may read them; the steps that widen or narrow one key online (`begin`,
/// `advance`, `migrate`, `finish`, and `change`, which runs them all) are the operator's:
/// `use sharded::layouts::ChangeLayout` (the facade's default feature `ops`).
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1, max_n = 64)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// # async fn demo(repo: Repo<Score>) -> Result<(), Error> {
/// for (key, entry) in repo.layouts().entries().await? {
///     println!("{key}: {} shards ({:?})", entry.to, entry.phase);
/// }
/// let layout = repo.layouts().layout("GAME#g1").await?;
/// println!("GAME#g1 is written at {} shards", layout.n);
/// # Ok(()) }
/// ```
pub struct Layouts<E> {
    handle: Arc<Handle>,
    /// The write budget of a key's migration: set and read by the operator's steps
    /// (`ChangeLayout::with_write_budget`, through `__ops`), kept here so that
    /// `repo.layouts().with_write_budget(..)` stays one value of one type.
    write_units_per_second: Option<f64>,
    _entity: PhantomData<fn() -> E>,
}

impl<E: ShardedEntity> Layouts<E> {
    pub(crate) fn new(handle: Arc<Handle>) -> Self {
        Layouts {
            handle,
            write_units_per_second: None,
            _entity: PhantomData,
        }
    }

    /// Every key the directory lists, read now: the keys whose count is not the declared
    /// `n`, and those changing.
    pub async fn entries(&self) -> Result<BTreeMap<String, KeyEntry>, Error> {
        Ok(stored(self).await?.entries)
    }

    /// The layout of logical key `key` (`GAME#g1`: the template without a shard), read now.
    pub async fn layout(&self, key: &str) -> Result<KeyLayout, Error> {
        check_key::<E>(key)?;
        Ok(self
            .entries()
            .await?
            .get(key)
            .map_or(KeyLayout::steady(declared_n::<E>()), KeyEntry::layout))
    }
}

impl<E> Layouts<E> {
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    pub(crate) fn write_budget(&self) -> Option<f64> {
        self.write_units_per_second
    }

    pub(crate) fn with_write_budget(mut self, units: Option<f64>) -> Self {
        self.write_units_per_second = units;
        self
    }
}

/// The shard count `E` declares (`n`): a key the directory does not list has it.
pub fn declared_n<E: ShardedEntity>() -> u32 {
    E::SCHEMA.pk.sharding.shard_count().unwrap_or(1)
}

/// `E`'s `max_n`, or the refusal of an entity without per-key layouts.
pub fn max_n<E: ShardedEntity>() -> Result<u32, Error> {
    E::SCHEMA.pk.per_key.map(|p| p.max_n).ok_or_else(|| {
        LayoutError::NotPerKey {
            entity: E::SCHEMA.entity,
        }
        .into()
    })
}

/// Refuses a text that is no logical key of `E` (and an entity without per-key layouts).
pub fn check_key<E: ShardedEntity>(key: &str) -> Result<(), Error> {
    max_n::<E>()?;
    let pk = &E::SCHEMA.pk;
    let context = KeyContext {
        entity: E::SCHEMA.entity,
        attribute: pk.attribute,
    };
    parse_key_with(context, pk.template, key, None)
        .map(drop)
        .map_err(|reason| {
            LayoutError::NotALogicalKey {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                template: pk.template.source,
                reason: reason.to_string(),
            }
            .into()
        })
}

/// Reads `E`'s stored directory (entries and revision) consistently.
pub async fn stored<E: ShardedEntity>(layouts: &Layouts<E>) -> Result<Stored, Error> {
    max_n::<E>()?;
    read_stored(layouts.handle.client(), layouts.handle.table(), E::SCHEMA).await
}
