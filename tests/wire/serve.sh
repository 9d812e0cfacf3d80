# Sourced by the client checks (mongosh.sh, pymongo.sh): how they start `odm serve`.

# A free loopback port.
odm_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until the server with process id $2, logging to $1, listens; fails (showing its log)
# when it exits first or does not listen within 10 s.
odm_wait_listening() {
  local log=$1 pid=$2
  for _ in $(seq 1 100); do
    if grep -qs "listening on" "$log"; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$log"
      echo "odm serve did not start"
      return 1
    fi
    sleep 0.1
  done
  echo "odm serve did not start listening within 10 s"
  return 1
}

# Builds `odm` and sets ODM_BIN. The debug build by default, by the README's test command, which
# CI has run already: building `-p odm-cli` alone would resolve features for that package only and
# compile its dependencies again, and a release build every dependency (minutes on CI).
# ODM_PROFILE=release measures the release build.
odm_build() {
  case "${ODM_PROFILE:-debug}" in
    release) cargo build --quiet --release -p odm-cli ;;
    debug) cargo test --workspace --no-run --quiet ;;
    *) echo "ODM_PROFILE is debug or release"; return 1 ;;
  esac
  ODM_BIN="$(pwd)/target/${ODM_PROFILE:-debug}/odm"
}

# Builds `odm`, starts `odm serve` on a free port with the given arguments, and stops it when
# the calling script exits. Sets ODM_PORT and ODM_SERVER_LOG.
start_odm_serve() {
  odm_build
  ODM_PORT=$(odm_free_port)
  ODM_SERVER_LOG=$(mktemp)
  "$ODM_BIN" serve --port "$ODM_PORT" "$@" >"$ODM_SERVER_LOG" 2>&1 &
  ODM_SERVER_PID=$!
  trap 'kill "$ODM_SERVER_PID" 2>/dev/null || true; wait "$ODM_SERVER_PID" 2>/dev/null || true' EXIT
  odm_wait_listening "$ODM_SERVER_LOG" "$ODM_SERVER_PID"
}
