//! The table an entity lives in, as data: its key attribute names, its index names, and how
//! an item says which entity it is. Declared once per table (`#[derive(ShardedTable)]`) and
//! read by every operation of every entity, counter, collection and migration in it, as
//! serde's `rename_all` is read by every field.
//!
//! A team that adopts `sharded` already has a table: keyed `PK`/`SK`, indexed by `GSI1` over
//! `GSI1PK`/`GSI1SK`, its items tagged by another library (`__edb_e__`, `_et`, `_type`) or not
//! at all. [`TableSchema`] names all of that; [`TableSchema::DEFAULT`] is what `sharded` uses
//! when an entity names no table (`pk`, `sk`, `gsiN`/`gsiNpk`/`gsiNsk`, the tag `_entity`).

use crate::const_str::str_eq;

/// The attribute that records which entity an item is, so a query over a shared partition
/// never reads one entity's item as another's: the tag of a table that declares none
/// (a [`TableSchema`] may rename it, or do without one).
pub const ENTITY_ATTRIBUTE: &str = "_entity";

/// The attribute that marks the writes of a layout move, so that one stream record says
/// whether it is part of a move (see [`TableSchema::move_attribute`]): the name a table uses
/// unless it declares another.
pub const MOVE_ATTRIBUTE: &str = "_sharded_move";

/// The marker of a move's new copy at its item's current place ([`TableSchema::move_attribute`]).
pub const MOVE_COPY: &str = "copy";

/// The marker of an item written at its current place that supersedes its copy at a previous
/// place ([`TableSchema::move_attribute`]).
pub const MOVE_REPLACE: &str = "replace";

/// The marker of an old copy at a previous place, set before it is deleted because its item
/// lives at its current place ([`TableSchema::move_attribute`]).
pub const MOVE_MOVED: &str = "moved";

/// How an item of the table says which entity it is.
///
/// ```
/// use sharded::schema::{Recognition, TableSchema};
/// assert_eq!(TableSchema::DEFAULT.recognition, Recognition::Tag { attribute: "_entity" });
/// assert_eq!(Recognition::Key.tag_attribute(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Recognition {
    /// `tag = ".."` (`_entity` unless renamed): every item carries its entity's name in this
    /// attribute, and only items that do are the entity's. An untagged item in the entity's
    /// partitions is another service's record: skipped by reads and reported, never
    /// overwritten.
    Tag {
        /// The tag attribute.
        attribute: &'static str,
    },
    /// `recognize = "tag_or_key"`: the tag is written, and an item without it is the
    /// entity's when its keys are (they parse as the entity's templates, in canonical form,
    /// and the item reads as the entity with the same keys): for a table where other services
    /// write untagged items of the same shape.
    TagOrKey {
        /// The tag attribute.
        attribute: &'static str,
    },
    /// `recognize = "key"`: no tag is written or read; an item is the entity's when its keys
    /// are (as above). Two entities whose keys could be equal are refused when their tables
    /// are merged, so the key alone decides.
    Key,
}

impl Recognition {
    /// Items carry their entity's name in `attribute`, and only such items are the entity's
    /// (`recognize = "tag"`, the default).
    pub const fn tag(attribute: &'static str) -> Recognition {
        Recognition::Tag { attribute }
    }

    /// The tag is written into `attribute`, and an untagged item is the entity's when its keys
    /// are (`recognize = "tag_or_key"`).
    pub const fn tag_or_key(attribute: &'static str) -> Recognition {
        Recognition::TagOrKey { attribute }
    }

    /// The tag attribute written into every item, if the table has one.
    pub const fn tag_attribute(&self) -> Option<&'static str> {
        match *self {
            Recognition::Tag { attribute } | Recognition::TagOrKey { attribute } => Some(attribute),
            Recognition::Key => None,
        }
    }

    /// Whether an item without the tag may still be the entity's, by its keys.
    pub const fn reads_untagged(&self) -> bool {
        !matches!(self, Recognition::Tag { .. })
    }
}

/// The names of one global secondary index of a table: the index, and its key attributes
/// for an index keyed by strings (`#[gsiN(pk = "..", sk = "..")]` on an entity).
///
/// ```
/// use sharded::schema::IndexNames;
/// let gsi1 = IndexNames::new(1, "GSI1", "GSI1PK", "GSI1SK");
/// assert_eq!(gsi1.index, "GSI1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct IndexNames {
    /// `1` for `gsi1`.
    pub number: u8,
    /// The index name in DynamoDB.
    pub index: &'static str,
    /// Its partition key attribute.
    pub partition_key: &'static str,
    /// Its sort key attribute.
    pub sort_key: &'static str,
}

impl IndexNames {
    /// Index `number`, named `index`, keyed by `partition_key` and `sort_key`.
    pub const fn new(
        number: u8,
        index: &'static str,
        partition_key: &'static str,
        sort_key: &'static str,
    ) -> Self {
        IndexNames {
            number,
            index,
            partition_key,
            sort_key,
        }
    }
}

/// Names `gsiN`, `gsiNpk`, `gsiNsk` for N in 1..=20: what an index is called when its table
/// does not name it.
macro_rules! default_indexes {
    ($($n:literal)*) => {
        [$(IndexNames {
            number: $n,
            index: concat!("gsi", $n),
            partition_key: concat!("gsi", $n, "pk"),
            sort_key: concat!("gsi", $n, "sk"),
        }),*]
    };
}

/// The names of indexes 1 to 20 in a table that does not name them.
const DEFAULT_INDEXES: [IndexNames; 20] =
    default_indexes!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20);

/// A table as data: what `#[derive(ShardedTable)]` declares, and every entity of the table
/// reads (`#[sharded(table = Leaderboards)]`).
///
/// ```
/// use sharded::schema::{IndexNames, Recognition, TableSchema};
/// static GSIS: [IndexNames; 1] = [IndexNames::new(1, "GSI1", "GSI1PK", "GSI1SK")];
/// static ELECTION: TableSchema = TableSchema::new("ElectionData", "PK", "SK")
///     .with_recognition(Recognition::Key)
///     .with_indexes(&GSIS);
/// assert_eq!(ELECTION.index(1).partition_key, "GSI1PK");
/// assert_eq!(ELECTION.index(2).index, "gsi2", "an index the table does not name");
/// assert_eq!(ELECTION.recognition.tag_attribute(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TableSchema {
    /// The declaring type's name (`Leaderboards`), for messages; `DefaultTable` for the
    /// default.
    pub declared_by: &'static str,
    /// The table's name in DynamoDB, when declared (`name = ".."`): the default table of its
    /// entities.
    pub table: Option<&'static str>,
    /// The partition key attribute.
    pub partition_key: &'static str,
    /// The sort key attribute (used by entities with a sort key).
    pub sort_key: &'static str,
    /// How an item says which entity it is.
    pub recognition: Recognition,
    /// The indexes the table names; the others are `gsiN` over `gsiNpk`/`gsiNsk`.
    pub indexes: &'static [IndexNames],
    /// The attribute that marks the writes of a layout move ([`MOVE_ATTRIBUTE`],
    /// `_sharded_move`, unless renamed), whatever the table's [`Recognition`] (items of a
    /// table recognised by their keys carry it too), so that a DynamoDB stream consumer can
    /// tell from one record alone whether it is part of a move:
    ///
    /// | value (a string) | on | a stream record that carries it |
    /// |---|---|---|
    /// | `"copy"` ([`MOVE_COPY`]) | the new copy a move writes at the item's current place; otherwise the old copy's content | an `INSERT` whose new image has it is a move's arrival, not a new item |
    /// | `"replace"` ([`MOVE_REPLACE`]) | an item written at its current place that supersedes its copy at a previous place | an `INSERT` whose new image has it changes an item that existed (its old image is not in the record) |
    /// | `"moved"` ([`MOVE_MOVED`]) | an old copy at a previous place, set just before it is deleted because its item lives at its current place | a `MODIFY` whose new image has it and old image has not is a move's mark; a `REMOVE` whose old image has it is a move's departure |
    ///
    /// A `REMOVE` without `"moved"` is a real delete, wherever it is: a delete during a
    /// transition removes the item at both places unmarked. The marker stays on an item until
    /// a put replaces it (an update keeps it); entities do not read it (serde skips an
    /// attribute the struct does not name, and the repository removes it before decoding).
    pub move_attribute: &'static str,
}

impl TableSchema {
    /// The table of an entity that names none: `pk`, `sk`, `gsiN` over `gsiNpk`/`gsiNsk`,
    /// items tagged in `_entity`.
    pub const DEFAULT: TableSchema = TableSchema {
        declared_by: "DefaultTable",
        table: None,
        partition_key: "pk",
        sort_key: "sk",
        recognition: Recognition::Tag {
            attribute: ENTITY_ATTRIBUTE,
        },
        indexes: &[],
        move_attribute: MOVE_ATTRIBUTE,
    };

    /// A table declared by `declared_by`, keyed by `partition_key` and `sort_key`, tagged in
    /// `_entity`, its indexes named `gsiN`.
    pub const fn new(
        declared_by: &'static str,
        partition_key: &'static str,
        sort_key: &'static str,
    ) -> Self {
        TableSchema {
            declared_by,
            partition_key,
            sort_key,
            ..TableSchema::DEFAULT
        }
    }

    /// The same table, named `table` in DynamoDB.
    pub const fn with_table(mut self, table: &'static str) -> Self {
        self.table = Some(table);
        self
    }

    /// The same table, its items recognised by `recognition`.
    pub const fn with_recognition(mut self, recognition: Recognition) -> Self {
        self.recognition = recognition;
        self
    }

    /// The same table with these index names.
    pub const fn with_indexes(mut self, indexes: &'static [IndexNames]) -> Self {
        self.indexes = indexes;
        self
    }

    /// The same table, its moves marked in `attribute` (see
    /// [`move_attribute`](Self::move_attribute)).
    ///
    /// ```
    /// use sharded::schema::TableSchema;
    /// static T: TableSchema = TableSchema::new("T", "PK", "SK").with_move_attribute("_mv");
    /// assert_eq!(T.move_attribute, "_mv");
    /// assert_eq!(TableSchema::DEFAULT.move_attribute, "_sharded_move");
    /// ```
    pub const fn with_move_attribute(mut self, attribute: &'static str) -> Self {
        self.move_attribute = attribute;
        self
    }

    /// The names of index `number`: declared, or `gsiN` over `gsiNpk`/`gsiNsk`.
    ///
    /// Index numbers run from 1 to 20 (DynamoDB's limit); the derive refuses others.
    pub const fn index(&self, number: u8) -> IndexNames {
        let mut i = 0;
        while i < self.indexes.len() {
            if self.indexes[i].number == number {
                return self.indexes[i];
            }
            i += 1;
        }
        let at = if number == 0 || number > 20 {
            0
        } else {
            number as usize - 1
        };
        DEFAULT_INDEXES[at]
    }

    /// Whether the table declares index `number` (by name).
    pub const fn declares_index(&self, number: u8) -> bool {
        let mut i = 0;
        while i < self.indexes.len() {
            if self.indexes[i].number == number {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Whether two declarations describe the same table: the same key names, index names,
    /// recognition and move attribute. Entities of one table must agree on them.
    pub const fn same_as(&self, other: &TableSchema) -> bool {
        if !str_eq(self.partition_key, other.partition_key)
            || !str_eq(self.sort_key, other.sort_key)
            || !same_recognition(self.recognition, other.recognition)
            || !str_eq(self.move_attribute, other.move_attribute)
            || self.indexes.len() != other.indexes.len()
        {
            return false;
        }
        let mut i = 0;
        while i < self.indexes.len() {
            let (a, b) = (self.indexes[i], other.index(self.indexes[i].number));
            if !other.declares_index(a.number)
                || !str_eq(a.index, b.index)
                || !str_eq(a.partition_key, b.partition_key)
                || !str_eq(a.sort_key, b.sort_key)
            {
                return false;
            }
            i += 1;
        }
        true
    }
}

const fn same_recognition(a: Recognition, b: Recognition) -> bool {
    match (a, b) {
        (Recognition::Tag { attribute: x }, Recognition::Tag { attribute: y })
        | (Recognition::TagOrKey { attribute: x }, Recognition::TagOrKey { attribute: y }) => {
            str_eq(x, y)
        }
        (Recognition::Key, Recognition::Key) => true,
        _ => false,
    }
}

/// A table declared once for all its entities. Implemented by `#[derive(ShardedTable)]` on a
/// unit struct; entities name it with `#[sharded(table = TheStruct)]`.
///
/// ```
/// use sharded::{ShardedEntity, ShardedTable};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(ShardedTable)]
/// #[table(name = "Leaderboards", pk = "PK", sk = "SK", tag = "_type")]
/// #[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
/// struct Leaderboards;
///
/// #[derive(ShardedEntity, Serialize, Deserialize)]
/// #[sharded(table = Leaderboards)]
/// #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
/// #[sk(template = "SCORE#{score}#{player_id}")]
/// #[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 4)]
/// struct Score { game_id: String, player_id: String, score: u64 }
///
/// assert_eq!(Score::SCHEMA.pk.attribute, "PK");
/// assert_eq!(Score::SCHEMA.gsis[0].index_name, "GSI1");
/// assert_eq!(Score::SCHEMA.table, Some("Leaderboards"));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a sharded table",
    label = "`#[sharded(table = ..)]` names a type that does not derive `ShardedTable`",
    note = "declare the table once: `#[derive(ShardedTable)] #[table(pk = \"PK\", sk = \"SK\")] struct {Self};`, or give `table` a string (the table's name) instead"
)]
pub trait ShardedTable {
    /// The table's names and recognition.
    const SCHEMA: &'static TableSchema;
}

/// The table of entities that name none: [`TableSchema::DEFAULT`].
///
/// ```
/// use sharded::schema::{DefaultTable, TableSchema};
/// use sharded::ShardedTable;
/// assert_eq!(*<DefaultTable as ShardedTable>::SCHEMA, TableSchema::DEFAULT);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultTable;

impl ShardedTable for DefaultTable {
    const SCHEMA: &'static TableSchema = &TableSchema::DEFAULT;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_indexes_get_the_default_names() {
        for n in 1..=20u8 {
            let names = TableSchema::DEFAULT.index(n);
            assert_eq!(names.number, n);
            assert_eq!(names.index, format!("gsi{n}"));
            assert_eq!(names.partition_key, format!("gsi{n}pk"));
            assert_eq!(names.sort_key, format!("gsi{n}sk"));
        }
    }

    #[test]
    fn tables_are_the_same_when_every_name_agrees() {
        static A: [IndexNames; 1] = [IndexNames::new(1, "GSI1", "GSI1PK", "GSI1SK")];
        static B: [IndexNames; 1] = [IndexNames::new(1, "GSI1", "GSI1PK", "X")];
        let a = TableSchema::new("A", "PK", "SK").with_indexes(&A);
        assert!(a.same_as(&TableSchema::new("Other", "PK", "SK").with_indexes(&A)));
        assert!(!a.same_as(&TableSchema::new("A", "PK", "SK").with_indexes(&B)));
        assert!(!a.same_as(&TableSchema::new("A", "PK", "SK")));
        assert!(!a.same_as(&a.with_recognition(Recognition::Key)));
        assert!(!a.same_as(&a.with_move_attribute("_mv")));
        assert!(!a.same_as(&TableSchema::new("A", "pk", "SK").with_indexes(&A)));
    }
}
