//! Whole-key bounds, rank and neighbours against brute force: the composite leaderboard bounds
//! ("after (100, p1000)", "between (10, p0500) and (20, p1000)"), bounds given as items and as
//! whole keys, strict and inclusive ends on values that are stored and that are not, both
//! directions, paged and counted; a range across a collection's members; a string GSI and a
//! multi-attribute GSI; `rank` and `around` on random boards with ties, in a steady layout
//! and during a layout transition.

use serde::{Deserialize, Serialize};
use sharded::query::QueryRefusal;
use sharded::query::{SortBound, WholeSortKey};
use sharded::{Error, Query, Repo, ShardedCollection, ShardedEntity};

use crate::entities::{score, Badge, Comment, Score};
use crate::support::{page_to_end, repo};

type Key = (u64, String);

/// A board with ties: scores from a small range, so many players share one.
fn board(seed: u64, players: usize, top: u64) -> Vec<Score> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..players)
        .map(|i| score("g1", &format!("p{:04}", i * 7 % 1500), rng.u64(0..=top)))
        .collect()
}

fn keys(scores: &[Score]) -> Vec<Key> {
    scores
        .iter()
        .map(|s| (s.score, s.player_id.clone()))
        .collect()
}

/// A side of a range in tuple order: the bound and whether it is included.
type End = Option<(Key, bool)>;

fn admits(low: &End, high: &End, key: &Key) -> bool {
    let above = low
        .as_ref()
        .is_none_or(|(b, inc)| key > b || (*inc && key == b));
    let below = high
        .as_ref()
        .is_none_or(|(b, inc)| key < b || (*inc && key == b));
    above && below
}

fn whole(key: &Key) -> SortBound {
    Score::sk_sort().eq(key.0).eq(key.1.as_str()).into_bound()
}

/// The query with the bounds, given as whole keys or as items, in both directions, collected,
/// paged by 3 and counted, equals the brute-force answer.
async fn check(repo: &Repo<Score>, all: &[Score], low: End, high: End, as_items: bool) {
    let label = format!("{low:?} .. {high:?} (items: {as_items})");
    let bound = |key: &Key| -> SortBound {
        if as_items {
            (&score("g1", &key.1, key.0)).into_bound()
        } else {
            whole(key)
        }
    };
    let query = || {
        let mut q = Score::query(repo, "g1");
        if let Some((key, inclusive)) = &low {
            q = if *inclusive {
                q.from(bound(key))
            } else {
                q.after(bound(key))
            };
        }
        if let Some((key, inclusive)) = &high {
            q = if *inclusive {
                q.to(bound(key))
            } else {
                q.before(bound(key))
            };
        }
        q
    };
    let mut want: Vec<Key> = keys(all)
        .into_iter()
        .filter(|k| admits(&low, &high, k))
        .collect();
    want.sort();
    assert_eq!(
        keys(&query().collect().await.unwrap()),
        want,
        "{label}, ascending"
    );
    let paged: Vec<Score> = page_to_end(query, 3).await.into_iter().flatten().collect();
    assert_eq!(keys(&paged), want, "{label}, paged ascending");
    assert_eq!(
        query().count().await.unwrap(),
        want.len() as u64,
        "{label}, count"
    );
    want.reverse();
    let paged: Vec<Score> = page_to_end(|| query().descending(), 3)
        .await
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(keys(&paged), want, "{label}, paged descending");
    let top3 = query().descending().limit(3).collect().await.unwrap();
    assert_eq!(
        keys(&top3),
        want.iter().take(3).cloned().collect::<Vec<_>>(),
        "{label}, top 3"
    );
}

#[tokio::test]
async fn whole_key_bounds_equal_brute_force() {
    let repo = repo::<Score>("bounds").await;
    let mut all = board(7, 120, 30);
    // The pattern's own values: prefixes of each other, and the bounds themselves stored.
    for (s, p) in [
        (100, "p1000"),
        (100, "p100"),
        (100, "p10000"),
        (10, "p0500"),
        (20, "p1000"),
    ] {
        all.push(score("g1", p, s));
    }
    all.sort_by_key(|s| (s.score, s.player_id.clone()));
    all.dedup_by_key(|s| (s.score, s.player_id.clone()));
    repo.batch_put(&all).await.unwrap();
    // Another entity inside the key range must never come back.
    repo.for_entity::<Comment>()
        .put(&Comment {
            game_id: "g1".into(),
            player_id: "p0001".into(),
            id: "c1".into(),
            text: "gg".into(),
        })
        .await
        .unwrap();
    let k = |s: u64, p: &str| (s, p.to_owned());
    let cases: Vec<(End, End)> = vec![
        // The five composite leaderboard bounds.
        (Some((k(100, "p1000"), false)), None),
        (None, Some((k(10, "p0500"), false))),
        (Some((k(10, "p0500"), true)), Some((k(20, "p1000"), true))),
        (Some((k(10, "p0500"), false)), Some((k(20, "p1000"), false))),
        (Some((k(5, "p0300"), true)), Some((k(25, "p0001"), false))),
        // Ends that are not stored, prefixes, one key, an empty and an inverted range.
        (
            Some((k(100, "p100"), false)),
            Some((k(100, "p10000"), true)),
        ),
        (Some((k(12, "p"), true)), Some((k(12, "p\u{7f}"), true))),
        (Some((k(20, "p1000"), true)), Some((k(20, "p1000"), true))),
        (Some((k(20, "p1000"), false)), Some((k(20, "p1000"), true))),
        (Some((k(25, "a"), true)), Some((k(3, "z"), true))),
        (None, Some((k(0, "p0000"), true))),
        (Some((k(u64::MAX, "z"), false)), None),
    ];
    for (low, high) in cases {
        check(&repo, &all, low.clone(), high.clone(), false).await;
        if low
            .iter()
            .chain(&high)
            .all(|(key, _)| !key.1.contains('\u{7f}'))
        {
            check(&repo, &all, low, high, true).await;
        }
    }
}

#[tokio::test]
async fn bounds_meet_the_typed_condition_and_the_entity() {
    let repo = repo::<Score>("bounds-sk").await;
    let all = board(11, 80, 20);
    repo.batch_put(&all).await.unwrap();
    let pivot = (10, "p0500".to_owned());
    // score in 5..=15, and after (10, p0500): both apply.
    let got = Score::query(&repo, "g1")
        .sk(Score::sk_sort().between(5, 15))
        .after(whole(&pivot))
        .collect()
        .await
        .unwrap();
    let mut want: Vec<Key> = keys(&all)
        .into_iter()
        .filter(|k| (5..=15).contains(&k.0) && *k > pivot)
        .collect();
    want.sort();
    assert_eq!(keys(&got), want);
    // Several bounds on one side: the tightest applies.
    let got = Score::query(&repo, "g1")
        .after(whole(&(3, "p".into())))
        .after(whole(&pivot))
        .from(whole(&(1, "p".into())))
        .count()
        .await
        .unwrap();
    assert_eq!(
        got,
        keys(&all).iter().filter(|k| **k > pivot).count() as u64
    );
}

#[tokio::test]
async fn a_bound_that_cannot_be_resolved_is_refused_before_any_request() {
    let repo = repo::<Score>("bounds-bad").await;
    let badge = Badge {
        game_id: "g1".into(),
        player_id: "p1".into(),
        badge: "b".into(),
    };
    let err = Score::query(&repo, "g1")
        .after(&badge)
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidQuery(QueryRefusal::BoundOfOtherEntity {
                entity: "Badge",
                ..
            })
        ),
        "{err}"
    );
    let err = Score::query(&repo, "g1")
        .after(Score::sk_sort().eq(1).eq(""))
        .collect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Key(_)), "{err}");
    // A key of gsi1's sort key on the base table.
    let err = Score::query(&repo, "g1")
        .after(Comment::gsi1_sort().eq("c1"))
        .count()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Key(_)), "{err}");
}

/// Every entity of a game's partitions.
#[derive(ShardedCollection, Debug, Clone, PartialEq)]
enum GameItems {
    Score(Score),
    Comment(Comment),
    Badge(Badge),
}

impl GameItems {
    fn sk(&self) -> String {
        match self {
            GameItems::Score(s) => Score::sk(s.score, &s.player_id).unwrap(),
            GameItems::Comment(c) => Comment::sk(&c.id).unwrap(),
            GameItems::Badge(b) => Badge::sk(&b.player_id).unwrap(),
        }
    }
}

#[tokio::test]
async fn a_collection_range_spans_its_members() {
    let repo = repo::<Score>("bounds-coll").await;
    let scores = board(5, 40, 9);
    repo.batch_put(&scores).await.unwrap();
    let comments: Vec<Comment> = (0..40)
        .map(|i| Comment {
            game_id: "g1".into(),
            player_id: format!("p{i}"),
            id: format!("c{i:03}"),
            text: "gg".into(),
        })
        .collect();
    repo.for_entity::<Comment>()
        .batch_put(&comments)
        .await
        .unwrap();
    let badges: Vec<Badge> = ["A", "B", "Bz", "C", "b", "s", "t"]
        .iter()
        .map(|p| Badge {
            game_id: "g1".into(),
            player_id: (*p).into(),
            badge: "x".into(),
        })
        .collect();
    repo.for_entity::<Badge>().batch_put(&badges).await.unwrap();
    let mut all: Vec<GameItems> = scores.into_iter().map(GameItems::Score).collect();
    all.extend(comments.into_iter().map(GameItems::Comment));
    all.extend(badges.into_iter().map(GameItems::Badge));
    // From badge `B` (key `B#BADGE`) to comment c020, and from comment c010 to a score.
    let ranges: Vec<(SortBound, String, SortBound, String)> = vec![
        (
            Badge::sk_sort().eq("B").into_bound(),
            Badge::sk("B").unwrap(),
            Comment::sk_sort().eq("c020").into_bound(),
            Comment::sk("c020").unwrap(),
        ),
        (
            Comment::sk_sort().eq("c010").into_bound(),
            Comment::sk("c010").unwrap(),
            Score::sk_sort().eq(4).eq("p0700").into_bound(),
            Score::sk(4, "p0700").unwrap(),
        ),
    ];
    for (from, low, to, high) in ranges {
        let query = || {
            Score::query(&repo, "g1")
                .collection::<GameItems>()
                .from(from.clone())
                .to(to.clone())
        };
        let mut want: Vec<String> = all
            .iter()
            .map(GameItems::sk)
            .filter(|k| *k >= low && *k <= high)
            .collect();
        want.sort();
        let got: Vec<String> = query()
            .collect()
            .await
            .unwrap()
            .iter()
            .map(GameItems::sk)
            .collect();
        assert_eq!(got, want, "{low} ..= {high}");
        let paged: Vec<String> = page_to_end(|| query().descending(), 4)
            .await
            .into_iter()
            .flatten()
            .map(|i| i.sk())
            .collect();
        want.reverse();
        assert_eq!(paged, want, "{low} ..= {high}, paged descending");
        assert_eq!(query().count().await.unwrap(), want.len() as u64);
    }
}

/// A run, sorted on gsi1 by three attributes and on gsi2 by a string template.
#[derive(ShardedEntity, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[pk(template = "PLAYER#{player_id}")]
#[sk(template = "MATCH#{match_id}")]
#[gsi1(pk = [game_id], sk = [score, player_id, match_id], shard = 4)]
#[gsi2(
    pk = "GAME#{game_id}",
    sk = "S#{score}#{player_id}#{match_id}",
    shard = 4
)]
struct Run {
    player_id: String,
    match_id: u32,
    game_id: String,
    score: i64,
}

type RunKey = (i64, String, u32);

fn run_key(r: &Run) -> RunKey {
    (r.score, r.player_id.clone(), r.match_id)
}

#[tokio::test]
async fn gsi_bounds_equal_brute_force() {
    let repo = repo::<Run>("bounds-gsi").await;
    let mut rng = fastrand::Rng::with_seed(3);
    let runs: Vec<Run> = (0..90)
        .map(|i| Run {
            player_id: format!("p{}", i % 13),
            match_id: i,
            game_id: "g1".into(),
            score: rng.i64(-20..=20),
        })
        .collect();
    repo.batch_put(&runs).await.unwrap();
    let pivots = [runs[10].clone(), runs[50].clone()];
    let (lo, hi) = if run_key(&pivots[0]) <= run_key(&pivots[1]) {
        (&pivots[0], &pivots[1])
    } else {
        (&pivots[1], &pivots[0])
    };
    let all: Vec<RunKey> = runs.iter().map(run_key).collect();
    let between = |a: &RunKey, b: &RunKey, strict: bool| -> Vec<RunKey> {
        let mut v: Vec<RunKey> = all
            .iter()
            .filter(|k| {
                if strict {
                    *k > a && *k < b
                } else {
                    *k >= a && *k <= b
                }
            })
            .cloned()
            .collect();
        v.sort();
        v
    };
    let keys = |runs: Vec<Run>| runs.iter().map(run_key).collect::<Vec<_>>();
    for strict in [false, true] {
        let want = between(&run_key(lo), &run_key(hi), strict);
        // Items as bounds, on the multi-attribute gsi1 and the string gsi2.
        let q1 = || {
            let q = Run::query_gsi1(&repo, "g1");
            if strict {
                q.after(lo).before(hi)
            } else {
                q.from(lo).to(hi)
            }
        };
        let q2 = || {
            let q = Run::query_gsi2(&repo, "g1");
            if strict {
                q.after(lo).before(hi)
            } else {
                q.from(lo).to(hi)
            }
        };
        assert_eq!(
            keys(q1().collect().await.unwrap()),
            want,
            "gsi1 strict={strict}"
        );
        assert_eq!(
            keys(q2().collect().await.unwrap()),
            want,
            "gsi2 strict={strict}"
        );
        let paged: Vec<Run> = page_to_end(|| q1().descending(), 4)
            .await
            .into_iter()
            .flatten()
            .collect();
        let mut down = want.clone();
        down.reverse();
        assert_eq!(keys(paged), down, "gsi1 paged descending strict={strict}");
        assert_eq!(q2().count().await.unwrap(), want.len() as u64);
    }
    // Whole keys of each GSI's own: every attribute held, every template field held.
    let k = run_key(lo);
    let after1 = Run::query_gsi1(&repo, "g1")
        .after(Run::gsi1_sort().eq(k.0).eq(k.1.as_str()).eq(k.2))
        .collect()
        .await
        .unwrap();
    let after2 = Run::query_gsi2(&repo, "g1")
        .after(Run::gsi2_sort().eq(k.0).eq(k.1.as_str()).eq(k.2))
        .collect()
        .await
        .unwrap();
    let mut want: Vec<RunKey> = all.iter().filter(|x| **x > k).cloned().collect();
    want.sort();
    assert_eq!(keys(after1), want);
    assert_eq!(keys(after2), want);
    // Rank and neighbours on both indexes: best first, ties on score broken by player, match.
    let mut board = all.clone();
    board.sort();
    board.reverse();
    for run in runs.iter().step_by(11) {
        let at = board.iter().position(|x| *x == run_key(run)).unwrap();
        let r1 = Run::query_gsi1(&repo, "g1")
            .descending()
            .rank(run)
            .await
            .unwrap();
        let r2 = Run::query_gsi2(&repo, "g1")
            .descending()
            .rank(run)
            .await
            .unwrap();
        assert_eq!(
            (r1.position, r2.position),
            (at as u64 + 1, at as u64 + 1),
            "{run:?}"
        );
        for near in [
            Run::query_gsi1(&repo, "g1")
                .descending()
                .around(run, 2, 2)
                .await
                .unwrap(),
            Run::query_gsi2(&repo, "g1")
                .descending()
                .around(run, 2, 2)
                .await
                .unwrap(),
        ] {
            assert_eq!(keys(near.above), board[at.saturating_sub(2)..at].to_vec());
            assert_eq!(
                keys(near.below),
                board[at + 1..(at + 3).min(board.len())].to_vec()
            );
        }
    }
}

/// Rank and neighbours of every `step`-th player against the sorted board.
async fn check_rank_and_around<S>(query: impl Fn() -> Query<S>, all: &[Score], step: usize)
where
    S: ShardedEntity + Send + 'static,
    S: Into<Score>,
    for<'a> &'a S: WholeSortKey,
    Score: Into<S>,
{
    let mut board = keys(all);
    board.sort();
    board.reverse(); // best first
    for (at, key) in board.iter().enumerate().step_by(step) {
        let me: S = score("g1", &key.1, key.0).into();
        let rank = query().descending().rank(&me).await.unwrap();
        assert_eq!(rank.position, at as u64 + 1, "rank of {key:?}");
        assert!(rank.requests >= 1);
        let asc = query().rank(&me).await.unwrap();
        assert_eq!(
            asc.position,
            (board.len() - at) as u64,
            "ascending rank of {key:?}"
        );
        let near = query().descending().around(&me, 3, 2).await.unwrap();
        let above: Vec<Key> = near
            .above
            .into_iter()
            .map(|s| keys(&[s.into()])[0].clone())
            .collect();
        let below: Vec<Key> = near
            .below
            .into_iter()
            .map(|s| keys(&[s.into()])[0].clone())
            .collect();
        assert_eq!(
            above,
            board[at.saturating_sub(3)..at].to_vec(),
            "above {key:?}"
        );
        assert_eq!(
            below,
            board[at + 1..(at + 3).min(board.len())].to_vec(),
            "below {key:?}"
        );
    }
    // An item not on the board ranks where it would stand.
    let outsider: S = score("g1", "zzz", 0).into();
    let rank = query().descending().rank(&outsider).await.unwrap();
    let ahead = board.iter().filter(|k| **k > (0, "zzz".to_owned())).count();
    assert_eq!(rank.position, ahead as u64 + 1);
}

#[tokio::test]
async fn rank_and_around_equal_brute_force_with_ties() {
    let repo = repo::<Score>("rank").await;
    for seed in [1, 2] {
        let all = board(seed, 150, if seed == 1 { 5 } else { 1000 });
        let game = format!("g{seed}");
        let all: Vec<Score> = all
            .into_iter()
            .map(|mut s| {
                s.game_id = game.clone();
                s
            })
            .map(|s| ((s.score, s.player_id.clone()), s))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_values()
            .collect();
        repo.batch_put(&all).await.unwrap();
        let normalised: Vec<Score> = all
            .iter()
            .map(|s| score("g1", &s.player_id, s.score))
            .collect();
        check_rank_and_around(|| Score::query(&repo, game.as_str()), &normalised, 7).await;
    }
}

/// The same scores, four shards.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 4)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct Score4 {
    game_id: String,
    player_id: String,
    score: u64,
}

/// Resharding 4 -> 8: both layouts are read until the migration ends.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[sharded(entity = "Score")]
#[pk(
    template = "GAME#{game_id}",
    shard = "hash(player_id)",
    n = 8,
    previous_n = 4
)]
#[sk(template = "SCORE#{score}#{player_id}")]
struct ScoreTo8 {
    game_id: String,
    player_id: String,
    score: u64,
}

impl From<Score> for ScoreTo8 {
    fn from(s: Score) -> Self {
        ScoreTo8 {
            game_id: s.game_id,
            player_id: s.player_id,
            score: s.score,
        }
    }
}

impl From<ScoreTo8> for Score {
    fn from(s: ScoreTo8) -> Self {
        score(&s.game_id, &s.player_id, s.score)
    }
}

#[tokio::test]
async fn rank_and_around_hold_during_a_layout_transition() {
    let old: Repo<Score4> = repo("rank-transition").await;
    let all = board(9, 120, 8);
    let all: Vec<Score> = all
        .into_iter()
        .map(|s| ((s.score, s.player_id.clone()), s))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect();
    let (before, during) = all.split_at(all.len() / 2);
    let as4 = |s: &Score| Score4 {
        game_id: s.game_id.clone(),
        player_id: s.player_id.clone(),
        score: s.score,
    };
    old.batch_put(&before.iter().map(as4).collect::<Vec<_>>())
        .await
        .unwrap();
    let new: Repo<ScoreTo8> = Repo::new(old.client().clone(), old.table());
    for s in during {
        new.put(&ScoreTo8::from(s.clone())).await.unwrap();
    }
    // Some of the old layout's items rewritten through the new one: moved, same key.
    for s in before.iter().step_by(5) {
        new.put(&ScoreTo8::from(s.clone())).await.unwrap();
    }
    check_rank_and_around(|| ScoreTo8::query(&new, "g1"), &all, 9).await;
}
