//! An item's key attributes as the derive computes them ([`ItemKeys`]), and as error messages
//! show them ([`ItemKeyDisplay`]): plain strings, so the key model stays free of AWS types.

use std::fmt;

/// The physical key attributes of one item, as `#[derive(ShardedEntity)]` computes them.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// let score = Score { game_id: "g1".into(), player_id: "player-1".into(), score: 42 };
/// let keys = score.item_keys()?;
/// assert_eq!(keys.pk, "GAME#g1#0"); // "player-1" hashes to shard 0 of 10
/// assert_eq!(keys.sk.as_deref(), Some("SCORE#00000000000000000042#player-1"));
/// # Ok::<(), sharded::KeyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ItemKeys {
    /// The base table partition key, with its shard.
    pub pk: String,
    /// The base table sort key.
    pub sk: Option<String>,
    /// Partition and sort key of each GSI, in the order of [`EntitySchema::gsis`](crate::schema::EntitySchema::gsis).
    pub gsis: Vec<(String, Option<String>)>,
}

impl ItemKeys {
    /// The key attributes `pk`, `sk` and, per GSI, its partition and sort key.
    pub fn new(pk: String, sk: Option<String>, gsis: Vec<(String, Option<String>)>) -> Self {
        ItemKeys { pk, sk, gsis }
    }
}

/// The key attributes of an item, printed as `pk=..., sk=...` in error messages.
///
/// ```
/// use sharded::keys::ItemKeyDisplay;
/// let k = ItemKeyDisplay { pk: Some("GAME#g1#3".into()), sk: Some("SCORE#1".into()) };
/// assert_eq!(k.to_string(), "(pk=GAME#g1#3, sk=SCORE#1)");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemKeyDisplay {
    /// The partition key value, when the item had one.
    pub pk: Option<String>,
    /// The sort key value, when the item had one.
    pub sk: Option<String>,
}

impl fmt::Display for ItemKeyDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pk = self.pk.as_deref().unwrap_or("?");
        match &self.sk {
            Some(sk) => write!(f, "(pk={pk}, sk={sk})"),
            // An entity without a sort key (or an item that lacked one).
            None => write!(f, "(pk={pk})"),
        }
    }
}
