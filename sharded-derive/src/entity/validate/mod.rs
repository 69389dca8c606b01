//! Checks on the finished model (serde_derive's `check.rs`): fields exist, shard counts make
//! sense, key types encode, and no key is left hot. Every error goes under the user's token.
//! This module runs the checks in order and checks the container; `keys` checks the keys and
//! indexes, `fields` the fields, their roles and the counters.

use std::collections::HashSet;

use crate::entity::model::{Entity, TableRef};
use crate::internals::ctxt::Ctxt;
use crate::internals::dynamodb::check_name;

mod fields;
mod keys;

use fields::{attribute_clashes, counters, field_roles, key_field_types, template_fields};
pub(crate) use fields::{is_counter_name, serde_fix};
use keys::{
    attribute_gsi, base_key_not_hot, gsi_not_hot, partition_key, per_key, random_needs_item_key,
    suffix_needs_shards, time_buckets, transition,
};

pub fn entity(cx: &Ctxt, entity: &Entity) {
    container(cx, entity);
    let Some(pk) = &entity.pk else { return };
    partition_key(cx, entity, pk, "pk");
    suffix_needs_shards(cx, pk);
    for gsi in &entity.gsis {
        suffix_needs_shards(cx, &gsi.pk);
    }
    base_key_not_hot(cx, pk);
    random_needs_item_key(cx, entity, pk);
    transition(cx, entity, pk);
    per_key(cx, pk);
    if let Some(sk) = &entity.sk {
        template_fields(cx, entity, &sk.template);
    }
    for gsi in &entity.gsis {
        let name = format!("gsi{}", gsi.number);
        partition_key(cx, entity, &gsi.pk, &name);
        if let Some(sk) = &gsi.sk {
            template_fields(cx, entity, &sk.template);
        }
        gsi_not_hot(cx, pk, &gsi.pk, &name);
        if let Some(index) = &gsi.index_name {
            check_name(cx, &index.value(), index.span(), "index name");
        }
    }
    for gsi in &entity.attribute_gsis {
        attribute_gsi(cx, entity, gsi);
    }
    time_buckets(cx, entity);
    key_field_types(cx, entity);
    field_roles(cx, entity);
    counters(cx, entity);
    attribute_clashes(cx, entity);
    query_names(cx, entity);
    crate::entity::names::check(cx, entity);
}

fn container(cx: &Ctxt, entity: &Entity) {
    if let Some(TableRef::Name(table)) = &entity.container.table {
        check_name(cx, &table.value(), table.span(), "table name");
    }
}

fn query_names(cx: &Ctxt, entity: &Entity) {
    let mut seen: HashSet<String> = HashSet::new();
    let keys = entity.pk.iter().chain(entity.gsis.iter().map(|g| &g.pk));
    let queries = keys
        .filter_map(|key| key.query.as_ref())
        .chain(entity.attribute_gsis.iter().map(|g| &g.query));
    for query in queries {
        if !seen.insert(query.to_string()) {
            cx.error_spanned_by(
                query,
                format!("two keys generate a query named `{query}`: give them different names"),
            );
        }
    }
}
