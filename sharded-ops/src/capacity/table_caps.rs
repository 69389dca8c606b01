//! What a table can take at once, whatever `n` promises: its warm throughput, its on-demand
//! maximum, its provisioned capacity. Read from `DescribeTable`, compared with a load by the
//! hot-key report and the planner, which then name the `UpdateTable` that lifts the cap.

use aws_sdk_dynamodb::types::BillingMode;
use aws_sdk_dynamodb::Client;

use crate::capacity::format::fmt_num;
use sharded_runtime::Error;

/// A table's capacity caps, as `DescribeTable` reports them (each `None` when not set).
///
/// Sharding lifts the per-key limit; these cap the whole table. A table created on demand is
/// warm for 4,000 write and 12,000 read units/s until traffic or an `UpdateTable` warms it
/// further, and an on-demand maximum set on it throttles everything above, sharded or not.
///
/// ```
/// use sharded::capacity::TableCaps;
/// let caps = TableCaps::new("scores").warm(4_000.0, 12_000.0).on_demand_max(Some(5_000.0), None);
/// assert!(caps.gap(7_000.0, 0.0).unwrap().contains("--warm-throughput WriteUnitsPerSecond=7000"));
/// assert!(caps.gap(3_000.0, 0.0).is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TableCaps {
    /// The table's name, for the commands the advice prints.
    pub table: String,
    /// `true` for on demand (`PAY_PER_REQUEST`), `false` for provisioned, `None` unknown.
    pub on_demand: Option<bool>,
    /// Warm throughput: write units/s the table takes at once.
    pub warm_write_units_per_sec: Option<f64>,
    /// Warm throughput: read units/s the table takes at once.
    pub warm_read_units_per_sec: Option<f64>,
    /// The on-demand maximum for writes (request units/s).
    pub max_write_units_per_sec: Option<f64>,
    /// The on-demand maximum for reads (request units/s).
    pub max_read_units_per_sec: Option<f64>,
    /// Provisioned write capacity units.
    pub provisioned_write_units_per_sec: Option<f64>,
    /// Provisioned read capacity units.
    pub provisioned_read_units_per_sec: Option<f64>,
}

impl TableCaps {
    /// No caps known for `table`: add them with the setters, or read them with
    /// [`describe`](Self::describe).
    pub fn new(table: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            on_demand: None,
            warm_write_units_per_sec: None,
            warm_read_units_per_sec: None,
            max_write_units_per_sec: None,
            max_read_units_per_sec: None,
            provisioned_write_units_per_sec: None,
            provisioned_read_units_per_sec: None,
        }
    }

    /// Sets the warm throughput (write, read units/s).
    pub fn warm(mut self, write: f64, read: f64) -> Self {
        self.warm_write_units_per_sec = positive(write);
        self.warm_read_units_per_sec = positive(read);
        self
    }

    /// Sets the on-demand maximum (write, read request units/s); `None` is no maximum.
    pub fn on_demand_max(mut self, write: Option<f64>, read: Option<f64>) -> Self {
        self.on_demand = Some(true);
        self.max_write_units_per_sec = write.and_then(positive);
        self.max_read_units_per_sec = read.and_then(positive);
        self
    }

    /// Sets provisioned capacity (write, read units/s).
    pub fn provisioned(mut self, write: f64, read: f64) -> Self {
        self.on_demand = Some(false);
        self.provisioned_write_units_per_sec = positive(write);
        self.provisioned_read_units_per_sec = positive(read);
        self
    }

    /// Reads the caps of `table` with one `DescribeTable`.
    ///
    /// ```no_run
    /// # async fn demo(client: sharded::aws_sdk_dynamodb::Client) -> Result<(), sharded::Error> {
    /// let caps = sharded::capacity::TableCaps::describe(&client, "scores").await?;
    /// println!("{caps:?}");
    /// # Ok(()) }
    /// ```
    pub async fn describe(client: &Client, table: &str) -> Result<TableCaps, Error> {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| Error::Dynamo {
                operation: "DescribeTable",
                table: table.to_owned(),
                source: Box::new(aws_sdk_dynamodb::Error::from(e)),
            })?;
        let mut caps = TableCaps::new(table);
        let Some(description) = out.table() else {
            return Ok(caps);
        };
        let units = |v: Option<i64>| v.and_then(|v| positive(v as f64));
        caps.on_demand = description
            .billing_mode_summary()
            .and_then(|s| s.billing_mode())
            .map(|mode| *mode == BillingMode::PayPerRequest);
        if let Some(warm) = description.warm_throughput() {
            caps.warm_write_units_per_sec = units(warm.write_units_per_second());
            caps.warm_read_units_per_sec = units(warm.read_units_per_second());
        }
        if let Some(max) = description.on_demand_throughput() {
            caps.max_write_units_per_sec = units(max.max_write_request_units());
            caps.max_read_units_per_sec = units(max.max_read_request_units());
        }
        if caps.on_demand == Some(false) {
            if let Some(provisioned) = description.provisioned_throughput() {
                caps.provisioned_write_units_per_sec = units(provisioned.write_capacity_units());
                caps.provisioned_read_units_per_sec = units(provisioned.read_capacity_units());
            }
        }
        Ok(caps)
    }

    /// Where a load of `write` and `read` units/s exceeds what the table takes at once, with
    /// the AWS CLI command that lifts each cap; `None` when it fits.
    pub fn gap(&self, write: f64, read: f64) -> Option<String> {
        let table = &self.table;
        let mut gaps = Vec::new();
        let mut check = |load: f64, cap: Option<f64>, what: &str, fix: String| {
            if let Some(cap) = cap {
                if load > cap {
                    gaps.push(format!(
                        "{} units/s exceeds the table's {what} of {} units/s: {fix}",
                        fmt_num(load),
                        fmt_num(cap)
                    ));
                }
            }
        };
        let w = load_arg(write);
        let r = load_arg(read);
        check(
            write,
            self.warm_write_units_per_sec,
            "warm write throughput",
            format!("aws dynamodb update-table --table-name {table} --warm-throughput WriteUnitsPerSecond={w}"),
        );
        check(
            read,
            self.warm_read_units_per_sec,
            "warm read throughput",
            format!("aws dynamodb update-table --table-name {table} --warm-throughput ReadUnitsPerSecond={r}"),
        );
        check(
            write,
            self.max_write_units_per_sec,
            "on-demand maximum for writes",
            format!("aws dynamodb update-table --table-name {table} --on-demand-throughput MaxWriteRequestUnits={w}"),
        );
        check(
            read,
            self.max_read_units_per_sec,
            "on-demand maximum for reads",
            format!("aws dynamodb update-table --table-name {table} --on-demand-throughput MaxReadRequestUnits={r}"),
        );
        check(
            write,
            self.provisioned_write_units_per_sec,
            "provisioned write capacity",
            format!("aws dynamodb update-table --table-name {table} --provisioned-throughput ReadCapacityUnits=<read>,WriteCapacityUnits={w}"),
        );
        check(
            read,
            self.provisioned_read_units_per_sec,
            "provisioned read capacity",
            format!("aws dynamodb update-table --table-name {table} --provisioned-throughput ReadCapacityUnits={r},WriteCapacityUnits=<write>"),
        );
        (!gaps.is_empty()).then(|| gaps.join("; "))
    }
}

fn positive(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

/// A load as a whole number of units for a command line, rounded up.
fn load_arg(load: f64) -> u64 {
    if load.is_finite() && load > 0.0 {
        load.ceil() as u64
    } else {
        0
    }
}
