#!/usr/bin/env bash
# The backends side by side (BENCHMARKS.md, "The backends"): for the embedded backend and
# DynamoDB Local, alternating, ROUNDS times: start-up and the server's resident memory
# (benches/backends.rs), the wall time of `cargo run --example leaderboard` and of the DynamoDB
# suite (`cargo test --test dynamodb`), all built beforehand in the dev profile (as the
# README's commands build), so only running is timed.
#
#   bash benches/backends.sh            # ROUNDS=2
#   ROUNDS=1 bash benches/backends.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${ROUNDS:-2}"
target="${CARGO_TARGET_DIR:-target}"
log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT

cargo build --quiet --example leaderboard
cargo test --quiet --test dynamodb --no-run 2>/dev/null
cargo bench --quiet --profile dev --bench backends --no-run 2>/dev/null

seconds() { # runs "$@" quietly, prints its wall time in seconds; its output is kept in $log
    local start end
    start="$(date +%s.%N)"
    "$@" >"$log/out" 2>&1 || { cat "$log/out" >&2; return 1; }
    end="$(date +%s.%N)"
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}

printf '%-15s %-5s %s\n' backend round "start-up and memory | leaderboard s | DynamoDB suite s (passed, skipped lines)"
for round in $(seq 1 "$rounds"); do
    for backend in embedded dynamodb-local; do
        export SHARDED_TEST_BACKEND="$backend"
        probe="$(cargo bench --quiet --profile dev --bench backends 2>/dev/null | grep '^backend=')"
        example="$(seconds "$target/debug/examples/leaderboard")"
        suite="$(seconds cargo test --quiet --test dynamodb)"
        passed="$(grep -o '[0-9]* passed' "$log/out" | tail -1)"
        skipped="$(grep -o 'sharded-testkit: skipped' "$log/out" | wc -l)"
        printf '%-15s %-5s %s | %s | %s (%s, %s skipped)\n' \
            "$backend" "$round" "$probe" "$example" "$suite" "$passed" "$skipped"
    done
done
