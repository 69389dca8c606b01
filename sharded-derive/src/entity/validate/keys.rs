//! Checks on the keys: the fields they name exist, shard counts and expressions make sense,
//! no key is left hot (the hot partition, the GSI hotspot), time buckets are where a range
//! query can use them, a layout transition declares something to change, and index names
//! are names DynamoDB accepts.

use std::collections::HashSet;

use syn::{Ident, LitStr};

use super::fields::{template_fields, unknown_field};
use crate::entity::model::{Entity, PartitionKey, Previous, Segment, Shard, Template};
use crate::internals::ctxt::Ctxt;
use crate::internals::dynamodb::check_name;

/// `suffix = ".."` spells a shard: only a sharded key has one. (Whether the spelling can be
/// parsed back is the runtime's rule, checked at compile time in the expansion.)
pub(super) fn suffix_needs_shards(cx: &Ctxt, pk: &PartitionKey) {
    if let Some(suffix) = &pk.suffix {
        if matches!(pk.shard.value, Shard::None) {
            cx.error_spanned_by(
                suffix,
                "`suffix` spells the shard after the logical key, and this key is not sharded: \
                 add `shard = .., n = ..`, or remove `suffix`",
            );
        }
    }
}

/// `shard = "random"` places an item by the hash of its own key (logical key and sort key):
/// without a sort key field, every item of a logical key is the same item, on one shard.
pub(super) fn random_needs_item_key(cx: &Ctxt, entity: &Entity, pk: &PartitionKey) {
    if !matches!(pk.shard.value, Shard::Random) {
        return;
    }
    // A time-bucketed key without a sort key is reported by `time_buckets`, whose fix (a sort
    // key starting with the time, then an id) is this one too: one mistake, one error.
    if entity.sk.is_none() && pk.template.bucket().is_some() {
        return;
    }
    let has_fields = entity
        .sk
        .as_ref()
        .is_some_and(|sk| sk.template.fields().next().is_some());
    if !has_fields {
        cx.error_at(
            pk.shard.span,
            "`shard = \"random\"` spreads a logical key's items by each item's own key, and this \
             entity's sort key has no field (or there is none), so a logical key holds one item, \
             on one shard: add a sort key with a field that tells items apart (e.g. \
             `#[sk(template = \"{at}#{id}\")]`), or, for the vote-counter pattern, use \
             `#[counter(name = \"votes\", n = 10)]` or a `ShardedCounter`",
        );
    }
}

/// `previous_n` and `legacy`: a transition needs something to change, and a legacy key must
/// be buildable from the logical key a query is given.
pub(super) fn transition(cx: &Ctxt, entity: &Entity, pk: &PartitionKey) {
    match &pk.previous {
        None => {}
        Some(Previous::Shards {
            n: old,
            suffix,
            unknown_placement,
        }) => {
            let current = pk.n.as_ref().map(|n| n.value);
            // The same count changes something only with another spelling or placement.
            let respelled = suffix.as_ref().map(LitStr::value)
                != Some(
                    pk.suffix
                        .as_ref()
                        .map_or_else(|| "#{shard}".to_owned(), LitStr::value),
                )
                && suffix.is_some();
            if matches!(pk.shard.value, Shard::None) {
                cx.error_at(
                    old.span,
                    "`previous_n` declares a change of shard count, and this key is not sharded: \
                     to adopt sharding on a table with unsharded items, add `shard = ..`, `n = ..` \
                     and `legacy = \"<the old template>\"` instead",
                );
            } else if current == Some(old.value) && !respelled && !unknown_placement {
                cx.error_at(
                    old.span,
                    format!(
                        "`previous_n = {}` is the current `n`, with the same spelling and \
                         placement: nothing changes; remove `previous_n` (or set `n` to the new \
                         shard count, `previous_suffix` to the old spelling, or \
                         `previous_shard = \"unknown\"` for items placed another way)",
                        old.value
                    ),
                );
            } else if old.value == 0 {
                cx.error_at(
                    old.span,
                    "`previous_n` must be the shard count the key had before: at least 1",
                );
            }
        }
        Some(Previous::Legacy(legacy)) => {
            let bucketed = pk
                .template
                .segments
                .iter()
                .chain(&legacy.segments)
                .any(|s| matches!(s, Segment::Bucket(..)));
            if bucketed {
                cx.error_spanned_by(
                    &legacy.lit,
                    "a time-bucketed key cannot declare a `legacy` key yet: range queries walk \
                     the buckets of the current template only; move the legacy items with a \
                     one-off job (read them, `put` them through this entity), then drop `legacy`",
                );
                return;
            }
            let current: HashSet<String> = pk.template.fields().map(Ident::to_string).collect();
            for field in legacy.fields() {
                if entity.field(field).is_none() {
                    unknown_field(
                        cx,
                        entity,
                        field,
                        &format!("legacy template \"{}\"", legacy.lit.value()),
                    );
                } else if !current.contains(&field.to_string()) {
                    cx.error_spanned_by(
                        &legacy.lit,
                        format!(
                            "the legacy template names `{field}`, which is not in the current \
                             template \"{}\": a query is given the current template's fields, so the \
                             legacy key must be built from them alone",
                            pk.template.lit.value()
                        ),
                    );
                }
            }
            if matches!(pk.shard.value, Shard::None)
                && legacy.lit.value() == pk.template.lit.value()
            {
                cx.error_spanned_by(
                    &legacy.lit,
                    "the legacy template is the current one and the key is not sharded: nothing \
                     changes; shard the key (`shard = .., n = ..`) or remove `legacy`",
                );
            }
        }
    }
}

/// `max_n`: a layout decided per logical key. Its shard expression must place an item under
/// any count up to the maximum (a hash of fields, or the item's identity), the maximum must
/// widen something, and the key's layout changes key by key online, so it declares no
/// transition of the whole key as well. (The maximum's upper bound is the runtime's fact,
/// checked in the expansion.)
pub(super) fn per_key(cx: &Ctxt, pk: &PartitionKey) {
    let Some(max_n) = &pk.max_n else { return };
    match &pk.shard.value {
        Shard::Hash(_) | Shard::Random => {}
        // Reported where the shard expression was read.
        Shard::Invalid { .. } => {}
        Shard::None | Shard::Identity => cx.error_at(
            max_n.span,
            format!(
                "`max_n = {}` widens a hot key by spreading its items over more shards, and this \
                 key has no shard expression that places an item under any count: add \
                 `shard = \"hash(field)\"` (a field that varies within the key) or \
                 `shard = \"random\"`, with `n = 1`, or remove `max_n`",
                max_n.value
            ),
        ),
    }
    if let Some(previous) = &pk.previous {
        let declared = match previous {
            Previous::Shards { .. } => "previous_n",
            Previous::Legacy(_) => "legacy",
        };
        cx.error_at(
            max_n.span,
            format!(
                "`max_n` and `{declared}` on one key: a per-key layout changes online, key by \
                 key; declare one or the other: finish the `{declared}` migration and remove it, \
                 then add `max_n`"
            ),
        );
    }
    match &pk.n {
        // `n = 0` is reported by `partition_key`.
        Some(n) if n.value >= 1 && max_n.value <= n.value => cx.error_at(
            max_n.span,
            format!(
                "`max_n = {}` must be above `n = {}`: `n` is the shard count every key has until \
                 it is widened, `max_n` the most one key may be widened to; raise `max_n` (or \
                 lower `n`, e.g. `n = 1`), or remove `max_n` for one shard count for all keys",
                max_n.value, n.value
            ),
        ),
        _ if max_n.value < 2 => cx.error_at(
            max_n.span,
            format!(
                "`max_n = {}` widens no key: it is the most shards one logical key may be \
                 widened to, at least 2 and above `n`, e.g. `n = 1, max_n = 64`",
                max_n.value
            ),
        ),
        _ => {}
    }
}

pub(super) fn partition_key(cx: &Ctxt, entity: &Entity, key: &PartitionKey, name: &str) {
    template_fields(cx, entity, &key.template);
    match &key.shard.value {
        Shard::Hash(fields) => {
            for field in fields {
                if entity.field(field).is_none() {
                    unknown_field(cx, entity, field, "shard expression");
                }
            }
            let template: HashSet<String> = key.template.fields().map(Ident::to_string).collect();
            let bucketed = key.template.bucket().map(|(f, _)| f.to_string());
            let only_template = !fields.is_empty()
                && fields.iter().all(|f| template.contains(&f.to_string()));
            if only_template && fields.iter().any(|f| Some(f.to_string()) == bucketed) {
                let at = bucketed.unwrap_or_default();
                cx.error_at(
                    key.shard.span,
                    format!(
                        "`hash(...)` names only fields of the template and the bucketed time `{at}`: \
                         writes made at the same moment carry the same `{at}` and land on the same \
                         shard, so the hot shard moves with the clock instead of the writes being \
                         spread: hash a field that differs between items written together (an id), \
                         or use `shard = \"random\"`"
                    ),
                );
            } else if only_template {
                cx.error_at(
                    key.shard.span,
                    "`hash(...)` names only fields of the template, so every item of one logical key \
                     lands on the same shard and sharding spreads nothing: hash a field that varies \
                     within the key (for a leaderboard, the player id), or use `shard = \"random\"`",
                );
            }
        }
        Shard::Random if name != "pk" => cx.error_at(
            key.shard.span,
            format!(
                "#[{name}] cannot use `shard = \"random\"`: a GSI key is rewritten on every put, and a \
                 random shard would move the item between GSI shards; use `shard = N` (stable hash of \
                 the item's primary key) or `shard = \"hash(field)\", n = N`"
            ),
        ),
        _ => {}
    }
    if matches!(key.shard.value, Shard::Invalid { .. }) {
        return;
    }
    let needs_n = !matches!(key.shard.value, Shard::None);
    match (&key.n, needs_n) {
        (None, true) => cx.error_at(
            key.shard.span,
            format!(
                "#[{name}] is sharded but has no shard count: add `n = 10` (peak writes/s per logical \
                 key / 1,000, with headroom)"
            ),
        ),
        (Some(n), false) => cx.error_at(
            n.span,
            format!("`n` without `shard`: add `shard = \"hash(field)\"` or `shard = \"random\"` to #[{name}], or remove `n`"),
        ),
        // The maximum is the runtime's fact, checked in the expansion (`runtime_fact_checks`).
        (Some(n), true) if n.value == 0 => cx.error_at(
            n.span,
            format!("#[{name}] has 0 shards: use at least 1"),
        ),
        _ => {}
    }
    if let Some(reason) = &key.single_partition {
        if reason.value().trim().is_empty() {
            cx.error_spanned_by(
                reason,
                "`single_partition` needs the reason this key stays under 1,000 writes/s, e.g. \
                 single_partition = \"brand registrations: < 100/day\"",
            );
        }
        let constant_unsharded =
            key.template.whole_fields().next().is_none() && matches!(key.shard.value, Shard::None);
        if !matches!(key.shard.value, Shard::None | Shard::Invalid { .. }) {
            cx.error_spanned_by(
                reason,
                format!(
                    "`single_partition` opts an unsharded key in, but #[{name}] is sharded: remove \
                     `single_partition`, or remove `shard` if the key truly stays under 1,000 writes/s"
                ),
            );
        } else if !constant_unsharded && name == "pk" {
            cx.error_spanned_by(
                reason,
                "`single_partition` is only for a constant, unsharded partition key, and this one is not: remove it",
            );
        }
    }
}

/// The hot partition: a constant, unsharded key puts every write on one partition. A key
/// whose only field is a time bucket is constant at any moment: every write of today lands in
/// today's bucket.
pub(super) fn base_key_not_hot(cx: &Ctxt, pk: &PartitionKey) {
    let constant = pk.template.whole_fields().next().is_none();
    let unsharded = matches!(pk.shard.value, Shard::None) && pk.single_partition.is_none();
    if let (true, true, Some((at, granularity))) = (constant, unsharded, pk.template.bucket()) {
        let name = granularity.name();
        cx.error_spanned_by(
            &pk.template.lit,
            format!(
                "partition key \"{}\" has no field but the time bucket `{{{at}:{name}}}` and no shard: \
                 every write of this {name} lands on the same partition, capped at 1,000 writes/s; \
                 a bucket moves the hot partition along with the clock, it does not spread it. Add \
                 `shard = \"random\", n = 4`, or, if this key truly stays small, opt in with \
                 `single_partition = \"why it stays under 1,000 writes/s\"`",
                pk.template.lit.value()
            ),
        );
        return;
    }
    if constant && matches!(pk.shard.value, Shard::None) && pk.single_partition.is_none() {
        cx.error_spanned_by(
            &pk.template.lit,
            format!(
                "partition key \"{}\" has no field and no shard: every item lands on one partition, \
                 capped at 1,000 writes/s whatever the table's capacity. Add a field to the template, \
                 or `shard = \"random\", n = 10`, or, if this key truly stays small, opt in with \
                 `single_partition = \"why it stays under 1,000 writes/s\"`",
                pk.template.lit.value()
            ),
        );
    }
}

/// The GSI hotspot: the base key is sharded, but a GSI key concentrates the same writes.
pub(super) fn gsi_not_hot(cx: &Ctxt, base: &PartitionKey, gsi: &PartitionKey, name: &str) {
    if !matches!(gsi.shard.value, Shard::None) || gsi.single_partition.is_some() {
        return;
    }
    // A time bucket is the same for every write made at one moment: it spreads nothing.
    let gsi_fields: Vec<String> = gsi.template.whole_fields().map(Ident::to_string).collect();
    let base_fields: HashSet<String> = base.template.fields().map(Ident::to_string).collect();
    let base_sharded = !matches!(base.shard.value, Shard::None);
    let opt_in = format!(
        "add `shard = 4` (or `shard = \"hash(field)\", n = 4`) to #[{name}(...)], or opt in with \
         `single_partition = \"why it stays under 1,000 writes/s\"`"
    );
    if gsi_fields.is_empty() {
        let what = match gsi.template.bucket() {
            Some((at, g)) => format!(
                "has no field but the time bucket `{{{at}:{}}}`, the same for every write made at one moment",
                g.name()
            ),
            None => "is a constant".to_owned(),
        };
        cx.error_spanned_by(
            &gsi.template.lit,
            format!(
                "#[{name}] partition key \"{}\" {what}: every put writes one GSI partition, capped at \
                 1,000 writes/s{}; {opt_in}",
                gsi.template.lit.value(),
                if base_sharded { ", which undoes the base key's sharding" } else { "" },
            ),
        );
    } else if base_sharded && gsi_fields.iter().all(|f| base_fields.contains(f)) {
        cx.error_spanned_by(
            &gsi.template.lit,
            format!(
                "#[{name}] partition key \"{}\" is unsharded but uses only fields of the sharded base key \
                 \"{}\": the writes the base key spreads over {} shards all land on one GSI partition (the \
                 GSI hotspot); {opt_in}",
                gsi.template.lit.value(),
                base.template.lit.value(),
                base.n.as_ref().map_or(0, |n| n.value),
            ),
        );
    }
}

/// Time buckets (`{at:day}`): only in partition keys, and a bucketed key's sort key starts
/// with the bucketed field, so the items of a bucket are ordered by that time and a range
/// query can cut the edge buckets at the exact time with one key condition.
pub(super) fn time_buckets(cx: &Ctxt, entity: &Entity) {
    let sort_keys = entity.sk.iter().map(|sk| ("#[sk]", &sk.template)).chain(
        entity
            .gsis
            .iter()
            .filter_map(|g| g.sk.as_ref().map(|sk| ("a GSI's `sk`", &sk.template))),
    );
    for (what, template) in sort_keys {
        if let Some((at, granularity)) = template.bucket() {
            cx.error_spanned_by(
                &template.lit,
                format!(
                    "`{{{at}:{}}}` in {what} template \"{}\": time buckets belong in partition keys \
                     (they spread a time-ordered stream over partitions); a sort key holds the \
                     time whole, `{{{at}}}`, so items sort by it: write `{{{at}}}` here and \
                     `{{{at}:{}}}` in the partition key",
                    granularity.name(),
                    template.lit.value(),
                    granularity.name(),
                ),
            );
        }
    }
    let keys = entity
        .pk
        .iter()
        .map(|pk| (pk, entity.sk.as_ref(), "#[sk(template = ".to_owned()))
        .chain(
            entity
                .gsis
                .iter()
                .map(|g| (&g.pk, g.sk.as_ref(), format!("#[gsi{}(.., sk = ", g.number))),
        );
    for (pk, sk, attribute) in keys {
        let Some((at, granularity)) = pk.template.bucket() else {
            continue;
        };
        let first = sk.and_then(|sk| {
            sk.template
                .segments
                .iter()
                .find(|s| !matches!(s, Segment::Literal(_)))
        });
        // A bucket in the sort key is reported above.
        if matches!(first, Some(Segment::Field(f) | Segment::Bucket(f, _)) if f == at) {
            continue;
        }
        let suggestion = match sk {
            Some(sk) => sort_key_starting_with(&sk.template, at),
            None => format!("{{{at}}}#{{id}}"),
        };
        let problem = match sk {
            Some(sk) => format!(
                "the sort key \"{}\" does not start with `{{{at}}}`",
                sk.template.lit.value()
            ),
            None => "it has no sort key".to_owned(),
        };
        let message = format!(
            "partition key \"{}\" buckets `{at}` by {}, and {problem}: the first field of the \
             sort key must be `{at}`, so the items inside a bucket are ordered by the same time \
             and a range query cuts the first and last bucket at the exact time; write e.g. \
             `{attribute}\"{suggestion}\")]`",
            pk.template.lit.value(),
            granularity.name(),
        );
        match sk {
            Some(sk) => cx.error_spanned_by(&sk.template.lit, message),
            None => cx.error_spanned_by(&pk.template.lit, message),
        }
    }
}

/// `template` rewritten to start with `{at}` after its leading literal, for messages:
/// `LOG#{id}` -> `LOG#{at}#{id}`, `{id}#{at}` -> `{at}#{id}`.
fn sort_key_starting_with(template: &Template, at: &Ident) -> String {
    let text = template.lit.value();
    let lead = match template.segments.first() {
        Some(Segment::Literal(l)) if template.segments.len() > 1 => l.clone(),
        _ => String::new(),
    };
    let rest = &text[lead.len().min(text.len())..];
    let parts: Vec<&str> = rest
        .split('#')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let inner = p.trim_start_matches('{').trim_end_matches('}');
            inner.split(':').next().map(str::trim) != Some(&at.to_string())
        })
        .collect();
    let mut out = lead;
    if !out.is_empty() && !out.ends_with('#') {
        out.push('#');
    }
    out.push_str(&format!("{{{at}}}"));
    if !parts.is_empty() {
        out.push('#');
        out.push_str(&parts.join("#"));
    }
    out
}

/// `#[gsiN(pk = [..], sk = [..], shard = n)]`: what DynamoDB refuses in a multi-attribute
/// key that the derive can see (a list's length is checked against the runtime's maximum in
/// the expansion), fields that exist and are stored as their own attribute, each once.
pub(super) fn attribute_gsi(cx: &Ctxt, entity: &Entity, gsi: &crate::entity::model::AttributeGsi) {
    let name = format!("gsi{}", gsi.number);
    if gsi.pk.value.is_empty() {
        cx.error_at(
            gsi.pk.span,
            format!("#[{name}] has no partition field: name at least one, e.g. `pk = [game_id]`"),
        );
    }
    let mut seen: Vec<&Ident> = Vec::new();
    for (list, ident) in gsi
        .pk
        .value
        .iter()
        .map(|i| ("pk", i))
        .chain(gsi.sk.value.iter().map(|i| ("sk", i)))
    {
        if seen.contains(&ident) {
            cx.error_spanned_by(
                ident,
                format!("`{ident}` is named twice in #[{name}]: each key attribute appears once, in `pk` or in `sk`"),
            );
            continue;
        }
        seen.push(ident);
        let Some(field) = entity.field(ident) else {
            unknown_field(cx, entity, ident, &format!("#[{name}({list} = [..])]"));
            continue;
        };
        if !field.serde_attribute || field.serde_flatten {
            cx.error_spanned_by(
                ident,
                format!("`{ident}` is not stored as an attribute of its own (#[serde(skip)] or flatten), so it cannot be an index key attribute: drop it from #[{name}] or store it"),
            );
        } else if field.serde_with {
            cx.error_spanned_by(
                ident,
                format!("`{ident}` is stored by #[serde(with = ..)] its own way, so its key type cannot be checked: an index key attribute is a `String` or integer field serde writes itself"),
            );
        }
    }
    if let Some(n) = gsi.n.as_ref().filter(|n| n.value == 0) {
        cx.error_at(n.span, format!("#[{name}] has 0 shards: use at least 1"));
    }
    let shard = &gsi.shard_attribute;
    if shard.value.is_empty() {
        cx.error_at(
            shard.span,
            "the shard attribute needs a name, e.g. `shard_attribute = \"gsi2_shard\"`",
        );
    }
    if let Some(index) = &gsi.index_name {
        check_name(cx, &index.value(), index.span(), "index name");
    }
}
