//! `#[derive(ShardedEntity)]`: compile-time checked sharded keys for DynamoDB.
//!
//! Use it through the `sharded` crate (`use sharded::ShardedEntity;`), which re-exports this
//! derive together with the runtime the generated code calls.
//!
//! The macro is a small compiler: `parse` reads the attributes into a `model`, `validate`
//! checks the model and reports every problem under the token that caused it, and `expand`
//! generates code from the model alone.
//!
//! # Attributes
//!
//! ## `#[pk(...)]`: the partition key (required)
//!
//! ```ignore
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
//! ```
//! - `template`: literal text and `{field}`s. A field must end the template or be followed by
//!   `#` (the separator no encoded value contains).
//! - `shard = "hash(f1, f2, ...)"`: the shard is the stable hash of those fields mod `n`, so a
//!   point lookup knows its shard. At least one hashed field must not be in the template.
//! - `shard = "random"`: a random shard per write (counters, append-only logs).
//! - `n`: the shard count, 1 to 1,000. The physical key is `<template>#<shard>`.
//! - `single_partition = "why"`: the explicit opt-in for a constant, unsharded key (otherwise
//!   refused as a hot partition).
//! - `query = "query_game"`: the name of the generated query function (later versions).
//!
//! ## `#[sk(...)]`: the sort key
//!
//! ```ignore
//! #[sk(template = "SCORE#{score}#{player_id}")]
//! ```
//! Integers are fixed-width and order-preserving, so `score` sorts numerically.
//!
//! ## `#[gsi1(...)]` .. `#[gsi20(...)]`: global secondary indexes
//!
//! ```ignore
//! #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
//! #[gsi2(pk = "DAY#{day}", shard = "hash(player_id)", n = 8, index = "by-day")]
//! ```
//! - `pk`, `sk`: templates of the index keys (attributes `gsiNpk`, `gsiNsk`).
//! - `shard = 4`: four shards, the shard being the stable hash of the item's logical primary
//!   key (so re-putting an item keeps its GSI shard).
//! - `shard = "hash(field)", n = 4`: shard by fields, as for `#[pk]`.
//! - `index = "name"`: the index name (default `gsiN`).
//! - An unsharded index key that concentrates the sharded base key's writes is refused (the
//!   GSI hotspot); `single_partition = "why"` opts in.
//!
//! ## `#[sharded(...)]`: the container
//!
//! ```ignore
//! #[sharded(table = "leaderboard", entity = "Score")]
//! ```
//! - `table`: the default table name; `entity`: the name stored in the `_entity` attribute
//!   (default: the struct's name).
#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

mod ctxt;
mod expand;
mod model;
mod parse;
mod resolve;
mod suggest;
mod symbol;
mod validate;

/// Derives `sharded::ShardedEntity` and typed key builders. See the crate docs for the
/// attributes.
#[proc_macro_derive(
    ShardedEntity,
    attributes(
        sharded, pk, sk, gsi1, gsi2, gsi3, gsi4, gsi5, gsi6, gsi7, gsi8, gsi9, gsi10, gsi11, gsi12,
        gsi13, gsi14, gsi15, gsi16, gsi17, gsi18, gsi19, gsi20
    )
)]
pub fn derive_sharded_entity(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive(&input).into()
}

fn derive(input: &DeriveInput) -> proc_macro2::TokenStream {
    let cx = ctxt::Ctxt::new();
    let entity = parse::entity(&cx, input);
    if let Some(entity) = &entity {
        validate::entity(&cx, entity);
    }
    match (cx.check(), entity) {
        (Ok(()), Some(entity)) => expand::expand(&resolve::resolve(&entity)),
        (Err(errors), Some(entity)) => {
            expand::fallback(&resolve::resolve(&entity), errors.to_compile_error())
        }
        (Err(errors), None) => errors.to_compile_error(),
        // parse() returns None only after recording an error.
        (Ok(()), None) => proc_macro2::TokenStream::new(),
    }
}

#[cfg(test)]
mod tests;
