//! Table administration: creating the entity's table, and time to live.

use crate::access::entity::ShardedEntity;
use crate::access::table::CreateTable;
use crate::error::Error;

use super::Repo;

impl<E: ShardedEntity> Repo<E> {
    /// Creates the table this entity needs (keys and GSIs, on-demand billing).
    ///
    /// An entity with a `#[sharded(ttl)]` field also gets DynamoDB's time to live enabled on
    /// that attribute ([`enable_ttl`](Self::enable_ttl)).
    pub async fn create_table(&self) -> Result<(), Error> {
        E::table_definition()
            .create_table(self.handle.client(), self.handle.table())
            .send()
            .await
            .map_err(|e| Error::dynamo("CreateTable", self.handle.table(), e))?;
        self.enable_ttl().await
    }

    /// Enables DynamoDB's time to live on the entity's `#[sharded(ttl)]` attribute (nothing
    /// to do without one): DynamoDB then deletes items whose expiry has passed, lazily,
    /// typically within days. Until then they are still stored: queries hide them unless
    /// asked not to ([`Query::include_expired`](crate::Query::include_expired)).
    pub async fn enable_ttl(&self) -> Result<(), Error> {
        let Some(attribute) = E::SCHEMA.ttl else {
            return Ok(());
        };
        let specification = aws_sdk_dynamodb::types::TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name(attribute)
            .build()
            .map_err(Error::build("the time to live specification"))?;
        self.handle
            .client
            .update_time_to_live()
            .table_name(self.handle.table())
            .time_to_live_specification(specification)
            .send()
            .await
            .map_err(|e| Error::dynamo("UpdateTimeToLive", self.handle.table(), e))?;
        Ok(())
    }
}
