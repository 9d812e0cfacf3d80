#!/usr/bin/env bash
# The typed suites once more, on the MongoDB back end: `odm serve` started in memory as a
# one-member replica set (so that transactions run), and the pattern suites and the typed
# end-to-end suites pointed at it through ODM_MONGODB_URI (each test gets a database of its
# own). Set ODM_MONGODB_URI beforehand to run them against a real deployment instead (a
# replica set or a mongos; see the README), in which case no server is started.
set -euo pipefail
cd "$(dirname "$0")/../.."
suites=(bucket history identity_attributes inbox timeseries_queue tree
  odm_library odm_scenarios odm_indexes odm_versions odm_mongodb odm_watch odm_kept odm_hooks odm_schema odm_references odm_variants odm_expressions odm_search odm_async_context odm_async async_patterns inbox_web)
if [ -z "${ODM_MONGODB_URI:-}" ]; then
  . tests/wire/serve.sh
  start_odm_serve --in-memory --replica-set rs0
  export ODM_MONGODB_URI="mongodb://127.0.0.1:$ODM_PORT/?replicaSet=rs0"
fi
args=()
for suite in "${suites[@]}"; do
  args+=(--test "$suite")
done
log=$(mktemp)
PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261122}" cargo test --workspace "${args[@]}" 2>&1 | tee "$log"
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "MongoDB back end: %d passed, %d failed\n", passed, failed }' "$log"
rm -f "$log"
