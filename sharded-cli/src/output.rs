//! What `describe` prints: an entity's layout as data, and the `CreateTable` input a table
//! needs, in the AWS CLI's `--cli-input-json` form; what the `layouts` subcommands print.

use serde_json::{json, Value};
use sharded::schema::{
    EntitySchema, KeyAttributeSchema, PreviousLayout, Recognition, ScalarType, TableDefinition,
};

/// One entity's keys, GSIs and transition.
pub(crate) fn describe_entity(schema: &EntitySchema) -> Value {
    let transition = schema.pk.previous.map(|previous| match previous {
        PreviousLayout::Shards { n, .. } => format!(
            "from {n} to {} shards: reads cover both layouts until `migrate` finishes",
            schema.pk.sharding.shard_count().unwrap_or(1)
        ),
        PreviousLayout::Legacy { template, .. } => format!(
            "from the unsharded key {}: reads cover both until `migrate` finishes",
            template.source
        ),
        _ => "a transition this command line does not know".to_owned(),
    });
    let table = schema.table_schema;
    let recognition = match table.recognition {
        Recognition::Tag { attribute } => format!("items tagged in `{attribute}`"),
        Recognition::TagOrKey { attribute } => {
            format!("items tagged in `{attribute}`, untagged ones recognised by their keys")
        }
        Recognition::Key => "items recognised by their keys (no tag)".to_owned(),
        _ => "a recognition this command line does not know".to_owned(),
    };
    json!({
        "entity": schema.entity,
        "table": {
            "declared_by": table.declared_by,
            "name": table.table,
            "tag": table.recognition.tag_attribute(),
            "recognition": recognition,
        },
        "pk": {
            "attribute": schema.pk.attribute,
            "template": schema.pk.template.source,
            "shards": schema.pk.sharding.shard_count(),
            "suffix": schema.pk.suffix.source,
            "layout": schema.pk.layout_description(),
        },
        "sk": schema.sk.map(|sk| json!({
            "attribute": sk.attribute,
            "template": sk.template.source,
        })),
        "gsis": schema.gsis.iter().map(|g| json!({
            "index": g.index_name,
            "pk_attribute": g.pk.attribute,
            "pk_layout": g.pk.layout_description(),
            "shards": g.pk.sharding.shard_count(),
            "sk_attribute": g.sk.map(|sk| sk.attribute),
            "sk_template": g.sk.map(|sk| sk.template.source),
            "key_attributes": g.attributes.map(|key| key.describe()),
        })).collect::<Vec<_>>(),
        "transition": transition,
    })
}

/// The `CreateTable` input of `definition` for `table`: on demand, the table's keys strings,
/// each GSI keyed as declared (a string key, or the typed attributes of a multi-attribute
/// key), every GSI projecting all attributes (what `Repo::create_table` sends).
pub(crate) fn create_table_json(definition: &TableDefinition, table: &str) -> Value {
    let base = [(
        KeyAttributeSchema::new(definition.partition_key, ScalarType::S),
        true,
    )]
    .into_iter()
    .chain(
        definition
            .sort_key
            .map(|sk| (KeyAttributeSchema::new(sk, ScalarType::S), false)),
    )
    .collect::<Vec<_>>();
    let mut attributes: Vec<KeyAttributeSchema> = base.iter().map(|(a, _)| *a).collect();
    for index in &definition.indexes {
        attributes.extend(index.key_attributes().map(|(a, _)| a));
    }
    let mut seen = std::collections::BTreeSet::new();
    attributes.retain(|a| seen.insert(a.name));
    let key_schema = |keys: &mut dyn Iterator<Item = (KeyAttributeSchema, bool)>| {
        keys.map(|(a, hash)| {
            json!({ "AttributeName": a.name, "KeyType": if hash { "HASH" } else { "RANGE" } })
        })
        .collect::<Vec<_>>()
    };
    let mut input = json!({
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": attributes
            .iter()
            .map(|a| json!({ "AttributeName": a.name, "AttributeType": a.kind.code() }))
            .collect::<Vec<_>>(),
        "KeySchema": key_schema(&mut base.into_iter()),
    });
    if !definition.indexes.is_empty() {
        input["GlobalSecondaryIndexes"] = definition
            .indexes
            .iter()
            .map(|i| {
                json!({
                    "IndexName": i.name,
                    "KeySchema": key_schema(&mut i.key_attributes()),
                    "Projection": { "ProjectionType": "ALL" },
                })
            })
            .collect();
    }
    input
}

/// Prints what a `layouts` subcommand did, as JSON or for people.
pub(crate) fn print_layout_outcome(
    output: crate::args::Output,
    schema: &EntitySchema,
    target: &crate::args::LayoutTarget,
    key: Option<&str>,
    outcome: &crate::entities::LayoutOutcome,
) {
    use crate::entities::LayoutOutcome;
    let entity = schema.entity;
    let declared_n = schema.pk.sharding.shard_count().unwrap_or(1);
    let max_n = schema.pk.per_key.map(|p| p.max_n);
    let key = key.unwrap_or_default();
    let wait = target.timing().step_wait();
    let json = match outcome {
        LayoutOutcome::Entries(entries) => json!({
            "entity": entity,
            "table": target.table,
            "declared_n": declared_n,
            "max_n": max_n,
            "keys": entries.iter().map(|(key, e)| entry_json(key, e)).collect::<Vec<_>>(),
        }),
        LayoutOutcome::Entry(e) => {
            let mut json = entry_json(key, e);
            json["entity"] = json!(entity);
            json["next"] = json!(next_step(e.phase));
            json["next_in_seconds"] = json!(wait.as_secs_f64());
            json
        }
        LayoutOutcome::Moved(m) => json!({
            "entity": entity, "key": key, "read": m.read, "moved": m.moved,
            "in_place": m.in_place, "not_ours": m.not_ours, "left": m.left,
            "blocked": m.blocked, "write_units": m.write_units,
        }),
        LayoutOutcome::Steady(layout) => json!({
            "entity": entity, "key": key, "n": layout.n, "phase": "steady",
            "listed": layout.n != declared_n,
        }),
    };
    if output == crate::args::Output::Json {
        println!("{json:#}");
        return;
    }
    match outcome {
        LayoutOutcome::Entries(entries) if entries.is_empty() => println!(
            "no key of {entity} has a layout of its own: every key has the declared n = \
             {declared_n}"
        ),
        LayoutOutcome::Entries(entries) => {
            println!(
                "{:<32} {:>5} {:>5} {:<8} SINCE",
                "KEY", "FROM", "TO", "PHASE"
            );
            for (key, e) in entries {
                println!(
                    "{key:<32} {:>5} {:>5} {:<8} {}",
                    e.from,
                    e.to,
                    e.phase.name(),
                    age(e.since)
                );
            }
        }
        LayoutOutcome::Entry(e) => println!(
            "`{key}` of {entity} is {}, from {} to {} shards; next: `layouts {}` in {wait:?} \
             (lease + margin)",
            e.phase.name(),
            e.from,
            e.to,
            next_step(e.phase)
        ),
        LayoutOutcome::Moved(m) => {
            println!(
                "`{key}` of {entity}: {} item(s) read at the previous count, {} moved, {} in \
                 place, {} left, {} blocked, {:.1} write units",
                m.read, m.moved, m.in_place, m.left, m.blocked, m.write_units
            );
            if m.left > 0 {
                println!("items changed while they moved or were throttled: run it again");
            }
        }
        LayoutOutcome::Steady(layout) => {
            println!("`{key}` of {entity} is steady at {} shards", layout.n)
        }
    }
}

fn entry_json(key: &str, e: &sharded::layouts::KeyEntry) -> Value {
    json!({
        "key": key,
        "from": e.from,
        "to": e.to,
        "phase": e.phase.name(),
        "since": e.since.as_secs_f64(),
    })
}

/// The step that follows `phase`.
fn next_step(phase: sharded::layouts::Phase) -> &'static str {
    use sharded::layouts::Phase;
    match phase {
        Phase::Reading => "advance",
        Phase::Writing => "migrate",
        Phase::Steady => "begin",
    }
}

/// How long ago `since` (a wall-clock time, as the directory stores it) was.
fn age(since: std::time::Duration) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    match now.checked_sub(since) {
        Some(ago) => format!("{}s ago", ago.as_secs()),
        None => "just now".to_owned(),
    }
}
