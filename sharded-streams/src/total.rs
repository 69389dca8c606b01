//! A total kept from the stream: each record's delta added exactly once, whatever the
//! delivery repeats or loses.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use sharded_runtime::keys::Item;
use sharded_runtime::query::QuerySource;
use sharded_runtime::ShardedCounter;

use crate::change::{ChangeKind, Decoded, NotOurs, NotOursReason};
use crate::decode::{decode, has_images};
use crate::error::FoldError;
use crate::record::Record;
use crate::sequence::SequenceNumber;

/// One item holding a total that stream records add to, each **exactly once**.
///
/// Beside the total, the item keeps, for each source item (a counter's row, an entity's
/// item), the sequence number of the last record of it that was added, left-padded to 40
/// digits so DynamoDB's string order is their numeric order. A record is one `UpdateItem`:
///
/// ```text
/// ADD total :delta SET #mark = :seq
/// condition: attribute_not_exists(#mark) OR #mark < :seq
/// ```
///
/// so a record delivered again, or a batch delivered twice, changes nothing; a record whose
/// delivery was lost is added when it is delivered again. The stream keeps the records of one
/// item in order (its guarantee), so the records of a source item are added in order: a batch
/// is folded in order and stops at the first record it cannot add ([`Stopped`]), which must be
/// delivered again with all that follow it (a Lambda reports it as the batch's item failure).
///
/// The total item must lie outside every entity's partitions (its own key, `TOTAL#votes`).
/// It holds one mark per source item: a counter's `n` rows, or every item an entity count
/// has seen (about 60 bytes each: an entity count over more than a few thousand items should
/// be split into several totals, by logical key).
///
/// ```no_run
/// # async fn demo(client: sharded::aws_sdk_dynamodb::Client, votes: sharded::ShardedCounter, records: Vec<sharded_streams::Record>) -> Result<(), Box<dyn std::error::Error>> {
/// use sharded::aws_sdk_dynamodb::types::AttributeValue;
/// use sharded_streams::Total;
/// let key = [
///     ("pk".to_string(), AttributeValue::S("TOTAL#votes".into())),
///     ("sk".to_string(), AttributeValue::S("TOTAL".into())),
/// ].into_iter().collect();
/// let total = Total::new(client, "election", key);
/// total.fold_counter(&votes, &records).await?;
/// println!("{} votes (one GetItem)", total.get().await?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Total {
    client: Client,
    table: String,
    key: Item,
    attribute: String,
}

/// What a fold did with a batch of records.
///
/// ```
/// let folded = sharded_streams::Folded::default();
/// assert_eq!(folded.applied + folded.repeated + folded.unchanged + folded.other, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Folded {
    /// Records added to the total now.
    pub applied: usize,
    /// Records the total had already added (a repeated delivery): nothing written.
    pub repeated: usize,
    /// Records of the source that change nothing (a modification that leaves a count as it
    /// was, a layout move): nothing written.
    pub unchanged: usize,
    /// Records of other items (another entity's, another counter's): nothing written.
    pub other: usize,
}

/// Whether one delta was added.
///
/// ```
/// use sharded_streams::Applied;
/// assert_ne!(Applied::Added, Applied::AlreadyApplied);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Added now.
    Added,
    /// The total had added this record, or a later one of the same source item.
    AlreadyApplied,
}

impl Total {
    /// The total held in `table` under `key` (its partition key, and sort key in a table
    /// with one), in the attribute `total`.
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// use sharded::aws_sdk_dynamodb::types::AttributeValue;
    /// let key = [("pk".to_string(), AttributeValue::S("TOTAL#votes".into()))].into_iter().collect();
    /// let total = sharded_streams::Total::new(client, "election", key).with_attribute("votes");
    /// assert_eq!(total.attribute(), "votes");
    /// ```
    pub fn new(client: Client, table: impl Into<String>, key: Item) -> Self {
        Total {
            client,
            table: table.into(),
            key,
            attribute: "total".to_owned(),
        }
    }

    /// Holds the total in `attribute` instead of `total`.
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let total = sharded_streams::Total::new(client, "t", Default::default()).with_attribute("votes");
    /// assert_eq!(total.attribute(), "votes");
    /// ```
    pub fn with_attribute(mut self, attribute: impl Into<String>) -> Self {
        self.attribute = attribute.into();
        self
    }

    /// The attribute the total is held in.
    ///
    /// ```
    /// # use sharded::aws_sdk_dynamodb::{config::{BehaviorVersion, Region}, Client, Config};
    /// # let client = Client::from_conf(Config::builder().behavior_version(BehaviorVersion::latest()).region(Region::new("us-east-1")).build());
    /// let total = sharded_streams::Total::new(client, "t", Default::default());
    /// assert_eq!(total.attribute(), "total");
    /// ```
    pub fn attribute(&self) -> &str {
        &self.attribute
    }

    /// The total: one strongly consistent `GetItem` (0 before any record was added).
    ///
    /// ```no_run
    /// # async fn demo(total: sharded_streams::Total) -> Result<(), sharded_streams::FoldError> {
    /// println!("{}", total.get().await?);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<i64, FoldError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key.clone()))
            .consistent_read(true)
            .projection_expression("#t")
            .expression_attribute_names("#t", &self.attribute)
            .send()
            .await
            .map_err(|e| sharded_runtime::__ops::dynamo_error("GetItem", &self.table, e))?
            .item;
        match item.as_ref().and_then(|i| i.get(&self.attribute)) {
            None => Ok(0),
            Some(value) => count(value).ok_or_else(|| FoldError::NotACount {
                key: format!("{:?}", self.key),
                attribute: self.attribute.clone(),
                found: format!("{value:?}"),
            }),
        }
    }

    /// Adds `delta` for the record `sequence_number` of the source item `source`, unless the
    /// total already added it or a later record of that item.
    ///
    /// ```no_run
    /// # async fn demo(total: sharded_streams::Total) -> Result<(), Box<dyn std::error::Error>> {
    /// use sharded_streams::{Applied, SequenceNumber};
    /// let seq = SequenceNumber::parse("100000000000000000001")?;
    /// assert_eq!(total.add("VOTES#a#3", &seq, 5).await?, Applied::Added);
    /// assert_eq!(total.add("VOTES#a#3", &seq, 5).await?, Applied::AlreadyApplied);
    /// # Ok(()) }
    /// ```
    pub async fn add(
        &self,
        source: &str,
        sequence_number: &SequenceNumber,
        delta: i64,
    ) -> Result<Applied, FoldError> {
        let names = HashMap::from([
            ("#t".to_owned(), self.attribute.clone()),
            ("#m".to_owned(), format!("{}#seq#{source}", self.attribute)),
        ]);
        let values = HashMap::from([
            (":d".to_owned(), AttributeValue::N(delta.to_string())),
            (":s".to_owned(), AttributeValue::S(sequence_number.padded())),
        ]);
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key.clone()))
            .update_expression("ADD #t :d SET #m = :s")
            .condition_expression("attribute_not_exists(#m) OR #m < :s")
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(Applied::Added),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(Applied::AlreadyApplied)
            }
            Err(e) => {
                Err(sharded_runtime::__ops::dynamo_error("UpdateItem", &self.table, e).into())
            }
        }
    }

    /// Folds the increments of `counter` in `records` into the total: a row's delta is its
    /// new count minus its old one (0 for an image the event has none of). Records of other
    /// items are counted in [`Folded::other`] and left alone.
    ///
    /// A counter's rows never move (its shard count is fixed for its key). Were a row ever
    /// copied to another key and deleted at its old one, the copy's `INSERT` (+count) and the
    /// delete's `REMOVE` (-count) would net to zero, each added once under its own row's key:
    /// the fold needs no move markers. Needs a stream of view type `NEW_AND_OLD_IMAGES`.
    ///
    /// ```no_run
    /// # async fn demo(total: sharded_streams::Total, votes: sharded::ShardedCounter, records: Vec<sharded_streams::Record>) {
    /// match total.fold_counter(&votes, &records).await {
    ///     Ok(folded) => println!("{folded:?}"),
    ///     Err(stopped) => eprintln!("deliver again from {}", stopped.sequence_number),
    /// }
    /// # }
    /// ```
    pub async fn fold_counter(
        &self,
        counter: &ShardedCounter,
        records: &[Record],
    ) -> Result<Folded, Stopped> {
        let rows = counter.keys();
        self.fold(records, |record| {
            let Some(row) = rows.iter().find(|row| same_key(row, &record.keys)) else {
                return Ok(Step::Other);
            };
            let source = key_text(row);
            if !has_images(record) {
                return Err(FoldError::NeedsImages {
                    view_type: record.view_type.clone(),
                });
            }
            let of = |image: &Option<Item>| {
                image.as_ref().map_or(Ok(0), |image| {
                    image.get(counter.attribute()).map_or(Ok(0), |value| {
                        count(value).ok_or_else(|| FoldError::NotACount {
                            key: source.clone(),
                            attribute: counter.attribute().to_owned(),
                            found: format!("{value:?}"),
                        })
                    })
                })
            };
            let delta = of(&record.new_image)?
                .checked_sub(of(&record.old_image)?)
                .ok_or(FoldError::Overflow)?;
            Ok(Step::Add(source, delta))
        })
        .await
    }

    /// Folds the items of `S` (an entity or a collection) into a count: `+1` for each
    /// inserted item, `-1` for each removed one; modifications and layout moves change
    /// nothing, and records of items that are not `S`'s are counted in [`Folded::other`].
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize, sharded::ShardedEntity)]
    /// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
    /// # #[sk(template = "SCORE#{player_id}")]
    /// # struct Score { game_id: String, player_id: String }
    /// # async fn demo(total: sharded_streams::Total, records: Vec<sharded_streams::Record>) -> Result<(), sharded_streams::Stopped> {
    /// total.fold_count::<Score>(&records).await?;
    /// # Ok(()) }
    /// ```
    pub async fn fold_count<S: QuerySource>(&self, records: &[Record]) -> Result<Folded, Stopped> {
        self.fold(records, |record| match decode::<S>(record) {
            Decoded::Change(change) => {
                let source = match &change.key.sk {
                    Some(sk) => format!("{}/{sk}", change.physical_pk),
                    None => change.physical_pk.clone(),
                };
                Ok(match change.kind {
                    ChangeKind::Insert { .. } => Step::Add(source, 1),
                    ChangeKind::Remove { .. } => Step::Add(source, -1),
                    _ => Step::Unchanged,
                })
            }
            Decoded::NeedsImage(missing) => Err(FoldError::NeedsImages {
                view_type: missing.view_type,
            }),
            // The entity's item by its tag, which a count cannot place: +1 on its insert and
            // nothing on its remove (or the reverse) would leave the total wrong for good.
            Decoded::NotOurs(NotOurs {
                reason: NotOursReason::Undecodable { reason },
                key,
                ..
            }) => Err(FoldError::Undecodable {
                key: key.to_string(),
                reason,
            }),
            _ => Ok(Step::Other),
        })
        .await
    }

    /// Folds `records` in order with what `step` makes of each, stopping at the first that
    /// cannot be added.
    async fn fold(
        &self,
        records: &[Record],
        step: impl Fn(&Record) -> Result<Step, FoldError>,
    ) -> Result<Folded, Stopped> {
        let mut folded = Folded::default();
        for (index, record) in records.iter().enumerate() {
            let outcome = match step(record) {
                Ok(Step::Add(_, 0)) | Ok(Step::Unchanged) => {
                    folded.unchanged += 1;
                    Ok(())
                }
                Ok(Step::Other) => {
                    folded.other += 1;
                    Ok(())
                }
                Ok(Step::Add(source, delta)) => self
                    .add(&source, &record.sequence_number, delta)
                    .await
                    .map(|applied| match applied {
                        Applied::Added => folded.applied += 1,
                        Applied::AlreadyApplied => folded.repeated += 1,
                    }),
                Err(e) => Err(e),
            };
            if let Err(error) = outcome {
                return Err(Stopped {
                    applied: folded.applied,
                    repeated: folded.repeated,
                    index,
                    sequence_number: record.sequence_number.clone(),
                    error,
                });
            }
        }
        Ok(folded)
    }
}

/// What one record is to a fold.
enum Step {
    /// Add the delta for the source item named.
    Add(String, i64),
    /// A record of the source that changes nothing.
    Unchanged,
    /// A record of another item.
    Other,
}

/// Whether the record's `keys` are the row's key (every attribute of the row's key equal).
fn same_key(row: &Item, keys: &Item) -> bool {
    !row.is_empty()
        && row
            .iter()
            .all(|(name, value)| keys.get(name) == Some(value))
}

/// A row's key as text, its attributes in name order: the name of its mark.
fn key_text(row: &Item) -> String {
    let mut parts: Vec<(&String, String)> = row
        .iter()
        .map(|(name, value)| {
            let text = match value {
                AttributeValue::S(s) | AttributeValue::N(s) => s.clone(),
                other => format!("{other:?}"),
            };
            (name, text)
        })
        .collect();
    parts.sort();
    parts
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("/")
}

/// An integer number attribute.
fn count(value: &AttributeValue) -> Option<i64> {
    value.as_n().ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pairs: &[(&str, AttributeValue)]) -> Item {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn a_row_is_matched_on_every_key_attribute_and_named_in_a_stable_order() {
        let row = item(&[
            ("pk", AttributeValue::S("VOTES#a#3".into())),
            ("sk", AttributeValue::S("COUNTER".into())),
        ]);
        assert!(same_key(&row, &row.clone()));
        let other_sk = item(&[
            ("pk", AttributeValue::S("VOTES#a#3".into())),
            ("sk", AttributeValue::S("META".into())),
        ]);
        assert!(!same_key(&row, &other_sk));
        assert!(
            !same_key(&Item::new(), &row),
            "an empty key matches nothing"
        );
        assert_eq!(key_text(&row), "VOTES#a#3/COUNTER");
    }

    #[test]
    fn a_count_is_an_integer_number() {
        assert_eq!(count(&AttributeValue::N("-12".into())), Some(-12));
        assert_eq!(count(&AttributeValue::N("1.5".into())), None);
        assert_eq!(count(&AttributeValue::S("3".into())), None);
    }
}

/// Why a total could not be brought up to a stream record: the record and every later one
/// of the batch were not applied, and must be delivered again (a Lambda reports the record's
/// sequence number as the batch's item failure, so it is redelivered from there).
///
/// ```no_run
/// # async fn demo(total: sharded_streams::Total, records: Vec<sharded_streams::Record>) {
/// match total.fold_count::<Score>(&records).await {
///     Ok(folded) => println!("{} applied, {} already applied", folded.applied, folded.repeated),
///     Err(stopped) => eprintln!("redeliver from {}: {}", stopped.sequence_number, stopped.error),
/// }
/// # }
/// # #[derive(serde::Serialize, serde::Deserialize, sharded::ShardedEntity)]
/// # #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
/// # #[sk(template = "SCORE#{player_id}")]
/// # struct Score { game_id: String, player_id: String }
/// ```
#[derive(Debug, thiserror::Error)]
#[error(
    "the total was brought up to the record before {sequence_number} ({applied} applied, \
     {repeated} already applied): {error}"
)]
#[non_exhaustive]
pub struct Stopped {
    /// The records applied before it (each exactly once).
    pub applied: usize,
    /// The records before it that the total had already applied (a repeated delivery).
    pub repeated: usize,
    /// The index in the batch of the record that was not applied.
    pub index: usize,
    /// Its sequence number: where delivery must start again.
    pub sequence_number: SequenceNumber,
    /// Why.
    pub error: FoldError,
}
