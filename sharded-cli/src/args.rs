//! The command line's arguments, named as the AWS CLI names them.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use sharded::layouts::LayoutTiming;
use sharded::migrate::{MigrateError, Unit};

#[derive(Parser, Debug)]
#[command(
    about = "Operate DynamoDB tables written with sharded: plan, describe, report, migrate, \
             change a hot key's layout",
    version
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) aws: AwsArgs,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Output::Table)]
    pub(crate) output: Output,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Where DynamoDB is; anything not given comes from the standard AWS configuration chain.
#[derive(Args, Debug, Clone)]
pub(crate) struct AwsArgs {
    /// AWS region (otherwise AWS_REGION, the profile, ...).
    #[arg(long, global = true)]
    pub(crate) region: Option<String>,
    /// A DynamoDB endpoint, e.g. DynamoDB Local's http://127.0.0.1:8000 (otherwise
    /// AWS_ENDPOINT_URL).
    #[arg(long, global = true)]
    pub(crate) endpoint_url: Option<String>,
    /// A named profile from ~/.aws/config.
    #[arg(long, global = true)]
    pub(crate) profile: Option<String>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// For people.
    Table,
    /// For tools.
    Json,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Start a local DynamoDB for development and print its endpoint (Ctrl-C stops it):
    /// embedded, or DynamoDB Local with SHARDED_TEST_BACKEND=dynamodb-local.
    Local {
        /// Print the endpoint and exit instead of waiting for Ctrl-C (the instance stops).
        #[arg(long)]
        check: bool,
    },
    /// Plan the shard count of a logical key from its peak load.
    Plan(PlanArgs),
    /// Show each entity's key layout, GSIs and transition, and the CreateTable they need.
    Describe {
        /// Only this entity (default: all).
        #[arg(long)]
        entity: Option<String>,
        /// The table name to put in the CreateTable.
        #[arg(long, default_value = "<table>")]
        table: String,
        /// Print only the CreateTable input, as `aws dynamodb create-table --cli-input-json`
        /// takes it (nothing around it).
        #[arg(long)]
        create_table_input: bool,
    },
    /// The hot-key report from a recording or a Contributor Insights rule report.
    Report(ReportArgs),
    /// Move an entity's items to their current layout.
    Migrate(MigrateArgs),
    /// Per-key layouts (`max_n` on #[pk]): list the keys whose shard count is their own,
    /// change one key's count online, or run one step of a change.
    #[command(subcommand)]
    Layouts(LayoutsCommand),
    /// Count an entity's items still at their previous layout's place; with a plan, also
    /// where each of its units is, and whether the layout declaration can be removed.
    Remaining(RemainingArgs),
}

#[derive(Args, Debug)]
pub(crate) struct RemainingArgs {
    /// The entity (as `describe` lists it).
    #[arg(long)]
    pub(crate) entity: String,
    /// The table.
    #[arg(long)]
    pub(crate) table: String,
    /// A plan `migrate --plan` printed: say where each of its units is (from their records in
    /// the table) before counting what is left.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["segments", "units"])]
    pub(crate) plan_file: Option<PathBuf>,
    /// With --units, instead of --plan-file: the plan's segment count (`total_segments`), for
    /// an orchestrator's last step that has the plan's numbers but not its file.
    #[arg(long, requires = "units")]
    pub(crate) segments: Option<u32>,
    /// With --segments: the plan's unit count (its units are cut from the two as
    /// `migrate --plan` cut them).
    #[arg(long, requires = "segments")]
    pub(crate) units: Option<u32>,
    /// With a plan, when the declaration can be removed (every unit done, nothing left):
    /// delete the units' records too, the migration's own items in the table (other
    /// services' scans see them). Kept otherwise, and said so.
    #[arg(long)]
    pub(crate) forget: bool,
}

#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// Peak puts per second on the logical key.
    #[arg(long)]
    pub(crate) peak_writes: f64,
    /// Average item size in bytes.
    #[arg(long)]
    pub(crate) item_bytes: u64,
    /// Peak scatter-gather reads per second of the logical key.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) scatter_reads: f64,
    /// Peak point reads per second.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) point_reads: f64,
    /// Items one scatter-gather read takes from each shard.
    #[arg(long, default_value_t = 1)]
    pub(crate) items_per_read: u32,
    /// Fraction of the per-key limits kept free.
    #[arg(long, default_value_t = sharded::capacity::DEFAULT_HEADROOM)]
    pub(crate) headroom: f64,
    /// Check the plan against this table's warm throughput and on-demand maximum
    /// (one DescribeTable).
    #[arg(long)]
    pub(crate) table: Option<String>,
}

#[derive(Args, Debug)]
#[command(group(
    ArgGroup::new("source")
        .required(true)
        .args(["recording", "contributor_insights", "live"])
))]
pub(crate) struct ReportArgs {
    /// A recording written by `stats.recording().to_json()` (`HotKeyStats`, `ReportHotKeys`).
    #[arg(long)]
    pub(crate) recording: Option<PathBuf>,
    /// The JSON of `aws cloudwatch get-insight-rule-report` for a DynamoDB rule.
    #[arg(long)]
    pub(crate) contributor_insights: Option<PathBuf>,
    /// Read the last MINUTES of the table's (or --index's) own Contributor Insights rule from
    /// CloudWatch (needs --table; Contributor Insights enabled on it).
    #[arg(long, value_name = "MINUTES", requires = "table")]
    #[cfg_attr(not(feature = "cloudwatch"), arg(hide = true))]
    pub(crate) live: Option<u32>,
    /// What the Contributor Insights rule counted.
    #[arg(long, value_enum, default_value_t = Rule::AccessedWrites)]
    pub(crate) rule: Rule,
    /// The GSI a Contributor Insights report is of, or --live reads (default: the table).
    #[arg(long)]
    pub(crate) index: Option<String>,
    /// The shard count of a Contributor Insights report's keys, to roll them up.
    #[arg(long)]
    pub(crate) shards: Option<u32>,
    /// Replace every key by a salted hash (share the report without the keys).
    #[arg(long, value_name = "SALT")]
    pub(crate) redact: Option<String>,
    /// Compare with this table's warm throughput and on-demand maximum (one DescribeTable).
    #[arg(long)]
    pub(crate) table: Option<String>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A most-accessed rule, counted as write units.
    AccessedWrites,
    /// A most-accessed rule, counted as read units.
    AccessedReads,
    /// A most-throttled rule.
    Throttled,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("one_unit").args(["unit", "plan_file"])))]
pub(crate) struct MigrateArgs {
    /// The entity (as `describe` lists it).
    #[arg(long)]
    pub(crate) entity: String,
    /// The table.
    #[arg(long)]
    pub(crate) table: String,
    /// Write units per second the migration may use.
    #[arg(long)]
    pub(crate) write_units_per_second: Option<f64>,
    /// Read units per second the migration's scan may use.
    #[arg(long)]
    pub(crate) read_units_per_second: Option<f64>,
    /// Scan segments.
    #[arg(long)]
    pub(crate) segments: Option<u32>,
    /// Where the checkpoint is written after every page (and read with --resume).
    #[arg(long)]
    pub(crate) checkpoint: Option<PathBuf>,
    /// Resume from the checkpoint file instead of starting over.
    #[arg(long, requires = "checkpoint")]
    pub(crate) resume: bool,
    /// No progress bar (for logs).
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Also move items whose keys are the entity's shape but not in canonical form to the
    /// key their attributes give (each listed); by default they are left where they are and
    /// listed.
    #[arg(long)]
    pub(crate) rekey_non_canonical: bool,
    /// Print the migration cut into units (JSON, whatever --output), each with the command
    /// line that runs it, and the estimate; run nothing. --segments is the scan's
    /// TotalSegments, --write-units-per-second the budget of the whole fleet.
    #[arg(long, conflicts_with_all = ["checkpoint", "resume", "unit", "plan_file", "from_start"])]
    pub(crate) plan: bool,
    /// With --plan: how many units (1 to the segment count; default: one per segment).
    #[arg(long, requires = "plan")]
    pub(crate) units: Option<u32>,
    /// With --plan: the most units run at once, which share the budget (1 to the unit
    /// count; default: the unit count).
    #[arg(long, requires = "plan")]
    pub(crate) workers: Option<u32>,
    /// Run one unit of a plan (`4..8/16`: segments 4 to 7 of a scan in 16), as `--plan`
    /// prints it; give it the plan's share of the budget. Its progress is recorded in the
    /// table: run again, it resumes; done, it reads nothing.
    #[arg(long, value_name = "UNIT", value_parser = parse_unit, conflicts_with = "plan_file")]
    pub(crate) unit: Option<Unit>,
    /// Run unit --unit-index of this plan (as `--plan` printed it), at the plan's share of
    /// the budget unless --write-units-per-second says otherwise: for a Kubernetes indexed
    /// Job (`$(JOB_COMPLETION_INDEX)`).
    #[arg(long, value_name = "FILE", requires = "unit_index")]
    pub(crate) plan_file: Option<PathBuf>,
    /// With --plan-file: the unit's index in the plan (from 0).
    #[arg(long, value_name = "INDEX", requires = "plan_file")]
    pub(crate) unit_index: Option<usize>,
    /// With --unit or --plan-file: read the unit from its start, whatever its record says.
    #[arg(long, requires = "one_unit")]
    pub(crate) from_start: bool,
}

/// A unit id as the library reads it; a bad one is a usage error with the library's message.
fn parse_unit(id: &str) -> Result<Unit, String> {
    id.parse::<Unit>().map_err(|e| match e {
        MigrateError::Refused(why) => why.to_string(),
        other => other.to_string(),
    })
}

#[derive(Subcommand, Debug)]
pub(crate) enum LayoutsCommand {
    /// The layout directory: each listed key, its counts, phase and since when.
    Show {
        #[command(flatten)]
        target: LayoutTarget,
    },
    /// Change KEY to N shards online: every step, each when it may run; run it again after a
    /// stop and it continues.
    Change {
        #[command(flatten)]
        target: LayoutTarget,
        #[command(flatten)]
        key: KeyArg,
        /// The shard count to change to (1 to the entity's `max_n`; its declared `n` narrows
        /// the key back and removes its entry).
        #[arg(long)]
        n: u32,
        /// Write units per second the key's migration may use (unlimited by default).
        #[arg(long)]
        write_units_per_second: Option<f64>,
    },
    /// Step 1: start changing KEY to N shards (`reading`: both counts read, the current one
    /// written).
    Begin {
        #[command(flatten)]
        target: LayoutTarget,
        #[command(flatten)]
        key: KeyArg,
        /// The shard count to change to.
        #[arg(long)]
        n: u32,
    },
    /// Step 2, a lease and a margin after `begin`: writes go to the new count (`writing`).
    Advance {
        #[command(flatten)]
        target: LayoutTarget,
        #[command(flatten)]
        key: KeyArg,
    },
    /// Step 3, a lease and a margin after `advance`: move the key's items left at the
    /// previous count (run again until it reports none left).
    Migrate {
        #[command(flatten)]
        target: LayoutTarget,
        #[command(flatten)]
        key: KeyArg,
        /// Write units per second the migration may use (unlimited by default).
        #[arg(long)]
        write_units_per_second: Option<f64>,
    },
    /// Step 4: the key is steady at its new count (its entry removed at the declared `n`).
    Finish {
        #[command(flatten)]
        target: LayoutTarget,
        #[command(flatten)]
        key: KeyArg,
    },
}

/// The entity and table a `layouts` subcommand works on, and the timing of its steps.
#[derive(Args, Debug)]
pub(crate) struct LayoutTarget {
    /// The entity (as `describe` lists it); its #[pk] declares `max_n`.
    #[arg(long)]
    pub(crate) entity: String,
    /// The table.
    #[arg(long)]
    pub(crate) table: String,
    /// The services' layout lease in milliseconds (`LayoutTiming::lease`): a step waits
    /// lease + margin after the previous one. Give what the services run with.
    #[arg(long, value_name = "MS", default_value_t = millis(LayoutTiming::default().lease))]
    pub(crate) lease_ms: u64,
    /// The margin in milliseconds a step waits beyond the lease (`LayoutTiming::margin`).
    #[arg(long, value_name = "MS", default_value_t = millis(LayoutTiming::default().margin))]
    pub(crate) margin_ms: u64,
}

impl LayoutTarget {
    pub(crate) fn timing(&self) -> LayoutTiming {
        LayoutTiming::new(
            Duration::from_millis(self.lease_ms),
            Duration::from_millis(self.margin_ms),
        )
    }
}

/// The logical key a step changes.
#[derive(Args, Debug)]
pub(crate) struct KeyArg {
    /// The logical key: the partition key's template without its shard (`GAME#g1`).
    #[arg(long)]
    pub(crate) key: String,
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
