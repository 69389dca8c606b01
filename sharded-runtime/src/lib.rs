//! Runtime of [`sharded`](https://docs.rs/sharded): key encoding, the stable shard hash, item
//! conversion and table definitions, called by the code `#[derive(ShardedEntity)]` generates.
//!
//! Use it through the `sharded` facade crate; this crate is split out so generated code stays
//! thin and the logic is written (and tested) once. The DynamoDB Local harness, fault
//! injection and the per-key limit emulator are not here: they live in `sharded-testkit`, so
//! the code users deploy holds no process management and no `unsafe`.
//!
//! | module | what it holds |
//! |---|---|
//! | [`encoding`] | [`KeyPart`]: how values are written into keys so they sort correctly |
//! | [`keys`] | templates, building and parsing physical keys, [`keys::ShardKeys`] |
//! | [`hash`] | the shard hash specification and its test vectors |
//! | [`schema`] | the static key description of an entity, table definitions |
//! | [`entity`] | the [`ShardedEntity`] trait and item conversion |
//! | [`repo`] | [`Repo`]: put, get, delete, batches, queries of one entity |
//! | [`query`] | [`Query`]: the typed scatter-gather query builder |
//! | [`scatter`] | the engine: bounded concurrent fan-out, lazy per-shard paging |
//! | [`merge`] | the k-way heap merge in DynamoDB's sort order |
//! | [`cursor`] | the versioned, checked cross-shard cursor |
//! | [`batch`] | batch writes and reads with backoff that lose nothing |
//! | [`counter`] | [`ShardedCounter`] |
//! | [`size`] | DynamoDB item size and capacity units, checked before sending |
//! | [`stats`] | [`HotKeyStats`]: the hot-key report, in capacity units per key and index |
//! | [`planner`] | [`plan`]: the shard count for a load, with the arithmetic shown |
//! | [`clock`] | time that tests can control, for rates and the emulator |
//! | [`error`] | [`Error`] and [`KeyError`] |
//!
//! ```
//! use sharded_runtime::hash::shard_of_bytes;
//! // The shard of player "player-1" among 10 shards, as any language computes it.
//! assert_eq!(shard_of_bytes(b"player-1", 10), 0);
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod batch;
pub mod clock;
pub mod counter;
pub mod cursor;
pub mod encoding;
pub mod entity;
pub mod error;
pub mod hash;
pub mod keys;
pub mod merge;
pub mod planner;
pub mod query;
pub mod repo;
pub mod scatter;
pub mod schema;
pub mod size;
pub mod stats;

pub use batch::RetryPolicy;
pub use clock::{Clock, ManualClock, SystemClock};
pub use counter::ShardedCounter;
pub use cursor::Cursor;
pub use encoding::{KeyPart, KeyPartDecode, KeyPartError};
pub use entity::{Item, ItemKeys, ShardedEntity};
pub use error::{Error, KeyError};
pub use keys::ShardKeys;
pub use planner::{plan, PlanInput, ShardPlan};
pub use query::{Page, Partial, Query};
pub use repo::Repo;
pub use schema::{EntitySchema, TableDefinition};
pub use stats::{HotKeyReport, HotKeyStats};

/// Items used by generated code. Not a public API: no stability promise.
#[doc(hidden)]
pub mod __private {
    pub use crate::entity::{Item, ItemKeys, ShardedEntity};
    pub use crate::error::Error;
    pub use crate::error::KeyError;
    pub use crate::keys::{
        build_hashed_key, build_key, build_key_on_shard, build_key_prefix, build_random_key,
        parse_key, shard_of, shard_of_text, KeyContext, KeyTemplate, Segment, ShardKeys,
    };
    pub use crate::query::Query;
    pub use crate::repo::Repo;
    pub use crate::schema::{EntitySchema, GsiSchema, PartitionKeySchema, Sharding, SortKeySchema};
    pub use crate::{KeyPart, KeyPartDecode};
    pub use core::result::Result;
    pub use std::string::String;
    pub use std::vec::Vec;

    /// Autoref specialisation: `(&Probe(&v)).part()` is `&v as &dyn KeyPart` when the value's
    /// type has a `KeyPart`, and otherwise resolves to [`FallbackProbe`], so a key field type
    /// without an encoding is reported once, by [`assert_key_part`] at the user's type, and
    /// not again at every generated builder.
    pub struct Probe<'a, T: ?Sized>(pub &'a T);

    /// The `KeyPart` path of [`Probe`].
    pub trait KeyPartProbe {
        /// The value as a key part.
        fn part(&self) -> &dyn KeyPart;
    }

    impl<T: KeyPart + ?Sized> KeyPartProbe for Probe<'_, T> {
        fn part(&self) -> &dyn KeyPart {
            // `&&T` coerces because `&T: KeyPart` for every `T: KeyPart + ?Sized`.
            &self.0
        }
    }

    /// The fallback of [`Probe`], reached only when compilation already failed.
    pub trait FallbackProbe {
        /// A key part that refuses to encode.
        fn part(&self) -> &dyn KeyPart;
    }

    impl<T: ?Sized> FallbackProbe for &Probe<'_, T> {
        fn part(&self) -> &dyn KeyPart {
            &Unencodable
        }
    }

    struct Unencodable;

    impl KeyPart for Unencodable {
        fn write_key(&self, _: &mut String) -> Result<(), crate::KeyPartError> {
            Err(crate::KeyPartError::invalid(
                "this type has no key encoding",
            ))
        }
    }

    /// The same trick for decoding: `(&DecodeProbe::<T>::new()).decode_at(&parsed, i)`.
    pub struct DecodeProbe<T>(core::marker::PhantomData<fn() -> T>);

    impl<T> DecodeProbe<T> {
        /// A probe for `T`.
        pub fn new() -> Self {
            DecodeProbe(core::marker::PhantomData)
        }
    }

    impl<T> Default for DecodeProbe<T> {
        fn default() -> Self {
            Self::new()
        }
    }

    /// The `KeyPartDecode` path of [`DecodeProbe`].
    pub trait DecodeVia<T> {
        /// Decodes field `index` of `parsed`.
        fn decode_at(
            &self,
            parsed: &crate::keys::ParsedKey<'_>,
            index: usize,
        ) -> Result<T, KeyError>;
    }

    impl<T: KeyPartDecode> DecodeVia<T> for DecodeProbe<T> {
        fn decode_at(
            &self,
            parsed: &crate::keys::ParsedKey<'_>,
            index: usize,
        ) -> Result<T, KeyError> {
            parsed.decode::<T>(index)
        }
    }

    /// The fallback of [`DecodeProbe`], reached only when compilation already failed.
    pub trait DecodeFallback<T> {
        /// Always an error.
        fn decode_at(
            &self,
            parsed: &crate::keys::ParsedKey<'_>,
            index: usize,
        ) -> Result<T, KeyError>;
    }

    impl<T> DecodeFallback<T> for &DecodeProbe<T> {
        fn decode_at(&self, _: &crate::keys::ParsedKey<'_>, _: usize) -> Result<T, KeyError> {
            Err(KeyError::Arity {
                entity: "",
                attribute: "",
                template: "",
            })
        }
    }

    /// Requires `T: KeyPart` at compile time; the derive spans the call at the field's type so
    /// an unsupported type is reported there.
    pub const fn assert_key_part<T: KeyPart + ?Sized>() {}

    /// Requires `T: KeyPartDecode`, for fields that are parsed back out of keys.
    pub const fn assert_key_part_decode<T: KeyPartDecode>() {}

    static FALLBACK_TEMPLATE: KeyTemplate = KeyTemplate {
        source: "",
        segments: &[],
    };

    /// The schema of the stub impl emitted next to derive errors; never used at run time
    /// because the crate does not compile.
    pub static FALLBACK_SCHEMA: EntitySchema = EntitySchema {
        entity: "",
        table: None,
        pk: PartitionKeySchema {
            attribute: "pk",
            template: &FALLBACK_TEMPLATE,
            sharding: Sharding::None,
        },
        sk: None,
        gsis: &[],
    };

    /// The body of the stub impl's `item_keys`.
    pub fn fallback_item_keys() -> Result<ItemKeys, KeyError> {
        Err(KeyError::Arity {
            entity: "",
            attribute: "pk",
            template: "",
        })
    }

    /// The identity an identity-sharded GSI hashes: the logical partition key, `#`, and the
    /// sort key (if any). Stable across re-puts of the same item, also for random base shards.
    pub fn identity(logical_pk: &str, sk: Option<&str>) -> String {
        match sk {
            Some(sk) => {
                let mut s = String::with_capacity(logical_pk.len() + sk.len() + 1);
                s.push_str(logical_pk);
                s.push('#');
                s.push_str(sk);
                s
            }
            None => logical_pk.to_owned(),
        }
    }
}
