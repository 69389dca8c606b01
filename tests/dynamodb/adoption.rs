//! Adopting a table that other services wrote and keep writing: its attribute names, its
//! shard spelling, untagged items, hand-made counters, and records that are not the
//! entity's. Every item here that `sharded` did not write is written raw, as a TypeScript or
//! Python service would write it (`PutItem`/`UpdateItem` with hand-built keys), and checked
//! afterwards byte for byte where it must stay untouched.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};
use sharded::keys::ShardSuffix;
use sharded::migrate::{Migrate, MigrateError};
use sharded::query::ForeignReason;
use sharded::schema::CreateTable;
use sharded::schema::TableDefinition;
use sharded::{Error, Repo, ShardedCounter, ShardedEntity, ShardedTable};
use sharded_testkit::backend::unique_table_name;

use crate::support::{client, raw_get, raw_put, raw_scan, repo};

type Item = HashMap<String, AttributeValue>;

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn item(pairs: &[(&str, AttributeValue)]) -> Item {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

// ---- 1. The table's own names ---------------------------------------------------------

/// The most common single-table convention: `PK`/`SK`, `GSI1PK`/`GSI1SK` on `GSI1`, and a
/// tag named as another library names it.
#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", tag = "__edb_e__")]
#[gsi1(index = "GSI1", pk = "GSI1PK", sk = "GSI1SK")]
struct Conventional;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(table = Conventional, entity = "score")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
#[sk(template = "SCORE#{score}#{player_id}")]
#[gsi1(pk = "PLAYER#{player_id}", sk = "GAME#{game_id}", shard = 2)]
struct NamedScore {
    game_id: String,
    player_id: String,
    score: u64,
}

#[tokio::test]
async fn an_entity_lives_in_a_table_keyed_pk_sk_with_its_own_index_and_tag_names() {
    let repo: Repo<NamedScore> = repo("adopt_names").await;
    let described = client()
        .await
        .describe_table()
        .table_name(repo.table())
        .send()
        .await
        .unwrap();
    let table = described.table.unwrap();
    let keys: Vec<&str> = table
        .key_schema()
        .iter()
        .map(|k| k.attribute_name())
        .collect();
    assert_eq!(keys, ["PK", "SK"]);
    let index = &table.global_secondary_indexes()[0];
    assert_eq!(index.index_name(), Some("GSI1"));
    let index_keys: Vec<&str> = index
        .key_schema()
        .iter()
        .map(|k| k.attribute_name())
        .collect();
    assert_eq!(index_keys, ["GSI1PK", "GSI1SK"]);

    let scores: Vec<NamedScore> = (0..20)
        .map(|i| NamedScore {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            score: i * 3,
        })
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let stored = raw_get(
        repo.client(),
        repo.table(),
        item(&[
            ("PK", s(&NamedScore::pk("g1", "p7").unwrap())),
            ("SK", s(&NamedScore::sk(21, "p7").unwrap())),
        ]),
    )
    .await
    .expect("stored under PK/SK");
    assert_eq!(stored["__edb_e__"], s("score"));
    assert!(stored.contains_key("GSI1PK") && stored.contains_key("GSI1SK"));
    for absent in ["pk", "sk", "_entity", "gsi1pk", "gsi1sk"] {
        assert!(!stored.contains_key(absent), "{absent} written: {stored:?}");
    }
    let top: Vec<u64> = NamedScore::query(&repo, "g1")
        .descending()
        .limit(5)
        .collect()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.score)
        .collect();
    assert_eq!(top, [57, 54, 51, 48, 45]);
    assert_eq!(
        NamedScore::get(&repo, "g1", "p7", 21).await.unwrap(),
        Some(scores[7].clone())
    );
    let games = NamedScore::query_gsi1(&repo, "p7").collect().await.unwrap();
    assert_eq!(games, [scores[7].clone()]);
    assert_eq!(NamedScore::query(&repo, "g1").count().await.unwrap(), 20);
}

// ---- 2. Items other services write --------------------------------------------------

/// The leaderboard as keys.md describes it, in three tables that recognise items three ways.
macro_rules! leaderboard {
    ($name:ident, $table:ty) => {
        #[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
        #[sharded(table = $table, entity = "Score")]
        #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
        #[sk(template = "SCORE#{score}#{player_id}")]
        struct $name {
            game_id: String,
            player_id: String,
            score: u64,
        }
    };
}

#[derive(ShardedTable)]
#[table(recognize = "tag_or_key")]
struct TagOrKey;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", recognize = "key")]
struct KeysOnly;

leaderboard!(StrictScore, sharded::schema::DefaultTable);
leaderboard!(LenientScore, TagOrKey);
leaderboard!(KeyScore, KeysOnly);

/// Items another service writes exactly as the key spec says, without the tag: every key
/// byte right, and (every other one) without the key fields as attributes.
async fn write_untagged<E: ShardedEntity>(client: &Client, table: &str, count: u64) {
    let schema = E::SCHEMA;
    for i in 0..count {
        let player = format!("player-{i}");
        let pk = format!(
            "GAME#g1#{}",
            sharded::hash::shard_of_bytes(player.as_bytes(), 4)
        );
        let sk = format!("SCORE#{:020}#{player}", i * 10);
        let mut item = item(&[
            (schema.pk.attribute, s(&pk)),
            (schema.sk.unwrap().attribute, s(&sk)),
        ]);
        if i % 2 == 0 {
            item.insert("game_id".into(), s("g1"));
            item.insert("player_id".into(), s(&player));
            item.insert("score".into(), n(i * 10));
        }
        raw_put(client, table, item).await;
    }
}

#[tokio::test]
async fn untagged_items_are_counted_as_foreign_where_items_carry_the_tag() {
    let repo: Repo<StrictScore> = repo("adopt_strict").await;
    write_untagged::<StrictScore>(repo.client(), repo.table(), 30).await;
    let answer = StrictScore::query(&repo, "g1")
        .descending()
        .limit(100)
        .collect_answer()
        .await
        .unwrap();
    assert!(answer.items.is_empty(), "{:?}", answer.items);
    assert_eq!(answer.foreign.count, 30, "none dropped without trace");
    assert!(answer.foreign.examples.iter().all(|f| matches!(
        f.reason,
        ForeignReason::Untagged {
            attribute: "_entity",
            ..
        }
    )));
    // A point read at such a key does not say "no item": it names what is there.
    match StrictScore::get(&repo, "g1", "player-2", 20).await {
        Err(Error::ForeignItem { reason, .. }) => {
            assert!(reason.to_string().contains("tag_or_key"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    // A write through the repository refuses to overwrite it.
    let ours = StrictScore {
        game_id: "g1".into(),
        player_id: "player-2".into(),
        score: 20,
    };
    assert!(matches!(
        repo.put(&ours).await,
        Err(Error::KeyTakenByOtherEntity { .. })
    ));
    let page = StrictScore::query(&repo, "g1").page(7, None).await.unwrap();
    assert!(page.items.is_empty() && page.foreign.count > 0);
}

#[tokio::test]
async fn untagged_items_of_the_entitys_shape_are_read_where_the_table_says_so() {
    for recognition in ["tag_or_key", "key"] {
        let (items, count, got, top) = match recognition {
            "tag_or_key" => {
                let repo: Repo<LenientScore> = repo("adopt_lenient").await;
                write_untagged::<LenientScore>(repo.client(), repo.table(), 30).await;
                read_back(&repo).await
            }
            _ => {
                let repo: Repo<KeyScore> = repo("adopt_keys").await;
                write_untagged::<KeyScore>(repo.client(), repo.table(), 30).await;
                read_back(&repo).await
            }
        };
        assert_eq!(items, 30, "{recognition}: every item read");
        assert_eq!(count, 30, "{recognition}: counted");
        assert_eq!(got, 30, "{recognition}: each found by get");
        assert_eq!(
            top,
            [290, 280, 270, 260, 250],
            "{recognition}: top-k equal to brute force"
        );
    }
}

/// What a repository of `E` reads of the 30 untagged items: items, count, gets, top 5.
async fn read_back<E>(repo: &Repo<E>) -> (usize, u64, usize, Vec<u64>)
where
    E: ShardedEntity + LeaderboardRow,
{
    let all = E::query_g1(repo).collect_answer().await.unwrap();
    assert_eq!(all.foreign.count, 0, "{:?}", all.foreign);
    let count = E::query_g1(repo).count().await.unwrap();
    let mut got = 0;
    for row in &all.items {
        if E::get_row(repo, row).await.is_some() {
            got += 1;
        }
    }
    let top = E::query_g1(repo)
        .descending()
        .limit(5)
        .collect()
        .await
        .unwrap()
        .iter()
        .map(LeaderboardRow::score)
        .collect();
    (all.items.len(), count, got, top)
}

/// The leaderboard rows of the tables above, read alike.
trait LeaderboardRow: Sized {
    fn query_g1(repo: &Repo<Self>) -> sharded::Query<Self>;
    async fn get_row(repo: &Repo<Self>, row: &Self) -> Option<Self>;
    fn score(&self) -> u64;
}

macro_rules! row {
    ($name:ident) => {
        impl LeaderboardRow for $name {
            fn query_g1(repo: &Repo<Self>) -> sharded::Query<Self> {
                $name::query(repo, "g1")
            }
            async fn get_row(repo: &Repo<Self>, row: &Self) -> Option<Self> {
                $name::get(repo, &row.game_id, &row.player_id, row.score)
                    .await
                    .unwrap()
            }
            fn score(&self) -> u64 {
                self.score
            }
        }
    };
}
row!(LenientScore);
row!(KeyScore);

#[tokio::test]
async fn a_table_without_a_tag_gets_none_written() {
    let repo: Repo<KeyScore> = repo("adopt_notag").await;
    let score = KeyScore {
        game_id: "g1".into(),
        player_id: "p1".into(),
        score: 7,
    };
    repo.put(&score).await.unwrap();
    let stored = raw_scan(repo.client(), repo.table()).await;
    assert_eq!(stored.len(), 1);
    let names: BTreeSet<&str> = stored[0].keys().map(String::as_str).collect();
    assert_eq!(
        names,
        BTreeSet::from(["PK", "SK", "game_id", "player_id", "score"])
    );
    assert_eq!(
        KeyScore::get(&repo, "g1", "p1", 7).await.unwrap(),
        Some(score)
    );
}

// ---- 3. Hand-sharded data --------------------------------------------------------------

/// The vote-counter article's table as it is: `PK`/`SK`, nothing tagged.
#[derive(ShardedTable)]
#[table(name = "ElectionData", pk = "PK", sk = "SK", recognize = "key")]
struct ElectionData;

#[tokio::test]
async fn the_vote_counter_patterns_counter_is_read_and_added_to_where_it_is() {
    let client = client().await;
    let table = unique_table_name("adopt_votes");
    let definition = TableDefinition::of::<ElectionData>();
    definition
        .create_table(&client, &table)
        .send()
        .await
        .unwrap();
    // The article's service: `ADD votes :inc` on `CANDIDATE#A#{random 0-9}`, SK = METADATA.
    for i in 0..500u64 {
        let shard = fastrand::u32(0..10);
        client
            .update_item()
            .table_name(&table)
            .key("PK", s(&format!("CANDIDATE#A#{shard}")))
            .key("SK", s("METADATA"))
            .update_expression("ADD votes :inc")
            .expression_attribute_values(":inc", n(1))
            .send()
            .await
            .unwrap();
        let _ = i;
    }
    let votes = ShardedCounter::new(client.clone(), &table, &definition, "CANDIDATE#A", 10)
        .unwrap()
        .with_sort_key("METADATA")
        .with_attribute("votes");
    assert_eq!(votes.total().await.unwrap(), 500);
    votes.increment(1).await.unwrap();
    votes.increment_at_least_once(2).await.unwrap();
    votes.increment_with_token(3, "vote-7f3a").await.unwrap();
    votes.increment_with_token(3, "vote-7f3a").await.unwrap();
    assert_eq!(
        votes.total().await.unwrap(),
        506,
        "exactly once under one token"
    );
    // The increments landed on the same items: still ten, each with nothing but its count
    // (the table declares no tag, so none is added).
    let items = raw_scan(&client, &table).await;
    assert!(items.len() <= 10, "{} items", items.len());
    for item in &items {
        let names: BTreeSet<&str> = item.keys().map(String::as_str).collect();
        assert_eq!(names, BTreeSet::from(["PK", "SK", "votes"]), "{item:?}");
    }
    // `#SHARD_{n}`-spelled counters too.
    let spelled = ShardedCounter::new(client.clone(), &table, &definition, "CANDIDATE#B", 4)
        .unwrap()
        .with_sort_key("METADATA")
        .with_attribute("votes")
        .with_suffix(ShardSuffix::parse("#SHARD_{shard}").unwrap());
    let shard = spelled.increment(5).await.unwrap();
    let stored = raw_get(
        &client,
        &table,
        item(&[
            ("PK", s(&format!("CANDIDATE#B#SHARD_{shard}"))),
            ("SK", s("METADATA")),
        ]),
    )
    .await;
    assert_eq!(stored.map(|i| i["votes"].clone()), Some(n(5)));
    // In a table whose items carry a tag, a counter tags its items, so no entity query
    // counts them as foreign.
    let tagged = ShardedCounter::new(
        client.clone(),
        &table,
        &TableDefinition::new("PK", Some("SK")),
        "CANDIDATE#C",
        1,
    )
    .unwrap();
    tagged.increment(1).await.unwrap();
    let stored = raw_get(
        &client,
        &table,
        item(&[("PK", s("CANDIDATE#C#0")), ("SK", s("COUNTER"))]),
    )
    .await
    .unwrap();
    assert_eq!(stored["_entity"], s("ShardedCounter"));
}

/// `@ddb-lib`'s `distributedKey`: `ACTIVE_USERS#SHARD_{random 0-9}`, untagged, the user
/// id in the sort key. Read as it is, then adopted into the hash placement in place.
#[derive(ShardedTable)]
#[table(pk = "pk", sk = "sk", recognize = "key")]
struct Analytics;

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(table = Analytics)]
#[pk(
    template = "ACTIVE_USERS",
    shard = "hash(user_id)",
    n = 10,
    suffix = "#SHARD_{shard}",
    previous_n = 10,
    previous_shard = "unknown"
)]
#[sk(template = "USER#{user_id}")]
struct ActiveUser {
    user_id: String,
    activity: String,
}

#[tokio::test]
async fn randomly_placed_shard_suffixed_items_are_read_found_and_adopted() {
    let repo: Repo<ActiveUser> = repo("adopt_ddblib").await;
    let mut misplaced = 0;
    for i in 0..60u32 {
        let user = format!("u{i:02}");
        let shard = fastrand::u32(0..10);
        if shard != ActiveUser::shard_for(&user).unwrap() {
            misplaced += 1;
        }
        raw_put(
            repo.client(),
            repo.table(),
            item(&[
                ("pk", s(&format!("ACTIVE_USERS#SHARD_{shard}"))),
                ("sk", s(&format!("USER#{user}"))),
                ("user_id", s(&user)),
                ("activity", s("page_view")),
            ]),
        )
        .await;
    }
    let all = ActiveUser::query(&repo).collect_answer().await.unwrap();
    assert_eq!(all.items.len(), 60, "each once");
    assert_eq!(all.foreign.count, 0);
    // A point read fans out over the shards its placement cannot name.
    for i in [0u32, 17, 59] {
        let user = format!("u{i:02}");
        let found = ActiveUser::get(&repo, &user).await.unwrap();
        assert_eq!(found.map(|u| u.user_id), Some(user));
    }
    // A write leaves no copy behind at a random shard.
    let moved = ActiveUser {
        user_id: "u17".into(),
        activity: "purchase".into(),
    };
    repo.put(&moved).await.unwrap();
    assert_eq!(ActiveUser::query(&repo).collect().await.unwrap().len(), 60);
    // Another service wrote u33 twice, at two shards not its hash's: a delete leaves neither
    // copy behind to come back.
    let hash = ActiveUser::shard_for("u33").unwrap();
    for shard in (0..10).filter(|s| *s != hash).take(2) {
        raw_put(
            repo.client(),
            repo.table(),
            item(&[
                ("pk", s(&format!("ACTIVE_USERS#SHARD_{shard}"))),
                ("sk", s("USER#u33")),
                ("user_id", s("u33")),
                ("activity", s("written twice")),
            ]),
        )
        .await;
    }
    ActiveUser::delete(&repo, "u33").await.unwrap();
    assert_eq!(ActiveUser::get(&repo, "u33").await.unwrap(), None);
    let left = ActiveUser::query(&repo).collect().await.unwrap();
    assert_eq!(left.len(), 59, "every copy of u33 deleted");
    assert!(left.iter().all(|u| u.user_id != "u33"));
    // The migration puts every item at its hash shard, nothing lost, nothing doubled.
    let remaining = repo.migration_remaining().await.unwrap();
    assert!(remaining.items <= misplaced, "{remaining}");
    let report = repo.migrate().run().await.unwrap();
    assert_eq!(report.left_alone, []);
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    let stored = raw_scan(repo.client(), repo.table()).await;
    assert_eq!(stored.len(), 59);
    for item in &stored {
        let user = item["user_id"].as_s().unwrap();
        let expected = format!(
            "ACTIVE_USERS#SHARD_{}",
            ActiveUser::shard_for(user).unwrap()
        );
        assert_eq!(item["pk"].as_s().unwrap(), &expected);
    }
    assert_eq!(
        ActiveUser::get(&repo, "u17").await.unwrap(),
        Some(moved),
        "the write since survived"
    );
}

/// The catalogue's `STATUS#ACTIVE#SHARD#{n}`, zero-padded shards, and a field named `shard`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "STATUS#{status}",
    shard = "hash(user_id)",
    n = 10,
    suffix = "#SHARD#{shard}"
)]
#[sk(template = "USER#{user_id}")]
struct StatusUser {
    status: String,
    user_id: String,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "EVENTS#{shard}",
    shard = "hash(id)",
    n = 20,
    suffix = "#{shard:02}"
)]
#[sk(template = "E#{id}")]
struct Event {
    /// A field named like the generated shard parameter.
    shard: String,
    id: String,
}

#[tokio::test]
async fn other_suffix_spellings_and_a_field_named_shard_work_end_to_end() {
    let repo: Repo<StatusUser> = repo("adopt_status").await;
    for i in 0..25 {
        repo.put(&StatusUser {
            status: "ACTIVE".into(),
            user_id: format!("u{i}"),
        })
        .await
        .unwrap();
    }
    let keys = StatusUser::pk_all_shards("ACTIVE")
        .unwrap()
        .collect::<Vec<_>>();
    assert_eq!(keys[7], "STATUS#ACTIVE#SHARD#7");
    assert_eq!(
        StatusUser::query(&repo, "ACTIVE").count().await.unwrap(),
        25
    );
    let stored = raw_scan(repo.client(), repo.table()).await;
    assert!(stored
        .iter()
        .all(|i| i["pk"].as_s().unwrap().starts_with("STATUS#ACTIVE#SHARD#")));
    assert_eq!(
        StatusUser::parse_pk("STATUS#ACTIVE#SHARD#7").unwrap(),
        ("ACTIVE".to_owned(), 7)
    );

    let events: Repo<Event> = crate::support::repo("adopt_padded").await;
    for i in 0..30 {
        events
            .put(&Event {
                shard: "east".into(),
                id: format!("e{i:02}"),
            })
            .await
            .unwrap();
    }
    assert_eq!(Event::pk_on_shard("east", 7).unwrap(), "EVENTS#east#07");
    assert_eq!(
        Event::query(&events, "east").collect().await.unwrap().len(),
        30
    );
    let stored = raw_scan(events.client(), events.table()).await;
    assert!(stored.iter().all(|i| {
        let pk = i["pk"].as_s().unwrap();
        let digits = pk.rsplit('#').next().unwrap();
        digits.len() == 2
    }));
}

// ---- 4. An adoption that never harms what is not the entity's --------------------------

/// The leaderboard article's table: `game_id` / `score#player_id`, no tag, and a personal
/// best of another record type in the same partition.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "{game_id}",
    shard = "hash(player_id)",
    n = 4,
    legacy = "{game_id}"
)]
#[sk(template = "{score}#{player_id}")]
#[sharded(entity = "LegacyScore")]
struct LegacyScore {
    game_id: String,
    player_id: String,
    score: u64,
}

async fn legacy_table() -> (Repo<LegacyScore>, Vec<Item>) {
    let repo: Repo<LegacyScore> = repo("adopt_legacy").await;
    let mut foreign = Vec::new();
    for i in 0..20u64 {
        let player = format!("player-{i}");
        let mut item = item(&[
            ("pk", s("g1")),
            ("sk", s(&format!("{:020}#{player}", i * 5))),
        ]);
        // Half carry their key fields only in their keys.
        if i % 2 == 0 {
            item.insert("game_id".into(), s("g1"));
            item.insert("player_id".into(), s(&player));
            item.insert("score".into(), n(i * 5));
        }
        raw_put(repo.client(), repo.table(), item).await;
    }
    // Not the entity's: a personal best with the same attributes, a score padded to 10
    // digits, a player name with a raw space.
    foreign.push(item(&[
        ("pk", s("g1")),
        ("sk", s("BEST#player-1")),
        ("game_id", s("g1")),
        ("player_id", s("player-1")),
        ("score", n(999)),
    ]));
    foreign.push(item(&[
        ("pk", s("g1")),
        ("sk", s("0000000999#player-x")),
        ("game_id", s("g1")),
        ("player_id", s("player-x")),
        ("score", n(999)),
    ]));
    foreign.push(item(&[
        ("pk", s("g1")),
        ("sk", s("00000000000000000777#Jane Doe")),
        ("game_id", s("g1")),
        ("player_id", s("Jane Doe")),
        ("score", n(777)),
    ]));
    for item in &foreign {
        raw_put(repo.client(), repo.table(), item.clone()).await;
    }
    (repo, foreign)
}

#[tokio::test]
async fn records_that_are_not_the_entitys_are_never_read_as_it_nor_moved() {
    let (repo, foreign) = legacy_table().await;
    let answer = LegacyScore::query(&repo, "g1")
        .collect_answer()
        .await
        .unwrap();
    assert_eq!(answer.items.len(), 20, "every score, each once");
    assert!(answer
        .items
        .iter()
        .all(|s| s.score != 999 && s.score != 777));
    assert_eq!(answer.foreign.count, 3);
    // The personal best is another record's key (`BEST` is no score); the padded score and
    // the raw space are the entity's keys spelled another way.
    let mut reasons: Vec<(String, &str)> = answer
        .foreign
        .examples
        .iter()
        .map(|f| (f.key.sk.clone().unwrap_or_default(), f.reason.label()))
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [
            ("00000000000000000777#Jane Doe".to_owned(), "not_canonical"),
            ("0000000999#player-x".to_owned(), "not_canonical"),
            ("BEST#player-1".to_owned(), "other_keys"),
        ]
    );

    // One logical key, then the whole table: the two paths agree, and both leave the three
    // exactly where they are.
    let only = repo
        .migrate()
        .only(LegacyScore::pk_partitions("g1").unwrap())
        .delete_delay(std::time::Duration::ZERO)
        .run()
        .await
        .unwrap();
    assert_eq!(only.progress.moved, 20);
    assert_eq!(only.left_alone.len(), 3, "{:?}", only.left_alone);
    let whole = repo.migrate().run().await.unwrap();
    assert_eq!(whole.progress.moved, 0);
    assert_eq!(whole.left_alone.len(), 3);
    let remaining = repo.migration_remaining().await.unwrap();
    assert_eq!(remaining, 0);
    assert_eq!(remaining.left_alone.count, 3);
    for original in &foreign {
        let key = item(&[
            ("pk", original["pk"].clone()),
            ("sk", original["sk"].clone()),
        ]);
        assert_eq!(
            raw_get(repo.client(), repo.table(), key).await.as_ref(),
            Some(original),
            "left exactly as it was"
        );
    }
    // The moved items carry their key fields now, read from their keys.
    let moved = LegacyScore::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(moved.len(), 20);
    let stored = raw_scan(repo.client(), repo.table()).await;
    let adopted: Vec<&Item> = stored
        .iter()
        .filter(|i| i.get("_entity") == Some(&s("LegacyScore")))
        .collect();
    assert_eq!(adopted.len(), 20);
    assert!(adopted.iter().all(|i| i.contains_key("player_id")));
}

#[tokio::test]
async fn re_keying_non_canonical_keys_is_asked_for_and_reported() {
    let (repo, _) = legacy_table().await;
    let report = repo
        .migrate()
        .rekey_non_canonical()
        .delete_delay(std::time::Duration::ZERO)
        .run()
        .await
        .unwrap();
    // The padded score and the raw space are re-keyed; the personal best (no score a key
    // can hold) stays.
    let mut rekeyed: Vec<String> = report.rekeyed.iter().map(|r| r.to.to_string()).collect();
    rekeyed.sort();
    assert_eq!(rekeyed.len(), 2, "{:?}", report.rekeyed);
    assert!(
        rekeyed[0].contains("00000000000000000777#Jane$20Doe"),
        "{rekeyed:?}"
    );
    assert!(
        rekeyed[1].contains("00000000000000000999#player-x"),
        "{rekeyed:?}"
    );
    assert_eq!(report.left_alone.len(), 1);
    assert!(report.left_alone[0]
        .key
        .to_string()
        .contains("BEST#player-1"));
    assert_eq!(
        LegacyScore::get(&repo, "g1", "Jane Doe", 777)
            .await
            .unwrap()
            .map(|s| s.player_id),
        Some("Jane Doe".to_owned())
    );
}

/// A table whose items carry the tag, while another service writes untagged copies at the
/// new sharded places during the adoption.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 4,
    legacy = "GAME#{game_id}"
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct TaggedScore {
    game_id: String,
    player_id: String,
    score: u64,
}

#[tokio::test]
async fn an_untagged_copy_at_the_current_place_never_costs_an_original() {
    let repo: Repo<TaggedScore> = repo("adopt_copies").await;
    let scores: Vec<TaggedScore> = (0..60)
        .map(|i| TaggedScore {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            score: i,
        })
        .collect();
    for score in &scores {
        raw_put(
            repo.client(),
            repo.table(),
            item(&[
                ("pk", s("GAME#g1")),
                (
                    "sk",
                    s(&TaggedScore::sk(score.score, &score.player_id).unwrap()),
                ),
                ("game_id", s("g1")),
                ("player_id", s(&score.player_id)),
                ("score", n(score.score)),
            ]),
        )
        .await;
    }
    // The other service writes 10 of them again at their sharded keys, untagged.
    for score in &scores[..10] {
        raw_put(
            repo.client(),
            repo.table(),
            item(&[
                ("pk", s(&TaggedScore::pk("g1", &score.player_id).unwrap())),
                (
                    "sk",
                    s(&TaggedScore::sk(score.score, &score.player_id).unwrap()),
                ),
                ("game_id", s("g1")),
                ("player_id", s(&score.player_id)),
                ("score", n(score.score)),
            ]),
        )
        .await;
    }
    let before = TaggedScore::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(before.len(), 60);
    let result = repo.migrate().run().await;
    let report = match result {
        Err(MigrateError::Incomplete { report, .. }) => *report,
        other => panic!("the ten cannot be moved: {other:?}"),
    };
    assert_eq!(report.progress.moved, 50);
    assert_eq!(
        report.progress.superseded, 0,
        "no original deleted for a copy it cannot read"
    );
    assert_eq!(report.failed.len(), 10, "{:?}", report.failed);
    assert!(report.failed[0].reason.contains("not the entity's"));
    let after = TaggedScore::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(after.len(), 60, "visible items: none lost");
}
