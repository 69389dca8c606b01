//! Typed sort-key conditions against brute force: every generated comparison, both
//! directions, bounds equal to stored values and between them, values that are prefixes of
//! others (`p1` / `p10`, 100 / 1000), escaped bytes, and other entities whose keys fall inside
//! the key range (`SCORE#BADGE`).

use sharded::{query::SortKeyCondition, Error, KeyError, Repo};

use crate::entities::{score, Badge, Comment, Score};
use crate::support::{page_to_end, repo};

const SCORES: [u64; 8] = [0, 1, 99, 100, 101, 200, 1000, u64::MAX];
const PLAYERS: [&str; 8] = ["p1", "p10", "p2", "p5", "p5 x", "p5!", "p50", "q"];
const BADGE_PLAYERS: [&str; 9] = [
    "p1", "p10", "p1 x", "p2", "SCORE", "COMMENT", "a", "zz", "p1$",
];

/// One game holding every score x player, plus comments and badges in the same partitions.
async fn table() -> (Repo<Score>, Vec<Score>, Vec<Badge>) {
    let repo = repo::<Score>("q-sortkey").await;
    let scores: Vec<Score> = SCORES
        .iter()
        .flat_map(|&s| PLAYERS.iter().map(move |p| score("g1", p, s)))
        .collect();
    repo.batch_put(&scores).await.unwrap();
    let badges: Vec<Badge> = BADGE_PLAYERS
        .iter()
        .map(|p| Badge {
            game_id: "g1".into(),
            player_id: (*p).into(),
            badge: "b".into(),
        })
        .collect();
    repo.for_entity::<Badge>().batch_put(&badges).await.unwrap();
    let comments: Vec<Comment> = PLAYERS
        .iter()
        .map(|p| Comment {
            game_id: "g1".into(),
            player_id: (*p).into(),
            id: format!("c-{p}"),
            text: "gg".into(),
        })
        .collect();
    repo.for_entity::<Comment>()
        .batch_put(&comments)
        .await
        .unwrap();
    (repo, scores, badges)
}

/// The query with `condition`, both directions, equals the brute-force answer: the items
/// matching `keep`, ordered as tuples of the template's fields (not as encoded keys).
async fn check_scores(
    repo: &Repo<Score>,
    all: &[Score],
    label: &str,
    condition: impl Into<SortKeyCondition>,
    keep: impl Fn(u64, &str) -> bool,
) {
    let condition = condition.into();
    let keys = |scores: Vec<Score>| -> Vec<(u64, String)> {
        scores.into_iter().map(|s| (s.score, s.player_id)).collect()
    };
    let mut want: Vec<(u64, String)> = keys(all.to_vec())
        .into_iter()
        .filter(|(s, p)| keep(*s, p))
        .collect();
    want.sort();
    let got = Score::query(repo, "g1")
        .sk(condition.clone())
        .collect()
        .await
        .unwrap();
    assert_eq!(keys(got), want, "{label}, ascending");
    want.reverse();
    let got = Score::query(repo, "g1")
        .sk(condition)
        .descending()
        .collect()
        .await
        .unwrap();
    assert_eq!(keys(got), want, "{label}, descending");
}

/// Which badge players a condition keeps.
type Keep = Box<dyn Fn(&str) -> bool>;

#[tokio::test]
async fn query_typed_sort_key_ranges_equal_brute_force() {
    let (repo, all, badges) = table().await;

    // The first field: existing values, values between them, and the extremes.
    for v in [0, 50, 99, 100, 101, 1000, 1001, u64::MAX] {
        check_scores(
            &repo,
            &all,
            &format!("score == {v}"),
            Score::sk_sort().eq(v),
            |s, _| s == v,
        )
        .await;
        check_scores(
            &repo,
            &all,
            &format!("score < {v}"),
            Score::sk_sort().lt(v),
            |s, _| s < v,
        )
        .await;
        check_scores(
            &repo,
            &all,
            &format!("score <= {v}"),
            Score::sk_sort().le(v),
            |s, _| s <= v,
        )
        .await;
        check_scores(
            &repo,
            &all,
            &format!("score > {v}"),
            Score::sk_sort().gt(v),
            |s, _| s > v,
        )
        .await;
        check_scores(
            &repo,
            &all,
            &format!("score >= {v}"),
            Score::sk_sort().ge(v),
            |s, _| s >= v,
        )
        .await;
    }
    for (lo, hi) in [
        (100, 200),
        (100, 100),
        (99, 1000),
        (0, u64::MAX),
        (102, 199),
        (1000, 1001),
    ] {
        check_scores(
            &repo,
            &all,
            &format!("{lo} <= score <= {hi}"),
            Score::sk_sort().between(lo, hi),
            |s, _| lo <= s && s <= hi,
        )
        .await;
    }

    // Equality on the score, a range on the player: `p1` must not reach `p10`, 100 not 1000.
    let players = [
        "p", "p1", "p10", "p5", "p5 x", "p5!", "p5$", "p55", "q", "r",
    ];
    for held in [100, 1000, 50] {
        for v in players {
            check_scores(
                &repo,
                &all,
                &format!("score == {held}, player == {v:?}"),
                Score::sk_sort().eq(held).eq(v),
                |s, p| s == held && p == v,
            )
            .await;
            check_scores(
                &repo,
                &all,
                &format!("score == {held}, player <= {v:?}"),
                Score::sk_sort().eq(held).le(v),
                |s, p| s == held && p <= v,
            )
            .await;
            check_scores(
                &repo,
                &all,
                &format!("score == {held}, player > {v:?}"),
                Score::sk_sort().eq(held).gt(v),
                |s, p| s == held && p > v,
            )
            .await;
            check_scores(
                &repo,
                &all,
                &format!("score == {held}, player >= {v:?}"),
                Score::sk_sort().eq(held).ge(v),
                |s, p| s == held && p >= v,
            )
            .await;
        }
        for (lo, hi) in [
            ("p1", "p10"),
            ("p10", "p5"),
            ("p5", "p5"),
            ("p5 x", "p50"),
            ("a", "z"),
        ] {
            check_scores(
                &repo,
                &all,
                &format!("score == {held}, {lo:?} <= player <= {hi:?}"),
                Score::sk_sort().eq(held).between(lo, hi),
                |s, p| s == held && lo <= p && p <= hi,
            )
            .await;
        }
    }

    // A string field followed by a literal, no literal prefix, sharing the partitions with
    // `SCORE#...` and `COMMENT#...` keys (and a badge whose key is `SCORE#BADGE`).
    let badge_repo = repo.for_entity::<Badge>();
    for v in [
        "p1", "p10", "p1 x", "p1$", "p", "SCORE", "a", "zz", "zzz", "A",
    ] {
        let cases: [(&str, SortKeyCondition, Keep); 6] = [
            (
                "==",
                Badge::sk_sort().eq(v).into(),
                Box::new(move |p| p == v),
            ),
            ("<", Badge::sk_sort().lt(v), Box::new(move |p| p < v)),
            ("<=", Badge::sk_sort().le(v), Box::new(move |p| p <= v)),
            (">", Badge::sk_sort().gt(v), Box::new(move |p| p > v)),
            (">=", Badge::sk_sort().ge(v), Box::new(move |p| p >= v)),
            (
                "between .. zz",
                Badge::sk_sort().between(v.min("zz"), "zz"),
                Box::new(move |p| v.min("zz") <= p && p <= "zz"),
            ),
        ];
        for (op, condition, keep) in cases {
            let mut want: Vec<String> = badges
                .iter()
                .map(|b| b.player_id.clone())
                .filter(|p| keep(p))
                .collect();
            want.sort();
            for descending in [false, true] {
                let mut query = Badge::query(&badge_repo, "g1").sk(condition.clone());
                if descending {
                    query = query.descending();
                }
                let got: Vec<String> = query
                    .collect()
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|b| b.player_id)
                    .collect();
                let mut want = want.clone();
                if descending {
                    want.reverse();
                }
                assert_eq!(
                    got, want,
                    "badge player {op} {v:?}, descending {descending}"
                );
            }
        }
    }
}

#[tokio::test]
async fn query_typed_sort_key_pages_and_counts_like_collect() {
    let (repo, all, _) = table().await;
    let want: Vec<Score> = {
        let mut w: Vec<Score> = all
            .iter()
            .filter(|s| (99..=1000).contains(&s.score))
            .cloned()
            .collect();
        w.sort_by(|a, b| (b.score, &b.player_id).cmp(&(a.score, &a.player_id)));
        w
    };
    let got: Vec<Score> = page_to_end(
        || {
            Score::query(&repo, "g1")
                .sk(Score::sk_sort().between(99, 1000))
                .descending()
        },
        3,
    )
    .await
    .into_iter()
    .flatten()
    .collect();
    assert_eq!(got, want);
    let count = Score::query(&repo, "g1")
        .sk(Score::sk_sort().between(99, 1000))
        .count()
        .await
        .unwrap();
    assert_eq!(count, want.len() as u64);
}

#[tokio::test]
async fn query_typed_sort_key_errors_come_back_from_the_query() {
    let (repo, _, _) = table().await;
    // An empty string cannot be a key value: no `?` at the call site, the query says so.
    let err = Score::query(&repo, "g1")
        .sk(Score::sk_sort().eq(100).ge(""))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Key(KeyError::EmptyValue {
                field: "player_id",
                ..
            })
        ),
        "{err}"
    );
    // Bounds the wrong way round.
    let err = Score::query(&repo, "g1")
        .sk(Score::sk_sort().between(200, 100))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Key(KeyError::InvertedRange { field: "score", .. })
        ),
        "{err}"
    );
    // A GSI condition on a base-table query, and the reverse.
    let err = Score::query(&repo, "g1")
        .sk(Score::gsi1_sort().eq("g1"))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Key(KeyError::WrongSortKey {
                given: "gsi1sk",
                ..
            })
        ),
        "{err}"
    );
    let err = Score::query_gsi1(&repo, "p1")
        .sk(Score::sk_sort().ge(1))
        .collect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Key(KeyError::WrongSortKey { given: "sk", .. })),
        "{err}"
    );
    // A GSI query with its own typed condition.
    let got = Score::query_gsi1(&repo, "p1")
        .sk(Score::gsi1_sort().ge("g1"))
        .collect()
        .await
        .unwrap();
    assert_eq!(got.len(), SCORES.len());
}

/// On an index, items share sort keys: every score of p1 in g1 is `GAME#g1` on gsi1. Paging a
/// condition whose last key is that shared key reads every item that has it, whatever the page
/// size, in both directions (a shard standing on the condition's last key may hold more items
/// with that key).
#[tokio::test]
async fn paging_an_index_condition_ending_on_a_shared_sort_key_reads_every_tied_item() {
    let repo = repo::<Score>("q-gsi-ties").await;
    let mut scores: Vec<Score> = (0..40).map(|s| score("g1", "p1", s)).collect();
    scores.extend((0..8).map(|s| score("g0", "p1", s)));
    scores.extend((0..8).map(|s| score("g2", "p1", s)));
    repo.batch_put(&scores).await.unwrap();
    let sorted = |mut keys: Vec<(String, u64)>| {
        keys.sort();
        keys
    };
    let want = |keep: &dyn Fn(&str) -> bool| {
        sorted(
            scores
                .iter()
                .filter(|s| keep(&s.game_id))
                .map(|s| (s.game_id.clone(), s.score))
                .collect(),
        )
    };
    for size in [1, 3, 7] {
        for descending in [false, true] {
            let cases = [
                (
                    "eq g1",
                    SortKeyCondition::from(Score::gsi1_sort().eq("g1")),
                    want(&|g| g == "g1"),
                ),
                ("le g1", Score::gsi1_sort().le("g1"), want(&|g| g <= "g1")),
                ("ge g1", Score::gsi1_sort().ge("g1"), want(&|g| g >= "g1")),
            ];
            for (label, condition, want) in cases {
                let pages = page_to_end(
                    || {
                        let query = Score::query_gsi1(&repo, "p1").sk(condition.clone());
                        if descending {
                            query.descending()
                        } else {
                            query
                        }
                    },
                    size,
                )
                .await;
                let got: Vec<(String, u64)> = pages
                    .into_iter()
                    .flatten()
                    .map(|s| (s.game_id, s.score))
                    .collect();
                let in_order = got.windows(2).all(|w| {
                    if descending {
                        w[0].0 >= w[1].0
                    } else {
                        w[0].0 <= w[1].0
                    }
                });
                assert!(
                    in_order,
                    "{label}, page {size}, descending {descending}: {got:?}"
                );
                assert_eq!(
                    sorted(got),
                    want,
                    "{label}, page {size}, descending {descending}: every item exactly once"
                );
            }
        }
    }
}
