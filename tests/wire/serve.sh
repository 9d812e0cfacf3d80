# Sourced by the client checks (mongosh.sh, pymongo.sh): builds `odm`, starts `odm serve` on a
# free loopback port with the given arguments, and stops it when the calling script exits.
# Sets ODM_PORT and ODM_SERVER_LOG.
start_odm_serve() {
  cargo build --quiet --release -p odm --features cli
  local bin="target/release/odm"
  ODM_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  ODM_SERVER_LOG=$(mktemp)
  "$bin" serve --port "$ODM_PORT" "$@" >"$ODM_SERVER_LOG" 2>&1 &
  ODM_SERVER_PID=$!
  trap 'kill "$ODM_SERVER_PID" 2>/dev/null || true; wait "$ODM_SERVER_PID" 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    if grep -q "listening on" "$ODM_SERVER_LOG"; then
      return 0
    fi
    if ! kill -0 "$ODM_SERVER_PID" 2>/dev/null; then
      cat "$ODM_SERVER_LOG"
      echo "odm serve did not start"
      return 1
    fi
    sleep 0.1
  done
  echo "odm serve did not start listening within 10 s"
  return 1
}
