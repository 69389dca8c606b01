//! The runner's own writes: the copy that starts a move in two steps, and the tag of an untagged
//! item where it is. One item's move in one step, the delete of a stale old copy and the
//! condition that an item is unchanged since read are the runtime's (a write during a
//! transition moves its item first), reached through `__ops`.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use sharded_runtime::__ops::{
    is_marked, is_throttling_code, key_of, refused, reported, throttled_or, Holder, Prepared, Sent,
    Step, Store, Unchanged,
};
use sharded_runtime::capacity::{item_size, transactional_write_units, write_units};
use sharded_runtime::keys::Item;
use sharded_runtime::{Error, ShardedEntity};

/// What the first step of a two-step move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyOutcome {
    /// Copied to its current place; the old copy is still there, marked, for `delete_stale`.
    Copied,
    /// Its current place already held an item of the entity (a newer write): the old copy is
    /// stale and nothing was written; `delete_stale` removes it.
    Taken,
    /// Its current place holds an item that is not the entity's: nothing written, and the
    /// old copy is kept (never deleted for a copy the repository cannot read).
    Occupied,
    /// Already at its current place: nothing to do.
    InPlace,
    /// The old copy changed or went after it was read: nothing written; read it again.
    Changed,
    /// DynamoDB refused for capacity: nothing written; wait, then read it again.
    Throttled,
}

/// What [`tag_in_place`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TagOutcome {
    /// Tagged where it is.
    Tagged,
    /// It changed or went after it was read: nothing written; read it again.
    Changed,
    /// DynamoDB refused for capacity: nothing written; wait, then read it again.
    Throttled,
}

/// The estimated cost of the transaction of a move of an item `bytes` large, in one step or
/// the first of two ([`copy_item`]): what the runner reserves of its budget before sending it.
/// The delete of the stale old copy costs a plain write of it more.
pub(crate) fn estimated_units(bytes: u64) -> f64 {
    (2 * transactional_write_units(bytes)) as f64
}

/// The first step of a two-step move: copies `old` to its current place (marked `copy`), only
/// if nothing is there and `old` is unchanged, and marks `old` as moved (one
/// `TransactWriteItems`: a put, and an update of the old copy under the condition a check
/// would carry, which costs what the check did). The old copy stays until `delete_stale`,
/// which expects it marked (`marked`). An old copy already marked is never copied again:
/// `Taken`, for `delete_stale`.
pub(crate) async fn copy_item<E: ShardedEntity>(
    repo: Store<'_>,
    old: &Item,
) -> Result<Step<CopyOutcome>, Error> {
    let Some(prepared) = Prepared::of::<E>(old)? else {
        return Ok(Step::new(CopyOutcome::InPlace, 0.0));
    };
    if is_marked(E::SCHEMA, old) {
        return Ok(Step::new(CopyOutcome::Taken, 0.0));
    }
    let both = prepared.transaction_units();
    let (reasons, message, current) = match prepared.send::<E>(repo).await? {
        Sent::Done(write_units) => {
            return Ok(Step {
                outcome: CopyOutcome::Copied,
                write_units,
            })
        }
        Sent::Failed(error) => return throttled_or(error, CopyOutcome::Throttled),
        Sent::Canceled(codes, message, current) => (codes, message, current),
    };
    let codes: Vec<&str> = reasons.iter().map(String::as_str).collect();
    let outcome = match codes.as_slice() {
        // The old copy changed or went: whatever the current place holds, read it again.
        [_, "ConditionalCheckFailed"] => CopyOutcome::Changed,
        ["ConditionalCheckFailed", "None"] => match prepared.holder::<E>(repo, current).await? {
            Holder::Entity => CopyOutcome::Taken,
            Holder::Foreign => CopyOutcome::Occupied,
            Holder::Nobody => CopyOutcome::Changed,
        },
        _ if codes.iter().any(|c| is_throttling_code(c)) => {
            return Ok(Step::new(CopyOutcome::Throttled, 0.0))
        }
        [_, "TransactionConflict"] | ["TransactionConflict", _] => CopyOutcome::Changed,
        _ => return Err(refused(E::SCHEMA, old, &reasons, message.as_deref())),
    };
    Ok(Step {
        outcome,
        write_units: both,
    })
}

/// Tags `item`, an untagged item of the entity at its current place (written by another
/// service, in a table that tags): the one write that adopts it. Only the tag is set, and only
/// if the item is still exactly as read, so a record rewritten since is classified again
/// rather than tagged unseen.
pub(crate) async fn tag_in_place<E: ShardedEntity>(
    repo: Store<'_>,
    item: &Item,
) -> Result<Step<TagOutcome>, Error> {
    let schema = E::SCHEMA;
    let Some(tag) = schema.tag_attribute() else {
        return Err(Error::Bug(format!(
            "{} has no tag to write: its table recognises items by their keys",
            schema.entity
        )));
    };
    let Unchanged {
        condition,
        mut names,
        mut values,
    } = Unchanged::of::<E>(item)?;
    names.insert("#et".to_owned(), tag.to_owned());
    values.insert(
        ":tag".to_owned(),
        AttributeValue::S(schema.entity.to_owned()),
    );
    let estimate = write_units(item_size(item) as u64) as f64;
    let result = repo
        .client()
        .update_item()
        .table_name(repo.table())
        .set_key(Some(key_of(schema, item)))
        .update_expression("SET #et = :tag")
        .condition_expression(condition)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_consumed_capacity(ReturnConsumedCapacity::Total)
        .send()
        .await;
    match result {
        Ok(output) => Ok(Step::new(
            TagOutcome::Tagged,
            reported(output.consumed_capacity.as_slice(), estimate),
        )),
        Err(e) => match e.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => {
                Ok(Step::new(TagOutcome::Changed, estimate))
            }
            other => throttled_or(
                sharded_runtime::__ops::dynamo_error("UpdateItem", repo.table(), other),
                TagOutcome::Throttled,
            ),
        },
    }
}
