//! A sharded counter (the vote-counter pattern): writes spread over `n` items, reads sum them.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use aws_sdk_dynamodb::Client;

use crate::access::condition::values_of;
use crate::access::placement::counter_shard_key;
use crate::access::read::batch;
use crate::access::retry::RetryPolicy;
use crate::access::write::idempotent::{self, check_token, FirstSent, TokenRequest};
use crate::error::{Error, QueryRefusal};
use crate::item::Item;
use crate::keys::hash::fnv1a64;
use crate::keys::schema::{ShardSuffix, TableDefinition, MAX_SHARDS};
use crate::keys::shards::{random_shard, ShardKeys};

/// The entity name counter items carry in a table with a tag, so no entity query ever reads
/// one as its own.
pub(crate) const COUNTER_ENTITY: &str = "ShardedCounter";
/// What an increment does: add to the count (and, in a table with a tag, mark the item as a
/// counter's: [`TAGGED_ADD_EXPRESSION`]).
const ADD_EXPRESSION: &str = "ADD #count :by";
const TAGGED_ADD_EXPRESSION: &str = "ADD #count :by SET #et = :et";

/// One increment's key, expression and placeholders.
struct Add {
    key: Item,
    expression: &'static str,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

/// The sort key value of counter items in tables with a sort key.
pub(crate) const COUNTER_SORT_KEY: &str = "COUNTER";

/// A counter spread over `n` items `<logical key>#0` .. `<logical key>#(n-1)`.
///
/// `increment` is one `ADD` on a random shard (exactly once: an idempotent one-action
/// transaction; `increment_at_least_once` is the plain `UpdateItem`), so a hot counter takes
/// `n` times the write rate of one item. `total` reads every shard (one `BatchGetItem` per 100 shards)
/// and sums them: a shard never written counts 0, a shard that cannot be read is an error,
/// never a silent 0.
///
/// **Which increments a total sees.** Its reads are eventually consistent by default (half
/// the read units): on DynamoDB, a total read right after acknowledged increments may miss
/// some of them for a moment (usually under a second). With
/// [`consistent_read(true)`](Self::consistent_read) every increment acknowledged before the
/// total was called is in it.
///
/// ```no_run
/// # async fn demo(client: sharded::aws_sdk_dynamodb::Client, def: sharded::schema::TableDefinition) -> Result<(), sharded::Error> {
/// use sharded::ShardedCounter;
/// let votes = ShardedCounter::new(client, "election", &def, "VOTES#candidate-a", 10)?;
/// votes.increment(1).await?;
/// println!("{} votes", votes.total().await?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ShardedCounter {
    client: Client,
    table: String,
    pk_attribute: &'static str,
    sk_attribute: Option<&'static str>,
    /// The sort key value of the counter's items, in a table with a sort key.
    sort_key: String,
    /// The table's tag attribute, written into the counter's items when it has one.
    tag: Option<&'static str>,
    logical_key: String,
    n: u32,
    suffix: ShardSuffix,
    attribute: String,
    retry: RetryPolicy,
    /// Read the shards strongly consistently.
    consistent_read: bool,
}

impl ShardedCounter {
    /// A counter at `logical_key` with `n` shards (`<logical_key>#0` .. `#(n-1)`), in a table
    /// with the given definition: its key attributes are used, and in a table with a sort key
    /// the counter's items have the sort key `COUNTER` ([`with_sort_key`](Self::with_sort_key)
    /// to adopt a counter written by hand). In a table with a tag, counter items carry the
    /// entity name `ShardedCounter` in it, so no entity query reads one as its own; in a table
    /// without one (`recognize = "key"`) an increment adds to the count and touches nothing
    /// else of the item.
    pub fn new(
        client: Client,
        table: impl Into<String>,
        definition: &TableDefinition,
        logical_key: impl Into<String>,
        n: u32,
    ) -> Result<Self, Error> {
        let logical_key = logical_key.into();
        if logical_key.is_empty() {
            return Err(Error::EmptyKeyAttribute {
                attribute: definition.partition_key.to_owned(),
            });
        }
        if n == 0 || n > MAX_SHARDS {
            return Err(QueryRefusal::CounterShards { n, max: MAX_SHARDS }.into());
        }
        // Checked above, so the clamp below changes nothing.
        let client = crate::telemetry::instrument(client);
        Ok(Self::for_entity_item(
            client,
            table,
            definition,
            logical_key,
            n,
        ))
    }

    /// A counter whose key is not empty and whose `n` is in range: the derive built and the
    /// compiler checked them, or [`new`](Self::new) did.
    pub(crate) fn for_entity_item(
        client: Client,
        table: impl Into<String>,
        definition: &TableDefinition,
        logical_key: String,
        n: u32,
    ) -> Self {
        ShardedCounter {
            client,
            table: table.into(),
            pk_attribute: definition.partition_key,
            sk_attribute: definition.sort_key,
            sort_key: COUNTER_SORT_KEY.to_owned(),
            tag: definition.schema.recognition.tag_attribute(),
            logical_key,
            n: n.clamp(1, MAX_SHARDS),
            suffix: ShardSuffix::DEFAULT,
            attribute: "count".to_owned(),
            retry: RetryPolicy::default(),
            consistent_read: false,
        }
    }

    /// Stores the count in `attribute` instead of `count` (`votes` in the vote-counter
    /// pattern's `ADD votes :inc`).
    pub fn with_attribute(mut self, attribute: impl Into<String>) -> Self {
        self.attribute = attribute.into();
        self
    }

    /// Keys the counter's items by the sort key `value` instead of `COUNTER` (in a table
    /// with a sort key): `METADATA` in the vote-counter pattern, so the counter reads and
    /// adds to the items a hand-made counter already holds.
    ///
    /// ```no_run
    /// # async fn demo(client: sharded::aws_sdk_dynamodb::Client) -> Result<(), sharded::Error> {
    /// use sharded::{schema::TableDefinition, ShardedCounter};
    /// // CANDIDATE#A#0..9, SK = METADATA, ADD votes :inc: a counter written by hand.
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// println!("{}", votes.total().await?);
    /// # Ok(()) }
    /// ```
    pub fn with_sort_key(mut self, value: impl Into<String>) -> Self {
        self.sort_key = value.into();
        self
    }

    /// Spells the shard after the logical key with `suffix` instead of `#{shard}`
    /// (`CANDIDATE#A#SHARD_7` with `#SHARD_{shard}`).
    ///
    /// ```no_run
    /// # fn demo(votes: sharded::ShardedCounter) -> Result<(), sharded::KeyError> {
    /// use sharded::keys::ShardSuffix;
    /// let votes = votes.with_suffix(ShardSuffix::parse("#SHARD_{shard}")?);
    /// # Ok(()) }
    /// ```
    pub fn with_suffix(mut self, suffix: ShardSuffix) -> Self {
        self.suffix = suffix;
        self
    }

    /// The shard count.
    pub fn shards(&self) -> u32 {
        self.n
    }

    // What the counter reads and writes, for services that share the table (the interop
    // vectors are generated from these): a counter's items are data another language must
    // be able to key without the counter.

    /// The logical key the shard suffix is written after (`CANDIDATE#A` of `CANDIDATE#A#7`).
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # use sharded::{schema::TableDefinition, ShardedCounter};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// assert_eq!(votes.logical_key(), "CANDIDATE#A");
    /// # Ok::<(), sharded::Error>(())
    /// ```
    pub fn logical_key(&self) -> &str {
        &self.logical_key
    }

    /// How the shard is spelled after the logical key (`#{shard}` unless
    /// [`with_suffix`](Self::with_suffix) says otherwise).
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # use sharded::{schema::TableDefinition, ShardedCounter};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// assert_eq!(votes.suffix().source, "#{shard}");
    /// # Ok::<(), sharded::Error>(())
    /// ```
    pub fn suffix(&self) -> ShardSuffix {
        self.suffix
    }

    /// The sort key value of the counter's items, in a table with a sort key (`COUNTER`
    /// unless [`with_sort_key`](Self::with_sort_key) says otherwise); `None` in a table
    /// without one.
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # use sharded::{schema::TableDefinition, ShardedCounter};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// assert_eq!(votes.sort_key(), Some("METADATA"));
    /// # Ok::<(), sharded::Error>(())
    /// ```
    pub fn sort_key(&self) -> Option<&str> {
        self.sk_attribute.map(|_| self.sort_key.as_str())
    }

    /// The attribute each shard's count is held in (`count` unless
    /// [`with_attribute`](Self::with_attribute) says otherwise).
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # use sharded::{schema::TableDefinition, ShardedCounter};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// assert_eq!(votes.attribute(), "votes");
    /// # Ok::<(), sharded::Error>(())
    /// ```
    pub fn attribute(&self) -> &str {
        &self.attribute
    }

    /// The tag every increment sets, as (attribute, value), when the table has a tag: the
    /// value is the same for every counter, so no entity query reads a counter's item as
    /// its own. `None` in a table without a tag (`recognize = "key"`), where an increment
    /// touches nothing but the count.
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # use sharded::{schema::TableDefinition, ShardedCounter};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// // `TableDefinition::new` describes a table tagged in `_entity`.
    /// assert_eq!(votes.tag(), Some(("_entity", "ShardedCounter")));
    /// # Ok::<(), sharded::Error>(())
    /// ```
    pub fn tag(&self) -> Option<(&'static str, &'static str)> {
        self.tag.map(|attribute| (attribute, COUNTER_ENTITY))
    }

    /// The key of every shard's item, in shard order: what [`total`](Self::total) reads and
    /// an increment adds to.
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # use sharded::{schema::TableDefinition, ShardedCounter};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let def = TableDefinition::new("PK", Some("SK"));
    /// let votes = ShardedCounter::new(client, "ElectionData", &def, "CANDIDATE#A", 10)?
    ///     .with_sort_key("METADATA")
    ///     .with_attribute("votes");
    /// let keys = votes.keys();
    /// assert_eq!(keys.len(), 10);
    /// assert_eq!(keys[7]["PK"].as_s().ok().map(String::as_str), Some("CANDIDATE#A#7"));
    /// assert_eq!(keys[7]["SK"].as_s().ok().map(String::as_str), Some("METADATA"));
    /// # Ok::<(), sharded::Error>(())
    /// ```
    pub fn keys(&self) -> Vec<Item> {
        self.shard_keys().map(|pk| self.key(pk)).collect()
    }

    /// The key of one shard: no previous place, whatever transition the entity declares.
    fn key(&self, pk: String) -> Item {
        counter_shard_key(self.pk_attribute, self.sk_attribute, &self.sort_key, pk)
    }

    /// Every shard's partition key, in shard order.
    fn shard_keys(&self) -> ShardKeys {
        ShardKeys::new(self.logical_key.clone(), Some(self.n)).with_suffix(self.suffix)
    }

    /// Adds `by` (may be negative) on a random shard, **exactly once**; returns the shard
    /// written.
    ///
    /// The `ADD` is sent as a one-action `TransactWriteItems` with a fresh
    /// `ClientRequestToken`, built once and sent through the same sender as every
    /// transaction. When DynamoDB applies it but the answer is lost (a timeout, a reset
    /// connection, a 5xx), or cancels it because another increment held the same shard item
    /// at that moment (`TransactionConflict`, which a hot counter meets on the real service),
    /// or throttles it, the identical request is sent again under the same token, with
    /// backoff, within the counter's [`RetryPolicy`] (see [`with_retry`](Self::with_retry)).
    /// DynamoDB answers a token it has seen in the last 10 minutes without applying it again,
    /// so the total counts every `Ok` once.
    ///
    /// **A retry stays on its shard.** Moving a conflicting retry to another shard would need a
    /// new request, and a new request under the same token is refused
    /// (`IdempotentParameterMismatch`) once an earlier send got through, while under a new
    /// token it would count twice whenever an earlier send was applied and its answer lost:
    /// a cancellation only proves that its own send was not applied, not the SDK's earlier
    /// attempts with the token. Spreading comes from each new increment drawing its own shard
    /// and from the retries' full-jitter backoff.
    ///
    /// What it costs against [`increment_at_least_once`]: a transactional write is charged
    /// twice the write units (2 per increment of an item under 1 KB instead of 1), and its
    /// latency is a transaction's (BENCHMARKS.md, "Counters"). An `Err` means the increment
    /// may or may not have been applied (the retries ran out): only an `Ok` is a guarantee.
    /// To retry across an `Err`, or from another process, use
    /// [`increment_with_token`](Self::increment_with_token).
    ///
    /// [`increment_at_least_once`]: Self::increment_at_least_once
    pub async fn increment(&self, by: i64) -> Result<u32, Error> {
        let shard = random_shard(self.n);
        self.add_exactly_once(by, shard, TokenRequest::new).await
    }

    /// Adds `by` exactly once under your `token` (1 to 36 characters), on the shard the token
    /// picks: calling it again with the same `by` and `token`, from this process or another,
    /// within 10 minutes of the first call, sends the identical request, and DynamoDB applies
    /// it at most once. Derive the token from what identifies the increment (a vote id), and
    /// call again after an `Err`: an `Ok` means it is counted, once.
    ///
    /// A call with the same token and another `by` within the window is refused with
    /// [`Error::IdempotentParameterMismatch`] (when the first got through). After 10 minutes
    /// DynamoDB forgets the token, and the same call counts again.
    ///
    /// ```no_run
    /// # async fn demo(votes: sharded::ShardedCounter) -> Result<(), sharded::Error> {
    /// let vote_id = "vote-7f3a2c";
    /// let mut result = votes.increment_with_token(1, vote_id).await;
    /// if matches!(&result, Err(e) if e.outcome_unknown()) {
    ///     result = votes.increment_with_token(1, vote_id).await; // counted at most once
    /// }
    /// result?;
    /// # Ok(()) }
    /// ```
    pub async fn increment_with_token(
        &self,
        by: i64,
        token: impl Into<String>,
    ) -> Result<u32, Error> {
        let token = token.into();
        check_token(&token)?;
        // The shard is a function of the token, so every call with it is the same request.
        let shard = (fnv1a64(token.as_bytes()) % u64::from(self.n)) as u32;
        self.add_exactly_once(by, shard, |items| TokenRequest {
            items,
            token,
            consumed_capacity: false,
        })
        .await
    }

    /// The one exactly-once `ADD` of `by` on `shard`, under the token `request` gives it.
    async fn add_exactly_once(
        &self,
        by: i64,
        shard: u32,
        request: impl FnOnce(Vec<TransactWriteItem>) -> TokenRequest,
    ) -> Result<u32, Error> {
        let add = self.add_on(shard, by);
        let update = aws_sdk_dynamodb::types::Update::builder()
            .table_name(&self.table)
            .set_key(Some(add.key))
            .update_expression(add.expression)
            .set_expression_attribute_names(Some(add.names))
            .set_expression_attribute_values(values_of(add.values))
            .build()
            .map_err(Error::build("a counter increment"))?;
        let request = request(vec![TransactWriteItem::builder().update(update).build()]);
        let sends = FirstSent::default();
        idempotent::send(&self.client, &request, &self.retry, &sends)
            .await
            .map_err(|e| {
                idempotent::sent_error(&self.table, &request.token, &sends, e.into_service_error())
            })?;
        Ok(shard)
    }

    /// How many times, and with what backoff, an exactly-once increment is sent again while
    /// its answer is unknown or it conflicted or was throttled (default:
    /// [`RetryPolicy::default`], 10 sends); `total`'s batch reads use it too.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Reads the shards of [`total`](Self::total) and [`shard_values`](Self::shard_values)
    /// strongly consistently (`ConsistentRead` on each `BatchGetItem`): the total then counts
    /// every increment acknowledged before it was called, for twice the read units (one unit
    /// per shard instead of half). Default `false`: eventually consistent.
    ///
    /// ```no_run
    /// # async fn demo(client: sharded::aws_sdk_dynamodb::Client, def: sharded::schema::TableDefinition) -> Result<(), sharded::Error> {
    /// use sharded::ShardedCounter;
    /// let votes = ShardedCounter::new(client, "election", &def, "VOTES#candidate-a", 10)?
    ///     .consistent_read(true);
    /// votes.increment(1).await?;
    /// assert!(votes.total().await? >= 1); // the acknowledged increment is counted
    /// # Ok(()) }
    /// ```
    pub fn consistent_read(mut self, consistent: bool) -> Self {
        self.consistent_read = consistent;
        self
    }

    /// Adds `by` on a random shard with one plain `UpdateItem ADD`: **at-least-once**.
    ///
    /// The SDK retries a request whose response was lost (a timeout, a reset connection, a
    /// 5xx) even when DynamoDB had applied it, so such a retry counts `by` twice. Half the
    /// write units of [`increment`](Self::increment), and the latency of a single write: for
    /// tallies where an occasional over-count is acceptable (likes, views).
    pub async fn increment_at_least_once(&self, by: i64) -> Result<u32, Error> {
        let shard = random_shard(self.n);
        let add = self.add_on(shard, by);
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(add.key))
            .update_expression(add.expression)
            .set_expression_attribute_names(Some(add.names))
            .set_expression_attribute_values(values_of(add.values))
            .send()
            .await
            .map_err(|e| Error::dynamo("UpdateItem", &self.table, e))?;
        Ok(shard)
    }

    /// The key and placeholders of an increment of `by` on `shard` (both kinds of increment
    /// send the same `ADD`).
    fn add_on(&self, shard: u32, by: i64) -> Add {
        let mut pk = self.logical_key.clone();
        self.suffix.write(&mut pk, shard);
        let key = self.key(pk);
        let mut names = HashMap::from([("#count".to_owned(), self.attribute.clone())]);
        let mut values = HashMap::from([(":by".to_owned(), AttributeValue::N(by.to_string()))]);
        let expression = match self.tag {
            Some(tag) => {
                names.insert("#et".to_owned(), tag.to_owned());
                values.insert(
                    ":et".to_owned(),
                    AttributeValue::S(COUNTER_ENTITY.to_owned()),
                );
                TAGGED_ADD_EXPRESSION
            }
            None => ADD_EXPRESSION,
        };
        Add {
            key,
            expression,
            names,
            values,
        }
    }

    /// The value of every shard, in shard order (0 for a shard never written).
    pub async fn shard_values(&self) -> Result<Vec<i64>, Error> {
        let shard_keys: Vec<String> = self.shard_keys().collect();
        let keys = shard_keys.iter().cloned().map(|pk| self.key(pk)).collect();
        let items = batch::get_with(
            &self.client,
            &self.table,
            keys,
            &self.retry,
            8,
            self.consistent_read,
        )
        .await?;
        let mut values = vec![0i64; self.n as usize];
        for item in items {
            let pk = item.get(self.pk_attribute).and_then(|v| v.as_s().ok());
            let Some(shard) = pk.and_then(|pk| shard_keys.iter().position(|k| k == pk)) else {
                continue;
            };
            values[shard] = match item.get(&self.attribute) {
                None => 0,
                Some(AttributeValue::N(n)) => n.parse().map_err(|_| {
                    let value = n.clone();
                    QueryRefusal::CounterNotWhole { shard, value }
                })?,
                Some(other) => {
                    return Err(QueryRefusal::CounterNotNumber {
                        shard,
                        attribute: self.attribute.clone(),
                        value: other.clone(),
                    }
                    .into())
                }
            };
        }
        Ok(values)
    }

    /// The sum of every shard, read in one scatter (`BatchGetItem`), eventually consistent
    /// unless [`consistent_read(true)`](Self::consistent_read): see "Which increments a total
    /// sees" above. A sum beyond `i64` is [`Error::CounterOverflow`], never a wrapped or
    /// saturated number.
    pub async fn total(&self) -> Result<i64, Error> {
        let values = self.shard_values().await?;
        checked_total(&values).ok_or_else(|| Error::CounterOverflow {
            logical_key: self.logical_key.clone(),
        })
    }
}

/// The sum of the shards' values, `None` when it does not fit an `i64`.
fn checked_total(values: &[i64]) -> Option<i64> {
    values.iter().try_fold(0_i64, |sum, v| sum.checked_add(*v))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_total_that_does_not_fit_is_refused_not_wrapped() {
        assert_eq!(super::checked_total(&[1, 2, -3]), Some(0));
        assert_eq!(super::checked_total(&[i64::MAX, 1]), None);
        assert_eq!(super::checked_total(&[i64::MIN, -1]), None);
        assert_eq!(super::checked_total(&[i64::MAX, -1, 1]), Some(i64::MAX));
    }
}
