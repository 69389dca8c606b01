//! The entities a command line was built with, behind one object-safe trait, so subcommands
//! can pick one by name at run time.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use sharded::aws_sdk_dynamodb::Client;
use sharded::layouts::{ChangeLayout, KeyEntry, KeyMigration, LayoutTiming};
use sharded::migrate::{
    Checkpoint, Migrate, MigrateError, Plan, PlanStatus, Progress, Remaining, Report, Unit,
};
use sharded::schema::{EntitySchema, KeyLayout};
use sharded::{Error, Repo, ShardedEntity};

/// How a migration runs, from the command line's flags.
pub(crate) struct MigrateOptions {
    pub(crate) write_units_per_second: Option<f64>,
    pub(crate) read_units_per_second: Option<f64>,
    pub(crate) segments: Option<u32>,
    pub(crate) resume_from: Option<Checkpoint>,
    pub(crate) rekey_non_canonical: bool,
    /// One unit of a plan, recorded in the table (`Migration::unit`).
    pub(crate) unit: Option<Unit>,
    /// The unit read from its start whatever its record says (`Migration::from_start`).
    pub(crate) from_start: bool,
    pub(crate) on_progress: Arc<dyn Fn(&Progress) + Send + Sync>,
    pub(crate) on_checkpoint: Arc<dyn Fn(&Checkpoint) + Send + Sync>,
}

/// How `migrate --plan` cuts a migration: the scan's segments, the fleet's budget, the units
/// and how many run at once.
pub(crate) struct PlanOptions {
    pub(crate) segments: Option<u32>,
    pub(crate) write_units_per_second: Option<f64>,
    pub(crate) units: u32,
    pub(crate) workers: u32,
}

/// What a `layouts` subcommand asks of an entity's layout directory.
pub(crate) enum LayoutStep {
    Show,
    Change { key: String, n: u32 },
    Begin { key: String, n: u32 },
    Advance { key: String },
    Migrate { key: String },
    Finish { key: String },
}

/// What a [`LayoutStep`] did.
pub(crate) enum LayoutOutcome {
    /// The directory's entries (`Show`).
    Entries(BTreeMap<String, KeyEntry>),
    /// The key's entry after the step (`Begin`, `Advance`).
    Entry(KeyEntry),
    /// What the key's migration moved (`Change`, `Migrate`).
    Moved(KeyMigration),
    /// The key's layout after it (`Finish`).
    Steady(KeyLayout),
}

/// How a `layouts` subcommand's repository runs: the services' timing, and the budget of a
/// key's migration.
pub(crate) struct LayoutOptions {
    pub(crate) timing: LayoutTiming,
    pub(crate) write_units_per_second: Option<f64>,
}

/// What the subcommands do with one entity.
pub(crate) trait EntityOps: Send + Sync {
    fn schema(&self) -> &'static EntitySchema;

    fn migrate(
        &self,
        client: Client,
        table: String,
        options: MigrateOptions,
    ) -> BoxFuture<'static, Result<Report, MigrateError>>;

    fn remaining(
        &self,
        client: Client,
        table: String,
    ) -> BoxFuture<'static, Result<Remaining, MigrateError>>;

    /// The migration cut into units (`Migration::plan`), with its estimate.
    fn plan(
        &self,
        client: Client,
        table: String,
        options: PlanOptions,
    ) -> BoxFuture<'static, Result<Plan, MigrateError>>;

    /// Where each unit of `plan` is, from the units' records in the table.
    fn status(
        &self,
        client: Client,
        table: String,
        plan: Plan,
    ) -> BoxFuture<'static, Result<PlanStatus, MigrateError>>;

    /// Deletes the records of `plan`'s done units (`Migration::forget`).
    fn forget(
        &self,
        client: Client,
        table: String,
        plan: Plan,
    ) -> BoxFuture<'static, Result<usize, MigrateError>>;

    fn layouts(
        &self,
        client: Client,
        table: String,
        options: LayoutOptions,
        step: LayoutStep,
    ) -> BoxFuture<'static, Result<LayoutOutcome, Error>>;
}

pub(crate) struct Registered<E>(PhantomData<fn() -> E>);

impl<E> Registered<E> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<E: ShardedEntity> EntityOps for Registered<E> {
    fn schema(&self) -> &'static EntitySchema {
        E::SCHEMA
    }

    fn migrate(
        &self,
        client: Client,
        table: String,
        options: MigrateOptions,
    ) -> BoxFuture<'static, Result<Report, MigrateError>> {
        Box::pin(async move {
            let repo: Repo<E> = Repo::new(client, table);
            let mut migration = repo.migrate();
            if let Some(w) = options.write_units_per_second {
                migration = migration.write_units_per_second(w);
            }
            if let Some(r) = options.read_units_per_second {
                migration = migration.read_units_per_second(r);
            }
            if let Some(segments) = options.segments {
                migration = migration.segments(segments);
            }
            if let Some(checkpoint) = options.resume_from {
                migration = migration.resume_from(checkpoint);
            }
            if options.rekey_non_canonical {
                migration = migration.rekey_non_canonical();
            }
            if let Some(unit) = options.unit {
                migration = migration.unit(unit);
            }
            if options.from_start {
                migration = migration.from_start();
            }
            let progress = options.on_progress;
            let checkpoint = options.on_checkpoint;
            migration
                .on_progress(move |p| progress(p))
                .on_checkpoint(move |c| checkpoint(c))
                .run()
                .await
        })
    }

    fn remaining(
        &self,
        client: Client,
        table: String,
    ) -> BoxFuture<'static, Result<Remaining, MigrateError>> {
        Box::pin(async move {
            let repo: Repo<E> = Repo::new(client, table);
            repo.migration_remaining().await
        })
    }

    fn plan(
        &self,
        client: Client,
        table: String,
        options: PlanOptions,
    ) -> BoxFuture<'static, Result<Plan, MigrateError>> {
        Box::pin(async move {
            let repo: Repo<E> = Repo::new(client, table);
            let mut migration = repo.migrate();
            if let Some(segments) = options.segments {
                migration = migration.segments(segments);
            }
            if let Some(w) = options.write_units_per_second {
                migration = migration.write_units_per_second(w);
            }
            migration.plan(options.units, options.workers).await
        })
    }

    fn status(
        &self,
        client: Client,
        table: String,
        plan: Plan,
    ) -> BoxFuture<'static, Result<PlanStatus, MigrateError>> {
        Box::pin(async move {
            let repo: Repo<E> = Repo::new(client, table);
            repo.migrate().status(&plan).await
        })
    }

    fn forget(
        &self,
        client: Client,
        table: String,
        plan: Plan,
    ) -> BoxFuture<'static, Result<usize, MigrateError>> {
        Box::pin(async move {
            let repo: Repo<E> = Repo::new(client, table);
            repo.migrate().forget(&plan).await
        })
    }

    fn layouts(
        &self,
        client: Client,
        table: String,
        options: LayoutOptions,
        step: LayoutStep,
    ) -> BoxFuture<'static, Result<LayoutOutcome, Error>> {
        Box::pin(async move {
            let repo: Repo<E> = Repo::new(client, table).with_layout_timing(options.timing);
            let mut layouts = repo.layouts();
            if let Some(units) = options.write_units_per_second {
                layouts = layouts.with_write_budget(units);
            }
            Ok(match step {
                LayoutStep::Show => LayoutOutcome::Entries(layouts.entries().await?),
                LayoutStep::Change { key, n } => {
                    LayoutOutcome::Moved(layouts.change(&key, n).await?)
                }
                LayoutStep::Begin { key, n } => LayoutOutcome::Entry(layouts.begin(&key, n).await?),
                LayoutStep::Advance { key } => LayoutOutcome::Entry(layouts.advance(&key).await?),
                LayoutStep::Migrate { key } => LayoutOutcome::Moved(layouts.migrate(&key).await?),
                LayoutStep::Finish { key } => LayoutOutcome::Steady(layouts.finish(&key).await?),
            })
        })
    }
}

/// The entity named `name`, or a usage error listing the known ones.
pub(crate) fn find<'a>(
    entities: &'a [Box<dyn EntityOps>],
    name: &str,
) -> Result<&'a dyn EntityOps, crate::Failure> {
    entities
        .iter()
        .find(|e| e.schema().entity == name)
        .map(|e| e.as_ref())
        .ok_or_else(|| {
            let known: Vec<&str> = entities.iter().map(|e| e.schema().entity).collect();
            crate::Failure::usage(format!(
                "unknown entity `{name}`: this command line knows {}",
                if known.is_empty() {
                    "no entities (add them with Ops::entity)".to_owned()
                } else {
                    known.join(", ")
                }
            ))
        })
}
