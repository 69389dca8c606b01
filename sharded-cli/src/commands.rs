//! One function per subcommand; each returns the exit code or a [`Failure`].

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use sharded::aws_sdk_dynamodb::Client;
use sharded::capacity::{plan, InsightRule, PerKeyLimits, PlanInput, Recording, TableCaps};
use sharded::migrate::{Checkpoint, MigrateError, Unit};
use sharded::schema::{EntitySchema, TableDefinition};
use sharded::Error;

use crate::args::{
    AwsArgs, Cli, Command, LayoutsCommand, MigrateArgs, Output, PlanArgs, RemainingArgs,
    ReportArgs, Rule,
};
use crate::entities::{find, EntityOps, LayoutOptions, LayoutOutcome, LayoutStep, MigrateOptions};
use crate::failures::{dynamo_failure, migration_failure, read};
use crate::output::{create_table_json, describe_entity, print_layout_outcome};
use crate::{Failure, EXIT_INCOMPLETE, EXIT_OK, EXIT_TOO_EARLY};

pub(crate) async fn run(entities: &[Box<dyn EntityOps>], cli: Cli) -> Result<u8, Failure> {
    let output = cli.output;
    match cli.command {
        Command::Local { check } => local(output, check).await,
        Command::Plan(args) => plan_command(&cli.aws, output, args).await,
        Command::Describe {
            entity,
            table,
            create_table_input,
        } => describe(entities, output, entity, &table, create_table_input),
        Command::Report(args) => report(&cli.aws, output, args).await,
        Command::Migrate(args) => migrate(entities, &cli.aws, output, args).await,
        Command::Layouts(command) => layouts(entities, &cli.aws, output, command).await,
        Command::Remaining(args) => remaining(entities, &cli.aws, output, args).await,
    }
}

/// `remaining`: what is left at the previous layout's place; with a plan, where each unit is.
async fn remaining(
    entities: &[Box<dyn EntityOps>],
    aws: &AwsArgs,
    output: Output,
    args: RemainingArgs,
) -> Result<u8, Failure> {
    let entity = find(entities, &args.entity)?;
    let client = client(aws).await;
    if args.plan_file.is_some() || args.segments.is_some() {
        return crate::units::remaining_with_plan(entity, client, output, &args).await;
    }
    if args.forget {
        return Err(Failure::usage(
            "--forget deletes a plan's unit records: give the plan (--plan-file, or --segments \
             and --units)",
        ));
    }
    let table = args.table;
    let left = entity
        .remaining(client, table.clone())
        .await
        .map_err(|e| migration_failure(&table, e, &[]))?;
    match output {
        Output::Json => println!(
            "{}",
            json!({
                "table": table,
                "remaining": left.items,
                "left_alone": left.left_alone.count,
                "left_alone_examples": left
                    .left_alone
                    .examples
                    .iter()
                    .map(|f| json!({ "key": f.key.to_string(), "reason": f.reason.to_string() }))
                    .collect::<Vec<_>>(),
            })
        ),
        Output::Table => {
            println!(
                "{} items of {} still at their previous place",
                left.items,
                entity.schema().entity
            );
            if left.left_alone.count > 0 {
                println!(
                    "{} items in its partitions are not the entity's and stay where they are:",
                    left.left_alone.count
                );
                for item in &left.left_alone.examples {
                    println!("  {}: {}", item.key, item.reason);
                }
            }
        }
    }
    Ok(if left == 0 { EXIT_OK } else { EXIT_INCOMPLETE })
}

/// A client from the standard AWS configuration chain, with the flags on top. Connecting
/// gives up after a few seconds, so an unreachable endpoint is an error, not a hang.
async fn client(aws: &AwsArgs) -> Client {
    Client::new(&loader(aws, true).load().await)
}

/// The standard AWS configuration chain with the flags on top (the endpoint flag only where
/// it is DynamoDB's).
fn loader(aws: &AwsArgs, dynamodb: bool) -> aws_config::ConfigLoader {
    use aws_config::timeout::TimeoutConfig;
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(
        TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_timeout(Duration::from_secs(60))
            .build(),
    );
    if let Some(region) = &aws.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    if let (Some(endpoint), true) = (&aws.endpoint_url, dynamodb) {
        loader = loader.endpoint_url(endpoint);
    }
    if let Some(profile) = &aws.profile {
        loader = loader.profile_name(profile);
    }
    loader
}

/// The caps of `table` (one `DescribeTable`), for `plan --table` and `report --table`.
async fn table_caps(aws: &AwsArgs, table: &str) -> Result<TableCaps, Failure> {
    TableCaps::describe(&client(aws).await, table)
        .await
        .map_err(|e| dynamo_failure(table, e))
}

#[cfg(feature = "local")]
async fn local(output: Output, check: bool) -> Result<u8, Failure> {
    use sharded_testkit::backend::{Backend, ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
    // The test kit's backend: embedded unless SHARDED_TEST_BACKEND or DYNAMODB_ENDPOINT says
    // otherwise, the same choice as the tests and examples make.
    let backend = Backend::shared()
        .await
        .map_err(|e| Failure::failed(format!("cannot start a local DynamoDB: {e}")))?;
    match output {
        Output::Json => println!(
            "{}",
            json!({
                "backend": backend.kind().name(),
                "endpoint": backend.endpoint(),
                "region": REGION,
                "access_key_id": ACCESS_KEY_ID,
                "secret_access_key": SECRET_ACCESS_KEY,
            })
        ),
        Output::Table => {
            println!("{backend}");
            // DynamoDB Local keeps one database per access key and region.
            println!(
                "export AWS_ENDPOINT_URL={} AWS_REGION={REGION} AWS_ACCESS_KEY_ID={ACCESS_KEY_ID} \
                 AWS_SECRET_ACCESS_KEY={SECRET_ACCESS_KEY}",
                backend.endpoint()
            );
        }
    }
    if !check {
        eprintln!("Ctrl-C stops it");
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| Failure::failed(format!("waiting for Ctrl-C: {e}")))?;
    }
    Ok(EXIT_OK)
}

#[cfg(not(feature = "local"))]
async fn local(_: Output, _: bool) -> Result<u8, Failure> {
    Err(Failure::usage(
        "this command line was built without the `local` feature of sharded-cli",
    ))
}

async fn plan_command(aws: &AwsArgs, output: Output, args: PlanArgs) -> Result<u8, Failure> {
    let mut input = PlanInput::new(args.peak_writes, args.item_bytes)
        .scatter_reads_per_sec(args.scatter_reads)
        .point_reads_per_sec(args.point_reads)
        .items_per_read(args.items_per_read)
        .headroom(args.headroom);
    if let Some(table) = &args.table {
        input = input.table(table_caps(aws, table).await?);
    }
    let plan = plan(&input).map_err(|e| Failure::usage(e.to_string()))?;
    match output {
        Output::Table => print!("{plan}"),
        Output::Json => {
            let key = |k: &sharded::capacity::KeyPlan| {
                json!({
                    "index": k.index,
                    "n": k.n,
                    "derive_n": k.derive_n(),
                    "write_units_per_put": k.write_units_per_put,
                    "write_units_per_sec": k.write_units_per_sec,
                    "write_units_per_shard": k.write_units_per_shard,
                    "arithmetic": k.lines,
                })
            };
            let json = json!({
                "base": key(&plan.base),
                "gsis": plan.gsis.iter().map(key).collect::<Vec<_>>(),
                "read_units_per_shard": plan.read_units_per_shard,
                "total_write_units_per_sec": plan.total_write_units_per_sec,
                "warnings": plan.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            });
            println!("{json:#}");
        }
    }
    Ok(EXIT_OK)
}

fn describe(
    entities: &[Box<dyn EntityOps>],
    output: Output,
    only: Option<String>,
    table: &str,
    create_table_input: bool,
) -> Result<u8, Failure> {
    let chosen: Vec<&'static EntitySchema> = match &only {
        Some(name) => vec![find(entities, name)?.schema()],
        None => entities.iter().map(|e| e.schema()).collect(),
    };
    let mut definition: Option<TableDefinition> = None;
    for schema in &chosen {
        let own = schema.table_definition();
        definition = Some(match definition {
            None => own,
            Some(merged) => merged.merge(&own).map_err(|conflict| {
                Failure::usage(format!(
                    "these entities cannot share one table: {}",
                    conflict.0
                ))
            })?,
        });
    }
    let create_table = definition.map(|d| create_table_json(&d, table));
    if create_table_input {
        // The bare input, whatever `--output`: what `--cli-input-json` reads.
        println!("{:#}", create_table.unwrap_or_default());
        return Ok(EXIT_OK);
    }
    match output {
        Output::Json => {
            let json = json!({
                "entities": chosen.iter().map(|s| describe_entity(s)).collect::<Vec<_>>(),
                "create_table": create_table,
            });
            println!("{json:#}");
        }
        Output::Table => {
            for schema in &chosen {
                let d = describe_entity(schema);
                println!("{}", d["entity"].as_str().unwrap_or_default());
                println!(
                    "  partition key  {} = {}",
                    d["pk"]["attribute"].as_str().unwrap_or_default(),
                    d["pk"]["layout"].as_str().unwrap_or_default()
                );
                if let Some(sk) = d["sk"].as_object() {
                    println!(
                        "  sort key       {} = {}",
                        sk["attribute"].as_str().unwrap_or_default(),
                        sk["template"].as_str().unwrap_or_default()
                    );
                }
                for gsi in d["gsis"].as_array().into_iter().flatten() {
                    println!(
                        "  {:<14} {} = {}",
                        gsi["index"].as_str().unwrap_or_default(),
                        gsi["pk_attribute"].as_str().unwrap_or_default(),
                        gsi["pk_layout"].as_str().unwrap_or_default()
                    );
                }
                println!(
                    "  transition     {}",
                    d["transition"].as_str().unwrap_or("none")
                );
                println!(
                    "  table          {} ({})",
                    d["table"]["declared_by"].as_str().unwrap_or_default(),
                    d["table"]["recognition"].as_str().unwrap_or_default()
                );
            }
            if let Some(create) = create_table {
                println!("CreateTable (aws dynamodb create-table --cli-input-json):");
                println!("{create:#}");
            }
        }
    }
    Ok(EXIT_OK)
}

async fn report(aws: &AwsArgs, output: Output, args: ReportArgs) -> Result<u8, Failure> {
    let rule = match args.rule {
        Rule::AccessedWrites => InsightRule::AccessedWrites,
        Rule::AccessedReads => InsightRule::AccessedReads,
        Rule::Throttled => InsightRule::Throttled,
    };
    let recording = if let Some(path) = &args.recording {
        Recording::from_json(&read(path)?)
            .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?
    } else if let Some(path) = &args.contributor_insights {
        Recording::from_contributor_insights(&read(path)?, args.index.as_deref(), rule, args.shards)
            .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?
    } else if let (Some(minutes), Some(table)) = (args.live, &args.table) {
        live_recording(aws, table, &args, rule, minutes).await?
    } else {
        return Err(Failure::usage(
            "give --recording, --contributor-insights or --live with --table",
        ));
    };
    let mut report = recording.report(PerKeyLimits::DYNAMODB);
    if let Some(table) = &args.table {
        report = report.with_table_caps(&table_caps(aws, table).await?);
    }
    if let Some(salt) = &args.redact {
        report = report.redact(salt);
    }
    match output {
        Output::Json => println!("{}", report.to_json()),
        Output::Table => print!("{report}"),
    }
    Ok(EXIT_OK)
}

/// A bar over the table's item count when `DescribeTable` gives one (a migration examines
/// every item of the table once), else a spinner: the count is DynamoDB's estimate, refreshed
/// every six hours or so, and free, where an exact total would cost a second full scan. A
/// unit of segments examines its share of the segments: about as large a share of the items.
async fn progress_bar(client: &Client, table: &str, unit: Option<&Unit>) -> ProgressBar {
    let share =
        |count: i64| match unit.and_then(|u| Some((u.segment_range()?, u.total_segments()?))) {
            Some((range, total)) => count * i64::from(range.end - range.start) / i64::from(total),
            None => count,
        };
    let item_count = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .ok()
        .and_then(|d| d.table?.item_count)
        .map(share)
        .filter(|&count| count > 0);
    let (bar, template) = match item_count {
        Some(count) => (
            ProgressBar::new(count as u64),
            "{elapsed_precise} [{wide_bar}] {percent:>3}% of ~{len} items examined, eta {eta}\n{msg}",
        ),
        None => (ProgressBar::new_spinner(), "{spinner} {elapsed_precise} {msg}"),
    };
    // The templates are constants: a refused one would be a bug here, shown as a spinner.
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The last `minutes` of the table's own Contributor Insights rule, from CloudWatch.
#[cfg(feature = "cloudwatch")]
async fn live_recording(
    aws: &AwsArgs,
    table: &str,
    args: &ReportArgs,
    rule: InsightRule,
    minutes: u32,
) -> Result<Recording, Failure> {
    let dynamodb = client(aws).await;
    // The endpoint flag names DynamoDB's endpoint; CloudWatch's comes from the chain
    // (AWS_ENDPOINT_URL_CLOUDWATCH, the profile), never from it.
    let cloudwatch = aws_sdk_cloudwatch::Client::new(&loader(aws, false).load().await);
    let sample = crate::live::LiveSample {
        table,
        index: args.index.as_deref(),
        rule,
        minutes,
        shards: args.shards,
    };
    crate::live::recording(&dynamodb, &cloudwatch, &sample).await
}

#[cfg(not(feature = "cloudwatch"))]
async fn live_recording(
    _: &AwsArgs,
    _: &str,
    _: &ReportArgs,
    _: InsightRule,
    _: u32,
) -> Result<Recording, Failure> {
    Err(Failure::usage(
        "this command line was built without the `cloudwatch` feature of sharded-cli, which \
         --live needs: report from a file with --recording or --contributor-insights",
    ))
}

/// The flags of `args` the runtime checks before a run, as typed: what a refusal points at.
fn given_flags(args: &MigrateArgs) -> Vec<String> {
    let mut given = Vec::new();
    if let Some(w) = args.write_units_per_second {
        given.push(format!("--write-units-per-second {w}"));
    }
    if let Some(r) = args.read_units_per_second {
        given.push(format!("--read-units-per-second {r}"));
    }
    if let Some(segments) = args.segments {
        given.push(format!("--segments {segments}"));
    }
    if let (Some(path), true) = (&args.checkpoint, args.resume) {
        given.push(format!("--checkpoint {} --resume", path.display()));
    }
    given
}

/// Writes `checkpoint` to `path` whole, then renames it into place: a crash never leaves
/// half a checkpoint.
fn save_checkpoint(path: &Path, checkpoint: &Checkpoint) -> Result<(), String> {
    let temporary = path.with_extension("partial");
    std::fs::write(&temporary, checkpoint.to_token())
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|e| format!("cannot write the checkpoint {}: {e}", path.display()))
}

async fn migrate(
    entities: &[Box<dyn EntityOps>],
    aws: &AwsArgs,
    output: Output,
    args: MigrateArgs,
) -> Result<u8, Failure> {
    let entity = find(entities, &args.entity)?;
    if args.plan {
        return crate::units::print_plan(entity, client(aws).await, &args).await;
    }
    let given = given_flags(&args);
    let mut args = args;
    // A unit of a plan file runs at the plan's share of the budget unless the flag says
    // otherwise; the plan is checked against the entity and table before any request.
    let unit = match (&args.unit, &args.plan_file, args.unit_index) {
        (Some(unit), _, _) => Some(unit.clone()),
        (None, Some(path), Some(index)) => {
            let plan = crate::units::read_plan(path)?;
            crate::units::check_plan(&plan, entity.schema(), &args.table, path)?;
            let unit = crate::units::unit_at(&plan, index, path)?;
            args.write_units_per_second = args
                .write_units_per_second
                .or(Some(plan.unit_write_units_per_second()));
            Some(unit)
        }
        _ => None,
    };
    // Everything the flags name is checked before the first request: a corrupt checkpoint
    // here, settings and a checkpoint of another migration by the runtime (`given` names the
    // flags behind them in its refusal).
    let resume_from = match (&args.checkpoint, args.resume) {
        (Some(path), true) => Some(
            Checkpoint::from_token(&read(path)?)
                .map_err(|e| Failure::usage(format!("{}: {e}", path.display())))?,
        ),
        _ => None,
    };
    let client = client(aws).await;
    let bar = if args.quiet || output == Output::Json {
        ProgressBar::hidden()
    } else {
        progress_bar(&client, &args.table, unit.as_ref()).await
    };
    let shown = bar.clone();
    let checkpoint_path = args.checkpoint.clone();
    let checkpoint_error: Arc<Mutex<Option<String>>> = Arc::default();
    let write_error = checkpoint_error.clone();
    let options = MigrateOptions {
        write_units_per_second: args.write_units_per_second,
        read_units_per_second: args.read_units_per_second,
        segments: args.segments,
        resume_from,
        rekey_non_canonical: args.rekey_non_canonical,
        unit: unit.clone(),
        from_start: args.from_start,
        on_progress: Arc::new(move |p| {
            if let Some(total) = shown.length() {
                // The item count is an estimate: a table that grew since it was taken
                // stretches the bar rather than overflowing it.
                shown.set_length(total.max(p.examined));
            }
            shown.set_position(p.examined);
            shown.set_message(p.to_string());
        }),
        on_checkpoint: Arc::new(move |c| {
            if let Some(path) = &checkpoint_path {
                if let Err(e) = save_checkpoint(path, c) {
                    *write_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                }
            }
        }),
    };
    let result = entity.migrate(client, args.table.clone(), options).await;
    bar.finish_and_clear();
    // The report's checkpoint, where a resumed run starts, is saved whatever happened: a run
    // stopped by a read that failed before its first page never called `on_checkpoint`, and
    // `--resume` must still find the file it is told to use.
    let last_checkpoint = match &result {
        Ok(report) => Some(&report.checkpoint),
        Err(MigrateError::Incomplete { report, .. } | MigrateError::Superseded { report, .. }) => {
            Some(&report.checkpoint)
        }
        Err(_) => None,
    };
    if let (Some(path), Some(checkpoint)) = (&args.checkpoint, last_checkpoint) {
        if let Err(e) = save_checkpoint(path, checkpoint) {
            *checkpoint_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
    }
    if let Some(message) = checkpoint_error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        eprintln!("warning: {message}");
    }
    // A superseded unit's run says why it stopped, in the words of its error.
    let stopped = result.as_ref().err().map(ToString::to_string);
    let (report, code) = match result {
        Ok(report) => (report, EXIT_OK),
        Err(MigrateError::Incomplete { report, source }) => {
            if let Some(source) = source {
                eprintln!("stopped: {source}");
            }
            (*report, EXIT_INCOMPLETE)
        }
        Err(MigrateError::Superseded { report, .. }) => {
            eprintln!("stopped: {}", stopped.unwrap_or_default());
            (*report, EXIT_INCOMPLETE)
        }
        Err(e) => return Err(migration_failure(&args.table, e, &given)),
    };
    match output {
        Output::Json => {
            let p = &report.progress;
            let mut json = json!({
                "table": args.table,
                "entity": entity.schema().entity,
                "scanned": p.scanned, "examined": p.examined, "moved": p.moved, "superseded": p.superseded,
                "in_place": p.in_place, "tagged": p.tagged, "gone": p.gone, "conflicts": p.conflicts,
                "failed": p.failed, "write_units": p.write_units, "read_units": p.read_units,
                "seconds": p.elapsed.as_secs_f64(),
                "complete": report.checkpoint.is_complete(),
                "failures": report.failed.iter().map(|f| json!({"key": f.key.to_string(), "reason": f.reason})).collect::<Vec<_>>(),
                "left_alone": p.left_alone,
                "left_alone_items": report.left_alone.iter().map(|f| json!({"key": f.key.to_string(), "reason": f.reason.to_string(), "why": f.reason.label()})).collect::<Vec<_>>(),
                "rekeyed": report.rekeyed.iter().map(|r| json!({"from": r.from.to_string(), "to": r.to.to_string()})).collect::<Vec<_>>(),
            });
            if let (Some(unit), Some(object)) = (&unit, json.as_object_mut()) {
                object.insert("unit".to_owned(), json!(unit.to_string()));
            }
            println!("{json:#}");
        }
        Output::Table => {
            if let Some(unit) = &unit {
                println!(
                    "unit {unit} of {}: {}",
                    entity.schema().entity,
                    if report.checkpoint.is_complete() {
                        "read to the end (recorded in the table)"
                    } else {
                        "not read to the end (recorded in the table: run it again to resume)"
                    }
                );
            }
            println!("{}", report.progress);
            for failure in &report.failed {
                println!("not moved: {}: {}", failure.key, failure.reason);
            }
            for item in &report.left_alone {
                println!(
                    "left alone (not the entity's): {}: {}",
                    item.key, item.reason
                );
            }
            for rekeyed in &report.rekeyed {
                println!("re-keyed: {} -> {}", rekeyed.from, rekeyed.to);
            }
            if code != EXIT_OK {
                if let Some(path) = &args.checkpoint {
                    println!("resume with --checkpoint {} --resume", path.display());
                }
            }
        }
    }
    Ok(code)
}

/// `layouts show|change|begin|advance|migrate|finish`: one entity's layout directory, through
/// the runtime's `Layouts` with the services' timing.
async fn layouts(
    entities: &[Box<dyn EntityOps>],
    aws: &AwsArgs,
    output: Output,
    command: LayoutsCommand,
) -> Result<u8, Failure> {
    let (target, step, budget) = match command {
        LayoutsCommand::Show { target } => (target, LayoutStep::Show, None),
        LayoutsCommand::Change {
            target,
            key,
            n,
            write_units_per_second,
        } => (
            target,
            LayoutStep::Change { key: key.key, n },
            write_units_per_second,
        ),
        LayoutsCommand::Begin { target, key, n } => {
            (target, LayoutStep::Begin { key: key.key, n }, None)
        }
        LayoutsCommand::Advance { target, key } => {
            (target, LayoutStep::Advance { key: key.key }, None)
        }
        LayoutsCommand::Migrate {
            target,
            key,
            write_units_per_second,
        } => (
            target,
            LayoutStep::Migrate { key: key.key },
            write_units_per_second,
        ),
        LayoutsCommand::Finish { target, key } => {
            (target, LayoutStep::Finish { key: key.key }, None)
        }
    };
    let entity = find(entities, &target.entity)?;
    if budget.is_some_and(|units| !(units.is_finite() && units > 0.0)) {
        return Err(Failure::usage(
            "--write-units-per-second must be a number above 0 (leave it out for no budget)",
        ));
    }
    let timing = target.timing();
    if let LayoutStep::Change { key, n } = &step {
        // On stderr, so that `--output json` prints one document.
        eprintln!(
            "changing `{key}` of {} to {n} shards: each step waits lease + margin = {:?}; \
             stopped, run this again and it continues",
            target.entity,
            timing.step_wait()
        );
    }
    let named = match &step {
        LayoutStep::Show => None,
        LayoutStep::Change { key, .. }
        | LayoutStep::Begin { key, .. }
        | LayoutStep::Advance { key }
        | LayoutStep::Migrate { key }
        | LayoutStep::Finish { key } => Some(key.clone()),
    };
    let options = LayoutOptions {
        timing,
        write_units_per_second: budget,
    };
    let client = client(aws).await;
    let outcome = entity
        .layouts(client, target.table.clone(), options, step)
        .await
        .map_err(|e| layout_failure(&target, named.as_deref(), e))?;
    print_layout_outcome(output, entity.schema(), &target, named.as_deref(), &outcome);
    Ok(match outcome {
        LayoutOutcome::Moved(moved) if moved.left > 0 || moved.blocked > 0 => EXIT_INCOMPLETE,
        _ => EXIT_OK,
    })
}

/// The exit code of a refused or failed layout step: a step that does not follow, a key or
/// count the entity refuses: usage (nothing changed); a step that must wait: too early;
/// items left behind: incomplete; the rest (DynamoDB, a directory written at the same time):
/// failed.
fn layout_failure(target: &crate::args::LayoutTarget, key: Option<&str>, error: Error) -> Failure {
    use sharded::layouts::LayoutError;
    let Error::Layout(refusal) = &error else {
        return dynamo_failure(&target.table, error);
    };
    let code = match refusal {
        LayoutError::NotPerKey { .. }
        | LayoutError::NotALogicalKey { .. }
        | LayoutError::OutOfRange { .. }
        | LayoutError::CannotBegin { .. }
        | LayoutError::WrongPhase { .. } => crate::EXIT_USAGE,
        LayoutError::TooEarly { .. } => EXIT_TOO_EARLY,
        LayoutError::ItemsRemain { .. } | LayoutError::Blocked { .. } => EXIT_INCOMPLETE,
        _ => crate::EXIT_FAILED,
    };
    let mut message = error.to_string();
    let (entity, table) = (&target.entity, &target.table);
    let next = match refusal {
        LayoutError::WrongPhase { phase, .. } => match *phase {
            "reading" => Some("advance"),
            "writing" => Some("migrate"),
            _ => Some("begin --n <N>"),
        },
        LayoutError::ItemsRemain { .. } => Some("migrate"),
        _ => None,
    };
    if let (Some(next), Some(key)) = (next, key) {
        message.push_str(&format!(
            " (here: `layouts {next} --entity {entity} --table {table} --key {key}`)"
        ));
    }
    if let LayoutError::TooEarly { wait, .. } = refusal {
        message.push_str(&format!(
            "; run it again in {:.1}s (or run `layouts change`, which waits)",
            wait.as_secs_f64()
        ));
    }
    Failure { code, message }
}
