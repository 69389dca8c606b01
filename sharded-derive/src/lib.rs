//! `#[derive(ShardedEntity)]`: compile-time checked sharded keys for DynamoDB.
//!
//! Use it through the `sharded` crate (`use sharded::ShardedEntity;`), which re-exports this
//! derive together with the runtime the generated code calls.
//!
//! The macro is a small compiler, laid out as serde_derive is: `internals/` holds what every
//! derive shares (the error context `ctxt`, attribute names in `symbol` and their reading in
//! `attr`, serde's attributes in `serde_attr` and its rename rules in `case`, type shapes in
//! `types`, spans in `spanned`, "did you mean" hints in `suggest`, and the two small
//! languages of key attributes: `template` and the `shard` expression). `entity/` is
//! `#[derive(ShardedEntity)]`: `parse` reads the attributes into a `model`, `validate`
//! checks the model and reports every problem under the token that caused it (`names` says
//! how generated names are built from the user's, for both), `resolve` binds every field a
//! key names to the struct's field and settles the counters and maintained fields, and
//! `expand/` generates code from the resolved model alone, one module per thing it
//! generates. `table`, `collection` and `projection` are the other derives, beside it.
//!
//! # What it generates
//!
//! For `#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]` and
//! `#[sk(template = "SCORE#{score}#{player_id}")]` on `struct Score`:
//! - `Score::pk(game_id, player_id)`, `pk_logical(game_id)`, `pk_on_shard(game_id, shard)`,
//!   `pk_all_shards(game_id)`, `shard_for(player_id)`, `parse_pk(key)`;
//! - `Score::sk(score, player_id)`, `sk_prefix()`, `sk_prefix_score(score)`, `parse_sk(key)`;
//! - typed sort-key conditions for `Query::sk`: `Score::sk_sort()`, a
//!   `sharded::query::TemplateSort` typed by the template's fields, holding fields equal in
//!   order and then one range on the next: `sk_sort().between(low, high)` (closed),
//!   `sk_sort().ge(score)`, `sk_sort().eq(score).le(player_id)`, `.lt`, `.gt`. `lt` on a field
//!   that ends the template below an equal field fails to compile, saying why (DynamoDB's
//!   `BETWEEN` is closed and that key is the bound itself); a sort key without fields gets
//!   none;
//! - the same per GSI, prefixed `gsiN_` (`gsi1_pk`, `gsi1_shard_for`, `parse_gsi1_sk`, ..);
//! - `Score::get(&repo, game_id, player_id, score)` and `delete` (with `shard = "random"`:
//!   `get_from_all_shards` and `delete_on_shard`), `Score::query(&repo, game_id)` and
//!   `query_gsiN`; for a time-bucketed partition key (`{at:day}`) also `query_range` (and
//!   `query_gsiN_range`), a `sharded::query::RangeQuery` over every bucket of `[from, to)`;
//! - the `ShardedEntity` impl that `Repo::put` and friends use.
//!
//! ## How key fields are passed
//!
//! A `String` field is taken as `&str`; integers and `bool` by value; any other type by
//! reference (`&NaiveDate`). The derive sees how a type is spelled, not what it is:
//! `std::string::String`, `::core::primitive::u64`, `(u8)` and a `$ty:ty` of a `macro_rules!`
//! are recognised, but a type alias is not. A field of type `type PlayerId = String;` is
//! taken as `&PlayerId` (pass `&player_id`, a `&String`); write `String` in the struct to get
//! `&str`.
//!
//! ## Generated names
//!
//! A name built from a field (`sk_prefix_<field>`, the same for each GSI sort key) or from a
//! query name (`<query>_range`) joins its parts with one `_`, each part without `r#` and
//! without leading or trailing underscores: `player_id` gives `sk_prefix_player_id`, `u8_`
//! gives `sk_prefix_u8`, `_tenant` gives `sk_prefix_tenant`, `r#type` gives
//! `sk_prefix_type`, `query = "by_day_"` gives `by_day_range`. So a snake_case name gives a
//! snake_case function and no `non_snake_case` warning; a name written otherwise (`userID`)
//! is kept as written, and the generated code allows `non_snake_case` for it. Two names that
//! join alike in one entity (`{a_}` and `{a}` before literals in one sort key: both
//! `sk_prefix_a`) and such a sort-key field of underscores only (`__`) are refused, saying which. In a template a keyword field
//! is written as in the struct, `{r#type}`. A counter's function is its name with runs of `_`
//! as one and edge underscores dropped, then `_counter` (`name = "votes_"` gives
//! `votes_counter`; the counter's items keep the name as written), and two counters whose
//! functions join alike are refused.
//!
//! ## When the input is refused
//!
//! Each problem is reported once, under the token that caused it, and nothing else: the
//! generated functions are still emitted with the signatures the input meant (a misspelled
//! field is read as the field it resembles, a misspelled key as the key it resembles), so the
//! code calling `Score::query` or `Score::get` reports no follow-on errors. A template field
//! that resembles no field becomes a parameter that accepts any value.
//!
//! # Attributes
//!
//! ## `#[pk(...)]`: the partition key (required)
//!
//! ```ignore
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
//! ```
//! - `template`: literal text and `{field}`s. A field must end the template or be followed by
//!   `#` (the separator no encoded value contains). `{at:day}` (or `hour`, `week`, `month`)
//!   writes the label of the time bucket `at` falls in (`2026-11-22`); `at` must be a time
//!   (`sharded::bucket::BucketTime`), the sort key must start with `{at}`, and the key gets a range
//!   query, `query_range(repo, .., from, to)` (`<query>_range` when renamed).
//! - `shard = "hash(f1, f2, ...)"`: the shard is the stable hash of those fields mod `n`, so a
//!   point lookup knows its shard. At least one hashed field must not be in the template.
//! - `shard = "random"`: a random shard per write (counters, append-only logs).
//! - `n`: the shard count, 1 to 1,000. The physical key is `<template>#<shard>`.
//! - `max_n = 64`: the layout is decided per logical key (with `shard = "hash(..)"` or
//!   `"random"`): cold keys keep `n` shards (`n = 1` is allowed, spelled `GAME#g1#0`), one key
//!   that runs hot is widened online, alone, up to `max_n` (above `n`, at most 1,000), and the
//!   table's layout directory lists the widened keys. `pk(..)` gives the place under the
//!   default `n`. Not with `previous_n`/`legacy`, on an index, or in a collection.
//! - `single_partition = "why"`: the explicit opt-in for a constant, unsharded key (otherwise
//!   refused as a hot partition).
//! - `query = "query_game"`: the name of the generated query function (default `query`).
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
//! - `query = "query_by_day"`: the name of the index's query function (default `query_gsiN`).
//! - An unsharded index key that concentrates the sharded base key's writes is refused (the
//!   GSI hotspot); `single_partition = "why"` opts in.
//!
//! ```ignore
//! #[gsi3(pk = [game_id, region], sk = [score, player_id], shard = 8)]
//! ```
//! - Field lists instead of templates: an index keyed by the fields' own attributes
//!   (DynamoDB's multi-attribute keys), the shard in its own number attribute
//!   (`shard_attribute = ".."`, default `gsiN_shard`), written by every put. Generates
//!   `query_gsiN(repo, ..partition fields)` and `gsiN_sort()` (a typestate sort condition:
//!   `eq` on the leading sort attributes, then one range). Refused: more than three partition
//!   or four sort fields (the runtime's `MAX_KEY_ATTRIBUTES`, the shard counted), an empty
//!   list, unknown or repeated fields, fields not stored as their own attribute, types that
//!   are not `KeyAttribute`s, `shard` missing.
//!
//! ## `#[sharded(...)]`: the container
//!
//! ```ignore
//! #[sharded(table = "leaderboard", entity = "Score")]
//! #[sharded(crate = "my_facade::sharded")]
//! ```
//! - `table`: the default table name; `entity`: the name stored in the `_entity` attribute
//!   (default: the struct's name).
//! - `crate = "path"`: the path of the `sharded` crate as the deriving code reaches it
//!   (default `::sharded`), for crates that re-export `sharded` (`pub use sharded;` in
//!   `my_facade`) and are used without depending on `sharded` by name. The path is resolved
//!   where the struct is declared: `"my_facade::sharded"` from a module where `my_facade` is in
//!   scope, `"crate::my_facade::sharded"` or `"::my_facade::sharded"` from anywhere.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

mod collection;
mod entity;
mod internals;
mod projection;
mod table;

/// Derives `sharded::ShardedEntity` and typed key builders. See the crate docs for the
/// attributes.
#[proc_macro_derive(
    ShardedEntity,
    attributes(
        sharded, pk, sk, counter, gsi1, gsi2, gsi3, gsi4, gsi5, gsi6, gsi7, gsi8, gsi9, gsi10,
        gsi11, gsi12, gsi13, gsi14, gsi15, gsi16, gsi17, gsi18, gsi19, gsi20
    )
)]
pub fn derive_sharded_entity(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    entity::derive(&input).into()
}

/// Derives `sharded::ShardedTable` on a unit struct that declares a table once: its key
/// attribute names, index names, and how its items say which entity they are. Entities name
/// it with `#[sharded(table = TheStruct)]`. See the trait's docs.
#[proc_macro_derive(
    ShardedTable,
    attributes(
        table, sharded, gsi1, gsi2, gsi3, gsi4, gsi5, gsi6, gsi7, gsi8, gsi9, gsi10, gsi11, gsi12,
        gsi13, gsi14, gsi15, gsi16, gsi17, gsi18, gsi19, gsi20
    )
)]
pub fn derive_sharded_table(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    table::derive(&input).into()
}

/// Derives `sharded::ShardedCollection` on an enum of entities that share a partition layout:
/// `enum GamePage { Game(Game), Score(Score) }`. See the trait's docs.
#[proc_macro_derive(ShardedCollection, attributes(sharded))]
pub fn derive_sharded_collection(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    collection::derive(&input).into()
}

/// Derives `sharded::ShardedProjection` on a struct of some of an entity's fields, named by
/// `#[projection(of = Entity)]`. See the trait's docs.
#[proc_macro_derive(ShardedProjection, attributes(projection, sharded))]
pub fn derive_sharded_projection(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    projection::derive(&input).into()
}
