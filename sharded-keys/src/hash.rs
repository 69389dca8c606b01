//! The shard hash: a specification, so any service in any language computes the same shard.
//!
//! Everything a port needs is on this page: the algorithm (rule 1), the bytes it hashes
//! (rules 2 to 4), the shard count (rule 5) and where the shard goes in the key (rule 6),
//! each with test vectors, and a reference implementation in Python. A custom key type
//! (your own [`KeyPart`](crate::KeyPart)) hashes the text its `write_key` writes; a port must
//! reproduce that text.
//!
//! # Specification (version 1)
//!
//! **Rule 1: the algorithm.** Over the canonical bytes of rules 2 to 4, with all arithmetic on
//! unsigned 64-bit integers:
//!
//! ```text
//! h      = 0xcbf29ce484222325                       FNV-1a 64 offset basis
//! for each byte b:  h = (h XOR b) * 0x100000001b3   FNV-1a 64 prime, product mod 2^64
//! h'     = h XOR (h >> 32)                          the fold (logical shift)
//! shard  = h' mod n                                 0 <= shard < n
//! ```
//!
//! **Rule 2: the canonical bytes of one value** are its key encoding (the same text the value
//! has inside a key), as UTF-8:
//!
//! | type | canonical bytes |
//! |---|---|
//! | `u8`, `u16`, `u32`, `u64`, `usize`, `u128` | decimal, zero-padded to exactly 3, 5, 10, 20, 20, 39 digits (`usize` is 20 on every platform) |
//! | `i8`, `i16`, `i32`, `i64`, `isize`, `i128` | a sign byte then exactly 3, 5, 10, 19, 19, 39 digits. `v >= 0`: `0` then `v` zero-padded. `v < 0`: `-` then `v - MIN` zero-padded (`v + 2^(bits-1)`: `-1i64` is `-` and `2^63 - 1`, `i64::MIN` is `-` and 19 zeros) |
//! | `bool` | `true` or `false` |
//! | `String`, `&str` | the UTF-8 bytes of the text, except that every byte `<= 0x24` (0x00-0x1F, space, `!`, `"`, `#`, `$`) is written as `$` and two **upper-case** hex digits (`#` -> `$23`, `$` -> `$24`, newline -> `$0A`). Bytes `>= 0x25` (including all of multi-byte UTF-8) are copied. An empty string has no key: building the key fails |
//! | `chrono::DateTime<Utc>` (feature `chrono`) | RFC 3339 in UTC with exactly 9 fraction digits and `Z`: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (30 bytes); years 0 to 9999 only, others fail |
//! | `chrono::NaiveDate` (feature `chrono`) | `YYYY-MM-DD` (10 bytes); years 0 to 9999 only |
//! | `uuid::Uuid` (feature `uuid`) | lower-case hyphenated, 36 bytes: `8-4-4-4-12` hex digits |
//!
//! **Rule 3: several fields.** `shard = "hash(a, b, c)"` hashes the canonical bytes of `a`,
//! `b` and `c` in the order they are written in the attribute (not the struct's field order),
//! joined by one `#` (0x23): `bytes(a) # bytes(b) # bytes(c)`. No `#` before the first or
//! after the last. Only the named fields are hashed: the partition key template and its
//! literals are not part of the input. A canonical value never contains `#`, so the joined
//! bytes are unambiguous.
//!
//! **Rule 4: what each kind of sharding hashes.**
//!
//! | attribute | hashed bytes | shard count |
//! |---|---|---|
//! | `#[pk(shard = "hash(a, b)", n = N)]` | rule 3 over `a`, `b` | `N` |
//! | `#[gsiK(shard = "hash(a, b)", n = N)]` | rule 3 over `a`, `b`, exactly as for `#[pk]` | `N` |
//! | `#[gsiK(shard = N)]` (identity) | the item's *logical* base partition key (the `#[pk]` template filled in, without the base table's shard suffix), then `#`, then the item's base sort key as stored (the `#[sk]` template filled in). Without a `#[sk]`: the logical partition key alone, no trailing `#`. The GSI's own templates are not hashed | `N` |
//! | `#[pk(shard = "random", n = N)]` | the item's identity, as for an identity GSI: its logical partition key, `#`, its sort key as stored. No field is chosen; items spread like random draws, and one item is always on the same shard | `N` |
//!
//! The identity input does not depend on the base table's shard, so an item keeps its GSI
//! shard when it is written again, and a randomly sharded item is found, overwritten and
//! deleted on the shard it is on.
//!
//! **Rule 5: `n`.** The derive accepts `n` from 1 to 1,000
//! ([`MAX_SHARDS`](crate::schema::MAX_SHARDS)); with `n = 1` every shard is 0. `n` is part of
//! the specification of an entity: changing it moves almost every item to another shard, which
//! is why a change of `n` is declared as a transition (`previous_n`) and migrated.
//! ([`shard_of_bytes`] also answers 0 for `n = 0`, which the derive never produces.)
//!
//! **Rule 6: the physical key.** A sharded partition key (base table or GSI) is the logical
//! key, `#`, and the shard in decimal without padding or sign: `GAME#g1` on shard 3 of 10 is
//! `GAME#g1#3`, shard 37 of 100 is `GAME#g1#37`; with `n = 1` it is `GAME#g1#0`. Unsharded keys
//! have no suffix. Sort keys are never sharded.
//!
//! # Test vectors
//!
//! Each row: the value(s), their canonical bytes (rule 2 or 3, shown as text), the FNV-1a 64
//! of those bytes (before the fold), `n`, and the shard (rule 1).
//!
//! | rule | value(s) | canonical bytes | FNV-1a 64 | n | shard |
//! |---|---|---|---|---|---|
//! | 1 | no bytes | (empty) | `0xcbf29ce484222325` | 10 | 5 |
//! | 1 | `"a"` | `a` | `0xaf63dc4c8601ec8c` | 10 | 4 |
//! | 2 `str` | `"player-1"` | `player-1` | `0x212e1ef85a029ab2` | 10 | 0 |
//! | 2 `str` | `"player-1"` | `player-1` | `0x212e1ef85a029ab2` | 1000 | 770 |
//! | 2 `str` | `"player-2"` | `player-2` | `0x212e1df85a0298ff` | 10 | 3 |
//! | 2 `str` | `"p1"` | `p1` | `0x08d59707b575eaba` | 100 | 37 |
//! | 2 `str` | `"a b#c"` | `a$20b$23c` | `0xbfc621974a293e90` | 10 | 5 |
//! | 2 `str` | `"$"` | `$24` | `0xa0cdae17badeb6e5` | 10 | 8 |
//! | 2 `str` | `"%"` (0x25, not escaped) | `%` | `0xaf63984c86017900` | 10 | 2 |
//! | 2 `str` | `"line\n"` | `line$0A` | `0x1a54ed500c7c17be` | 10 | 2 |
//! | 2 `str` | `"über"` | `über` (bytes `c3 bc 62 65 72`) | `0xa720359e11610baf` | 10 | 3 |
//! | 2 `u8` | `7u8` | `007` | `0x4e7eef181d60f22e` | 10 | 8 |
//! | 2 `u16` | `42u16` | `00042` | `0x902126ab9ed882a1` | 10 | 8 |
//! | 2 `u32` | `42u32` | `0000000042` | `0x87d61e0553bb1c43` | 10 | 2 |
//! | 2 `u64` | `42u64` | `00000000000000000042` | `0xa24e0d845544e14b` | 4 | 3 |
//! | 2 `usize` | `42usize` | `00000000000000000042` | `0xa24e0d845544e14b` | 10 | 5 |
//! | 2 `u128` | `42u128` | `000000000000000000000000000000000000042` | `0xd6efe46df7652f59` | 10 | 6 |
//! | 2 `i8` | `5i8` | `0005` | `0xc2acd0f9ebc476b6` | 10 | 3 |
//! | 2 `i8` | `-1i8` | `-127` | `0xc0c3c98e2ceb5824` | 10 | 6 |
//! | 2 `i16` | `-1i16` | `-32767` | `0x97a8a9f1bf7e6859` | 10 | 4 |
//! | 2 `i32` | `42i32` | `00000000042` | `0xae90980d5a8b8f29` | 10 | 8 |
//! | 2 `i32` | `-42i32` | `-2147483606` | `0x50c04341857dbd8b` | 10 | 2 |
//! | 2 `i64` | `5i64` | `00000000000000000005` | `0xa25c028455510bf6` | 10 | 6 |
//! | 2 `i64` | `-1i64` | `-9223372036854775807` | `0x5cc2413abc21dac4` | 10 | 4 |
//! | 2 `i64` | `i64::MIN` | `-0000000000000000000` | `0x97b4ceacbe943fb8` | 10 | 8 |
//! | 2 `i128` | `-1i128` | `-170141183460469231731687303715884105727` | `0x9dd5856b5ba6c6c8` | 10 | 3 |
//! | 2 `bool` | `true` | `true` | `0x5b5c98ef514dbfa5` | 10 | 4 |
//! | 2 `bool` | `false` | `false` | `0xb5fae2c14238b978` | 10 | 7 |
//! | 2 `DateTime<Utc>` | 2026-06-22 01:00:00 UTC | `2026-06-22T01:00:00.000000000Z` | `0x388d7d29168bad0a` | 10 | 3 |
//! | 2 `NaiveDate` | 2026-06-22 | `2026-06-22` | `0x1d8f79deee6994af` | 10 | 3 |
//! | 2 `Uuid` | `67e55044-10b1-426f-9247-bb680e5fe0c8` | `67e55044-10b1-426f-9247-bb680e5fe0c8` | `0x44c0fd0eda5f3e61` | 10 | 5 |
//! | 3 | `hash(game_id, player_id)` = `("g1", "p#1")` | `g1#p$231` | `0x39a848da95fbeed4` | 10 | 0 |
//! | 3 | `hash(player_id, game_id)` = `("p#1", "g1")` | `p$231#g1` | `0xab99a7aaa09a0122` | 10 | 2 |
//! | 3 | `hash(game_id, score)` = `("g1", 42u64)` | `g1#00000000000000000042` | `0xf579255c14766e80` | 10 | 0 |
//! | 4 `#[gsi2(shard = "hash(player_id)", n = 8)]` | `player_id = "p1"` | `p1` | `0x08d59707b575eaba` | 8 | 5 |
//! | 4 `#[gsi1(shard = 4)]` | pk `GAME#{game_id}`, sk `SCORE#{score}#{player_id}`; `("g1", "p1", 42)` | `GAME#g1#SCORE#00000000000000000042#p1` | `0xa35f253d4712df62` | 4 | 3 |
//! | 4 `#[gsi1(shard = 4)]` | pk `USER#{user_id}`, no sk; `"u1"` | `USER#u1` | `0x61ff99dd0280b489` | 4 | 0 |
//! | 5 | `"player-1"` | `player-1` | `0x212e1ef85a029ab2` | 1 | 0 |
//!
//! Every row is checked by this module's unit tests (the `chrono` and `uuid` rows with those
//! features on); the example below checks rules 3 to 6 through the derive, including the
//! physical keys of rule 6. If you port the hash, check every row.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use sharded::hash::{fnv1a64, shard_of_bytes};
//! use sharded::ShardedEntity;
//!
//! // Rule 1, on bytes you already have.
//! assert_eq!(fnv1a64(b"player-1"), 0x212e1ef85a029ab2);
//! assert_eq!(shard_of_bytes(b"player-1", 10), 0);
//!
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
//! #[sk(template = "SCORE#{score}#{player_id}")]
//! #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
//! #[gsi2(pk = "DAY#{day}", shard = "hash(player_id)", n = 8)]
//! struct Score { game_id: String, player_id: String, score: u64, day: String }
//!
//! let s = Score { game_id: "g1".into(), player_id: "p1".into(), score: 42, day: "d1".into() };
//! let keys = s.item_keys()?;
//! // Rules 2 and 6: `p1` hashes to shard 7 of 10; the template is not hashed.
//! assert_eq!(Score::shard_for("p1")?, 7);
//! assert_eq!(keys.pk, "GAME#g1#7");
//! // Rule 4, identity GSI: "GAME#g1#SCORE#00000000000000000042#p1" mod 4 = 3.
//! assert_eq!(keys.gsis[0].0, "PLAYER#p1#3");
//! // Rule 4, a GSI hashed by a field: "p1" mod 8 = 5.
//! assert_eq!(Score::gsi2_shard_for("p1")?, 5);
//! assert_eq!(keys.gsis[1].0, "DAY#d1#5");
//!
//! // Rule 3: the order written in `hash(..)`, joined by `#`.
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(game_id, player_id)", n = 10)]
//! struct GameFirst { game_id: String, player_id: String }
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id, game_id)", n = 10)]
//! struct PlayerFirst { game_id: String, player_id: String }
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(game_id, score)", n = 10)]
//! struct ByScore { game_id: String, score: u64 }
//! assert_eq!(GameFirst::shard_for("g1", "p#1")?, 0);   // `g1#p$231`
//! assert_eq!(PlayerFirst::shard_for("p#1", "g1")?, 2); // `p$231#g1`
//! assert_eq!(ByScore::shard_for("g1", 42)?, 0);        // `g1#00000000000000000042`
//!
//! // Rule 4 without a sort key: the identity is the logical partition key alone.
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "USER#{user_id}")]
//! #[gsi1(pk = "COUNTRY#{country}", shard = 4)]
//! struct User { user_id: String, country: String }
//! let u = User { user_id: "u1".into(), country: "fr".into() };
//! assert_eq!(u.item_keys()?.gsis[0].0, "COUNTRY#fr#0"); // `USER#u1` mod 4 = 0
//!
//! // Rules 5 and 6: one shard is shard 0, and the key still ends in `#0`.
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 1)]
//! struct OneShard { game_id: String, player_id: String }
//! assert_eq!(OneShard::pk("g1", "player-1")?, "GAME#g1#0");
//! # Ok::<(), sharded::KeyError>(())
//! ```
//!
//! # Reference implementation
//!
//! In Python 3: the hash, and the encodings of strings and integers (`bool`, dates and UUIDs
//! are the plain ASCII text of rule 2). With the canonical bytes of each row, it reproduces
//! every FNV-1a value and shard of the table above:
//!
//! ```text
//! def fnv1a64(data: bytes) -> int:
//!     h = 0xcbf29ce484222325
//!     for b in data:
//!         h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
//!     return h
//!
//! def shard(canonical: bytes, n: int) -> int:
//!     h = fnv1a64(canonical)
//!     return (h ^ (h >> 32)) % n
//!
//! def key_str(s: str) -> bytes:                          # str, String (never empty)
//!     return b"".join(b"$%02X" % b if b <= 0x24 else bytes([b]) for b in s.encode())
//!
//! def key_uint(v: int, width: int) -> bytes:             # u8 3, u16 5, u32 10, u64/usize 20, u128 39
//!     return b"%0*d" % (width, v)
//!
//! def key_int(v: int, bits: int, width: int) -> bytes:   # i8 3, i16 5, i32 10, i64/isize 19, i128 39
//!     return b"0%0*d" % (width, v) if v >= 0 else b"-%0*d" % (width, v + 2 ** (bits - 1))
//!
//! # hash(game_id, player_id) over 10 shards; GSI `shard = N`: shard(b"GAME#g1#SCORE#...", N)
//! assert shard(b"#".join([key_str("g1"), key_str("p#1")]), 10) == 0
//! ```
//!
//! # Why this hash
//!
//! Why FNV-1a: it is tiny, byte-streamable, has no seed, and has implementations in every
//! language, so a Node or Python service can compute the same shard. Why the fold
//! `h ^ (h >> 32)`: FNV-1a mixes the last byte poorly into the low bits, and `mod n` reads
//! mostly low bits; ids that differ only in their last character (`player-1`, `player-2`, ...)
//! would otherwise land on correlated shards. Folding the high half in costs one shift and
//! one xor. Never `std`'s `DefaultHasher`: its algorithm is unspecified and may change between
//! Rust releases, which would move every item to another shard.
//!
//! FNV-1a is not a keyed or cryptographic hash: anyone who knows the key values can compute
//! the shard, which is the point. It spreads keys; it does not hide them.

/// FNV-1a 64-bit offset basis.
pub const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64-bit of `bytes`.
///
/// ```
/// assert_eq!(sharded::hash::fnv1a64(b""), 0xcbf29ce484222325);
/// ```
#[inline]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET_BASIS;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The shard (`0..n`) of already-canonical bytes, per the specification above.
///
/// `n == 0` is treated as one shard (shard 0) rather than dividing by zero; the derive never
/// generates `n = 0`.
///
/// ```
/// assert_eq!(sharded::hash::shard_of_bytes(b"p1", 100), 37);
/// ```
#[inline]
pub fn shard_of_bytes(canonical: &[u8], n: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    let h = fnv1a64(canonical);
    ((h ^ (h >> 32)) % u64::from(n)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::KeyPart;

    fn canonical(fields: &[&dyn KeyPart]) -> String {
        let mut s = String::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                s.push('#');
            }
            f.write_key(&mut s).unwrap();
        }
        s
    }

    /// Shard fields, their canonical bytes, FNV-1a 64, n, shard.
    type Vector<'a> = (&'a [&'a dyn KeyPart], &'a str, u64, u32, u32);

    fn check(vectors: &[Vector]) {
        for &(fields, bytes, fnv, n, shard) in vectors {
            assert_eq!(canonical(fields), bytes);
            assert_eq!(fnv1a64(bytes.as_bytes()), fnv, "fnv of {bytes:?}");
            assert_eq!(
                shard_of_bytes(bytes.as_bytes(), n),
                shard,
                "shard of {bytes:?} mod {n}"
            );
        }
    }

    /// The table in the module docs, checked value by value: rules 1, 2, 3 and 5. The rows of
    /// rule 4 (GSIs) and 6 (the physical key) need the derive and are checked by the module's
    /// doc test; their hashed bytes are checked here too.
    #[test]
    fn documented_test_vectors() {
        check(&[
            // Rule 1.
            (&[], "", 0xcbf29ce484222325, 10, 5),
            (&[&"a"], "a", 0xaf63dc4c8601ec8c, 10, 4),
            // Rule 2: strings.
            (&[&"player-1"], "player-1", 0x212e1ef85a029ab2, 10, 0),
            (&[&"player-1"], "player-1", 0x212e1ef85a029ab2, 1000, 770),
            (&[&"player-2"], "player-2", 0x212e1df85a0298ff, 10, 3),
            (&[&"p1"], "p1", 0x08d59707b575eaba, 100, 37),
            (&[&"a b#c"], "a$20b$23c", 0xbfc621974a293e90, 10, 5),
            (&[&"$"], "$24", 0xa0cdae17badeb6e5, 10, 8),
            (&[&"%"], "%", 0xaf63984c86017900, 10, 2),
            (&[&"line\n"], "line$0A", 0x1a54ed500c7c17be, 10, 2),
            (&[&"über"], "über", 0xa720359e11610baf, 10, 3),
            // Rule 2: unsigned integers.
            (&[&7u8], "007", 0x4e7eef181d60f22e, 10, 8),
            (&[&42u16], "00042", 0x902126ab9ed882a1, 10, 8),
            (&[&42u32], "0000000042", 0x87d61e0553bb1c43, 10, 2),
            (&[&42u64], "00000000000000000042", 0xa24e0d845544e14b, 4, 3),
            (
                &[&42usize],
                "00000000000000000042",
                0xa24e0d845544e14b,
                10,
                5,
            ),
            (
                &[&42u128],
                "000000000000000000000000000000000000042",
                0xd6efe46df7652f59,
                10,
                6,
            ),
            // Rule 2: signed integers.
            (&[&5i8], "0005", 0xc2acd0f9ebc476b6, 10, 3),
            (&[&-1i8], "-127", 0xc0c3c98e2ceb5824, 10, 6),
            (&[&-1i16], "-32767", 0x97a8a9f1bf7e6859, 10, 4),
            (&[&42i32], "00000000042", 0xae90980d5a8b8f29, 10, 8),
            (&[&-42i32], "-2147483606", 0x50c04341857dbd8b, 10, 2),
            (&[&5i64], "00000000000000000005", 0xa25c028455510bf6, 10, 6),
            (&[&-1i64], "-9223372036854775807", 0x5cc2413abc21dac4, 10, 4),
            (
                &[&i64::MIN],
                "-0000000000000000000",
                0x97b4ceacbe943fb8,
                10,
                8,
            ),
            (
                &[&-1i128],
                "-170141183460469231731687303715884105727",
                0x9dd5856b5ba6c6c8,
                10,
                3,
            ),
            // Rule 2: bool.
            (&[&true], "true", 0x5b5c98ef514dbfa5, 10, 4),
            (&[&false], "false", 0xb5fae2c14238b978, 10, 7),
            // Rule 3: several fields, in the order written, joined by `#`.
            (&[&"g1", &"p#1"], "g1#p$231", 0x39a848da95fbeed4, 10, 0),
            (&[&"p#1", &"g1"], "p$231#g1", 0xab99a7aaa09a0122, 10, 2),
            (
                &[&"g1", &42u64],
                "g1#00000000000000000042",
                0xf579255c14766e80,
                10,
                0,
            ),
            // Rule 4: a GSI hashed by a field hashes it as `#[pk]` does.
            (&[&"p1"], "p1", 0x08d59707b575eaba, 8, 5),
            // Rule 5: one shard.
            (&[&"player-1"], "player-1", 0x212e1ef85a029ab2, 1, 0),
        ]);
    }

    /// Rule 4, identity GSIs: the hashed text is the logical partition key, `#`, the sort key
    /// (see `keys::shards::identity`, which the generated code calls).
    #[test]
    fn identity_test_vectors() {
        let with_sk = crate::shards::identity("GAME#g1", Some("SCORE#00000000000000000042#p1"));
        assert_eq!(with_sk, "GAME#g1#SCORE#00000000000000000042#p1");
        assert_eq!(fnv1a64(with_sk.as_bytes()), 0xa35f253d4712df62);
        assert_eq!(crate::template::shard_of_text(&with_sk, 4), 3);
        let without_sk = crate::shards::identity("USER#u1", None);
        assert_eq!(without_sk, "USER#u1");
        assert_eq!(fnv1a64(without_sk.as_bytes()), 0x61ff99dd0280b489);
        assert_eq!(crate::template::shard_of_text(&without_sk, 4), 0);
    }

    #[cfg(feature = "chrono")]
    #[test]
    fn chrono_test_vectors() {
        use chrono::{NaiveDate, TimeZone, Utc};
        let t = Utc.with_ymd_and_hms(2026, 6, 22, 1, 0, 0).unwrap();
        let d = NaiveDate::from_ymd_opt(2026, 6, 22).unwrap();
        check(&[
            (
                &[&t],
                "2026-06-22T01:00:00.000000000Z",
                0x388d7d29168bad0a,
                10,
                3,
            ),
            (&[&d], "2026-06-22", 0x1d8f79deee6994af, 10, 3),
        ]);
    }

    #[cfg(feature = "uuid")]
    #[test]
    fn uuid_test_vectors() {
        let u = uuid::Uuid::from_u128(0x67e5504410b1426f9247bb680e5fe0c8);
        check(&[(
            &[&u],
            "67e55044-10b1-426f-9247-bb680e5fe0c8",
            0x44c0fd0eda5f3e61,
            10,
            5,
        )]);
    }

    #[test]
    fn known_fnv1a_reference_values() {
        // Published FNV-1a 64 values (from the FNV reference test suite).
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn shards_stay_in_range() {
        for n in [1u32, 2, 3, 10, 97, 1000] {
            for i in 0..2000 {
                assert!(shard_of_bytes(format!("id-{i}").as_bytes(), n) < n);
            }
        }
        assert_eq!(shard_of_bytes(b"x", 0), 0);
    }

    /// Sequential ids that differ only in the last bytes must still spread; this is the case
    /// the fold is for.
    #[test]
    fn sequential_ids_spread_evenly() {
        let n = 10;
        let mut counts = [0u32; 10];
        for i in 0..100_000 {
            counts[shard_of_bytes(format!("player-{i}").as_bytes(), n) as usize] += 1;
        }
        let max = *counts.iter().max().unwrap() as f64;
        assert!(max / 10_000.0 < 1.03, "uneven: {counts:?}");
    }
}
