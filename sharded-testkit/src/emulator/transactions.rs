//! Transactions as DynamoDB charges them: every item twice (a prepare and a commit, DynamoDB
//! Developer Guide, "Capacity management for transactions"), admitted all or nothing, and a
//! throttled transaction canceled with `ThrottlingError` reasons.

use std::collections::HashMap;

use serde_json::Value;
use sharded_runtime::capacity::{read_units, transactional_write_units, Consistency};

use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;

use super::buckets::{charge, Charge, Kind, Level};
use super::requests::{item_key, size_of, write_charges, ItemKey, TableKeys};
use super::wire::{canceled_response, key_text, response_json};
use super::{lock, KeyLimitEmulator};
use crate::intercept::Next;

/// What one action of a `TransactWriteItems` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ActionKind {
    Put,
    Update,
    Delete,
    Check,
}

/// One action of a transaction on a table the emulator knows.
#[derive(Debug)]
pub(super) struct Action<'a> {
    pub(super) kind: ActionKind,
    pub(super) table: String,
    pub(super) keys: TableKeys,
    /// The `Item` of a put, the `Key` of the others.
    pub(super) item: &'a Value,
}

/// The actions of a `TransactWriteItems` body, in request order (`None`: an action on a table
/// the emulator does not know, or one it cannot read).
fn write_actions<'a>(emulator: &KeyLimitEmulator, body: &'a Value) -> Vec<Option<Action<'a>>> {
    let kinds = [
        ("Put", ActionKind::Put, "Item"),
        ("Update", ActionKind::Update, "Key"),
        ("Delete", ActionKind::Delete, "Key"),
        ("ConditionCheck", ActionKind::Check, "Key"),
    ];
    body["TransactItems"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            let (field, kind, item) = kinds
                .iter()
                .find(|(field, ..)| entry.get(*field).is_some())?;
            let spec = &entry[*field];
            let table = spec["TableName"].as_str()?.to_owned();
            let keys = emulator.table(&table)?;
            Some(Action {
                kind: *kind,
                table,
                keys,
                item: &spec[*item],
            })
        })
        .collect()
}

/// What `action` charges, given the item stored under its key (`old`) and, for an update,
/// the item it leaves (`new`; before the write, the estimate passes `old` again):
///
/// - `Put`, `Delete`, `Update`: [`write_charges`] in a transaction: twice the write units of
///   the larger of the old and the new item on the base key ([`transactional_write_units`]),
///   and the GSI entries that change at ordinary write units.
/// - `ConditionCheck`: twice the write units of the item checked (one unit's worth when there
///   is none), on its base key. TransactWriteItems is a write operation and DynamoDB
///   performs "two underlying reads or writes of every item in the transaction"; a check
///   is billed as write capacity (2 units for an item under 1 KB).
pub(super) fn action_charges(
    action: &Action<'_>,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Vec<Charge> {
    let (table, keys, item) = (&action.table, &action.keys, action.item);
    match action.kind {
        ActionKind::Put => write_charges(table, keys, item, old, Some(item), true),
        ActionKind::Delete => write_charges(table, keys, item, old, None, true),
        ActionKind::Update => write_charges(table, keys, item, old, new, true),
        ActionKind::Check => key_text(&item[&keys.partition_key])
            .map(|pk| {
                let units = transactional_write_units(size_of(old)) as f64;
                vec![charge(table, None, pk, Kind::Write, units)]
            })
            .unwrap_or_default(),
    }
}

/// For each action, the first meter over its limit that one of `charges[i]` touches: the
/// meter itself, or its table's or index's maximum.
fn throttled_actions<'c>(charges: &[Vec<Charge>], over: &'c [Charge]) -> Vec<Option<&'c Charge>> {
    charges
        .iter()
        .map(|action| {
            over.iter().find(|o| {
                action.iter().any(|c| match o.bucket.level {
                    Level::Key => c.bucket == o.bucket,
                    Level::Max => {
                        c.bucket.table == o.bucket.table
                            && c.bucket.index == o.bucket.index
                            && c.bucket.kind == o.bucket.kind
                    }
                })
            })
        })
        .collect()
}

/// The stored item for `action`'s key in `items` (read with `current_items`).
fn stored<'i>(
    items: &'i HashMap<(String, ItemKey), Value>,
    action: &Action<'_>,
) -> Option<&'i Value> {
    let id = item_key(&action.keys, action.item)?;
    items.get(&(action.table.clone(), id))
}

impl KeyLimitEmulator {
    /// Admits or refuses a `TransactWriteItems` whole. The items it replaces are read just
    /// before it (as for a batch write: a write by another client in between is not seen),
    /// so puts, deletes and checks are charged exactly; an update is admitted as if it left
    /// its item's size and GSI keys as they were, and once it has committed its items are read
    /// again and it is settled on what it wrote. If any meter a transaction touches cannot
    /// take its share, nothing is sent and the transaction is canceled the way DynamoDB
    /// cancels a throttled one ([`canceled_response`]). A transaction DynamoDB Local cancels
    /// (a condition failed) keeps its estimate: DynamoDB charges those too.
    pub(super) async fn transact_write(
        &self,
        next: Next,
        request: HttpRequest,
        body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let actions = write_actions(self, &body);
        if actions.iter().all(Option::is_none) {
            lock(&self.state.counts).unmetered += 1;
            return next.send(request).await;
        }
        let Some(like) = request.try_clone() else {
            tracing::warn!("emulator: cannot clone a TransactWriteItems request; passed unmetered");
            lock(&self.state.counts).unmetered += 1;
            return next.send(request).await;
        };
        let wanted: Vec<(String, &Value)> = actions
            .iter()
            .flatten()
            .map(|a| (a.table.clone(), a.item))
            .collect();
        let before = self.current_items(&next, &like, &wanted).await;
        let estimate: Vec<Vec<Charge>> = actions
            .iter()
            .map(|action| match action {
                Some(a) => {
                    let old = stored(&before, a);
                    action_charges(a, old, old)
                }
                None => Vec::new(),
            })
            .collect();
        let all: Vec<Charge> = estimate.iter().flatten().cloned().collect();
        if let Err(over) = self.admit_all(&all) {
            self.count(0, &over[..1]);
            return Ok(canceled_response(
                &throttled_actions(&estimate, &over),
                &over,
            ));
        }
        self.count(1, &[]);
        let response = next.send(request).await?;
        let updates: Vec<(&Action<'_>, &Vec<Charge>)> = actions
            .iter()
            .zip(&estimate)
            .filter_map(|(a, e)| Some((a.as_ref()?, e)))
            .filter(|(a, _)| a.kind == ActionKind::Update)
            .collect();
        if updates.is_empty() || !response.status().is_success() {
            return Ok(response);
        }
        let wanted: Vec<(String, &Value)> = updates
            .iter()
            .map(|(a, _)| (a.table.clone(), a.item))
            .collect();
        let after = self.current_items(&next, &like, &wanted).await;
        for (action, estimate) in updates {
            let exact = action_charges(action, stored(&before, action), stored(&after, action));
            self.settle_all(estimate, &exact);
        }
        Ok(response)
    }

    /// Serves a `TransactGetItems`, then admits it whole on what it read: each item costs
    /// its key twice a strongly consistent read of its size, `read_units(size,
    /// Transactional)` (a key with no item, one unit's worth: 2). Reads change nothing, so
    /// the emulator reads first and answers a transaction over a key's (or the table's)
    /// limit with the cancellation DynamoDB sends instead of the items.
    pub(super) async fn transact_get(
        &self,
        next: Next,
        request: HttpRequest,
        body: Value,
    ) -> Result<HttpResponse, ConnectorError> {
        let gets: Vec<Option<(String, TableKeys, &Value)>> = body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|entry| {
                let table = entry["Get"]["TableName"].as_str()?.to_owned();
                let keys = self.table(&table)?;
                Some((table, keys, &entry["Get"]["Key"]))
            })
            .collect();
        if gets.iter().all(Option::is_none) {
            lock(&self.state.counts).unmetered += 1;
            return next.send(request).await;
        }
        let response = next.send(request).await?;
        let (response, json) = response_json(response).await?;
        let Some(json) = json else {
            return Ok(response);
        };
        let charges = transact_get_charges(&gets, &json);
        if let Err(over) = self.admit_all(&charges.concat()) {
            self.count(0, &over[..1]);
            return Ok(canceled_response(
                &throttled_actions(&charges, &over),
                &over,
            ));
        }
        self.count(1, &[]);
        Ok(response)
    }
}

/// What each `Get` of a `TransactGetItems` answer costs its key: `read_units(size of the
/// item returned, Transactional)`.
pub(super) fn transact_get_charges(
    gets: &[Option<(String, TableKeys, &Value)>],
    response: &Value,
) -> Vec<Vec<Charge>> {
    gets.iter()
        .enumerate()
        .map(|(i, get)| {
            let Some((table, keys, key)) = get else {
                return Vec::new();
            };
            let Some(pk) = key_text(&key[&keys.partition_key]) else {
                return Vec::new();
            };
            let item = response["Responses"][i].get("Item");
            let units = read_units(size_of(item), Consistency::Transactional);
            vec![charge(table, None, pk, Kind::Read, units)]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sharded_runtime::capacity::ManualClock;

    use super::super::tests::{emulator, sized, units_on};
    use super::*;

    fn action<'a>(e: &KeyLimitEmulator, kind: ActionKind, item: &'a Value) -> Action<'a> {
        Action {
            kind,
            table: "t".to_owned(),
            keys: e.table("t").unwrap(),
            item,
        }
    }

    /// An item of exactly `bytes` bytes on key `pk` (`pk` + `d` attribute names included).
    fn of_bytes(pk: &str, bytes: usize) -> Value {
        let filler = bytes - ("pk".len() + pk.len() + "d".len());
        json!({"pk": {"S": pk}, "d": {"S": "x".repeat(filler)}})
    }

    #[test]
    fn each_action_costs_two_write_units_per_kb() {
        let e = emulator(&ManualClock::new());
        for (bytes, units) in [
            (100, 2.0),
            (1024, 2.0),
            (1025, 4.0),
            (3000, 6.0),
            (10_240, 20.0),
        ] {
            let item = of_bytes("k", bytes);
            let put = action(&e, ActionKind::Put, &item);
            assert_eq!(
                units_on(&action_charges(&put, None, None)),
                vec![(None, "k", units)],
                "a put of {bytes} bytes"
            );
            let key = json!({"pk": {"S": "k"}});
            let delete = action(&e, ActionKind::Delete, &key);
            assert_eq!(
                units_on(&action_charges(&delete, Some(&item), None)),
                vec![(None, "k", units)],
                "a delete of a {bytes}-byte item"
            );
            let check = action(&e, ActionKind::Check, &key);
            assert_eq!(
                units_on(&action_charges(&check, Some(&item), None)),
                vec![(None, "k", units)],
                "a condition check of a {bytes}-byte item: write units, like DynamoDB"
            );
            let update = action(&e, ActionKind::Update, &key);
            assert_eq!(
                units_on(&action_charges(&update, None, Some(&item))),
                vec![(None, "k", units)],
                "an update leaving a {bytes}-byte item"
            );
        }
        let key = json!({"pk": {"S": "k"}});
        let check = action(&e, ActionKind::Check, &key);
        assert_eq!(
            units_on(&action_charges(&check, None, None)),
            vec![(None, "k", 2.0)],
            "checking a missing item costs one unit, twice"
        );
        // An overwrite pays for the larger item; its GSI entry is an ordinary write.
        let (old, new) = (sized("k", 5, Some("a")), sized("k", 1, Some("a")));
        let put = action(&e, ActionKind::Put, &new);
        assert_eq!(
            units_on(&action_charges(&put, Some(&old), None)),
            vec![(None, "k", 10.0), (Some("gsi1"), "a", 5.0)]
        );
    }

    #[test]
    fn a_transaction_over_one_keys_limit_is_throttled_whole() {
        let clock = ManualClock::new();
        let e = emulator(&clock); // 10 write units/s per key
        let small = |pk: &str| json!({"pk": {"S": pk}});
        for _ in 0..9 {
            e.admit(&e.put_charges("t", &e.table("t").unwrap(), &small("hot"), false))
                .unwrap();
        }
        let (cold, hot) = (small("cold"), small("hot"));
        let estimate = vec![
            action_charges(&action(&e, ActionKind::Put, &cold), None, None),
            action_charges(&action(&e, ActionKind::Put, &hot), None, None),
        ];
        let over = e.admit_all(&estimate.concat()).unwrap_err();
        assert_eq!(units_on(&over), vec![(None, "hot", 2.0)]);
        let throttled = throttled_actions(&estimate, &over);
        assert!(throttled[0].is_none() && throttled[1].is_some());

        let response = canceled_response(&throttled, &over);
        assert_eq!(response.status().as_u16(), 400);
        let body: Value = serde_json::from_slice(response.body().bytes().unwrap()).unwrap();
        assert_eq!(
            body["__type"],
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
        );
        assert_eq!(body["CancellationReasons"][0], json!({"Code": "None"}));
        assert_eq!(body["CancellationReasons"][1]["Code"], "ThrottlingError");
        assert_eq!(
            body["ThrottlingReasons"][0]["reason"],
            "TableWriteKeyRangeThroughputExceeded"
        );

        // Nothing was taken: the cold key still has its 10 units.
        let one = |pk: &str| e.put_charges("t", &e.table("t").unwrap(), &small(pk), false);
        assert_eq!(
            (0..12).filter(|_| e.admit(&one("cold")).is_ok()).count(),
            10
        );
        assert!(e.admit(&one("hot")).is_ok(), "the hot key's 10th unit");
    }

    #[test]
    fn a_transact_get_costs_twice_a_strong_read_of_each_item() {
        let clock = ManualClock::new();
        let e = emulator(&clock); // 30 read units/s per key
        let keys = e.table("t").unwrap();
        let key = |pk: &str| json!({"pk": {"S": pk}});
        let (k, small, missing) = (key("k"), key("small"), key("missing"));
        let gets = vec![
            Some(("t".to_owned(), keys.clone(), &k)),
            Some(("t".to_owned(), keys.clone(), &small)),
            Some(("t".to_owned(), keys.clone(), &missing)),
            None,
        ];
        let response = json!({"Responses": [
            {"Item": sized("k", 9, None)},
            {"Item": {"pk": {"S": "small"}}},
            {},
            {"Item": {"pk": {"S": "elsewhere"}}},
        ]});
        let charges = transact_get_charges(&gets, &response);
        assert_eq!(
            charges.iter().map(|c| units_on(c)).collect::<Vec<_>>(),
            vec![
                vec![(None, "k", 6.0)], // 9 KB: 3 strong read units, twice
                vec![(None, "small", 2.0)],
                vec![(None, "missing", 2.0)], // no item: still one unit, twice
                vec![],                       // a table the emulator does not know
            ]
        );
        let k_only = &charges[..1];
        assert_eq!(
            (0..6)
                .filter(|_| e.admit_all(&k_only.concat()).is_ok())
                .count(),
            5,
            "five 6-unit reads fill the key's 30"
        );
    }
}
