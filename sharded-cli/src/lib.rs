//! An ops command line for tables written with [`sharded`], built into your own binary so it
//! knows your entities:
//!
//! ```no_run
//! use serde::{Deserialize, Serialize};
//! use sharded::ShardedEntity;
//!
//! #[derive(ShardedEntity, Serialize, Deserialize)]
//! #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 20, previous_n = 10)]
//! #[sk(template = "SCORE#{score}#{player_id}")]
//! struct Score { game_id: String, player_id: String, score: u64 }
//!
//! fn main() -> std::process::ExitCode {
//!     sharded_cli::Ops::new("ops").entity::<Score>().run()
//! }
//! ```
//!
//! The subcommands follow the AWS CLI's habits (`--table`, `--region`, `--endpoint-url`,
//! `--profile`, `--output json|table`; region, credentials and endpoint otherwise come from
//! the standard AWS configuration chain):
//!
//! | subcommand | what it does |
//! |---|---|
//! | `local` | starts a local DynamoDB for development (the test kit's embedded one, or DynamoDB Local with `SHARDED_TEST_BACKEND=dynamodb-local`) and prints its endpoint (feature `local`) |
//! | `plan` | the shard planner: `n` from a peak load, item size and read pattern, checked against the table's caps with `--table` |
//! | `describe` | each entity's key layout, GSIs, transition and table (names, tag), and the `CreateTable` they need (`--create-table-input`: that alone, for `aws dynamodb create-table --cli-input-json`) |
//! | `report` | the hot-key report from a recording (`stats.recording()`), a saved Contributor Insights rule report, or `--live`: the table's own rule read from CloudWatch over the last minutes (feature `cloudwatch`) |
//! | `migrate` | moves an entity's items to their current layout: a progress bar, a write budget, a checkpoint file and `--resume` |
//! | `migrate --plan --units U --workers K` | cuts the migration into units and prints them as JSON (whatever `--output`) for an orchestrator to map over: the library's `Plan` with each unit's `index` and `args` (the command line that runs it at the plan's share of the budget, `unit_write_units_per_second`), and the estimate from `DescribeTable`; `--segments` is the scan's `TotalSegments`, `--write-units-per-second` the whole fleet's budget |
//! | `migrate --unit 4..8/16` | runs one unit; its checkpoint and counts are recorded in the table, so a unit run again resumes, and one that completed reads nothing (`--from-start` reads it again; `--checkpoint --resume` starts from a file instead) |
//! | `migrate --plan-file plan.json --unit-index I` | runs unit `I` of a printed plan at the plan's share of the budget: what a Kubernetes indexed Job runs with `$(JOB_COMPLETION_INDEX)` |
//! | `remaining` | how many items are still at the previous layout's place |
//! | `remaining --plan-file plan.json` | where each unit of the plan is (done, failed with its items, started, not started, with its counts, from the units' records wherever they ran), what is left, and whether the layout declaration can be removed: every unit done and nothing left; `--segments S --units U` names the plan by its numbers instead of its file |
//! | `layouts show` | an entity's layout directory (`max_n` on `#[pk]`): each key with a count of its own, `from`, `to`, `phase`, `since` |
//! | `layouts change` | changes one key to `--n` shards online (every step, each when it may run; the key's migration under `--write-units-per-second`); run again after a stop, it continues |
//! | `layouts begin`, `advance`, `migrate`, `finish` | one step of a key's change each |
//!
//! The `layouts` subcommands wait a lease and a margin between steps: give them the
//! services' `LayoutTiming` with `--lease-ms` and `--margin-ms` (defaults: those of
//! `LayoutTiming::default()`).
//!
//! Exit codes scripts can trust: [`EXIT_OK`] (0), [`EXIT_FAILED`] (1: the command could not
//! do its work, e.g. the endpoint is unreachable, or another change of the layout directory
//! was written at the same time), [`EXIT_USAGE`] (2: bad arguments, an unknown entity, an
//! unreadable file, migration settings or a checkpoint the migration refuses, a plan that
//! cannot be cut (`--units 0`, more units than segments), a unit id that does not parse, a
//! plan file of another table, entity or layout or an index beyond it, a layout step out of
//! order, a key that is not the entity's or a count above `max_n`; nothing was changed),
//! [`EXIT_INCOMPLETE`] (3: a migration or a unit finished with items it could not move or
//! stopped on a read that failed, `remaining` found items left or, with a plan, a unit not
//! done, or a key's layout step left items behind), [`EXIT_TOO_EARLY`] (4: a layout step
//! before the previous one is a lease and a margin old; nothing was changed, the message says
//! how long to wait). `remaining --plan-file` exits 0 exactly when the layout declaration can
//! be removed.
//!
//! A migration's checkpoint never passes an item it could not move: after exit 3, its JSON
//! says `"complete": false`, and `migrate --checkpoint FILE --resume` reads the pages of the
//! failed items again and retries them.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod args;
mod commands;
mod entities;
mod failures;
#[cfg(feature = "cloudwatch")]
mod live;
#[cfg(test)]
mod orchestrator_files;
mod output;
mod units;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use sharded::ShardedEntity;

use crate::entities::{EntityOps, Registered};

/// Success.
pub const EXIT_OK: u8 = 0;
/// The command could not do its work (DynamoDB unreachable or refusing, a migration error);
/// the message says what failed.
pub const EXIT_FAILED: u8 = 1;
/// Bad arguments, an unknown entity, a file that cannot be read or is not what it should be,
/// migration settings that cannot run (`--segments 0`, `--write-units-per-second 0`), a plan
/// that cannot be cut (`--units 0`, more units or workers than it can have), a unit id that
/// does not parse, a plan file of another table, entity or layout or a `--unit-index` beyond
/// it, or a checkpoint of another migration: refused before any request, so nothing was
/// changed.
pub const EXIT_USAGE: u8 = 2;
/// Work remains: a migration (or one unit of it) finished with items it could not move (its
/// checkpoint stops before them, so `--resume`, or running the unit again, retries them) or
/// stopped on a read that failed after the SDK's retries (stderr says `stopped: ..`; its
/// checkpoint holds where to resume), or `remaining` counted items still at their previous
/// place or, with `--plan-file`, a unit of the plan not done (the layout declaration cannot
/// be removed yet); a key's layout step left items behind
/// (`layouts migrate` reports some left: run it again; `layouts finish` found items at the
/// previous count: run `layouts migrate`).
pub const EXIT_INCOMPLETE: u8 = 3;
/// A layout step came too early: the previous step is not yet a lease and a margin old, so a
/// process may still use the layout it replaced. Nothing was changed; the message says how
/// long to wait (`layouts change` waits by itself).
pub const EXIT_TOO_EARLY: u8 = 4;

/// An ops command line over a set of entities: name them with [`entity`](Self::entity), then
/// [`run`](Self::run) it from `main`.
pub struct Ops {
    name: String,
    entities: Vec<Box<dyn EntityOps>>,
}

impl Ops {
    /// A command line called `name` (shown in its help), with no entities yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            entities: Vec::new(),
        }
    }

    /// Adds an entity: `describe`, `migrate`, `remaining` and `layouts` take its name
    /// (`--entity Score`, the value of `#[sharded(entity = "..")]` or the struct's name).
    pub fn entity<E: ShardedEntity + 'static>(mut self) -> Self {
        self.entities.push(Box::new(Registered::<E>::new()));
        self
    }

    /// Runs the command line on the process's arguments and returns its exit code.
    pub fn run(self) -> ExitCode {
        self.run_from(std::env::args_os())
    }

    /// Runs the command line on `args` (the first is the program name), printing to stdout
    /// and stderr, and returns its exit code.
    pub fn run_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let cli = match args::Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(e) => {
                let _ = e.print();
                return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_OK });
            }
        };
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("{}: cannot start the async runtime: {e}", self.name);
                return ExitCode::from(EXIT_FAILED);
            }
        };
        let code = runtime.block_on(commands::run(&self.entities, cli));
        match code {
            Ok(code) => ExitCode::from(code),
            Err(failure) => {
                eprintln!("{}: {}", self.name, failure.message);
                ExitCode::from(failure.code)
            }
        }
    }
}

/// Why a command stopped: the message for stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_FAILED,
            message: message.into(),
        }
    }
}
