#!/bin/sh
# make bundle-check: the built desktop bundle, run as a user who just unpacked it.
#
#     packaging/bundle-check.sh [BUNDLE_FOLDER]      (default dist/engram)
#
# Every `engram` runs under `env -i` with an empty HOME (so the data folder is the
# platform default inside it, ~/.local/share/engram-studio) and a PATH holding no
# Python: nothing from this machine's Python or the source tree can stand in for
# what the bundle lacks. It installs the launcher (install-desktop.sh) and opens
# the studio from it on a first start (under Xvfb when there, else offscreen),
# creates a bank, ingests the demo conversations the bundle carries (one in each
# format), recalls, serves and retains and recalls over HTTP (tags, the activity
# journal, /docs without a token or a CDN, a taken port) and over HTTPS, runs the
# confirmations and a purge as a script would (stdin closed), opens a .engram as
# the file manager does, and renders every pane, building the whole demo bank on
# the way. BUNDLE_CHECK_SHOTS=DIR keeps the pictures.
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

# studio OUT SECONDS ARGS...: the studio (`engram ARGS`) under Xvfb when there, else
# offscreen, closed by ENGRAM_START_PROBE once its window answered input.
if command -v xvfb-run >/dev/null 2>&1; then platform="xcb under Xvfb"; else
  platform="offscreen (no xvfb-run here)"; fi
studio() {
  out=$1; seconds=$2; shift 2
  if command -v xvfb-run >/dev/null 2>&1; then
    timeout "$seconds" xvfb-run -a -s "-screen 0 1280x800x24" sh -c \
      'h=$1 p=$2; shift 2; env -i HOME="$h" PATH="$p" LANG=C.UTF-8 DISPLAY="$DISPLAY" \
         XAUTHORITY="$XAUTHORITY" ENGRAM_START_PROBE=1 "$@"' - "$home" "$nopython" "$engram" "$@" \
      >"$out" 2>&1 || true
  else
    timeout "$seconds" env -i HOME="$home" PATH="$nopython" LANG=C.UTF-8 \
      QT_QPA_PLATFORM=offscreen ENGRAM_START_PROBE=1 "$engram" "$@" >"$out" 2>&1 || true
  fi
}

step "the launcher (the bundle's install-desktop.sh), and the studio's first start from it"
HOME="$home" XDG_DATA_HOME="$home/.local/share" sh "$bundle/install-desktop.sh" \
  >"$work/install.out" 2>&1 || true
entry="$home/.local/share/applications/engram-studio.desktop"
launcher=$(sed -n 's/^Exec=//p' "$entry" 2>/dev/null | sed 's/ *%f//')
if [ "${launcher%% *}" = "$engram" ]; then
  ok "install-desktop.sh wrote a launcher for this bundle: Exec=$launcher %f"
  set -- $launcher  # the menu's command: the launcher's Exec with %f dropped (no file)
  shift
else
  fail "no launcher for $engram in $entry"; sed 's/^/     | /' "$work/install.out"
  set --
fi
# No bank yet: the studio starts building the demo bank.
studio "$work/studio.out" 300 "$@"
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

step "serve over HTTP; retain (tagged) and recall through the Hindsight-compatible API"
# serve_bundle OUT ARGS...: start `engram serve --port 0 ARGS` and set $server and $url.
# env execs engram: $! is the server itself, which SIGTERM must stop (not a subshell).
serve_bundle() {
  out=$1; shift
  env -i HOME="$home" PATH="$nopython" LANG=C.UTF-8 "$engram" serve --port 0 "$@" >"$out" 2>&1 &
  server=$!
  url=""
  for _ in $(seq 1 600); do
    url=$(sed -n 's/^engram: serving .* at \(http[^ ]*\)$/\1/p' "$out")
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.2
  done
}
stop_server() {  # stop_server OUT: SIGTERM, and the server says it stopped
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  server=""
  expect "the server stopped on SIGTERM" "$1" "engram: stopped"
}
serve_bundle "$work/serve.out"
if [ -z "$url" ]; then
  fail "engram serve did not start"; sed 's/^/     | /' "$work/serve.out"
else
  ok "serving at $url"
  auth="Authorization: Bearer $(cat "$data/api-token")"
  api="$url/v1/default/banks/Juniper"
  curl -sS -o "$work/docs.html" -w '%{http_code}\n' "$url/docs" >"$work/docs.code" || true
  expect "/docs answers a browser on loopback without a token" "$work/docs.code" "^200$"
  if grep -Eiq 'src="https?://|href="https?://[^"]*\.(css|js)' "$work/docs.html"; then
    fail "/docs loads assets from another site"; grep -Eio '(src|href)="https?://[^"]*' "$work/docs.html" | head -3
  else
    ok "/docs loads no asset from another site (no CDN)"
  fi
  curl -sS -o /dev/null -w '%{http_code}\n' "$url/v1/default/banks" >"$work/noauth.code" || true
  expect "the API refuses a request without the token" "$work/noauth.code" "^401$"
  curl -sS -H "$auth" -H 'Content-Type: application/json' -X POST "$api/memories" \
    -d '{"items":[{"content":"Priya: The Kestrel telescope moved to the Azores observatory in March.","context":"bundle check","tags":["observatory"]}]}' \
    >"$work/retain.json" 2>&1 || true
  expect "retained over HTTP, tagged" "$work/retain.json" '"success": ?true'
  curl -sS -H "$auth" -H 'Content-Type: application/json' -X POST "$api/memories/recall" \
    -d '{"query":"Where did the Kestrel telescope move?"}' >"$work/hrecall.json" 2>&1 || true
  expect "recalled over HTTP what was just retained" "$work/hrecall.json" "Kestrel"
  curl -sS -H "$auth" -H 'Content-Type: application/json' -X POST "$api/memories/recall" \
    -d '{"query":"Where did the Kestrel telescope move?","tags":["observatory"],"tags_match":"all_strict"}' \
    >"$work/tagged.json" 2>&1 || true
  expect "a recall filtered by its tag finds it" "$work/tagged.json" "Kestrel"
  curl -sS -H "$auth" -H 'Content-Type: application/json' -X POST "$api/memories/recall" \
    -d '{"query":"Where did the Kestrel telescope move?","tags":["finance"],"tags_match":"all_strict"}' \
    >"$work/untagged.json" 2>&1 || true
  expect "a recall filtered by another tag finds nothing" "$work/untagged.json" '"results": ?\[\]'
  port=${url##*:}
  run serve --port "$port" >"$work/taken.out" 2>&1 || true
  expect "a second server on that port says the port is taken, and by whom" \
    "$work/taken.out" "port $port on 127.0.0.1 is already taken by engram"
  stop_server "$work/serve.out"
fi
run activity Juniper --kind retain >"$work/activity.out" 2>&1 || true
expect "the activity journal recorded the HTTP retain under the token's name" \
  "$work/activity.out" "default +http +retain .*retained 1 fact"

step "serve over HTTPS (--certfile/--keyfile, a self-signed certificate made by openssl)"
if command -v openssl >/dev/null 2>&1; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" \
    >"$work/openssl.out" 2>&1
  auth="Authorization: Bearer $(cat "$data/api-token" 2>/dev/null)"
  serve_bundle "$work/tls.out" --certfile "$work/cert.pem" --keyfile "$work/key.pem"
  if [ -z "$url" ]; then
    fail "engram serve --certfile did not start"; sed 's/^/     | /' "$work/tls.out"
  else
    expect "serving over HTTPS" "$work/tls.out" "at https://127\.0\.0\.1:"
    curl -sS --cacert "$work/cert.pem" -H "$auth" -H 'Content-Type: application/json' \
      -X POST "$url/v1/default/banks/Juniper/memories/recall" \
      -d '{"query":"Where did the Kestrel telescope move?"}' >"$work/tlsrecall.json" 2>&1 || true
    expect "recalled over HTTPS, the certificate verified" "$work/tlsrecall.json" "Kestrel"
    stop_server "$work/tls.out"
  fi
else
  echo "skip (no openssl here)"
fi

step "in scripts: confirmations refuse with no terminal; a purge names the exports it cannot reach"
run bank delete Juniper </dev/null >"$work/delete.out" 2>&1 && fail "bank delete went ahead unconfirmed"
expect "bank delete with stdin closed refuses: pass --yes" "$work/delete.out" "pass --yes"
run export Juniper "$work/juniper.engram" --quiet >"$work/export.out" 2>&1 || true
if [ -s "$work/juniper.engram" ]; then ok "exported a snapshot"; else
  fail "no snapshot exported"; sed 's/^/     | /' "$work/export.out"; fi
studio "$work/open.out" 120 --open "$work/juniper.engram"
if grep -Eq "studio window answered input" "$work/open.out"; then
  ok "engram --open FILE (the file manager's open-with) starts the studio"
else
  fail "engram --open FILE did not start the studio"; sed 's/^/     | /' "$work/open.out" | tail -10
fi
run banks >"$work/banks-open.out" 2>&1 || true
if [ "$(grep -c . "$work/banks-open.out")" -eq 1 ]; then
  ok "... and imported nothing before a yes (the offer is a question)"
else
  fail "engram --open imported without asking"; sed 's/^/     | /' "$work/banks-open.out"
fi
run purge Juniper Tomás </dev/null >"$work/purge-ask.out" 2>&1 && fail "purge went ahead unconfirmed"
expect "purge with stdin closed refuses: pass --yes" "$work/purge-ask.out" "pass --yes"
run purge Juniper Tomás --yes --show 3 >"$work/purge.out" 2>&1 || true
expect "purge --yes names the snapshot it cannot reach" "$work/purge.out" "juniper\.engram"
expect "purged" "$work/purge.out" "^purged: .*1 entity\(s\) removed"
run activity Juniper --kind curate >"$work/curate.out" 2>&1 || true
expect "the activity journal recorded the purge" "$work/curate.out" "purged an entity for good"
run banks >"$work/banks2.out" 2>&1 || true
expect "the bank is still there (the refused delete left it)" "$work/banks2.out" "Juniper"

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
