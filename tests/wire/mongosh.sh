#!/usr/bin/env bash
# mongosh against `odm serve`: installs a pinned mongosh from npm into a scratch folder (or
# $MONGOSH_DIR, kept between runs), starts the server in memory, and runs mongosh.js, then
# analyze_shard_key.js and change_streams.js against a replica-set server; any failed
# assertion ends mongosh with a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/../.."
MONGOSH_VERSION=2.12.0
dir="${MONGOSH_DIR:-$(mktemp -d)}"
mongosh="$dir/node_modules/.bin/mongosh"
if [ ! -x "$mongosh" ] || ! "$mongosh" --version 2>/dev/null | grep -qx "$MONGOSH_VERSION"; then
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
    "mongosh@$MONGOSH_VERSION" >/dev/null
fi
. tests/wire/serve.sh
start_odm_serve --in-memory
# mongosh keeps its history and logs under HOME; a scratch HOME leaves the user's alone.
HOME="$dir" timeout 120 "$mongosh" "mongodb://127.0.0.1:$ODM_PORT/test" \
  --quiet --norc --file tests/wire/mongosh.js
echo "mongosh $MONGOSH_VERSION: tests/wire/mongosh.js passed against odm serve"

# mongosh offers analyzeShardKey and configureQueryAnalyzer on replica sets and clusters only:
# the second script runs against a one-member replica set.
kill "$ODM_SERVER_PID" 2>/dev/null || true
wait "$ODM_SERVER_PID" 2>/dev/null || true
start_odm_serve --in-memory --replica-set rs0
HOME="$dir" timeout 120 "$mongosh" "mongodb://127.0.0.1:$ODM_PORT/test?replicaSet=rs0" \
  --quiet --norc --file tests/wire/analyze_shard_key.js
echo "mongosh $MONGOSH_VERSION: tests/wire/analyze_shard_key.js passed against odm serve"
HOME="$dir" timeout 120 "$mongosh" "mongodb://127.0.0.1:$ODM_PORT/test?replicaSet=rs0" \
  --quiet --norc --file tests/wire/change_streams.js
echo "mongosh $MONGOSH_VERSION: tests/wire/change_streams.js passed against odm serve"
