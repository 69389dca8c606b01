#!/usr/bin/env bash
# What a service's build pays for the runtime, two commits side by side in one run.
#
# Checks out BEFORE and AFTER (default: the commit before the operator's tools left the
# runtime, and HEAD) into `target/runtime_build/{before,after}` (git worktrees, never committed)
# and measures, building into this workspace's `target/` (so the registry dependencies already
# built there are reused), for each:
#   (a) from clean: `cargo build -p sharded-runtime` after `cargo clean -p sharded-runtime
#       -p sharded-keys` (the two crates of the service's path that are ours), and
#   (b) after an edit: the same build after `touch sharded-runtime/src/lib.rs`,
# each the median of RUNS (default 3), the two commits alternating so both see the machine's
# load; debug, `CARGO_INCREMENTAL=0` as CI builds. "code lines" are the runtime's own (not
# blank, not comments, not `#[cfg(test)]` modules or tests.rs).
#
# Usage: benches/runtime_build/run.sh [BEFORE [AFTER]]      RUNS=5 benches/runtime_build/run.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BEFORE="${1:-6a3f6e6}"
AFTER="${2:-HEAD}"
RUNS="${RUNS:-3}"
WORK="$ROOT/target/runtime_build"
export CARGO_TARGET_DIR="$ROOT/target" CARGO_INCREMENTAL=0
mkdir -p "$WORK"

checkout() { # $1 = side, $2 = commit
    local dir="$WORK/$1"
    if [ -d "$dir" ]; then git -C "$ROOT" worktree remove --force "$dir"; fi
    git -C "$ROOT" worktree add --quiet --detach "$dir" "$2"
}
checkout before "$BEFORE"
checkout after "$AFTER"
trap 'git -C "$ROOT" worktree remove --force "$WORK/before"; git -C "$ROOT" worktree remove --force "$WORK/after"' EXIT

seconds() { # $1 = side, $2 = clean|touch
    local dir="$WORK/$1" start end
    if [ "$2" = clean ]; then
        (cd "$dir" && cargo clean --quiet -p sharded-runtime -p sharded-keys)
    else
        touch "$dir/sharded-runtime/src/lib.rs"
    fi
    start=$(date +%s.%N)
    (cd "$dir" && cargo build --quiet -p sharded-runtime)
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Warm: registry dependencies and both commits' crates built once, not measured.
for side in before after; do (cd "$WORK/$side" && cargo build --quiet -p sharded-runtime); done

declare -A times
# Each side's clean build and its rebuild after a touch run back to back: `cargo clean -p` in
# one worktree also cleans the other's crates of the same names (one target directory), which
# would leave the other side's touch nothing to compare against.
for run in $(seq "$RUNS"); do
    for side in before after; do
        for kind in clean touch; do
            times[$side-$kind]+="$(seconds "$side" "$kind") "
        done
    done
done
lines() { python3 - "$WORK/$1/sharded-runtime/src" <<'PY'
import os, sys
total = 0
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        if not f.endswith(".rs") or f == "tests.rs":
            continue
        skip = depth = 0; pending = block = False
        for line in open(os.path.join(d, f)):
            s = line.strip()
            if skip:
                depth += line.count("{") - line.count("}")
                skip = depth > 0
                continue
            if pending:
                pending = False
                if s.endswith(";") and "mod " in s:
                    continue
                if " mod " in " " + s:
                    depth = line.count("{") - line.count("}"); skip = depth > 0
                    continue
            if s.startswith("#[cfg(test)]"):
                pending = True; continue
            if block:
                block = "*/" not in s; continue
            if s.startswith("/*"):
                block = "*/" not in s; continue
            if s and not s.startswith("//"):
                total += 1
print(total)
PY
}
printf '%-8s %-10s %12s %14s %12s\n' side commit "from clean" "after touch" "code lines"
for side in before after; do
    commit=$(git -C "$WORK/$side" rev-parse --short HEAD)
    clean=$(echo "${times[$side-clean]}" | tr ' ' '\n' | grep . | median)
    touch=$(echo "${times[$side-touch]}" | tr ' ' '\n' | grep . | median)
    printf '%-8s %-10s %11.2fs %13.2fs %12s\n' "$side" "$commit" "$clean" "$touch" "$(lines "$side")"
done
