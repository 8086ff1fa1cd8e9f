# Sourced by the scripts that run `tern serve` in the background (demo, bench-serving, bench-plan).
# start_serve LOG ARGS...: starts `build/tern serve --port 0 ARGS` with its stderr in LOG, waits up to 60 s for its
# "ready on URL" line, sets $server (the pid) and $url, and stops the server (SIGTERM, then wait) when the
# calling script exits. On failure it prints the log and exits.
start_serve() {
  local log="$1"; shift
  build/tern serve --port 0 "$@" 2>"$log" &
  server=$!
  trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
  url=""
  for _ in $(seq 1 600); do
    # Only a log that ends with a whole line: a line read half-written would give half a port.
    [ -z "$(tail -c1 "$log")" ] && url=$(sed -n 's/^tern info: ready on \(http[^ ]*\)$/\1/p' "$log")
    [ -n "$url" ] && return 0
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  cat "$log" >&2
  echo "$(basename "$0"): the server did not become ready" >&2
  exit 1
}
