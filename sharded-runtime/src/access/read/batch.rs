//! Batch writes (`BatchWriteItem`, 25 per request) and reads (`BatchGetItem`, 100 per
//! request) that lose nothing: unprocessed items are retried with exponential backoff and
//! full jitter within a bounded budget, and whatever is still unprocessed when the budget
//! runs out is returned in the error, with the typed error that stopped it (and, for reads,
//! what was read).
//!
//! Batch writes carry no conditions (`BatchWriteItem` takes none), so unlike `Repo::put`
//! they are not guarded by entity: they are the unguarded fast path.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{DeleteRequest, KeysAndAttributes, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use futures::stream::{self, StreamExt};
use tracing::Instrument;

use crate::access::retry::{retryable, RetryPolicy};
use crate::error::Error;
use crate::item::Item;

/// Items per `BatchWriteItem` (DynamoDB's limit).
pub(crate) const WRITE_BATCH: usize = 25;
/// Keys per `BatchGetItem` (DynamoDB's limit).
pub(crate) const GET_BATCH: usize = 100;

/// One write of a batch.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    Put(Item),
    Delete(Item),
}

impl Write {
    pub(crate) fn item(&self) -> &Item {
        match self {
            Write::Put(item) | Write::Delete(item) => item,
        }
    }

    fn into_request(self) -> WriteRequest {
        match self {
            Write::Put(item) => WriteRequest::builder()
                .put_request(
                    PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .expect("item is set"),
                )
                .build(),
            Write::Delete(key) => WriteRequest::builder()
                .delete_request(
                    DeleteRequest::builder()
                        .set_key(Some(key))
                        .build()
                        .expect("key is set"),
                )
                .build(),
        }
    }

    fn from_request(request: WriteRequest) -> Option<Write> {
        if let Some(put) = request.put_request {
            return Some(Write::Put(put.item));
        }
        request.delete_request.map(|d| Write::Delete(d.key))
    }
}

/// The last write of each key, in the order each key was first written. DynamoDB refuses a
/// `BatchWriteItem` that names a key twice, and batches run concurrently, so two writes of a
/// key in one call would race: keeping only the last makes the last write given the one that
/// lands, every time, and spends no request on writes that would be overwritten.
pub(crate) fn last_write_per_key<K: Eq + std::hash::Hash>(
    writes: Vec<Write>,
    key: impl Fn(&Item) -> K,
) -> Vec<Write> {
    let mut position: HashMap<K, usize> = HashMap::with_capacity(writes.len());
    let mut kept: Vec<Write> = Vec::with_capacity(writes.len());
    for write in writes {
        match position.entry(key(write.item())) {
            Entry::Occupied(at) => kept[*at.get()] = write,
            Entry::Vacant(slot) => {
                slot.insert(kept.len());
                kept.push(write);
            }
        }
    }
    kept
}

struct Outcome {
    unprocessed: Vec<Item>,
    attempts: u32,
    /// The error of the last attempt, if that request failed outright.
    error: Option<Error>,
}

/// One round of a batch request: what it returned, and what is left to do.
struct Round<T, R> {
    found: Vec<R>,
    remaining: Vec<T>,
}

/// What [`retry_unprocessed`] ends with: what was found, what is left, and why.
struct Retried<T, R> {
    found: Vec<R>,
    pending: Vec<T>,
    attempts: u32,
    error: Option<Error>,
}

/// Sends `pending` until nothing is left, the attempt budget is spent, or an error that
/// will not pass on retry comes back, sleeping a full-jitter backoff between rounds.
/// `send` makes one request of the entries still pending. Shared by writes and reads, so
/// both retry the same way.
async fn retry_unprocessed<T, R, Fut>(
    mut pending: Vec<T>,
    retry: &RetryPolicy,
    mut send: impl FnMut(Vec<T>, u32) -> Fut,
) -> Retried<T, R>
where
    T: Clone,
    Fut: std::future::Future<Output = Result<Round<T, R>, (bool, Error)>>,
{
    let mut found = Vec::new();
    let mut attempts = 0;
    let mut error = None;
    while !pending.is_empty() {
        if attempts > 0 {
            tokio::time::sleep(retry.backoff(attempts - 1)).await;
        }
        attempts += 1;
        match send(pending.clone(), attempts).await {
            Ok(round) => {
                found.extend(round.found);
                pending = round.remaining;
                // The cause reported is the last attempt's: an error an answered attempt
                // came after is no longer why items are left.
                error = None;
            }
            Err((retryable, failure)) => {
                error = Some(failure);
                if !retryable {
                    break;
                }
            }
        }
        if attempts >= retry.max_attempts {
            break;
        }
    }
    Retried {
        found,
        pending,
        attempts,
        error,
    }
}

/// An SDK error of `operation` on `table` as (worth retrying, the typed error).
fn classify<E, R>(operation: &'static str, table: &str, err: SdkError<E, R>) -> (bool, Error)
where
    E: ProvideErrorMetadata,
    aws_sdk_dynamodb::Error: From<SdkError<E, R>>,
{
    (retryable(&err), Error::dynamo(operation, table, err))
}

async fn write_batch(
    client: &Client,
    table: &str,
    batch: Vec<Write>,
    retry: &RetryPolicy,
) -> Outcome {
    let retried = retry_unprocessed(batch, retry, |pending: Vec<Write>, attempt| async move {
        let items = pending.len();
        let requests: Vec<WriteRequest> = pending.into_iter().map(Write::into_request).collect();
        let output = client
            .batch_write_item()
            .request_items(table, requests)
            .send()
            .instrument(tracing::debug_span!("sharded.batch_round", items, attempt))
            .await
            .map_err(|e| classify(WRITE_OPERATION, table, e))?;
        Ok(Round::<Write, ()> {
            found: Vec::new(),
            remaining: output
                .unprocessed_items
                .and_then(|mut u| u.remove(table))
                .unwrap_or_default()
                .into_iter()
                .filter_map(Write::from_request)
                .collect(),
        })
    })
    .await;
    Outcome {
        unprocessed: retried
            .pending
            .into_iter()
            .map(|w| w.item().clone())
            .collect(),
        attempts: retried.attempts,
        error: retried.error,
    }
}

const WRITE_OPERATION: &str = "BatchWriteItem";

/// The span of one batch write ([`BATCH_WRITE_SPAN`](crate::telemetry::BATCH_WRITE_SPAN)),
/// the parent of its requests, retries included.
fn write_span(table: &str, items: usize) -> tracing::Span {
    use crate::telemetry::*;
    tracing::info_span!(
        "sharded.batch_write",
        { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
        { TABLE_NAMES } = table,
        { ITEMS_EMITTED } = items,
    )
}

/// The span of one batch read ([`BATCH_GET_SPAN`](crate::telemetry::BATCH_GET_SPAN)), the
/// parent of its requests, retries included; the items found are recorded at its end.
fn get_span(table: &str) -> tracing::Span {
    use crate::telemetry::*;
    tracing::info_span!(
        "sharded.batch_get",
        { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
        { TABLE_NAMES } = table,
        { ITEMS_READ } = tracing::field::Empty,
    )
}
const GET_OPERATION: &str = "BatchGetItem";

/// Runs all writes, 25 per request and `concurrency` requests at once. The caller keeps
/// one write per key first ([`last_write_per_key`]): DynamoDB refuses a batch naming a key
/// twice.
pub(crate) async fn write(
    client: &Client,
    table: &str,
    writes: Vec<Write>,
    retry: &RetryPolicy,
    concurrency: usize,
) -> Result<(), Error> {
    let span = write_span(table, writes.len());
    let batches = chunks(writes, WRITE_BATCH);
    let outcomes: Vec<Outcome> = crate::telemetry::within(
        span,
        None,
        stream::iter(batches)
            .map(|batch| write_batch(client, table, batch, retry))
            .buffer_unordered(concurrency.max(1))
            .collect(),
    )
    .await;
    finish(WRITE_OPERATION, outcomes, Vec::new()).map(drop)
}

/// `items` in consecutive chunks of at most `size`.
fn chunks<T>(items: Vec<T>, size: usize) -> Vec<Vec<T>> {
    let mut chunks = Vec::with_capacity(items.len().div_ceil(size));
    let mut rest = items.into_iter().peekable();
    while rest.peek().is_some() {
        chunks.push(rest.by_ref().take(size).collect());
    }
    chunks
}

/// `retrieved` (what a read got) when every batch of a run finished, or else the error
/// carrying what was not done and `retrieved`, so a failed read loses nothing either.
fn finish(
    operation: &'static str,
    outcomes: Vec<Outcome>,
    retrieved: Vec<Item>,
) -> Result<Vec<Item>, Error> {
    let mut unprocessed = Vec::new();
    let mut attempts = 0;
    let mut source = None;
    for outcome in outcomes {
        if !outcome.unprocessed.is_empty() {
            unprocessed.extend(outcome.unprocessed);
            attempts = attempts.max(outcome.attempts);
            // The first failed batch's cause: batches of one run meet the same table, so
            // one cause stands for them.
            source = source.or(outcome.error);
        }
    }
    if unprocessed.is_empty() {
        Ok(retrieved)
    } else {
        Err(Error::BatchIncomplete {
            operation,
            unprocessed,
            retrieved,
            attempts,
            source: source.map(Box::new),
        })
    }
}

async fn get_batch(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
    retry: &RetryPolicy,
    consistent: bool,
) -> (Vec<Item>, Outcome) {
    let retried = retry_unprocessed(keys, retry, |pending: Vec<Item>, attempt| async move {
        let keys = pending.len();
        let request = KeysAndAttributes::builder()
            .set_keys(Some(pending))
            .set_consistent_read(consistent.then_some(true))
            .build()
            .expect("keys are set");
        let output = client
            .batch_get_item()
            .request_items(table, request)
            .send()
            .instrument(tracing::debug_span!("sharded.batch_round", keys, attempt))
            .await
            .map_err(|e| classify(GET_OPERATION, table, e))?;
        Ok(Round {
            found: output
                .responses
                .and_then(|mut r| r.remove(table))
                .unwrap_or_default(),
            remaining: output
                .unprocessed_keys
                .and_then(|mut u| u.remove(table))
                .map(|k| k.keys)
                .unwrap_or_default(),
        })
    })
    .await;
    (
        retried.found,
        Outcome {
            unprocessed: retried.pending,
            attempts: retried.attempts,
            error: retried.error,
        },
    )
}

/// Reads all keys (de-duplicated; DynamoDB rejects a batch naming a key twice), 100 per
/// request, concurrently. Keys with no item are absent from the result. When some keys
/// cannot be read, the error carries them and every item that was read
/// ([`Error::BatchIncomplete`]'s `unprocessed` and `retrieved`).
pub(crate) async fn get(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
    retry: &RetryPolicy,
    concurrency: usize,
) -> Result<Vec<Item>, Error> {
    get_with(client, table, keys, retry, concurrency, false).await
}

/// [`get`], strongly consistent: what a write reads before it writes (a settle's search for
/// an old copy).
pub(crate) async fn get_consistent(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
    retry: &RetryPolicy,
) -> Result<Vec<Item>, Error> {
    get_with(client, table, keys, retry, 8, true).await
}

/// [`get`] or [`get_consistent`], as `consistent` says, `concurrency` batches at a time.
pub(crate) async fn get_with(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
    retry: &RetryPolicy,
    concurrency: usize,
    consistent: bool,
) -> Result<Vec<Item>, Error> {
    let mut seen = HashSet::new();
    let unique: Vec<Item> = keys
        .into_iter()
        .filter(|k| {
            let mut parts: Vec<(String, String)> = k
                .iter()
                .map(|(n, v)| (n.clone(), format!("{v:?}")))
                .collect();
            parts.sort();
            seen.insert(parts)
        })
        .collect();
    let batches = chunks(unique, GET_BATCH);
    let span = get_span(table);
    let results: Vec<(Vec<Item>, Outcome)> = crate::telemetry::within(
        span.clone(),
        None,
        stream::iter(batches)
            .map(|batch| get_batch(client, table, batch, retry, consistent))
            .buffer_unordered(concurrency.max(1))
            .collect(),
    )
    .await;
    span.record(
        crate::telemetry::ITEMS_READ,
        results.iter().map(|(items, _)| items.len()).sum::<usize>(),
    );
    let mut found = Vec::new();
    let mut outcomes = Vec::new();
    for (items, outcome) in results {
        found.extend(items);
        outcomes.push(outcome);
    }
    finish(GET_OPERATION, outcomes, found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;
    use std::time::Duration;

    fn put(pk: &str, value: &str) -> Write {
        Write::Put(Item::from([
            ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
            ("v".to_owned(), AttributeValue::S(value.to_owned())),
        ]))
    }

    fn text(w: &Write, attribute: &str) -> String {
        w.item()[attribute].as_s().unwrap().clone()
    }

    #[test]
    fn the_last_write_of_each_key_is_kept() {
        // 20 keys written three times each, 20 apart: every repeat lands in another chunk of
        // 25 were they sent as given.
        let writes: Vec<Write> = (0..60)
            .map(|i| put(&format!("k{}", i % 20), &format!("round {}", i / 20)))
            .collect();
        let kept = last_write_per_key(writes, |item| item["pk"].as_s().unwrap().clone());
        assert_eq!(kept.len(), 20, "one write per key");
        for (i, write) in kept.iter().enumerate() {
            assert_eq!(text(write, "pk"), format!("k{i}"), "first-seen order");
            assert_eq!(text(write, "v"), "round 2", "the last value given");
        }
    }

    #[test]
    fn deletes_and_puts_of_one_key_keep_the_last() {
        let key = Item::from([("pk".to_owned(), AttributeValue::S("k".to_owned()))]);
        let writes = vec![put("k", "a"), Write::Delete(key), put("j", "b")];
        let kept = last_write_per_key(writes, |item| item["pk"].as_s().unwrap().clone());
        assert!(matches!(kept[0], Write::Delete(_)), "{kept:?}");
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn chunks_hold_at_most_the_limit_and_lose_nothing() {
        let sizes: Vec<usize> = chunks((0..60).collect(), WRITE_BATCH)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, [25, 25, 10]);
        assert!(chunks(Vec::<u8>::new(), WRITE_BATCH).is_empty());
        let all: Vec<u32> = chunks((0..250).collect(), GET_BATCH).concat();
        assert_eq!(all, (0..250).collect::<Vec<u32>>());
    }

    #[test]
    fn backoff_is_bounded_and_jittered() {
        let p = RetryPolicy::default();
        let delays: Vec<Duration> = (0..50).map(|_| p.backoff(3)).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_millis(200)));
        assert!(delays.iter().any(|d| *d != delays[0]), "no jitter");
        assert!((0..40).all(|a| p.backoff(a) <= p.max_delay));
    }
}
