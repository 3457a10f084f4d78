#!/bin/sh
# make bundle-check: the built desktop bundle, run as a user who just unpacked it.
#
#     packaging/bundle-check.sh [BUNDLE_FOLDER]      (default dist/engram)
#
# Every `engram` runs under `env -i` with an empty HOME (so the data folder is the
# platform default inside it, ~/.local/share/engram-studio) and a PATH holding no
# Python: nothing from this machine's Python or the source tree can stand in for
# what the bundle lacks. It opens the studio on a first start (under Xvfb when
# there, else offscreen), creates a bank, ingests the demo conversations the
# bundle carries (one in each format), recalls, serves and retains and recalls
# over HTTP (and reads /docs without a token), and renders every pane, building
# the whole demo bank on the way. BUNDLE_CHECK_SHOTS=DIR keeps the pictures.
# curl and grep run outside, as the user's tools would.
set -eu

bundle=$(cd "${1:-dist/engram}" 2>/dev/null && pwd) || {
  echo "bundle-check: no bundle at ${1:-dist/engram}: run make bundle first" >&2
  exit 2
}
engram="$bundle/engram"
[ -x "$engram" ] || { echo "bundle-check: $engram is not an executable" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/engram-bundle-check.XXXXXX")
home="$work/home"
nopython="$work/bin"  # the only PATH entry: empty
mkdir -p "$home" "$nopython"
data="$home/.local/share/engram-studio"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

failures=0
step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
# The bundle in a clean environment; extra NAME=VALUE words go before the command.
clean() {
  env -i HOME="$home" PATH="$nopython" LANG=C.UTF-8 "$@"
}
run() { clean "$engram" "$@"; }
expect() {  # expect WHAT FILE PATTERN: grep -E PATTERN in FILE, or fail saying WHAT
  if grep -Eq "$3" "$2"; then ok "$1"; else fail "$1 (no /$3/ in:)"; sed 's/^/     | /' "$2" | tail -20; fi
}

demo="$bundle/_internal/app/_resources/demo"
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1))"
echo "clean environment: env -i HOME=$home PATH=$nopython LANG=C.UTF-8"
if clean sh -c 'command -v python3 || command -v python' >/dev/null 2>&1; then
  fail "a Python is on the clean PATH"
else
  ok "no Python on the clean PATH"
fi

step "the studio's first start (no bank yet: it starts building the demo bank)"
if command -v xvfb-run >/dev/null 2>&1; then
  platform="xcb under Xvfb"
  timeout 300 xvfb-run -a -s "-screen 0 1280x800x24" sh -c \
    'env -i HOME="$1" PATH="$2" LANG=C.UTF-8 DISPLAY="$DISPLAY" XAUTHORITY="$XAUTHORITY" \
       ENGRAM_START_PROBE=1 "$3"' - "$home" "$nopython" "$engram" \
    >"$work/studio.out" 2>&1 || true
else
  platform="offscreen (no xvfb-run here)"
  timeout 300 env -i HOME="$home" PATH="$nopython" LANG=C.UTF-8 QT_QPA_PLATFORM=offscreen \
    ENGRAM_START_PROBE=1 "$engram" >"$work/studio.out" 2>&1 || true
fi
grep -v "propagateSizeHints" "$work/studio.out" | sed 's/^/     | /' | tail -5
if grep -Eq "studio window answered input [0-9.]+ s after start" "$work/studio.out"; then
  ok "the first window opened and answered input ($platform)"
  if grep -Eq "Traceback|rror" "$work/studio.out"; then fail "the studio wrote an error"; fi
  if [ -d "$data" ]; then
    ok "data folder made where the README says: ~/.local/share/engram-studio"
  else
    fail "no data folder at $data"
  fi
  run banks >"$work/banks.out" 2>&1 || true
  expect "closing during the first start's demo build left no half-built bank" \
    "$work/banks.out" "^no banks in"
else
  fail "the studio's first window did not answer ($platform)"
fi

step "create a bank, ingest the demo conversations (txt, json, jsonl), recall"
bank="Juniper"
run bank create "$bank" --agent Juniper >"$work/create.out" 2>&1 || true
expect "bank created" "$work/create.out" "^created bank"
for file in 01-march-kickoff.txt 03-may-beacon-beta.json 06-june-atlas-incident.jsonl; do
  run ingest "$bank" "$demo/$file" --mode rules >"$work/ingest.out" 2>&1 || true
  expect "ingested $file" "$work/ingest.out" "^facts: [1-9]"
  if grep -q "$(printf '\r')" "$work/ingest.out"; then fail "progress \\r lines in a log"; fi
done
if run verify "$bank" >"$work/verify.out" 2>&1; then
  ok "DuckDB, LanceDB and Tantivy agree: $(head -1 "$work/verify.out")"
else
  fail "engram verify"; sed 's/^/     | /' "$work/verify.out"
fi
run recall "$bank" "Who runs the Atlas project?" >"$work/recall.out" 2>&1 || true
expect "recall answered with facts" "$work/recall.out" "Atlas"

step "serve over HTTP; retain and recall through the Hindsight-compatible API"
# env execs engram: $! is the server itself, which SIGTERM must stop (not a subshell).
env -i HOME="$home" PATH="$nopython" LANG=C.UTF-8 "$engram" serve --port 0 >"$work/serve.out" 2>&1 &
server=$!
url=""
for _ in $(seq 1 600); do
  url=$(sed -n 's/^engram: serving .* at \(http[^ ]*\)$/\1/p' "$work/serve.out")
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$url" ]; then
  fail "engram serve did not start"; sed 's/^/     | /' "$work/serve.out"
else
  ok "serving at $url"
  auth="Authorization: Bearer $(cat "$data/api-token")"
  api="$url/v1/default/banks/Juniper"
  curl -sS -o "$work/docs.html" -w '%{http_code}\n' "$url/docs" >"$work/docs.code" || true
  expect "/docs answers a browser on loopback without a token" "$work/docs.code" "^200$"
  curl -sS -o /dev/null -w '%{http_code}\n' "$url/v1/default/banks" >"$work/noauth.code" || true
  expect "the API refuses a request without the token" "$work/noauth.code" "^401$"
  curl -sS -H "$auth" -H 'Content-Type: application/json' -X POST "$api/memories" \
    -d '{"items":[{"content":"Priya: The Kestrel telescope moved to the Azores observatory in March.","context":"bundle check"}]}' \
    >"$work/retain.json" 2>&1 || true
  expect "retained over HTTP" "$work/retain.json" '"success": ?true'
  curl -sS -H "$auth" -H 'Content-Type: application/json' -X POST "$api/memories/recall" \
    -d '{"query":"Where did the Kestrel telescope move?"}' >"$work/hrecall.json" 2>&1 || true
  expect "recalled over HTTP what was just retained" "$work/hrecall.json" "Kestrel"
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=""
  expect "the server stopped on SIGTERM" "$work/serve.out" "engram: stopped"
fi

step "render every pane (engram screenshot, offscreen: it builds the whole demo bank as a first start does)"
clean QT_QPA_PLATFORM=offscreen "$engram" screenshot --out "$work/shots" \
  >"$work/shots.out" 2>&1 || true
count=$(find "$work/shots" -name '*.png' -size +10k 2>/dev/null | wc -l)
if [ "$count" -ge 15 ]; then ok "$count pictures rendered"; else
  fail "only $count pictures"; sed 's/^/     | /' "$work/shots.out" | tail -20; fi
if [ -s "$work/shots/00-first-start.png" ]; then
  ok "the first start pictured while the demo bank was being built"
else
  fail "no picture of the first start"
fi
if grep -Eq "Traceback" "$work/shots.out"; then fail "the screenshot run wrote a traceback"; fi
if [ -n "${BUNDLE_CHECK_SHOTS:-}" ]; then
  mkdir -p "$BUNDLE_CHECK_SHOTS" && cp "$work"/shots/*.png "$BUNDLE_CHECK_SHOTS"/
fi

echo
if [ "$failures" -eq 0 ]; then echo "bundle-check: all passed"; else echo "bundle-check: $failures failed"; fi
[ "$failures" -eq 0 ]
