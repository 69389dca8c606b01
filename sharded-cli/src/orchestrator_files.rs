//! The orchestrator definitions the guide shows (`docs/guide/orchestrators/`), checked in
//! `cargo test`: read as JSON and YAML, their structure checked (a Distributed Map at most
//! `workers` wide, an indexed Job of one completion per unit), and every command line in them
//! parsed by this command line's own parser against the plan `migrate --plan` prints, so the
//! files cannot drift from the flags.
//!
//! A convention of those files: `ops <subcommand>` in their prose always starts a whole
//! command line (ended by a backquote, a line's end or a shell operator), and is parsed.

use std::path::PathBuf;

use clap::Parser;
use serde::Deserialize;
use serde_json::Value;
use sharded::migrate::Plan;

use crate::args::{Cli, Command};
use crate::units::{plan_from_json, plan_json, unit_at, UnitFlags};

/// The subcommands a command line in the files may start with.
const SUBCOMMANDS: [&str; 7] = [
    "local",
    "plan",
    "describe",
    "report",
    "migrate",
    "layouts",
    "remaining",
];

fn file(name: &str) -> String {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "docs",
        "guide",
        "orchestrators",
        name,
    ]
    .iter()
    .collect();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `args` as the real parser reads them after the program's name.
fn parse(args: &[String]) -> Cli {
    Cli::try_parse_from(std::iter::once("ops".to_owned()).chain(args.iter().cloned()))
        .unwrap_or_else(|e| panic!("`ops {}` does not parse:\n{e}", args.join(" ")))
}

/// Every `ops <subcommand> ...` written in `text`, as arguments.
fn command_lines(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            let is_ops = word.trim_start_matches(['`', '#', '"']) == "ops";
            let next = words.get(i + 1).map(|w| {
                w.trim_end_matches(['.', ',', ':', ')'])
                    .trim_end_matches('`')
            });
            if !is_ops || !next.is_some_and(|n| SUBCOMMANDS.contains(&n)) {
                continue;
            }
            let mut args = Vec::new();
            for word in &words[i + 1..] {
                if [">", "|", "&&", ";", "\\"].contains(word) {
                    break;
                }
                let word = word.trim_end_matches(['.', ',', ':', ')']);
                let ends = word.ends_with('`');
                let word = word.trim_end_matches('`');
                args.push(word.to_owned());
                if ends {
                    break;
                }
            }
            found.push(args);
        }
    }
    found
}

/// The plan the Kubernetes example holds, as `migrate --plan` printed it: also the input the
/// Step Functions example is evaluated with.
fn example_plan() -> (Plan, Value) {
    let job = yaml_documents(&file("kubernetes-indexed-job.yaml"));
    let config = job
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("a ConfigMap holding the plan");
    let text = config["data"]["plan.json"]
        .as_str()
        .expect("the ConfigMap's plan.json");
    let json: Value = serde_json::from_str(text).expect("plan.json is JSON");
    let plan = plan_from_json(json.clone()).expect("plan.json reads back as a plan");
    (plan, json)
}

fn yaml_documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| Value::deserialize(document).expect("YAML"))
        .filter(|document| !document.is_null())
        .collect()
}

/// The value at a reference path (`$`, `$.units`) of `input`.
fn at(path: &str, input: &Value) -> Value {
    let rest = path
        .strip_prefix('$')
        .unwrap_or_else(|| panic!("not a path: {path}"));
    rest.split('.')
        .filter(|s| !s.is_empty())
        .fold(input, |value, field| &value[field])
        .clone()
}

/// A Step Functions intrinsic function (the few the example uses) or path, evaluated on
/// `input` as Step Functions would: what an ECS container is handed as its command.
fn evaluate(expression: &str, input: &Value) -> Value {
    let mut rest = expression.trim();
    let value = intrinsic(&mut rest, input);
    assert!(
        rest.trim().is_empty(),
        "left over in `{expression}`: `{rest}`"
    );
    value
}

fn intrinsic(rest: &mut &str, input: &Value) -> Value {
    *rest = rest.trim_start();
    if let Some(quoted) = rest.strip_prefix('\'') {
        let end = quoted.find('\'').expect("a closing quote");
        *rest = &quoted[end + 1..];
        return Value::String(quoted[..end].to_owned());
    }
    if rest.starts_with('$') {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || "$._".contains(c)))
            .unwrap_or(rest.len());
        let path = &rest[..end];
        *rest = &rest[end..];
        return at(path, input);
    }
    let open = rest.find('(').expect("a function call");
    let name = rest[..open].trim().to_owned();
    *rest = &rest[open + 1..];
    let mut args = Vec::new();
    loop {
        *rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(')') {
            *rest = after;
            break;
        }
        args.push(intrinsic(rest, input));
        *rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            *rest = after;
        }
    }
    match name.as_str() {
        "States.Array" => Value::Array(args),
        "States.ArrayLength" => args[0].as_array().expect("an array").len().into(),
        "States.Format" => {
            let template = args[0].as_str().expect("a template").to_owned();
            let mut out = String::new();
            let mut values = args[1..].iter();
            for (i, piece) in template.split("{}").enumerate() {
                if i > 0 {
                    match values.next().expect("a value per {}") {
                        Value::String(s) => out.push_str(s),
                        other => out.push_str(&other.to_string()),
                    }
                }
                out.push_str(piece);
            }
            Value::String(out)
        }
        other => panic!("an intrinsic function this test does not know: {other}"),
    }
}

/// An ECS container command: strings only (ECS refuses anything else).
fn strings(command: &Value) -> Vec<String> {
    command
        .as_array()
        .unwrap_or_else(|| panic!("a command is an array: {command}"))
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap_or_else(|| panic!("a command holds strings: {a}"))
                .to_owned()
        })
        .collect()
}

/// Every `"Command.$"` below `value`.
fn commands(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("Command.$", Value::String(expression)) => found.push(expression.clone()),
                    ("Command", _) => panic!("a fixed command drifts from the plan: {v}"),
                    _ => commands(v, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| commands(v, found)),
        _ => {}
    }
}

#[test]
fn the_kubernetes_plan_is_what_migrate_plan_prints() {
    let (plan, json) = example_plan();
    let flags = UnitFlags {
        read_units_per_second: None,
        rekey_non_canonical: false,
    };
    assert_eq!(
        plan_json(&plan, &flags).unwrap(),
        json,
        "the ConfigMap's plan.json is exactly what `migrate --plan` prints for it"
    );
    assert!(plan.estimate.is_some(), "with its estimate");
}

#[test]
fn the_indexed_job_runs_each_unit_of_its_plan_at_most_workers_at_once() {
    let text = file("kubernetes-indexed-job.yaml");
    let documents = yaml_documents(&text);
    let (plan, _) = example_plan();
    let kind = |k: &str| {
        documents
            .iter()
            .find(|d| d["kind"] == k)
            .unwrap_or_else(|| panic!("a {k}"))
    };
    let job = kind("Job");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(
        spec["completions"],
        plan.units.len(),
        "one completion per unit"
    );
    assert_eq!(
        spec["parallelism"], plan.workers,
        "at most `workers` at once"
    );
    assert!(
        spec["backoffLimitPerIndex"].is_u64() || spec["backoffLimit"].is_u64(),
        "a bounded retry: {spec:#}"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(
        pod["restartPolicy"], "Never",
        "backoffLimitPerIndex needs it"
    );
    let account = kind("ServiceAccount");
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);
    assert!(account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].is_string());
    for secret in ["AWS_SECRET_ACCESS_KEY", "secretKeyRef", "AWS_ACCESS_KEY_ID"] {
        assert!(
            !text.contains(secret),
            "no credentials in the file: {secret}"
        );
    }

    let container = &pod["containers"][0];
    let mount = &container["volumeMounts"][0];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the plan's volume");
    assert_eq!(
        volume["configMap"]["name"],
        kind("ConfigMap")["metadata"]["name"]
    );
    let plan_path = format!("{}/plan.json", mount["mountPath"].as_str().unwrap());
    let args = strings(&container["args"]);
    assert!(
        args.contains(&"$(JOB_COMPLETION_INDEX)".to_owned()),
        "{args:?}"
    );
    for index in 0..plan.units.len() {
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("$(JOB_COMPLETION_INDEX)", &index.to_string()))
            .collect();
        let Command::Migrate(m) = parse(&args).command else {
            panic!("not a migrate: {args:?}");
        };
        assert_eq!(m.plan_file, Some(PathBuf::from(&plan_path)));
        assert_eq!(m.unit_index, Some(index));
        assert_eq!(
            (m.entity.as_str(), m.table.as_str()),
            (&*plan.entity, &*plan.table)
        );
        assert!(unit_at(&plan, index, &PathBuf::from(&plan_path)).is_ok());
    }

    let written = command_lines(&text);
    assert!(written.len() >= 2, "the plan and the check: {written:?}");
    for args in &written {
        parse(args);
    }
    let makes_plan = written
        .iter()
        .find(|a| a.contains(&"--plan".to_owned()))
        .expect("the command that makes the plan");
    let Command::Migrate(m) = parse(makes_plan).command else {
        panic!("not a migrate: {makes_plan:?}");
    };
    assert_eq!(
        (m.segments, m.units, m.workers),
        (
            Some(plan.total_segments),
            Some(plan.units.len() as u32),
            Some(plan.workers)
        ),
        "the command shown makes the plan shown"
    );
    assert_eq!(m.write_units_per_second, Some(plan.write_units_per_second));
}

#[test]
fn the_distributed_map_runs_each_unit_s_command_at_most_workers_at_once() {
    let text = file("step-functions.asl.json");
    let machine: Value = serde_json::from_str(&text).expect("the state machine is JSON");
    let states = machine["States"].as_object().expect("States");
    assert!(states.contains_key(machine["StartAt"].as_str().unwrap()));
    for (name, state) in states {
        if let Some(next) = state["Next"].as_str() {
            assert!(states.contains_key(next), "{name} -> {next}");
        } else {
            assert_eq!(state["End"], true, "{name} ends or goes on");
        }
    }
    let (name, map) = states
        .iter()
        .find(|(_, s)| s["Type"] == "Map")
        .expect("a Map state");
    assert_eq!(machine["StartAt"], name.as_str(), "the units run first");
    let processor = &map["ItemProcessor"];
    assert_eq!(processor["ProcessorConfig"]["Mode"], "DISTRIBUTED");
    assert_eq!(processor["ProcessorConfig"]["ExecutionType"], "STANDARD");
    assert_eq!(map["ItemsPath"], "$.units");
    assert_eq!(
        map["MaxConcurrencyPath"], "$.workers",
        "at most the plan's workers at once"
    );
    assert_eq!(map["ToleratedFailurePercentage"], 0);
    let then = map["Next"].as_str().expect("a check after the units");
    assert_eq!(states[then]["Type"], "Task");

    let (plan, input) = example_plan();
    assert_eq!(at("$.workers", &input), plan.workers);
    // Each unit's child execution: its ECS task's command, from the unit's item.
    let mut unit_commands = Vec::new();
    commands(processor, &mut unit_commands);
    assert_eq!(unit_commands.len(), 1, "{unit_commands:?}");
    for (task_name, task) in processor["States"].as_object().unwrap() {
        assert!(
            task["Resource"].as_str().unwrap().ends_with(".sync"),
            "{task_name} waits for its task"
        );
        assert!(
            !task["Retry"].as_array().unwrap().is_empty(),
            "{task_name} retries: a retried unit resumes from its record"
        );
    }
    let items = at(map["ItemsPath"].as_str().unwrap(), &input);
    for (index, item) in items.as_array().unwrap().iter().enumerate() {
        let args = strings(&evaluate(&unit_commands[0], item));
        let Command::Migrate(m) = parse(&args).command else {
            panic!("not a migrate: {args:?}");
        };
        assert_eq!(m.unit.as_ref(), Some(&plan.units[index]));
        assert_eq!(
            m.write_units_per_second,
            Some(plan.unit_write_units_per_second())
        );
    }
    // The last step: where the units are, from the plan's numbers.
    let mut last = Vec::new();
    commands(&states[then], &mut last);
    assert_eq!(last.len(), 1, "{last:?}");
    let args = strings(&evaluate(&last[0], &input));
    let Command::Remaining(r) = parse(&args).command else {
        panic!("not a remaining: {args:?}");
    };
    let (segments, units) = (r.segments.unwrap(), r.units.unwrap());
    let again = Plan::new(
        &plan.table,
        &plan.entity,
        &plan.layout,
        segments,
        units,
        units,
        1.0,
    )
    .unwrap();
    assert_eq!(again.units, plan.units, "the same units as the plan's");
    assert_eq!(
        (r.entity, r.table),
        (plan.entity.clone(), plan.table.clone())
    );

    let written = command_lines(&text);
    assert!(written.len() >= 2, "the plan and the check: {written:?}");
    for args in &written {
        parse(args);
    }
}

#[test]
fn command_lines_are_found_in_prose_up_to_their_end() {
    let text = "# make it:\n#   ops migrate --entity E --table T --plan > plan.json\n\
                run `ops remaining --entity E --table T`. The ops binary, `ops describe`.";
    let found = command_lines(text);
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(found[0].last().unwrap(), "--plan");
    assert_eq!(found[1], ["remaining", "--entity", "E", "--table", "T"]);
    assert_eq!(found[2], ["describe"]);
}
