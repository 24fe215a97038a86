#!/bin/sh
# tests/integration/cli.sh: the command line, memfloor(1), and the manual pages.
#
# Runs $MEMFLOOR (default build/memfloor) offline on the files in examples/
# and on broken copies of them, and checks each command's exit status
# (0 admitted or ok, 1 rejected, 2 input error, 3 unreachable), where its
# answer goes (stdout, or stderr for errors, naming the field) and its three
# output forms (-o table has the table header, -o yaml parses as YAML and
# says what -o json says).  Then starts $MEMFLOORD (default build/memfloord)
# on a free loopback port and checks `memfloor submit` against it: the same
# answers and statuses as offline, 2 for a 400, and 3 once the daemon has
# stopped; with openssl, also over HTTPS with --cacert.  Last, lints
# man/memfloor.1 and man/memfloord.8 with mandoc (installed with apt-get
# when missing and run as root; skipped otherwise).
#
# That the command line and the daemon give the same JSON for every request
# in examples/ is tests/integration/examples.py's job, not repeated here.
#
# Run from the repository root (or set MF_TOP).  Prints one line per check
# and "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
cli=${MEMFLOOR:-build/memfloor}
daemon_bin=${MEMFLOORD:-build/memfloord}
check_name=cli
daemon=""
tlsd=""
cleanup() {
	stop_all "$daemon" "$tlsd"
}
. "$top/tests/lib/check.sh"
skip() { echo "skip - $*"; }

# has NAME FILE PATTERN: FILE has a line matching the extended regex.
has() {
	if grep -Eq -- "$3" "$2"; then
		pass "$1"
	else
		fail "$1: no /$3/ in: $(head -c 300 "$2")"
	fi
}

# empty NAME FILE
empty() {
	if [ ! -s "$2" ]; then
		pass "$1"
	else
		fail "$1: not empty: $(head -c 300 "$2")"
	fi
}


# mf ARGS...: the command line with a timeout, stdin from $in (default
# /dev/null); stdout in $out, stderr in $err, exit status in $rc.
out=$tmp/out
err=$tmp/err
in=/dev/null
mf() {
	rc=0
	timeout 60 "$cli" "$@" <"$in" >"$out" 2>"$err" || rc=$?
	in=/dev/null
}

# Whether the output forms can be parsed here.
py=0
yaml=0
if command -v python3 >/dev/null 2>&1; then
	py=1
	python3 -c 'import yaml' 2>/dev/null && yaml=1
fi

# same_json NAME A B: A and B hold the same JSON value (byte for byte
# without python3).
same_json() {
	if [ $py = 1 ]; then
		if python3 - "$2" "$3" 2>/dev/null <<-'EOF'; then
			import json, sys
			a, b = (json.load(open(p)) for p in sys.argv[1:3])
			sys.exit(0 if a == b else 1)
			EOF
			pass "$1"
		else
			fail "$1: $(head -c 200 "$2") vs $(head -c 200 "$3")"
		fi
	elif cmp -s "$2" "$3"; then
		pass "$1"
	else
		fail "$1: $(head -c 200 "$2") vs $(head -c 200 "$3")"
	fi
}

# yaml_is_json NAME YAML JSON: the YAML parses and says what the JSON says;
# without PyYAML, the YAML has the line KEYLINE ($4).
yaml_is_json() {
	if [ $yaml = 1 ]; then
		if python3 - "$2" "$3" 2>/dev/null <<-'EOF'; then
			import json, sys, yaml
			y = yaml.safe_load(open(sys.argv[1]))
			j = json.load(open(sys.argv[2]))
			sys.exit(0 if y == j else 1)
			EOF
			pass "$1"
		else
			fail "$1: $(head -c 300 "$2")"
		fi
	else
		has "$1 (no PyYAML: a known line)" "$2" "$4"
	fi
}

if [ ! -x "$cli" ]; then
	fail "memfloor not found at $cli (set MEMFLOOR)"
	summary
	exit 1
fi
# off ARGS...: mf with the catalogue and models of the source tree.
off() {
	mf "$@" -f catalog/gpus.yaml -m catalog/models
}

# --- inputs -------------------------------------------------------------------
ok_job=examples/min-memory-88Gi.yaml      # 88Gi fits: admitted
no_job=examples/min-memory-too-big.yaml   # 200Gi > the largest card: rejected
est_job=examples/llama-8b-full-adamw.yaml # Llama 3.1 8B, full fine-tune
oom=examples/oom-2.2-expandable.txt       # "Tried to allocate 22.00 MiB"

# A floor that is not a quantity; the error must point at its line and at
# the column where the value starts (1-based).
sed 's/minMemory: 88Gi/minMemory: 88Gx/' "$ok_job" >"$tmp/badqty.yaml"
bad_line=$(grep -n 'minMemory: 88Gx' "$tmp/badqty.yaml" | cut -d: -f1)
bad_col=$(awk '/minMemory: 88Gx/ { print index($0, "88Gx"); exit }' \
    "$tmp/badqty.yaml")
# A misspelt field.
sed 's/minMemory: 88Gi/minMemroy: 88Gi/' "$ok_job" >"$tmp/typo.yaml"
# The same job as $ok_job, written as JSON.
cat >"$tmp/job.json" <<'EOF'
{"apiVersion": "memfloor.dev/v1", "kind": "Job",
 "metadata": {"name": "json-job"},
 "spec": {"resources": {"gpu": {"minMemory": "88Gi"}},
          "duration": {"referenceHours": 12}}}
EOF
# A model config only the daemon may fetch.
sed 's|name: meta-llama/Llama-3.1-8B|configUrl: https://models.invalid/c.json|' \
    "$est_job" >"$tmp/url.yaml"

# --- admit ----------------------------------------------------------------------
off admit "$ok_job" -o json
is "admit: admitted exits 0" "$rc" 0
has "admit: admitted answer" "$out" '^\{"admitted":true,"job":"llama-8b-full"'
empty "admit: nothing on stderr" "$err"
cp "$out" "$tmp/admit.json"

off admit "$no_job" -o json
is "admit: rejected exits 1" "$rc" 1
has "admit: rejected answer on stdout" "$out" '^\{"admitted":false'
has "admit: a rejection says why" "$out" '"reason":"'
cp "$out" "$tmp/reject.json"

# Output that does not reach standard output (a full disk) fails: exit 3,
# said on stderr, for every command.
for c in "admit $ok_job -o json -f catalog/gpus.yaml -m catalog/models" \
    "catalog check catalog/gpus.yaml" "catalog kueue catalog/gpus.yaml" \
    "schema"; do
	rc=0
	# shellcheck disable=SC2086 # the command's words
	"$cli" $c >/dev/full 2>"$err" || rc=$?
	is "$c, stdout full: exits 3" "$rc" 3
	has "$c, stdout full: says so" "$err" '^memfloor: standard output: '
done
mf estimate "$est_job" --estimator
is "--estimator without a value: exits 2" "$rc" 2
has "--estimator without a value: says so" "$err" \
    "^memfloor: a value must follow '--estimator'"

off admit "$tmp/badqty.yaml" -o json
is "admit: bad quantity exits 2" "$rc" 2
empty "admit: bad quantity, nothing on stdout" "$out"
has "admit: the error names the field" "$err" \
    '"field":"spec\.resources\.gpu\.minMemory"'
has "admit: the error gives line $bad_line, column $bad_col" "$err" \
    "\"line\":$bad_line,\"column\":$bad_col}"

# A job timed by its tokens, not referenceHours: the fixes' table gives
# each placement's cost to finish, as the JSON does.
cat >"$tmp/tokens.yaml" <<'EOF'
apiVersion: memfloor.dev/v1
kind: Job
metadata: {name: by-tokens}
spec:
  model: {name: meta-llama/Llama-3.1-8B}
  workload:
    sequenceLength: 2048
    method: lora
    lora: {rank: 16, targets: all-linear}
  duration: {tokens: 300000000}
  limits: {deadlineHours: 3}
EOF
off admit "$tmp/tokens.yaml" -o json
cp "$out" "$tmp/tokens.json"
off admit "$tmp/tokens.yaml" -o table
if [ "$py" = 1 ]; then
	is "admit -o table, timed by tokens: each fix's cost to finish" \
	    "$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for f in d["fixes"]:
    p = f["placement"]
    if p:
        print("%s x%d, $%.2f" % (p["gpu"], p["count"], p["cost"]))' "$tmp/tokens.json")" \
	    "$(sed -n 's/^[a-z0-9]* .* \([A-Za-z0-9-]* x[0-9]*, \$[0-9.]*\)$/\1/p' "$out")"
	is "admit -o table, timed by tokens: no per reference hour" \
	    "$(grep -c 'per reference hour' "$out" || true)" 0
fi

off admit "$tmp/badqty.yaml" -o table
is "admit -o table: bad quantity exits 2" "$rc" 2
has "admit -o table: the error on stderr names the field" "$err" \
    "^error: spec\.resources\.gpu\.minMemory: '88Gx' is not a quantity"

off admit "$tmp/typo.yaml" -o json
is "admit: unknown field exits 2" "$rc" 2
has "admit: the unknown field is named" "$err" \
    '"field":"spec\.resources\.gpu\.minMemroy"'

off admit "$tmp/job.json" -o json
is "admit: a JSON manifest exits 0" "$rc" 0
has "admit: a JSON manifest is read" "$out" '"job":"json-job"'

in=$ok_job
off admit - -o json
is "admit -: from stdin exits 0" "$rc" 0
same_json "admit -: the same answer as from the file" "$out" "$tmp/admit.json"

# A FILE that is a stream: a named pipe, read once its writer comes, and
# bash's process substitution (/dev/fd/N, a pipe); a directory is refused.
mkfifo "$tmp/job.pipe"
cat "$ok_job" >"$tmp/job.pipe" &
off admit "$tmp/job.pipe" -o json
wait $!
is "admit PIPE: a named pipe exits 0" "$rc" 0
same_json "admit PIPE: the same answer as from the file" "$out" "$tmp/admit.json"
rc=0
bash -c '"$1" admit <(cat "$2") -o json -f catalog/gpus.yaml -m catalog/models' \
    sh "$cli" "$ok_job" >"$out" 2>"$err" || rc=$?
is "admit <(cmd): process substitution exits 0" "$rc" 0
same_json "admit <(cmd): the same answer as from the file" "$out" "$tmp/admit.json"
off admit examples -o json
is "admit DIR: exits 2" "$rc" 2
has "admit DIR: said" "$err" '^memfloor: examples: not a regular file \(a directory\)$'

off admit "$tmp/nonexistent.yaml" -o json
is "admit: a missing file exits 2" "$rc" 2
has "admit: a missing file is named" "$err" 'nonexistent\.yaml'

off admit "$tmp/url.yaml" -o json
is "admit: configUrl offline exits 2" "$rc" 2
has "admit: configUrl offline points to submit" "$err" \
    'spec\.model\.configUrl.*memfloor submit'

mf admit "$ok_job" -f "$tmp/nonexistent.yaml" -m catalog/models -o json
is "admit: a missing catalogue exits 2" "$rc" 2

# Fields that change nothing, memory that cannot be meant, the kind first
# (issue 27): each an input error naming the field and why.
sed 's/^    sequenceLength: 4096$/&\n    concurrency: 8/' "$est_job" \
    >"$tmp/noeffect.yaml"
off admit "$tmp/noeffect.yaml" -o table
is "admit: concurrency in training exits 2" "$rc" 2
has "admit: concurrency in training has no effect" "$err" \
    "^error: spec\.workload\.concurrency: has no effect here: it applies only with kind: inference, and this job has kind: training \(the default\)"
sed 's/minMemory: 88Gi/minMemory: 80/' "$ok_job" >"$tmp/bytes.yaml"
off admit "$tmp/bytes.yaml" -o table
is "admit: minMemory 80 exits 2" "$rc" 2
has "admit: minMemory 80 is 80 bytes, and 80Gi is suggested" "$err" \
    "minMemory: '80' is 80 bytes, less than 1Gi: .*e\.g\. 80Gi"
sed 's/minMemory: 88Gi/minMemory: 80GB/' "$ok_job" >"$tmp/gb.yaml"
off admit "$tmp/gb.yaml" -o table
is "admit: minMemory 80GB exits 2" "$rc" 2
has "admit: 80GB is told how memory is written" "$err" \
    "'80GB' is not a quantity: memory is written 80G \(10\^9 bytes\) or 80Gi \(2\^30 bytes\)"
off admit catalog/gpus.yaml -o json
is "admit: a catalogue exits 2" "$rc" 2
has "admit: a catalogue is told its kind" "$err" \
    '"error":"kind: .GpuCatalog. is the kind of a memfloor GPU catalogue; this takes kind Job'
: >"$tmp/empty.yaml"
off admit "$tmp/empty.yaml" -o json
is "admit: an empty file exits 2" "$rc" 2
has "admit: an empty file is told it is empty" "$err" \
    '"error":"the document is empty'

# --- output forms ---------------------------------------------------------------
off admit "$ok_job"
has "admit: JSON when stdout is no terminal" "$out" '^\{"admitted":true'

off admit "$ok_job" -o table
is "admit -o table exits 0" "$rc" 0
has "admit -o table: the verdict" "$out" '^ADMITTED +llama-8b-full$'
has "admit -o table: the table header" "$out" \
    '^GPU +COUNT +NODES +GB +SPARE +\$/HOUR +HOURS +COST +\$/REF-H +FIXES$'

off admit "$ok_job" -o yaml
is "admit -o yaml exits 0" "$rc" 0
yaml_is_json "admit -o yaml parses as the JSON answer" "$out" \
    "$tmp/admit.json" '^admitted: true$'

off admit "$no_job" -o yaml
is "admit -o yaml: rejected exits 1" "$rc" 1
yaml_is_json "admit -o yaml: the rejection parses as the JSON one" "$out" \
    "$tmp/reject.json" '^admitted: false$'

off admit "$ok_job" -o xml
is "admit -o xml exits 2" "$rc" 2
has "admit -o xml: usage on stderr" "$err" '^usage: memfloor'
has "admit -o xml: says what -o takes" "$err" \
    "^memfloor: -o takes table, json or yaml, not 'xml'$"
mf admit "$ok_job" "$no_job"
is "admit with two FILEs exits 2" "$rc" 2
has "admit with two FILEs: says so" "$err" "^memfloor: one FILE only: "

# --- estimate -------------------------------------------------------------------
off estimate "$est_job" -o json
is "estimate exits 0" "$rc" 0
# Llama 3.1 8B has 8,030,261,248 parameters (design, section 5).
has "estimate: the parameters of Llama 3.1 8B" "$out" \
    '"parameters":8030261248'
has "estimate: the total and the floor" "$out" '"totalBytes":[0-9]+'
cp "$out" "$tmp/estimate.json"

off estimate "$est_job" -o table
is "estimate -o table exits 0" "$rc" 0
has "estimate -o table: the bucket header" "$out" '^BUCKET +FORMULA +GB$'

off estimate "$est_job" -o yaml
yaml_is_json "estimate -o yaml parses as the JSON answer" "$out" \
    "$tmp/estimate.json" '^parameters: 8030261248$'

off estimate "$ok_job" -o json
is "estimate: a job without a model exits 2" "$rc" 2
has "estimate: the error names spec.model" "$err" '"field":"spec\.model"'

off estimate "$tmp/badqty.yaml" -o json
is "estimate: bad quantity exits 2" "$rc" 2

# --- diagnose -------------------------------------------------------------------
off diagnose "$oom" -o json
is "diagnose FILE exits 0" "$rc" 0
# 22.00 MiB = 22 x 1,048,576 = 23,068,672 bytes.
has "diagnose FILE: the size tried" "$out" '"triedBytes":23068672,'
has "diagnose FILE: the cause" "$out" '"cause":"capacity"'
cp "$out" "$tmp/diagnose.json"

in=$oom
off diagnose - -o json
is "diagnose -: from stdin exits 0" "$rc" 0
same_json "diagnose -: the same answer as from the file" "$out" \
    "$tmp/diagnose.json"

in=$oom
off diagnose -o json
is "diagnose with no FILE reads stdin" "$rc" 0
same_json "diagnose with no FILE: the same answer" "$out" "$tmp/diagnose.json"

off diagnose "$oom" -o yaml
yaml_is_json "diagnose -o yaml parses as the JSON answer" "$out" \
    "$tmp/diagnose.json" '^cause: "?capacity"?$'

off diagnose "$oom" -o table
has "diagnose -o table: the cause" "$out" '^cause: capacity$'

# The CUDA runtime's own error (kijai/ComfyUI-WanVideoWrapper#565): no
# figures, its own cause, the 2.0+ lines named.
off diagnose examples/oom-runtime.txt -o json
is "diagnose: the runtime's error exits 0" "$rc" 0
has "diagnose: the runtime's error has its own cause" "$out" \
    '"cause":"outside-allocator"'
has "diagnose: the runtime's error is named by its releases" "$out" \
    '"format":"2\.0\+"'
has "diagnose: the runtime's error prints no figures" "$out" \
    '"triedBytes":null,"totalBytes":null'
off diagnose examples/oom-runtime.txt -o table
has "diagnose -o table: the runtime's error" "$out" \
    '^CUDA runtime error: out of memory \(PyTorch 2\.0\+ message\)$'

# vllm-project/vllm#34643 in a container: this process is Process 162519,
# the only entry holding what PyTorch reserved; the others are the two of
# 248.00 MiB, 2 x 260046848 = 520093696 bytes.
off diagnose examples/oom-container.txt -o json
has "diagnose: this process among the listed ones" "$out" \
    '"thisProcess":\{"from":"only-candidate","pid":162519,'
has "diagnose: otherProcessBytes counts only the others" "$out" \
    '"otherProcessBytes":520093696,'
off diagnose examples/oom-container.txt -o table
has "diagnose -o table: which process is this one" "$out" \
    '^  this process +20\.28 GiB \(Process 162519\)$'
has "diagnose -o table: the others alone" "$out" \
    '^  other processes +496\.00 MiB$'

echo 'Segmentation fault (core dumped)' >"$tmp/notoom.txt"
off diagnose "$tmp/notoom.txt" -o json
is "diagnose: no OOM message exits 2" "$rc" 2
has "diagnose: says so on stderr" "$err" '"error":"'

# --- catalog check --------------------------------------------------------------
ncards=$(grep -c '^  - name: ' catalog/gpus.yaml)
mf catalog check catalog/gpus.yaml
is "catalog check: the shipped catalogue exits 0" "$rc" 0
has "catalog check: the summary header" "$out" \
    '^GPU +GB +\$/HOUR +THROUGHPUT +GPUS/NODE +NODES +MAX +\$/REF-H$'
is "catalog check: one row per card ($ncards)" \
    "$(sed -n '/^GPU /,$p' "$out" | tail -n +2 | grep -c .)" "$ncards"
empty "catalog check: nothing on stderr" "$err"

# The first hourlyPrice made negative: the error must name that line.
cp catalog/gpus.yaml "$tmp/gpus.yaml"
price_line=$(grep -n '^ *hourlyPrice: ' "$tmp/gpus.yaml" | head -n 1 |
    cut -d: -f1)
sed "${price_line}s/hourlyPrice: [0-9.]*/hourlyPrice: -1/" \
    catalog/gpus.yaml >"$tmp/gpus.yaml"
mf catalog check "$tmp/gpus.yaml"
is "catalog check: a broken copy exits 2" "$rc" 2
empty "catalog check: a broken copy, nothing on stdout" "$out"
has "catalog check: file:line: field: problem" "$err" \
    "^gpus\.yaml:$price_line: gpus\[0\]\.hourlyPrice: "

sed 's/^  - name: /  - nmae: /' catalog/gpus.yaml >"$tmp/gpus.yaml"
mf catalog check "$tmp/gpus.yaml"
is "catalog check: an unknown field exits 2" "$rc" 2
has "catalog check: the unknown field is named" "$err" \
    '^gpus\.yaml:[0-9]+: gpus\[0\]\.nmae: '

# A card's memory of 80 is 80 bytes (served as 0.0 GB): refused with the
# file, the line and what was meant.
mem_line=$(grep -n '^ *memory: ' catalog/gpus.yaml | head -n 1 | cut -d: -f1)
sed "${mem_line}s/memory: [^ ]*/memory: 80/" catalog/gpus.yaml \
    >"$tmp/gpus.yaml"
mf catalog check "$tmp/gpus.yaml"
is "catalog check: memory 80 exits 2" "$rc" 2
has "catalog check: memory 80 is named with its line, 80Gi suggested" \
    "$err" "^gpus\.yaml:$mem_line: gpus\[0\]\.memory: '80' is 80 bytes, less than 1Gi: .*e\.g\. 80Gi"
mf catalog check "$est_job"
is "catalog check: a Job exits 2" "$rc" 2
has "catalog check: a Job is told its kind" "$err" \
    "kind: 'Job' is the kind of a memfloor Job manifest; this takes kind GpuCatalog"

mf catalog check "$tmp/nonexistent.yaml"
is "catalog check: a missing file exits 2" "$rc" 2
mf catalog check
is "catalog check without FILE exits 2" "$rc" 2

# --- catalog slurm --------------------------------------------------------------
# The shipped catalogue maps no card to Slurm: nothing to write is a failure
# that shows a mapping, and the mapping shown is one the catalogue takes.
mf catalog slurm catalog/gpus.yaml
is "catalog slurm: no mapping exits 2" "$rc" 2
empty "catalog slurm: no mapping, no table on stdout" "$out"
has "catalog slurm: no mapping, says so" "$err" \
    'no GPU has a slurm mapping, so there is no table to write'
has "catalog slurm: no mapping, shows one" "$err" \
    '^      slurm: \{gres: "gpu:[a-z0-9._-]+", partition: "gpu", constraint: "[a-z0-9._-]+"\}$'
mapping=$(grep '^      slurm: ' "$err")
first=$(grep -n '^  - name: ' catalog/gpus.yaml | head -n 1 | cut -d: -f1)
sed "${first}a\\
    ${mapping#      }" catalog/gpus.yaml >"$tmp/slurm.yaml"
mf catalog slurm "$tmp/slurm.yaml"
is "catalog slurm: the mapping it shows makes a table" "$rc" 0
has "catalog slurm: the table has that card" "$out" \
    "^	\{ gpu = \"$(sed -n "${first}s/^  - name: //p" catalog/gpus.yaml)\", "

# --- schema ---------------------------------------------------------------------
mf schema
is "schema: exits 0" "$rc" 0
has "schema: a draft 2020-12 JSON Schema" "$out" \
    '^\{"\$schema":"https://json-schema\.org/draft/2020-12/schema","title":"memfloor Job manifest"'
mf schema GpuCatalog --markdown
is "schema GpuCatalog --markdown: exits 0" "$rc" 0
has "schema GpuCatalog --markdown: the cards' fields" "$out" \
    '^\| `memoryBandwidth` \| quantity .*\(bytes/s\) \|'
mf schema Pod
is "schema Pod: exits 2" "$rc" 2
has "schema Pod: names the kinds there are" "$err" \
    "'Pod' is not a kind of document memfloor reads \(Job, GpuCatalog\)"

# --- usage ----------------------------------------------------------------------
mf
is "no command exits 2" "$rc" 2
has "no command: usage on stderr" "$err" '^usage: memfloor'
mf frobnicate "$ok_job"
is "an unknown command exits 2" "$rc" 2
has "an unknown command is named" "$err" "^memfloor: unknown command 'frobnicate'$"
mf admit "$ok_job" --bogus
is "an unknown option exits 2" "$rc" 2
has "an unknown option is named" "$err" "^memfloor: unknown option '--bogus'$"

# --- the shipped data, wherever memfloor is started from ----------------------
# One rule for both programs: the executable's source tree, then the
# installed data; the error says where it looked.
abs_cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
abs_d=$(cd "$(dirname "$daemon_bin")" && pwd)/$(basename "$daemon_bin")
abs_job=$(pwd)/$ok_job
(cd "$tmp" && timeout 60 "$abs_cli" admit "$abs_job" -o json >"$out" 2>"$err") &&
    rc=0 || rc=$?
is "admit from another directory, no -f: the source tree's catalogue" "$rc" 0
rc=0
(cd "$tmp" && timeout 60 "$abs_d" -n >"$out" 2>"$err") || rc=$?
is "memfloord -n from another directory, no -f: configuration OK" \
    "$rc $(cat "$out")" "0 configuration OK"
if [ ! -e /usr/local/share/memfloor ] && [ ! -e "$tmp/catalog" ]; then
	mkdir "$tmp/bin"
	cp "$abs_cli" "$abs_d" "$tmp/bin/"
	rc=0
	"$tmp/bin/$(basename "$abs_cli")" admit "$abs_job" >"$out" 2>"$err" ||
	    rc=$?
	has "memfloor with no data anywhere: says where it looked" "$err" \
	    "^memfloor: no gpus.yaml: looked for $tmp/catalog/gpus.yaml or .*/gpus.yaml; name one with -f$"
	rc=0
	"$tmp/bin/$(basename "$abs_d")" -n >"$out" 2>"$err" || rc=$?
	has "memfloord with no data anywhere: says where it looked" "$err" \
	    "^memfloord: no catalogue: looked for $tmp/catalog/gpus.yaml or .*/gpus.yaml; name one with -f FILE$"
	rm -r "$tmp/bin"
else
	pass "data installed here: the nowhere-found error is not tried"
fi

# --- standard input at a terminal ----------------------------------------------
if python3 -c 'import pty' 2>/dev/null; then
	said=$(python3 - "$abs_cli" <<'PYEOF'
import os, pty, subprocess, sys
master, slave = pty.openpty()
p = subprocess.Popen([sys.argv[1], "estimate"], stdin=slave,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(slave)
os.write(master, b"\x04")
try:
    _, err = p.communicate(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    _, err = p.communicate()
print(err.decode(errors="replace").splitlines()[0] if err else "")
PYEOF
)
	is "estimate without FILE at a terminal: says it reads standard input" \
	    "$said" "memfloor: reading from standard input (end with Ctrl-D; give a FILE to read that instead)"
else
	pass "no python3 pty: the terminal note is not tried"
fi
mf --help
is "--help exits 0" "$rc" 0
has "--help: usage on stdout" "$out" '^usage: memfloor'

# --- submit ---------------------------------------------------------------------
serve "$tmp/daemon.log"
daemon=$pid
url=http://127.0.0.1:$port

mf submit "$ok_job" --server "$url" -o json
is "submit: admitted exits 0" "$rc" 0
same_json "submit: the daemon's answer is the offline one" "$out" \
    "$tmp/admit.json"

mf submit "$no_job" --server "$url" -o json
is "submit: rejected exits 1" "$rc" 1
same_json "submit: the daemon's rejection is the offline one" "$out" \
    "$tmp/reject.json"

mf submit "$tmp/badqty.yaml" --server "$url" -o json
is "submit: bad quantity (400) exits 2" "$rc" 2
empty "submit: bad quantity, nothing on stdout" "$out"
has "submit: the daemon's error names the field" "$err" \
    '"field":"spec\.resources\.gpu\.minMemory"'

mf submit "$tmp/job.json" --server "$url" -o json
is "submit: a JSON manifest exits 0" "$rc" 0
has "submit: a JSON manifest is read" "$out" '"job":"json-job"'

in=$ok_job
mf submit - --server "$url" -o json
is "submit -: from stdin exits 0" "$rc" 0

mf submit "$ok_job" --server "$url" -o table
has "submit -o table: the table header" "$out" '^GPU +COUNT +NODES +GB +SPARE '

mf submit "$ok_job" --server "$url" -o yaml
yaml_is_json "submit -o yaml parses as the JSON answer" "$out" \
    "$tmp/admit.json" '^admitted: true$'

mf submit "$tmp/url.yaml" --server "$url" -o json
is "submit: configUrl on a host not allowed (400) exits 2" "$rc" 2
has "submit: the daemon names spec.model.configUrl" "$err" \
    '"field":"spec\.model\.configUrl"'

# The estimator (design 13): the catalogue's (pytorch) unless the request
# asks; a name that is neither is a 400 naming the field.  161,249,116,160
# and 148,839,137,280 bytes: tests/unit/test_estimate.c.
curl -s -o "$tmp/est-default.json" --data-binary @"$est_job" \
    "$url/v1/estimate"
has "daemon: the default estimator is pytorch" "$tmp/est-default.json" \
    '"estimator":"pytorch".*"totalBytes":161249116160'
curl -s -o "$tmp/est-post.json" --data-binary @"$est_job" \
    "$url/v1/estimate?estimator=post"
has "daemon: ?estimator=post gives the post's figure" "$tmp/est-post.json" \
    '"estimator":"post".*"totalBytes":148839137280'
code=$(curl -s -o "$tmp/est-bad.json" -w '%{http_code}' \
    --data-binary @"$est_job" "$url/v1/admit?estimator=gpt")
is "daemon: ?estimator=gpt is a 400" "$code" 400
has "daemon: the 400 names estimator" "$tmp/est-bad.json" \
    '"field":"estimator"'
off estimate "$est_job" -o json --estimator post
same_json "estimate --estimator post: the daemon's answer" "$out" \
    "$tmp/est-post.json"
off estimate "$est_job" -o json --estimator gpt
is "estimate --estimator gpt exits 2" "$rc" 2
has "estimate --estimator gpt: the error names estimator" "$err" \
    '"field":"estimator"'
off estimate "$est_job" -o table
has "estimate -o table: both figures when they differ" "$out" \
    "^post's arithmetic: 148\\.8 GB; measured PyTorch: 161\\.2 GB"

if wait_log "$tmp/daemon.log" \
    'path="/v1/admit" status=200 .*job="llama-8b-full" decision=admitted'
then
	pass "the daemon logged the submitted job"
else
	fail "the daemon did not log the submitted job: $(tail -n 3 \
	    "$tmp/daemon.log")"
fi

# Request lines wait in a buffer (daemon/log.c): each is written within
# about 100 ms, and SIGTERM writes out the ones still waiting.  Waited on
# for up to 5 s, so that a loaded machine's scheduling is not the test.
curl -s -o /dev/null "$url/log-probe" || true
if wait_log "$tmp/daemon.log" 'path="/log-probe" status=404' 1 50; then
	pass "a request line is logged while the daemon runs"
else
	fail "no request line within 5 s: $(tail -n 3 "$tmp/daemon.log")"
fi
nreq=50
urls=""
i=0
while [ $i -lt $nreq ]; do
	i=$((i + 1))
	urls="$urls $url/drain-$i"
done
# shellcheck disable=SC2086 # urls is a list
curl -s $urls >/dev/null 2>&1 || true
kill -TERM "$daemon"
drc=0
wait "$daemon" || drc=$?
daemon=""
is "memfloord: SIGTERM exits 0" "$drc" 0
is "SIGTERM: all $nreq request lines just before it are logged" \
    "$(grep -Ec 'path="/drain-[0-9]+" status=404' "$tmp/daemon.log" ||
    true)" "$nreq"

mf submit "$ok_job" --server "$url" -o json
is "submit: a closed port exits 3" "$rc" 3
has "submit: a closed port is said on stderr" "$err" "127\.0\.0\.1:$port"

# --- threads ---------------------------------------------------------------------
# One thread for each CPU the daemon may run on: its affinity mask, not
# the machine's count.
if command -v taskset >/dev/null 2>&1; then
	daemon_wrap="taskset -c 0"
	start_daemon "$tmp/one.log"
	daemon_wrap=""
	daemon=$pid
	has "memfloord on one CPU: one thread" "$tmp/one.log" \
	    "listening on .*\(http, 1 thread\)"
	mf submit "$ok_job" --server "http://127.0.0.1:$port" -o json
	is "memfloord on one CPU: submit exits 0" "$rc" 0
	kill -TERM "$daemon"
	drc=0
	wait "$daemon" || drc=$?
	daemon=""
	is "memfloord on one CPU: SIGTERM exits 0" "$drc" 0
else
	skip "taskset not found: the one-CPU thread count is not checked"
fi

# --- JSON log lines --------------------------------------------------------------
# Each line is one JSON object; client strings come back as they were sent.
start_daemon "$tmp/json.log" --log-format json
daemon=$pid
curl -s -o /dev/null "http://127.0.0.1:$port/v1/a%22b%5Cc%01d"
curl -s -o /dev/null --data-binary @"$ok_job" \
    -H 'Content-Type: application/yaml' "http://127.0.0.1:$port/v1/admit"
# A path that is not UTF-8; names of 62 ASCII bytes and a euro sign, and of
# 253 bytes (the longest the manifest takes); a 400 naming its field.
curl -s -o /dev/null "http://127.0.0.1:$port/v1/%ff%e2%82x"
euro=$(printf 'e%.0s' $(seq 62))€
long=$(printf 'l%.0s' $(seq 253))
for name in "$euro" "$long"; do
	sed "s/name: llama-8b-full/name: $name/" "$ok_job" >"$tmp/named.yaml"
	curl -s -o /dev/null --data-binary @"$tmp/named.yaml" \
	    -H 'Content-Type: application/yaml' \
	    "http://127.0.0.1:$port/v1/admit"
done
sed 's/minMemory: 88Gi/minMemory: 88Gx/' "$ok_job" >"$tmp/bad.yaml"
curl -s -o /dev/null --data-binary @"$tmp/bad.yaml" \
    -H 'Content-Type: application/yaml' "http://127.0.0.1:$port/v1/admit"
# A method libmicrohttpd takes as one: a quote and a control byte in it.
python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"X\"\x01Y /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
s.recv(4096)' "$port"
wait_log "$tmp/json.log" '"status":405' || true
kill -TERM "$daemon"
wait "$daemon" || true
daemon=""
is "--log-format json: every line is a JSON object with ts and level" \
    "$(python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], "rb")]
print(all(isinstance(l, dict) and "ts" in l and "level" in l for l in lines),
      sum(l.get("msg") == "request" for l in lines))' "$tmp/json.log")" \
    "True 7"
is "--log-format json: a method with a quote and a control byte, escaped" \
    "$(python3 -c '
import json, sys
print([l["method"] for l in map(json.loads, open(sys.argv[1], "rb"))
       if l.get("status") == 405])' "$tmp/json.log")" "['X\"\\x01Y']"
is "--log-format json: bytes that are not UTF-8 are replaced, names kept whole" \
    "$(python3 -c '
import json, sys
got = {}
for l in open(sys.argv[1], "rb"):
    l = json.loads(l)
    if l.get("msg") == "request":
        got.setdefault(l["status"], []).append(l)
bad = [l["path"] for l in got.get(404, []) if l["path"].startswith("/v1/\ufffd")]
names = [l["job"] for l in got.get(200, [])]
print(bad == ["/v1/\ufffd\ufffd\ufffdx"], "e" * 62 + "\u20ac" in names,
      "l" * 253 in names,
      [l.get("field") for l in got.get(400, [])])
' "$tmp/json.log")" "True True True ['spec.resources.gpu.minMemory']"

# --- submit over HTTPS ----------------------------------------------------------
if command -v openssl >/dev/null 2>&1 &&
    timeout 60 openssl req -x509 -newkey ec \
    -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=memfloor cli test" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1; then
	start_daemon "$tmp/tls.log" --tls-cert "$tmp/cert.pem" \
	    --tls-key "$tmp/key.pem"
	tlsd=$pid
	if [ -n "$port" ]; then
		mf submit "$ok_job" --server "https://127.0.0.1:$port" \
		    --cacert "$tmp/cert.pem" -o json
		is "submit --cacert: HTTPS exits 0" "$rc" 0
		same_json "submit --cacert: the same answer" "$out" \
		    "$tmp/admit.json"
		mf submit "$ok_job" --server "https://127.0.0.1:$port" \
		    -o json
		is "submit: an untrusted certificate exits 3" "$rc" 3
	else
		fail "memfloord with TLS did not start: $(cat "$tmp/tls.log")"
	fi
else
	skip "submit over HTTPS (no openssl)"
fi

# --- manual pages ---------------------------------------------------------------
command -v mandoc >/dev/null 2>&1 || apt_install cli mandoc
if command -v mandoc >/dev/null 2>&1; then
	for page in man/memfloor.1 man/memfloord.8; do
		lrc=0
		mandoc -T lint -W warning "$page" >"$out" 2>&1 || lrc=$?
		if [ "$lrc" = 0 ] && [ ! -s "$out" ]; then
			pass "mandoc -T lint $page"
		else
			fail "mandoc -T lint $page: $(cat "$out")"
		fi
		mandoc -T markdown "$page" >"$out" 2>/dev/null || true
		has "$page renders its EXIT STATUS" "$out" '^# EXIT STATUS$'
	done
else
	skip "mandoc -T lint (no mandoc)"
fi

summary
