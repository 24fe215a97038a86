#!/bin/sh
# tests/integration/observations.sh: what the runs memfloor admitted
# measured, kept (design 23), against the real daemon with --store.
#
# An admission answers a fingerprint that `memfloor fingerprint` gives
# too, and is recorded in the store (an observation that names only that
# fingerprint is taken, also after a restart); POST /v1/observations
# answers 201 with the id, by fingerprint or by the job's manifest, in
# JSON or YAML; GET ?fingerprint= lists them; DELETE takes one back (204,
# then 404).  Writing without a bearer token is a 401, with a wrong one
# a 403 (the first 513 bytes of a 3,000-byte token among them); a token
# file with a token over 4,096 bytes, or over 64 tokens, stops memfloord
# saying so.  Each kind of bad observation (a peak above the card, a negative
# speed, an unknown card, a manifest that does not parse, a field left
# out, an unknown fingerprint, an unknown field) is a 400 naming the field,
# and nothing is kept.  Every observation acknowledged with 201 is there
# after kill -9 of the daemon and a restart.  A --store file that is not
# SQLite, or an SQLite database that is not memfloor's, stops the daemon
# with a message naming it and is left byte for byte as it was.
#
# Run from the repository root (or set MF_TOP).  Prints one line per check
# and "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
cli_bin=${MEMFLOOR:-build/memfloor}
check_name=observations
pid=""
cleanup() {
	stop_all "$pid"
}
. "$top/tests/lib/check.sh"

db=$tmp/store.db
token=$tmp/token
# A token as long as a service account's (a JWT, 1 to 2 KB) is one token,
# however long the line: its first 513 bytes are not one.
long=$(printf 'j%.0s' $(seq 3000))
printf '# the tokens that write observations\nfirst-token\nsecond-token\n%s\n' \
    "$long" >"$token"
auth="Authorization: Bearer second-token"

cat >"$tmp/job.yaml" <<'YAML'
apiVersion: memfloor.dev/v1
kind: Job
metadata:
  name: observed
spec:
  model:
    name: meta-llama/Llama-3.1-8B
  workload:
    kind: inference
    concurrency: 4
    contextLength: 4096
YAML

start() {
	serve "$tmp/daemon.log" --store "$db" --observe-token-file "$token"
	base=http://127.0.0.1:$port
}

# post BODY [CURL ARGS...]: POST BODY to /v1/observations as YAML; the
# answer's body in $tmp/ans, its status in $code.
post() {
	body=$1
	shift
	code=$(curl -s -m 10 -o "$tmp/ans" -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/yaml' --data-binary "$body" "$@" \
	    "$base/v1/observations")
}


# listed: how many observations GET lists for $fp.
listed() {
	curl -s -m 10 "$base/v1/observations?fingerprint=$fp" >"$tmp/list"
	python3 -c 'import json, sys
print(len(json.load(open(sys.argv[1]))["observations"]))' "$tmp/list"
}

start

# --- an admission's fingerprint, and its record ----------------------------
curl -s -m 10 -o "$tmp/ans" -X POST --data-binary @"$tmp/job.yaml" \
    "$base/v1/admit"
is "the job is admitted" "$(field admitted)" True
fp=$(field fingerprint)
card=$(field placement.gpu)
product=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["placement"].get("labels") or {}
print(d.get("nvidia.com/gpu.product", ""))' "$tmp/ans")
is "memfloor fingerprint gives the admission's fingerprint" \
    "$("$cli_bin" fingerprint "$tmp/job.yaml" -f catalog/gpus.yaml \
        -m catalog/models)" "$fp"
curl -s -m 10 -o "$tmp/ans" -X POST --data-binary @"$tmp/job.yaml" \
    "$base/v1/estimate"
is "the estimate carries the job's fingerprint" "$(field fingerprint)" "$fp"

good="fingerprint: $fp
card: $card
count: 1
peakReservedBytes: 21474836480
peakAllocatedBytes: 19327352832
tokensPerSecond: 1800.5
source: torch"

# --- writes take a bearer token ---------------------------------------------
post "$good"
is "no token: 401" "$code" 401
post "$good" -H "Authorization: Bearer third-token"
is "a wrong token: 403" "$code" 403
post "$good" -H "Authorization: Basic c2Vjb25kLXRva2Vu"
is "not a bearer token: 401" "$code" 401
post "$good" -H "Authorization: Bearer $(printf %.513s "$long")"
is "the first 513 bytes of a long token: 403" "$code" 403
is "nothing kept without a token" "$(listed)" 0

# --- the round trip ---------------------------------------------------------
post "$good" -H "$auth"
is "an observation by fingerprint: 201" "$code" 201
id=$(field id)
is "its answer names the fingerprint" "$(field fingerprint)" "$fp"
post "$good" -H "Authorization: Bearer first-token"
is "the file's other token writes too" "$code" 201
is "GET lists both" "$(listed)" 2
is "GET says the peak" "$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["observations"][0]["peakReservedBytes"])' \
    "$tmp/list")" 21474836480
ctype=$(curl -s -m 10 -o "$tmp/list.yaml" -w '%{content_type}' \
    -H 'Accept: application/yaml' "$base/v1/observations?fingerprint=$fp")
is "GET in YAML when asked: its content type" "$ctype" application/yaml
is "GET in YAML when asked: both peaks" \
    "$(grep -c 'peakReservedBytes: 21474836480$' "$tmp/list.yaml")" 2

{
	printf 'card: %s\ncount: 1\ndeviceUsedBytes: 23622320128\n' "$card"
	printf 'stepSeconds: 0.5\ntokensPerStep: 2048\nsource: dcgm\njob:\n'
	sed 's/^/  /' "$tmp/job.yaml"
} >"$tmp/byjob.yaml"
post "$(cat "$tmp/byjob.yaml")" -H "$auth"
is "an observation by the job's manifest: 201" "$code" 201
is "the manifest's fingerprint is the admission's" "$(field fingerprint)" \
    "$fp"
if [ -n "$product" ]; then
	post "$(printf '%s\n' "$good" | sed "s|^card: .*|card: $product|")" \
	    -H "$auth"
	is "a card by its nvidia.com/gpu.product: 201" "$code" 201
	curl -s -m 10 -X DELETE -H "$auth" \
	    "$base/v1/observations/$(field id)" >/dev/null
	spaced=$(printf '%s' "$product" | tr '-' ' ')
	post "$(printf '%s\n' "$good" | sed "s|^card: .*|card: $spaced|")" \
	    -H "$auth"
	is "a card by the driver's name ('$spaced'): 201" "$code" 201
	curl -s -m 10 -X DELETE -H "$auth" \
	    "$base/v1/observations/$(field id)" >/dev/null
fi
code=$(curl -s -m 10 -o "$tmp/ans" -w '%{http_code}' -X POST -H "$auth" \
    -H 'Content-Type: application/json' \
    --data-binary "{\"fingerprint\": \"$fp\", \"card\": \"$card\", \"count\": 1, \"peakReservedBytes\": 21474836480, \"source\": \"log\"}" \
    "$base/v1/observations")
is "an observation in JSON: 201" "$code" 201
is "GET lists four" "$(listed)" 4

# --- bad observations: a 400 naming the field, nothing kept -----------------
# bad NAME FIELD BODY: posting BODY is a 400 whose field is FIELD.
bad() {
	post "$3" -H "$auth"
	if [ "$code" = 400 ] && [ "$(field field)" = "$2" ]; then
		pass "$1: 400 naming $2"
	else
		fail "$1: got $code $(cat "$tmp/ans"), want 400 naming $2"
	fi
}
swap() { printf '%s\n' "$good" | sed "$1"; }
bad "a peak above the card" peakReservedBytes \
    "$(swap 's/^peakReservedBytes: .*/peakReservedBytes: 1000000000000000/')"
bad "a negative speed" tokensPerSecond \
    "$(swap 's/^tokensPerSecond: .*/tokensPerSecond: -3/')"
bad "an unknown card" card "$(swap 's/^card: .*/card: NoSuchCard/')"
bad "a missing count" count "$(swap '/^count:/d')"
bad "a missing source" source "$(swap '/^source:/d')"
bad "no memory figure" peakReservedBytes \
    "$(swap '/^peak/d')"
bad "allocated above reserved" peakAllocatedBytes \
    "$(swap 's/^peakAllocatedBytes: .*/peakAllocatedBytes: 30000000000/')"
bad "stepSeconds without tokensPerStep" tokensPerStep \
    "$(swap 's/^tokensPerSecond: .*/stepSeconds: 0.5/')"
is "stepSeconds without tokensPerStep: the error asks for it" \
    "$(field error)" "tokensPerStep: is required with stepSeconds"
bad "tokensPerStep without stepSeconds" stepSeconds \
    "$(swap 's/^tokensPerSecond: .*/tokensPerStep: 2048/')"
# The listing writes six decimals: a speed below 1e-6 would read back as 0.
bad "a speed the listing would show as 0" tokensPerSecond \
    "$(swap 's/^tokensPerSecond: .*/tokensPerSecond: 1e-300/')"
is "a speed below 1e-6: the error gives the range" "$(field error)" \
    "tokensPerSecond: 1e-300: a speed is from 1e-06 to below 1e+15 (line 6, column 18)"
bad "a step of 1e15 seconds" stepSeconds \
    "$(swap 's/^tokensPerSecond: .*/stepSeconds: 1e15\ntokensPerStep: 2048/')"
bad "an unknown fingerprint" fingerprint \
    "$(swap 's/^fingerprint: .*/fingerprint: 0123456789abcdef0123456789abcdef/')"
bad "not a fingerprint" fingerprint "$(swap 's/^fingerprint: .*/fingerprint: xyz/')"
bad "an unknown field" peakBytes "$(printf '%s\npeakBytes: 1\n' "$good")"
bad "neither job nor fingerprint" job "$(swap '/^fingerprint:/d')"
bad "a manifest that does not parse" job.spec.workload.concurrency \
    "$(sed 's/^  fingerprint: .*//; s/concurrency: 4/concurrency: lots/' \
        "$tmp/byjob.yaml")"
bad "a job that is not a manifest" job \
    "$(swap 's/^fingerprint: .*/job: 3/')"
post "not: [yaml" -H "$auth"
is "a body that is not YAML: 400" "$code" 400
is "nothing kept of the bad ones" "$(listed)" 4

# --- DELETE -----------------------------------------------------------------
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE \
    "$base/v1/observations/$id")
is "DELETE without a token: 401" "$code" 401
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE \
    -H "Authorization: Bearer $long" "$base/v1/observations/$id")
is "DELETE with the file's 3,000-byte token: 204" "$code" 204
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE -H "$auth" \
    "$base/v1/observations/$id")
is "DELETE again: 404" "$code" 404
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE -H "$auth" \
    "$base/v1/observations/abc")
is "DELETE of no id: 404" "$code" 404
is "GET lists three" "$(listed)" 3
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' \
    "$base/v1/observations?fingerprint=nope")
is "GET ?fingerprint=nope: 400" "$code" 400
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X PUT \
    "$base/v1/observations")
is "PUT: 405" "$code" 405

# --- acknowledged, then kill -9 ---------------------------------------------
n=0
acked=0
while [ $n -lt 200 ]; do
	post "$good" -H "$auth"
	[ "$code" = 201 ] && acked=$((acked + 1))
	n=$((n + 1))
done
is "200 more acknowledged" "$acked" 200
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
start
is "after kill -9 and a restart: all 203 there" "$(listed)" 203
post "$good" -H "$auth"
is "after the restart the admission is known: 201" "$code" 201
# --- used at admission (design 23) ------------------------------------------
# A training job of its own fingerprint, timed by its tokens.  Its first
# admission is the estimate's, on a 24G card; a torch peak 25% above it
# on an RTX-A6000 raises its need there and every other card's by the
# same ratio, past the 24G cards; taken back and posted 30% below on the
# card of the first admission with twice the modelled tokens/s, the need
# there is the peak, the other cards' falls by no more than 10%, and the
# hours halve.
# The job (tests/data/observations/trained.yaml): Llama 3.1 8B, LoRA all-linear
# rank 16, checkpointing, sequences of 2,048, a billion tokens.
cp "$top/tests/data/observations/trained.yaml" "$tmp/train.yaml"
admit_train() {
	curl -s -m 10 -o "$tmp/ans" -X POST --data-binary @"$tmp/train.yaml" \
	    "$base/v1/admit"
}
# observe_train CARD PEAK [TOKENS/S]: post PEAK (and TOKENS/S) on CARD
# for the job, by its manifest.
observe_train() {
	{
		printf 'card: %s\ncount: 1\npeakReservedBytes: %s\n' \
		    "$1" "$2"
		if [ -n "${3:-}" ]; then
			printf 'tokensPerSecond: %s\n' "$3"
		fi
		printf 'source: torch\njob:\n'
		sed 's/^/  /' "$tmp/train.yaml"
	} >"$tmp/tobs.yaml"
	post "$(cat "$tmp/tobs.yaml")" -H "$auth"
}
# placed EXPR: EXPR over the answer's placement and alternatives (ps),
# the estimate's need (est), the card observed (card) and the first
# admission's hours (hours).
placed() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
ps = [d["placement"]] + d["alternatives"]
est, card = int(sys.argv[2]), sys.argv[3]
hours = float(sys.argv[5] or 0)
print(eval(sys.argv[4]))' "$tmp/ans" "$est" "$tcard" "$1" "${hours:-}"
}
admit_train
tcard=$(field placement.gpu)
est=$(field need.perGpuBytes)
hours=$(field placement.hours)
is "a new job: admitted, no figure observed" \
    "$(field admitted) $(placed 'any("observed" in p for p in ps)')" \
    "True False"
observe_train RTX-A6000 $((est + est / 4))
is "a peak 25% above the estimate on RTX-A6000: 201" "$code" 201
tid=$(field id)
admit_train
is "the next admission: the need 25% higher, past $tcard" \
    "$(placed 'card in [p["gpu"] for p in ps]')" False
is "the placement says so: 1 run, the estimate beside it, ratio 1.25" \
    "$(field observed.runs) $(field observed.estimatedNeedBytes) $(field observed.needRatio)" \
    "1 $est 1.25"
is "the need 25% higher on every card, measured on RTX-A6000 only" \
    "$(placed 'all(abs(p["observed"]["needBytes"] - est * 1.25) < 2 and p["observed"]["onThisCard"] == (p["gpu"] == "RTX-A6000") for p in ps)')" \
    True
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE -H "$auth" \
    "$base/v1/observations/$tid")
is "taken back: 204" "$code" 204
speed=$(python3 -c 'import sys
print(2 * 1e9 / (float(sys.argv[1]) * 3600))' "$hours")
observe_train "$tcard" $((est * 7 / 10)) "$speed"
is "a peak 30% below, twice the modelled speed: 201" "$code" 201
admit_train
is "the next admission: back on $tcard at the observed peak" \
    "$(field placement.gpu) $(placed 'abs(ps[0]["observed"]["needBytes"] - est * 0.7) < 2 and ps[0]["observed"]["onThisCard"]')" \
    "$tcard True"
is "every other card's need 10% lower, no more" \
    "$(placed 'all(abs(p["observed"]["needBytes"] - est * 0.9) < 2 for p in ps[1:])')" \
    True
is "the hours halve, the model's beside them" \
    "$(placed 'abs(ps[0]["hours"] * 2 - hours) < 0.01 and abs(ps[0]["observed"]["estimatedHours"] - hours) < 0.01')" \
    True

if command -v sqlite3 >/dev/null 2>&1; then
	is "the admission's record holds the job as placed" \
	    "$(sqlite3 "$db" "SELECT card FROM admissions WHERE fingerprint = '$fp' AND job LIKE '%\"workload\":{%'")" \
	    "$card"
fi
stop_all "$pid"
pid=""

# --- the calibration (design 23, "Seen") ------------------------------------
# On a store of its own, a job admitted on a card with a peak 20% above
# its estimate a GPU and one 10% below, at 1.25 and at 0.5 times the
# modelled tokens/s (the tokens over the admission's hours): one group,
# count 2; memory errors 1/1.2 - 1 and 1/0.9 - 1, speed errors 1.25 - 1
# and 0.5 - 1 (estimate / observed - 1), their medians the means of the
# two and the worst the least.
db=$tmp/calibration.db
start
cat >"$tmp/calib.yaml" <<'YAML'
apiVersion: memfloor.dev/v1
kind: Job
metadata:
  name: calibrated
spec:
  model:
    name: meta-llama/Llama-3.1-8B
  workload:
    sequenceLength: 1024
    method: lora
    precision: bf16
    lora: {rank: 8, targets: all-linear}
    gradientCheckpointing: true
  duration:
    tokens: 1000000000
YAML
curl -s -m 10 -o "$tmp/ans" -X POST --data-binary @"$tmp/calib.yaml" \
    "$base/v1/admit"
is "the calibrated job is admitted" "$(field admitted)" True
cfp=$(field fingerprint)
ccard=$(field placement.gpu)
ccount=$(field placement.count)
cest=$(field need.perGpuBytes)
cspeed=$(python3 -c 'import sys
print(1e9 / (float(sys.argv[1]) * 3600))' "$(field placement.hours)")
curl -s -m 10 "$base/v1/calibration" >"$tmp/calib0"
is "no observations: no groups" "$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["groups"])' "$tmp/calib0")" "[]"
# calib_obs PEAK TOKENS/S: one observation of the job by its fingerprint.
calib_obs() {
	post "fingerprint: $cfp
card: $ccard
count: $ccount
peakReservedBytes: $1
tokensPerSecond: $2
source: torch" -H "$auth"
}
calib_obs $((cest + cest / 5)) "$(python3 -c 'import sys
print(float(sys.argv[1]) / 1.25)' "$cspeed")"
is "a peak 20% above the estimate: 201" "$code" 201
calib_obs $((cest - cest / 10)) "$(python3 -c 'import sys
print(float(sys.argv[1]) / 0.5)' "$cspeed")"
is "a peak 10% below the estimate: 201" "$code" 201
# The store's writer records an admission within its window (a second),
# but an observation that names the job's fingerprint waits for the record:
# the group is there as soon as the 201s are.
code=$(curl -s -m 10 -o "$tmp/calib" -w '%{http_code}' "$base/v1/calibration")
is "GET /v1/calibration: 200" "$code" 200
# calib EXPR: EXPR over the one group (g), the estimate (e) and the
# errors the arithmetic gives (hi, lo: memory; fast, slow: speed).
calib() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
g = d["groups"][0] if len(d["groups"]) == 1 else None
e = int(sys.argv[2])
hi = e / (e + e // 5) - 1
lo = e / (e - e // 10) - 1
fast, slow = 1.25 - 1, 0.5 - 1
print(eval(sys.argv[3]))' "$tmp/calib" "$cest" "$1"
}
is "one group: the recipe and the card" \
    "$(calib '(g["method"], g["precision"], g["gradientCheckpointing"], g["card"], g["count"])')" \
    "('lora', 'bf16', 'true', '$ccard', 2)"
is "memory: the median and the worst of 1/1.2 - 1 and 1/0.9 - 1" \
    "$(calib 'abs(g["memory"]["median"] - (hi + lo) / 2) < 1e-4 and abs(g["memory"]["worst"] - hi) < 1e-4')" \
    True
is "speed: the median and the worst of 1.25 - 1 and 0.5 - 1" \
    "$(calib 'abs(g["speed"]["median"] - (fast + slow) / 2) < 1e-3 and abs(g["speed"]["worst"] - slow) < 1e-3')" \
    True
curl -s -m 10 "$base/metrics" >"$tmp/metrics"
is "the metrics: the memory median and its count" \
    "$(python3 -c 'import re, sys
e = int(sys.argv[2])
med = (e / (e + e // 5) - 1 + e / (e - e // 10) - 1) / 2
t = open(sys.argv[1]).read()
lab = "kind=\"memory\",card=\"%s\",method=\"lora\",precision=\"bf16\",gradient_checkpointing=\"true\",framework=\"\"" % sys.argv[3]
m = re.search(r"^memfloor_calibration_error\{%s,stat=\"median\"\} (\S+)$" % re.escape(lab), t, re.M)
n = re.search(r"^memfloor_calibration_observations\{%s\} (\S+)$" % re.escape(lab), t, re.M)
print(bool(m and n and abs(float(m.group(1)) - med) < 1e-4 and n.group(1) == "2"))' \
        "$tmp/metrics" "$cest" "$ccard")" \
    True
# The same recipe run by torchtune (its recipe fills the fields the
# manifest leaves out, so another fingerprint): a group of its own, the
# first's two runs still in theirs.
sed 's/^    sequenceLength: 1024$/    framework: torchtune\n&/' "$tmp/calib.yaml" \
    >"$tmp/calib-tt.yaml"
curl -s -m 10 -o "$tmp/ans" -X POST --data-binary @"$tmp/calib-tt.yaml" \
    "$base/v1/admit"
is "the torchtune job: another fingerprint, the same card and count" \
    "$(field fingerprint | grep -vc "^$cfp\$"), $(field placement.gpu), $(field placement.count)" \
    "1, $ccard, $ccount"
cfp=$(field fingerprint)
cest=$(field need.perGpuBytes)
calib_obs "$cest" "$cspeed"
is "an observation of the torchtune job: 201" "$code" 201
curl -s -m 10 -o "$tmp/calib" "$base/v1/calibration"
is "two groups, by framework: none's two runs, torchtune's one" \
    "$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sorted((g["framework"] or "", g["method"], g["precision"],
    g["gradientCheckpointing"], g["count"]) for g in d["groups"]))' "$tmp/calib")" \
    "[('', 'lora', 'bf16', 'true', 2), ('torchtune', 'lora', 'bf16', 'true', 1)]"
curl -s -m 10 "$base/metrics" >"$tmp/metrics"
is "the metrics label each group with its framework" \
    "$(grep -c '^memfloor_calibration_observations{kind="memory",card="'"$ccard"'",method="lora",precision="bf16",gradient_checkpointing="true",framework="\(torchtune\)\?"} ' "$tmp/metrics")" \
    2
stop_all "$pid"
pid=""

# --- more observations than the summaries read ------------------------------
# A store of 100,001 observations (written straight into the file): the
# summaries are made of the first 100,000, and the log says so.
"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models \
    --store "$tmp/full.db" >/dev/null 2>&1
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executemany("INSERT INTO observations (fingerprint, card, count, "
    "peak_reserved, source, created_at) VALUES (?, ?, 1, 1073741824, "
    "?, 0)", (("%032x" % i, "H100-80GB", "torch") for i in range(100001)))
c.commit()' "$tmp/full.db"
serve "$tmp/full.log" --store "$tmp/full.db"
full_pid=$pid
wait_log "$tmp/full.log" 'the store holds more than 100000' 1 100 || true
is "a store past the summaries' 100,000 observations: the log says so" \
    "$(grep -c 'the store holds more than 100000; the summaries are made of the first 100000' "$tmp/full.log" || true)" \
    1
stop_all "$full_pid"

# --- a token file memfloord cannot take whole stops it ----------------------
# token_refused NAME FILE WORDS: memfloord -n with FILE exits non-zero and
# says WORDS.
token_refused() {
	rc=0
	"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models \
	    --store "$tmp/refused.db" --observe-token-file "$2" \
	    >"$tmp/refused.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && grep -qF -- "$3" "$tmp/refused.log"; then
		pass "$1: refused, saying so"
	else
		fail "$1: memfloord -n exit $rc: $(cat "$tmp/refused.log")"
	fi
}
printf 'first-token\n\n%s\n' "$(printf 'k%.0s' $(seq 4097))" >"$tmp/long"
token_refused "a token of 4,097 bytes" "$tmp/long" \
    "$tmp/long: line 3: a token of more than 4096 bytes"
seq 65 | sed 's/^/token-/' >"$tmp/many"
token_refused "65 tokens" "$tmp/many" "$tmp/many: more than 64 tokens"

# --- a store that is not memfloor's is left alone ---------------------------
# refused NAME FILE: memfloord --store FILE exits 1 naming FILE, and
# FILE is as it was.
refused() {
	cp "$2" "$tmp/before"
	rc=""
	"$daemon_bin" -d -l 127.0.0.1:0 -f catalog/gpus.yaml -m catalog/models \
	    --store "$2" >"$tmp/refused.log" 2>&1 &
	rpid=$!
	w=0
	while kill -0 "$rpid" 2>/dev/null && [ $w -lt 50 ]; do
		sleep 0.1
		w=$((w + 1))
	done
	if kill -0 "$rpid" 2>/dev/null; then
		kill -9 "$rpid"
		rc=running
	fi
	if wait "$rpid" 2>/dev/null; then
		rc=${rc:-0}
	else
		rc=${rc:-$?}
	fi
	if [ "$rc" != 0 ] && [ "$rc" != running ] &&
	    grep -qF -- "$2" "$tmp/refused.log" &&
	    cmp -s "$2" "$tmp/before"; then
		pass "$1: refused, named, left as it was"
	else
		fail "$1: exit $rc, $(cat "$tmp/refused.log"), file changed: $(cmp "$2" "$tmp/before" 2>&1 || true)"
	fi
	rc=0
	"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models --store "$2" \
	    >"$tmp/refused.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && grep -qF -- "$2" "$tmp/refused.log"; then
		pass "$1: memfloord -n says so"
	else
		fail "$1: memfloord -n exit $rc: $(cat "$tmp/refused.log")"
	fi
}
printf 'observations: none\n' >"$tmp/notes.txt"
refused "a file that is not SQLite" "$tmp/notes.txt"
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE accounts (name TEXT)")
c.execute("INSERT INTO accounts VALUES (?)", ("alice",))
c.commit()' "$tmp/other.db"
refused "an SQLite database that is not memfloor's" "$tmp/other.db"

summary
