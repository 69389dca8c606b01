//! The shard hash: a specification, so any service in any language computes the same shard.
//!
//! # Specification (version 1)
//!
//! ```text
//! canonical bytes = the key encoding of each shard field (see `encoding`), UTF-8,
//!                   joined with one `#` byte (0x23), in the order the fields are named
//!                   in `shard = "hash(a, b)"`
//! h               = FNV-1a 64-bit over the canonical bytes
//!                   (offset basis 0xcbf29ce484222325, prime 0x100000001b3,
//!                    for each byte: h ^= byte; h = h * prime mod 2^64)
//! h'              = h ^ (h >> 32)
//! shard           = h' mod n                      (0 <= shard < n)
//! ```
//!
//! Why FNV-1a: it is tiny, byte-streamable, has no seed, and has implementations in every
//! language (the seeds' `@ddb-lib` uses it too), so a Node or Python service can compute the
//! same shard. Why the fold `h ^ (h >> 32)`: FNV-1a mixes the last byte poorly into the low
//! bits, and `mod n` reads mostly low bits; ids that differ only in their last character
//! (`player-1`, `player-2`, ...) would otherwise land on correlated shards. Folding the high
//! half in costs one shift and one xor. Never `std`'s `DefaultHasher`: its algorithm is
//! unspecified and may change between Rust releases, which would move every item to another
//! shard.
//!
//! # Test vectors
//!
//! | shard fields | canonical bytes | FNV-1a 64 | n | shard |
//! |---|---|---|---|---|
//! | `""` (no bytes) | `` | `0xcbf29ce484222325` | 10 | 5 |
//! | `player_id = "a"` | `a` | `0xaf63dc4c8601ec8c` | 10 | 4 |
//! | `player_id = "player-1"` | `player-1` | `0x212e1ef85a029ab2` | 10 | 0 |
//! | `player_id = "player-2"` | `player-2` | `0x212e1df85a0298ff` | 10 | 3 |
//! | `player_id = "p1"` | `p1` | `0x08d59707b575eaba` | 100 | 37 |
//! | `(game_id, player_id) = ("g1", "p#1")` | `g1#p$231` | `0x39a848da95fbeed4` | 10 | 0 |
//! | `score = 42u64` | `00000000000000000042` | `0xa24e0d845544e14b` | 4 | 3 |
//!
//! The values above are checked by a unit test; if you port the hash, check them too.
//!
//! ```
//! use sharded::hash::{fnv1a64, shard_of_bytes};
//!
//! assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
//! assert_eq!(shard_of_bytes(b"player-1", 10), 0);
//! ```

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
    use crate::KeyPart;

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

    /// The table in the module docs, checked value by value.
    #[test]
    fn documented_test_vectors() {
        let vectors: &[Vector] = &[
            (&[], "", 0xcbf29ce484222325, 10, 5),
            (&[&"a"], "a", 0xaf63dc4c8601ec8c, 10, 4),
            (&[&"player-1"], "player-1", 0x212e1ef85a029ab2, 10, 0),
            (&[&"player-2"], "player-2", 0x212e1df85a0298ff, 10, 3),
            (&[&"p1"], "p1", 0x08d59707b575eaba, 100, 37),
            (&[&"g1", &"p#1"], "g1#p$231", 0x39a848da95fbeed4, 10, 0),
            (&[&42u64], "00000000000000000042", 0xa24e0d845544e14b, 4, 3),
        ];
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
