//! Moving one item from its previous layout to its current place, safely under concurrent
//! writers: the step the migration runner repeats, and what an update of a not-yet-migrated
//! item does first.
//!
//! One move is one `TransactWriteItems` of two actions:
//!
//! - **copy**: put the item at its current place, only if nothing is there
//!   (`attribute_not_exists`). A user's write to the current place since the transition was
//!   declared is newer than the old copy, and wins;
//! - **delete**: remove the old copy, only if it is unchanged since it was read (its version
//!   for a versioned entity, otherwise every attribute compared).
//!
//! Both or neither happen. When the copy is refused because the current place holds an item,
//! the old copy is stale: it is deleted on its own, still only if unchanged. When the delete is
//! refused, the old copy changed (or went) after it was read: nothing was written, and the
//! caller reads it again. Nothing is overwritten and nothing is lost; every refusal is an
//! outcome the caller counts.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnConsumedCapacity, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};

use crate::access::condition::{Names, Values};
use crate::access::entity::{Item, ShardedEntity};
use crate::access::repo::Repo;
use crate::access::transaction::random_token;
use crate::capacity::units::{item_size, write_units};
use crate::error::Error;
use crate::keys::schema::{EntitySchema, PreviousLayout, ENTITY_ATTRIBUTE};

/// What one move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moved {
    /// Copied to its current place and removed from the old one, atomically.
    Moved,
    /// Its current place already held an item (a newer write): the stale old copy was removed.
    Superseded,
    /// Already at its current place (the layouts share this partition): nothing to do.
    InPlace,
    /// The old copy changed or went after it was read: nothing written; read it again.
    Changed,
}

/// A move's outcome and the write units it used (from DynamoDB's consumed capacity when
/// returned, otherwise from the item sizes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MoveReport {
    pub moved: Moved,
    pub write_units: f64,
}

/// Tags an item of a legacy partition that carries no entity attribute (written before the
/// table adopted `sharded`) as `E`'s, so it can be read and moved. Items of another entity
/// are left as they are.
pub(crate) fn adopt_untagged(schema: &EntitySchema, item: &mut Item) {
    if matches!(schema.pk.previous, Some(PreviousLayout::Legacy { .. }))
        && !item.contains_key(ENTITY_ATTRIBUTE)
    {
        item.insert(
            ENTITY_ATTRIBUTE.to_owned(),
            AttributeValue::S(schema.entity.to_owned()),
        );
    }
}

/// The item `old` as it is stored at its current place: its own attributes (kept, so nothing
/// the struct does not know is lost), overlaid with what the entity writes (the current key,
/// index keys, the entity attribute).
pub(crate) fn rebuilt<E: ShardedEntity>(old: &Item) -> Result<Item, Error> {
    let mut tagged = old.clone();
    adopt_untagged(E::SCHEMA, &mut tagged);
    let entity = E::from_item(tagged)?;
    let mut item = old.clone();
    item.extend(entity.to_item()?);
    Ok(item)
}

/// The condition that `old` is unchanged: its version, for a versioned entity; otherwise
/// every attribute equal (and the item present).
fn unchanged(schema: &EntitySchema, old: &Item, names: &mut Names, values: &mut Values) -> String {
    names.insert("#pk".to_owned(), schema.pk.attribute.to_owned());
    let mut parts = vec!["attribute_exists(#pk)".to_owned()];
    let compared: Vec<(&String, &AttributeValue)> = match schema.version {
        Some(version) if old.contains_key(version) => old
            .iter()
            .filter(|(name, _)| name.as_str() == version)
            .collect(),
        _ => {
            let keys = [Some(schema.pk.attribute), schema.sk.map(|s| s.attribute)];
            let mut all: Vec<_> = old
                .iter()
                .filter(|(name, _)| !keys.contains(&Some(name.as_str())))
                .collect();
            all.sort_by(|a, b| a.0.cmp(b.0));
            all
        }
    };
    for (i, (name, value)) in compared.into_iter().enumerate() {
        names.insert(format!("#u{i}"), name.clone());
        values.insert(format!(":u{i}"), value.clone());
        parts.push(format!("#u{i} = :u{i}"));
    }
    // An attribute added since the read is a change too, and only an absent entity attribute
    // (an untagged legacy item) can be checked for cheaply.
    if !old.contains_key(ENTITY_ATTRIBUTE) {
        names.insert("#et".to_owned(), ENTITY_ATTRIBUTE.to_owned());
        parts.push("attribute_not_exists(#et)".to_owned());
    }
    parts.join(" AND ")
}

/// The primary key attributes of a stored item.
fn key_of(schema: &EntitySchema, item: &Item) -> Item {
    let mut key = Item::new();
    for attribute in [Some(schema.pk.attribute), schema.sk.map(|s| s.attribute)]
        .into_iter()
        .flatten()
    {
        if let Some(value) = item.get(attribute) {
            key.insert(attribute.to_owned(), value.clone());
        }
    }
    key
}

/// Moves `old` (an item of `E` as read from a previous-layout partition) to its current
/// place: see the module documentation.
pub(crate) async fn move_item<E: ShardedEntity>(
    repo: &Repo<E>,
    old: &Item,
) -> Result<MoveReport, Error> {
    let schema = E::SCHEMA;
    let new = rebuilt::<E>(old)?;
    let (old_key, new_key) = (key_of(schema, old), key_of(schema, &new));
    if old_key == new_key {
        return Ok(MoveReport {
            moved: Moved::InPlace,
            write_units: 0.0,
        });
    }
    let (old_units, new_units) = (
        write_units(item_size(old) as u64) as f64,
        write_units(item_size(&new) as u64) as f64,
    );
    let estimate = |both: bool| {
        let (delete, put) = (old_units, new_units);
        // Transactional writes cost twice.
        if both {
            2.0 * (delete + put)
        } else {
            delete
        }
    };
    let (mut names, mut values) = (Names::new(), Values::new());
    let condition = unchanged(schema, old, &mut names, &mut values);
    let delete = Delete::builder()
        .table_name(repo.table())
        .set_key(Some(old_key.clone()))
        .condition_expression(condition.clone())
        .set_expression_attribute_names(Some(names.clone()))
        .set_expression_attribute_values((!values.is_empty()).then(|| values.clone()))
        .build()
        .map_err(|e| Error::InvalidUpdate(format!("could not build the move's delete: {e}")))?;
    let put = Put::builder()
        .table_name(repo.table())
        .set_item(Some(new))
        .condition_expression("attribute_not_exists(#pk)")
        .expression_attribute_names("#pk", schema.pk.attribute)
        .build()
        .map_err(|e| Error::InvalidUpdate(format!("could not build the move's put: {e}")))?;
    let result = repo
        .client()
        .transact_write_items()
        .transact_items(TransactWriteItem::builder().put(put).build())
        .transact_items(TransactWriteItem::builder().delete(delete).build())
        // Idempotent under the SDK's retries: a commit whose answer was lost is not re-run.
        .client_request_token(random_token())
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await;
    let canceled = match result {
        Ok(output) => {
            let units: f64 = output
                .consumed_capacity()
                .iter()
                .filter_map(|c| c.capacity_units())
                .sum();
            return Ok(MoveReport {
                moved: Moved::Moved,
                write_units: if units > 0.0 { units } else { estimate(true) },
            });
        }
        Err(e) => match e.into_service_error() {
            TransactWriteItemsError::TransactionCanceledException(canceled) => canceled,
            other => return Err(Error::dynamo("TransactWriteItems", repo.table(), other)),
        },
    };
    let codes: Vec<&str> = canceled
        .cancellation_reasons()
        .iter()
        .map(|r| r.code().unwrap_or("None"))
        .collect();
    let spent = estimate(true);
    match codes.as_slice() {
        // The current place holds an item: a newer write. The old copy is stale.
        ["ConditionalCheckFailed", "None"]
        | ["ConditionalCheckFailed", "ConditionalCheckFailed"] => {
            let result = repo
                .client()
                .delete_item()
                .table_name(repo.table())
                .set_key(Some(old_key))
                .condition_expression(condition)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values((!values.is_empty()).then_some(values))
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::None)
                .send()
                .await;
            match result {
                Ok(_) => Ok(MoveReport {
                    moved: Moved::Superseded,
                    write_units: spent + estimate(false),
                }),
                Err(e) => match e.into_service_error() {
                    DeleteItemError::ConditionalCheckFailedException(_) => Ok(MoveReport {
                        moved: Moved::Changed,
                        write_units: spent + estimate(false),
                    }),
                    other => Err(Error::dynamo("DeleteItem", repo.table(), other)),
                },
            }
        }
        // Throttled: nothing was written; the caller slows down and reads it again.
        _ if codes
            .iter()
            .any(|c| c.contains("Throughput") || c.contains("Throttl")) =>
        {
            Ok(MoveReport {
                moved: Moved::Changed,
                write_units: 0.0,
            })
        }
        // The old copy changed or went since it was read, or another transaction holds one
        // of the items: nothing was written; read it again.
        [_, "ConditionalCheckFailed"] | [_, "TransactionConflict"] | ["TransactionConflict", _] => {
            Ok(MoveReport {
                moved: Moved::Changed,
                write_units: spent,
            })
        }
        _ => Err(Error::InvalidUpdate(format!(
            "moving an item of {} was refused by DynamoDB for reasons {codes:?}",
            schema.entity
        ))),
    }
}
