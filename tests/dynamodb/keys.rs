//! The key model against a real table: the table definition, items written with the raw SDK
//! through the generated conversion, one shard queried by hand.

use aws_sdk_dynamodb::types::AttributeValue;
use sharded::schema::CreateTable;
use sharded::ShardedEntity;
use sharded_testkit::local::unique_table_name;

use crate::entities::{score, Score};
use crate::support::client;

#[tokio::test]
async fn table_from_definition_has_keys_and_gsis() {
    let client = client().await;
    let table = unique_table_name("keys-def");
    Score::table_definition()
        .create_table(&client, &table)
        .send()
        .await
        .unwrap();
    let described = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let t = described.table.unwrap();
    let key: Vec<(String, String)> = t
        .key_schema()
        .iter()
        .map(|k| {
            (
                k.attribute_name().to_owned(),
                k.key_type().as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        key,
        [("pk".into(), "HASH".into()), ("sk".into(), "RANGE".into())]
    );
    let gsis = t.global_secondary_indexes();
    assert_eq!(gsis.len(), 1);
    assert_eq!(gsis[0].index_name(), Some("gsi1"));
    let gsi_keys: Vec<&str> = gsis[0]
        .key_schema()
        .iter()
        .map(|k| k.attribute_name())
        .collect();
    assert_eq!(gsi_keys, ["gsi1pk", "gsi1sk"]);
}

#[tokio::test]
async fn raw_sdk_roundtrip_and_one_shard_query() {
    let client = client().await;
    let table = unique_table_name("keys-raw");
    Score::table_definition()
        .create_table(&client, &table)
        .send()
        .await
        .unwrap();

    let scores: Vec<Score> = (0..200)
        .map(|i| score("g1", &format!("player-{i}"), i * 3))
        .collect();
    for s in &scores {
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(s.to_item().unwrap()))
            .send()
            .await
            .unwrap();
    }

    // Read one back by its generated key.
    let wanted = &scores[17];
    let got = client
        .get_item()
        .table_name(&table)
        .key(
            "pk",
            AttributeValue::S(Score::pk(&wanted.game_id, &wanted.player_id).unwrap()),
        )
        .key(
            "sk",
            AttributeValue::S(Score::sk(wanted.score, &wanted.player_id).unwrap()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(Score::from_item(got.item.unwrap()).unwrap(), *wanted);

    // Query one shard by hand: exactly the items whose player hashes there, sorted by score.
    let shard = Score::shard_for("player-5").unwrap();
    let out = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            AttributeValue::S(Score::pk_on_shard("g1", shard).unwrap()),
        )
        .send()
        .await
        .unwrap();
    let found: Vec<Score> = out
        .items()
        .iter()
        .cloned()
        .map(|i| Score::from_item(i).unwrap())
        .collect();
    let mut expected: Vec<Score> = scores
        .iter()
        .filter(|s| Score::shard_for(&s.player_id).unwrap() == shard)
        .cloned()
        .collect();
    expected.sort_by_key(|s| s.score);
    assert!(!expected.is_empty());
    assert_eq!(found, expected);

    // Every shard got some of the 200 players.
    for shard in 0..10 {
        let n = client
            .query()
            .table_name(&table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(
                ":pk",
                AttributeValue::S(Score::pk_on_shard("g1", shard).unwrap()),
            )
            .select(aws_sdk_dynamodb::types::Select::Count)
            .send()
            .await
            .unwrap()
            .count();
        assert!(n > 0, "shard {shard} is empty");
    }
}
