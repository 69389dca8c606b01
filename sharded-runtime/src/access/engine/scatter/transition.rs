//! Reading through a layout transition (`previous_n`, `legacy`): which partitions hold which
//! copy of an item, and how an old copy is told from the item.
//!
//! One logical item may have two copies while a transition is declared: at its previous place
//! (not migrated yet, or migrated and not yet deleted) and at its current place (copied by the
//! migration, or written there since). The current copy is authoritative. An item read from a
//! partition that is not its current place is an *old copy*, and is hidden when its current
//! place holds the item. The engine decides that in one of two ways, by what it can see:
//!
//! - **By the merge.** A base-table query without a filter reads every current partition
//!   whole, so the current place's head (or its last consumed item) tells (see the engine's
//!   "Layout transitions").
//! - **By a lookup.** When the current copy cannot be seen in the read (a GSI query, whose
//!   index page of the old copy and of the new copy look alike; or a query with a filter,
//!   which DynamoDB applies per partition, so the current copy may be filtered out while its
//!   stale old copy passes), the old copies of each page are looked up at their current place
//!   (one `BatchGetItem` per page, strongly consistent when the query is) and hidden when it
//!   holds the item. On the base table only when it holds *other content* (a write since):
//!   a current copy with the old copy's content is the migration's copy, which passes the
//!   filter the old copy passed, so the current partition's read returns it unless it was read
//!   before the copy was made; the merge then decides as above, and an old copy whose current
//!   partition was read past it without it is the item. Dropping it here would lose an item
//!   copied between the two reads.
//!
//! An old copy marked as moved (the table's `move_attribute`: written with its copy, or when
//! its current place already held the item) is looked up in any query, consistently: when
//! its current place is empty the item was deleted after its move, and the copy is dropped;
//! otherwise the rules above decide.
//!
//! Items of a previous layout's partitions written before the table adopted `sharded` carry
//! no tag: those whose keys are the entity's are recognised as it (by
//! [`recognize`](crate::access::recognize), the rule every read and the migration follow);
//! other untagged items there are foreign.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};

use std::sync::Arc;

use crate::access::layouts::Snapshot;
use crate::access::placement::marked_moved;
use crate::error::{Error, QueryRefusal};
use crate::item::Item;
use crate::keys::layout::ShardInput;
use crate::keys::schema::PartitionKeySchema;

use super::Plan;

/// Where an item belongs: its partition key under the current layout, and under the previous
/// one while a transition is declared and it differs (`None` when the item is not one of the
/// queried entities).
/// Where an item belongs, by its entity's declared layout (`QuerySource::placement`).
pub(crate) type DeclaredPlacement = fn(&Item) -> Option<(String, Option<String>)>;

#[derive(Clone)]
pub(crate) enum Placement {
    /// The entity's declared layout.
    Declared(DeclaredPlacement),
    /// A per-key layout: each item under its own key's layout in the directory.
    PerKey {
        /// What places an item under any count (`QuerySource::shard_input`).
        input: fn(&Item) -> Option<ShardInput>,
        /// The entity's partition key (its suffix spells the shards).
        key: PartitionKeySchema,
        /// The directory the query planned with.
        layouts: Arc<Snapshot>,
        /// The table's move attribute (see below).
        move_attribute: &'static str,
    },
}

impl Placement {
    /// Where `item` belongs.
    pub(crate) fn place(&self, item: &Item) -> Option<(String, Option<String>)> {
        match self {
            Placement::Declared(place) => place(item),
            Placement::PerKey {
                input,
                key,
                layouts,
                move_attribute,
            } => {
                let input = input(item)?;
                let state = layouts.state(&input.logical);
                let written = input.key_under(key, state.layout.n);
                let Some(other) = state
                    .layout
                    .previous
                    .map(|n| input.key_under(key, n))
                    .filter(|other| *other != written)
                else {
                    return Some((written, None));
                };
                // The copy at the change's target wins (see `layouts::KeyState`): it is the
                // place written in `writing`, the previous one in `reading`.
                let (current, previous) = if state.prefer_previous() {
                    (other, written)
                } else {
                    (written, other)
                };
                // While a key changes, processes a phase apart write at either count (see
                // `layouts`), so a copy marked `moved` may sit at this query's current place:
                // wherever it sits, its item lives at the other place.
                let stored = item.get(key.attribute).and_then(|v| v.as_s().ok());
                if marked_moved(move_attribute, item) && stored == Some(&current) {
                    return Some((previous, Some(current)));
                }
                Some((current, Some(previous)))
            }
        }
    }
}

impl std::fmt::Debug for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Declared(_) => f.write_str("Declared"),
            Placement::PerKey { .. } => f.write_str("PerKey"),
        }
    }
}

/// What the engine needs to read through a layout transition: fixed for a query's lifetime.
#[derive(Debug, Clone)]
pub(crate) struct Transition {
    /// Where an item belongs (see [`Placement`]).
    pub placement: Placement,
    /// How many of the plan's partitions are the current layout's (they come first); the
    /// others are the previous layout's other keys.
    pub current_partitions: usize,
    /// The base table's key attributes (partition key, sort key): an old copy's current key.
    pub base_keys: (&'static str, Option<&'static str>),
    /// Whether old copies are looked up at their current place (see the module docs): a GSI
    /// query, or a query with a filter. Old copies marked as moved are looked up in any query.
    pub lookup: bool,
    /// The table's move attribute: an old copy marked `moved` in it (see
    /// [`marked_moved`]) whose current place is empty is an item deleted after its move.
    pub move_attribute: &'static str,
    /// Per partition of the plan, whether the previous layout has it too, on a base-table
    /// query whose layout changes (empty on a GSI, whose partitions stay where they are): where
    /// the items sit until the migration moves them, so what a top-k's first requests ask of
    /// each partition (see [`Transition::expects_items`]).
    pub in_previous: Vec<bool>,
}

impl Transition {
    /// Whether first requests are sized by where the items sit (see
    /// [`expects_items`](Self::expects_items)): a base-table query whose layout changes.
    pub fn sizes_first_requests(&self) -> bool {
        !self.in_previous.is_empty()
    }

    /// Whether `shard` holds items before anything is learned of this query: the prior is
    /// "not migrated yet", so the previous layout's partitions hold them and a partition only
    /// the current layout has holds none (it is asked for a probe-sized `Limit`). A wrong
    /// prior (the migration ran, or items were written there since the transition began)
    /// costs a refill, never an item: the engine's refills read what the probe did not.
    pub fn expects_items(&self, shard: usize) -> bool {
        self.in_previous.get(shard).copied().unwrap_or(true)
    }

    /// The current key of `item` when it is an old copy (read from `stored`, not its current
    /// place).
    fn current_key(&self, item: &Item, stored: &str) -> Option<Item> {
        let (pk, sk) = self.base_keys;
        let (current, _) = self.placement.place(item)?;
        if current == stored {
            return None;
        }
        let mut key = Item::from([(pk.to_owned(), AttributeValue::S(current))]);
        if let Some(sk) = sk {
            key.insert(sk.to_owned(), item.get(sk)?.clone());
        }
        Some(key)
    }
}

/// Drops from `items` (one page) the old copies whose current place holds the item, when the
/// plan looks old copies up (see the module docs), and in any plan the old copies marked as
/// moved whose current place is empty: their item was deleted after its move (the mark is
/// written with the copy, so the copy existed when the old copy was read; it is looked up
/// consistently, so one not yet seen by an eventually consistent read is not taken for a
/// delete). `stored` is the partition key attribute the stored place is read from: the base
/// table's, also on a GSI (its items carry it).
pub(crate) async fn drop_looked_up_copies(plan: &Plan, items: &mut Vec<Item>) -> Result<(), Error> {
    let Some(transition) = plan.transition.as_ref() else {
        return Ok(());
    };
    let (pk, _) = transition.base_keys;
    let marked = |item: &Item| marked_moved(transition.move_attribute, item);
    let old: Vec<(usize, Item)> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| transition.lookup || marked(item))
        .filter_map(|(i, item)| {
            let stored = item.get(pk)?.as_s().ok()?;
            Some((i, transition.current_key(item, stored)?))
        })
        .collect();
    if old.is_empty() {
        return Ok(());
    }
    let keys: Vec<Item> = old.iter().map(|(_, key)| key.clone()).collect();
    let mut present = present_items(plan, transition, keys, plan.consistent).await?;
    if !plan.consistent {
        let again: Vec<Item> = old
            .iter()
            .filter(|(i, key)| {
                marked(&items[*i]) && !present.contains_key(&key_text(transition, key))
            })
            .map(|(_, key)| key.clone())
            .collect();
        if !again.is_empty() {
            present.extend(present_items(plan, transition, again, true).await?);
        }
    }
    // On a GSI both copies sit in the same index partition and only the lookup can tell them
    // apart; on the base table the merge can, for a copy with the same content.
    let on_base_table = plan.index.is_none();
    let drop: HashSet<usize> = old
        .into_iter()
        .filter(|(i, key)| match present.get(&key_text(transition, key)) {
            None => marked(&items[*i]),
            Some(current) => {
                transition.lookup
                    && (!on_base_table
                        || !same_content(&items[*i], current, pk, transition.move_attribute))
            }
        })
        .map(|(i, _)| i)
        .collect();
    let mut i = 0;
    items.retain(|_| {
        let keep = !drop.contains(&i);
        i += 1;
        keep
    });
    Ok(())
}

/// A comparable text of a base-table key.
fn key_text(transition: &Transition, key: &Item) -> String {
    let (pk, sk) = transition.base_keys;
    format!("{:?}\u{0}{:?}", key.get(pk), sk.and_then(|sk| key.get(sk)))
}

/// Keys per `BatchGetItem` (DynamoDB's maximum).
const LOOKUP_BATCH: usize = 100;
/// Rounds of `UnprocessedKeys` retried before the lookup fails.
const LOOKUP_ROUNDS: u32 = 8;

/// Whether `current` holds what `old` holds: every attribute of the old copy but its
/// partition key and the move marker, with the same value (the migration's copy adds what the
/// entity writes, and marks both copies).
fn same_content(old: &Item, current: &Item, pk: &str, move_attribute: &str) -> bool {
    old.iter()
        .filter(|(name, _)| name.as_str() != pk && name.as_str() != move_attribute)
        .all(|(name, value)| current.get(name) == Some(value))
}

/// The items stored at `keys`, by key text: `BatchGetItem` (of the key attributes only on a
/// GSI, whole on the base table, where their content is compared), strongly consistent when
/// the query is, unprocessed keys retried with a short backoff.
async fn present_items(
    plan: &Plan,
    transition: &Transition,
    keys: Vec<Item>,
    consistent: bool,
) -> Result<HashMap<String, Item>, Error> {
    let (pk, sk) = transition.base_keys;
    let mut names = HashMap::from([("#pk".to_owned(), pk.to_owned())]);
    let mut projection = "#pk".to_owned();
    if let Some(sk) = sk {
        names.insert("#sk".to_owned(), sk.to_owned());
        projection.push_str(", #sk");
    }
    let mut seen = HashSet::new();
    let unique: Vec<Item> = keys
        .into_iter()
        .filter(|key| seen.insert(key_text(transition, key)))
        .collect();
    let mut present = HashMap::new();
    for chunk in unique.chunks(LOOKUP_BATCH) {
        let mut pending = chunk.to_vec();
        let mut round = 0;
        while !pending.is_empty() {
            if round == LOOKUP_ROUNDS {
                return Err(QueryRefusal::TransitionCheckThrottled {
                    unprocessed: pending.len(),
                    rounds: LOOKUP_ROUNDS,
                }
                .into());
            }
            if round > 0 {
                tokio::time::sleep(Duration::from_millis(25 << round.min(6))).await;
            }
            round += 1;
            let on_index = plan.index.is_some();
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .set_projection_expression(on_index.then(|| projection.clone()))
                .set_expression_attribute_names(on_index.then(|| names.clone()))
                .set_consistent_read(consistent.then_some(true))
                .build()
                .map_err(Error::build("a transition check"))?;
            let output = plan
                .client
                .batch_get_item()
                .request_items(plan.table.clone(), request)
                .send()
                .await
                .map_err(|e| Error::dynamo("BatchGetItem", &plan.table, e))?;
            if let Some(found) = output.responses.and_then(|mut r| r.remove(&plan.table)) {
                present.extend(
                    found
                        .into_iter()
                        .map(|item| (key_text(transition, &item), item)),
                );
            }
            if let Some(left) = output
                .unprocessed_keys
                .and_then(|mut u| u.remove(&plan.table))
            {
                pending = left.keys;
            }
        }
    }
    Ok(present)
}
