//! What every derive shares (serde_derive's `internals/`): the error context (`ctxt`),
//! attribute key names (`symbol`) and key reading (`attr`), serde's attributes (`serde_attr`)
//! and rename rules (`case`), "did you mean" hints (`suggest`), type shapes (`types`), values
//! with their spans (`spanned`), DynamoDB's naming rule (`dynamodb`), and the two small languages of key attributes: the key
//! `template` (`GAME#{game_id}`) and the `shard` expression (`hash(player_id)`).

pub(crate) mod attr;
pub(crate) mod case;
pub(crate) mod ctxt;
pub(crate) mod dynamodb;
pub(crate) mod serde_attr;
pub(crate) mod shard;
pub(crate) mod spanned;
pub(crate) mod suggest;
pub(crate) mod symbol;
pub(crate) mod template;
pub(crate) mod types;
