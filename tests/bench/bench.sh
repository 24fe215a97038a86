#!/bin/sh
# make bench: memfloord against libmicrohttpd's hello-world and nginx on
# the same machine, same run.
#
# First instructions a request, counted with callgrind (the same count on
# a busy machine as on a quiet one): the hello-world of the same HTTP
# layer (tests/bench/bench_hello.c, built by make bench with the daemon's
# flags) and memfloord's admit of a model-derived job and of a floor, its
# estimate and its admission-review over plain HTTP.  Each server, under
# valgrind --tool=callgrind, is sent BENCH_WARMUP requests and then
# BENCH_REQUESTS more on one keep-alive connection (tests/bench/
# keepalive.py), and stopped; a second run is sent the warm-up alone.  The
# count is the whole process's, every thread, start and stop included:
# (count of the two together - count of the warm-up alone) / BENCH_REQUESTS
# leaves what the requests after the warm-up cost.
#
# Then requests a second, with wrk: nginx answers every POST with a static
# 200 of the same size as memfloord's decision; wrk drives both with the
# same connection counts and POST bodies.  Prints requests per second, p50
# and p99 latency, and the ratio memfloord / nginx: for /v1/admit over
# plain HTTP, then memfloord's admit of the model-derived job against the
# hello-world, one thread each, then for /v1/admission-review over TLS
# with real AdmissionReview bodies, compact as the API server sends them
# (tests/bench/review_body.py): the Job of
# examples/k8s-admissionreview.json with only memfloor.dev/min-memory:
# 88Gi and as it is (its spec annotation), and a Pod, the kube-rs sample
# of tests/data/review/ with memfloor.dev/min-memory: 88Gi, also as that
# file is, indented; memfloord and nginx serve the same throwaway
# certificate (made with openssl), both speaking TLS 1.3 (checked).  All
# three servers accept a connection with its first bytes (TCP_DEFER_ACCEPT:
# nginx's "listen ... deferred").  Then the in-process placement benchmark.
#
# On a shared machine one run of either can be off by a third, so the two
# take turns, BENCH_ROUNDS times each, and the medians are printed.
#
# wrk and the server under test do not share cores: wrk runs on the first
# half of the CPUs this script may use, the servers on the rest, each with
# one worker per core it has (memfloord's default; nginx is told so).
# Sharing, the scheduler's time slices between load and server set the
# tail latency of both.  BENCH_PIN=0 lets them share all cores.
#
# BENCH_TLS_KEY=ec makes the certificate ECDSA P-256 rather than
# RSA-2048, whose signature in GnuTLS sets the TLS rows' p99 at 64
# connections (docs/performance.md).
#
# BENCH_COUNTS=only prints the instructions a request and stops: the
# counts are the same on a busy machine, the requests a second are not.
set -eu
top=${MF_TOP:-$(pwd)}
daemon=${MEMFLOORD:-$top/build/memfloord}
hello=${BENCH_HELLO:-$top/build/bench_hello}
secs=${BENCH_SECONDS:-3}
warmup=${BENCH_WARMUP:-100}
requests=${BENCH_REQUESTS:-1000}
rounds=${BENCH_ROUNDS:-3}
conns=${BENCH_CONNECTIONS:-"16 64"}
pin=${BENCH_PIN:-1}
counts=${BENCH_COUNTS:-}
tls=${BENCH_TLS_KEY:-rsa}
case $tls in
rsa) tls_key="-newkey rsa:2048" ;;
ec) tls_key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1" ;;
*) echo "bench: BENCH_TLS_KEY is rsa or ec"; exit 1 ;;
esac

# The CPUs this script may use, as a list taskset reads ("0-3,8").
cpus=$(taskset -cp $$ 2>/dev/null | sed 's/.*: //') || cpus=""
ncpu=$(nproc)
[ -n "$cpus" ] && [ "$ncpu" -ge 2 ] || pin=0
if [ "$pin" = 1 ]; then
	# Expand the list, then split it: wrk gets the first half.
	all=$(echo "$cpus" | tr ',' '\n' | while IFS=- read -r a b; do
		seq "$a" "${b:-$a}"; done)
	nload=$((ncpu / 2))
	load_cpus=$(echo "$all" | head -n "$nload" | paste -sd, -)
	server_cpus=$(echo "$all" | tail -n +"$((nload + 1))" | paste -sd, -)
	workers=$((ncpu - nload))
	on_load="taskset -c $load_cpus"
	on_server="taskset -c $server_cpus"
else
	nload=$ncpu
	workers=$ncpu
	on_load=""
	on_server=""
fi
threads=${BENCH_THREADS:-$nload}

need() {
	command -v "$1" >/dev/null 2>&1 && return
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "bench: installing $2"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" \
		    >/dev/null 2>&1 || { apt-get update -qq >/dev/null &&
		    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" \
		    >/dev/null; }
	fi
	command -v "$1" >/dev/null 2>&1 ||
	    { echo "bench: needs $1 (apt-get install $2)"; exit 1; }
}
need valgrind valgrind
if [ "$counts" != only ]; then
	need wrk wrk
	[ -x /usr/sbin/nginx ] || need nginx nginx-light
fi
nginx=/usr/sbin/nginx

work=$(mktemp -d)
dpid=
hpid=
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null || true
	[ -n "$hpid" ] && kill "$hpid" 2>/dev/null || true
	[ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# port_of LOG TRIES PAUSE: the port a server's LOG says it listens on,
# looked for TRIES times PAUSE seconds apart; "" when it never says.
port_of() {
	for _ in $(seq "$2"); do
		port=$(sed -n 's/.*listening on .* port \([0-9]*\).*/\1/p' "$1")
		[ -n "$port" ] && break
		sleep "$3"
	done
	echo "$port"
}

# start_daemon LOG ARGS...: memfloord on a free port, its pid in $dpid and
# its port in $mport.
start_daemon() {
	dlog=$1
	shift
	$on_server "$daemon" -d -l 127.0.0.1:0 -f "$top/catalog/gpus.yaml" \
	    -m "$top/catalog/models" "$@" 2>"$dlog" &
	dpid=$!
	mport=$(port_of "$dlog" 100 0.05)
	[ -n "$mport" ] || { cat "$dlog"; exit 1; }
}
# counted OUT PATH BODY CONTENT-TYPE N PROGRAM ARGS...: PROGRAM under
# callgrind, sent N requests on one keep-alive connection, then stopped;
# prints the answer's size and the instructions the whole process ran.
counted() {
	out=$1 path=$2 body=$3 ctype=$4 n=$5
	shift 5
	# The log is the previous run's until the new one truncates it.
	: >"$out.log"
	valgrind --tool=callgrind --callgrind-out-file="$out" "$@" \
	    >/dev/null 2>>"$out.log" &
	cpid=$!
	cport=$(port_of "$out.log" 600 0.1)
	if [ -z "$cport" ] || ! answer=$(python3 \
	    "$top/tests/bench/keepalive.py" "$cport" "$path" "$body" "$ctype" \
	    "$n"); then
		kill "$cpid"
		cat "$out.log" >&2
		exit 1
	fi
	kill "$cpid"
	wait "$cpid" || { cat "$out.log" >&2; exit 1; }
	echo "${answer#* } $(awk '$1 == "summary:" {print $2}' "$out")"
}

# per_request NAME PATH BODY CONTENT-TYPE PROGRAM ARGS...: one line of
# $work/counts, "NAME BYTES INSTRUCTIONS": the answer's size and the
# instructions a request after the warm-up.
per_request() {
	name=$1 path=$2 body=$3 ctype=$4
	shift 4
	warm=$(counted "$work/cg.warm" "$path" "$body" "$ctype" "$warmup" "$@")
	all=$(counted "$work/cg.all" "$path" "$body" "$ctype" \
	    "$((warmup + requests))" "$@")
	echo "$name ${all% *} $(((${all#* } - ${warm#* }) / requests))" \
	    >>"$work/counts"
}

python3 "$top/tests/bench/review_body.py" \
    "$top/examples/k8s-admissionreview.json" >"$work/job-spec.json"
llama=$top/examples/llama-8b-8bit-admit.yaml

# A store as a site's daemon holds one: $observations observations of
# other jobs (tests/bench/observations.py), posted to a daemon that is
# then stopped; each daemon below that has a store starts on a copy.
observations=${BENCH_OBSERVATIONS:-1000}
echo "bench-token-0123456789abcdef" >"$work/token"
start_daemon "$work/seed.log" --store "$work/seed.db" \
    --observe-token-file "$work/token"
python3 "$top/tests/bench/observations.py" "$mport" "$work/token" "$llama" \
    "$observations"
kill "$dpid"
wait "$dpid" 2>/dev/null || true
store() { # NAME: a copy of the seeded store, as memfloord's arguments
	cp "$work/seed.db" "$work/$1.db"
	echo --store "$work/$1.db" --observe-token-file "$work/token"
}

: >"$work/counts"
per_request hello-world / "$llama" application/yaml "$hello" 1
for m in llama-8b-8bit-admit min-memory-88Gi; do
	per_request "admit-$m" /v1/admit "$top/examples/$m.yaml" \
	    application/yaml "$daemon" -d -l 127.0.0.1:0 \
	    -f "$top/catalog/gpus.yaml" -m "$top/catalog/models" --threads 1
done
# shellcheck disable=SC2046 # store's words are arguments
per_request "admit-llama-8b-8bit-admit-store" /v1/admit "$llama" \
    application/yaml "$daemon" -d -l 127.0.0.1:0 \
    -f "$top/catalog/gpus.yaml" -m "$top/catalog/models" --threads 1 \
    $(store counted)
per_request estimate-llama-8b-8bit-admit /v1/estimate "$llama" \
    application/yaml "$daemon" -d -l 127.0.0.1:0 \
    -f "$top/catalog/gpus.yaml" -m "$top/catalog/models" --threads 1
per_request review-job-spec /v1/admission-review "$work/job-spec.json" \
    application/json "$daemon" -d -l 127.0.0.1:0 \
    -f "$top/catalog/gpus.yaml" -m "$top/catalog/models" --threads 1
awk -v n="$requests" -v w="$warmup" -v obs="$observations" '
NR == 1 { hw = $3 }
{ rows[NR] = sprintf("%-32s %6d %14.1fk %14.2f", $1, $2, $3 / 1000, $3 / hw) }
END {
	printf "%-32s %6s %15s %14s\n", "instructions a request, HTTP", \
	    "bytes", "instructions", "x hello-world"
	for (i = 1; i <= NR; i++)
		print rows[i]
	printf "\ncallgrind, whole process, one thread: (%d + %d requests" \
	    " - %d requests) / %d, one keep-alive connection; -store: with" \
	    " a store of %d observations of other jobs\n\n", w, n, w, n, obs
}' "$work/counts"
[ "$counts" != only ] || exit 0

start_daemon "$work/daemon.log"

# A free port for nginx: bind to 0 in python, release, reuse.
nport=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')

run_wrk() { # url body-file conns [content-type]
	cat >"$work/post.lua" <<LUA
local f = io.open("$2", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "${4:-application/yaml}"
LUA
	$on_load wrk -t "$threads" -c "$3" -d "${secs}s" --latency -s "$work/post.lua" "$1" \
	    >"$work/wrk.out" 2>&1
	rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk.out")
	p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.out")
	p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.out")
	errs=$(awk '/Non-2xx|Socket errors/ {print}' "$work/wrk.out" | tr '\n' ' ')
	echo "$rps $p50 $p99 $errs"
}

# compare NAME BYTES CONNS: one line of the table, the medians of
# $work/m.runs (memfloord) and of $work/n.runs (the other server), then
# what wrk reported besides.
compare() {
	python3 - "$1" "$2" "$3" "$work/m.runs" "$work/n.runs" <<'PY'
import statistics, sys

def seconds(t):
    for unit, scale in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if t.endswith(unit):
            return float(t[:-len(unit)]) * scale

def medians(path):
    runs = [line.split()[:3] for line in open(path)]
    return [statistics.median(float(r[0]) for r in runs),
            statistics.median(seconds(r[1]) for r in runs),
            statistics.median(seconds(r[2]) for r in runs)]

name, size, conns = sys.argv[1:4]
m, n = medians(sys.argv[4]), medians(sys.argv[5])
ms = lambda s: "%.2fms" % (s * 1e3)
print("%-24s %6s %5s %12.0f %9s %9s %12.0f %9s %9s %7.2f" % (name, size,
      conns, m[0], ms(m[1]), ms(m[2]), n[0], ms(n[1]), ms(n[2]), m[0] / n[0]))
PY
	errs=$(cut -d' ' -f4- "$work/m.runs" "$work/n.runs" | tr -s ' \n' ' ')
	[ -z "${errs# }" ] || echo "  wrk reported: $errs"
}

# turns URL OTHER-URL BODY CONNS [CONTENT-TYPE]: wrk against memfloord at
# URL and the other server at OTHER-URL, taking turns, $rounds runs each,
# into $work/m.runs and $work/n.runs (for compare).
turns() {
	: >"$work/m.runs"
	: >"$work/n.runs"
	for _ in $(seq "$rounds"); do
		run_wrk "$1" "$3" "$4" "${5:-}" >>"$work/m.runs"
		run_wrk "$2" "$3" "$4" "${5:-}" >>"$work/n.runs"
	done
}

# tls_version PORT: the TLS version a client gets at PORT ("TLSv1.3").
tls_version() {
	openssl s_client -connect "127.0.0.1:$1" </dev/null 2>/dev/null |
	    sed -n 's/^New, \(TLSv[0-9.]*\),.*/\1/p'
}

# same_tls PORT OTHER-PORT: fails unless both servers speak one version.
same_tls() {
	a=$(tls_version "$1") b=$(tls_version "$2")
	[ -n "$a" ] && [ "$a" = "$b" ] ||
	    { echo "bench: memfloord speaks '$a', nginx '$b'"; exit 1; }
}

# row NAME BODY PATH CONTENT-TYPE SCHEME: one line of the table, memfloord
# at $mport and nginx, over SCHEME (http or https), taking turns.
row() {
	name=$1 body=$2 path=$3 ctype=$4 scheme=$5
	size=$(curl -sk --data-binary @"$body" -H "Content-Type: $ctype" \
	    -o "$work/answer" -w '%{size_download}' \
	    "$scheme://127.0.0.1:$mport$path")
	python3 -c "import sys; sys.stdout.write('x' * $size)" >"$work/static"
	# Connections accepted with their first bytes, as memfloord's are.
	listen="listen 127.0.0.1:$nport deferred;"
	# TLS 1.3 as memfloord speaks it (and the API server's Go client):
	# Debian's nginx 1.22 offers only up to 1.2 unless told, and a 1.2
	# client waits for the server's Finished before its first request,
	# where a 1.3 client sends it at once and it waits on the server.
	[ "$scheme" = https ] && listen="listen 127.0.0.1:$nport ssl deferred;
		ssl_certificate $work/tls.crt;
		ssl_certificate_key $work/tls.key;
		ssl_protocols TLSv1.2 TLSv1.3;"
	cat >"$work/nginx.conf" <<NGINX
worker_processes $workers;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $work;
	proxy_temp_path $work;
	fastcgi_temp_path $work;
	uwsgi_temp_path $work;
	scgi_temp_path $work;
	server {
		$listen
		location / {
			default_type application/json;
			return 200 '$(cat "$work/static")';
		}
	}
}
NGINX
	$on_server $nginx -c "$work/nginx.conf" -p "$work" 2>/dev/null
	sleep 0.2
	[ "$scheme" = http ] || same_tls "$mport" "$nport"
	for c in $conns; do
		turns "$scheme://127.0.0.1:$mport$path" \
		    "$scheme://127.0.0.1:$nport$path" "$body" "$c" "$ctype"
		compare "$name" "$size" "$c"
	done
	kill "$(cat "$work/nginx.pid")"
	sleep 0.2
}

header() { # TITLE OTHER-SERVER
	printf '%-24s %6s %5s %12s %9s %9s %12s %9s %9s %7s\n' "$1" bytes \
	    conns memfloord p50 p99 "$2" p50 p99 ratio
}

header "/v1/admit, HTTP" nginx
for manifest in min-memory-88Gi llama-8b-8bit-admit; do
	row "$manifest" "$top/examples/$manifest.yaml" /v1/admit \
	    application/yaml http
done
kill "$dpid" 2>/dev/null || true
wait "$dpid" 2>/dev/null || true

# The model-derived admit against the hello-world, one thread each on the
# servers' CPUs, at the first connection count.
echo
start_daemon "$work/daemon-1.log" --threads 1
$on_server "$hello" 1 2>"$work/hello.log" &
hpid=$!
hport=$(port_of "$work/hello.log" 100 0.05)
[ -n "$hport" ] || { cat "$work/hello.log"; exit 1; }
c=${conns%% *}
size=$(curl -s --data-binary @"$llama" -H 'Content-Type: application/yaml' \
    -o /dev/null -w '%{size_download}' "http://127.0.0.1:$mport/v1/admit")
turns "http://127.0.0.1:$mport/v1/admit" "http://127.0.0.1:$hport/" \
    "$llama" "$c"
header "one thread each, HTTP" hello
compare llama-8b-8bit-admit "$size" "$c"
kill "$hpid"
wait "$hpid" 2>/dev/null || true
hpid=

# The same daemon with the store of $observations observations, against
# itself without one, taking turns.
plain=$mport plain_pid=$dpid
# shellcheck disable=SC2046 # store's words are arguments
start_daemon "$work/daemon-store.log" --threads 1 $(store wrk)
turns "http://127.0.0.1:$mport/v1/admit" "http://127.0.0.1:$plain/v1/admit" \
    "$llama" "$c"
header "with a store, one thread" "no store"
compare llama-8b-8bit-admit "$size" "$c"
kill "$dpid" "$plain_pid"
wait "$dpid" "$plain_pid" 2>/dev/null || true

# The same throwaway certificate for both servers.
echo
# shellcheck disable=SC2086 # tls_key's words are arguments
if openssl req -x509 $tls_key -nodes -days 1 -subj /CN=127.0.0.1 \
    -keyout "$work/tls.key" -out "$work/tls.crt" >/dev/null 2>&1; then
	start_daemon "$work/daemon-tls.log" --tls-cert "$work/tls.crt" \
	    --tls-key "$work/tls.key"
	job=$top/examples/k8s-admissionreview.json
	pod=$top/tests/data/review/pod-min-memory.json
	python3 "$top/tests/bench/review_body.py" "$job" --floor 88Gi \
	    >"$work/job-min-memory.json"
	python3 "$top/tests/bench/review_body.py" "$job" >"$work/job-spec.json"
	python3 "$top/tests/bench/review_body.py" "$pod" >"$work/pod-min-memory.json"
	header "admission-review, TLS, $tls" nginx
	for b in job-min-memory job-spec pod-min-memory; do
		row "$b" "$work/$b.json" /v1/admission-review \
		    application/json https
	done
	row pod-min-memory-indented "$pod" /v1/admission-review \
	    application/json https
	kill "$dpid" 2>/dev/null || true
	wait "$dpid" 2>/dev/null || true
else
	echo "bench: no openssl; the TLS admission-review rows are left out"
fi
dpid=
echo
if [ "$pin" = 1 ]; then
	where="wrk on CPU $load_cpus, the servers on CPU $server_cpus"
else
	where="wrk and the servers sharing $ncpu CPUs"
fi
echo "bytes: the answer's size, served by both; wrk -t $threads, ${secs} s" \
    "per run; medians of $rounds runs each, taking turns; $where," \
    "$workers server threads or workers"
echo
"${BENCH_PLACE:-$top/build/bench_place}"
