use super::*;

fn n_for(input: PlanInput) -> u64 {
    plan(&input).expect("valid input").base.n
}

#[test]
fn a_viral_leaderboard_needs_10_shards() {
    // 5,000 WCU/s sustained, peaks to 7,000, 1 KB items: plan for the peak.
    let p = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
    assert_eq!(p.base.n, 10);
    assert_eq!(p.base.write_units_per_put, 1);
    assert_eq!(p.base.write_units_per_sec, 7_000.0);
    assert_eq!(p.base.write_units_per_shard, 700.0);
    // Sustained 5,000 over the same 10 shards: 500 per shard ("500-700 WCU per shard").
    assert_eq!(5_000.0 / p.base.n as f64, 500.0);
    // Sustained alone would need fewer shards: the peak is what decides.
    assert_eq!(n_for(PlanInput::new(5_000.0, 1_024)), 8);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn a_bigger_viral_launch() {
    assert_eq!(n_for(PlanInput::new(10_000.0, 1_024)), 15);
    assert_eq!(
        n_for(PlanInput::new(50_000.0, 1_024).headroom(1.0 / 3.0)),
        75
    );
    // 500 WCU x 1.5 = 750 < 1,000: no sharding needed.
    let low = plan(&PlanInput::new(500.0, 1_024)).unwrap();
    assert_eq!(low.base.n, 1);
    assert_eq!(
        low.warnings,
        vec![PlanWarning::NoShardingNeeded { index: None }]
    );
    assert!(low.to_string().contains("needs no sharding"));
    // 500,000 WCU with 1/3 headroom: 750 shards, still within the derive's maximum.
    let huge = plan(&PlanInput::new(500_000.0, 1_024).headroom(1.0 / 3.0)).unwrap();
    assert_eq!(huge.base.n, 750);
    assert_eq!(huge.base.derive_n(), Some(750));
}

#[test]
fn three_kb_items_cost_three_units() {
    let p = plan(&PlanInput::new(1_000.0, 3_000)).unwrap();
    assert_eq!(p.base.write_units_per_put, 3);
    assert_eq!(p.base.write_units_per_sec, 3_000.0);
    assert_eq!(p.base.n, 5);
    let text = p.to_string();
    assert!(text.contains("item 3,000 B -> 3 write units per put (1 KB each, rounded up)"));
    assert!(text.contains("1,000 puts/s x 3 units = 3,000 WCU/s on the logical key"));
    assert!(text.contains("per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU"));
    assert!(text.contains("n = ceil(3,000 / 700) = 5"));
    assert!(text.contains("at n = 5: 600 WCU/s per shard (60% of the 1,000 WCU limit)"));
    assert!(text.contains("n = 5)]"), "{text}");
}

#[test]
fn brief_example_lines() {
    let text = plan(&PlanInput::new(7_000.0, 3_000)).unwrap().to_string();
    for line in [
        "base table: n = 30",
        "item 3,000 B -> 3 write units per put (1 KB each, rounded up)",
        "7,000 puts/s x 3 units = 21,000 WCU/s on the logical key",
        "per shard budget: 1,000 WCU x (1 - 0.30) = 700 WCU",
        "n = ceil(21,000 / 700) = 30",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn a_gsi_written_by_every_put_doubles_units_and_gets_its_own_n() {
    let without = plan(&PlanInput::new(7_000.0, 1_024)).unwrap();
    let with = plan(&PlanInput::new(7_000.0, 1_024).gsi(GsiLoad::new("gsi1", 1.0))).unwrap();
    assert_eq!(without.total_write_units_per_sec, 7_000.0);
    assert_eq!(with.total_write_units_per_sec, 14_000.0);
    assert_eq!(with.write_units_per_put_total, 2.0);
    assert_eq!(with.base.n, 10);
    assert_eq!(with.gsis.len(), 1);
    assert_eq!(with.gsis[0].index.as_deref(), Some("gsi1"));
    assert_eq!(with.gsis[0].n, 10);
    assert!(with.warnings.contains(&PlanWarning::GsiNeedsSharding {
        index: "gsi1".into(),
        n: 10
    }));
    let text = with.to_string();
    assert!(text.contains("gsi1: n = 10"), "{text}");
    assert!(text.contains("#[gsi1(..., shard = 10)]"), "{text}");
    assert!(text.contains("14,000 WCU/s in all"), "{text}");
}

#[test]
fn gsi_fractions_and_projection_shape_its_n() {
    let p = plan(
        &PlanInput::new(7_000.0, 3_000)
            .gsi(GsiLoad::new("sparse", 0.5))
            .gsi(GsiLoad::new("by-player", 1.0).hottest_key_share(0.001))
            .gsi(GsiLoad::new("keys-only", 1.0).projected_bytes(200)),
    )
    .unwrap();
    assert_eq!(p.base.n, 30);
    // 7,000 x 0.5 x 3 = 10,500 -> 15.
    assert_eq!(p.gsis[0].write_units_per_sec, 10_500.0);
    assert_eq!(p.gsis[0].n, 15);
    // 7,000 x 0.001 x 3 = 21 WCU/s on the hottest player: no sharding.
    assert_eq!(p.gsis[1].n, 1);
    assert!(p.warnings.contains(&PlanWarning::NoShardingNeeded {
        index: Some("by-player".into())
    }));
    // 200 B projection: 1 unit, 7,000 WCU/s -> 10.
    assert_eq!(p.gsis[2].write_units_per_put, 1);
    assert_eq!(p.gsis[2].n, 10);
    // Per put: 3 + 0.5 x 3 + 3 + 1 = 8.5 units.
    assert_eq!(p.write_units_per_put_total, 8.5);
    assert_eq!(p.total_write_units_per_sec, 59_500.0);
}

#[test]
fn above_the_derive_maximum_asks_for_cardinality() {
    let p = plan(&PlanInput::new(1_000_000.0, 1_024)).unwrap();
    assert_eq!(p.base.n, 1_429);
    assert_eq!(p.base.derive_n(), None);
    assert!(p.warnings.contains(&PlanWarning::TooManyShards {
        index: None,
        n: 1_429
    }));
    let text = p.to_string();
    assert!(text.contains("more cardinality"), "{text}");
    assert!(!text.contains("derive: #[pk"), "{text}");
}

#[test]
fn scatter_reads_over_budget_warn_and_do_not_change_n() {
    // The viral leaderboard: 12,000 top-100 reads/s of 1 KB items.
    let input = PlanInput::new(7_000.0, 1_024)
        .scatter_reads_per_sec(12_000.0)
        .items_per_read(100);
    let p = plan(&input).unwrap();
    assert_eq!(p.base.n, 10, "scatter reads do not drive n");
    assert_eq!(p.read_units_per_shard_query, 25.0);
    assert_eq!(p.read_units_per_shard, 300_000.0);
    assert!(p.warnings.contains(&PlanWarning::ReadsOverBudget {
        read_units_per_shard: 300_000.0,
        read_units_per_shard_query: 25.0,
        point_read_units_per_shard: 0.0,
        budget: 2_100.0,
        limit: 3_000.0,
    }));
    let text = p.to_string();
    assert!(text.contains("EVERY shard"), "{text}");
    assert!(text.contains("will throttle"), "{text}");
    // The crate's own tools first, with the plan's figures: 25 RCU per shard per query, once
    // per S per process; 2,100 / 25 = 84 processes at S = 1 s.
    let staleness = text.find("`Query::max_staleness(S)`").expect(&text);
    assert!(
        text.contains("single flight (`Repo::with_single_flight`"),
        "{text}"
    );
    assert!(
        text.contains("at most 25 RCU per process per S (25 RCU/s at S = 1 s: 84 processes fit the 2,100 RCU budget)"),
        "{text}"
    );
    assert!(staleness < text.find("DAX").expect(&text), "{text}");

    let eventual = plan(&input.clone().consistency(Consistency::Eventual)).unwrap();
    assert_eq!(eventual.read_units_per_shard_query, 12.5);
    assert_eq!(eventual.read_units_per_shard, 150_000.0);

    // A handful of reads stays inside the budget: no warning.
    let calm = plan(&input.scatter_reads_per_sec(50.0)).unwrap();
    assert_eq!(calm.read_units_per_shard, 1_250.0);
    assert!(calm.warnings.is_empty(), "{:?}", calm.warnings);
}

#[test]
fn reads_between_budget_and_limit_warn_without_throttling() {
    let p = plan(&PlanInput::new(100.0, 4_096).scatter_reads_per_sec(2_500.0)).unwrap();
    assert_eq!(p.read_units_per_shard, 2_500.0);
    let w = p
        .warnings
        .iter()
        .find(|w| matches!(w, PlanWarning::ReadsOverBudget { .. }))
        .expect("over the 2,100 budget");
    assert!(w.to_string().contains("no headroom"), "{w}");
    // One 4 KB query (1 RCU per shard) a second: 2,100 processes fit at S = 1 s.
    assert!(
        w.to_string()
            .contains("2,100 processes fit the 2,100 RCU budget"),
        "{w}"
    );
}

#[test]
fn point_reads_can_drive_n() {
    // Writes need 1 shard; 20,000 strongly consistent 1 KB point reads need ceil(20,000 / 2,100).
    let p = plan(&PlanInput::new(100.0, 1_024).point_reads_per_sec(20_000.0)).unwrap();
    assert_eq!(p.base.n, 10);
    assert_eq!(p.read_units_per_shard, 2_000.0);
    assert!(p
        .base
        .lines
        .iter()
        .any(|l| l == "n = max(writes 1, point reads 10) = 10"));
    let eventual = plan(
        &PlanInput::new(100.0, 1_024)
            .point_reads_per_sec(20_000.0)
            .consistency(Consistency::Eventual),
    )
    .unwrap();
    assert_eq!(eventual.base.n, 5);
}

#[test]
fn headroom_zero_and_custom_limits() {
    assert_eq!(n_for(PlanInput::new(7_000.0, 1_024).headroom(0.0)), 7);
    assert_eq!(
        n_for(
            PlanInput::new(7_000.0, 1_024)
                .headroom(0.0)
                .limits(500.0, 1_500.0)
        ),
        14
    );
    // No traffic at all: still one key.
    assert_eq!(n_for(PlanInput::new(0.0, 1)), 1);
}

#[test]
fn ceil_is_exact_on_whole_ratios_and_rounds_up_otherwise() {
    assert_eq!(shards_for(7_000.0, 1_000.0 * (1.0 - 0.3)), 10);
    assert_eq!(shards_for(7_001.0, 700.0), 11);
    assert_eq!(shards_for(50_000.0, 1_000.0 * (1.0 - 1.0 / 3.0)), 75);
    assert_eq!(shards_for(0.0, 700.0), 1);
    assert_eq!(shards_for(1e300, 700.0), u64::MAX);
}

#[test]
fn bad_input_is_an_error_naming_the_field() {
    let cases: Vec<(PlanInput, &str)> = vec![
        (PlanInput::new(-1.0, 1_024), "peak_writes_per_sec"),
        (PlanInput::new(f64::NAN, 1_024), "peak_writes_per_sec"),
        (PlanInput::new(f64::INFINITY, 1_024), "peak_writes_per_sec"),
        (
            PlanInput::new(1.0, 1_024).scatter_reads_per_sec(-5.0),
            "scatter_reads_per_sec",
        ),
        (
            PlanInput::new(1.0, 1_024).point_reads_per_sec(f64::NAN),
            "point_reads_per_sec",
        ),
        (PlanInput::new(1.0, 1_024).headroom(1.0), "headroom"),
        (PlanInput::new(1.0, 1_024).headroom(-0.1), "headroom"),
        (PlanInput::new(1.0, 1_024).headroom(f64::NAN), "headroom"),
        (
            PlanInput::new(1.0, 1_024).limits(0.0, 3_000.0),
            "limits.write_units_per_second",
        ),
        (
            PlanInput::new(1.0, 1_024).limits(1_000.0, f64::INFINITY),
            "limits.read_units_per_second",
        ),
        (
            PlanInput::new(1.0, 1_024).gsi(GsiLoad::new("g", 1.5)),
            "gsis[g].write_fraction",
        ),
        (
            PlanInput::new(1.0, 1_024).gsi(GsiLoad::new("g", 1.0).hottest_key_share(-0.5)),
            "gsis[g].hottest_key_share",
        ),
    ];
    for (input, field) in cases {
        match plan(&input) {
            Err(PlanError::InvalidNumber { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: expected InvalidNumber, got {other:?}"),
        }
    }
    let e = plan(&PlanInput::new(1.0, 0)).unwrap_err();
    assert_eq!(
        e,
        PlanError::InvalidItemSize {
            field: "item_bytes".into(),
            bytes: 0
        }
    );
    assert!(e.to_string().contains("409600"), "{e}");
    let e = plan(&PlanInput::new(1.0, 400 * 1024 + 1)).unwrap_err();
    assert!(matches!(e, PlanError::InvalidItemSize { .. }));
    assert!(plan(&PlanInput::new(1.0, 400 * 1024)).is_ok());
    let e =
        plan(&PlanInput::new(1.0, 1).gsi(GsiLoad::new("g", 1.0).projected_bytes(0))).unwrap_err();
    assert!(
        matches!(e, PlanError::InvalidItemSize { ref field, .. } if field == "gsis[g].item_bytes")
    );
    assert_eq!(
        plan(&PlanInput::new(1.0, 1).items_per_read(0)).unwrap_err(),
        PlanError::NoItemsPerRead
    );
    assert_eq!(
        plan(&PlanInput::new(1.0, 1).gsi(GsiLoad::new("", 1.0))).unwrap_err(),
        PlanError::EmptyGsiName
    );
    let e = plan(
        &PlanInput::new(1.0, 1)
            .gsi(GsiLoad::new("gsi1", 1.0))
            .gsi(GsiLoad::new("gsi1", 0.5)),
    )
    .unwrap_err();
    assert_eq!(
        e,
        PlanError::DuplicateGsi {
            name: "gsi1".into()
        }
    );
    assert!(e.to_string().contains("listed twice"));
}
