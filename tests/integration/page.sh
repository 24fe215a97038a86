#!/bin/sh
# tier: full (installs and starts chromium)
# tests/integration/page.sh: the web page (GET /) in Debian's chromium, headless,
# against a real memfloord.
#
# Starts $MEMFLOORD (default build/memfloord) on a free loopback port with
# the shipped catalogue and models; checks the page's headers with curl
# (the Content-Security-Policy that keeps every request on the origin,
# nosniff, the types of /, /page.js and /page.css); then tests/integration/page.py
# drives chromium through the DevTools protocol: a shared link's figures
# against the API's answers for the same manifest, the figures following
# the keyboard, a rejection and its suggested fix, an error beside its
# field, a job name that is HTML shown as text, an inference job under vLLM
# (each placement's maxConcurrency and maxContextLength) and over 4
# tensor-parallel GPUs (the per-GPU buckets), an inference rejection and
# its tensor fix, the calibration section (two runs posted to the store
# it starts with) against GET /v1/calibration and the arithmetic of the
# errors, no console error but the API's own non-2xx answers.
# Screenshots land beside memfloord (build/page-desktop.png,
# page-phone.png, page-reject.png, page-serve.png).
#
# Needs python3, curl and chromium; as root it installs Debian's chromium
# when missing.  It never skips: no browser is a failure.  Prints one line
# per check and "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
out=$(cd "$(dirname "$daemon_bin")" && pwd)
check_name=page
daemon=""
cleanup() {
	stop_all "$daemon"
}
. "$top/tests/lib/check.sh"

# --- chromium -----------------------------------------------------------------
need_program chromium page chromium /usr/lib/chromium/chromium chromium \
    chromium-browser
need_program python3 page python3 python3
need_program curl page curl curl

# --- the daemon and the headers -----------------------------------------------
# A store with two runs of one job posted, so that the calibration section
# has a row: peaks 20% above and 10% below its estimate a GPU, at 1.25 and
# 0.5 times the modelled tokens/s (page.py checks the figures).
printf 'page-token\n' >"$tmp/token"
serve "$tmp/daemon.log" --store "$tmp/store.db" \
    --observe-token-file "$tmp/token"
daemon=$pid
base=http://127.0.0.1:$port
cat >"$tmp/calib.json" <<'JSON'
{"apiVersion": "memfloor.dev/v1", "kind": "Job",
 "metadata": {"name": "calibrated"},
 "spec": {"model": {"name": "meta-llama/Llama-3.1-8B"},
  "workload": {"sequenceLength": 1024, "method": "lora", "precision": "bf16",
   "lora": {"rank": 8, "targets": "all-linear"},
   "gradientCheckpointing": true},
  "duration": {"tokens": 1000000000}}}
JSON
curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' \
    --data-binary @"$tmp/calib.json" "$base/v1/admit" >"$tmp/calib-ans" 2>&1
posted=0
for k in 1.2:1.25 0.9:0.5; do
	obs=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
p, s = (float(x) for x in sys.argv[2].split(":"))
speed = 1e9 / (d["placement"]["hours"] * 3600)
print(json.dumps({"fingerprint": d["fingerprint"],
    "card": d["placement"]["gpu"], "count": d["placement"]["count"],
    "peakReservedBytes": int(d["need"]["perGpuBytes"] * p),
    "tokensPerSecond": speed / s, "source": "torch"}))' "$tmp/calib-ans" "$k")
	code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST \
	    -H 'Authorization: Bearer page-token' \
	    -H 'Content-Type: application/json' --data-binary "$obs" \
	    "$base/v1/observations")
	[ "$code" = 201 ] && posted=$((posted + 1))
done
is "two observations posted for the calibration section" "$posted" 2

# headers PATH: the answer's status line and headers, lower-cased names.
headers() {
	curl -sS --max-time 10 -D - -o /dev/null "$base$1" 2>/dev/null |
	    tr -d '\r' | sed 's/^\([^:]*\):/\L\1:/'
}

h=$(headers /)
is "GET / is 200" "$(echo "$h" | head -n 1 | cut -d' ' -f2)" 200
is "GET / is HTML" "$(echo "$h" | sed -n 's/^content-type: //p')" \
    "text/html; charset=utf-8"
csp=$(echo "$h" | sed -n 's/^content-security-policy: //p')
for d in "default-src 'none'" "script-src 'self'" "style-src 'self'" \
    "connect-src 'self'" "img-src data:"; do
	case "; $csp;" in
	*"; $d;"*) pass "Content-Security-Policy has $d" ;;
	*) fail "Content-Security-Policy lacks $d: '$csp'" ;;
	esac
done
is "GET / has nosniff" \
    "$(echo "$h" | sed -n 's/^x-content-type-options: //p')" nosniff
is "page.js is JavaScript" "$(headers /page.js |
    sed -n 's/^content-type: //p')" "text/javascript; charset=utf-8"
is "page.css is CSS" "$(headers /page.css |
    sed -n 's/^content-type: //p')" "text/css; charset=utf-8"
is "page.js has the CSP too" "$(headers /page.js |
    sed -n 's/^content-security-policy: //p')" "$csp"
h=$(curl -sS --max-time 10 -D - -o /dev/null -X POST --data x "$base/" \
    2>/dev/null | tr -d '\r')
is "POST / is 405, GET and HEAD allowed" "$(echo "$h" | head -n 1 |
    cut -d' ' -f2) $(echo "$h" | sed -n 's/^[Aa]llow: //p')" "405 GET, HEAD"
is "HEAD / is 200" "$(curl -sS --max-time 10 -I -o /dev/null \
    -w '%{http_code}' "$base/" 2>/dev/null)" 200
if curl -sS --max-time 10 "$base/metrics" 2>/dev/null |
    grep -qE '^memfloor_requests_total\{route="/",code="200"\} [1-9]'; then
	pass "/metrics counts the page's requests under route \"/\""
else
	fail "/metrics has no route=\"/\" count"
fi
# The page served is the page in the source tree, byte for byte.
for f in index.html:/ page.js:/page.js page.css:/page.css; do
	if curl -sS --max-time 10 "$base${f#*:}" 2>/dev/null |
	    cmp -s - "web/${f%%:*}"; then
		pass "${f#*:} is web/${f%%:*}"
	else
		fail "${f#*:} is not web/${f%%:*}"
	fi
done
# No URL in the page leaves the origin.
if grep -nE '(https?:)?//[a-z0-9.-]+\.[a-z]{2,}' web/index.html web/page.css |
    grep -v 'w3.org/2000/svg' >"$tmp/urls"; then
	fail "the page names other origins: $(cat "$tmp/urls")"
else
	pass "the page names no other origin"
fi

# --- the browser --------------------------------------------------------------
echo "page: $chromium, screenshots in $out"
rc=0
timeout 240 python3 tests/integration/page.py "$base" "$chromium" "$out" \
    >"$tmp/page.out" 2>&1 || rc=$?
cat "$tmp/page.out"
grep -E '^(ok|FAIL) - ' "$tmp/page.out" >>"$results" || true
if ! grep -q '^ok - ' "$tmp/page.out"; then
	fail "page.py passed no check (see $out/page-chromium.log)"
fi
if [ "$rc" -ne 0 ] && ! grep -q '^FAIL - ' "$tmp/page.out"; then
	fail "page.py exited $rc"
fi
for s in page-desktop.png page-phone.png; do
	if [ -s "$out/$s" ] && [ "$(od -An -tx1 -N4 "$out/$s" |
	    tr -d ' \n')" = 89504e47 ]; then
		pass "screenshot $s"
	else
		fail "no screenshot $out/$s"
	fi
done
summary
