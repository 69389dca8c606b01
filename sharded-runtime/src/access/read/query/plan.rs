//! How a query is planned: the engine's plan (which partitions, which condition, how items
//! are recognised and merged) and what its cursors are checked against, derived from the
//! builder without changing it.

use std::sync::Arc;

use super::Query;
use crate::access::engine::cursor::{self, Cursor, CursorKey, Resume, ShardPosition};
use crate::access::engine::description::{Description, KeyShape, QueryShape};
use crate::access::engine::scatter::{Expiry, Placement, Plan, Transition};
use crate::access::layouts::{layout_schema, Snapshot};
use crate::access::sort_condition::{successor, SortCondition};
use crate::access::source::QuerySource;
use crate::capacity::stats::record;
use crate::error::{Error, QueryRefusal};
use crate::keys::schema::{EntitySchema, KeyAttributeSchema, KeyLayout, ScalarType, SortKeySchema};
use crate::keys::shards::{render_attributes, Partitions, ShardKeys};
use crate::keys::template::Segment;

/// What [`Query::plan`] derives from a query, without changing it: the engine's plan and what
/// a cursor of the query is checked against.
pub(super) struct Planned {
    pub(super) plan: Plan,
    /// What the query's cursors are bound to.
    pub(super) description: Description,
    /// The layout the query runs under, as cursors record it.
    pub(super) layout: String,
    /// Other layouts of the same key, with the query's description under each and their
    /// partition counts: a cursor issued under one of them is refused as such.
    pub(super) other_layouts: Vec<(String, Description, u32)>,
}

impl Planned {
    /// Decodes `cursor` for this query and checks that it fits it (see
    /// [`check`](Self::check)). A cursor of this query issued under another layout of its key
    /// is refused as such.
    pub(super) fn resume(
        &self,
        cursor: &Cursor,
        seal: Option<&CursorKey>,
    ) -> Result<Resume, Error> {
        let shards = self.plan.partitions.len() as u32;
        let resume = match cursor::decode(cursor, &self.description, shards, seal) {
            Err(cursor::CursorError::WrongQuery) => {
                return Err(self.other_layout(cursor, seal).into())
            }
            other => other?,
        };
        self.check(resume)
    }

    /// Checks that a decoded resume point fits the query, the one check for pages and range
    /// buckets alike: its shard count, the number of key values of each shard position, and
    /// whether its merge position has a sort key. One that does not fit is another query's.
    pub(super) fn check(&self, resume: Resume) -> Result<Resume, Error> {
        let plan = &self.plan;
        let expected = plan.position_attributes.len();
        let fits = resume.shards.len() == plan.partitions.len()
            && resume
                .shards
                .iter()
                .all(|p| !matches!(p, ShardPosition::After(key) if key.len() != expected))
            && resume
                .merge
                .as_ref()
                .is_none_or(|merge| merge.sort.is_some() != plan.sort_attributes.is_empty());
        if !fits {
            return Err(cursor::CursorError::WrongQuery.into());
        }
        Ok(resume)
    }

    /// Why a cursor this query did not issue is refused: issued under another layout of the
    /// same key (`n` changed, or a transition was declared or ended), or for another query.
    fn other_layout(&self, cursor: &Cursor, seal: Option<&CursorKey>) -> cursor::CursorError {
        for (shown, description, shards) in &self.other_layouts {
            if cursor::decode(cursor, description, *shards, seal).is_ok() {
                return cursor::CursorError::Layout {
                    issued: shown.clone(),
                    current: self.layout.clone(),
                };
            }
        }
        cursor::CursorError::WrongQuery
    }
}

impl<S: QuerySource, O> Query<S, O> {
    /// The engine's plan of this query and what its cursors are checked against. Changes
    /// nothing: the same query plans the same way every time.
    ///
    /// `layouts`: the layout directory of an entity whose layout is decided per key (the
    /// queried key's partitions and transition are its entry's; see [`Query::layouts`]).
    pub(super) fn plan(&self, layouts: Option<&Arc<Snapshot>>) -> Result<Planned, Error> {
        if let Some(invalid) = &self.invalid {
            return Err(invalid.clone().into());
        }
        let (schema, partitions) = match layouts.filter(|_| self.index.is_none()) {
            Some(layouts) => key_layout(S::LAYOUT, layouts, self.partitions.clone()?),
            None => (S::LAYOUT, self.partitions.clone()?),
        };
        let logical = partitions.logical_key().to_owned();
        // During a transition the base table's previous layout is read too, and an item copied
        // to its new shard but not yet removed from its old one comes out once (see `scatter`).
        let transition = self.index.is_none() && partitions.in_transition();
        // A GSI query of an entity in transition reads one index, where both copies of an item
        // are: old copies are checked against their current place.
        let index_transition = self.index.is_some()
            && (schema.pk.previous.is_some() || layouts.is_some_and(|l| l.any_changing()));
        let string_sort = |sk: Option<SortKeySchema>| -> Vec<KeyAttributeSchema> {
            sk.map(|sk| KeyAttributeSchema::new(sk.attribute, ScalarType::S))
                .into_iter()
                .collect()
        };
        // The partition attributes (one for a string key) and the sort attributes.
        let (index, pk_attributes, sort_key, sort_attributes, position_attributes) =
            match self.index {
                None => (
                    None,
                    vec![schema.pk.attribute],
                    schema.sk,
                    string_sort(schema.sk),
                    schema
                        .sk
                        .map(|sk| sk.attribute)
                        .into_iter()
                        .collect::<Vec<_>>(),
                ),
                Some(number) => {
                    let entity = S::NAME;
                    let gsi = schema
                        .gsi(number)
                        .ok_or(QueryRefusal::NoGsi { entity, number })?;
                    if self.options.consistent {
                        let index = gsi.index_name;
                        return Err(QueryRefusal::ConsistentGsi { index }.into());
                    }
                    if gsi.attributes.is_some() != partitions.is_attributes() {
                        let keyed = match gsi.attributes {
                            Some(key) => key.describe(),
                            None => format!("by the string `{}`", gsi.pk.attribute),
                        };
                        return Err(QueryRefusal::GsiKeyedOtherwise {
                            entity,
                            number,
                            keyed,
                        }
                        .into());
                    }
                    let (pk_attributes, sort_attributes) = match gsi.attributes {
                        Some(key) => (
                            key.partition_attributes().map(|a| a.name).collect(),
                            key.sort.to_vec(),
                        ),
                        None => (vec![gsi.pk.attribute], string_sort(gsi.sk)),
                    };
                    // A GSI's ExclusiveStartKey holds the index keys and the table's keys.
                    let mut position: Vec<&'static str> =
                        sort_attributes.iter().map(|a| a.name).collect();
                    position.push(schema.pk.attribute);
                    position.extend(schema.sk.map(|sk| sk.attribute));
                    (
                        Some(gsi.index_name),
                        pk_attributes,
                        gsi.sk,
                        sort_attributes,
                        position,
                    )
                }
            };
        let pk_attribute = pk_attributes[0];
        // Without an explicit condition, the literal prefix of the sort-key template keeps
        // the query to this entity's items at the key level (the entity check catches the
        // rest). A collection's members have different prefixes: it reads the whole partition.
        let single = S::ENTITIES.len() == 1;
        let prefix = sort_key.and_then(literal_prefix).filter(|_| single);
        let condition = self
            .condition
            .clone()
            .or_else(|| prefix.map(|p| SortCondition::BeginsWith(p.to_owned())));
        // Whole-key bounds meet that condition in the closest key condition, and leave a
        // range every item read is checked against (see `bounds`).
        let (condition, sort_equalities, range) = if self.bounds.is_empty() {
            (condition, self.sort_equalities.clone(), None)
        } else {
            let bounded = self.bounds.resolve(
                S::ENTITIES,
                &sort_attributes,
                condition,
                self.sort_equalities.clone(),
            )?;
            (bounded.condition, bounded.equalities, Some(bounded.range))
        };
        let filter_on_server = !prefix.is_some_and(|p| confined_to_prefix(condition.as_ref(), p));
        // Telling an old copy from its new one needs the item's key fields: a projection
        // reads whole items during a transition (and still returns only its fields).
        let projection = self
            .projection
            .filter(|_| !transition && !index_transition)
            .map(|attributes| {
                let mut all: Vec<&'static str> = attributes.to_vec();
                all.extend(pk_attributes.iter().copied());
                all.extend(position_attributes.iter().copied());
                // What recognition reads: the tag, and the table's keys (an untagged item is
                // recognised by them).
                all.extend(schema.tag_attribute());
                all.push(schema.pk.attribute);
                all.extend(schema.sk.map(|sk| sk.attribute));
                let mut seen = std::collections::HashSet::new();
                all.retain(|a| seen.insert(*a));
                all
            });
        let expiry = self.expiry();
        // Everything that shapes the answer: what the query's cursors are bound to. The
        // layout is the last part: a cursor of this query under another layout of the same
        // key is recognised, and refused as such (`CursorError::Layout`). A steady layout
        // adds nothing (a change of `n` alone shows as the shard count, `ShardCount`).
        let layout = layout_description(schema, index, transition);
        // A multi-attribute sort key's held attributes are part of what the query reads.
        let logical = match sort_equalities.as_slice() {
            [] => logical,
            held => format!("{logical} {}", render_attributes(held)),
        };
        // So are its bounds, strict ends included (the key condition says them closed).
        let logical = match &range {
            Some(range) => format!("{logical} {}", range.render()),
            None => logical,
        };
        let shape = QueryShape {
            entity: S::NAME,
            index: index.unwrap_or(""),
            key: KeyShape::Logical(&logical),
            sort: condition.as_ref(),
            filter: self.filter.as_ref(),
            projection: self.projection,
            descending: self.options.descending,
            expiry: expiry.as_ref().map(|e| e.attribute),
            layout: "",
        };
        // The transition's description is the layout's (a base-table query in transition).
        let description = shape
            .with_layout(if transition { &layout } else { "" })
            .describe()?;
        let other_layouts: Vec<(String, Description, u32)> = match index {
            None => alternative_layouts(schema, &partitions)
                .into_iter()
                .filter(|(shown, _, _)| *shown != layout)
                .map(|(shown, part, shards)| {
                    Ok((shown, shape.with_layout(&part).describe()?, shards))
                })
                .collect::<Result<_, Error>>()?,
            Some(_) => Vec::new(),
        };
        let plan = Plan {
            client: self.handle.client().clone(),
            table: self.handle.table().to_owned(),
            entity: S::NAME,
            entities: S::ENTITIES,
            tag: schema.tag_attribute(),
            filter_on_server,
            recognize: self.recognize,
            layout: schema,
            projection,
            filter: self.filter.clone(),
            expiry,
            index,
            sort_attributes,
            sort_equalities,
            position_attributes,
            partitions: partitions.physical(pk_attribute, transition),
            transition: (transition || index_transition).then(|| Transition {
                placement: match layouts {
                    Some(layouts) => Placement::PerKey {
                        input: S::shard_input,
                        key: S::LAYOUT.pk,
                        layouts: Arc::clone(layouts),
                        move_attribute: S::LAYOUT.move_attribute(),
                    },
                    None => Placement::Declared(S::placement),
                },
                current_partitions: partitions.current_count(),
                base_keys: (schema.pk.attribute, schema.sk.map(|sk| sk.attribute)),
                move_attribute: schema.move_attribute(),
                // The current copy of an old copy is not in an index page, and a filter may
                // hide it: old copies are then looked up at their current place.
                lookup: index_transition || self.filter.is_some() || expiry.is_some(),
                // Where the items sit until they are migrated: the previous layout's
                // partitions (a GSI's partitions do not change with the base layout).
                in_previous: match partitions.previous().filter(|_| transition) {
                    Some(previous) => {
                        let previous: std::collections::HashSet<String> =
                            previous.clone().collect();
                        partitions
                            .all()
                            .iter()
                            .map(|p| previous.contains(p))
                            .collect()
                    }
                    None => Vec::new(),
                },
            }),
            condition,
            range,
            descending: self.options.descending,
            consistent: self.options.consistent,
            page_size: self.options.page_size,
            concurrency: self.handle.fan_out(if transition {
                partitions.all().len()
            } else {
                partitions.current_count()
            }),
            stats: self.handle.stats().cloned(),
            learned_shares: None,
            shards: match index {
                // A per-key layout's schema has the queried key's count.
                None => record::spelled_base(S::LAYOUT, schema.pk.sharding.shard_count()),
                Some(name) => schema
                    .gsis
                    .iter()
                    .find(|g| g.index_name == name)
                    .and_then(|g| record::spelled(&g.pk)),
            },
        };
        Ok(Planned {
            plan,
            description,
            layout,
            other_layouts,
        })
    }

    /// The expiry filter of an entity with a `ttl` field (unless expired items are asked
    /// for): items whose expiry is missing, `NULL` (an `Option` field set to `None`) or after
    /// now (the time the query runs).
    pub(super) fn expiry(&self) -> Option<Expiry> {
        let attribute = S::LAYOUT
            .ttl
            .filter(|_| S::ENTITIES.len() == 1 && !self.include_expired)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Some(Expiry { attribute, now })
    }
}

/// The other layouts a cursor of a base-table query may have been issued under: how they
/// are shown, their fingerprint part, their partition count. The current layout alone (once
/// the transition is removed), the transition itself, and the previous layout alone (before
/// the transition was declared).
fn alternative_layouts(
    schema: &EntitySchema,
    partitions: &Partitions,
) -> Vec<(String, String, u32)> {
    let current_count = partitions.current_count() as u32;
    let mut out = vec![(schema.pk.physical_form(), String::new(), current_count)];
    if let Some(previous) = schema.pk.previous_description() {
        let transition = schema.pk.layout_description();
        out.push((
            transition.clone(),
            transition,
            partitions.all().len() as u32,
        ));
        let previous_count = match schema.pk.previous {
            Some(crate::keys::schema::PreviousLayout::Shards { n, .. }) => n,
            _ => 1,
        };
        out.push((previous, String::new(), previous_count));
    }
    out
}

/// The layout a cursor is issued under: the queried key's physical form, with the previous
/// layout while a transition is read.
fn layout_description(schema: &EntitySchema, index: Option<&str>, transition: bool) -> String {
    match index {
        None if transition => schema.pk.layout_description(),
        None => schema.pk.physical_form(),
        Some(name) => schema
            .gsis
            .iter()
            .find(|g| g.index_name == name)
            .map(|g| g.pk.physical_form())
            .unwrap_or_default(),
    }
}

/// The leading literal of a sort-key template (`SCORE#` of `SCORE#{score}#{player_id}`).
fn literal_prefix(sk: SortKeySchema) -> Option<&'static str> {
    match sk.template.segments.first() {
        Some(Segment::Literal(prefix)) if !prefix.is_empty() => Some(prefix),
        _ => None,
    }
}

/// Whether every sort key the condition admits starts with `prefix`, but for at most the one
/// key `prefix` with its last character incremented (the open upper end of a typed range):
/// then another entity's items come back only when they share the prefix, and checking the
/// entity on the client is cheaper than a `FilterExpression` on every request.
///
/// A range between two keys that both start with the prefix holds only keys that start with
/// it (byte order); a one-sided range (`>`, `<`) reaches past it.
fn confined_to_prefix(condition: Option<&SortCondition>, prefix: &str) -> bool {
    let upper_end = successor(prefix);
    let within = |key: &str| key.starts_with(prefix);
    match condition {
        Some(SortCondition::BeginsWith(p)) => within(p),
        Some(SortCondition::Between(low, high)) => {
            within(low) && (within(high) || Some(high.as_str()) == upper_end.as_deref())
        }
        _ => false,
    }
}

/// The schema and partitions of the queried key under its entry in the layout directory
/// (an entity whose layout is decided per key): its count and, while it changes, the other
/// count as a declared transition's previous layout.
fn key_layout(
    base: &'static EntitySchema,
    layouts: &Snapshot,
    partitions: Partitions,
) -> (&'static EntitySchema, Partitions) {
    let logical = partitions.logical_key().to_owned();
    let state = layouts.state(&logical);
    // Read as the copy at the change's target wins (see `layouts::KeyState`): in `reading`
    // the target is the previous count, so the query reads it as its current layout.
    let layout = match state.layout.previous {
        Some(previous) if state.prefer_previous() => KeyLayout::moving(previous, state.layout.n),
        _ => state.layout,
    };
    let suffix = base.pk.suffix;
    let shards = |n| ShardKeys::new(logical.clone(), Some(n)).with_suffix(suffix);
    let partitions = Partitions::new(shards(layout.n), layout.previous.map(shards));
    (layout_schema(base, layout), partitions)
}
