#!/usr/bin/env bash
# MongoEngine's own test suite against `odm serve`, compared with
# tests/wire/mongoengine-expected.txt (see pymongo_results.py for its format and what fails the
# check).
#
# Installs, pinned, into a scratch folder (or $MONGOENGINE_DIR, kept between runs): MongoEngine's
# source distribution from PyPI (the package is installed from it), completed with the suite's
# files that the distribution leaves out, kept in tests/wire/mongoengine-$VERSION (see its
# README); pymongo, pytest (pymongo.sh's version) and what the suite imports besides: blinker
# (signals), Pillow (ImageField), python-dateutil (DateTimeField's parsing) and mongomock
# (tests/test_connection_mongomock.py, skipped without it).
#
# The suite connects to connect()'s default, localhost:27017, so the server takes that port
# (the script stops when something else listens there) and one server, started once,
# `--in-memory --replica-set rs0`, serves the whole suite: each test class drops its database,
# and a run with a fresh server per test file gave the same results. Tracebacks are one line
# (`--tb=line`), as in pymongo.sh.
#
#   tests/wire/mongoengine.sh            run and check
#   tests/wire/mongoengine.sh --write    run and rewrite the expected-results file
#   MONGOENGINE_TESTS="tests/test_signals.py tests/fields" tests/wire/mongoengine.sh
#   ODM_BIN=path/to/odm tests/wire/mongoengine.sh    use this binary instead of building one
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
MONGOENGINE_VERSION=0.29.3
dir="${MONGOENGINE_DIR:-$(mktemp -d)}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
src="$dir/mongoengine-$MONGOENGINE_VERSION"
python="$dir/venv/bin/python"
if [ ! -x "$python" ]; then
  python3 -m venv "$dir/venv"
fi
if ! "$python" -c "import pytest, pymongo, blinker, PIL, dateutil, mongomock, sys
sys.exit(pymongo.version != '4.20.0')" 2>/dev/null; then
  "$python" -m pip install --quiet --disable-pip-version-check \
    pytest==9.2.0 pymongo==4.20.0 dnspython==2.9.2 blinker==1.9.0 pillow==13.0.0 \
    python-dateutil==4.0.0 mongomock==4.3.0
fi
if [ ! -d "$src" ]; then
  "$python" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
    "mongoengine==$MONGOENGINE_VERSION" -d "$dir/sdist"
  tar -xzf "$dir/sdist/mongoengine-$MONGOENGINE_VERSION.tar.gz" -C "$dir"
fi
# The suite's files the distribution lacks; none of them may replace one of its own.
(
  cd "tests/wire/mongoengine-$MONGOENGINE_VERSION"
  shipped=$(tar -tzf "$dir/sdist/mongoengine-$MONGOENGINE_VERSION.tar.gz")
  for file in $(find tests -type f); do
    if grep -qxF "mongoengine-$MONGOENGINE_VERSION/$file" <<<"$shipped"; then
      echo "tests/wire/mongoengine-$MONGOENGINE_VERSION/$file: the source distribution has it"
      exit 1
    fi
  done
  cp -r tests "$src/"
)
if ! "$python" -c "import mongoengine, sys
sys.exit(mongoengine.__version__ != '$MONGOENGINE_VERSION')" 2>/dev/null; then
  "$python" -m pip install --quiet --disable-pip-version-check --no-deps -e "$src"
fi

. tests/wire/serve.sh
# ODM_BIN set: that binary, nothing built (CI builds, as pymongo.sh does).
if [ -z "${ODM_BIN:-}" ]; then
  odm_build
fi
odm="$ODM_BIN"
expected="$root/tests/wire/mongoengine-expected.txt"
reports="$dir/reports"
rm -rf "$reports"
mkdir -p "$reports"

# Tests the run leaves out, each with its reason in the expected-results file.
args=()
if [ -f "$expected" ]; then
  mapfile -t args < <(awk '$1 == "exclude" { print "--deselect"; print $2 }' "$expected")
fi

if "$python" -c "import socket; socket.create_connection(('localhost', 27017), timeout=1)" \
  2>/dev/null; then
  echo "port 27017 is taken: MongoEngine's suite connects to localhost:27017, where odm serve"
  echo "must listen; stop what listens there and run again"
  exit 1
fi
log="$reports/server.log"
"$odm" serve --in-memory --replica-set rs0 --port 27017 >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
odm_wait_listening "$log" "$pid"

start=$(date +%s)
status=0
# shellcheck disable=SC2086 # MONGOENGINE_TESTS is a list of paths
(cd "$src" && timeout 900 "$python" -m pytest ${MONGOENGINE_TESTS:-tests} -q \
  -p no:cacheprovider --tb=line "${args[@]}" --junitxml="$reports/mongoengine.xml" \
  >"$reports/pytest.out" 2>&1) || status=$?
echo "MongoEngine $MONGOENGINE_VERSION suite ran in $(( $(date +%s) - start )) s"
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
trap - EXIT
# pytest: 0 all passed, 1 some failed (compared below).
case $status in
  0 | 1) ;;
  *)
    echo "pytest ended with status $status:"
    tail -20 "$reports/pytest.out"
    exit 1
    ;;
esac
if grep -q "panicked at" "$log"; then
  echo "odm serve panicked:"
  grep -A5 "panicked at" "$log" | head -40
  exit 1
fi

if [ "${1:-}" = "--write" ]; then
  python3 tests/wire/pymongo_results.py --suite MongoEngine write "$expected" "$reports"/*.xml
else
  python3 tests/wire/pymongo_results.py --suite MongoEngine check "$expected" "$reports"/*.xml
fi
