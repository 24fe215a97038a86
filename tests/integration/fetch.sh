#!/bin/sh
# Model configs from URLs (design section 9) against the real daemon:
# tests/integration/fetchserver.py serves the configs on a loopback port, memfloord
# fetches them with --model-host http://127.0.0.1:PORT.
#
# Run from the top of the tree: sh tests/integration/fetch.sh
# MEMFLOORD names the daemon (default build/memfloord); MF_TOP the tree.
set -eu

top=${MF_TOP:-.}
MEMFLOORD=${MEMFLOORD:-build/memfloord}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mf-fetch.XXXXXX")
srv_pid=
d_pid=
slow_pid=
pass=0
failed=0

cleanup() {
	for p in $slow_pid $d_pid $srv_pid; do
		kill "$p" 2>/dev/null || :
		wait "$p" 2>/dev/null || :
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

say() { printf '%s\n' "$*"; }
ok() { pass=$((pass + 1)); say "ok - $1"; }
bad() {
	failed=$((failed + 1))
	say "FAIL - $1"
	if [ -s "$tmp/body" ]; then
		head -c 600 "$tmp/body" | sed 's/^/#   /'
		say
	fi
}

# Wait up to 10 s for a line matching $2 in file $1; print the match.
wait_line() {
	i=0
	while [ $i -lt 50 ]; do
		if grep -m 1 "$2" "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# A Job whose model config is at URL $1, in $tmp/job.yaml.
job() {
	cat >"$tmp/job.yaml" <<EOF
apiVersion: memfloor.dev/v1
kind: Job
metadata:
  name: fetch-test
spec:
  model:
    configUrl: $1
  workload:
    sequenceLength: 4096
EOF
}

# POST file $2 to path $1: sets $code and $secs, the body is in $tmp/body.
post() {
	out=$(curl -sS -m 15 -o "$tmp/body" -w '%{http_code} %{time_total}' \
	    -H 'Content-Type: application/yaml' --data-binary "@$2" \
	    "$base$1") || out="000 99"
	code=${out% *}
	secs=${out#* }
}

get() {
	out=$(curl -sS -m 15 -o "$tmp/body" -w '%{http_code} %{time_total}' \
	    "$base$1") || out="000 99"
	code=${out% *}
	secs=${out#* }
}

# Is the body's error message saying $1?
says() { grep -q -- "$1" "$tmp/body"; }
quick() { awk -v s="$secs" 'BEGIN { exit !(s < 1.0) }'; }

# Estimate the job whose config is at $srv$1; expect status $2, and the
# body to contain $3.
estimate() {
	job "$srv$1"
	post /v1/estimate "$tmp/job.yaml"
	if [ "$code" = "$2" ] && says "$3"; then
		ok "configUrl $1: $2, $3"
	else
		bad "configUrl $1: got $code, want $2 and '$3'"
	fi
}

# --- start the config server and the daemon ------------------------------

command -v curl >/dev/null || { say "fetch.sh: curl is needed"; exit 1; }
python3 "$top/tests/integration/fetchserver.py" >"$tmp/srv.out" 2>"$tmp/srv.err" &
srv_pid=$!
sport=$(wait_line "$tmp/srv.out" '^[0-9][0-9]*$') || {
	say "fetch.sh: tests/integration/fetchserver.py did not start"
	cat "$tmp/srv.err"
	exit 1
}
srv="http://127.0.0.1:$sport"

# One server thread: a fetch that held it would stall everything else.
"$MEMFLOORD" -d -f "$top/catalog/gpus.yaml" -m "$top/catalog/models" \
    -l 127.0.0.1:0 --threads 1 --model-host "$srv" 2>"$tmp/d.err" &
d_pid=$!
line=$(wait_line "$tmp/d.err" 'listening on .* port [0-9]') || {
	say "fetch.sh: $MEMFLOORD did not start"
	cat "$tmp/d.err"
	exit 1
}
dport=$(say "$line" | sed 's/.* port \([0-9][0-9]*\).*/\1/')
base="http://127.0.0.1:$dport"

# --- fetching ------------------------------------------------------------

# Llama 3.1 8B: the design's 8,030,261,248 parameters.
estimate /ok 200 '"parameters": *8030261248'
estimate /ok 200 '"parameters": *8030261248'
hits=$(curl -sS -m 5 "$srv/hits?path=/ok" || :)
if [ "$hits" = 1 ]; then
	ok "the second /ok came from the cache"
else
	bad "the server saw /ok $hits times, want 1"
fi
estimate /redirect-ok 200 '"parameters": *8030261248'
estimate /404 502 "$srv/404: answered HTTP 404"
estimate /big 502 "$srv/big: larger than 256 KiB"
estimate /chunked-big 502 "$srv/chunked-big: larger than 256 KiB"
estimate /truncated 502 "$srv/truncated: could not fetch"
estimate /redirect-away 502 \
    "redirected to http://127.0.0.2:$sport/ok which is not allowed"
estimate /redirect-loop 502 "redirected more than 3 times"
estimate /redirect-creds 502 \
    "redirected to http://127.0.0.2:$sport/ok which is not allowed"
if grep -q 'secret' "$tmp/d.err"; then
	bad "a redirect's password reached the log: $(grep secret "$tmp/d.err")"
else
	ok "a redirect's user name and password stay out of the log"
fi

# A body that is not JSON is fetched fine, then refused as a config.
job "$srv/notjson"
post /v1/estimate "$tmp/job.yaml"
if { [ "$code" = 502 ] || [ "$code" = 400 ]; } && says "$srv/notjson" &&
    says "JSON"; then
	ok "configUrl /notjson: $code, the error says it is not JSON"
else
	bad "configUrl /notjson: got $code, want 502 or 400 naming JSON"
fi
# Neither it nor a config missing fields is cached: each is fetched again.
post /v1/estimate "$tmp/job.yaml"
job "$srv/partial"
post /v1/estimate "$tmp/job.yaml"
pcode=$code
post /v1/estimate "$tmp/job.yaml"
hits=$(curl -sS -m 5 "$srv/hits?path=/notjson" || :)
phits=$(curl -sS -m 5 "$srv/hits?path=/partial" || :)
if [ "$hits" = 2 ] && [ "$phits" = 2 ] && [ "$pcode" = 400 ]; then
	ok "a body that is not a config is not cached: fetched again"
else
	bad "/notjson fetched $hits times, /partial ($pcode) $phits, want 2"
fi

# --- the command line fetches with the same rules ------------------------

# memfloor estimate/admit fetch a configUrl themselves when --model-host
# allows its host, and answer as the daemon does.
cli=${MEMFLOOR:-$top/build/memfloor}
cli_run() {
	out=$("$cli" "$@" -f "$top/catalog/gpus.yaml" -m "$top/catalog/models" \
	    -o json 2>"$tmp/cli.err") && rc=0 || rc=$?
}
job "$srv/ok?cli"
cli_run estimate "$tmp/job.yaml" --model-host "$srv"
if [ "$rc" = 0 ] && say "$out" | grep -q '"parameters": *8030261248'; then
	ok "memfloor estimate fetches a configUrl from an allowed host"
else
	bad "memfloor estimate with --model-host: exit $rc, $(cat "$tmp/cli.err")"
fi
cli_run admit "$tmp/job.yaml" --model-host "$srv"
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then
	ok "memfloor admit fetches it too (exit $rc)"
else
	bad "memfloor admit with --model-host: exit $rc, $(cat "$tmp/cli.err")"
fi
cli_run estimate "$tmp/job.yaml" --model-host "http://127.0.0.2:$sport"
if [ "$rc" = 2 ] && grep -q "host 127.0.0.1 is not allowed" "$tmp/cli.err"
then
	ok "memfloor estimate: a host --model-host does not name is refused"
else
	bad "memfloor estimate, host not allowed: exit $rc, $(cat "$tmp/cli.err")"
fi
job "$srv/notjson"
cli_run estimate "$tmp/job.yaml" --model-host "$srv"
if [ "$rc" = 3 ] && grep -q "not a JSON config" "$tmp/cli.err"; then
	ok "memfloor estimate: a body that is not JSON is said so (exit 3)"
else
	bad "memfloor estimate, /notjson: exit $rc, $(cat "$tmp/cli.err")"
fi
job "$srv/ok?cli"
cli_run estimate "$tmp/job.yaml"
if [ "$rc" = 2 ] && grep -q "spec.model.configUrl.*--model-host" "$tmp/cli.err"
then
	ok "memfloor estimate without --model-host says how to fetch"
else
	bad "memfloor estimate without --model-host: exit $rc"
fi

# --- the policy ----------------------------------------------------------

job "https://models.invalid/config.json"
post /v1/estimate "$tmp/job.yaml"
if [ "$code" = 400 ] && says "host models.invalid is not allowed"; then
	ok "a host not allowed: 400"
else
	bad "a host not allowed: got $code, want 400"
fi
job "http://127.0.0.2:$sport/ok"
post /v1/estimate "$tmp/job.yaml"
if [ "$code" = 400 ] && says "host 127.0.0.2 is not allowed"; then
	ok "another loopback address: 400"
else
	bad "another loopback address: got $code, want 400"
fi
job "http://127.0.0.1:$sport@models.invalid/ok"
post /v1/estimate "$tmp/job.yaml"
if [ "$code" = 400 ]; then
	ok "an allowed host as a user name: 400"
else
	bad "an allowed host as a user name: got $code, want 400"
fi
job "file:///etc/passwd"
post /v1/estimate "$tmp/job.yaml"
if [ "$code" = 400 ] && ! says "root:"; then
	ok "file:// URL: 400"
else
	bad "file:// URL: got $code, want 400"
fi

# --- a slow fetch holds no server thread ---------------------------------

job "$srv/slow"
cp "$tmp/job.yaml" "$tmp/slow.yaml"
curl -sS -m 20 -o "$tmp/slow.body" -w '%{http_code}' \
    -H 'Content-Type: application/yaml' --data-binary "@$tmp/slow.yaml" \
    "$base/v1/estimate" >"$tmp/slow.code" 2>&1 &
slow_pid=$!
sleep 0.5

get /healthz
if [ "$code" = 200 ] && quick; then
	ok "GET /healthz during a slow fetch: $code in $secs s"
else
	bad "GET /healthz during a slow fetch: $code in $secs s"
fi
post /v1/admit "$top/examples/min-memory-88Gi.yaml"
if [ "$code" = 200 ] && quick; then
	ok "POST /v1/admit during a slow fetch: $code in $secs s"
else
	bad "POST /v1/admit during a slow fetch: $code in $secs s"
fi
job "$srv/ok?during-slow"
post /v1/estimate "$tmp/job.yaml"
if [ "$code" = 200 ] && quick; then
	ok "another configUrl during a slow fetch: $code in $secs s"
else
	bad "another configUrl during a slow fetch: $code in $secs s"
fi

wait "$slow_pid" || :
slow_pid=
cp "$tmp/slow.body" "$tmp/body" 2>/dev/null || :
if [ "$(cat "$tmp/slow.code")" = 502 ] &&
    says "$srv/slow: timed out after 5 s"; then
	ok "the slow fetch timed out: 502"
else
	bad "the slow fetch: got $(cat "$tmp/slow.code"), want 502 timed out"
fi

if kill -0 "$d_pid" 2>/dev/null; then
	ok "memfloord is still running"
else
	bad "memfloord exited"
	cat "$tmp/d.err"
fi

say "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
