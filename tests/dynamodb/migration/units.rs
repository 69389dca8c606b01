//! A migration cut into units (`Migration::plan`, `unit`, `status`, `forget`): units run out
//! of order, a unit killed part-way and run again (resuming from its record in the table), a
//! unit run twice, the records forgotten once it is over, a key's unit, and what is refused.

use std::sync::Arc;

use sharded::migrate::{Migrate, MigrateError, MigrationRefusal, Plan, Unit, UnitState};
use sharded::Repo;

use super::{assert_settled_scores, initial, seed_legacy, Adopted, GAME};
use crate::support::{raw_scan, repo};

/// The unit records of the table: items whose partition key starts with the records' prefix.
async fn records(repo: &Repo<Adopted>) -> usize {
    raw_scan(repo.client(), repo.table())
        .await
        .iter()
        .filter(|item| {
            item.get("pk")
                .and_then(|v| v.as_s().ok())
                .is_some_and(|pk| pk.starts_with("_sharded#migration#Score#"))
        })
        .count()
}

async fn plan(repo: &Repo<Adopted>, total: u32, units: u32) -> Plan {
    repo.migrate()
        .segments(total)
        .write_units_per_second(2_000.0)
        .plan(units, units.min(2))
        .await
        .expect("a plan")
}

#[tokio::test]
async fn units_run_out_of_order_move_everything_once_and_a_second_run_changes_nothing() {
    let repo: Repo<Adopted> = repo("units-order").await;
    let scores = initial(160);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    for other in ["g2", "g3", "g4"] {
        seed_legacy(repo.client(), repo.table(), other, &initial(20)).await;
    }
    let plan = plan(&repo, 8, 4).await;
    assert_eq!(plan.units.len(), 4);
    assert_eq!(plan.unit_write_units_per_second(), 1_000.0);
    let estimate = plan.estimate.expect("DescribeTable gave an estimate");
    assert!(estimate.write_units_per_move >= 3.0, "{estimate:?}");

    let status = repo.migrate().status(&plan).await.unwrap();
    assert_eq!(status.count(|s| s == UnitState::NotStarted), 4);
    assert!(!status.is_complete());

    // Out of order: the last unit first, the second last.
    let mut moved = 0;
    for i in [3, 0, 2, 1] {
        let report = repo
            .migrate()
            .unit(plan.units[i].clone())
            .write_units_per_second(plan.unit_write_units_per_second())
            .run()
            .await
            .unwrap_or_else(|e| panic!("unit {}: {e}", plan.units[i]));
        assert!(report.checkpoint.is_complete());
        moved += report.progress.moved;
        let status = repo.migrate().status(&plan).await.unwrap();
        assert_eq!(status.units[i].state, UnitState::Done, "{status:?}");
        // The record holds every write unit the run reported, its own last write included.
        assert_eq!(
            status.units[i].progress.unwrap().write_units,
            report.progress.write_units,
            "unit {}",
            plan.units[i]
        );
    }
    // Every score of every game moved once: the units' segments cover the table once.
    assert_eq!(moved, 160 + 3 * 20);
    let status = repo.migrate().status(&plan).await.unwrap();
    assert!(status.is_complete(), "{status:?}");
    assert_eq!(status.total().moved, moved);
    assert!(status.total().write_units > 0.0);
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    assert_eq!(records(&repo).await, 4);
    assert_settled_scores(&repo, &scores).await;

    // Run twice: a done unit reads nothing and leaves its record as it was.
    let before = raw_scan(repo.client(), repo.table()).await;
    for unit in &plan.units {
        let again = repo.migrate().unit(unit.clone()).run().await.unwrap();
        assert_eq!(again.progress.scanned, 0, "{unit}: {}", again.progress);
        assert_eq!(again.progress.write_units, 0.0);
    }
    let after = raw_scan(repo.client(), repo.table()).await;
    assert_eq!(before.len(), after.len());
    assert!(
        before.iter().all(|item| after.contains(item)),
        "nothing changed"
    );
    // From the start: read again, nothing to move.
    let again = repo
        .migrate()
        .unit(plan.units[1].clone())
        .from_start()
        .run()
        .await
        .unwrap();
    assert!(again.progress.scanned > 0);
    assert_eq!(again.progress.moved, 0, "{}", again.progress);
    let status = repo.migrate().status(&plan).await.unwrap();
    assert_eq!(status.units[1].progress.map(|p| p.runs), Some(2));
    assert_settled_scores(&repo, &scores).await;
}

#[tokio::test]
async fn a_unit_killed_part_way_resumes_from_its_record() {
    let repo: Repo<Adopted> = repo("units-kill").await;
    let scores = initial(300);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    // One segment in one unit, so the whole game is the unit's.
    let plan = plan(&repo, 1, 1).await;
    let unit = plan.units[0].clone();
    let kill = Arc::new(tokio::sync::Notify::new());
    let killer = kill.clone();
    let first = repo
        .migrate()
        .unit(unit.clone())
        .page_size(10)
        .concurrency(2)
        // Slow enough that records (every second) come before the kill.
        .write_units_per_second(300.0)
        .on_progress(move |p| {
            if p.moved >= 120 {
                killer.notify_one();
            }
        })
        .run();
    tokio::select! {
        result = first => panic!("the unit finished before it was killed: {result:?}"),
        () = kill.notified() => {}
    }
    let status = repo.migrate().status(&plan).await.unwrap();
    assert_eq!(status.units[0].state, UnitState::Started, "{status:?}");
    let killed = status.units[0].progress.expect("a record");
    let recorded = killed.moved;
    assert!(recorded > 0 && recorded < 300, "recorded {recorded}");

    // A started unit's record is where it resumes: forget refuses, and deletes nothing.
    match repo.migrate().forget(&plan).await {
        Err(MigrateError::Refused(MigrationRefusal::UnitNotDone { unit: u, state })) => {
            assert_eq!((u, state), (unit.to_string(), "started"));
        }
        other => panic!("forget of a started unit: {other:?}"),
    }
    assert_eq!(records(&repo).await, 1);

    let resumed = repo
        .migrate()
        .unit(unit.clone())
        .page_size(10)
        .run()
        .await
        .unwrap();
    assert!(
        resumed.progress.moved < 300 && resumed.progress.scanned < 300,
        "resumed from the record, not from the start: {}",
        resumed.progress
    );
    let status = repo.migrate().status(&plan).await.unwrap();
    assert!(status.is_complete(), "{status:?}");
    let p = status.units[0].progress.unwrap();
    assert_eq!(p.runs, 2);
    // The record adds the runs up: what the killed run recorded, and the run again's moves
    // (items the killed run moved after its last record are found in place, not moved).
    assert!(
        p.moved > recorded && p.moved <= 300 && p.moved == recorded + resumed.progress.moved,
        "{p:?}, recorded {recorded} before the kill, {} moved after",
        resumed.progress.moved
    );
    // And every write unit: the killed run's as far as it recorded, and all of the run again's.
    assert_eq!(
        p.write_units,
        killed.write_units + resumed.progress.write_units
    );
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    assert_settled_scores(&repo, &scores).await;

    // Over: forget deletes the record, and only it; again, there is nothing to delete.
    let items = raw_scan(repo.client(), repo.table()).await.len();
    assert_eq!(repo.migrate().forget(&plan).await.unwrap(), 1);
    assert_eq!(records(&repo).await, 0);
    assert_eq!(raw_scan(repo.client(), repo.table()).await.len(), items - 1);
    let status = repo.migrate().status(&plan).await.unwrap();
    assert_eq!(status.units[0].state, UnitState::NotStarted);
    assert_eq!(repo.migrate().forget(&plan).await.unwrap(), 0);
    assert_settled_scores(&repo, &scores).await;
}

#[tokio::test]
async fn a_run_superseded_by_a_later_run_of_its_unit_stops_and_leaves_that_runs_record() {
    let repo: Repo<Adopted> = repo("units-superseded").await;
    let scores = initial(300);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    let plan = plan(&repo, 1, 1).await;
    let unit = plan.units[0].clone();
    let halfway = Arc::new(tokio::sync::Notify::new());
    let notifier = halfway.clone();
    // The first run is slow (records every second come well before its end) and keeps going
    // while a second run of the same unit starts from its record and finishes.
    let first = repo
        .migrate()
        .unit(unit.clone())
        .page_size(10)
        .write_units_per_second(150.0)
        .on_progress(move |p| {
            if p.moved >= 90 {
                notifier.notify_one();
            }
        })
        .run();
    let second = async {
        halfway.notified().await;
        let status = repo.migrate().status(&plan).await.unwrap();
        assert_eq!(status.units[0].state, UnitState::Started, "{status:?}");
        assert_eq!(status.units[0].progress.map(|p| p.runs), Some(1));
        repo.migrate().unit(unit.clone()).page_size(10).run().await
    };
    let (first, second) = tokio::join!(first, second);
    let second = second.expect("the second run finishes");
    match first {
        Err(MigrateError::Superseded {
            unit: u,
            this_run,
            newer_run,
            report,
        }) => {
            assert_eq!((u, this_run, newer_run), (unit.to_string(), 1, 2));
            assert!(report.progress.moved >= 90, "{}", report.progress);
        }
        other => panic!("the earlier run of the unit went on: {other:?}"),
    }
    // The record is the later run's, complete: the earlier run's writes after it started
    // (its checkpoints further back) did not replace it.
    let status = repo.migrate().status(&plan).await.unwrap();
    assert!(status.is_complete(), "{status:?}");
    let p = status.units[0].progress.unwrap();
    assert_eq!(p.runs, 2);
    assert!(p.moved >= second.progress.moved && p.moved <= 300, "{p:?}");
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    assert_settled_scores(&repo, &scores).await;
    assert_eq!(records(&repo).await, 1);
}

/// Two runs of one unit started from the same record (an orchestrator's retry racing its
/// first attempt, two pods given one index): one claims the run's number and goes on, the
/// other stops with `Superseded`; the unit ends done, every item moved once.
#[tokio::test]
async fn of_two_runs_of_a_unit_started_together_one_goes_on() {
    let repo: Repo<Adopted> = repo("units-twins").await;
    let scores = initial(200);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    let plan = plan(&repo, 1, 1).await;
    let unit = plan.units[0].clone();
    let run = || repo.migrate().unit(unit.clone()).page_size(10).run();
    let (a, b) = tokio::join!(run(), run());
    let (done, stopped) = match (a, b) {
        (Ok(done), Err(stopped)) | (Err(stopped), Ok(done)) => (done, stopped),
        other => panic!("exactly one run goes on: {other:?}"),
    };
    let MigrateError::Superseded {
        this_run,
        newer_run,
        report,
        ..
    } = stopped
    else {
        panic!("the other run stops as superseded: {stopped:?}");
    };
    assert!(newer_run >= this_run, "{this_run} {newer_run}");
    if newer_run == this_run {
        assert_eq!(
            report.progress.moved, 0,
            "a lost claim stops before any move"
        );
    }
    let status = repo.migrate().status(&plan).await.unwrap();
    assert!(status.is_complete(), "{status:?}");
    assert_eq!(status.units[0].progress.map(|p| p.runs), Some(newer_run));
    assert!(done.progress.moved > 0, "{}", done.progress);
    assert_eq!(repo.migration_remaining().await.unwrap(), 0);
    assert_settled_scores(&repo, &scores).await;
}

#[tokio::test]
async fn a_key_unit_moves_one_key_and_records_it() {
    let repo: Repo<Adopted> = repo("units-key").await;
    let scores = initial(40);
    seed_legacy(repo.client(), repo.table(), GAME, &scores).await;
    seed_legacy(repo.client(), repo.table(), "g2", &initial(10)).await;
    let unit = Unit::key(Adopted::pk_partitions(GAME).unwrap()).unwrap();
    assert_eq!(unit.to_string(), "key:GAME#g1");
    let report = repo.migrate().unit(unit.clone()).run().await.unwrap();
    assert_eq!(report.progress.moved, 40);
    // g2 is another key's: still at its previous place.
    assert_eq!(repo.migration_remaining().await.unwrap(), 10);
    let again = repo.migrate().unit(unit).run().await.unwrap();
    assert_eq!(again.progress.scanned, 0);
    assert_eq!(records(&repo).await, 1);
    assert_settled_scores(&repo, &scores).await;
}

#[tokio::test]
async fn what_a_unit_cannot_run_is_refused_before_any_request() {
    let repo: Repo<Adopted> = repo("units-refused").await;
    fn refused<T: std::fmt::Debug>(result: Result<T, MigrateError>) -> MigrationRefusal {
        match result {
            Err(MigrateError::Refused(why)) => why,
            other => panic!("not refused: {other:?}"),
        }
    }
    let unit: Unit = "0..2/8".parse().unwrap();
    let why = refused(repo.migrate().unit(unit.clone()).segments(4).run().await);
    assert!(
        matches!(&why, MigrationRefusal::UnitSegments { asked: 4, total: 8, unit: u } if *u == unit.to_string()),
        "{why}"
    );
    assert!(why.to_string().contains("8 segments"), "{why}");
    let why = refused(
        repo.migrate()
            .unit(unit)
            .only(Adopted::pk_partitions(GAME).unwrap())
            .run()
            .await,
    );
    assert!(
        matches!(why, MigrationRefusal::UnitWithOnly { .. }),
        "{why}"
    );
    let why = refused(repo.migrate().segments(4).plan(5, 1).await);
    assert_eq!(
        why,
        MigrationRefusal::Units {
            units: 5,
            segments: 4
        }
    );
    let why = refused(repo.migrate().segments(4).plan(2, 3).await);
    assert_eq!(
        why,
        MigrationRefusal::Workers {
            workers: 3,
            units: 2
        }
    );
    let why = refused(repo.migrate().segments(0).plan(1, 1).await);
    assert!(
        matches!(why, MigrationRefusal::Segments { segments: 0, .. }),
        "{why}"
    );
    // A plan of another table is not this one's status.
    let other = Plan::new("elsewhere", "Score", "L", 4, 2, 1, 100.0).unwrap();
    let why = refused(repo.migrate().status(&other).await);
    assert!(
        matches!(&why, MigrationRefusal::PlanOfOtherTable { plan_table, .. } if plan_table == "elsewhere"),
        "{why}"
    );
    // Nothing was written: no record.
    assert_eq!(records(&repo).await, 0);
}
