//! A field named like a key attribute is fine once serde stores it under another name, and
//! `rename_all` is followed: `sk` becomes `SK`, which no key attribute is called.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "ORDER#{order_id}")]
#[sk(template = "LINE#{line}")]
struct OrderLine {
    order_id: String,
    line: u32,
    #[serde(rename = "pk_value")]
    pk: String,
}

#[derive(ShardedEntity, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
#[pk(template = "LEGACY#{id}")]
#[sk(template = "V#{version}")]
struct Legacy {
    id: String,
    version: u32,
    sk: String,
}

fn main() {
    let line = OrderLine {
        order_id: "o1".into(),
        line: 3,
        pk: "imported".into(),
    };
    let item = line.to_item().unwrap();
    assert_eq!(item["pk"].as_s().unwrap(), "ORDER#o1");
    assert_eq!(item["pk_value"].as_s().unwrap(), "imported");
    let legacy = Legacy {
        id: "a".into(),
        version: 1,
        sk: "old".into(),
    };
    let item = legacy.to_item().unwrap();
    assert_eq!(item["SK"].as_s().unwrap(), "old");
}

/// `flatten` and `skip` fields write no attribute of their own name.
#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "NOTE#{note_id}")]
#[sk(template = "V#{version}")]
struct Note {
    note_id: String,
    version: u32,
    #[serde(flatten)]
    sk: Extra,
    #[serde(skip)]
    pk: String,
}

#[derive(Serialize, Deserialize)]
struct Extra {
    text: String,
}
