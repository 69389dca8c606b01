//! What a query reads and what it returns: one entity, a collection of entities that share a
//! partition layout (`#[derive(ShardedCollection)]`), or a projection of an entity
//! (`#[derive(ShardedProjection)]`).
//!
//! The engine works on raw items; these traits say which entities' items a query keeps and how
//! an item becomes the caller's type, so one engine, cursor and merge serve all three.

use serde::de::DeserializeOwned;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::access::entity::{decode_as, recognize, ShardedEntity};
use crate::access::recognize::{Depth, NotOurs};
use crate::error::foreign::ForeignReason;
use crate::error::Error;
use crate::item::Item;
use crate::keys::layout::ShardInput;
use crate::keys::schema::EntitySchema;

/// What a [`Query`](crate::Query) reads: one entity, or a collection of entities sharing a
/// partition layout.
///
/// Implemented for every [`ShardedEntity`] and by `#[derive(ShardedCollection)]`; there is no
/// need to implement it by hand. Its items are the derive's interface and may change.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::{query::QuerySource, ShardedEntity};
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// assert_eq!(<Score as QuerySource>::ENTITIES, ["Score"]);
/// ```
pub trait QuerySource: Sized {
    /// The key layout queried: the entity's schema, or the first member's for a collection
    /// (every member shares its partition key and sort-key attribute).
    #[doc(hidden)]
    const LAYOUT: &'static EntitySchema;
    /// The name in messages, spans and cursor fingerprints.
    #[doc(hidden)]
    const NAME: &'static str;
    /// The entity names whose items the query keeps (the values of the entity attribute).
    const ENTITIES: &'static [&'static str];
    /// Reads one item, refusing an item of an entity not in [`ENTITIES`](Self::ENTITIES).
    #[doc(hidden)]
    fn from_source_item(item: Item) -> Result<Self, Error>;
    /// Whether `item` is one of the source's (see
    /// [`recognize`](crate::access::recognize)): the member it belongs to (0 for an entity).
    /// An untagged item recognised by its keys is completed in place.
    #[doc(hidden)]
    fn recognize(item: &mut Item, depth: Depth) -> Result<usize, NotOurs>;
    /// Where `item` belongs: its partition key under its entity's current layout and, while a
    /// transition is declared, under the previous one (when it differs); `None` when it is not
    /// an item of this source. How a query tells an old copy from the current one, and a
    /// current copy from the old copy it already returned, during a layout transition.
    #[doc(hidden)]
    fn placement(item: &Item) -> Option<(String, Option<String>)> {
        let _ = item;
        None
    }
    /// What places `item` under any shard count, for an entity whose layout is decided per
    /// key (see `ShardedEntity::__shard_input`); `None` otherwise.
    #[doc(hidden)]
    fn shard_input(item: &Item) -> Option<ShardInput> {
        let _ = item;
        None
    }
}

impl<E: ShardedEntity> QuerySource for E {
    const LAYOUT: &'static EntitySchema = E::SCHEMA;
    const NAME: &'static str = E::SCHEMA.entity;
    const ENTITIES: &'static [&'static str] = &[E::SCHEMA.entity];

    fn from_source_item(item: Item) -> Result<Self, Error> {
        E::from_item(item)
    }

    fn recognize(item: &mut Item, depth: Depth) -> Result<usize, NotOurs> {
        recognize::<E>(item, depth).map(|()| 0)
    }

    fn placement(item: &Item) -> Option<(String, Option<String>)> {
        E::__placement(item)
    }

    fn shard_input(item: &Item) -> Option<ShardInput> {
        E::from_item(item.clone()).ok()?.__shard_input().ok()?
    }
}

/// An enum of entities read together from one partition: a game, its scores and its comments
/// under one partition key. Implemented by `#[derive(ShardedCollection)]`.
///
/// A query of any member becomes a query of the collection with
/// [`Query::collection`](crate::Query::collection): every shard is queried once, and the
/// answer is the enum, merged in sort-key order across shards and entity types, paged with the
/// same cursors.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::{ShardedCollection, ShardedEntity};
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(comment_id)", n = 4)]
/// #[sk(template = "COMMENT#{comment_id}")]
/// struct Comment { game_id: String, comment_id: String, text: String }
///
/// #[derive(ShardedCollection)]
/// enum GamePage { Score(Score), Comment(Comment) }
///
/// assert_eq!(<GamePage as ShardedCollection>::MEMBERS.len(), 2);
/// ```
pub trait ShardedCollection: QuerySource {
    /// The schema of every member, in variant order.
    const MEMBERS: &'static [&'static EntitySchema];
}

/// `Self` is an entity held by the collection `C`: a query of `Self` can become a query of
/// `C`. Implemented by `#[derive(ShardedCollection)]` for each member.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a member of the collection `{C}`",
    label = "`{C}` has no variant holding `{Self}`",
    note = "add a variant `{Self}({Self})` to `{C}`, or start the query from an entity that `{C}` holds"
)]
pub trait CollectionMember<C: ShardedCollection>: ShardedEntity {}

/// A partial view of an entity: a struct of some of its fields, read with a
/// `ProjectionExpression` so only those attributes cross the network. Implemented by
/// `#[derive(ShardedProjection)]`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::{ShardedEntity, ShardedProjection};
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64, replay: Vec<u8> }
///
/// #[derive(ShardedProjection, Deserialize)]
/// #[projection(of = Score)]
/// struct ScoreLine { player_id: String, score: u64 }
///
/// assert_eq!(<ScoreLine as ShardedProjection>::ATTRIBUTES, ["player_id", "score"]);
/// ```
pub trait ShardedProjection: DeserializeOwned {
    /// The entity projected.
    type Entity: ShardedEntity;
    /// The attributes read (the struct's fields, as stored).
    const ATTRIBUTES: &'static [&'static str];

    /// Reads a projected item, refusing an item that is not the entity's (checked by its tag,
    /// or by its keys where it has none).
    fn from_item(mut item: Item) -> Result<Self, Error> {
        let schema = <Self::Entity as ShardedEntity>::SCHEMA;
        recognize::<Self::Entity>(&mut item, Depth::Keys).map_err(|not_ours| {
            crate::access::recognize::point_read_error(schema, &item, not_ours)
        })?;
        decode_as(schema, item)
    }
}

/// [`recognize`] for a projection `P` of the entity: an item no tag vouches for (untagged,
/// recognised by its keys) must also read as `P`. Recognised by its keys alone, another
/// service's record keyed like the entity but without the projected attributes would fail
/// the whole read when decoded; it is not the entity's, so it is skipped and counted as the
/// entity's own reads skip it (they decode the whole item). A tagged item that does not
/// read as `P` is the entity's, and its error is the caller's to see.
pub(crate) fn recognize_projected<P: ShardedProjection>(
    item: &mut Item,
    depth: Depth,
) -> Result<(), NotOurs> {
    let schema = <P::Entity as ShardedEntity>::SCHEMA;
    let vouched = schema.tag_attribute().is_some_and(
        |tag| matches!(item.get(tag), Some(AttributeValue::S(name)) if name == schema.entity),
    );
    recognize::<P::Entity>(item, depth)?;
    if !vouched {
        decode_as::<P>(schema, item.clone()).map_err(|e| {
            NotOurs::Foreign(ForeignReason::Unreadable {
                reason: e.to_string(),
            })
        })?;
    }
    Ok(())
}
