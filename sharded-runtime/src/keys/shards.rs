//! The physical keys of one logical key, and random shards.

use crate::keys::template::push_shard;

/// A uniformly random shard in `0..n` (0 when `n` is 0 or 1).
///
/// From `fastrand`'s per-thread generator, seeded from the OS: not for cryptography, only to
/// spread writes.
pub(crate) fn random_shard(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        fastrand::u32(0..n)
    }
}

/// Every physical partition key of one logical key: `<prefix>#0` .. `<prefix>#(n-1)`.
///
/// Returned by the generated `pk_all_shards` and `gsiN_pk_all_shards` builders; the
/// scatter-gather engine queries each.
///
/// ```
/// use sharded::ShardKeys;
/// let keys: Vec<String> = ShardKeys::new("GAME#g1".to_string(), Some(3)).collect();
/// assert_eq!(keys, ["GAME#g1#0", "GAME#g1#1", "GAME#g1#2"]);
/// let unsharded: Vec<String> = ShardKeys::new("USER#u1".to_string(), None).collect();
/// assert_eq!(unsharded, ["USER#u1"]);
/// ```
#[derive(Debug, Clone)]
pub struct ShardKeys {
    prefix: String,
    n: Option<u32>,
    next: u32,
}

impl ShardKeys {
    /// The keys of `prefix` over `n` shards, or the one key `prefix` when `n` is `None`.
    pub fn new(prefix: String, n: Option<u32>) -> Self {
        ShardKeys { prefix, n, next: 0 }
    }

    /// The logical key (the template part, without a shard).
    ///
    /// ```
    /// let k = sharded::ShardKeys::new("GAME#g1".into(), Some(2));
    /// assert_eq!(k.logical_key(), "GAME#g1");
    /// ```
    pub fn logical_key(&self) -> &str {
        &self.prefix
    }

    /// The number of physical keys (`n`, or 1 when unsharded).
    ///
    /// ```
    /// assert_eq!(sharded::ShardKeys::new("A".into(), Some(7)).shard_count(), 7);
    /// ```
    pub fn shard_count(&self) -> u32 {
        self.n.unwrap_or(1)
    }
}

impl Iterator for ShardKeys {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        match self.n {
            None if self.next == 0 => {
                self.next = 1;
                Some(self.prefix.clone())
            }
            Some(n) if self.next < n => {
                let mut key = String::with_capacity(self.prefix.len() + 4);
                key.push_str(&self.prefix);
                push_shard(&mut key, self.next);
                self.next += 1;
                Some(key)
            }
            _ => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.shard_count().saturating_sub(self.next)) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for ShardKeys {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_shards_cover_every_shard() {
        let mut seen = [false; 10];
        for _ in 0..1000 {
            seen[random_shard(10) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
