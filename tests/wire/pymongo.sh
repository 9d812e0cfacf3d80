#!/usr/bin/env bash
# pymongo's own test suite against `odm serve`, compared with tests/wire/pymongo-expected.txt
# (see pymongo_results.py for its format and what fails the check).
#
# Installs, pinned, into a scratch folder (or $PYMONGO_DIR, kept between runs): pymongo's
# source distribution from PyPI (its test/ folder is the suite; the package is installed from
# it, C extensions built), pytest, pytest-asyncio (its configuration names an asyncio option)
# and dnspython. Runs the synchronous tests (`-m default`), one test file at a time against
# its own fresh server (`--replica-set rs0 --enable-test-commands`, in memory: the suite
# drives the `failCommand` fail point), $PYMONGO_JOBS files at once. Tracebacks are one line
# (`--tb=line`): formatting long ones trips Python 3.11's AST recursion check inside pytest,
# which then abandons the rest of the file. pymongo_warnings.py drops one warning of pymongo's
# own test helpers that lands on a random later test (see there).
#
#   tests/wire/pymongo.sh            run and check
#   tests/wire/pymongo.sh --write    run and rewrite the expected-results file
#   PYMONGO_FILES="test/test_bulk.py test/test_cursor.py" tests/wire/pymongo.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
PYMONGO_VERSION=4.20.0
dir="${PYMONGO_DIR:-$(mktemp -d)}"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
src="$dir/pymongo-$PYMONGO_VERSION"
python="$dir/venv/bin/python"
if [ ! -x "$python" ]; then
  python3 -m venv "$dir/venv"
fi
if ! "$python" -c "import pytest, pytest_asyncio, dns" 2>/dev/null; then
  "$python" -m pip install --quiet --disable-pip-version-check \
    pytest==9.2.0 pytest-asyncio==1.5.0 dnspython==2.9.2
fi
if [ ! -d "$src" ]; then
  "$python" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
    "pymongo==$PYMONGO_VERSION" -d "$dir/sdist"
  tar -xzf "$dir/sdist/pymongo-$PYMONGO_VERSION.tar.gz" -C "$dir"
fi
if ! "$python" -c "import pymongo, sys; sys.exit(pymongo.version != '$PYMONGO_VERSION' or not pymongo.has_c())" 2>/dev/null; then
  "$python" -m pip install --quiet --disable-pip-version-check -e "$src"
fi

. tests/wire/serve.sh
odm_build
odm="$ODM_BIN"
expected="$root/tests/wire/pymongo-expected.txt"
reports="$dir/reports"
rm -rf "$reports"
mkdir -p "$reports"

# Tests the run leaves out, each with its reason in the expected-results file: pytest's
# arguments, one a line.
deselect="$reports/deselect.args"
if [ -f "$expected" ]; then
  awk '$1 == "exclude" { print "--deselect"; print $2 }' "$expected" >"$deselect"
else
  : >"$deselect"
fi

run_file() {
  local file=$1 name port log pid status args
  mapfile -t args <"$deselect"
  name=$(basename "$file" .py)
  log="$reports/$name.server.log"
  port=$(odm_free_port)
  "$odm" serve --in-memory --replica-set rs0 --enable-test-commands --port "$port" >"$log" 2>&1 &
  pid=$!
  odm_wait_listening "$log" "$pid" || return 1
  status=0
  (cd "$src" && DB_IP=127.0.0.1 DB_PORT=$port PYTHONPATH="$plugins" timeout 900 \
    "$python" -m pytest "$file" -p pymongo_warnings -m default -q -p no:cacheprovider \
    -o addopts="" --tb=line "${args[@]}" \
    --junitxml="$reports/$name.xml" >"$reports/$name.out" 2>&1) || status=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # pytest: 0 all passed, 1 some failed (compared below), 5 nothing selected.
  case $status in
    0 | 1 | 5) ;;
    *)
      echo "pytest on $file ended with status $status:"
      tail -20 "$reports/$name.out"
      return 1
      ;;
  esac
}
export -f run_file odm_free_port odm_wait_listening
plugins="$root/tests/wire"
export reports src python odm deselect plugins

files=${PYMONGO_FILES:-$(cd "$src" && ls test/test_*.py)}
start=$(date +%s)
printf '%s\n' $files | xargs -P "${PYMONGO_JOBS:-4}" -I{} bash -c 'run_file "$@"' _ {}
echo "pymongo $PYMONGO_VERSION suite ran in $(( $(date +%s) - start )) s"

if [ "${1:-}" = "--write" ]; then
  python3 tests/wire/pymongo_results.py write "$expected" "$reports"/*.xml
else
  python3 tests/wire/pymongo_results.py check "$expected" "$reports"/*.xml
fi
