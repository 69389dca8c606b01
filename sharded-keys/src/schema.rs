//! The static description of an entity's keys, emitted by the derive, and the table it needs.
//!
//! `#[derive(ShardedEntity)]` describes each entity as an [`EntitySchema`], reachable as
//! `<Entity as ShardedEntity>::SCHEMA`. The types are `#[non_exhaustive]`: their fields can be
//! read, and new kinds of layout can be added to them without breaking code that reads them;
//! generated code builds them with their `const fn` constructors.

use crate::collision::shared_key;
#[doc(hidden)]
pub use crate::const_str::str_eq;
use crate::error::KeyError;
pub use crate::suffix::ShardSuffix;
pub use crate::table::{DefaultTable, IndexNames, Recognition, ShardedTable, TableSchema};
pub use crate::template::{KeyTemplate, Segment};

// The literals behind `MAX_SHARDS` and `MAX_KEY_ATTRIBUTES`, as macros so the compile-time
// messages can quote them (`concat!` takes only literals): one definition each.
#[doc(hidden)]
#[macro_export]
macro_rules! max_shards {
    () => {
        1000
    };
}
#[doc(hidden)]
#[macro_export]
macro_rules! max_key_attributes {
    () => {
        4
    };
}
// Exported at the crate root (the runtime's compile-time messages quote them), and here
// by their old paths.
#[doc(hidden)]
pub use crate::{max_key_attributes, max_shards};

pub use crate::table::{ENTITY_ATTRIBUTE, MOVE_ATTRIBUTE, MOVE_COPY, MOVE_MOVED, MOVE_REPLACE};

/// The largest shard count the derive accepts.
///
/// Every read of a sharded key costs `n` requests; past a thousand, a key with more
/// cardinality (a finer template) serves better than more shards.
pub const MAX_SHARDS: u32 = max_shards!();

/// DynamoDB's largest partition key value: 2,048 bytes of UTF-8, on the table and on every
/// index. Longer keys are refused before sending ([`KeyError::KeyTooLong`]).
///
/// ```
/// assert_eq!(sharded::schema::MAX_PARTITION_KEY_BYTES, 2048);
/// ```
pub const MAX_PARTITION_KEY_BYTES: usize = 2048;

/// DynamoDB's largest sort key value: 1,024 bytes of UTF-8, on the table and on every index.
/// Longer keys are refused before sending ([`KeyError::KeyTooLong`]).
///
/// ```
/// assert_eq!(sharded::schema::MAX_SORT_KEY_BYTES, 1024);
/// ```
pub const MAX_SORT_KEY_BYTES: usize = 1024;

/// Refuses a key `value` of `attribute` longer than `limit` bytes.
fn check_key_size(
    entity: &'static str,
    attribute: &'static str,
    value: &str,
    limit: usize,
) -> Result<(), KeyError> {
    if value.len() > limit {
        return Err(KeyError::KeyTooLong {
            entity,
            attribute,
            size: value.len(),
            limit,
        });
    }
    Ok(())
}

/// How a partition key is spread over shards.
///
/// ```
/// use sharded::schema::Sharding;
/// assert_eq!(Sharding::random(10).shard_count(), Some(10));
/// assert_eq!(Sharding::hash(&["player_id"], 4).shard_count(), Some(4));
/// assert_eq!(Sharding::None.shard_count(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sharding {
    /// One physical key per logical key.
    None,
    /// `shard = "hash(a, b)"`: the shard is the spec hash of these fields, so a point lookup
    /// knows its shard.
    #[non_exhaustive]
    Hash {
        /// The hashed fields, in order.
        fields: &'static [&'static str],
        /// The shard count.
        n: u32,
    },
    /// `shard = "random"`: no field is chosen; an item's shard is the spec hash of its own
    /// primary key (its logical partition key, `#`, its sort key; rule 4 of
    /// [`hash`](crate::hash)), which spreads distinct items as evenly as a random draw, but
    /// puts a given item on the same shard every time, so that an item read back is found,
    /// overwritten and deleted where it is (never a second copy on another shard).
    #[non_exhaustive]
    Random {
        /// The shard count.
        n: u32,
    },
    /// GSI `shard = N`: the shard is the spec hash of the item's logical primary key (its
    /// partition key without the shard suffix, `#`, its sort key; rule 4 of
    /// [`hash`](crate::hash)), so re-putting an item keeps its GSI shard.
    #[non_exhaustive]
    Identity {
        /// The shard count.
        n: u32,
    },
}

impl Sharding {
    /// `shard = "hash(fields..)"` over `n` shards.
    pub const fn hash(fields: &'static [&'static str], n: u32) -> Sharding {
        Sharding::Hash { fields, n }
    }

    /// `shard = "random"` over `n` shards.
    pub const fn random(n: u32) -> Sharding {
        Sharding::Random { n }
    }

    /// A GSI's `shard = n`: the item's logical primary key hashed over `n` shards (rule 4 of
    /// [`hash`](crate::hash)).
    pub const fn identity(n: u32) -> Sharding {
        Sharding::Identity { n }
    }

    /// The shard count, or `None` when unsharded.
    // Inlined across crates: the generated key builders read it from their static schema, and
    // a constant count is what turns `hash % n` into a multiply.
    #[inline]
    pub fn shard_count(&self) -> Option<u32> {
        match *self {
            Sharding::None => None,
            Sharding::Hash { n, .. } | Sharding::Random { n } | Sharding::Identity { n } => Some(n),
        }
    }
}

/// A partition key: attribute name, template, sharding.
///
/// ```
/// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
/// static T: KeyTemplate = KeyTemplate::new(
///     "GAME#{game_id}",
///     &[Segment::literal("GAME#"), Segment::field("game_id")],
/// );
/// let pk = PartitionKeySchema::new("pk", &T, Sharding::random(10));
/// assert_eq!(pk.physical_form(), "GAME#{game_id}#<shard 0..10>");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionKeySchema {
    /// The DynamoDB attribute holding the key.
    pub attribute: &'static str,
    /// The logical key template.
    pub template: &'static KeyTemplate,
    /// How the logical key is spread.
    pub sharding: Sharding,
    /// How the shard is spelled after the logical key (`suffix = "#SHARD_{shard}"` on the
    /// key; `#{shard}` by default).
    pub suffix: ShardSuffix,
    /// The layout the items had before this one, while a transition is declared
    /// (`previous_n = N` or `legacy = "..."` on `#[pk]`): reads cover it too.
    pub previous: Option<PreviousLayout>,
    /// A layout decided per logical key (`max_n` on `#[pk]`): `sharding` is the layout of
    /// every key the table's layout directory does not list, and a listed key has its own
    /// shard count, up to [`PerKeyLayout::max_n`].
    pub per_key: Option<PerKeyLayout>,
}

/// A partition key whose logical keys each have their own shard count (`n = 1, max_n = 40`
/// on `#[pk]`): cold keys keep the declared `n` (one Query, one `GetItem`), and a key that
/// runs hot is widened online, alone, up to `max_n` shards.
///
/// ```
/// use sharded::schema::{KeyLayout, KeyTemplate, PartitionKeySchema, Segment, Sharding};
/// static T: KeyTemplate = KeyTemplate::new("GAME#{game_id}", &[Segment::literal("GAME#"), Segment::field("game_id")]);
/// let pk = PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 1)).with_per_key(40);
/// assert_eq!(pk.per_key.map(|p| p.max_n), Some(40));
/// // One key widened from 1 to 20, in its transition.
/// let widened = pk.in_layout(KeyLayout::moving(20, 1));
/// assert_eq!(widened.layout_description(), "GAME#{game_id}#<shard 0..20>, previously #<shard 0..1>");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PerKeyLayout {
    /// The most shards one logical key may have (`max_n`).
    pub max_n: u32,
}

/// The layout of one logical key of a [per-key](PerKeyLayout) partition key: its shard count
/// and, while it changes, the count its items may still be under (read too, never written
/// as the item's place).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyLayout {
    /// The shards the key's items are written to.
    pub n: u32,
    /// The shard count the key's items may still be under, while it changes.
    pub previous: Option<u32>,
}

impl KeyLayout {
    /// A steady layout of `n` shards.
    pub const fn steady(n: u32) -> KeyLayout {
        KeyLayout { n, previous: None }
    }

    /// A layout written at `n` shards whose items may still be at `previous` shards.
    pub const fn moving(n: u32, previous: u32) -> KeyLayout {
        KeyLayout {
            n,
            previous: Some(previous),
        }
    }
}

/// Where a logical key's items lived before the layout declared now: read (and cleaned up)
/// while a transition is under way, never written.
///
/// ```
/// use sharded::schema::{KeyTemplate, PartitionKeySchema, PreviousLayout, Segment, Sharding};
/// static T: KeyTemplate = KeyTemplate::new(
///     "GAME#{game_id}",
///     &[Segment::literal("GAME#"), Segment::field("game_id")],
/// );
/// // Resharding from 10 to 20 shards.
/// let pk = PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 20))
///     .with_previous(PreviousLayout::shards(10));
/// assert_eq!(pk.layout_description(), "GAME#{game_id}#<shard 0..20>, previously #<shard 0..10>");
/// // Adopting sharding on a table whose items are under the unsharded key.
/// let pk = PartitionKeySchema::new("pk", &T, Sharding::hash(&["player_id"], 10))
///     .with_previous(PreviousLayout::legacy(&T));
/// assert_eq!(pk.layout_description(), "GAME#{game_id}#<shard 0..10>, previously GAME#{game_id}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviousLayout {
    /// `previous_n = N`: the same template over `n` shards, spelled by `suffix` (the current
    /// key's unless `previous_suffix` says otherwise), each item on the shard `placement`
    /// says.
    #[non_exhaustive]
    Shards {
        /// The shard count before the transition.
        n: u32,
        /// How the previous layout spells its shards; `None`: as the current layout does.
        suffix: Option<ShardSuffix>,
        /// Which of the `n` shards holds an item.
        placement: PreviousPlacement,
    },
    /// `legacy = "TEMPLATE"`: one unsharded key per logical key, built from this template
    /// (whose fields are fields of the current template).
    #[non_exhaustive]
    Legacy {
        /// The unsharded template.
        template: &'static KeyTemplate,
    },
}

/// Where an item sat among the previous layout's shards.
///
/// ```
/// use sharded::schema::{PreviousLayout, PreviousPlacement};
/// // Data sharded by hand with random shards: any of the 10 may hold an item.
/// let p = PreviousLayout::shards(10).with_placement(PreviousPlacement::Unknown);
/// assert!(p.placement_unknown());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviousPlacement {
    /// The current key's rule (`hash(..)` or the item's identity) over the previous count:
    /// one shard per item, so a point read asks one previous place.
    Current,
    /// Unknown (`previous_shard = "unknown"`): the data was written with random shards or
    /// another hash, so any previous shard may hold an item. Queries read them all, as
    /// always; a point read asks every previous shard (one `BatchGetItem`), and a write
    /// looks its item up there first to remove the old copy.
    Unknown,
}

impl PreviousLayout {
    /// The same template and sharding over `n` shards.
    pub const fn shards(n: u32) -> PreviousLayout {
        PreviousLayout::Shards {
            n,
            suffix: None,
            placement: PreviousPlacement::Current,
        }
    }

    /// The same previous shards, spelled by `suffix` (`previous_suffix = ".."`): a previous
    /// layout written by hand with another spelling. Unchanged for a legacy key.
    pub const fn with_suffix(self, suffix: ShardSuffix) -> PreviousLayout {
        match self {
            PreviousLayout::Shards { n, placement, .. } => PreviousLayout::Shards {
                n,
                suffix: Some(suffix),
                placement,
            },
            other => other,
        }
    }

    /// The same previous shards with items placed by `placement` (`previous_shard =
    /// "unknown"`). Unchanged for a legacy key.
    pub const fn with_placement(self, placement: PreviousPlacement) -> PreviousLayout {
        match self {
            PreviousLayout::Shards { n, suffix, .. } => PreviousLayout::Shards {
                n,
                suffix,
                placement,
            },
            other => other,
        }
    }

    /// Whether any previous shard may hold an item (see [`PreviousPlacement::Unknown`]).
    pub const fn placement_unknown(&self) -> bool {
        matches!(
            self,
            PreviousLayout::Shards {
                placement: PreviousPlacement::Unknown,
                ..
            }
        )
    }

    /// An unsharded key built from `template`.
    pub const fn legacy(template: &'static KeyTemplate) -> PreviousLayout {
        PreviousLayout::Legacy { template }
    }
}

impl PartitionKeySchema {
    /// The key held in `attribute`, built from `template` and spread by `sharding`.
    pub const fn new(
        attribute: &'static str,
        template: &'static KeyTemplate,
        sharding: Sharding,
    ) -> Self {
        PartitionKeySchema {
            attribute,
            template,
            sharding,
            suffix: ShardSuffix::DEFAULT,
            previous: None,
            per_key: None,
        }
    }

    /// Each logical key has its own shard count, up to `max_n`: the declared sharding is the
    /// default of keys the layout directory does not list ([`PerKeyLayout`]).
    pub const fn with_per_key(mut self, max_n: u32) -> Self {
        self.per_key = Some(PerKeyLayout { max_n });
        self
    }

    /// The highest shard count a stored key of this partition key may have: the current
    /// count, or `max_n` of a per-key layout. What recognition parses a stored key with.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
    /// static T: KeyTemplate = KeyTemplate::new("G#{g}", &[Segment::literal("G#"), Segment::field("g")]);
    /// assert_eq!(PartitionKeySchema::new("pk", &T, Sharding::random(4)).shard_bound(), Some(4));
    /// assert_eq!(PartitionKeySchema::new("pk", &T, Sharding::random(1)).with_per_key(64).shard_bound(), Some(64));
    /// ```
    pub fn shard_bound(&self) -> Option<u32> {
        match self.per_key {
            Some(per_key) => Some(per_key.max_n),
            None => self.sharding.shard_count(),
        }
    }

    /// This partition key as one logical key of a per-key layout has it: `layout.n` shards
    /// placed as declared, and, while it changes, its previous count as a transition from
    /// `previous_n` (so reads and writes follow the transition rules of a declared one).
    pub fn in_layout(&self, layout: KeyLayout) -> PartitionKeySchema {
        let sharding = match self.sharding {
            Sharding::Hash { fields, .. } => Sharding::hash(fields, layout.n),
            Sharding::Random { .. } => Sharding::random(layout.n),
            Sharding::Identity { .. } => Sharding::identity(layout.n),
            Sharding::None => Sharding::None,
        };
        PartitionKeySchema {
            sharding,
            previous: layout.previous.map(PreviousLayout::shards),
            ..*self
        }
    }

    /// The same key with its shard spelled by `suffix` (`suffix = ".."` on the key).
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding, ShardSuffix};
    /// static T: KeyTemplate = KeyTemplate::new("ACTIVE_USERS", &[Segment::literal("ACTIVE_USERS")]);
    /// let pk = PartitionKeySchema::new("PK", &T, Sharding::random(10))
    ///     .with_suffix(ShardSuffix::declared("#SHARD_{shard}"));
    /// assert_eq!(pk.physical_form(), "ACTIVE_USERS#SHARD_<shard 0..10>");
    /// ```
    pub const fn with_suffix(mut self, suffix: ShardSuffix) -> Self {
        self.suffix = suffix;
        self
    }

    /// How the previous layout spells its shards, while a resharding is declared.
    pub fn previous_suffix(&self) -> ShardSuffix {
        match self.previous {
            Some(PreviousLayout::Shards {
                suffix: Some(suffix),
                ..
            }) => suffix,
            _ => self.suffix,
        }
    }

    /// The same key with a transition from `previous` declared.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, PartitionKeySchema, PreviousLayout, Segment, Sharding};
    /// static T: KeyTemplate = KeyTemplate::new("A#{a}", &[Segment::literal("A#"), Segment::field("a")]);
    /// let pk = PartitionKeySchema::new("pk", &T, Sharding::random(8)).with_previous(PreviousLayout::shards(4));
    /// assert_eq!(pk.previous, Some(PreviousLayout::shards(4)));
    /// ```
    pub const fn with_previous(mut self, previous: PreviousLayout) -> Self {
        self.previous = Some(previous);
        self
    }

    /// The physical form of the layout and of the previous one while a transition is
    /// declared: what cursors are issued under, and what messages show.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
    /// static T: KeyTemplate = KeyTemplate::new("A#{a}", &[Segment::literal("A#"), Segment::field("a")]);
    /// let pk = PartitionKeySchema::new("pk", &T, Sharding::random(8));
    /// assert_eq!(pk.layout_description(), "A#{a}#<shard 0..8>");
    /// ```
    pub fn layout_description(&self) -> String {
        let current = self.physical_form();
        match self.previous {
            None => current,
            Some(PreviousLayout::Shards { n, placement, .. }) => {
                let unknown = match placement {
                    PreviousPlacement::Unknown => " (placement unknown)",
                    PreviousPlacement::Current => "",
                };
                format!(
                    "{current}, previously {}{unknown}",
                    self.previous_suffix().describe(n)
                )
            }
            Some(PreviousLayout::Legacy { template }) => {
                format!("{current}, previously {}", template.source)
            }
        }
    }

    /// The layout description of the previous layout alone (what the layout was before the
    /// transition was declared), if one is declared.
    #[doc(hidden)]
    pub fn previous_description(&self) -> Option<String> {
        match self.previous? {
            PreviousLayout::Shards { n, .. } => Some(format!(
                "{}{}",
                self.template.source,
                self.previous_suffix().describe(n)
            )),
            PreviousLayout::Legacy { template } => Some(template.source.to_owned()),
        }
    }

    /// Refuses a `value` of this key over [`MAX_PARTITION_KEY_BYTES`], naming `entity` and
    /// the attribute.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};
    /// static T: KeyTemplate = KeyTemplate::new("U#{id}", &[Segment::literal("U#"), Segment::field("id")]);
    /// let pk = PartitionKeySchema::new("pk", &T, Sharding::None);
    /// assert!(pk.check_size("User", "U#1").is_ok());
    /// assert!(pk.check_size("User", &"x".repeat(2049)).is_err());
    /// ```
    pub fn check_size(&self, entity: &'static str, value: &str) -> Result<(), KeyError> {
        check_key_size(entity, self.attribute, value, MAX_PARTITION_KEY_BYTES)
    }

    /// The physical form for documentation and messages.
    pub fn physical_form(&self) -> String {
        match self.sharding.shard_count() {
            None => self.template.source.to_owned(),
            Some(n) => format!("{}{}", self.template.source, self.suffix.describe(n)),
        }
    }
}

/// Whether two partition keys put the same logical key in the same physical partitions: the
/// same attribute, templates with the same literals and fields at the same places (field
/// names may differ; their types are checked by the derive), and the same shard count. How an
/// item picks its shard may differ: a query reads every shard.
#[doc(hidden)]
pub const fn same_partition_layout(a: &PartitionKeySchema, b: &PartitionKeySchema) -> bool {
    str_eq(a.attribute, b.attribute)
        && same_template_shape(a.template, b.template)
        && shard_count(a.sharding) == shard_count(b.sharding)
        && same_suffix(&a.suffix, &b.suffix)
        && same_previous(a.previous, b.previous)
        && same_per_key(a.per_key, b.per_key)
}

/// Whether two partition keys are both per-key with the same maximum, or neither is.
#[doc(hidden)]
pub const fn same_per_key(a: Option<PerKeyLayout>, b: Option<PerKeyLayout>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.max_n == b.max_n,
        _ => false,
    }
}

/// Whether two suffixes spell shards alike.
#[doc(hidden)]
pub const fn same_suffix(a: &ShardSuffix, b: &ShardSuffix) -> bool {
    str_eq(a.literal, b.literal) && a.width == b.width
}

/// Whether two transitions read the same previous partitions.
#[doc(hidden)]
pub const fn same_previous(a: Option<PreviousLayout>, b: Option<PreviousLayout>) -> bool {
    match (a, b) {
        (None, None) => true,
        (
            Some(PreviousLayout::Shards {
                n: x,
                suffix: xs,
                placement: xp,
            }),
            Some(PreviousLayout::Shards {
                n: y,
                suffix: ys,
                placement: yp,
            }),
        ) => {
            let same_spelling = match (xs, ys) {
                (None, None) => true,
                (Some(a), Some(b)) => same_suffix(&a, &b),
                _ => false,
            };
            x == y && same_spelling && xp as u8 == yp as u8
        }
        (
            Some(PreviousLayout::Legacy { template: x }),
            Some(PreviousLayout::Legacy { template: y }),
        ) => same_template_shape(x, y),
        _ => false,
    }
}

/// Whether two templates have the same literals and fields at the same places (a time
/// bucket only where the other has a bucket of the same granularity).
#[doc(hidden)]
pub const fn same_template_shape(a: &KeyTemplate, b: &KeyTemplate) -> bool {
    let (a, b) = (a.segments, b.segments);
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        match (&a[i], &b[i]) {
            (Segment::Literal(x), Segment::Literal(y)) if str_eq(x, y) => {}
            (Segment::Field(_), Segment::Field(_)) => {}
            (Segment::Bucket { granularity: x, .. }, Segment::Bucket { granularity: y, .. })
                if str_eq(x.name(), y.name()) => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// [`Sharding::shard_count`] as a `const fn`: 0 when unsharded.
#[doc(hidden)]
pub const fn shard_count(sharding: Sharding) -> u32 {
    match sharding {
        Sharding::None => 0,
        Sharding::Hash { n, .. } | Sharding::Random { n } | Sharding::Identity { n } => n,
    }
}

/// A sort key: attribute name and template.
///
/// ```
/// use sharded::schema::{KeyTemplate, Segment, SortKeySchema};
/// static T: KeyTemplate = KeyTemplate::new("META", &[Segment::literal("META")]);
/// let sk = SortKeySchema::new("sk", &T);
/// assert_eq!(sk.attribute, "sk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SortKeySchema {
    /// The DynamoDB attribute holding the key.
    pub attribute: &'static str,
    /// The template.
    pub template: &'static KeyTemplate,
}

impl SortKeySchema {
    /// The key held in `attribute`, built from `template`.
    pub const fn new(attribute: &'static str, template: &'static KeyTemplate) -> Self {
        SortKeySchema {
            attribute,
            template,
        }
    }

    /// Refuses a `value` of this key over [`MAX_SORT_KEY_BYTES`], naming `entity` and the
    /// attribute.
    ///
    /// ```
    /// use sharded::schema::{KeyTemplate, Segment, SortKeySchema};
    /// static T: KeyTemplate = KeyTemplate::new("{at}", &[Segment::field("at")]);
    /// let sk = SortKeySchema::new("sk", &T);
    /// assert!(sk.check_size("Event", &"x".repeat(1024)).is_ok());
    /// assert!(sk.check_size("Event", &"x".repeat(1025)).is_err());
    /// ```
    pub fn check_size(&self, entity: &'static str, value: &str) -> Result<(), KeyError> {
        check_key_size(entity, self.attribute, value, MAX_SORT_KEY_BYTES)
    }
}

/// DynamoDB's most attributes in a multi-attribute key's partition (the shard attribute
/// counted) and, apart, in its sort: four each.
///
/// ```
/// assert_eq!(sharded::schema::MAX_KEY_ATTRIBUTES, 4);
/// ```
pub const MAX_KEY_ATTRIBUTES: usize = max_key_attributes!();

/// How DynamoDB stores and compares a key attribute.
///
/// ```
/// use sharded::schema::ScalarType;
/// assert_eq!(ScalarType::N.code(), "N");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScalarType {
    /// A string, compared by its UTF-8 bytes.
    S,
    /// A number, compared by value.
    N,
}

impl ScalarType {
    /// DynamoDB's code for the type (`S`, `N`).
    pub const fn code(self) -> &'static str {
        match self {
            ScalarType::S => "S",
            ScalarType::N => "N",
        }
    }
}

/// One attribute of a multi-attribute key: its name and type.
///
/// ```
/// use sharded::schema::{KeyAttributeSchema, ScalarType};
/// let a = KeyAttributeSchema::new("score", ScalarType::N);
/// assert_eq!((a.name, a.kind), ("score", ScalarType::N));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct KeyAttributeSchema {
    /// The attribute's name (the field's serde name).
    pub name: &'static str,
    /// Its type.
    pub kind: ScalarType,
}

impl KeyAttributeSchema {
    /// Attribute `name` of type `kind`.
    pub const fn new(name: &'static str, kind: ScalarType) -> Self {
        KeyAttributeSchema { name, kind }
    }
}

/// The key of an index keyed by the item's own attributes (`#[gsiN(pk = [..], sk = [..],
/// shard = n)]`): DynamoDB's multi-attribute keys. The partition is the `partition`
/// attributes and the shard, a number attribute the runtime writes; the sort is the `sort`
/// attributes, in order.
///
/// ```
/// use sharded::schema::{AttributeKeySchema, KeyAttributeSchema, ScalarType};
/// static PK: [KeyAttributeSchema; 1] = [KeyAttributeSchema::new("game_id", ScalarType::S)];
/// static SK: [KeyAttributeSchema; 2] = [
///     KeyAttributeSchema::new("score", ScalarType::N),
///     KeyAttributeSchema::new("player_id", ScalarType::S),
/// ];
/// let key = AttributeKeySchema::new(&PK, "gsi2_shard", &SK);
/// assert_eq!(key.partition_attributes().count(), 2);
/// assert_eq!(key.describe(), "[game_id (S), gsi2_shard (N)] / [score (N), player_id (S)]");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct AttributeKeySchema {
    /// The partition attributes, without the shard.
    pub partition: &'static [KeyAttributeSchema],
    /// The number attribute holding the item's shard.
    pub shard_attribute: &'static str,
    /// The sort attributes, in order (possibly none).
    pub sort: &'static [KeyAttributeSchema],
}

impl AttributeKeySchema {
    /// A key of the `partition` attributes and the shard in `shard_attribute`, sorted by
    /// `sort`.
    pub const fn new(
        partition: &'static [KeyAttributeSchema],
        shard_attribute: &'static str,
        sort: &'static [KeyAttributeSchema],
    ) -> Self {
        AttributeKeySchema {
            partition,
            shard_attribute,
            sort,
        }
    }

    /// Every partition attribute, the shard last: the `HASH` elements of the key schema.
    pub fn partition_attributes(&self) -> impl Iterator<Item = KeyAttributeSchema> + '_ {
        self.partition
            .iter()
            .copied()
            .chain([KeyAttributeSchema::new(self.shard_attribute, ScalarType::N)])
    }

    /// The key as `[partition attributes] / [sort attributes]`, with types, for messages.
    pub fn describe(&self) -> String {
        let list = |attributes: &mut dyn Iterator<Item = KeyAttributeSchema>| {
            attributes
                .map(|a| format!("{} ({})", a.name, a.kind.code()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "[{}] / [{}]",
            list(&mut self.partition_attributes()),
            list(&mut self.sort.iter().copied())
        )
    }
}

/// A global secondary index written by the entity.
///
/// ```
/// use sharded::schema::{GsiSchema, KeyTemplate, PartitionKeySchema, Segment, Sharding};
/// static T: KeyTemplate = KeyTemplate::new(
///     "PLAYER#{player_id}",
///     &[Segment::literal("PLAYER#"), Segment::field("player_id")],
/// );
/// let gsi = GsiSchema::new(1, "gsi1", PartitionKeySchema::new("gsi1pk", &T, Sharding::identity(4)), None);
/// assert_eq!(gsi.index_name, "gsi1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GsiSchema {
    /// `1` for `#[gsi1(...)]`.
    pub number: u8,
    /// The index name in DynamoDB.
    pub index_name: &'static str,
    /// The index partition key.
    pub pk: PartitionKeySchema,
    /// The index sort key, if any.
    pub sk: Option<SortKeySchema>,
    /// The key of an index keyed by the item's own attributes (`pk = [..]`), if it is one.
    /// Then `pk.attribute` is the shard attribute, `pk.sharding` the shard count, `pk.template`
    /// the logical key as shown in messages (`game_id={game_id}`), and `sk` is `None`.
    pub attributes: Option<AttributeKeySchema>,
}

impl GsiSchema {
    /// Index `number` (`1` for `#[gsi1]`), named `index_name` in DynamoDB.
    pub const fn new(
        number: u8,
        index_name: &'static str,
        pk: PartitionKeySchema,
        sk: Option<SortKeySchema>,
    ) -> Self {
        GsiSchema {
            number,
            index_name,
            pk,
            sk,
            attributes: None,
        }
    }

    /// The same index keyed by the item's own attributes.
    ///
    /// ```
    /// use sharded::schema::*;
    /// static T: KeyTemplate = KeyTemplate::new("game_id={game_id}", &[Segment::literal("game_id="), Segment::field("game_id")]);
    /// static PK: [KeyAttributeSchema; 1] = [KeyAttributeSchema::new("game_id", ScalarType::S)];
    /// let gsi = GsiSchema::new(2, "gsi2", PartitionKeySchema::new("gsi2_shard", &T, Sharding::identity(8)), None)
    ///     .with_attributes(AttributeKeySchema::new(&PK, "gsi2_shard", &[]));
    /// assert!(gsi.attributes.is_some());
    /// ```
    pub const fn with_attributes(mut self, attributes: AttributeKeySchema) -> Self {
        self.attributes = Some(attributes);
        self
    }
}

/// Everything the derive knows about an entity's keys.
///
/// Generated as a `static` per entity and reachable as `<Entity as ShardedEntity>::SCHEMA`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use sharded::ShardedEntity;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[sharded(table = "app")]
/// #[pk(template = "ORG#{org}", shard = "hash(id)", n = 4)]
/// struct User { org: String, id: String }
///
/// let schema = <User as ShardedEntity>::SCHEMA;
/// assert_eq!((schema.entity, schema.table), ("User", Some("app")));
/// assert_eq!(schema.pk.sharding.shard_count(), Some(4));
/// assert_eq!(User::table_definition().partition_key, "pk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntitySchema {
    /// The entity name written into [`ENTITY_ATTRIBUTE`].
    pub entity: &'static str,
    /// The default table, from `#[sharded(table = "...")]`.
    pub table: Option<&'static str>,
    /// The base table partition key.
    pub pk: PartitionKeySchema,
    /// The base table sort key.
    pub sk: Option<SortKeySchema>,
    /// The GSIs, in the order of their numbers.
    pub gsis: &'static [GsiSchema],
    /// The `#[sharded(version)]` attribute: optimistic locking.
    pub version: Option<&'static str>,
    /// The `#[sharded(ttl)]` attribute: DynamoDB's time to live, in epoch seconds.
    pub ttl: Option<&'static str>,
    /// The `#[sharded(created_at)]` attribute, set by a write that creates the item.
    pub created_at: Option<TimeAttribute>,
    /// The `#[sharded(updated_at)]` attribute, set by every write.
    pub updated_at: Option<TimeAttribute>,
    /// The table the entity lives in (`#[sharded(table = Type)]`): its names and how its
    /// items say which entity they are. [`TableSchema::DEFAULT`] unless declared.
    pub table_schema: &'static TableSchema,
}

/// An attribute holding a time the runtime writes (`created_at`, `updated_at`).
///
/// ```
/// use sharded::schema::{TimeAttribute, TimeFormat};
/// let t = TimeAttribute::new("updatedAt", TimeFormat::Rfc3339);
/// assert_eq!(t.attribute, "updatedAt");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeAttribute {
    /// The stored attribute.
    pub attribute: &'static str,
    /// How the time is stored.
    pub format: TimeFormat,
}

impl TimeAttribute {
    /// The time in `attribute`, stored as `format`.
    pub const fn new(attribute: &'static str, format: TimeFormat) -> Self {
        TimeAttribute { attribute, format }
    }
}

/// How a time attribute is stored.
///
/// ```
/// # use sharded::schema::TimeFormat;
/// assert_ne!(TimeFormat::EpochSeconds, TimeFormat::Rfc3339);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeFormat {
    /// A number of seconds since 1970-01-01T00:00:00Z (an integer field).
    EpochSeconds,
    /// RFC 3339 text in UTC, as serde stores a `chrono::DateTime<Utc>`.
    Rfc3339,
}

impl EntitySchema {
    /// Entity `entity` (the value of [`ENTITY_ATTRIBUTE`]) with these keys.
    pub const fn new(
        entity: &'static str,
        table: Option<&'static str>,
        pk: PartitionKeySchema,
        sk: Option<SortKeySchema>,
        gsis: &'static [GsiSchema],
    ) -> Self {
        EntitySchema {
            entity,
            table,
            pk,
            sk,
            gsis,
            version: None,
            ttl: None,
            created_at: None,
            updated_at: None,
            table_schema: &TableSchema::DEFAULT,
        }
    }

    /// The same schema in the table `table` declares (`#[sharded(table = Type)]`): its
    /// default table name, unless the entity names one, and its recognition.
    pub const fn in_table(mut self, table: &'static TableSchema) -> Self {
        self.table_schema = table;
        if self.table.is_none() {
            self.table = table.table;
        }
        self
    }

    /// The tag attribute items of this entity carry, if its table has one.
    pub const fn tag_attribute(&self) -> Option<&'static str> {
        self.table_schema.recognition.tag_attribute()
    }

    /// The attribute that marks the writes of a layout move in this entity's table (see
    /// [`TableSchema::move_attribute`]).
    pub const fn move_attribute(&self) -> &'static str {
        self.table_schema.move_attribute
    }

    /// The same schema with a `#[sharded(version)]` attribute.
    pub const fn with_version(mut self, attribute: &'static str) -> Self {
        self.version = Some(attribute);
        self
    }

    /// The same schema with a `#[sharded(ttl)]` attribute.
    pub const fn with_ttl(mut self, attribute: &'static str) -> Self {
        self.ttl = Some(attribute);
        self
    }

    /// The same schema with a `#[sharded(created_at)]` attribute.
    pub const fn with_created_at(mut self, time: TimeAttribute) -> Self {
        self.created_at = Some(time);
        self
    }

    /// The same schema with a `#[sharded(updated_at)]` attribute.
    pub const fn with_updated_at(mut self, time: TimeAttribute) -> Self {
        self.updated_at = Some(time);
        self
    }

    /// The table this entity needs (key schema and GSIs).
    pub fn table_definition(&self) -> TableDefinition {
        TableDefinition {
            entities: vec![*self],
            schema: self.table_schema,
            partition_key: self.pk.attribute,
            sort_key: self.sk.map(|s| s.attribute),
            indexes: self
                .gsis
                .iter()
                .map(|g| IndexDefinition {
                    name: g.index_name,
                    partition_key: g.pk.attribute,
                    sort_key: g.sk.map(|s| s.attribute),
                    attributes: g.attributes,
                })
                .collect(),
        }
    }

    /// A physical key, as `(partition key, sort key)`, that this entity and `other` can both
    /// write, or `None` when their templates cannot produce the same key. Two such entities in
    /// one table overwrite each other's items; [`TableDefinition::merge`] refuses them.
    ///
    /// The key is a shortest one, built with stand-in field values. The answer assumes a
    /// field can hold any non-empty text without `#` and without bytes below `$` (what a
    /// `String` field can hold; see [`KeyPart`](crate::KeyPart)), and a shard suffix any
    /// shard number below `n`. It is exact under that assumption, and errs on the side of
    /// reporting: templates that could meet only through a value a field's type never
    /// writes (a number field spelling `LATEST`) are reported too. Only the base table's keys
    /// are compared: index keys are not unique, so sharing them overwrites nothing. Entities
    /// keyed by other attributes cannot share a table and get `None`.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use sharded::ShardedEntity;
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "ORG#{org}", shard = "hash(id)", n = 4)]
    /// #[sk(template = "MEMBER#{id}")]
    /// struct Member { org: String, id: String }
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "ORG#{org}#{team}")]
    /// #[sk(template = "MEMBER#{id}")]
    /// struct TeamMember { org: String, team: String, id: String }
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "TEAM#{org}#{team}")]
    /// #[sk(template = "MEMBER#{id}")]
    /// struct Teammate { org: String, team: String, id: String }
    ///
    /// // Team "0" of org "a" is shard 0 of org "a".
    /// let shared = Member::SCHEMA.colliding_key(TeamMember::SCHEMA);
    /// assert_eq!(shared, Some(("ORG#a#0".to_string(), Some("MEMBER#a".to_string()))));
    /// // A distinct literal prefix keeps them apart.
    /// assert_eq!(Member::SCHEMA.colliding_key(Teammate::SCHEMA), None);
    /// ```
    pub fn colliding_key(&self, other: &EntitySchema) -> Option<(String, Option<String>)> {
        if self.pk.attribute != other.pk.attribute
            || self.sk.map(|s| s.attribute) != other.sk.map(|s| s.attribute)
        {
            return None;
        }
        let shards = |pk: &PartitionKeySchema| pk.sharding.shard_count().map(|n| (n, pk.suffix));
        let pk = shared_key(
            self.pk.template,
            shards(&self.pk),
            other.pk.template,
            shards(&other.pk),
        )?;
        // Partition and sort keys are compared apart, though they may share fields (and the
        // shard may hash a field of the sort key): values that meet in both exist whenever
        // the fields involved are distinct, and a shared field only narrows which values do.
        // Comparing them apart can only report more, never miss a collision.
        let sk = match (self.sk, other.sk) {
            (Some(a), Some(b)) => Some(shared_key(a.template, None, b.template, None)?),
            _ => None,
        };
        Some((pk, sk))
    }

    /// The GSI with the given number (`1` for `gsi1`).
    ///
    /// ```
    /// # use sharded::schema::*;
    /// # static T: KeyTemplate = KeyTemplate::new("A", &[Segment::literal("A")]);
    /// # static S: EntitySchema = EntitySchema::new("A", None,
    /// #   PartitionKeySchema::new("pk", &T, Sharding::random(2)), None, &[]);
    /// assert!(S.gsi(1).is_none());
    /// ```
    pub fn gsi(&self, number: u8) -> Option<&'static GsiSchema> {
        self.gsis.iter().find(|g| g.number == number)
    }
}

/// A table's keys and indexes, all string-typed, ready for `CreateTable`.
///
/// Several entities share one table in a single-table design: [`TableDefinition::merge`]
/// combines their definitions and refuses ones that disagree, or whose keys can collide.
///
/// ```no_run
/// use sharded::schema::CreateTable; // the request is the runtime's: an AWS type
/// # async fn demo(client: sharded::aws_sdk_dynamodb::Client, def: sharded::schema::TableDefinition) -> Result<(), Box<dyn std::error::Error>> {
/// def.create_table(&client, "leaderboard").send().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableDefinition {
    /// The partition key attribute.
    pub partition_key: &'static str,
    /// The sort key attribute, if any.
    pub sort_key: Option<&'static str>,
    /// The GSIs.
    pub indexes: Vec<IndexDefinition>,
    /// The table's names and how its items are recognised (the entities' table, or
    /// [`TableSchema::DEFAULT`]): what a counter in the table tags its items with, if anything.
    pub schema: &'static TableSchema,
    /// The entities merged into this definition, for the collision check of `merge`.
    entities: Vec<EntitySchema>,
}

/// One GSI of a [`TableDefinition`].
///
/// ```
/// let i = sharded::schema::IndexDefinition::new("gsi1", "gsi1pk", None);
/// assert_eq!(i.name, "gsi1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexDefinition {
    /// The index name.
    pub name: &'static str,
    /// Its partition key attribute.
    pub partition_key: &'static str,
    /// Its sort key attribute, if any.
    pub sort_key: Option<&'static str>,
    /// The key of an index keyed by the item's own attributes: then `partition_key` is the
    /// shard attribute and `sort_key` is `None`, and `CreateTable` names every attribute of
    /// this key, typed.
    pub attributes: Option<AttributeKeySchema>,
}

impl IndexDefinition {
    /// Index `name` keyed by `partition_key` and `sort_key`.
    pub fn new(
        name: &'static str,
        partition_key: &'static str,
        sort_key: Option<&'static str>,
    ) -> Self {
        IndexDefinition {
            name,
            partition_key,
            sort_key,
            attributes: None,
        }
    }

    /// Every key attribute of the index with its type and whether it is a partition
    /// (`HASH`) attribute, in key-schema order: one string attribute each for a string key.
    ///
    /// ```
    /// let i = sharded::schema::IndexDefinition::new("gsi1", "gsi1pk", Some("gsi1sk"));
    /// let names: Vec<_> = i.key_attributes().map(|(a, hash)| (a.name, hash)).collect();
    /// assert_eq!(names, [("gsi1pk", true), ("gsi1sk", false)]);
    /// ```
    pub fn key_attributes(&self) -> Box<dyn Iterator<Item = (KeyAttributeSchema, bool)> + '_> {
        match &self.attributes {
            Some(key) => Box::new(
                key.partition_attributes()
                    .map(|a| (a, true))
                    .chain(key.sort.iter().map(|a| (*a, false))),
            ),
            None => Box::new(
                std::iter::once((
                    KeyAttributeSchema::new(self.partition_key, ScalarType::S),
                    true,
                ))
                .chain(
                    self.sort_key
                        .map(|s| (KeyAttributeSchema::new(s, ScalarType::S), false)),
                ),
            ),
        }
    }
}

/// Two entities disagree about a table's keys, so they cannot share it.
///
/// ```
/// use sharded::schema::TableDefinition;
/// let a = TableDefinition::new("pk", Some("sk"));
/// let b = TableDefinition::new("pk", None);
/// assert!(a.merge(&b).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entities cannot share a table: {0}")]
pub struct TableConflict(pub String);

impl TableDefinition {
    /// A table keyed by `partition_key` and `sort_key`, with no indexes yet.
    pub fn new(partition_key: &'static str, sort_key: Option<&'static str>) -> Self {
        TableDefinition {
            partition_key,
            sort_key,
            indexes: Vec::new(),
            schema: &TableSchema::DEFAULT,
            entities: Vec::new(),
        }
    }

    /// The table `T` declares (`#[derive(ShardedTable)]`): its key names (a sort key, as
    /// declared), the indexes it names, and its recognition. What a counter of a table that
    /// holds no entity is built from.
    ///
    /// ```
    /// use sharded::{schema::TableDefinition, ShardedTable};
    ///
    /// #[derive(ShardedTable)]
    /// #[table(pk = "PK", sk = "SK", recognize = "key")]
    /// struct ElectionData;
    ///
    /// let def = TableDefinition::of::<ElectionData>();
    /// assert_eq!((def.partition_key, def.sort_key), ("PK", Some("SK")));
    /// assert_eq!(def.schema.recognition.tag_attribute(), None);
    /// ```
    pub fn of<T: ShardedTable>() -> Self {
        let schema = T::SCHEMA;
        TableDefinition {
            partition_key: schema.partition_key,
            sort_key: Some(schema.sort_key),
            indexes: schema
                .indexes
                .iter()
                .map(|i| IndexDefinition::new(i.index, i.partition_key, Some(i.sort_key)))
                .collect(),
            schema,
            entities: Vec::new(),
        }
    }

    /// The same table with one more index.
    ///
    /// ```
    /// use sharded::schema::{IndexDefinition, TableDefinition};
    /// let t = TableDefinition::new("pk", Some("sk")).with_index(IndexDefinition::new("gsi1", "gsi1pk", None));
    /// assert_eq!(t.indexes.len(), 1);
    /// ```
    pub fn with_index(mut self, index: IndexDefinition) -> Self {
        self.indexes.push(index);
        self
    }

    /// The entities this definition was made for: the one of
    /// [`EntitySchema::table_definition`], and every one merged in since.
    ///
    /// ```
    /// let t = sharded::schema::TableDefinition::new("pk", None);
    /// assert!(t.entities().is_empty());
    /// ```
    pub fn entities(&self) -> &[EntitySchema] {
        &self.entities
    }

    /// The union of two definitions, or why they cannot share a table: their keys are
    /// named differently, an index is keyed differently, or two of their entities can write
    /// the same physical key (see [`EntitySchema::colliding_key`]). Such entities would
    /// overwrite each other's items; `Repo::put` refuses those writes at run time, this
    /// refuses the layout before there is data.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use sharded::ShardedEntity;
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "ORG#{org}", shard = "hash(id)", n = 4)]
    /// #[sk(template = "{id}")]
    /// struct Member { org: String, id: String }
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "ORG#{org}#{team}")]
    /// #[sk(template = "{id}")]
    /// struct TeamMember { org: String, team: String, id: String }
    ///
    /// #[derive(ShardedEntity, Serialize, Deserialize)]
    /// #[pk(template = "ORG#{org}")]
    /// #[sk(template = "PROFILE")]
    /// struct Org { org: String }
    ///
    /// let conflict = Member::table_definition().merge(&TeamMember::table_definition()).unwrap_err();
    /// assert!(conflict.to_string().contains("pk=ORG#a#0"));
    /// // Unsharded `ORG#{org}` never has a second `#`: Org shares no key with either.
    /// let table = Org::table_definition().merge(&TeamMember::table_definition())?;
    /// assert_eq!(table.entities().len(), 2);
    /// # Ok::<(), sharded::schema::TableConflict>(())
    /// ```
    pub fn merge(&self, other: &TableDefinition) -> Result<TableDefinition, TableConflict> {
        if self.partition_key != other.partition_key || self.sort_key != other.sort_key {
            return Err(TableConflict(format!(
                "base keys ({}, {:?}) and ({}, {:?}) differ",
                self.partition_key, self.sort_key, other.partition_key, other.sort_key
            )));
        }
        if !self.schema.same_as(other.schema) {
            return Err(TableConflict(format!(
                "the tables `{}` and `{}` are declared differently (key or index names, or how \
                 items say which entity they are): every entity of one table names the same \
                 `#[derive(ShardedTable)]` type",
                self.schema.declared_by, other.schema.declared_by
            )));
        }
        let mut indexes = self.indexes.clone();
        for index in &other.indexes {
            match indexes.iter().find(|i| i.name == index.name) {
                Some(existing) if existing != index => {
                    return Err(TableConflict(format!(
                        "index `{}` is keyed differently: {existing:?} vs {index:?}",
                        index.name
                    )))
                }
                Some(_) => {}
                None => indexes.push(index.clone()),
            }
        }
        let mut entities = self.entities.clone();
        for entity in &other.entities {
            // One entity name is one entity (two structs may write it, as a projection or
            // a migration does): only distinct names can overwrite each other's items.
            if entities.iter().any(|e| e.entity == entity.entity) {
                continue;
            }
            for existing in &entities {
                if let Some(key) = existing.colliding_key(entity) {
                    return Err(TableConflict(collision_message(existing, entity, key)));
                }
            }
            entities.push(*entity);
        }
        Ok(TableDefinition {
            partition_key: self.partition_key,
            sort_key: self.sort_key,
            indexes,
            schema: self.schema,
            entities,
        })
    }
}

/// Why `a` and `b` cannot share a table: the key both can write, their templates, the fix.
fn collision_message(a: &EntitySchema, b: &EntitySchema, key: (String, Option<String>)) -> String {
    let (pk, sk) = key;
    let templates = |e: &EntitySchema| match e.sk {
        Some(sk) => format!("`{}` / `{}`", e.pk.physical_form(), sk.template.source),
        None => format!("`{}`", e.pk.physical_form()),
    };
    let key = match sk {
        Some(sk) => format!("(pk={pk}, sk={sk})"),
        None => format!("(pk={pk})"),
    };
    format!(
        "{} ({}) and {} ({}) can both write the key {key}, and one would overwrite the other's \
         item: give each entity's templates a distinct literal prefix (e.g. `{}#` and `{}#`) so \
         that no field value can make their keys equal",
        a.entity,
        templates(a),
        b.entity,
        templates(b),
        a.entity.to_uppercase(),
        b.entity.to_uppercase()
    )
}
