//! The physical keys of one logical key, and random shards.

use crate::attribute::KeyValue;
use crate::suffix::ShardSuffix;

/// A uniformly random shard in `0..n` (0 when `n` is 0 or 1).
///
/// From `fastrand`'s per-thread generator, seeded from the OS: not for cryptography, only to
/// spread writes.
#[doc(hidden)]
pub fn random_shard(n: u32) -> u32 {
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
/// use sharded::keys::ShardKeys;
/// let keys: Vec<String> = ShardKeys::new("GAME#g1".to_string(), Some(3)).collect();
/// assert_eq!(keys, ["GAME#g1#0", "GAME#g1#1", "GAME#g1#2"]);
/// let unsharded: Vec<String> = ShardKeys::new("USER#u1".to_string(), None).collect();
/// assert_eq!(unsharded, ["USER#u1"]);
/// ```
#[derive(Debug, Clone)]
pub struct ShardKeys {
    prefix: String,
    n: Option<u32>,
    suffix: ShardSuffix,
    next: u32,
}

impl ShardKeys {
    /// The keys of `prefix` over `n` shards, or the one key `prefix` when `n` is `None`.
    pub fn new(prefix: String, n: Option<u32>) -> Self {
        ShardKeys {
            prefix,
            n,
            suffix: ShardSuffix::DEFAULT,
            next: 0,
        }
    }

    /// The same keys with the shard spelled by `suffix`.
    ///
    /// ```
    /// use sharded::keys::{ShardKeys, ShardSuffix};
    /// let keys = ShardKeys::new("ACTIVE_USERS".into(), Some(2))
    ///     .with_suffix(ShardSuffix::parse("#SHARD_{shard}")?);
    /// assert_eq!(keys.collect::<Vec<_>>(), ["ACTIVE_USERS#SHARD_0", "ACTIVE_USERS#SHARD_1"]);
    /// # Ok::<(), sharded::KeyError>(())
    /// ```
    pub fn with_suffix(mut self, suffix: ShardSuffix) -> Self {
        self.suffix = suffix;
        self
    }

    /// How the shard is spelled after the logical key.
    pub fn suffix(&self) -> &ShardSuffix {
        &self.suffix
    }

    /// The logical key (the template part, without a shard).
    ///
    /// ```
    /// let k = sharded::keys::ShardKeys::new("GAME#g1".into(), Some(2));
    /// assert_eq!(k.logical_key(), "GAME#g1");
    /// ```
    pub fn logical_key(&self) -> &str {
        &self.prefix
    }

    /// The number of physical keys (`n`, or 1 when unsharded).
    ///
    /// ```
    /// assert_eq!(sharded::keys::ShardKeys::new("A".into(), Some(7)).shard_count(), 7);
    /// ```
    pub fn shard_count(&self) -> u32 {
        self.n.unwrap_or(1)
    }
}

/// Every physical partition key that may hold a logical key's items: the current layout's
/// shards and, while a transition is declared, the previous layout's (the shards of the old
/// `n`, or the unsharded legacy key).
///
/// Returned by the generated `pk_partitions`; queries read all of them and return each
/// logical item once (see the README's "Changing the layout").
///
/// ```
/// use sharded::{keys::Partitions, keys::ShardKeys};
/// // Growing from 2 to 3 shards: shards 0 and 1 are in both layouts.
/// let p = Partitions::new(
///     ShardKeys::new("GAME#g1".into(), Some(3)),
///     Some(ShardKeys::new("GAME#g1".into(), Some(2))),
/// );
/// assert_eq!(p.all(), ["GAME#g1#0", "GAME#g1#1", "GAME#g1#2"]);
/// assert_eq!(p.current_count(), 3);
/// // Adopting sharding over an unsharded legacy key.
/// let p = Partitions::new(
///     ShardKeys::new("GAME#g1".into(), Some(2)),
///     Some(ShardKeys::new("GAME#g1".into(), None)),
/// );
/// assert_eq!(p.all(), ["GAME#g1#0", "GAME#g1#1", "GAME#g1"]);
/// ```
#[derive(Debug, Clone)]
pub struct Partitions {
    current: ShardKeys,
    previous: Option<ShardKeys>,
    /// For a multi-attribute key: the partition attributes' equalities and the shard
    /// attribute; the keys of `current` are then the partitions' renderings.
    attributes: Option<(Vec<(&'static str, KeyValue)>, &'static str)>,
}

/// One physical partition a Query reads: the attribute equalities of its key condition. A
/// string key is one equality (`pk = "GAME#g1#3"`); a multi-attribute key names each
/// partition attribute and the shard (`game_id = "g1" AND gsi2_shard = 3`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(hidden)]
pub struct Partition {
    equalities: Vec<(&'static str, KeyValue)>,
    /// The stable rendering: the key itself for a string key, `game_id=g1#3` (each partition
    /// attribute as `name=value`, joined by `,`, then `#` and the shard) for a
    /// multi-attribute key. What stats, failures and cursors name the partition by.
    shown: String,
}

impl Partition {
    /// The string key `key` of `attribute`.
    #[doc(hidden)]
    pub fn key(attribute: &'static str, key: String) -> Partition {
        Partition {
            equalities: vec![(attribute, KeyValue::S(key.clone()))],
            shown: key,
        }
    }

    /// The attribute equalities, in key-schema order.
    #[doc(hidden)]
    pub fn equalities(&self) -> &[(&'static str, KeyValue)] {
        &self.equalities
    }

    /// The stable rendering (see the field).
    #[doc(hidden)]
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

impl PartialEq<str> for Partition {
    fn eq(&self, key: &str) -> bool {
        self.shown == key
    }
}

impl PartialEq<String> for Partition {
    fn eq(&self, key: &String) -> bool {
        self.shown == *key
    }
}

/// The logical key of a multi-attribute partition as rendered: `name=value` per partition
/// attribute, joined by `,` (the shard follows as `#<shard>`, as for a string key).
///
/// A value's `\`, `,` and space are escaped with `\`: the rendering names the query in its
/// description (what single flight, the cache and cursors are bound to), where held sort
/// equalities follow after a space, so two different sets of values must never render alike
/// (`game_id = "a,region=b", region = "c"` against `game_id = "a", region = "b,region=c"`).
#[doc(hidden)]
pub fn render_attributes(equalities: &[(&'static str, KeyValue)]) -> String {
    let mut rendered = String::new();
    for (position, (name, value)) in equalities.iter().enumerate() {
        if position > 0 {
            rendered.push(',');
        }
        rendered.push_str(name);
        rendered.push('=');
        for c in value.text().chars() {
            if matches!(c, '\\' | ',' | ' ') {
                rendered.push('\\');
            }
            rendered.push(c);
        }
    }
    rendered
}

impl Partitions {
    /// The `current` layout's keys, and the `previous` layout's while a transition is declared.
    ///
    /// ```
    /// use sharded::{keys::Partitions, keys::ShardKeys};
    /// let p = Partitions::new(ShardKeys::new("A".into(), Some(2)), None);
    /// assert_eq!(p.all(), ["A#0", "A#1"]);
    /// ```
    pub fn new(current: ShardKeys, previous: Option<ShardKeys>) -> Self {
        Partitions {
            current,
            previous,
            attributes: None,
        }
    }

    /// The `n` partitions of a multi-attribute key: the `equalities` of its partition
    /// attributes, and each shard `0..n` in `shard_attribute`. Built by the generated
    /// `query_gsiN` of a `#[gsiN(pk = [..])]` index.
    ///
    /// ```
    /// use sharded::keys::{KeyValue, Partitions};
    /// let p = Partitions::attributes(vec![("game_id", KeyValue::S("g1".into()))], "gsi2_shard", 3);
    /// assert_eq!(p.logical_key(), "game_id=g1");
    /// assert_eq!(p.all(), ["game_id=g1#0", "game_id=g1#1", "game_id=g1#2"]);
    /// ```
    pub fn attributes(
        equalities: Vec<(&'static str, KeyValue)>,
        shard_attribute: &'static str,
        n: u32,
    ) -> Self {
        Partitions {
            current: ShardKeys::new(render_attributes(&equalities), Some(n)),
            previous: None,
            attributes: Some((equalities, shard_attribute)),
        }
    }

    /// Every partition to read (as [`all`](Self::all), or the current layout's alone), as
    /// attribute equalities: one equality on `key_attribute` per key of a string key.
    #[doc(hidden)]
    pub fn physical(&self, key_attribute: &'static str, all: bool) -> Vec<Partition> {
        match &self.attributes {
            Some((equalities, shard_attribute)) => self
                .current
                .clone()
                .enumerate()
                .map(|(shard, shown)| {
                    let mut equalities = equalities.clone();
                    equalities.push((shard_attribute, KeyValue::N(shard.to_string())));
                    Partition { equalities, shown }
                })
                .collect(),
            None => {
                let keys = if all {
                    self.all()
                } else {
                    self.current.clone().collect()
                };
                keys.into_iter()
                    .map(|key| Partition::key(key_attribute, key))
                    .collect()
            }
        }
    }

    /// Whether these are a multi-attribute key's partitions.
    #[doc(hidden)]
    pub fn is_attributes(&self) -> bool {
        self.attributes.is_some()
    }

    /// The logical key (the current template, without a shard).
    ///
    /// ```
    /// let p = sharded::keys::Partitions::new(sharded::keys::ShardKeys::new("A".into(), Some(2)), None);
    /// assert_eq!(p.logical_key(), "A");
    /// ```
    pub fn logical_key(&self) -> &str {
        self.current.logical_key()
    }

    /// The number of the current layout's keys (they come first in [`all`](Self::all)).
    ///
    /// ```
    /// let p = sharded::keys::Partitions::new(sharded::keys::ShardKeys::new("A".into(), Some(4)), None);
    /// assert_eq!(p.current_count(), 4);
    /// ```
    pub fn current_count(&self) -> usize {
        self.current.shard_count() as usize
    }

    /// Whether a transition is declared.
    ///
    /// ```
    /// let p = sharded::keys::Partitions::new(sharded::keys::ShardKeys::new("A".into(), Some(4)), None);
    /// assert!(!p.in_transition());
    /// ```
    pub fn in_transition(&self) -> bool {
        self.previous.is_some()
    }

    /// Every partition key, each once: the current layout's in shard order, then those of the
    /// previous layout that are not current keys too.
    ///
    /// ```
    /// use sharded::{keys::Partitions, keys::ShardKeys};
    /// // Shrinking from 3 shards to 1: shards 1 and 2 are read until migrated.
    /// let p = Partitions::new(ShardKeys::new("A".into(), Some(1)), Some(ShardKeys::new("A".into(), Some(3))));
    /// assert_eq!(p.all(), ["A#0", "A#1", "A#2"]);
    /// ```
    pub fn all(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.current.clone().collect();
        if let Some(previous) = &self.previous {
            for key in previous.clone() {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    /// The previous layout's keys alone, while a transition is declared: where the items a
    /// migration moves are.
    #[doc(hidden)]
    pub fn previous(&self) -> Option<&ShardKeys> {
        self.previous.as_ref()
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
                let mut key =
                    String::with_capacity(self.prefix.len() + self.suffix.literal.len() + 4);
                key.push_str(&self.prefix);
                self.suffix.write(&mut key, self.next);
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

    #[test]
    fn different_attribute_values_never_render_alike() {
        let s = |v: &str| KeyValue::S(v.to_owned());
        let first = render_attributes(&[("game_id", s("a,region=b")), ("region", s("c"))]);
        let second = render_attributes(&[("game_id", s("a")), ("region", s("b,region=c"))]);
        assert_ne!(first, second);
        assert_eq!(first, r"game_id=a\,region=b,region=c");
        // Held sort equalities follow a space, and a backslash of a value is escaped too.
        let spaced = render_attributes(&[("game_id", s("a b")), ("region", s(r"c\"))]);
        assert_eq!(spaced, r"game_id=a\ b,region=c\\");
        assert_eq!(render_attributes(&[("game_id", s("g1"))]), "game_id=g1");
    }
}
