#!/bin/sh
# Checks that docs/guide/upgrading.md has a row for every name the facade's root exported
# before the facade was organised by task (the `pub use sharded_runtime::{..}` list of
# src/lib.rs at the commit below), and that every new path it names is public now.
set -eu
cd "$(git rev-parse --show-toplevel)"
BEFORE=${1:-56e032e}
guide=docs/guide/upgrading.md
names=$(git show "$BEFORE:src/lib.rs" \
    | sed -n '/^pub use sharded_runtime::{/,/};/p' \
    | tr -d ' \n' | sed 's/^pubusesharded_runtime::{//; s/};$//' | tr ',' ' ')
missing=0
count=0
for name in $names; do
    count=$((count + 1))
    if ! grep -q "^| \`sharded::$name\` |" "$guide"; then
        echo "missing from $guide: sharded::$name"
        missing=1
    fi
done
# Every new path in the table's second column exists in today's facade, runtime or ops modules.
for path in $(sed -n 's/^| `sharded::[A-Za-z_]*` | `\(sharded::[A-Za-z_:]*\)` |.*/\1/p' "$guide"); do
    name=${path##*::}
    module=$(echo "$path" | sed 's/^sharded:://; s/::[A-Za-z_]*$//')
    if [ "$module" = "$name" ]; then
        # A root name or a root module.
        grep -qw "$name" src/lib.rs || { echo "not at the root: $path"; missing=1; }
    else
        sed -n "/^pub mod $module\b/,/^}/p" sharded-runtime/src/lib.rs \
            | grep -qw "$name" \
            || grep -q "^pub use .*\b$name\b" "sharded-runtime/src/$module/mod.rs" 2>/dev/null \
            || sed -n '/^pub use/,/;/p' "sharded-runtime/src/$module.rs" 2>/dev/null | grep -qw "$name" \
            || grep -q "^pub use .*\b$name\b" "sharded-ops/src/$module/mod.rs" 2>/dev/null \
            || { echo "not in sharded::$module: $path"; missing=1; }
    fi
done
[ "$missing" = 0 ] && echo "upgrading.md lists all $count names the root exported before"
exit "$missing"
