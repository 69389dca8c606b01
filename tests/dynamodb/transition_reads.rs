//! Reads that stay right while the table changes under them: an optional expiry that is not
//! set; pages read across a layout transition and its migration (each item once, with its
//! current content); a shard found empty on one page and written to before the next; filters
//! and counts when an item's current copy no longer matches; a range query paged while its
//! buckets shrink; untagged items of a legacy partition that are not the entity's.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use serde::{Deserialize, Serialize};
use sharded::migrate::Migrate;
use sharded::{Cursor, Repo, ShardedEntity};

use crate::support::{page_to_end, repo};

// ---------------------------------------------------------------------------------------
// An optional expiry: `None` is stored as NULL and means "never expires".

/// A session whose expiry is optional, as the README's `ts_seconds_option` example.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "SESSION#{user}", shard = "hash(id)", n = 4)]
#[sk(template = "ID#{id}")]
pub struct OptSession {
    pub user: String,
    pub id: String,
    #[sharded(ttl)]
    #[serde(with = "chrono::serde::ts_seconds_option")]
    pub expires: Option<DateTime<Utc>>,
}

#[tokio::test]
async fn items_without_an_expiry_are_read_by_every_query_mode() {
    let repo: Repo<OptSession> = repo("tr-ttl-option").await;
    let now = Utc::now();
    let mut live = Vec::new();
    for i in 0..25 {
        let expires = match i % 5 {
            // 10 that never expire, 10 that expire in an hour, 5 that expired an hour ago.
            0 | 1 => None,
            2 | 3 => Some(now + chrono::Duration::hours(1)),
            _ => Some(now - chrono::Duration::hours(1)),
        };
        let session = OptSession {
            user: "u1".into(),
            id: format!("s{i:02}"),
            expires: expires.map(|t| DateTime::from_timestamp(t.timestamp(), 0).unwrap()),
        };
        if i % 5 != 4 {
            live.push(session.id.clone());
        }
        repo.put(&session).await.unwrap();
    }
    let ids = |items: Vec<OptSession>| items.into_iter().map(|s| s.id).collect::<Vec<_>>();
    let all = OptSession::query(&repo, "u1").collect().await.unwrap();
    assert_eq!(ids(all), live, "collect");
    let pages = page_to_end(|| OptSession::query(&repo, "u1"), 3).await;
    assert_eq!(ids(pages.into_iter().flatten().collect()), live, "pages");
    let streamed: Vec<OptSession> = OptSession::query(&repo, "u1")
        .stream()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids(streamed), live, "stream");
    assert_eq!(
        OptSession::query(&repo, "u1").count().await.unwrap(),
        live.len() as u64,
        "count"
    );
    let with_expired = OptSession::query(&repo, "u1")
        .include_expired()
        .collect()
        .await
        .unwrap();
    // DynamoDB Local's own sweeper may already have deleted some of the expired ones.
    assert!(with_expired.len() >= live.len(), "include_expired");
}

// ---------------------------------------------------------------------------------------
// Paging across a 4 -> 9 transition and its migration.

/// A leaderboard before the transition: 4 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Rank")]
#[pk(template = "BOARD#{board}", shard = "hash(player)", n = 4)]
#[sk(template = "RANK#{score}#{player}")]
pub struct RankAt4 {
    pub board: String,
    pub player: String,
    pub score: u64,
    pub status: String,
}

/// The same entity, growing to 9 shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Rank")]
#[pk(
    template = "BOARD#{board}",
    shard = "hash(player)",
    n = 9,
    previous_n = 4
)]
#[sk(template = "RANK#{score}#{player}")]
pub struct RankTo9 {
    pub board: String,
    pub player: String,
    pub score: u64,
    pub status: String,
}

fn ranks(count: u64) -> Vec<RankAt4> {
    (0..count)
        .map(|i| RankAt4 {
            board: "b1".into(),
            player: format!("p{i:03}"),
            score: (i * 7919) % 1000,
            status: "old".into(),
        })
        .collect()
}

fn to9(r: &RankAt4) -> RankTo9 {
    RankTo9 {
        board: r.board.clone(),
        player: r.player.clone(),
        score: r.score,
        status: r.status.clone(),
    }
}

/// Writes `item` at its current place through the raw SDK, leaving any copy at its previous
/// place: what the migration's copy step leaves until its delayed delete (an old copy and a
/// current one).
async fn copy_to_current<E: ShardedEntity>(repo: &Repo<E>, item: &E) {
    repo.client()
        .put_item()
        .table_name(repo.table())
        .set_item(Some(item.to_item().unwrap()))
        .send()
        .await
        .unwrap();
}

/// The items of a listing as `(player, score, status)`.
fn lines(items: impl IntoIterator<Item = RankTo9>) -> Vec<(String, u64, String)> {
    items
        .into_iter()
        .map(|r| (r.player, r.score, r.status))
        .collect()
}

/// The model's listing, by sort key (score, then player), ascending.
fn sorted(model: &BTreeMap<String, (u64, String)>) -> Vec<(String, u64, String)> {
    let mut all: Vec<(String, u64, String)> = model
        .iter()
        .map(|(p, (s, st))| (p.clone(), *s, st.clone()))
        .collect();
    all.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    all
}

/// Pages of `size` from `cursor` to the end.
async fn page_on(
    repo: &Repo<RankTo9>,
    size: usize,
    mut cursor: Option<Cursor>,
) -> Vec<(String, u64, String)> {
    let mut got = Vec::new();
    while let Some(c) = cursor.take() {
        let page = RankTo9::query(repo, "b1")
            .page(size, Some(&c))
            .await
            .unwrap();
        got.extend(lines(page.items));
        cursor = page.cursor;
    }
    got
}

#[tokio::test]
async fn paging_across_a_migration_returns_every_item_once() {
    let old: Repo<RankAt4> = repo("tr-page-migrate").await;
    let items = ranks(150);
    old.batch_put(&items).await.unwrap();
    let new: Repo<RankTo9> = old.for_entity();
    let first = RankTo9::query(&new, "b1").page(10, None).await.unwrap();
    let mut got = lines(first.items);
    new.migrate()
        .delete_delay(Duration::from_millis(50))
        .run()
        .await
        .unwrap();
    assert_eq!(new.migration_remaining().await.unwrap(), 0);
    got.extend(page_on(&new, 10, first.cursor).await);
    let model: BTreeMap<String, (u64, String)> = items
        .iter()
        .map(|r| (r.player.clone(), (r.score, r.status.clone())))
        .collect();
    assert_eq!(got.len(), 150, "every item once");
    assert_eq!(got, sorted(&model), "every item once, in order");
}

#[tokio::test]
async fn paging_across_rewrites_ahead_of_the_cursor_shows_their_new_content() {
    let old: Repo<RankAt4> = repo("tr-page-rewrite").await;
    let items = ranks(150);
    old.batch_put(&items).await.unwrap();
    let new: Repo<RankTo9> = old.for_entity();
    let first = RankTo9::query(&new, "b1").page(10, None).await.unwrap();
    let mut got = lines(first.items);
    let last = got.last().unwrap().1;
    let mut model: BTreeMap<String, (u64, String)> = items
        .iter()
        .map(|r| (r.player.clone(), (r.score, r.status.clone())))
        .collect();
    // 28 items ahead of the cursor get new content at their current place: re-puts, updates,
    // and copies the migration made and a writer then changed (the old copy stays until the
    // migration's delayed delete).
    let ahead: Vec<&RankAt4> = items.iter().filter(|r| r.score > last).take(28).collect();
    let f = RankTo9::fields();
    for (i, r) in ahead.iter().enumerate() {
        let mut now = to9(r);
        now.status = format!("new{i}");
        match i % 3 {
            0 => new.put(&now).await.unwrap(),
            1 => RankTo9::update(&new, "b1", &r.player, r.score)
                .set(f.status, now.status.clone())
                .send()
                .await
                .unwrap(),
            _ => copy_to_current(&new, &now).await,
        }
        model.insert(r.player.clone(), (r.score, now.status.clone()));
    }
    got.extend(page_on(&new, 10, first.cursor).await);
    assert_eq!(
        got,
        sorted(&model),
        "each item once, with its current content"
    );
}

/// The item a page ended on is copied to its current place (a higher shard) before the next
/// page: it is not emitted again.
#[tokio::test]
async fn the_item_a_page_ended_on_is_not_repeated_from_its_new_place() {
    let old: Repo<RankAt4> = repo("tr-page-repeat").await;
    let items = ranks(60);
    old.batch_put(&items).await.unwrap();
    let new: Repo<RankTo9> = old.for_entity();
    let shard = |pk: String| pk.rsplit('#').next().unwrap().parse::<u32>().unwrap();
    let mut listing = items.clone();
    listing.sort_by(|a, b| (a.score, &a.player).cmp(&(b.score, &b.player)));
    // The first item (past the first few) whose new shard is above its old one.
    let at = listing
        .iter()
        .enumerate()
        .skip(3)
        .find(|(_, r)| shard(to9(r).item_keys().unwrap().pk) > shard(r.item_keys().unwrap().pk))
        .map(|(i, _)| i)
        .unwrap();
    let first = RankTo9::query(&new, "b1").page(at + 1, None).await.unwrap();
    let mut got = lines(first.items);
    assert_eq!(got.last().unwrap().0, listing[at].player);
    copy_to_current(&new, &to9(&listing[at])).await;
    got.extend(page_on(&new, 5, first.cursor).await);
    let model: BTreeMap<String, (u64, String)> = items
        .iter()
        .map(|r| (r.player.clone(), (r.score, r.status.clone())))
        .collect();
    assert_eq!(got, sorted(&model), "every item once");
}

/// A steady layout: a shard found empty (finished) on the first page and written to, ahead
/// of the merge position, before the next page.
#[tokio::test]
async fn an_item_written_ahead_on_a_shard_finished_earlier_is_emitted() {
    let repo: Repo<RankAt4> = repo("tr-page-done").await;
    let on_shard = |r: &RankAt4| {
        r.item_keys()
            .unwrap()
            .pk
            .rsplit('#')
            .next()
            .unwrap()
            .to_owned()
    };
    // 40 items, none on shard 3.
    let items: Vec<RankAt4> = ranks(200)
        .into_iter()
        .filter(|r| on_shard(r) != "3")
        .take(40)
        .collect();
    repo.batch_put(&items).await.unwrap();
    let first = RankAt4::query(&repo, "b1").page(10, None).await.unwrap();
    let last = first.items.last().unwrap().score;
    // An item on shard 3, ahead of the merge position.
    let late = (0..1000)
        .map(|i| RankAt4 {
            board: "b1".into(),
            player: format!("late{i}"),
            score: last + 5,
            status: "late".into(),
        })
        .find(|r| on_shard(r) == "3")
        .unwrap();
    repo.put(&late).await.unwrap();
    let mut cursor = first.cursor;
    let mut rest = Vec::new();
    while let Some(c) = cursor.take() {
        let page = RankAt4::query(&repo, "b1")
            .page(10, Some(&c))
            .await
            .unwrap();
        rest.extend(page.items);
        cursor = page.cursor;
    }
    assert!(
        rest.iter().any(|r| r.player == late.player),
        "the item written ahead of the position on a finished shard is emitted"
    );
    assert_eq!(first.items.len() + rest.len(), 41);
}

// ---------------------------------------------------------------------------------------
// Filters and counts while an item's current copy no longer matches.

#[tokio::test]
async fn filters_and_counts_see_the_current_copy_only() {
    let old: Repo<RankAt4> = repo("tr-filter").await;
    let items = ranks(80);
    old.batch_put(&items).await.unwrap();
    let new: Repo<RankTo9> = old.for_entity();
    // 40 items get another status at their current place; their old copies stay.
    for r in items.iter().step_by(2) {
        let mut now = to9(r);
        now.status = "new".into();
        copy_to_current(&new, &now).await;
    }
    let f = RankTo9::fields();
    for consistent in [false, true] {
        let query = || {
            RankTo9::query(&new, "b1")
                .consistent_read(consistent)
                .filter(f.status.eq("old"))
        };
        let all = query().collect().await.unwrap();
        assert_eq!(all.len(), 40, "collect (consistent {consistent})");
        assert!(all.iter().all(|r| r.status == "old"));
        let pages = page_to_end(query, 7).await;
        assert_eq!(pages.into_iter().flatten().count(), 40, "pages");
        assert_eq!(query().count().await.unwrap(), 40, "count");
        let new_ones = RankTo9::query(&new, "b1")
            .filter(f.status.eq("new"))
            .count()
            .await
            .unwrap();
        assert_eq!(new_ones, 40);
    }
}

// ---------------------------------------------------------------------------------------
// A range query paged while its buckets shrink from 8 shards to 4.

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Audit")]
#[pk(template = "AUDIT#{at:day}", shard = "random", n = 8)]
#[sk(template = "{at}#{id}")]
pub struct AuditAt8 {
    pub at: i64,
    pub id: String,
}

#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Audit")]
#[pk(template = "AUDIT#{at:day}", shard = "random", n = 4, previous_n = 8)]
#[sk(template = "{at}#{id}")]
pub struct AuditTo4 {
    pub at: i64,
    pub id: String,
}

#[tokio::test]
async fn range_pages_while_shrinking_read_every_entry_once() {
    let old: Repo<AuditAt8> = repo("tr-range-shrink").await;
    const DAY: i64 = 86_400;
    let entries: Vec<AuditAt8> = (0..60)
        .map(|i| AuditAt8 {
            at: 20_000 * DAY + i * 3_600,
            id: format!("e{i}"),
        })
        .collect();
    old.batch_put(&entries).await.unwrap();
    let new: Repo<AuditTo4> = old.for_entity();
    let (from, to) = (20_000 * DAY, 20_003 * DAY);
    let want: Vec<i64> = entries.iter().map(|e| e.at).collect();
    for size in [1, 7, 100] {
        let mut cursor: Option<Cursor> = None;
        let mut got = Vec::new();
        loop {
            let page = AuditTo4::query_range(&new, from, to)
                .page(size, cursor.as_ref())
                .await
                .unwrap();
            got.extend(page.items.iter().map(|e| e.at));
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(got, want, "pages of {size}");
    }
    assert_eq!(
        AuditTo4::query_range(&new, from, to).count().await.unwrap(),
        60
    );
}

// ---------------------------------------------------------------------------------------
// Untagged items of a legacy partition: only those whose keys are the entity's are adopted.

/// Scores adopting sharding over an unsharded key; the sort key has no literal prefix, so a
/// query reads the whole legacy partition.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Tally")]
#[pk(
    template = "TALLY#{game}",
    shard = "hash(player)",
    n = 4,
    legacy = "TALLY#{game}"
)]
#[sk(template = "{score}#{player}")]
pub struct Tally {
    pub game: String,
    pub player: String,
    pub score: u64,
}

async fn raw_put(repo: &Repo<Tally>, item: HashMap<String, AttributeValue>) {
    repo.client()
        .put_item()
        .table_name(repo.table())
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn untagged_legacy_items_that_are_not_the_entitys_are_left_out() {
    let repo: Repo<Tally> = repo("tr-legacy-meta").await;
    let s = |v: &str| AttributeValue::S(v.to_owned());
    for i in 0..5u64 {
        raw_put(
            &repo,
            HashMap::from([
                ("pk".to_owned(), s("TALLY#g1")),
                ("sk".to_owned(), s(&Tally::sk(i, &format!("p{i}")).unwrap())),
                ("game".to_owned(), s("g1")),
                ("player".to_owned(), s(&format!("p{i}"))),
                ("score".to_owned(), AttributeValue::N(i.to_string())),
            ]),
        )
        .await;
    }
    // The game's own record, written by the same pre-`sharded` service: not a tally.
    raw_put(
        &repo,
        HashMap::from([
            ("pk".to_owned(), s("TALLY#g1")),
            ("sk".to_owned(), s("META")),
            ("title".to_owned(), s("The game")),
        ]),
    )
    .await;
    let all = Tally::query(&repo, "g1").collect().await.unwrap();
    assert_eq!(all.len(), 5, "collect");
    let pages = page_to_end(|| Tally::query(&repo, "g1"), 2).await;
    assert_eq!(pages.into_iter().flatten().count(), 5, "pages");
    assert_eq!(Tally::query(&repo, "g1").count().await.unwrap(), 5, "count");
    let desc = Tally::query(&repo, "g1")
        .descending()
        .collect()
        .await
        .unwrap();
    assert_eq!(desc.len(), 5, "descending");
    // The migration leaves the record alone, and reads after it still see five tallies.
    repo.migrate()
        .delete_delay(Duration::from_millis(10))
        .run()
        .await
        .unwrap();
    assert_eq!(Tally::query(&repo, "g1").count().await.unwrap(), 5);
    let meta = repo
        .client()
        .get_item()
        .table_name(repo.table())
        .key("pk", s("TALLY#g1"))
        .key("sk", s("META"))
        .send()
        .await
        .unwrap();
    assert!(meta.item.is_some(), "the record is not the entity's");
}
