#!/usr/bin/env bash
# mongosh against `odm serve`: installs a pinned mongosh from npm into a scratch folder (or
# $MONGOSH_DIR, kept between runs), starts the server in memory, and runs mongosh.js, whose
# every assertion failing ends mongosh with a non-zero status.
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
