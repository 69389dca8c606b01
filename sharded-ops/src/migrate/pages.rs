//! Where a migration reads its items from: the segments of a parallel scan of the table, or
//! the previous layout's partitions of one logical key, page by page, from any position.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use aws_sdk_dynamodb::Client;

use sharded_runtime::__ops::{dynamo_error, is_missing_table, UnitBudget};
use sharded_runtime::capacity::{item_size, read_units, Consistency};
use sharded_runtime::keys::Item;
use sharded_runtime::Error;

/// What the migration reads, one position per part.
#[derive(Debug, Clone)]
pub(crate) enum Parts {
    /// The segments `first..first + count` of a parallel scan of the table in `total`
    /// segments (the whole scan: `first` 0, `count` = `total`).
    Segments { first: u32, count: u32, total: u32 },
    /// One Query per partition key.
    Partitions(Vec<String>),
}

impl Parts {
    pub(crate) fn len(&self) -> usize {
        match self {
            Parts::Segments { count, .. } => *count as usize,
            Parts::Partitions(keys) => keys.len(),
        }
    }
}

/// One page of one part.
pub(crate) struct Page {
    pub items: Vec<Item>,
    /// Where the part resumes after this page (`LastEvaluatedKey`); `None` at its end.
    pub next: Option<Item>,
    /// Read units the request used (reported, or estimated from the items returned).
    pub read_units: f64,
    /// Items DynamoDB examined for the page (`ScannedCount`): every entity's, before the
    /// entity filter.
    pub examined: u64,
}

/// Everything the page requests of one migration need.
#[derive(Debug)]
pub(crate) struct PageSource {
    pub client: Client,
    pub table: String,
    pub entity: &'static str,
    /// The partition key attribute (for the Query of one partition).
    pub pk_attribute: &'static str,
    /// The table's tag attribute: other entities' items are left out by it (untagged items
    /// come back, for the runner to recognise or report); without one, every item does.
    pub tag: Option<&'static str>,
    pub page_size: Option<i32>,
    pub parts: Parts,
    /// Read units per second, if limited.
    pub budget: Option<UnitBudget>,
}

impl PageSource {
    /// The page of `part` that starts after `start` (from its beginning when `None`).
    pub(crate) async fn page(&self, part: usize, start: Option<Item>) -> Result<Page, Error> {
        let reserved = match &self.budget {
            Some(budget) => budget.acquire().await,
            None => 0.0,
        };
        let result = self.request(part, start).await;
        let used = result.as_ref().map_or(0.0, |page| page.read_units);
        if let Some(budget) = &self.budget {
            budget.settle(reserved, used);
        }
        result
    }

    async fn request(&self, part: usize, start: Option<Item>) -> Result<Page, Error> {
        // This entity's items and untagged ones (the runner recognises or reports each):
        // another entity's items never cross the network (DynamoDB still reads, and charges
        // for, them). A table without a tag has nothing to filter by.
        let filter = self
            .tag
            .map(|_| "#et = :et OR attribute_not_exists(#et)".to_owned());
        let names = self
            .tag
            .map(|tag| std::collections::HashMap::from([("#et".to_owned(), tag.to_owned())]));
        let values = self.tag.map(|_| {
            std::collections::HashMap::from([(
                ":et".to_owned(),
                AttributeValue::S(self.entity.to_owned()),
            )])
        });
        let (items, next, capacity, examined) = match &self.parts {
            Parts::Segments { first, total, .. } => {
                // Within `total`: the unit was checked against it.
                let segment = first + part as u32;
                let output = self
                    .client
                    .scan()
                    .table_name(&self.table)
                    // Both fit in i32: the settings allow at most MAX_SEGMENTS segments.
                    .segment(segment as i32)
                    .total_segments(*total as i32)
                    .set_filter_expression(filter)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .set_limit(self.page_size)
                    .set_exclusive_start_key(start)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(|e| {
                        let error = dynamo_error("Scan", &self.table, e);
                        if error.is_validation() || is_missing_table(&error) {
                            return error;
                        }
                        Error::SegmentFailed {
                            segment,
                            segments: *total,
                            table: self.table.clone(),
                            source: Box::new(error),
                        }
                    })?;
                (
                    output.items,
                    output.last_evaluated_key,
                    output.consumed_capacity,
                    output.scanned_count,
                )
            }
            Parts::Partitions(keys) => {
                let key = keys.get(part).cloned().unwrap_or_default();
                let output = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("#pk = :pk")
                    .set_filter_expression(filter)
                    .set_expression_attribute_names(names)
                    .set_expression_attribute_values(values)
                    .expression_attribute_names("#pk", self.pk_attribute)
                    .expression_attribute_values(":pk", AttributeValue::S(key.clone()))
                    .set_limit(self.page_size)
                    .set_exclusive_start_key(start)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(|e| {
                        let error = dynamo_error("Query", &self.table, e);
                        if error.is_validation() || is_missing_table(&error) {
                            return error;
                        }
                        Error::ShardFailed {
                            shard: part as u32,
                            shards: keys.len() as u32,
                            partition_key: key,
                            index: None,
                            source: Box::new(error),
                        }
                    })?;
                (
                    output.items,
                    output.last_evaluated_key,
                    output.consumed_capacity,
                    output.scanned_count,
                )
            }
        };
        let items = items.unwrap_or_default();
        let read_units = capacity.and_then(|c| c.capacity_units).unwrap_or_else(|| {
            // A lower bound: items the filter dropped were read too.
            let bytes: usize = items.iter().map(item_size).sum();
            read_units(bytes as u64, Consistency::Eventual)
        });
        Ok(Page {
            items,
            // DynamoDB may return an empty key map at the end; that is the end too.
            next: next.filter(|key| !key.is_empty()),
            read_units,
            examined: examined.max(0) as u64,
        })
    }
}
