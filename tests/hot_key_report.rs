//! The hot-key report from a recorded workload (`tests/fixtures/hot_keys_recording.json`):
//! one minute of a table with one key of each pattern the report tells apart. Every field
//! of every logical key is checked against the arithmetic done by hand.

use sharded::capacity::{
    HotKeyPattern, HotKeyStats, LogicalKeyReport, ManualClock, PerKeyLimits, Recording,
    RecordingError, ReportHotKeys, TableCaps,
};
use std::sync::Arc;
use std::time::Duration;

const RECORDING: &str = include_str!("fixtures/hot_keys_recording.json");

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

macro_rules! assert_close {
    ($actual:expr, $expected:expr, $what:expr) => {
        assert!(
            close($actual, $expected),
            "{}: {} != {}",
            $what,
            $actual,
            $expected
        )
    };
}

fn report() -> sharded::capacity::HotKeyReport {
    Recording::from_json(RECORDING)
        .expect("the fixture is a valid recording")
        .report(PerKeyLimits::DYNAMODB)
}

fn row<'a>(
    report: &'a sharded::capacity::HotKeyReport,
    index: Option<&str>,
    key: &str,
) -> &'a LogicalKeyReport {
    report
        .logical_key(index, key)
        .unwrap_or_else(|| panic!("no row for {key}"))
}

#[test]
fn logical_keys_are_ranked_by_their_hottest_second() {
    let report = report();
    let order: Vec<&str> = report
        .logical_keys
        .iter()
        .map(|r| r.logical_key.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "USER#u1",
            "ELECTION#e1",
            "OPS#2026-11-22",
            "GAME#g1",
            "STATUS#open",
            "USER#u2"
        ]
    );
    assert_eq!(report.measured_over, Duration::from_secs(60));
}

#[test]
fn a_sharded_key_rolls_up_its_shards_and_shows_the_hot_one() {
    let report = report();
    let game = row(&report, None, "GAME#g1");
    assert_eq!(game.shards, Some(4));
    assert_eq!(game.physical_keys, 4);
    let w = &game.write;
    assert_close!(w.units, 72_000.0, "units");
    assert_eq!(w.requests, 72_000);
    assert_close!(w.units_per_request, 1.0, "units per request");
    assert_close!(w.mean_units_per_sec, 1_200.0, "mean");
    assert_close!(w.peak_units_per_sec, 1_200.0, "peak");
    assert_close!(w.p99_units_per_sec, 1_200.0, "p99");
    assert_close!(w.hottest_key_peak_units_per_sec, 900.0, "hottest key");
    assert_close!(w.limit_units_per_sec, 1_000.0, "limit");
    assert_close!(w.peak_utilization, 0.9, "utilization");
    assert_eq!(w.seconds_over_limit, 0);
    assert_close!(game.read.units, 0.0, "no reads");
    assert_close!(game.read.limit_units_per_sec, 3_000.0, "read limit");
    assert!(game.throttles.is_empty());
    let spread = game.spread.as_ref().expect("a sharded key has a spread");
    assert_eq!(spread.kind, "write");
    assert_close!(spread.max_over_mean, 3.0, "max/mean");
    // Shards 100, 100, 900, 100 per second: sd 346.41 over mean 300.
    assert_close!(
        spread.coefficient_of_variation,
        (3.0f64 * 200.0 * 200.0 + 600.0 * 600.0).sqrt() / 2.0 / 300.0,
        "cv"
    );
    assert_eq!(spread.hottest_shard, 2);
    assert_eq!(game.pattern, HotKeyPattern::SustainedHotKey);
    // 1,200 units/s need 2 shards at 700 each: 4 are enough, one of them is the problem.
    assert_eq!(game.advice.recommended_n, Some(4));
    assert!(
        game.advice.action.contains("one shard is hot"),
        "{}",
        game.advice.action
    );
    assert_eq!(game.advice.scatter_read_units, Some(2.0));
    assert_eq!(game.advice.scatter_read_round_trips, Some(1));
    assert_eq!(game.advice.table_gap, None);
}

#[test]
fn a_day_key_is_a_rolling_time_key_and_item_size_counts() {
    let report = report();
    let ops = row(&report, None, "OPS#2026-11-22");
    assert_eq!(ops.shards, None);
    assert_eq!(ops.physical_keys, 1);
    assert_eq!(ops.write.requests, 28_500);
    assert_close!(ops.write.units_per_request, 2.0, "2 KB items");
    assert_close!(ops.write.peak_units_per_sec, 950.0, "peak");
    assert_close!(ops.write.peak_utilization, 0.95, "utilization");
    assert!(ops.spread.is_none());
    assert_eq!(ops.pattern, HotKeyPattern::RollingTimeKey);
    assert_eq!(ops.advice.recommended_n, Some(2));
    assert!(
        ops.advice.action.contains("shard = \"random\", n = 2"),
        "{}",
        ops.advice.action
    );
}

#[test]
fn one_item_taking_every_write_is_told_apart_from_a_hot_key() {
    let report = report();
    let election = row(&report, None, "ELECTION#e1");
    assert_eq!(election.pattern, HotKeyPattern::OneHotItem);
    assert_close!(election.write.peak_utilization, 1.0, "utilization");
    assert_eq!(election.throttles.len(), 1);
    let t = &election.throttles[0];
    assert_eq!(t.reason, "TableWriteKeyRangeThroughputExceeded");
    assert_eq!(t.resource, "table");
    assert_eq!(t.count, 12_000);
    assert!(t.meaning.contains("shard the base key"), "{}", t.meaning);
    assert!(
        election.advice.action.contains("vote-counter pattern"),
        "{}",
        election.advice.action
    );
    assert_eq!(election.advice.recommended_n, Some(2));
}

#[test]
fn an_index_key_range_throttle_points_at_the_gsi_not_the_base_key() {
    let report = report();
    let status = row(&report, Some("gsi1"), "STATUS#open");
    assert_eq!(status.index.as_deref(), Some("gsi1"));
    assert_eq!(status.pattern, HotKeyPattern::LowCardinalityGsiKey);
    assert_eq!(
        status.throttles[0].reason,
        "IndexWriteKeyRangeThroughputExceeded"
    );
    assert_eq!(status.throttles[0].resource, "gsi1");
    assert_eq!(status.throttles[0].count, 150);
    assert!(
        status.throttles[0].meaning.contains("not the base key"),
        "{}",
        status.throttles[0].meaning
    );
    assert!(
        status.advice.action.contains("#[gsi1(..)] with shard = 2"),
        "{}",
        status.advice.action
    );
}

#[test]
fn a_two_second_burst_is_left_to_burst_capacity() {
    let report = report();
    let burst = row(&report, None, "USER#u1");
    let w = &burst.write;
    assert_close!(w.units, 3_580.0, "units");
    assert_close!(w.mean_units_per_sec, 3_580.0 / 60.0, "mean");
    assert_close!(w.peak_units_per_sec, 1_500.0, "peak");
    assert_close!(
        w.p99_units_per_sec,
        1_500.0,
        "p99 of 60 seconds is the top one"
    );
    assert_eq!(w.seconds_over_limit, 2);
    assert_eq!(burst.pattern, HotKeyPattern::TransientBurst);
    assert_eq!(burst.advice.recommended_n, Some(3));
    assert!(burst.advice.action.contains("only if it recurs"));
}

#[test]
fn a_quiet_key_needs_nothing() {
    let report = report();
    let quiet = row(&report, None, "USER#u2");
    assert_close!(quiet.read.units, 9.0, "read units");
    assert_eq!(quiet.read.requests, 18);
    assert_close!(quiet.read.units_per_request, 0.5, "eventually consistent");
    assert_close!(quiet.read.mean_units_per_sec, 0.15, "mean");
    assert_close!(quiet.read.p99_units_per_sec, 1.5, "p99");
    assert_eq!(quiet.pattern, HotKeyPattern::NotHot);
    assert_eq!(quiet.advice.action, "nothing to do");
    assert!(!report.to_string().contains("USER#u2 ("));
}

#[test]
fn the_table_caps_add_the_update_table_that_lifts_them() {
    let caps = TableCaps::new("scores").on_demand_max(Some(1_000.0), None);
    let report = report().with_table_caps(&caps);
    let game = row(&report, None, "GAME#g1");
    let gap = game.advice.table_gap.as_deref().expect("1,200 > 1,000");
    assert!(
        gap.contains("--on-demand-throughput MaxWriteRequestUnits=1200"),
        "{gap}"
    );
    assert_eq!(row(&report, None, "OPS#2026-11-22").advice.table_gap, None);
    assert!(report.to_string().contains("table: "));
}

#[test]
fn json_and_table_carry_the_same_rows_and_redaction_hides_every_key() {
    let report = report();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["schema"], 1);
    let rows = json["logical_keys"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[0]["logical_key"], "USER#u1");
    assert_eq!(rows[0]["pattern"], "transient_burst");
    assert_eq!(rows[3]["spread"]["hottest_shard"], 2);
    let text = report.to_string();
    for key in [
        "USER#u1",
        "ELECTION#e1",
        "OPS#2026-11-22",
        "GAME#g1",
        "STATUS#open",
    ] {
        assert!(text.contains(key), "the table names {key}");
    }

    let redacted = report.redact("salt");
    let json = redacted.to_json();
    for key in [
        "USER#u1",
        "ELECTION",
        "OPS#",
        "GAME#g1",
        "STATUS#open",
        "USER#u2",
    ] {
        assert!(!json.contains(key), "{key} leaked into {json}");
        assert!(!redacted.to_string().contains(key), "{key} leaked");
    }
    assert!(
        redacted.keys.iter().any(|k| k.key.ends_with("#2")),
        "shards stay readable"
    );
    assert!(redacted.redacted);
}

#[test]
fn a_live_collector_and_its_recording_report_the_same() {
    let clock = ManualClock::new();
    let stats = HotKeyStats::new(Duration::from_secs(30)).with_clock(Arc::new(clock.clone()));
    for second in 0..45u32 {
        for shard in 0..3 {
            let units = f64::from(100 * (shard + 1) + second);
            stats.record_write(None, &format!("GAME#g9#{shard}"), units, Some(3));
        }
        stats.record_read(Some("gsi1"), "DAY#2026-11-22", 2.0, None);
        clock.advance(Duration::from_millis(1_000));
    }
    clock.advance(Duration::from_millis(300));
    stats.record_throttle(None, "GAME#g9#2", "ThrottlingException", Some(3));
    let live = stats.report();
    let replayed = Recording::from_json(&stats.recording().to_json())
        .unwrap()
        .report(PerKeyLimits::DYNAMODB);
    assert_eq!(replayed.logical_keys.len(), live.logical_keys.len());
    for (a, b) in live.logical_keys.iter().zip(&replayed.logical_keys) {
        assert_eq!(a.logical_key, b.logical_key);
        assert_eq!(a.write.requests, b.write.requests);
        assert_close!(a.write.units, b.write.units, "units");
        assert_close!(
            a.write.peak_units_per_sec,
            b.write.peak_units_per_sec,
            "peak"
        );
        assert_eq!(a.throttles, b.throttles);
        assert_eq!(a.pattern, b.pattern);
    }
}

#[test]
fn bad_recordings_are_refused_with_the_reason() {
    let future = RECORDING.replacen("\"second\":1000", "\"second\":5000", 1);
    assert!(matches!(
        Recording::from_json(&future),
        Err(RecordingError::Invalid(m)) if m.contains("after the recording's end")
    ));
    let schema = RECORDING.replacen("\"schema\":1", "\"schema\":9", 1);
    assert!(matches!(
        Recording::from_json(&schema),
        Err(RecordingError::Schema(9))
    ));
    assert!(matches!(
        Recording::from_json("{\"keys\": 3}"),
        Err(RecordingError::Json(_))
    ));
}

#[test]
fn a_contributor_insights_report_is_read_per_minute() {
    // The shape of `aws cloudwatch get-insight-rule-report` for a "most accessed" rule.
    let report = r#"{
        "KeyLabels": ["PK"],
        "AggregationStatistic": "Sum",
        "Contributors": [
            { "Keys": ["GAME#g1#3"], "ApproximateAggregateValue": 90000.0,
              "Datapoints": [
                { "Timestamp": "2026-11-22T10:00:00Z", "ApproximateValue": 60000.0 },
                { "Timestamp": "2026-11-22T10:01:00Z", "ApproximateValue": 30000.0 } ] },
            { "Keys": ["GAME#g1#0"], "ApproximateAggregateValue": 6000.0,
              "Datapoints": [
                { "Timestamp": "2026-11-22T10:00:00Z", "ApproximateValue": 6000.0 } ] }
        ]
    }"#;
    let recording = Recording::from_contributor_insights(
        report,
        None,
        sharded::capacity::InsightRule::AccessedWrites,
        Some(4),
    )
    .unwrap();
    assert_eq!(recording.window_seconds, 120);
    let report = recording.report(PerKeyLimits::DYNAMODB);
    let game = row(&report, None, "GAME#g1");
    assert_eq!(game.physical_keys, 2);
    assert_close!(game.write.units, 96_000.0, "units");
    // A minute's sum spread over its seconds: 1,000 + 100 units/s in the first minute.
    assert_close!(game.write.peak_units_per_sec, 1_100.0, "peak");
    assert_close!(
        game.write.hottest_key_peak_units_per_sec,
        1_000.0,
        "hottest"
    );
    assert!(Recording::from_contributor_insights(
        r#"{"Contributors":[{"Keys":["K"],"Datapoints":[{"Timestamp":"yesterday","ApproximateValue":1}]}]}"#,
        None,
        sharded::capacity::InsightRule::Throttled,
        None
    )
    .is_err());
}
