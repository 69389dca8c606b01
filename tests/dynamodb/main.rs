//! Integration tests on a local DynamoDB over HTTP: the embedded one by default, AWS's DynamoDB
//! Local (the reference) with `SHARDED_TEST_BACKEND=dynamodb-local`, both chosen by
//! `sharded_testkit::backend`. One test binary, so one backend per `cargo test`; each test uses
//! its own table, so tests run in parallel. SDK-level fakes (`sharded_testkit::faults`) only
//! inject what no local DynamoDB can show: a failing or throttled shard, latency, request
//! counts. Where the backends differ from DynamoDB, `backends` states it and the test that
//! needs the behaviour skips where it is lacking, saying so.

mod entities;
mod support;

mod adoption;
mod backends;
mod batch;
mod bounds;
mod buckets;
mod collection;
mod counter;
mod emulator_limits;
mod entity_guard;
mod fan_out;
mod filter;
mod hot_reads;
mod interop;
mod key_size;
mod keys;
mod layout;
mod layout_policy;
mod lifecycle;
mod limits;
mod lost_responses;
mod migration;
mod model;
mod move_marks;
mod multi_attribute_gsi;
mod ops_cli;
mod paging;
mod per_key;
mod per_key_report;
mod projection;
mod query;
mod query_sort_key;
mod read_ahead;
mod read_path;
mod repo;
mod retries;
mod scan;
mod sealed_cursors;
mod streams;
mod table_caps;
mod telemetry;
mod transaction;
mod transition_first_requests;
mod transition_reads;
mod transition_writes;
mod update;
