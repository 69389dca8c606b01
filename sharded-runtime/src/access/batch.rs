//! Batch writes (`BatchWriteItem`, 25 per request) and reads (`BatchGetItem`, 100 per
//! request) that lose nothing: unprocessed items are retried with exponential backoff and
//! full jitter within a bounded budget, and whatever is still unprocessed when the budget
//! runs out is returned in the error.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{DeleteRequest, KeysAndAttributes, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use futures::stream::{self, StreamExt};
use tracing::Instrument;

use crate::access::entity::Item;
use crate::error::{is_throttling_code, Error};

/// Items per `BatchWriteItem` (DynamoDB's limit).
pub(crate) const WRITE_BATCH: usize = 25;
/// Keys per `BatchGetItem` (DynamoDB's limit).
pub(crate) const GET_BATCH: usize = 100;

/// How long batch operations keep retrying unprocessed items.
///
/// Attempt `k` (from 0) waits a random time in `[0, min(max_delay, base_delay * 2^k)]`
/// ("full jitter"), so clients throttled together do not retry together.
///
/// ```
/// use std::time::Duration;
/// use sharded::RetryPolicy;
/// let patient = RetryPolicy { max_attempts: 20, ..RetryPolicy::default() };
/// assert!(patient.max_delay >= Duration::from_millis(100));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests per batch, the first included, before giving up.
    pub max_attempts: u32,
    /// The backoff cap of the first retry.
    pub base_delay: Duration,
    /// The largest backoff cap.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(25),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// The full-jitter delay before retry number `attempt` (0-based).
    ///
    /// ```
    /// use sharded::RetryPolicy;
    /// let p = RetryPolicy::default();
    /// assert!(p.backoff(30) <= p.max_delay);
    /// ```
    pub fn backoff(&self, attempt: u32) -> Duration {
        let cap = self
            .base_delay
            .saturating_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .min(self.max_delay);
        let nanos = cap.as_nanos().min(u128::from(u64::MAX)) as u64;
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// One write of a batch.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    Put(Item),
    Delete(Item),
}

impl Write {
    /// The item of a put (`None` for a delete).
    pub(crate) fn put_item(&self) -> Option<&Item> {
        match self {
            Write::Put(item) => Some(item),
            Write::Delete(_) => None,
        }
    }

    fn item(&self) -> &Item {
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

/// Splits writes into generations and batches: the `k`-th write of a key goes to generation
/// `k`, and each generation into batches of at most 25. DynamoDB rejects a batch that names
/// a key twice, and batches of one generation run concurrently, so a repeated key must wait
/// for the generation before it: the last write of a key still wins.
fn plan_writes<K: Eq + std::hash::Hash>(
    writes: Vec<Write>,
    key: impl Fn(&Item) -> K,
) -> Vec<Vec<Vec<Write>>> {
    let mut seen: HashMap<K, usize> = HashMap::new();
    let mut generations: Vec<Vec<Write>> = Vec::new();
    for write in writes {
        let occurrence = seen.entry(key(write.item())).or_insert(0);
        if generations.len() <= *occurrence {
            generations.push(Vec::new());
        }
        generations[*occurrence].push(write);
        *occurrence += 1;
    }
    generations
        .into_iter()
        .map(|generation| {
            let mut batches = Vec::new();
            let mut rest = generation.into_iter().peekable();
            while rest.peek().is_some() {
                batches.push(rest.by_ref().take(WRITE_BATCH).collect());
            }
            batches
        })
        .collect()
}

/// Errors worth retrying: throttling, limits, server errors, timeouts and dropped
/// connections. A validation error will fail the same way every time.
fn retryable<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(service) => service.err().code().is_some_and(|code| {
            is_throttling_code(code) || matches!(code, "InternalServerError" | "ServiceUnavailable")
        }),
        _ => false,
    }
}

struct Outcome {
    unprocessed: Vec<Item>,
    attempts: u32,
    last_error: Option<String>,
}

/// One round of a batch request: what it returned, and what is left to do.
struct Round<T, R> {
    found: Vec<R>,
    remaining: Vec<T>,
}

/// Sends `pending` until nothing is left, the attempt budget is spent, or an error that
/// will not pass on retry comes back, sleeping a full-jitter backoff between rounds.
/// `send` makes one request of the entries still pending. Shared by writes and reads, so
/// both retry the same way.
async fn retry_unprocessed<T, R, Fut>(
    mut pending: Vec<T>,
    retry: &RetryPolicy,
    mut send: impl FnMut(Vec<T>, u32) -> Fut,
) -> (Vec<R>, Vec<T>, u32, Option<String>)
where
    T: Clone,
    Fut: std::future::Future<Output = Result<Round<T, R>, (bool, String)>>,
{
    let mut found = Vec::new();
    let mut attempts = 0;
    let mut last_error = None;
    while !pending.is_empty() {
        if attempts > 0 {
            tokio::time::sleep(retry.backoff(attempts - 1)).await;
        }
        attempts += 1;
        match send(pending.clone(), attempts).await {
            Ok(round) => {
                found.extend(round.found);
                pending = round.remaining;
            }
            Err((retryable, message)) => {
                last_error = Some(message);
                if !retryable {
                    break;
                }
            }
        }
        if attempts >= retry.max_attempts {
            break;
        }
    }
    (found, pending, attempts, last_error)
}

/// An SDK error as (worth retrying, message).
fn classify<E, R>(err: SdkError<E, R>) -> (bool, String)
where
    E: ProvideErrorMetadata,
    aws_sdk_dynamodb::Error: From<SdkError<E, R>>,
{
    (
        retryable(&err),
        aws_sdk_dynamodb::Error::from(err).to_string(),
    )
}

async fn write_batch(
    client: &Client,
    table: &str,
    batch: Vec<Write>,
    retry: &RetryPolicy,
) -> Outcome {
    let (_, pending, attempts, last_error) =
        retry_unprocessed(batch, retry, |pending: Vec<Write>, attempt| async move {
            let items = pending.len();
            let requests: Vec<WriteRequest> =
                pending.into_iter().map(Write::into_request).collect();
            let output = client
                .batch_write_item()
                .request_items(table, requests)
                .send()
                .instrument(tracing::debug_span!("sharded.batch_write", items, attempt))
                .await
                .map_err(classify)?;
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
        unprocessed: pending.into_iter().map(|w| w.item().clone()).collect(),
        attempts,
        last_error,
    }
}

/// Runs all writes; `key` gives an item's primary key for de-duplication within a batch.
pub(crate) async fn write<K: Eq + std::hash::Hash>(
    client: &Client,
    table: &str,
    writes: Vec<Write>,
    retry: &RetryPolicy,
    concurrency: usize,
    key: impl Fn(&Item) -> K,
) -> Result<(), Error> {
    let mut outcomes: Vec<Outcome> = Vec::new();
    for generation in plan_writes(writes, key) {
        let done: Vec<Outcome> = stream::iter(generation)
            .map(|batch| write_batch(client, table, batch, retry))
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        outcomes.extend(done);
    }
    incomplete("BatchWriteItem", outcomes)
}

fn incomplete(operation: &'static str, outcomes: Vec<Outcome>) -> Result<(), Error> {
    let mut unprocessed = Vec::new();
    let mut attempts = 0;
    let mut last_error = None;
    for outcome in outcomes {
        if !outcome.unprocessed.is_empty() {
            unprocessed.extend(outcome.unprocessed);
            attempts = attempts.max(outcome.attempts);
            last_error = last_error.or(outcome.last_error);
        }
    }
    if unprocessed.is_empty() {
        Ok(())
    } else {
        Err(Error::BatchIncomplete {
            operation,
            unprocessed,
            attempts,
            last_error,
        })
    }
}

async fn get_batch(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
    retry: &RetryPolicy,
) -> (Vec<Item>, Outcome) {
    let (found, pending, attempts, last_error) =
        retry_unprocessed(keys, retry, |pending: Vec<Item>, attempt| async move {
            let keys = pending.len();
            let request = KeysAndAttributes::builder()
                .set_keys(Some(pending))
                .build()
                .expect("keys are set");
            let output = client
                .batch_get_item()
                .request_items(table, request)
                .send()
                .instrument(tracing::debug_span!("sharded.batch_get", keys, attempt))
                .await
                .map_err(classify)?;
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
        found,
        Outcome {
            unprocessed: pending,
            attempts,
            last_error,
        },
    )
}

/// Reads all keys (de-duplicated; DynamoDB rejects a batch naming a key twice), 100 per
/// request, concurrently. Keys with no item are absent from the result.
pub(crate) async fn get(
    client: &Client,
    table: &str,
    keys: Vec<Item>,
    retry: &RetryPolicy,
    concurrency: usize,
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
    let batches: Vec<Vec<Item>> = unique.chunks(GET_BATCH).map(<[Item]>::to_vec).collect();
    let results: Vec<(Vec<Item>, Outcome)> = stream::iter(batches)
        .map(|batch| get_batch(client, table, batch, retry))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut found = Vec::new();
    let mut outcomes = Vec::new();
    for (items, outcome) in results {
        found.extend(items);
        outcomes.push(outcome);
    }
    incomplete("BatchGetItem", outcomes)?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn put(pk: &str) -> Write {
        Write::Put(Item::from([(
            "pk".to_owned(),
            AttributeValue::S(pk.to_owned()),
        )]))
    }

    fn pk(w: &Write) -> String {
        w.item()["pk"].as_s().unwrap().clone()
    }

    #[test]
    fn batches_hold_at_most_25_and_no_key_twice() {
        let mut writes: Vec<Write> = (0..60).map(|i| put(&format!("k{i}"))).collect();
        writes.push(put("k1"));
        writes.push(put("k1"));
        let generations = plan_writes(writes, |item| item["pk"].as_s().unwrap().clone());
        assert_eq!(generations.len(), 3, "k1 is written three times");
        let all: Vec<&Vec<Write>> = generations.iter().flatten().collect();
        assert_eq!(
            all.iter().map(|b| b.len()).sum::<usize>(),
            62,
            "nothing dropped"
        );
        for batch in &all {
            assert!(batch.len() <= WRITE_BATCH);
            let keys: HashSet<String> = batch.iter().map(pk).collect();
            assert_eq!(keys.len(), batch.len(), "a key twice in one batch");
        }
        assert_eq!(generations[0].len(), 3, "60 distinct keys: 25 + 25 + 10");
        assert!(generations[1..]
            .iter()
            .all(|g| g.len() == 1 && g[0].len() == 1 && pk(&g[0][0]) == "k1"));
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
