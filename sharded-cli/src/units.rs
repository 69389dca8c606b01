//! A migration in units, on the command line: `migrate --plan` (the plan as JSON an
//! orchestrator maps over, each unit with the command line that runs it), reading a plan back
//! (`migrate --plan-file --unit-index`, `remaining --plan-file`), and where each unit is.

use std::path::Path;

use serde_json::{json, Value};
use sharded::aws_sdk_dynamodb::Client;
use sharded::migrate::{Plan, PlanStatus, Remaining, Unit, UnitState};
use sharded::schema::EntitySchema;

use crate::args::{MigrateArgs, Output, RemainingArgs};
use crate::entities::{EntityOps, PlanOptions};
use crate::{Failure, EXIT_INCOMPLETE, EXIT_OK};

/// The flags of `migrate --plan` every unit's command line carries, the budgets as each
/// unit's share.
pub(crate) struct UnitFlags {
    pub(crate) read_units_per_second: Option<f64>,
    pub(crate) rekey_non_canonical: bool,
}

/// The command line (after the program's name) that runs `unit` of `plan` at its share of
/// the plan's budget.
fn unit_args(plan: &Plan, unit: &Unit, flags: &UnitFlags) -> Vec<String> {
    let share = |budget: f64| (budget / f64::from(plan.workers)).to_string();
    let mut args: Vec<String> = [
        "migrate",
        "--entity",
        &plan.entity,
        "--table",
        &plan.table,
        "--unit",
        &unit.to_string(),
        "--write-units-per-second",
        &plan.unit_write_units_per_second().to_string(),
    ]
    .map(str::to_owned)
    .into();
    if let Some(r) = flags.read_units_per_second {
        args.extend(["--read-units-per-second".to_owned(), share(r)]);
    }
    if flags.rekey_non_canonical {
        args.push("--rekey-non-canonical".to_owned());
    }
    args
}

/// The plan as `migrate --plan` prints it: the library's [`Plan`] (its field names), the
/// budget of each unit, and each unit as `{index, unit, args}`.
pub(crate) fn plan_json(plan: &Plan, flags: &UnitFlags) -> Result<Value, Failure> {
    let mut json = serde_json::to_value(plan)
        .map_err(|e| Failure::failed(format!("cannot write the plan as JSON: {e}")))?;
    json["unit_write_units_per_second"] = json!(plan.unit_write_units_per_second());
    json["units"] = plan
        .units
        .iter()
        .enumerate()
        .map(|(index, unit)| {
            json!({
                "index": index,
                "unit": unit.to_string(),
                "args": unit_args(plan, unit, flags),
            })
        })
        .collect();
    Ok(json)
}

/// Reads back a plan `migrate --plan` printed: each unit's `index` and `args` are ours, not
/// the library's, so a unit is read from its `unit` (a bare id, as the library writes it,
/// reads too); any other field the library does not know is ignored.
pub(crate) fn plan_from_json(mut json: Value) -> Result<Plan, String> {
    if let Some(units) = json.get_mut("units").and_then(Value::as_array_mut) {
        for unit in units.iter_mut() {
            if let Some(id) = unit.get("unit").cloned() {
                *unit = id;
            }
        }
    }
    serde_json::from_value(json).map_err(|e| e.to_string())
}

/// The plan in the file at `path`, as `migrate --plan` printed it.
pub(crate) fn read_plan(path: &Path) -> Result<Plan, Failure> {
    let text = crate::failures::read(path)?;
    let json: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "{}: not JSON ({e}); give the file `migrate --plan` printed",
            path.display()
        ))
    })?;
    plan_from_json(json).map_err(|e| {
        Failure::usage(format!(
            "{}: not a plan `migrate --plan` printed ({e}); make one with `migrate --plan`",
            path.display()
        ))
    })
}

/// Refuses a plan made for another table, entity or layout: its units' records are another
/// migration's.
pub(crate) fn check_plan(
    plan: &Plan,
    schema: &EntitySchema,
    table: &str,
    path: &Path,
) -> Result<(), Failure> {
    let path = path.display();
    if plan.table != table {
        return Err(Failure::usage(format!(
            "{path} is a plan of table `{}`, not `{table}`: give the --table it was made for, \
             or make a plan of `{table}` with `migrate --plan`",
            plan.table
        )));
    }
    if plan.entity != schema.entity {
        return Err(Failure::usage(format!(
            "{path} is a plan of entity `{}`, not `{}`: give the --entity it was made for, or \
             make a plan of `{}` with `migrate --plan`",
            plan.entity, schema.entity, schema.entity
        )));
    }
    let layout = schema.pk.layout_description();
    if plan.layout != layout {
        return Err(Failure::usage(format!(
            "{path} was made for the layout `{}` of {}, which now declares `{layout}`: the \
             plan's units are of another migration; make a new plan with `migrate --plan`",
            plan.layout, schema.entity
        )));
    }
    Ok(())
}

/// Unit `index` of `plan`, or a usage error saying which indexes there are.
pub(crate) fn unit_at(plan: &Plan, index: usize, path: &Path) -> Result<Unit, Failure> {
    plan.units.get(index).cloned().ok_or_else(|| {
        let n = plan.units.len();
        Failure::usage(format!(
            "--unit-index {index}: {} has {n} units, indexes 0 to {}; an indexed Job's \
             `completions` must be the plan's unit count ({n})",
            path.display(),
            n.saturating_sub(1)
        ))
    })
}

/// `migrate --plan`: the plan on stdout as JSON (whatever `--output`: it is for an
/// orchestrator), a line for people on stderr.
pub(crate) async fn print_plan(
    entity: &dyn EntityOps,
    client: Client,
    args: &MigrateArgs,
) -> Result<u8, Failure> {
    let table = args.table.clone();
    if args.write_units_per_second.is_some_and(f64::is_infinite) {
        return Err(Failure::usage(
            "--plan --write-units-per-second inf: a plan shares a budget among its workers; \
             give the fleet's budget as a number",
        ));
    }
    let refused = |e| crate::failures::migration_failure(&table, e, &plan_flags(args));
    let options = |units, workers| PlanOptions {
        segments: args.segments,
        write_units_per_second: args.write_units_per_second,
        units,
        workers,
    };
    let plan = match args.units {
        Some(units) => entity
            .plan(
                client,
                table.clone(),
                options(units, args.workers.unwrap_or(units)),
            )
            .await
            .map_err(refused)?,
        None => {
            // One unit per segment: the segment count is the migration's (its default when
            // --segments is not given), known once the plan is made.
            let one = entity
                .plan(client, table.clone(), options(1, 1))
                .await
                .map_err(refused)?;
            let total = one.total_segments;
            let mut plan = Plan::new(
                one.table,
                one.entity,
                one.layout,
                total,
                total,
                args.workers.unwrap_or(total),
                one.write_units_per_second,
            )
            .map_err(refused)?;
            plan.estimate = one.estimate;
            plan
        }
    };
    let flags = UnitFlags {
        read_units_per_second: args.read_units_per_second,
        rekey_non_canonical: args.rekey_non_canonical,
    };
    println!("{:#}", plan_json(&plan, &flags)?);
    eprintln!("{}", summary(&plan));
    Ok(EXIT_OK)
}

/// The flags behind a plan, as typed: what a refusal points at.
fn plan_flags(args: &MigrateArgs) -> Vec<String> {
    let mut given = Vec::new();
    if let Some(segments) = args.segments {
        given.push(format!("--segments {segments}"));
    }
    if let Some(w) = args.write_units_per_second {
        given.push(format!("--write-units-per-second {w}"));
    }
    if let Some(units) = args.units {
        given.push(format!("--units {units}"));
    }
    if let Some(workers) = args.workers {
        given.push(format!("--workers {workers}"));
    }
    given
}

/// One line for people: the units, each one's share, the estimate.
fn summary(plan: &Plan) -> String {
    let mut line = format!(
        "{} units of {} segments, at most {} at once, each at {} of the {} write units/s",
        plan.units.len(),
        plan.total_segments,
        plan.workers,
        round(plan.unit_write_units_per_second()),
        round(plan.write_units_per_second),
    );
    match plan.estimate {
        Some(e) if e.items > 0 => line.push_str(&format!(
            "; ~{} items of ~{} bytes (DescribeTable), {} write units a move: about {} if \
             every item moves",
            e.items,
            e.average_item_bytes,
            e.write_units_per_move,
            duration(e.seconds)
        )),
        _ => line.push_str("; DescribeTable counts no items yet (it refreshes about every 6 h)"),
    }
    line
}

fn round(w: f64) -> String {
    if w.fract() == 0.0 {
        format!("{w:.0}")
    } else {
        format!("{w:.2}")
    }
}

/// `3 d 4 h`, `2 h 5 min`, `40 s`.
fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3_599 => format!("{} min {} s", s / 60, s % 60),
        3_600..=86_399 => format!("{} h {} min", s / 3_600, s % 3_600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// `remaining --plan-file` (or `--segments --units`): where each unit of the plan is, what
/// the table still holds at the previous layout, and whether the declaration can go.
pub(crate) async fn remaining_with_plan(
    entity: &dyn EntityOps,
    client: Client,
    output: Output,
    args: &RemainingArgs,
) -> Result<u8, Failure> {
    let schema = entity.schema();
    let table = args.table.clone();
    let plan = match (&args.plan_file, args.segments, args.units) {
        (Some(path), _, _) => {
            let plan = read_plan(path)?;
            check_plan(&plan, schema, &table, path)?;
            plan
        }
        (None, Some(segments), Some(units)) => Plan::new(
            table.clone(),
            schema.entity,
            schema.pk.layout_description(),
            segments,
            units,
            units,
            1.0,
        )
        .map_err(|e| {
            crate::failures::migration_failure(
                &table,
                e,
                &[format!("--segments {segments} --units {units}")],
            )
        })?,
        _ => {
            return Err(Failure::usage(
                "give --plan-file, or --segments and --units (internal: no plan)",
            ))
        }
    };
    let status = entity
        .status(client.clone(), table.clone(), plan.clone())
        .await
        .map_err(|e| crate::failures::migration_failure(&table, e, &[]))?;
    let left = entity
        .remaining(client.clone(), table.clone())
        .await
        .map_err(|e| crate::failures::migration_failure(&table, e, &[]))?;
    let removable = status.is_complete() && left == 0;
    // Only when the declaration can go: a unit's record is where its next run resumes.
    let forgotten = if args.forget && removable {
        let deleted = entity.forget(client, table.clone(), plan).await;
        Some(deleted.map_err(|e| crate::failures::migration_failure(&table, e, &[]))?)
    } else {
        None
    };
    match output {
        Output::Json => {
            let mut json = status_json(&table, schema.entity, &status, &left, removable);
            if args.forget {
                json["forgotten"] = json!(forgotten.unwrap_or(0));
            }
            println!("{json:#}");
        }
        Output::Table => {
            print_status(schema.entity, &status, &left, removable);
            match forgotten {
                Some(n) => println!("{n} unit record(s) deleted"),
                None if args.forget => {
                    println!("the unit records stay: the declaration cannot be removed yet")
                }
                None => {}
            }
        }
    }
    Ok(if removable { EXIT_OK } else { EXIT_INCOMPLETE })
}

fn state_name(state: UnitState) -> &'static str {
    match state {
        UnitState::NotStarted => "not_started",
        UnitState::Started => "started",
        UnitState::Done => "done",
        UnitState::Failed { .. } => "failed",
        // A state this command line does not know yet is not done.
        _ => "unknown",
    }
}

fn status_json(
    table: &str,
    entity: &str,
    status: &PlanStatus,
    left: &Remaining,
    removable: bool,
) -> Value {
    let count = |name: &str| {
        status
            .units
            .iter()
            .filter(|u| state_name(u.state) == name)
            .count()
    };
    json!({
        "table": table,
        "entity": entity,
        "units": status.units.iter().map(|u| {
            let p = u.progress.unwrap_or_default();
            json!({
                "unit": u.unit.to_string(),
                "state": state_name(u.state),
                "failed_items": match u.state { UnitState::Failed { items } => items, _ => 0 },
                "scanned": p.scanned,
                "moved": p.moved,
                "write_units": p.write_units,
                "runs": p.runs,
            })
        }).collect::<Vec<_>>(),
        "done": count("done"),
        "failed": count("failed"),
        "started": count("started"),
        "not_started": count("not_started"),
        "remaining": left.items,
        "left_alone": left.left_alone.count,
        "removable": removable,
    })
}

fn print_status(entity: &str, status: &PlanStatus, left: &Remaining, removable: bool) {
    println!(
        "{:<16} {:<14} {:>10} {:>10} {:>12} {:>5}",
        "UNIT", "STATE", "SCANNED", "MOVED", "WRITE UNITS", "RUNS"
    );
    for u in &status.units {
        let p = u.progress.unwrap_or_default();
        let state = match u.state {
            UnitState::Failed { items } => format!("failed ({items})"),
            other => state_name(other).replace('_', " "),
        };
        println!(
            "{:<16} {state:<14} {:>10} {:>10} {:>12.1} {:>5}",
            u.unit.to_string(),
            p.scanned,
            p.moved,
            p.write_units,
            p.runs
        );
    }
    let n = |state: &str| {
        status
            .units
            .iter()
            .filter(|u| state_name(u.state) == state)
            .count()
    };
    println!(
        "{} units: {} done, {} failed, {} started, {} not started",
        status.units.len(),
        n("done"),
        n("failed"),
        n("started"),
        n("not_started")
    );
    println!(
        "{} items of {entity} still at their previous place",
        left.items
    );
    if left.left_alone.count > 0 {
        println!(
            "{} items in its partitions are not the entity's and stay where they are",
            left.left_alone.count
        );
    }
    let not_done = status.units.len() - n("done");
    if removable {
        println!(
            "the layout declaration (previous_n / legacy) can be removed: every unit is done \
             and nothing is left at the previous place"
        );
    } else if not_done > 0 {
        println!(
            "the layout declaration must stay: {not_done} unit(s) not done; run each with \
             `migrate --unit <UNIT>` (a started one resumes from its record, a failed one \
             retries its items)"
        );
    } else {
        println!(
            "the layout declaration must stay: every unit is done, but {} item(s) are at the \
             previous place (written behind the units by a service without the declaration?): \
             run `migrate` on the whole table, or the units again with --from-start",
            left.items
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn sample() -> Plan {
        Plan::new("leaderboard", "Score", "L", 16, 4, 2, 400.0).unwrap()
    }

    #[test]
    fn each_unit_carries_the_command_line_that_runs_it_at_its_share() {
        let flags = UnitFlags {
            read_units_per_second: Some(1000.0),
            rekey_non_canonical: true,
        };
        let json = plan_json(&sample(), &flags).unwrap();
        assert_eq!(json["unit_write_units_per_second"], 200.0);
        assert_eq!(json["units"][1]["index"], 1);
        assert_eq!(json["units"][1]["unit"], "4..8/16");
        let args: Vec<String> = serde_json::from_value(json["units"][1]["args"].clone()).unwrap();
        let cli = crate::args::Cli::try_parse_from(std::iter::once("ops".to_owned()).chain(args))
            .unwrap();
        let crate::args::Command::Migrate(m) = cli.command else {
            panic!("not a migrate: {cli:?}");
        };
        assert_eq!(m.unit, Some("4..8/16".parse().unwrap()));
        assert_eq!(m.write_units_per_second, Some(200.0));
        assert_eq!(m.read_units_per_second, Some(500.0));
        assert!(m.rekey_non_canonical);
        assert_eq!(
            (m.entity.as_str(), m.table.as_str()),
            ("Score", "leaderboard")
        );
    }

    #[test]
    fn a_printed_plan_reads_back_as_the_library_plan() {
        let plan = sample();
        let flags = UnitFlags {
            read_units_per_second: None,
            rekey_non_canonical: false,
        };
        let printed = plan_json(&plan, &flags).unwrap();
        assert_eq!(plan_from_json(printed).unwrap(), plan);
        // The library's own JSON (units as bare ids) reads too.
        let bare = serde_json::to_value(&plan).unwrap();
        assert_eq!(plan_from_json(bare).unwrap(), plan);
        let broken = json!({"table": "t", "units": [{"unit": "8..4/16"}]});
        assert!(plan_from_json(broken).unwrap_err().contains("unit"));
    }

    #[test]
    fn an_index_out_of_range_names_the_range() {
        let err = unit_at(&sample(), 4, Path::new("plan.json")).unwrap_err();
        assert_eq!(err.code, crate::EXIT_USAGE);
        assert!(err.message.contains("indexes 0 to 3"), "{}", err.message);
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(40.2), "40 s");
        assert_eq!(duration(125.0), "2 min 5 s");
        assert_eq!(duration(7_500.0), "2 h 5 min");
        assert_eq!(duration(1_000_000.0), "11 d 13 h");
    }
}
