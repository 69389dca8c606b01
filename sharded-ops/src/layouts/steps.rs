//! The steps of a change of one key's layout (see the runtime's `layouts` for the protocol),
//! and the whole change run step by step: what [`ChangeLayout`](super::ChangeLayout)'s
//! methods run.

use std::time::Duration;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use sharded_runtime::__ops::{
    self, check_key, declared_n, layouts_parts, max_n, stored_directory, to_item, LayoutsParts,
    StoredDirectory as Stored,
};
use sharded_runtime::layouts::{KeyEntry, LayoutError, Layouts, Phase};
use sharded_runtime::schema::KeyLayout;
use sharded_runtime::{Error, ShardedEntity};

use super::moves::{migrate_key, remaining, KeyMigration};

/// How many times `change` migrates again when `finish` still finds items at the previous
/// count (writes that arrived late).
const FINISH_ATTEMPTS: usize = 5;

pub(super) async fn begin<E: ShardedEntity>(
    layouts: &Layouts<E>,
    key: &str,
    to: u32,
) -> Result<KeyEntry, Error> {
    check_key::<E>(key)?;
    let max_n = max_n::<E>()?;
    if !(1..=max_n).contains(&to) {
        return Err(LayoutError::OutOfRange {
            entity: E::SCHEMA.entity,
            key: key.to_owned(),
            n: to,
            max_n,
        }
        .into());
    }
    let parts = layouts_parts(layouts);
    let mut stored = stored_directory(layouts).await?;
    let from = match stored.entries.get(key) {
        None => declared_n::<E>(),
        Some(entry) if entry.phase == Phase::Steady => entry.to,
        Some(entry) => {
            return Err(LayoutError::CannotBegin {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                reason: format!(
                    "it is changing from {} to {} shards ({}); finish that change first",
                    entry.from,
                    entry.to,
                    entry.phase.name()
                ),
            }
            .into())
        }
    };
    if from == to {
        return Err(LayoutError::CannotBegin {
            entity: E::SCHEMA.entity,
            key: key.to_owned(),
            reason: format!("it has {to} shards already"),
        }
        .into());
    }
    let entry = KeyEntry {
        from,
        to,
        phase: Phase::Reading,
        since: parts.step_now(),
    };
    stored.entries.insert(key.to_owned(), entry);
    write::<E>(parts, stored).await?;
    Ok(entry)
}

pub(super) async fn advance<E: ShardedEntity>(
    layouts: &Layouts<E>,
    key: &str,
) -> Result<KeyEntry, Error> {
    check_key::<E>(key)?;
    let parts = layouts_parts(layouts);
    let mut stored = stored_directory(layouts).await?;
    let entry = in_phase::<E>(&stored, key, Phase::Reading, "advance")?;
    waited::<E>(parts, key, &entry, "advance")?;
    let entry = KeyEntry {
        phase: Phase::Writing,
        since: parts.step_now(),
        ..entry
    };
    stored.entries.insert(key.to_owned(), entry);
    write::<E>(parts, stored).await?;
    Ok(entry)
}

pub(super) async fn migrate<E: ShardedEntity>(
    layouts: &Layouts<E>,
    key: &str,
) -> Result<KeyMigration, Error> {
    check_key::<E>(key)?;
    let parts = layouts_parts(layouts);
    let stored = stored_directory(layouts).await?;
    let entry = in_phase::<E>(&stored, key, Phase::Writing, "migrate")?;
    waited::<E>(parts, key, &entry, "migrate")?;
    migrate_key::<E>(parts, key, entry).await
}

pub(super) async fn finish<E: ShardedEntity>(
    layouts: &Layouts<E>,
    key: &str,
) -> Result<KeyLayout, Error> {
    check_key::<E>(key)?;
    let parts = layouts_parts(layouts);
    let mut stored = stored_directory(layouts).await?;
    let entry = in_phase::<E>(&stored, key, Phase::Writing, "finish")?;
    waited::<E>(parts, key, &entry, "finish")?;
    let left = remaining::<E>(parts, key, entry).await?;
    if left > 0 {
        return Err(LayoutError::ItemsRemain {
            entity: E::SCHEMA.entity,
            key: key.to_owned(),
            remaining: left,
        }
        .into());
    }
    if entry.to == declared_n::<E>() {
        stored.entries.remove(key);
    } else {
        stored.entries.insert(
            key.to_owned(),
            KeyEntry {
                phase: Phase::Steady,
                since: parts.step_now(),
                ..entry
            },
        );
    }
    write::<E>(parts, stored).await?;
    Ok(KeyLayout::steady(entry.to))
}

pub(super) async fn change<E: ShardedEntity>(
    layouts: &Layouts<E>,
    key: &str,
    to: u32,
) -> Result<KeyMigration, Error> {
    check_key::<E>(key)?;
    let parts = layouts_parts(layouts);
    let mut entry = match layouts.entries().await?.get(key).copied() {
        Some(entry) if entry.phase != Phase::Steady && entry.to == to => entry,
        // Already there (a change that finished, run again): nothing to do.
        Some(entry) if entry.phase == Phase::Steady && entry.to == to => {
            return Ok(KeyMigration::default())
        }
        None if to == declared_n::<E>() => return Ok(KeyMigration::default()),
        _ => begin(layouts, key, to).await?,
    };
    if entry.phase == Phase::Reading {
        sleep_until_due(parts, &entry).await;
        entry = advance(layouts, key).await?;
    }
    sleep_until_due(parts, &entry).await;
    let mut total = KeyMigration::default();
    for _ in 0..FINISH_ATTEMPTS {
        loop {
            let run = migrate(layouts, key).await?;
            total.add(&run);
            if run.blocked > 0 {
                return Err(LayoutError::Blocked {
                    entity: E::SCHEMA.entity,
                    key: key.to_owned(),
                    blocked: run.blocked,
                }
                .into());
            }
            if run.left == 0 {
                break;
            }
            // Items a writer changed while they moved, or throttled moves: again, a little
            // later.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        match finish(layouts, key).await {
            Ok(_) => return Ok(total),
            // A write placed under `reading` that arrived late (retried by the SDK past the
            // margin) left an item at the previous count: move it too.
            Err(Error::Layout(LayoutError::ItemsRemain { .. })) => {
                tokio::time::sleep(parts.timing().margin).await;
            }
            Err(e) => return Err(e),
        }
    }
    finish(layouts, key).await?;
    Ok(total)
}

async fn sleep_until_due(parts: LayoutsParts<'_>, entry: &KeyEntry) {
    let due = entry.since + parts.timing().step_wait();
    let now = parts.step_now();
    if due > now {
        tokio::time::sleep(due - now).await;
    }
}

fn in_phase<E: ShardedEntity>(
    stored: &Stored,
    key: &str,
    phase: Phase,
    step: &'static str,
) -> Result<KeyEntry, Error> {
    match stored.entries.get(key) {
        Some(entry) if entry.phase == phase => Ok(*entry),
        found => {
            let (now, hint) = match found.map(|e| e.phase) {
                None | Some(Phase::Steady) => ("steady", "start a change with `begin`"),
                Some(Phase::Reading) => ("reading", "the next step is `advance`"),
                Some(Phase::Writing) => ("writing", "the next steps are `migrate`, then `finish`"),
            };
            Err(LayoutError::WrongPhase {
                entity: E::SCHEMA.entity,
                key: key.to_owned(),
                phase: now,
                step,
                hint,
            }
            .into())
        }
    }
}

/// Refuses a step before the phase is a lease and a margin old.
fn waited<E: ShardedEntity>(
    parts: LayoutsParts<'_>,
    key: &str,
    entry: &KeyEntry,
    step: &'static str,
) -> Result<(), Error> {
    let due = entry.since + parts.timing().step_wait();
    let now = parts.step_now();
    if now < due {
        return Err(LayoutError::TooEarly {
            entity: E::SCHEMA.entity,
            key: key.to_owned(),
            step,
            wait: due - now,
        }
        .into());
    }
    Ok(())
}

/// Writes the directory, only if nobody wrote it since it was read; this process then reads
/// it again before its next request.
async fn write<E: ShardedEntity>(parts: LayoutsParts<'_>, stored: Stored) -> Result<(), Error> {
    let read = stored.revision;
    let item = to_item(
        E::SCHEMA,
        &Stored {
            revision: read + 1,
            ..stored
        },
    );
    let request = parts
        .client()
        .put_item()
        .table_name(parts.table())
        .set_item(Some(item))
        .expression_attribute_names("#pk", E::SCHEMA.pk.attribute);
    let request = if read == 0 {
        request.condition_expression("attribute_not_exists(#pk)")
    } else {
        request
            .condition_expression("attribute_exists(#pk) AND revision = :read")
            .expression_attribute_values(":read", AttributeValue::N(read.to_string()))
    };
    let result = request.send().await;
    parts.forget(E::SCHEMA.entity);
    match result {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.as_service_error(),
                Some(PutItemError::ConditionalCheckFailedException(_))
            ) =>
        {
            Err(LayoutError::Conflict {
                entity: E::SCHEMA.entity,
            }
            .into())
        }
        Err(e) => Err(__ops::dynamo_error("PutItem", parts.table(), e)),
    }
}
