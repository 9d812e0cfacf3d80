#!/usr/bin/env bash
# The official Node driver's default (streaming) server monitoring against `odm serve`, over a
# connection held for $HOLD_SECONDS (default 180): see node_monitoring.js. Installs the driver,
# pinned, from npm into a scratch folder (or $NODE_DRIVER_DIR, kept between runs), and starts
# its own server (in memory, a one-member replica set, as the driver's users deploy).
#
# .ci/run starts it in the background beside pymongo's suite, so the hold costs no time.
set -euo pipefail
cd "$(dirname "$0")/../.."
DRIVER_VERSION=7.9.1
dir="${NODE_DRIVER_DIR:-$(mktemp -d)}"
if [ ! -f "$dir/node_modules/mongodb/package.json" ] \
  || ! grep -q "\"version\": \"$DRIVER_VERSION\"" "$dir/node_modules/mongodb/package.json"; then
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
    "mongodb@$DRIVER_VERSION" >/dev/null
fi
. tests/wire/serve.sh
start_odm_serve --in-memory --replica-set rs0
NODE_PATH="$dir/node_modules" timeout $(( ${HOLD_SECONDS:-180} + 60 )) \
  node tests/wire/node_monitoring.js "mongodb://127.0.0.1:$ODM_PORT/?replicaSet=rs0"
echo "node driver $DRIVER_VERSION: default monitoring held against odm serve"
