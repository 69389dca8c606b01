use std::sync::Arc;

use super::*;
use sharded_runtime::capacity::{HotKeyThresholds, ManualClock, UnitKind};

const SEC: Duration = Duration::from_secs(1);

fn collector(window_secs: u64) -> (ManualClock, HotKeyStats) {
    let clock = ManualClock::new();
    let stats =
        HotKeyStats::new(Duration::from_secs(window_secs)).with_clock(Arc::new(clock.clone()));
    (clock, stats)
}

fn near_limit<'a>(report: &'a HotKeyReport, key: &str) -> Vec<&'a HotKeyFlag> {
    report
        .flags
        .iter()
        .filter(|f| matches!(f, HotKeyFlag::NearLimit { key: k, .. } if k == key))
        .collect()
}

#[test]
fn a_hot_key_is_near_limit_and_dominant() {
    let (clock, stats) = collector(60);
    for _ in 0..60 {
        stats.record_write(None, "OPS_LOG", 900.0, None);
        stats.record_write(None, "USER#u1", 50.0, None);
        stats.record_write(None, "USER#u2", 50.0, None);
        clock.advance(SEC);
    }
    let report = stats.report();
    assert_eq!(report.measured_over, Duration::from_secs(60));
    assert_eq!(report.keys.len(), 3);
    let hot = &report.top(1)[0];
    assert_eq!(hot.key, "OPS_LOG");
    assert_eq!(hot.write_units, 54_000.0);
    assert_eq!(hot.write_units_per_sec, 900.0);
    assert!((hot.write_utilization - 0.9).abs() < 1e-12);
    assert!((hot.write_share - 0.9).abs() < 1e-12);

    let flags = near_limit(&report, "OPS_LOG");
    assert_eq!(flags.len(), 1);
    match flags[0] {
        HotKeyFlag::NearLimit {
            index: None,
            kind: UnitKind::Write,
            utilization,
            shards: None,
            suggested_n: Some(2),
            ..
        } => assert!((utilization - 0.9).abs() < 1e-12),
        other => panic!("unexpected {other:?}"),
    }
    assert!(near_limit(&report, "USER#u1").is_empty(), "5% is not near");
    let dominant: Vec<_> = report
        .flags
        .iter()
        .filter(|f| matches!(f, HotKeyFlag::DominantKey { .. }))
        .collect();
    assert_eq!(dominant.len(), 1);
    assert!(matches!(dominant[0],
            HotKeyFlag::DominantKey { index: None, key, kind: UnitKind::Write, share }
                if key == "OPS_LOG" && (*share - 0.9).abs() < 1e-12));
    let text = report.to_string();
    assert!(
        text.contains("near limit: base table key `OPS_LOG` writes at 90%"),
        "{text}"
    );
    assert!(text.contains("n = 2)]"), "{text}");
    assert!(text.contains("dominant key"), "{text}");
}

#[test]
fn evenly_spread_moderate_keys_raise_no_flags() {
    let (clock, stats) = collector(60);
    for _ in 0..60 {
        for user in 0..4 {
            stats.record_write(None, &format!("USER#{user}"), 100.0, None);
            stats.record_read(None, &format!("USER#{user}"), 200.0, None);
        }
        clock.advance(SEC);
    }
    let report = stats.report();
    assert_eq!(report.keys.len(), 4);
    assert_eq!(report.flags, vec![], "{report}");
    assert!(report.to_string().contains("flags: none"));
}

#[test]
fn a_single_key_is_not_dominant_and_little_traffic_is_not_dominant() {
    let (_clock, stats) = collector(60);
    stats.record_write(None, "ONLY", 500.0, None);
    stats.record_write(Some("gsi1"), "A", 3.0, None);
    stats.record_write(Some("gsi1"), "B", 1.0, None);
    let report = stats.report();
    assert!(
        !report
            .flags
            .iter()
            .any(|f| matches!(f, HotKeyFlag::DominantKey { .. })),
        "{report}"
    );
}

#[test]
fn reads_near_limit_advise_caching_not_n() {
    let (clock, stats) = collector(10);
    for _ in 0..10 {
        stats.record_read(None, "GAME#g1#0", 2_700.0, Some(2));
        stats.record_read(None, "GAME#g1#1", 2_700.0, Some(2));
        clock.advance(SEC);
    }
    let report = stats.report();
    let flags = near_limit(&report, "GAME#g1#0");
    assert_eq!(flags.len(), 1);
    assert!(matches!(
        flags[0],
        HotKeyFlag::NearLimit {
            kind: UnitKind::Read,
            suggested_n: None,
            shards: Some(2),
            ..
        }
    ));
    assert!(
        near_limit(&report, "GAME#g1#1").is_empty(),
        "one flag per logical key: {report}"
    );
    let text = flags[0].to_string();
    assert!(text.contains("raising n does not help"), "{text}");
    // The crate's own tools first, with this key's figures: 27,000 units over 10 s, and the
    // requests a process sends per staleness bound over the logical key's 2 shards.
    assert!(text.contains("this key takes 2,700 RCU/s"), "{text}");
    let staleness = text.find("`Query::max_staleness(S)`").expect(&text);
    assert!(
        text.contains("single flight (`Repo::with_single_flight`"),
        "{text}"
    );
    assert!(text.contains("(2 requests per S in all"), "{text}");
    let dax = text.find("DAX").expect(&text);
    assert!(
        staleness < dax,
        "DAX comes after the crate's own tools: {text}"
    );
}

#[test]
fn a_hot_shard_of_a_sharded_key_suggests_a_larger_n() {
    let (clock, stats) = collector(10);
    for _ in 0..10 {
        for shard in 0..4 {
            stats.record_write(None, &format!("GAME#g1#{shard}"), 850.0, Some(4));
        }
        clock.advance(SEC);
    }
    let report = stats.report();
    // 4 x 850 = 3,400 WCU/s over a 700 WCU budget: n = 5.
    let flags = near_limit(&report, "GAME#g1#0");
    assert!(matches!(
        flags[..],
        [HotKeyFlag::NearLimit {
            suggested_n: Some(5),
            shards: Some(4),
            ..
        }]
    ));
    assert!(flags[0].to_string().contains("raise n from 4 to 5"));
    // Even shards: no uneven flag.
    assert!(!report
        .flags
        .iter()
        .any(|f| matches!(f, HotKeyFlag::UnevenShards { .. })));
}

#[test]
fn uneven_shards_are_flagged_even_ones_are_not() {
    let (clock, stats) = collector(10);
    for _ in 0..10 {
        for shard in 0..4u32 {
            let units = if shard == 1 { 100.0 } else { 10.0 };
            stats.record_write(None, &format!("GAME#hot#{shard}"), units, Some(4));
            stats.record_write(None, &format!("GAME#even#{shard}"), 50.0, Some(4));
        }
        clock.advance(SEC);
    }
    let report = stats.report();
    let uneven: Vec<_> = report
        .flags
        .iter()
        .filter(|f| matches!(f, HotKeyFlag::UnevenShards { .. }))
        .collect();
    assert_eq!(uneven.len(), 1, "{report}");
    let HotKeyFlag::UnevenShards {
        index: None,
        logical_key,
        kind: UnitKind::Write,
        max_over_mean: ratio,
        shards: 4,
        hottest_shard: 1,
    } = uneven[0]
    else {
        panic!("unexpected {:?}", uneven[0]);
    };
    assert_eq!(logical_key, "GAME#hot");
    // mean = (1,000 + 3 x 100) / 4 = 325 per shard; max 1,000.
    assert!((ratio - 1_000.0 / 325.0).abs() < 1e-9, "{ratio}");
    assert!(report
        .to_string()
        .contains("uneven shards: shard 1 of base table key `GAME#hot`"));
}

#[test]
fn idle_shards_count_as_zero() {
    let (clock, stats) = collector(10);
    for _ in 0..10 {
        // n = 4, but only shards 0 and 1 get traffic: max/mean = 50 / 25 = 2.
        stats.record_write(None, "VOTES#a#0", 50.0, Some(4));
        stats.record_write(None, "VOTES#a#1", 50.0, Some(4));
        clock.advance(SEC);
    }
    let report = stats.report();
    assert!(
        report.flags.iter().any(|f| matches!(f,
            HotKeyFlag::UnevenShards { logical_key, max_over_mean, shards: 4, .. }
                if logical_key == "VOTES#a" && (*max_over_mean - 2.0).abs() < 1e-12)),
        "{report}"
    );
}

#[test]
fn uneven_needs_minimum_traffic() {
    let (_clock, stats) = collector(10);
    // 3 units on one of 4 shards: far too little to judge.
    stats.record_write(None, "VOTES#a#0", 3.0, Some(4));
    let report = stats.report();
    assert!(!report
        .flags
        .iter()
        .any(|f| matches!(f, HotKeyFlag::UnevenShards { .. })));
}

#[test]
fn a_gsi_key_hotter_than_the_base_keys_is_flagged() {
    let (clock, stats) = collector(10);
    for _ in 0..10 {
        for shard in 0..10 {
            stats.record_write(None, &format!("VOTES#c#{shard}"), 50.0, Some(10));
            stats.record_write(Some("gsi2"), &format!("VOTER#{shard}"), 10.0, None);
        }
        stats.record_write(Some("gsi1"), "ELECTION#2024", 500.0, None);
        clock.advance(SEC);
    }
    let report = stats.report();
    let hot: Vec<_> = report
        .flags
        .iter()
        .filter(|f| matches!(f, HotKeyFlag::HotGsiKey { .. }))
        .collect();
    assert_eq!(hot.len(), 1, "{report}");
    match hot[0] {
        HotKeyFlag::HotGsiKey {
            index,
            key,
            units_per_sec,
            hottest_base_units_per_sec,
            suggested_n,
        } => {
            assert_eq!(index, "gsi1");
            assert_eq!(key, "ELECTION#2024");
            assert_eq!(*units_per_sec, 500.0);
            assert_eq!(*hottest_base_units_per_sec, 50.0);
            assert_eq!(*suggested_n, 10);
        }
        other => panic!("unexpected {other:?}"),
    }
    let text = report.to_string();
    assert!(
        text.contains("shard the GSI key: #[gsi1(..., shard = 10)]"),
        "{text}"
    );
    // Shares are per index: the GSI key is all of gsi1's writes.
    assert_eq!(
        report
            .key(Some("gsi1"), "ELECTION#2024")
            .unwrap()
            .write_share,
        1.0
    );
    assert_eq!(report.key(None, "VOTES#c#0").unwrap().write_share, 0.1);
}

#[test]
fn the_window_forgets_old_traffic() {
    let (clock, stats) = collector(60);
    stats.record_write(None, "OLD", 50_000.0, None);
    stats.record_throttle(None, "OLD", "ProvisionedThroughputExceeded", None);
    clock.advance(Duration::from_secs(30));
    stats.record_write(None, "NEW", 600.0, None);
    let before = stats.report();
    assert_eq!(before.keys.len(), 2);
    assert!(!near_limit(&before, "OLD").is_empty());

    clock.advance(Duration::from_secs(31)); // t = 61: OLD (t = 0) is out, NEW (t = 30) in
    let after = stats.report();
    assert_eq!(after.keys.len(), 1, "{after}");
    assert_eq!(after.keys[0].key, "NEW");
    assert_eq!(after.keys[0].write_units_per_sec, 10.0);
    assert!(after.flags.is_empty(), "{after}");

    clock.advance(Duration::from_secs(60));
    let empty = stats.report();
    assert!(empty.keys.is_empty());
    assert!(empty.flags.is_empty());
    let indexes = stats.__window(|window| window.state.indexes.len());
    assert_eq!(indexes, 0, "idle keys are dropped");
}

#[test]
fn throttles_are_counted_by_reason() {
    let (clock, stats) = collector(60);
    for _ in 0..3 {
        stats.record_throttle(Some("gsi1"), "DAY#1", "ProvisionedThroughputExceeded", None);
        clock.advance(SEC);
    }
    stats.record_throttle(Some("gsi1"), "DAY#1", "ThrottlingException", None);
    stats.record_throttle(None, "USER#1", "ThrottlingException", None);
    let report = stats.report();
    let day = report
        .key(Some("gsi1"), "DAY#1")
        .expect("throttled key is listed");
    assert_eq!(day.throttles.get("ProvisionedThroughputExceeded"), Some(&3));
    assert_eq!(day.throttles.get("ThrottlingException"), Some(&1));
    assert_eq!(day.write_units, 0.0);
    let mut throttled: Vec<_> = report
        .flags
        .iter()
        .filter_map(|f| match f {
            HotKeyFlag::Throttled {
                index,
                key,
                reason,
                count,
            } => Some((index.clone(), key.clone(), reason.clone(), *count)),
            _ => None,
        })
        .collect();
    throttled.sort();
    assert_eq!(
        throttled,
        vec![
            (None, "USER#1".into(), "ThrottlingException".into(), 1),
            (
                Some("gsi1".into()),
                "DAY#1".into(),
                "ProvisionedThroughputExceeded".into(),
                3
            ),
            (
                Some("gsi1".into()),
                "DAY#1".into(),
                "ThrottlingException".into(),
                1
            ),
        ]
    );
    let text = report.to_string();
    assert!(
        text.contains("ProvisionedThroughputExceeded=3 ThrottlingException=1"),
        "{text}"
    );
    assert!(
        text.contains("throttled: gsi1 key `DAY#1` 3 times"),
        "{text}"
    );
}

#[test]
fn a_young_collector_divides_by_its_age() {
    let (clock, stats) = collector(60);
    for _ in 0..10 {
        stats.record_write(None, "K", 100.0, None);
        clock.advance(SEC);
    }
    let report = stats.report();
    assert_eq!(report.measured_over, Duration::from_secs(10));
    assert_eq!(report.keys[0].write_units_per_sec, 100.0);
    // At age 0, rates are over one second, not infinite.
    let (_c, fresh) = collector(60);
    fresh.record_write(None, "K", 100.0, None);
    assert_eq!(fresh.report().keys[0].write_units_per_sec, 100.0);
}

#[test]
fn limits_and_thresholds_are_configurable() {
    let (clock, _) = collector(10);
    let stats = HotKeyStats::new(Duration::from_secs(10))
        .with_clock(Arc::new(clock.clone()))
        .with_limits(PerKeyLimits::new(100.0, 300.0))
        .with_thresholds(HotKeyThresholds {
            near_limit: 0.5,
            ..HotKeyThresholds::default()
        });
    for _ in 0..10 {
        stats.record_write(None, "K", 60.0, None);
        stats.record_read(None, "K", 100.0, None);
        clock.advance(SEC);
    }
    let report = stats.report();
    assert_eq!(
        report.limits,
        PerKeyLimits {
            write_units_per_second: 100.0,
            read_units_per_second: 300.0
        }
    );
    let flags = near_limit(&report, "K");
    assert_eq!(flags.len(), 1, "60% write flagged, 33% read not: {report}");
    assert!(matches!(
        flags[0],
        HotKeyFlag::NearLimit {
            kind: UnitKind::Write,
            ..
        }
    ));
    // Nonsense limits are ignored.
    let kept =
        HotKeyStats::new(Duration::from_secs(1)).with_limits(PerKeyLimits::new(f64::NAN, -1.0));
    assert_eq!(kept.report().limits, PerKeyLimits::DYNAMODB);
}

#[test]
fn bad_input_does_not_panic_or_count() {
    let (clock, stats) = collector(0);
    assert_eq!(stats.window(), SEC, "a zero window is one second");
    stats.record_write(None, "K", f64::NAN, None);
    stats.record_write(None, "K", -5.0, None);
    stats.record_read(None, "K", f64::INFINITY, None);
    assert!(stats.report().keys.is_empty());
    // Sharded keys that cannot be split are reported as plain keys.
    stats.record_write(None, "NOHASH", 100.0, Some(4));
    stats.record_write(None, "X#notanumber", 100.0, Some(4));
    stats.record_write(None, "X#7", 100.0, Some(4));
    stats.record_write(None, "#0", 100.0, Some(4));
    stats.record_write(None, "Y#0", 100.0, Some(0));
    stats.record_write(None, "Z#3", 100.0, Some(u32::MAX));
    stats.record_write(Some(""), "", 1.0, None);
    let report = stats.report();
    assert_eq!(report.keys.len(), 7);
    assert!(report.to_string().contains("NOHASH"));
    // A clock going backwards adds to the newest bucket.
    clock.set(Duration::from_secs(100));
    stats.record_write(None, "B", 1.0, None);
    clock.set(Duration::from_secs(50));
    stats.record_write(None, "B", 1.0, None);
    clock.set(Duration::from_secs(100));
    assert_eq!(stats.report().key(None, "B").unwrap().write_units, 2.0);
}

#[test]
fn display_lists_the_top_ten_and_counts_the_rest() {
    let (_clock, stats) = collector(60);
    for i in 0..12 {
        stats.record_write(None, &format!("K{i:02}"), f64::from(i + 1), None);
    }
    let report = stats.report();
    assert_eq!(
        report
            .top(3)
            .iter()
            .map(|k| k.key.as_str())
            .collect::<Vec<_>>(),
        ["K11", "K10", "K09"]
    );
    assert_eq!(report.top(100).len(), 12);
    let text = report.to_string();
    assert!(text.contains("index  key"), "{text}");
    assert!(text.contains("K02"));
    assert!(!text.contains("K01 "), "{text}");
    assert!(text.contains("... and 2 more"), "{text}");
}

#[test]
fn recording_from_many_threads_adds_up() {
    let (_clock, stats) = collector(60);
    let stats = Arc::new(stats);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let stats = Arc::clone(&stats);
            std::thread::spawn(move || {
                for _ in 0..1_000 {
                    stats.record_write(None, "K", 1.0, None);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(stats.report().keys[0].write_units, 4_000.0);
}
