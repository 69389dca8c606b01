//! Input validation of the planner: every rate, fraction, size and name checked, each refusal
//! saying what to give instead.

use std::collections::HashSet;

use crate::capacity::planner::{PlanError, PlanInput};
use sharded_runtime::capacity::ITEM_SIZE_LIMIT;

/// Checks `input`: the first problem found, as a [`PlanError`] naming its field.
pub(super) fn validate(input: &PlanInput) -> Result<(), PlanError> {
    fn rate(field: &str, value: f64) -> Result<(), PlanError> {
        if value.is_finite() && value >= 0.0 {
            Ok(())
        } else {
            Err(PlanError::InvalidNumber {
                field: field.to_owned(),
                value,
                expected: "a finite rate of 0 or more per second (use the peak you expect)",
            })
        }
    }
    fn fraction(field: String, value: f64) -> Result<(), PlanError> {
        if (0.0..=1.0).contains(&value) {
            Ok(())
        } else {
            Err(PlanError::InvalidNumber {
                field,
                value,
                expected: "a fraction from 0.0 to 1.0 (1.0 = every put)",
            })
        }
    }
    fn size(field: String, bytes: u64) -> Result<(), PlanError> {
        if bytes == 0 || bytes > ITEM_SIZE_LIMIT as u64 {
            Err(PlanError::InvalidItemSize { field, bytes })
        } else {
            Ok(())
        }
    }
    rate("peak_writes_per_sec", input.peak_writes_per_sec)?;
    rate("scatter_reads_per_sec", input.scatter_reads_per_sec)?;
    rate("point_reads_per_sec", input.point_reads_per_sec)?;
    size("item_bytes".to_owned(), input.item_bytes)?;
    if input.items_per_read == 0 {
        return Err(PlanError::NoItemsPerRead);
    }
    if !(0.0..1.0).contains(&input.headroom) {
        return Err(PlanError::InvalidNumber {
            field: "headroom".to_owned(),
            value: input.headroom,
            expected: "a fraction from 0.0 up to (not including) 1.0; 0.3 plans each shard for \
                       70% of the per-key limit",
        });
    }
    for (field, value) in [
        (
            "limits.write_units_per_second",
            input.limits.write_units_per_second,
        ),
        (
            "limits.read_units_per_second",
            input.limits.read_units_per_second,
        ),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return Err(PlanError::InvalidNumber {
                field: field.to_owned(),
                value,
                expected: "a finite number of units per second above 0 (DynamoDB: 1,000 write, \
                           3,000 read)",
            });
        }
    }
    let mut seen = HashSet::new();
    for gsi in &input.gsis {
        if gsi.name.is_empty() {
            return Err(PlanError::EmptyGsiName);
        }
        if !seen.insert(gsi.name.as_str()) {
            return Err(PlanError::DuplicateGsi {
                name: gsi.name.clone(),
            });
        }
        fraction(
            format!("gsis[{}].write_fraction", gsi.name),
            gsi.write_fraction,
        )?;
        fraction(
            format!("gsis[{}].hottest_key_share", gsi.name),
            gsi.hottest_key_share,
        )?;
        if let Some(bytes) = gsi.item_bytes {
            size(format!("gsis[{}].item_bytes", gsi.name), bytes)?;
        }
    }
    Ok(())
}
