//! `report --live`: the table's own Contributor Insights rule, read from CloudWatch over the
//! last minutes, fed through the same importer as a saved rule report.
//!
//! DynamoDB names the rules; `DescribeContributorInsights` lists them for a table or a GSI:
//! `...-PKC-...` counts the most accessed partition keys, `...-PKT-...` the most throttled.

use std::time::{Duration, SystemTime};

use aws_sdk_cloudwatch::operation::get_insight_rule_report::GetInsightRuleReportOutput;
use aws_sdk_cloudwatch::primitives::{DateTime, DateTimeFormat};
use serde_json::json;
use sharded::aws_sdk_dynamodb::types::ContributorInsightsStatus;
use sharded::aws_sdk_dynamodb::Client;
use sharded::capacity::{InsightRule, Recording};

use crate::Failure;

/// Contributor Insights keeps one-minute datapoints: the finest period a report can ask for.
const PERIOD_SECONDS: i32 = 60;
/// The most contributors `GetInsightRuleReport` returns.
const MAX_CONTRIBUTORS: i32 = 100;

/// Where the sample comes from and what it counts.
pub(crate) struct LiveSample<'a> {
    pub(crate) table: &'a str,
    pub(crate) index: Option<&'a str>,
    pub(crate) rule: InsightRule,
    pub(crate) minutes: u32,
    pub(crate) shards: Option<u32>,
}

/// The recording of the last `minutes` of the rule `sample.rule` reads, or a failure that
/// says what to enable.
pub(crate) async fn recording(
    dynamodb: &Client,
    cloudwatch: &aws_sdk_cloudwatch::Client,
    sample: &LiveSample<'_>,
) -> Result<Recording, Failure> {
    let rule_name = rule_name(dynamodb, sample).await?;
    let end = SystemTime::now();
    let start = end - Duration::from_secs(u64::from(sample.minutes) * 60);
    let report = cloudwatch
        .get_insight_rule_report()
        .rule_name(&rule_name)
        .start_time(DateTime::from(start))
        .end_time(DateTime::from(end))
        .period(PERIOD_SECONDS)
        .max_contributor_count(MAX_CONTRIBUTORS)
        .send()
        .await
        .map_err(|e| {
            Failure::failed(format!(
                "CloudWatch GetInsightRuleReport of `{rule_name}`: {}",
                aws_sdk_cloudwatch::error::DisplayErrorContext(e)
            ))
        })?;
    Recording::from_contributor_insights(
        &report_json(&report),
        sample.index,
        sample.rule,
        sample.shards,
    )
    .map_err(|e| Failure::failed(format!("the rule report of `{rule_name}`: {e}")))
}

/// The name of the rule `sample.rule` reads, from `DescribeContributorInsights`.
async fn rule_name(dynamodb: &Client, sample: &LiveSample<'_>) -> Result<String, Failure> {
    use sharded::aws_sdk_dynamodb::error::ProvideErrorMetadata;
    let described = dynamodb
        .describe_contributor_insights()
        .table_name(sample.table)
        .set_index_name(sample.index.map(str::to_owned))
        .send()
        .await
        .map_err(|e| {
            let what = match e.code() {
                Some("UnknownOperationException") => "this endpoint does not implement \
                    Contributor Insights (DynamoDB Local does not): a live sample needs the \
                    DynamoDB service; report from a recording with --recording instead"
                    .to_owned(),
                Some("ResourceNotFoundException") => {
                    "no such table or index (check --table, --index and --region)".to_owned()
                }
                _ => sharded::aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string(),
            };
            Failure::failed(format!(
                "DescribeContributorInsights of {}: {what}",
                on(sample)
            ))
        })?;
    choose_rule(
        sample,
        described.contributor_insights_status(),
        described.contributor_insights_rule_list(),
    )
}

/// "table `t`" or "index `i` of table `t`", for messages.
fn on(sample: &LiveSample<'_>) -> String {
    match sample.index {
        Some(index) => format!("index `{index}` of table `{}`", sample.table),
        None => format!("table `{}`", sample.table),
    }
}

/// The rule of `rules` that `sample.rule` reads: DynamoDB names the most-accessed keys' rule
/// `...-PKC-...` and the most-throttled keys' `...-PKT-...`.
fn choose_rule(
    sample: &LiveSample<'_>,
    status: Option<&ContributorInsightsStatus>,
    rules: &[String],
) -> Result<String, Failure> {
    if status != Some(&ContributorInsightsStatus::Enabled) {
        let index = sample
            .index
            .map(|i| format!(" --index-name {i}"))
            .unwrap_or_default();
        return Err(Failure::failed(format!(
            "Contributor Insights is {} on {}, so there is no live sample to read: enable it \
             with `aws dynamodb update-contributor-insights --table-name {}{index} \
             --contributor-insights-action ENABLE`, let it collect a few minutes of traffic, \
             and run this again (or report from a recording with --recording)",
            status.map_or("not set up", |s| s.as_str()),
            on(sample),
            sample.table,
        )));
    }
    let wanted = if sample.rule == InsightRule::Throttled {
        "-PKT-"
    } else {
        "-PKC-"
    };
    rules
        .iter()
        .find(|name| name.contains(wanted))
        .cloned()
        .ok_or_else(|| {
            Failure::failed(format!(
                "{} has no Contributor Insights rule with `{wanted}` in its name (it has: {}); \
                 in the mode that records throttled keys only, use --rule throttled",
                on(sample),
                if rules.is_empty() {
                    "none".to_owned()
                } else {
                    rules.join(", ")
                }
            ))
        })
}

/// The rule report in the JSON form `aws cloudwatch get-insight-rule-report` prints (with the
/// period added), which [`Recording::from_contributor_insights`] reads: one importer for the
/// saved and the live report.
fn report_json(report: &GetInsightRuleReportOutput) -> String {
    let contributors: Vec<_> = report
        .contributors()
        .iter()
        .map(|contributor| {
            let datapoints: Vec<_> = contributor
                .datapoints()
                .iter()
                .filter_map(|point| {
                    // A datapoint always has both; one without is nothing to count.
                    let timestamp = point.timestamp()?.fmt(DateTimeFormat::DateTime).ok()?;
                    Some(json!({
                        "Timestamp": timestamp,
                        "ApproximateValue": point.approximate_value()?,
                    }))
                })
                .collect();
            json!({ "Keys": contributor.keys(), "Datapoints": datapoints })
        })
        .collect();
    json!({ "Contributors": contributors, "Period": PERIOD_SECONDS }).to_string()
}

#[cfg(test)]
mod tests {
    fn sample(rule: InsightRule, index: Option<&str>) -> LiveSample<'_> {
        LiveSample {
            table: "games",
            index,
            rule,
            minutes: 15,
            shards: Some(10),
        }
    }

    /// The accessed-keys rule for units, the throttled-keys rule for throttles; a rule that
    /// is missing or insights that are off are named with the fix.
    #[test]
    fn the_rule_is_chosen_by_what_it_counts_and_a_disabled_table_names_the_fix() {
        let rules = vec![
            "DynamoDBContributorInsights-PKC-games-1795000000000".to_owned(),
            "DynamoDBContributorInsights-PKT-games-1795000000000".to_owned(),
            "DynamoDBContributorInsights-SKC-games-1795000000000".to_owned(),
        ];
        let enabled = Some(&ContributorInsightsStatus::Enabled);
        let writes = sample(InsightRule::AccessedWrites, None);
        assert_eq!(choose_rule(&writes, enabled, &rules).unwrap(), rules[0]);
        let throttles = sample(InsightRule::Throttled, None);
        assert_eq!(choose_rule(&throttles, enabled, &rules).unwrap(), rules[1]);

        let only_throttled = &rules[1..2];
        let missing = choose_rule(&writes, enabled, only_throttled).unwrap_err();
        assert!(
            missing.message.contains("--rule throttled"),
            "{}",
            missing.message
        );

        let on_index = sample(InsightRule::AccessedReads, Some("gsi1"));
        let disabled = choose_rule(
            &on_index,
            Some(&ContributorInsightsStatus::Disabled),
            &rules,
        )
        .unwrap_err();
        assert!(
            disabled.message.contains(
                "--table-name games --index-name gsi1 --contributor-insights-action ENABLE"
            ),
            "{}",
            disabled.message
        );
        assert!(
            disabled.message.contains("DISABLED on index `gsi1`"),
            "{}",
            disabled.message
        );
    }

    use aws_sdk_cloudwatch::types::{InsightRuleContributor, InsightRuleContributorDatapoint};
    use sharded::capacity::PerKeyLimits;

    use super::*;

    fn point(minute: i64, value: f64) -> InsightRuleContributorDatapoint {
        InsightRuleContributorDatapoint::builder()
            .timestamp(DateTime::from_secs(1_795_000_000 + minute * 60))
            .approximate_value(value)
            .build()
    }

    /// What CloudWatch answers reaches the report unchanged: keys joined, each minute's units
    /// spread over its seconds, shards rolled up.
    #[test]
    fn a_rule_report_from_cloudwatch_becomes_the_same_recording_as_its_saved_json() {
        let output = GetInsightRuleReportOutput::builder()
            .contributors(
                InsightRuleContributor::builder()
                    .keys("GAME#g1#3")
                    .approximate_aggregate_value(90_000.0)
                    .datapoints(point(0, 60_000.0))
                    .datapoints(point(1, 30_000.0))
                    .build(),
            )
            .contributors(
                InsightRuleContributor::builder()
                    .keys("GAME#g1#4")
                    .approximate_aggregate_value(6_000.0)
                    .datapoints(point(0, 6_000.0))
                    .build(),
            )
            .build();
        let json = report_json(&output);
        let recording = Recording::from_contributor_insights(
            &json,
            None,
            InsightRule::AccessedWrites,
            Some(10),
        )
        .unwrap();
        let report = recording.report(PerKeyLimits::DYNAMODB);
        let key = report
            .logical_key(None, "GAME#g1")
            .expect("the shards roll up");
        // 60,000 + 6,000 units in the first minute: 1,100 a second at the logical key.
        assert_eq!(key.write.peak_units_per_sec, 1_100.0, "{json}");
        // The hottest shard: 1,000 a second in its first minute.
        assert_eq!(key.write.hottest_key_peak_units_per_sec, 1_000.0);
        // Saved JSON as the AWS CLI prints it reads the same.
        let saved = r#"{"Contributors":[
            {"Keys":["GAME#g1#3"],"Datapoints":[
                {"Timestamp":"2026-11-18T11:06:40Z","ApproximateValue":60000.0},
                {"Timestamp":"2026-11-18T11:07:40Z","ApproximateValue":30000.0}]},
            {"Keys":["GAME#g1#4"],"Datapoints":[
                {"Timestamp":"2026-11-18T11:06:40Z","ApproximateValue":6000.0}]}]}"#;
        let from_saved = Recording::from_contributor_insights(
            saved,
            None,
            InsightRule::AccessedWrites,
            Some(10),
        )
        .unwrap();
        assert_eq!(from_saved.to_json(), recording.to_json());
    }
}
