//! Compile-time checked write sharding and scatter-gather queries for DynamoDB single-table
//! designs.
//!
//! One partition key value is capped at about 1,000 write units/s and 3,000 read units/s.
//! `#[derive(ShardedEntity)]` spreads a hot logical key over `n` physical keys and generates
//! typed key builders, parsers and queries that read every shard concurrently and merge the
//! results in sort-key order.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use sharded::ShardedEntity;
//!
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
//! #[sk(template = "SCORE#{score}#{player_id}")]
//! #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
//! struct Score { game_id: String, player_id: String, score: u64 }
//!
//! # fn main() -> Result<(), sharded::KeyError> {
//! let shard = Score::shard_for("player-1")?;               // stable: FNV-1a, see `hash`
//! assert_eq!(Score::pk("g1", "player-1")?, format!("GAME#g1#{shard}"));
//! assert_eq!(Score::sk(42, "player-1")?, "SCORE#00000000000000000042#player-1");
//! assert_eq!(Score::parse_pk("GAME#g1#7")?, ("g1".to_string(), 7));
//! assert_eq!(Score::pk_all_shards("g1")?.count(), 10);     // what a query reads
//! assert!(Score::pk("", "player-1").is_err());             // empty key values are refused
//! # Ok(()) }
//! ```
//!
//! With a [`Repo`] (built from any `aws_sdk_dynamodb::Client`), the same entity gets
//! `Score::get(&repo, ..)` (one `GetItem` on the right shard), `Score::query(&repo, "g1")` and
//! `Score::query_gsi1(&repo, "p1")` (scatter-gather [`Query`] builders), and `repo.put`,
//! `repo.batch_put`, ... . The README is the guide: attributes, key encoding, the hash
//! specification, the engine, and the local tools that start DynamoDB Local and make its
//! per-key limits real (the `sharded-testkit` crate, a dev-dependency: nothing of it ships
//! with your service).
//!
//! The derive's attributes are documented on [`ShardedEntity`](derive@ShardedEntity) and in
//! the `sharded-derive` crate.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use sharded_derive::ShardedEntity;
pub use sharded_runtime::*;
