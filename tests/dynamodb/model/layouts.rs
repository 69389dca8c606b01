//! The entities of the model: one item type (`MItem`, with an optional expiry) and one
//! versioned type (`MDoc`) sharing their partitions, declared once per layout the sequences
//! walk through. Every declaration of a layout is the same stored entity (`entity = ".."`),
//! as a service redeploys it: steady on 3 shards, 3 -> 5, steady on 5, 5 -> 3, adopting
//! sharding over the unsharded key a pre-`sharded` service wrote (`legacy`), and adopting data
//! a service sharded by hand at random (`previous_shard = "unknown"`).
//!
//! Each layout is declared in two tables ([`Flavour`]): `tagged`, the crate's defaults (`pk`,
//! `sk`, the `_entity` tag, shards spelled `#3`), and `adopted`, a table as another team keys
//! it (`PK`, `SK`, no tag at all: an item is the entity's by its keys, shards spelled
//! `#SHARD_3`).

use std::future::Future;

use serde::{Deserialize, Serialize};
use sharded::{
    schema::{PreviousLayout, PreviousPlacement},
    transaction::ItemKey,
    transaction::Transaction,
    Condition, Error, Query, Repo, ShardedCollection, ShardedEntity, ShardedProjection,
    ShardedTable,
};

use super::reference::{Cond, Key, Kind, Rec, REKEYED_ID};

/// One entity type of the model, in one layout.
pub trait ModelEntity: ShardedEntity + Clone + std::fmt::Debug + Send + Sync + 'static {
    const KIND: Kind;
    fn from_model(key: &Key, rec: &Rec) -> Self;
    fn to_model(&self) -> (Key, Rec);
    fn condition(cond: &Cond) -> Condition<Self>;
    fn query(repo: &Repo<Self>, group: &str) -> Query<Self>;
    fn status_eq(status: &str) -> Condition<Self>;
    fn get(
        repo: &Repo<Self>,
        key: &Key,
    ) -> impl Future<Output = Result<Option<Self>, Error>> + Send;
    fn delete(repo: &Repo<Self>, key: &Key) -> impl Future<Output = Result<(), Error>> + Send;
    /// `Entity::update(..)`: set the status (if any), add to the points, with the condition
    /// and the version required (if any).
    fn update(
        repo: &Repo<Self>,
        update: &UpdateSpec,
    ) -> impl Future<Output = Result<(), Error>> + Send;
    /// The same update as one action of `tx`.
    fn tx_update(repo: &Repo<Self>, tx: Transaction, update: &UpdateSpec) -> Transaction;
    fn item_key(key: &Key) -> ItemKey<Self>;
    /// The entity's points, projected (`Query::project`, `Scan::project`).
    type Points: ShardedProjection<Entity = Self> + std::fmt::Debug + Send + 'static;
    /// A projection's key and points.
    fn points(projected: &Self::Points) -> (Key, i64);
    /// The partition keys of `group`'s shards in the layout declared, in shard order.
    fn shards(group: &str) -> Vec<String>;
    /// The typed sort-key condition `low <= id <= high` (`Query::sk`).
    fn ids_between(low: u16, high: u16) -> sharded::query::SortKeyCondition;
    /// Every partition of `group`, current and previous (`Migration::only`).
    fn partitions(group: &str) -> sharded::keys::Partitions;
    /// The item's physical keys: its current place, then its previous one if it differs.
    fn places(key: &Key) -> Vec<(String, Option<String>)>;
}

/// An update of the model: the key, what it sets and adds, and what it requires.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateSpec {
    pub key: Key,
    pub status: Option<String>,
    pub add: i64,
    pub cond: Option<Cond>,
    pub if_version: Option<u64>,
}

/// One layout: the two entity types and their collection.
pub trait Layout: Send + Sync + 'static {
    type Item: ModelEntity;
    type Doc: ModelEntity;
    type Page: ShardedCollection + std::fmt::Debug + Send + 'static;
    fn collection(repo: &Repo<Self::Item>, group: &str) -> Query<Self::Page>;
    fn page_to_model(page: Self::Page) -> (Key, Rec);
}

/// The table a sequence runs on: its key attribute names, tag and shard spelling.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Flavour {
    /// The crate's defaults: `pk`/`sk`, the `_entity` tag, `#{shard}`.
    Tagged,
    /// [`AdoptedTable`]: `PK`/`SK`, no tag, `#SHARD_{shard}`.
    Adopted,
}

impl Flavour {
    /// The table's definition: its names, indexes and tag, as every entity of it declares
    /// them (the tasks' two GSIs merged in).
    pub fn definition(self) -> sharded::schema::TableDefinition {
        let items = match self {
            Flavour::Tagged => tagged::S3Item::table_definition(),
            Flavour::Adopted => adopted::S3Item::table_definition(),
        };
        items
            .merge(&super::gsis::definition(self))
            .expect("the tasks share the table with the items")
    }

    /// The partition key attribute.
    pub fn pk(self) -> &'static str {
        match self {
            Flavour::Tagged => "pk",
            Flavour::Adopted => "PK",
        }
    }

    /// The sort key attribute.
    pub fn sk(self) -> &'static str {
        match self {
            Flavour::Tagged => "sk",
            Flavour::Adopted => "SK",
        }
    }

    /// A shard's partition key of `group`, spelled by hand as another service does.
    pub fn shard_pk(self, group: &str, shard: u32) -> String {
        match self {
            Flavour::Tagged => format!("G#{group}#{shard}"),
            Flavour::Adopted => format!("G#{group}#SHARD_{shard}"),
        }
    }
}

/// The table of the `adopted` flavour: the single-table convention's names, and no tag (its
/// other writers never tag, so an item is the entity's when its keys are).
#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", recognize = "key")]
#[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
#[gsi2(index = "ByTeam")]
pub struct AdoptedTable;

pub fn group_name(group: u8) -> String {
    ["a", "b"][usize::from(group % 2)].to_owned()
}

/// The `id` field of model id `id`: three digits, or `9 9` (a raw space, which the key
/// escapes) for the item the planted non-canonical record becomes once re-keyed.
pub fn id_name(id: u16) -> String {
    if id == REKEYED_ID {
        return REKEYED_NAME.to_owned();
    }
    format!("{id:03}")
}

/// The `id` of the planted record keyed `I#9 9` by another service.
pub const REKEYED_NAME: &str = "9 9";

fn parse_key(kind: Kind, group: &str, id: &str) -> Key {
    Key {
        kind,
        group: u8::from(group == "b"),
        id: match id {
            REKEYED_NAME => REKEYED_ID,
            id => id.parse().expect("model ids are numbers"),
        },
    }
}

macro_rules! layout {
    ($(#[$doc:meta])* $layout:ident, $item:ident, $docty:ident, $page:ident, $item_points:ident, $doc_points:ident, [$($table:tt)*], $($pk:tt)*) => {
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "MItem" $($table)*)]
        #[pk($($pk)*)]
        #[sk(template = "I#{id}")]
        pub struct $item {
            pub group: String,
            pub id: String,
            pub status: String,
            pub points: i64,
            #[sharded(ttl)]
            pub expires: Option<u64>,
        }

        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(entity = "MDoc" $($table)*)]
        #[pk($($pk)*)]
        #[sk(template = "D#{id}")]
        pub struct $docty {
            pub group: String,
            pub id: String,
            pub status: String,
            pub points: i64,
            #[sharded(version)]
            pub version: u64,
        }

        #[derive(ShardedProjection, Deserialize, Debug)]
        #[projection(of = $item)]
        pub struct $item_points {
            pub group: String,
            pub id: String,
            pub points: i64,
        }

        #[derive(ShardedProjection, Deserialize, Debug)]
        #[projection(of = $docty)]
        pub struct $doc_points {
            pub group: String,
            pub id: String,
            pub points: i64,
        }

        #[derive(ShardedCollection, Debug, Clone, PartialEq)]
        pub enum $page {
            Item($item),
            Doc($docty),
        }

        $(#[$doc])*
        pub struct $layout;

        impl Layout for $layout {
            type Item = $item;
            type Doc = $docty;
            type Page = $page;
            fn collection(repo: &Repo<$item>, group: &str) -> Query<$page> {
                $item::query(repo, group).collection::<$page>()
            }
            fn page_to_model(page: $page) -> (Key, Rec) {
                match page {
                    $page::Item(i) => i.to_model(),
                    $page::Doc(d) => d.to_model(),
                }
            }
        }

        layout!(@entity $item, $item_points, Kind::Item, |key: &Key, rec: &Rec| $item {
            group: group_name(key.group),
            id: id_name(key.id),
            status: rec.status.clone(),
            points: rec.points,
            expires: rec.expires,
        }, |e: &$item| Rec { status: e.status.clone(), points: e.points, expires: e.expires, version: 0 });
        layout!(@entity $docty, $doc_points, Kind::Doc, |key: &Key, rec: &Rec| $docty {
            group: group_name(key.group),
            id: id_name(key.id),
            status: rec.status.clone(),
            points: rec.points,
            version: rec.version,
        }, |e: &$docty| Rec { status: e.status.clone(), points: e.points, expires: None, version: e.version });
    };
    (@entity $ty:ident, $points:ident, $kind:expr, $from:expr, $to:expr) => {
        impl ModelEntity for $ty {
            const KIND: Kind = $kind;
            type Points = $points;
            fn points(projected: &$points) -> (Key, i64) {
                (parse_key($kind, &projected.group, &projected.id), projected.points)
            }
            fn ids_between(low: u16, high: u16) -> sharded::query::SortKeyCondition {
                $ty::sk_sort().between(&id_name(low), &id_name(high))
            }
            fn partitions(group: &str) -> sharded::keys::Partitions {
                $ty::pk_partitions(group).expect("model keys are valid")
            }
            fn shards(group: &str) -> Vec<String> {
                $ty::pk_all_shards(group).expect("model keys are valid").collect()
            }
            fn from_model(key: &Key, rec: &Rec) -> Self {
                ($from)(key, rec)
            }
            fn to_model(&self) -> (Key, Rec) {
                (parse_key($kind, &self.group, &self.id), ($to)(self))
            }
            fn condition(cond: &Cond) -> Condition<Self> {
                let f = $ty::fields();
                match cond {
                    Cond::StatusEq(s) => f.status.eq(s.clone()),
                    Cond::PointsGe(p) => f.points.ge(*p),
                    Cond::PointsLt(p) => f.points.lt(*p),
                }
            }
            fn status_eq(status: &str) -> Condition<Self> {
                $ty::fields().status.eq(status.to_owned())
            }
            fn query(repo: &Repo<Self>, group: &str) -> Query<Self> {
                $ty::query(repo, group)
            }
            fn get(repo: &Repo<Self>, key: &Key) -> impl Future<Output = Result<Option<Self>, Error>> + Send {
                let (repo, group, id) = (repo.clone(), group_name(key.group), id_name(key.id));
                async move { $ty::get(&repo, &group, &id).await }
            }
            fn delete(repo: &Repo<Self>, key: &Key) -> impl Future<Output = Result<(), Error>> + Send {
                let (repo, group, id) = (repo.clone(), group_name(key.group), id_name(key.id));
                async move { $ty::delete(&repo, &group, &id).await }
            }
            fn update(repo: &Repo<Self>, spec: &UpdateSpec) -> impl Future<Output = Result<(), Error>> + Send {
                let update = Self::build_update(repo, spec);
                async move { update.send().await }
            }
            fn tx_update(repo: &Repo<Self>, tx: Transaction, spec: &UpdateSpec) -> Transaction {
                tx.update(Self::build_update(repo, spec))
            }
            fn item_key(key: &Key) -> ItemKey<Self> {
                $ty::key(&group_name(key.group), &id_name(key.id)).expect("model keys are valid")
            }
            fn places(key: &Key) -> Vec<(String, Option<String>)> {
                let placeholder = Self::from_model(key, &Rec::placeholder());
                let keys = placeholder.item_keys().expect("model keys are valid");
                let mut places = vec![(keys.pk.clone(), keys.sk.clone())];
                if let Some(previous) = placeholder.previous_pk().expect("model keys are valid") {
                    if previous != keys.pk {
                        places.push((previous, keys.sk.clone()));
                    }
                }
                // Placed by hand at random: any previous shard may hold it.
                if let Some(PreviousLayout::Shards { n, placement: PreviousPlacement::Unknown, .. }) =
                    Self::SCHEMA.pk.previous
                {
                    for shard in 0..n {
                        let pk = $ty::pk_on_shard(&group_name(key.group), shard)
                            .expect("model keys are valid");
                        if pk != keys.pk {
                            places.push((pk, keys.sk.clone()));
                        }
                    }
                }
                places
            }
        }

        impl $ty {
            fn build_update(repo: &Repo<Self>, spec: &UpdateSpec) -> sharded::Update<Self> {
                let f = $ty::fields();
                let mut update = $ty::update(repo, &group_name(spec.key.group), &id_name(spec.key.id))
                    .add(f.points, spec.add);
                if let Some(status) = &spec.status {
                    update = update.set(f.status, status.clone());
                }
                if let Some(cond) = &spec.cond {
                    update = update.condition(<Self as ModelEntity>::condition(cond));
                }
                if let Some(version) = spec.if_version {
                    update = update.if_version(version);
                }
                update
            }
        }
    };
}

/// Every layout of one table: `$table` is what follows `entity = ".."` in
/// `#[sharded(..)]`, `$suffix` what follows `n = ..` in `#[pk(..)]` (nothing for the defaults).
macro_rules! layouts {
    ([$($table:tt)*], [$($suffix:tt)*]) => {
        use super::*;

        layout!(
            /// Steady on 3 shards.
            S3, S3Item, S3Doc, S3Page, S3ItemPoints, S3DocPoints, [$($table)*],
            template = "G#{group}", shard = "hash(id)", n = 3 $($suffix)*
        );
        layout!(
            /// Growing from 3 to 5 shards.
            T5, T5Item, T5Doc, T5Page, T5ItemPoints, T5DocPoints, [$($table)*],
            template = "G#{group}", shard = "hash(id)", n = 5 $($suffix)*, previous_n = 3
        );
        layout!(
            /// Steady on 5 shards.
            S5, S5Item, S5Doc, S5Page, S5ItemPoints, S5DocPoints, [$($table)*],
            template = "G#{group}", shard = "hash(id)", n = 5 $($suffix)*
        );
        layout!(
            /// Shrinking from 5 to 3 shards.
            T3, T3Item, T3Doc, T3Page, T3ItemPoints, T3DocPoints, [$($table)*],
            template = "G#{group}", shard = "hash(id)", n = 3 $($suffix)*, previous_n = 5
        );
        layout!(
            /// Adopting sharding (3 shards) over the unsharded key a pre-`sharded` service wrote.
            A3, A3Item, A3Doc, A3Page, A3ItemPoints, A3DocPoints, [$($table)*],
            template = "G#{group}", shard = "hash(id)", n = 3 $($suffix)*, legacy = "G#{group}"
        );
        layout!(
            /// Adopting 3 shards a service placed items on at random (the same spelling): the
            /// hash placement, over data of unknown placement.
            U3, U3Item, U3Doc, U3Page, U3ItemPoints, U3DocPoints, [$($table)*],
            template = "G#{group}", shard = "hash(id)", n = 3 $($suffix)*,
            previous_n = 3, previous_shard = "unknown"
        );
    };
}

/// The crate's defaults: `pk`/`sk`, the `_entity` tag, `#{shard}`.
pub mod tagged {
    layouts!([], []);
}

/// [`AdoptedTable`]: `PK`/`SK`, no tag, `#SHARD_{shard}`.
pub mod adopted {
    layouts!([, table = AdoptedTable], [, suffix = "#SHARD_{shard}"]);
}
