#!/bin/sh
# tier: full (installs and starts Debian's prometheus)
# tests/integration/prometheus.sh: memfloord's Prometheus reader (design 23,
# --prometheus) against a real Prometheus scraping a stand-in for
# dcgm-exporter (tests/integration/dcgm_exporter.py, its exposition format
# and label set).
#
# Installs Debian's prometheus when missing (as root, with apt-get); starts
# the exporter, Prometheus (a 1 s scrape, its TSDB in the scratch
# directory, free loopback ports) and two memfloord replicas on one store,
# both reading Prometheus every second with observations.finishAfter 3 s:
#   - a job admitted (so the store knows its fingerprint) runs on two
#     H100s, the exporter serving a peak of 75000 MiB on one GPU and 60000
#     on the other, then nothing: within a minute its observation is
#     listed, once although two replicas read it, source dcgm, on H100,
#     2 GPUs, 75000 x 1048576 bytes; and still once periods later;
#   - its next admission needs the peak on every card (the estimate moved
#     by peak / estimate); on H100 the device figure is held against the
#     card's memory less observations.margin (75000 <= 81559 x 0.95 =
#     77481.05 MiB: it fits, where a torch peak would have to be within
#     81559 x 0.90 = 73403.1), and A100-80GB (81920 x 0.90 = 73728 MiB
#     usable at most) is no longer offered;
#   - another job, its host label spelt hostname, with a peak half its
#     estimate: kept, and its next admission is where it was, its need the
#     estimate (a device figure lowers nothing);
#   - a run of a fingerprint no admission recorded is skipped and logged;
#   - a run scraped as a ServiceMonitor scrapes dcgm-exporter by default
#     (honor_labels false, the target's own namespace, pod and container):
#     Prometheus renames the job's exported_namespace and exported_pod, and
#     the run is kept as the job's, once, although the exporter's pod was
#     replaced during it, with the larger peak of the two;
#   - memfloord pointed at a port where nothing listens, and at one that
#     answers garbage: admissions answer, the outage is logged once, and
#     nothing is kept; the query carries --prometheus-token-file's bearer
#     token, and over https --prometheus-ca's certificate is trusted and
#     without it refused;
#   - the flags are checked by memfloord -n; a --prometheus-window that
#     leaves no period after observations.finishAfter is logged.
# Every process it started is stopped on exit; each memfloord must stop
# cleanly (exit 0).  It never skips: no Prometheus is a failure.
#
# Run from the repository root (or set MF_TOP).  Prints one line per check
# and "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
check_name=prometheus
procs=""
cleanup() {
	# shellcheck disable=SC2086 # a list of PIDs
	stop_all $procs
}
. "$top/tests/lib/check.sh"

MIB=1048576

# --- prometheus ---------------------------------------------------------------
need_program prom prometheus prometheus /usr/bin/prometheus prometheus
need_program python3 prometheus python3 python3
need_program curl prometheus curl curl

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# wait_for WHAT TENTHS COMMAND...: COMMAND succeeds within TENTHS tenths
# of a second, or the test fails saying WHAT and stops.
wait_for() {
	what=$1
	n=$2
	shift 2
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		if [ $n -le 0 ]; then
			fail "$what"
			for f in "$tmp"/*.log; do
				[ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }
			done
			summary || true
			exit 1
		fi
		sleep 0.1
	done
}

# --- the flags, checked with -n ------------------------------------------------
# flag_error NAME WANT ARGS...: memfloord -n ARGS exits 1 saying WANT.
flag_error() {
	name=$1
	want=$2
	shift 2
	frc=0
	"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models "$@" \
	    >"$tmp/n.out" 2>&1 || frc=$?
	if [ "$frc" = 1 ] && grep -qF -- "$want" "$tmp/n.out"; then
		pass "$name"
	else
		fail "$name: exit $frc, $(cat "$tmp/n.out")"
	fi
}
flag_error "--prometheus without --store is refused" \
    "--prometheus needs --store" --prometheus http://127.0.0.1:9
flag_error "--prometheus of another scheme is refused" \
    "not an http:// or https:// URL" --store "$tmp/n.db" \
    --prometheus ftp://127.0.0.1/
flag_error "--prometheus-token-file without --prometheus is refused" \
    "need --prometheus URL" --prometheus-token-file /dev/null
: >"$tmp/no-token"
flag_error "an empty --prometheus-token-file is refused" \
    "holds no token" --store "$tmp/n.db" --prometheus http://127.0.0.1:9 \
    --prometheus-token-file "$tmp/no-token"
flag_error "a --prometheus-token-file that is no regular file is refused" \
    "/dev/null: not a regular file (a character device)" --store "$tmp/n.db" \
    --prometheus http://127.0.0.1:9 --prometheus-token-file /dev/null
printf 'first\nsecond\n' >"$tmp/two-tokens"
flag_error "a --prometheus-token-file of two tokens is refused" \
    "$tmp/two-tokens: more than 1 token" --store "$tmp/n.db" \
    --prometheus http://127.0.0.1:9 --prometheus-token-file "$tmp/two-tokens"
frc=0
"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models --store "$tmp/n.db" \
    --prometheus http://127.0.0.1:9/ --prometheus-window 3600 \
    >"$tmp/n.out" 2>&1 || frc=$?
is "memfloord -n with --prometheus and --store: configuration OK" \
    "$frc $(cat "$tmp/n.out")" "0 configuration OK"

# --- the exporter and Prometheus ------------------------------------------------
series=$tmp/series
: >"$series"
python3 tests/integration/dcgm_exporter.py "$tmp/exporter.port" "$series" \
    "$tmp/auth" >"$tmp/exporter.log" 2>&1 &
procs="$! $procs"
wait_for "the stand-in exporter did not start" 100 test -s "$tmp/exporter.port"
eport=$(cat "$tmp/exporter.port")

# Two more, scraped with the target labels a ServiceMonitor gives a
# dcgm-exporter pod; the second is that pod replaced.
for x in 2 3; do
	: >"$series$x"
	python3 tests/integration/dcgm_exporter.py "$tmp/exporter$x.port" \
	    "$series$x" >"$tmp/exporter$x.log" 2>&1 &
	procs="$! $procs"
	wait_for "the stand-in exporter $x did not start" 100 \
	    test -s "$tmp/exporter$x.port"
done
eport2=$(cat "$tmp/exporter2.port")
eport3=$(cat "$tmp/exporter3.port")

pport=$(free_port)
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: dcgm
    static_configs:
      - targets: ['127.0.0.1:$eport']
  - job_name: dcgm-monitor
    static_configs:
      - targets: ['127.0.0.1:$eport2']
        labels:
          namespace: gpu-operator
          pod: nvidia-dcgm-exporter-7x2kq
          container: nvidia-dcgm-exporter
      - targets: ['127.0.0.1:$eport3']
        labels:
          namespace: gpu-operator
          pod: nvidia-dcgm-exporter-9p4zt
          container: nvidia-dcgm-exporter
EOF
"$prom" --config.file="$tmp/prometheus.yml" \
    --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$pport" >"$tmp/prometheus.log" 2>&1 &
procs="$! $procs"
pbase=http://127.0.0.1:$pport
wait_for "Prometheus did not become ready on $pbase" 300 \
    curl -sf -m 2 "$pbase/-/ready"

# --- memfloord: two replicas on one store ---------------------------------------
# The shipped catalogue, read every second, a run over after 3 s, with a
# card no job is placed on (the dearest) that DCGM names by its
# dcgmModelName alone.
cp catalog/gpus.yaml "$tmp/gpus.yaml"
cat >>"$tmp/gpus.yaml" <<'YAML'
  - name: STAND-IN
    memory: 40Gi
    hourlyPrice: 900
    relativeThroughput: 1
    dcgmModelName: NVIDIA Stand-in 40GB
observations:
  refreshSeconds: 1
  finishAfter: 3
YAML
db=$tmp/store.db
serve "$tmp/daemon.log" -f "$tmp/gpus.yaml" --store "$db" \
    --prometheus "$pbase" --prometheus-window 600
procs="$pid $procs"
d1=$pid
base=http://127.0.0.1:$port
serve "$tmp/replica.log" -f "$tmp/gpus.yaml" --store "$db" \
    --prometheus "$pbase/" --prometheus-window 600
procs="$pid $procs"
d2=$pid
base2=http://127.0.0.1:$port

# metric BASE SERIES: the value of SERIES (name and labels, as written) in
# BASE's /metrics; 0 when absent.
metric() {
	curl -s -m 10 "$1/metrics" | awk -v s="$2" \
	    '$1 == s { v = $2 } END { print v + 0 }'
}
# runs OUTCOME: the runs of that outcome, both replicas together.
runs() {
	s="memfloor_prometheus_runs_total{outcome=\"$1\"}"
	echo $(($(metric "$base" "$s") + $(metric "$base2" "$s")))
}

# admit FILE [BASE]: the answer of POST /v1/admit in $tmp/ans.
admit() {
	curl -s -m 10 -o "$tmp/ans" -w '%{http_code}' -X POST \
	    --data-binary @"$1" "${2:-$base}/v1/admit"
}
# listed FP [BASE]: the observations of FP, as JSON, in $tmp/list; prints
# how many.
listed() {
	curl -s -m 10 "${2:-$base}/v1/observations?fingerprint=$1" >"$tmp/list"
	python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["observations"]))' "$tmp/list"
}
# one FP: FP has exactly one observation.
one() { [ "$(listed "$1")" = 1 ]; }
# placed EXPR: EXPR over the answer's placement and alternatives (ps),
# with the job's estimate (est: $pest) and its peak in bytes (peak:
# $ppeak).
pest=0
ppeak=0
placed() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
ps = [d["placement"]] + d["alternatives"]
est, peak = int(sys.argv[2]), int(sys.argv[3])
print(eval(sys.argv[4]))' "$tmp/ans" "$pest" "$ppeak" "$1"
}
# gpu LABELS MIB: a series line of DCGM_FI_DEV_FB_USED.
gpu() {
	printf '{%s} %s\n' "$1" "$2"
}

# --- a run above the estimate ----------------------------------------------------
cat >"$tmp/a.yaml" <<'YAML'
apiVersion: memfloor.dev/v1
kind: Job
metadata:
  name: served
spec:
  model:
    name: meta-llama/Llama-3.1-8B
  workload:
    kind: inference
    concurrency: 4
    contextLength: 4096
YAML
is "job a: admitted" "$(admit "$tmp/a.yaml")" 200
fpa=$(field fingerprint)
est=$(field need.perGpuBytes)
carda=$(field placement.gpu)
is "job a: offered on A100-80GB before any run" \
    "$(placed '"A100-80GB" in [p["gpu"] for p in ps]')" True

h100='modelName="NVIDIA H100 80GB HBM3",Hostname="node1",container="train",namespace="default",pod="job-a-0"'
run_a() {
	gpu "gpu=\"0\",UUID=\"GPU-7d6a1c2e-0000-4000-8000-000000000000\",device=\"nvidia0\",$h100,memfloor_dev_fingerprint=\"$fpa\"" "$1"
	gpu "gpu=\"1\",UUID=\"GPU-7d6a1c2e-0000-4000-8000-000000000001\",device=\"nvidia1\",$h100,memfloor_dev_fingerprint=\"$fpa\"" "$2"
}
run_a 40000 30000 >"$series"
sleep 3
run_a 75000 60000 >"$series"
sleep 3
: >"$series"
wait_for "job a's run was not kept within a minute" 600 one "$fpa"
pass "job a's run is kept once the exporter stops serving it"
peak=$((75000 * MIB))
pest=$est
ppeak=$peak
obs() {
	python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))["observations"][0]
print(eval(sys.argv[2]))' "$tmp/list" "$1"
}
listed "$fpa" >/dev/null
is "its observation: source dcgm, on H100, 2 GPUs, the larger GPU's peak in bytes" \
    "$(obs '(o["source"], o["card"], o["count"], o["deviceUsedBytes"], o["peakReservedBytes"])')" \
    "('dcgm', 'H100', 2, $peak, None)"
sleep 4
is "read by two replicas, periods later: kept once" "$(listed "$fpa")" 1

is "job a again: admitted" "$(admit "$tmp/a.yaml")" 200
is "the need on every card is the peak (the estimate x peak / estimate)" \
    "$(placed 'all(abs(p["observed"]["needBytes"] - peak) < 2 for p in ps)')" \
    True
is "the ratio is peak / estimate" \
    "$(placed 'abs(ps[0]["observed"]["needRatio"] - peak / est) < 0.01')" True
is "H100 holds it against 95% of its memory, measured there" \
    "$(placed '[p["observed"]["onThisCard"] for p in ps if p["gpu"] == "H100"]')" \
    "[True]"
is "A100-80GB (at most 90% usable) is no longer offered" \
    "$(placed '"A100-80GB" in [p["gpu"] for p in ps]')" False

# --- a run below the estimate, host label spelt hostname ----------------------
cat >"$tmp/b.yaml" <<'YAML'
apiVersion: memfloor.dev/v1
kind: Job
metadata:
  name: small
spec:
  model:
    name: meta-llama/Llama-3.1-8B
  workload:
    kind: inference
    concurrency: 2
    contextLength: 2048
YAML
is "job b: admitted" "$(admit "$tmp/b.yaml")" 200
fpb=$(field fingerprint)
estb=$(field need.perGpuBytes)
cardb=$(field placement.gpu)
low=$((estb / 2 / MIB))
gpu "gpu=\"0\",UUID=\"GPU-7d6a1c2e-0000-4000-8000-000000000002\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"node2\",container=\"serve\",namespace=\"default\",pod=\"job-b-0\",memfloor_dev_fingerprint=\"$fpb\"" \
    "$low" >"$series"
sleep 3
: >"$series"
wait_for "job b's run (hostname) was not kept within a minute" 600 one "$fpb"
pass "the hostname spelling: job b's run is kept"
listed "$fpb" >/dev/null
is "its peak: $low MiB in bytes" "$(obs 'o["deviceUsedBytes"]')" \
    $((low * MIB))
# A replica's summaries take the store's runs every period: the run is
# listed (read from the store) before an admission carries it.
carries() {
	[ "$(admit "$1")" = 200 ] && [ "$(placed '"observed" in ps[0]')" = True ]
}
wait_for "job b's next admission did not carry its run within a minute" \
    600 carries "$tmp/b.yaml"
pass "job b again: admitted, with its run"
pest=$estb
ppeak=$((low * MIB))
is "a peak below the estimate lowers nothing: the same card, the estimate's need" \
    "$(field placement.gpu) $(field need.perGpuBytes) $(placed 'all(abs(p["observed"]["needBytes"] - est) < 2 for p in ps)')" \
    "$cardb $estb True"

# --- a card known by its dcgmModelName ------------------------------------------
gpu "gpu=\"0\",UUID=\"GPU-7d6a1c2e-0000-4000-8000-000000000004\",device=\"nvidia0\",modelName=\"NVIDIA Stand-in 40GB\",Hostname=\"node4\",namespace=\"default\",pod=\"job-b-1\",memfloor_dev_fingerprint=\"$fpb\"" \
    2000 >"$series"
sleep 3
: >"$series"
two() { [ "$(listed "$1")" = 2 ]; }
wait_for "job b's run on the card named by dcgmModelName was not kept" 600 \
    two "$fpb"
is "a card named by its dcgmModelName: kept on STAND-IN, 2000 MiB in bytes" \
    "$(python3 -c 'import json, sys
os = json.load(open(sys.argv[1]))["observations"]
print(*[(o["card"], o["deviceUsedBytes"]) for o in os if o["card"] != "H100"])' \
        "$tmp/list")" "('STAND-IN', $((2000 * MIB)))"

# --- a fingerprint no admission recorded ---------------------------------------
stranger=0123456789abcdef0123456789abcdef
gpu "gpu=\"0\",UUID=\"GPU-7d6a1c2e-0000-4000-8000-000000000003\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node3\",namespace=\"default\",pod=\"job-c-0\",memfloor_dev_fingerprint=\"$stranger\"" \
    1000 >"$series"
sleep 3
: >"$series"
wait_for "the unknown fingerprint's run was not logged" 600 \
    grep -q "knows no admission of fingerprint $stranger" "$tmp/daemon.log"
pass "a run of an unknown fingerprint is logged"
is "and nothing is kept of it" "$(listed "$stranger")" 0
# Four runs, each handled once by each replica: three kept by one and
# kept before for the other, the stranger's unknown to both.
unknown_by_both() { [ "$(runs unknown)" = 2 ]; }
wait_for "both replicas did not handle the stranger's run" 300 unknown_by_both
is "the replicas' metrics: 3 runs kept, 3 kept before, 2 unknown, none invalid or failed" \
    "$(runs kept) $(runs duplicate) $(runs unknown) $(runs invalid) $(runs failed)" \
    "3 3 2 0 0"

# --- honor_labels false: the job's labels renamed exported_ ----------------
# Job b on node5 in namespace ml, served by one exporter pod and then by
# its replacement, the two at once for a moment as in a rolling update.
b5='gpu="0",UUID="GPU-7d6a1c2e-0000-4000-8000-000000000005",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node5",container="train",namespace="ml",pod="train-0"'
gpu "$b5,memfloor_dev_fingerprint=\"$fpb\"" 3000 >"${series}2"
sleep 3
gpu "$b5,memfloor_dev_fingerprint=\"$fpb\"" 5000 >"${series}3"
sleep 1
: >"${series}2"
sleep 3
: >"${series}3"
is "Prometheus gave the job's namespace and pod to the target, renamed exported_" \
    "$(curl -s -m 10 "$pbase/api/v1/series" \
        --data-urlencode 'match[]=DCGM_FI_DEV_FB_USED{job="dcgm-monitor"}' |
        python3 -c 'import json, sys
print(*sorted("%s/%s %s/%s" % (m["namespace"], m["pod"],
    m.get("exported_namespace"), m.get("exported_pod"))
    for m in json.load(sys.stdin)["data"]))')" \
    "gpu-operator/nvidia-dcgm-exporter-7x2kq ml/train-0 gpu-operator/nvidia-dcgm-exporter-9p4zt ml/train-0"
three() { [ "$(listed "$1")" = 3 ]; }
wait_for "job b's run in ml/train-0 was not kept within a minute" 600 \
    three "$fpb"
sleep 3
is "kept once, as ml/train-0's run; none named by the exporter's pod" \
    "$(listed "$fpb") $(cat "$tmp/daemon.log" "$tmp/replica.log" |
        grep -c "run $fpb ml/train-0 [0-9]*: kept observation" || true) $(cat \
        "$tmp/daemon.log" "$tmp/replica.log" | grep -c 'gpu-operator/' || true)" \
    "3 1 0"
is "its peak: the larger of the two exporter pods' (5000 MiB), on one GPU" \
    "$(python3 -c 'import json, sys
os = json.load(open(sys.argv[1]))["observations"]
print([(o["deviceUsedBytes"] // 1048576, o["count"]) for o in os
       if o["deviceUsedBytes"] in (3000 * 1048576, 5000 * 1048576)])' \
        "$tmp/list")" "[(5000, 1)]"

# --- a pod name used again ---------------------------------------------------
# Job a runs twice as the bare pod again-0, 50000 MiB and then 20000: the
# pod's series holds both runs while the first is within the window, so
# the second waits until the first has left it.  A third replica with a
# window of 60 s (the least) keeps it then; the two of 600 s never see
# it alone.
serve "$tmp/short.log" -f "$tmp/gpus.yaml" --store "$db" \
    --prometheus "$pbase" --prometheus-window 60
procs="$pid $procs"
d3=$pid
again='gpu="2",UUID="GPU-7d6a1c2e-0000-4000-8000-000000000006",device="nvidia2",modelName="NVIDIA H100 80GB HBM3",Hostname="node6",container="train",namespace="default",pod="again-0"'
gpu "$again,memfloor_dev_fingerprint=\"$fpa\"" 50000 >"$series"
sleep 3
: >"$series"
wait_for "job a's first run as again-0 was not kept within a minute" 600 \
    two "$fpa"
gpu "$again,memfloor_dev_fingerprint=\"$fpa\"" 20000 >"$series"
sleep 3
: >"$series"
wait_for "job a's second run as again-0 was not kept within two minutes" 1200 \
    three "$fpa"
is "each run of again-0 kept with its own peak, not the larger of the two" \
    "$(python3 -c 'import json, sys
os = json.load(open(sys.argv[1]))["observations"]
print(sorted(o["deviceUsedBytes"] // 1048576 for o in os))' "$tmp/list")" \
    "[20000, 50000, 75000]"
is "the second run was kept by the replica of the 60 s window" \
    "$(cd "$tmp" && grep -c "again-0 [0-9]*: kept observation [0-9]*, $((20000 * MIB)) bytes" \
        daemon.log replica.log short.log | tr '\n' ' ')" \
    "daemon.log:0 replica.log:0 short.log:1 "

stop_all "$d1" "$d2" "$d3"
rc1=0
rc2=0
rc3=0
wait "$d1" 2>/dev/null || rc1=$?
wait "$d2" 2>/dev/null || rc2=$?
wait "$d3" 2>/dev/null || rc3=$?
is "the three replicas stop cleanly" "$rc1 $rc2 $rc3" "0 0 0"

# --- Prometheus down, or answering garbage ----------------------------------
# outage NAME URL [ARGS...]: a memfloord of its own store reading URL.
outage() {
	oname=$1
	ourl=$2
	shift 2
	serve "$tmp/$oname.log" -f "$tmp/gpus.yaml" --store "$tmp/$oname.db" \
	    --prometheus "$ourl" "$@"
	procs="$pid $procs"
	is "$oname: admissions answer" \
	    "$(admit "$tmp/a.yaml" "http://127.0.0.1:$port")" 200
	ofp=$(field fingerprint)
	sleep 5
	is "$oname: the outage is logged once in 5 periods" \
	    "$(grep -c 'nothing is read from it until it answers' "$tmp/$oname.log" || true)" 1
	is "$oname: nothing is kept" \
	    "$(listed "$ofp" "http://127.0.0.1:$port")" 0
	oreads=$(metric "http://127.0.0.1:$port" \
	    'memfloor_prometheus_reads_total{result="ok"}'):$(metric \
	    "http://127.0.0.1:$port" \
	    'memfloor_prometheus_reads_total{result="error"}')
	case $oreads in
	0:0 | [1-9]*:*) fail "$oname: reads ok:error $oreads, want 0:1 or more" ;;
	*) pass "$oname: the metrics count failed reads only ($oreads)" ;;
	esac
	kill "$pid"
	orc=0
	wait "$pid" 2>/dev/null || orc=$?
	is "$oname: memfloord stops cleanly" "$orc" 0
}
outage down "http://127.0.0.1:$(free_port)"
is "down: the default window leaves time after finishAfter, nothing said" \
    "$(grep -c 'leave no time within' "$tmp/down.log" || true)" 0
# The shipped catalogue's finishAfter (300 s, its default) and a window of
# no more: runs can leave it unseen, and the log says so.
serve "$tmp/narrow.log" -f catalog/gpus.yaml --store "$tmp/narrow.db" \
    --prometheus "http://127.0.0.1:$(free_port)" --prometheus-window 300
procs="$pid $procs"
wait_log "$tmp/narrow.log" 'leave no time within --prometheus-window' || true
is "a window of finishAfter alone is said to leave runs unseen" \
    "$(grep -c 'finishAfter (300 s) and refreshSeconds (10 s) leave no time within --prometheus-window (300 s)' "$tmp/narrow.log" || true)" \
    1
kill "$pid"
wait "$pid" 2>/dev/null || true
printf 'prom-secret-token\n\n' >"$tmp/prom-token"
outage garbage "http://127.0.0.1:$eport" \
    --prometheus-token-file "$tmp/prom-token"
is "garbage: the query carried --prometheus-token-file's bearer token" \
    "$(cat "$tmp/auth" 2>/dev/null)" "Bearer prom-secret-token"

# --- https: --prometheus-ca -----------------------------------------------------
# The exporter again, over TLS with a certificate of its own: with that
# certificate as --prometheus-ca the connection is made (and the answer,
# exposition text, is garbage to the API); without it, the certificate
# is refused.
if ! timeout 60 openssl req -x509 -newkey ec \
    -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=memfloor test prometheus" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1; then
	fail "openssl could not make a self-signed pair"
	summary || true
	exit 1
fi
python3 tests/integration/dcgm_exporter.py "$tmp/tls.port" "$series" "" \
    "$tmp/cert.pem" "$tmp/key.pem" >"$tmp/tls-exporter.log" 2>&1 &
procs="$! $procs"
wait_for "the exporter over TLS did not start" 100 test -s "$tmp/tls.port"
tport=$(cat "$tmp/tls.port")
outage tls-ca "https://127.0.0.1:$tport" --prometheus-ca "$tmp/cert.pem"
if grep -q 'HTTP 200: not valid JSON' "$tmp/tls-ca.log"; then
	pass "--prometheus-ca: the certificate it names is trusted"
else
	fail "--prometheus-ca: $(grep 'nothing is read' "$tmp/tls-ca.log")"
fi
outage tls-no-ca "https://127.0.0.1:$tport"
if grep -qi 'certificate' "$tmp/tls-no-ca.log"; then
	pass "without --prometheus-ca the certificate is refused"
else
	fail "without --prometheus-ca: $(grep 'nothing is read' "$tmp/tls-no-ca.log")"
fi

summary
