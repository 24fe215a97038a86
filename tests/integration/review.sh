#!/bin/sh
# tests/integration/review.sh: POST /v1/admission-review against a real memfloord.
#
# Starts $MEMFLOORD (default build/memfloord) on a free loopback port with
# the shipped cards as design 6 times them (tests/data/catalog/design6.yaml,
# each card by its relativeThroughput: the figures below are worked out on
# it) and the shipped models, sends the AdmissionReviews of
# tests/data/review/ and examples/ with curl, and applies each answer's
# JSON Patch to the request's object with python3-jsonpatch (an RFC 6902
# implementation not written for memfloor), then checks the patched
# object: nodeSelector, the nvidia.com/gpu limits, the annotations, and
# that nothing else moved.  Also: a denial's code and message, a bad
# annotation (HTTP 200, status.code 400), the unannotated pass-through, a
# body that is no AdmissionReview (HTTP 400), and the examples' answers
# against examples/k8s-*admissionreview.response.json.  Design 18: GPUs go
# to one container (no sidecar or init container gets any), requests equal
# limits, a container that asks otherwise is denied; and, from a second
# daemon whose catalogue has kubernetes.select: memory, the memory affinity
# in every required term with the floor in MiB, the preferred terms in
# placement order, the pod's own terms and keys kept; and the Job as
# patched, reviewed again: at its floor nothing is added twice, at another
# memfloor's own expression and terms (its annotation
# memfloor.dev/node-affinity says which) are replaced and the pod's own
# expression kept.  Design 23: the
# label memfloor.dev/fingerprint on the pods (a Pod's own labels, a Job's
# pod template's) is what $MEMFLOOR (default build/memfloor) fingerprint
# prints for the review's job as placed.
# The examples' answers come from a daemon of the shipped catalogue, as
# make run serves it.
#
# Run from the repository root (or set MF_TOP).  Needs curl and python3
# with the jsonpatch module; as root it installs Debian's python3-jsonpatch
# when missing.  Prints one line per check and "N passed, M failed"; exits
# non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
cli=${MEMFLOOR:-build/memfloor}
data=tests/data/review
check_name=review
daemon=""
daemon2=""
daemon3=""
cleanup() {
	stop_all "$daemon3" "$daemon2" "$daemon"
}
design6=tests/data/catalog/design6.yaml
. "$top/tests/lib/check.sh"

# --- python3 with jsonpatch -------------------------------------------------
find_python() {
	for p in python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null 2>&1 &&
		    "$p" -c 'import jsonpatch' >/dev/null 2>&1; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

if ! py=$(find_python); then
	apt_install review python3-jsonpatch
	if ! py=$(find_python); then
		fail "python3 with jsonpatch is needed" \
		    "(Debian: apt-get install python3-jsonpatch)"
		summary
		exit 1
	fi
fi
if ! command -v curl >/dev/null 2>&1; then
	fail "curl is needed"
	summary
	exit 1
fi

# --- the checker --------------------------------------------------------------
cat >"$tmp/check.py" <<'EOF'
"""check.py MODE REQUEST ANSWER [ARG...]: one AdmissionReview answer.

patched: allowed with a JSON Patch; apply it to request.object and check
    each POINTER=JSON (the value at that RFC 6901 pointer) and each
    POINTER=- (nothing there); the rest of the object must be untouched.
denied CODE TEXT: allowed false, status.code CODE, TEXT in the message.
unchanged: allowed, no patch.
same EXPECTED: the answer equals the JSON file EXPECTED.
Exits 1 with the reason on stderr.
"""
import base64
import json
import sys

import jsonpatch
import jsonpointer


def die(msg):
    sys.stderr.write(msg + "\n")
    sys.exit(1)


def envelope(req, ans):
    if ans.get("apiVersion") != "admission.k8s.io/v1":
        die("apiVersion %r" % ans.get("apiVersion"))
    if ans.get("kind") != "AdmissionReview":
        die("kind %r" % ans.get("kind"))
    resp = ans.get("response")
    if not isinstance(resp, dict):
        die("no response")
    if resp.get("uid") != req["request"]["uid"]:
        die("uid %r is not the request's" % resp.get("uid"))
    for w in resp.get("warnings", []):
        if len(w) >= 120:
            die("warning of %d characters: %s" % (len(w), w))
    return resp


def strip(obj, ops, patched):
    """obj with every path the patch wrote removed (for the rest check).

    An add at an array's end ("/-") wrote that array's last element in the
    patched object, and nothing of the object before: undone last first.
    """
    obj = json.loads(json.dumps(obj))
    for op in reversed(ops):
        path = op["path"]
        if path.endswith("/-"):
            if not patched:
                continue
            arr = jsonpointer.resolve_pointer(obj, path[:-2], default=None)
            path = path[:-1] + str(len(arr) - 1) if arr else path
        try:
            jsonpatch.RemoveOperation({"op": "remove",
                                       "path": path}).apply(obj)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
            pass
    return obj


def patched(req, resp, checks):
    if resp.get("allowed") is not True:
        die("not allowed: %r" % resp.get("status"))
    if resp.get("patchType") != "JSONPatch":
        die("patchType %r" % resp.get("patchType"))
    ops = json.loads(base64.b64decode(resp["patch"], validate=True))
    before = req["request"]["object"]
    after = jsonpatch.JsonPatch(ops).apply(before)
    for c in checks:
        ptr, _, want = c.partition("=")
        got = jsonpointer.resolve_pointer(after, ptr, default=KeyError)
        if want == "-":
            if got is not KeyError:
                die("%s is %r, expected nothing" % (ptr, got))
            continue
        want = json.loads(want)
        if got != want:
            die("%s is %r, expected %r" % (ptr, got, want))
    if strip(before, ops, False) != strip(after, ops, True):
        die("the patch changed more than its own paths")


def main():
    mode, req, ans = sys.argv[1], sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    with open(req) as f:
        req = json.load(f)
    with open(ans) as f:
        ans = json.load(f)
    if mode == "same":
        with open(args[0]) as f:
            if json.load(f) != ans:
                die("the answer differs from " + args[0])
        return
    resp = envelope(req, ans)
    if mode == "patched":
        patched(req, resp, args)
    elif mode == "denied":
        st = resp.get("status") or {}
        if resp.get("allowed") is not False or "patch" in resp:
            die("not denied")
        if st.get("code") != int(args[0]):
            die("status.code %r" % st.get("code"))
        if args[1] not in st.get("message", ""):
            die("message %r lacks %r" % (st.get("message"), args[1]))
        if len(st["message"]) > 1000:
            die("message of %d characters" % len(st["message"]))
    elif mode == "unchanged":
        if resp.get("allowed") is not True or "patch" in resp \
                or "patchType" in resp:
            die("not allowed unchanged: %r" % resp)
    else:
        die("mode " + mode)


main()
EOF

# --- the daemon -------------------------------------------------------------
serve "$tmp/daemon.log" -f "$design6"
daemon=$pid
url=http://127.0.0.1:$port/v1/admission-review

# post FILE: the answer goes to $tmp/answer, the HTTP status to stdout.
post() {
	curl -sS --max-time 10 -o "$tmp/answer" -w '%{http_code}' \
	    -H 'Content-Type: application/json' --data-binary "@$1" "$url" \
	    2>/dev/null || true
}

# review NAME FILE STATUS MODE ARG...: post FILE, expect HTTP STATUS, then
# check.py MODE.
review() {
	name=$1 file=$2 want=$3
	shift 3
	code=$(post "$file")
	if [ "$code" != "$want" ]; then
		fail "$name: HTTP $code, expected $want: $(head -c 300 \
		    "$tmp/answer" 2>/dev/null)"
		return
	fi
	if why=$(timeout 30 "$py" "$tmp/check.py" "$@" 2>&1); then
		pass "$name"
	else
		fail "$name: $why"
	fi
}

# The review's job as a memfloor Job manifest: its memfloor.dev/spec
# annotation, as written, under spec (or its min-memory annotation as
# resources.gpu.minMemory), and the extra lines of spec given.
cat >"$tmp/manifest.py" <<'EOF'
import json, sys

with open(sys.argv[1]) as f:
    ann = json.load(f)["request"]["object"]["metadata"]["annotations"]
lines = ["apiVersion: memfloor.dev/v1", "kind: Job",
         "metadata: {name: review}", "spec:"]
if "memfloor.dev/spec" in ann:
    lines += ["  " + l for l in ann["memfloor.dev/spec"].splitlines()]
else:
    lines.append("  resources: {gpu: {minMemory: %s}}"
                 % ann["memfloor.dev/min-memory"])
lines += ["  " + l for l in sys.argv[2:]]
print("\n".join(lines))
EOF

# fingerprint REVIEW [SPEC-LINE...]: what memfloor fingerprint prints for
# the review's job on the main daemon's catalogue, as a JSON string.
fingerprint() {
	review_file=$1
	shift
	"$py" "$tmp/manifest.py" "$review_file" "$@" >"$tmp/manifest.yaml" &&
	    printf '"%s"' "$("$cli" fingerprint "$tmp/manifest.yaml" \
	        -f "$design6" -m catalog/models 2>/dev/null)"
}

sel=/spec/nodeSelector/nvidia.com~1gpu.product
tsel=/spec/template/spec/nodeSelector/nvidia.com~1gpu.product
ann=/metadata/annotations/memfloor.dev~1
label=/metadata/labels/memfloor.dev~1fingerprint
tlabel=/spec/template$label
gpu=resources/limits/nvidia.com~1gpu
req=resources/requests/nvidia.com~1gpu

# 88Gi: the B200 is the cheapest card per reference hour that holds it.
review "pod without nodeSelector: created, limits added" \
    $data/pod-min-memory.json 200 \
    patched $data/pod-min-memory.json "$tmp/answer" \
    "$sel=\"NVIDIA-B200\"" "/spec/containers/0/$gpu=\"1\"" \
    "/spec/containers/0/$req=\"1\"" "${ann}placement=\"B200 x 1\"" "${ann}min-memory=\"88Gi\"" \
    "${ann}estimated-cost=-" "/metadata/labels/app=\"echo-server\"" \
    "$label=$(fingerprint $data/pod-min-memory.json)"

# 12Gi: the RTX-A4000 (16G) is cheapest; the pod's own selector stays.
# Only the first container gets the GPU (design 18): not the sidecar, not
# the container without resources, and the one pinning "0" keeps it.
review "pod with nodeSelector: key added, the first container alone limited" \
    $data/pod-selector.json 200 \
    patched $data/pod-selector.json "$tmp/answer" \
    "$sel=\"NVIDIA-RTX-A4000\"" \
    "/spec/nodeSelector/kubernetes.io~1os=\"linux\"" \
    "/spec/containers/0/$gpu=\"1\"" "/spec/containers/0/$req=\"1\"" \
    "/spec/containers/1/$gpu=-" "/spec/containers/1/$req=-" \
    "/spec/containers/1/resources/limits/cpu=\"500m\"" \
    "/spec/containers/2/resources=-" "/spec/containers/3/$gpu=\"0\"" \
    "/spec/containers/3/$req=-" \
    "${ann}placement=\"RTX-A4000 x 1\"" "${ann}min-memory=\"12Gi\""

# Floor from the annotation, count 2 from the spec: B200 x 2.  The train
# container requests 2 GPUs with no limit: its limit becomes 2.
review "job: template patched, count 2, requests equal limits" \
    $data/job-count.json 200 \
    patched $data/job-count.json "$tmp/answer" \
    "$tsel=\"NVIDIA-B200\"" \
    "/spec/template/spec/containers/0/$gpu=\"2\"" \
    "/spec/template/spec/containers/0/$req=\"2\"" \
    "/spec/template/spec/containers/1/$gpu=-" \
    "/spec/template/spec/containers/1/resources/limits/cpu=\"100m\"" \
    "/spec/template/spec/containers/0/resources/limits/memory=\"64Gi\"" \
    "${ann}placement=\"B200 x 2\"" "${ann}min-memory=\"88Gi\""

# The example Job: LoRA 8B, 25.4 GB by the shipped catalogue's estimator,
# pytorch (19.9 GB by the post's arithmetic): B200, floor 27Gi, $29.02.
review "example job: patched" \
    examples/k8s-admissionreview.json 200 \
    patched examples/k8s-admissionreview.json "$tmp/answer" \
    "$tsel=\"NVIDIA-B200\"" \
    "/spec/template/spec/containers/0/$gpu=\"1\"" \
    "/spec/template/spec/containers/0/$req=\"1\"" \
    "${ann}placement=\"B200 x 1\"" "${ann}min-memory=\"27Gi\"" \
    "${ann}estimated-cost=\"29.02\"" "$label=-" \
    "/spec/template/metadata/labels/app=\"llama-8b-lora\"" \
    "$tlabel=$(fingerprint examples/k8s-admissionreview.json)"

# A pod's GPUs all come from one node (design 11).  Llama 3.1 70B at
# s = 2048: fsdp alone needs 13 B200s, two nodes of 8, by the shipped
# catalogue's estimator (the B200's 183359 MiB hold 173.0 GB after
# headroom; 13 GPUs need 168.4 GB each, what fully_shard holds beside the
# shards, 13.1 GB, among it; 12 would need 16P / 156 = 7,236,277,589 bytes
# more, 175.6 GB); with checkpointing allowed too, 8 hold it, one node.  A
# plain Job is one pod: placed within a node, or denied with the
# placement over nodes and how to run it there.  The Indexed Job of
# examples/ runs 2 pods together: 14 GPUs, 7 a pod; its pods' label is
# the fingerprint of the job as placed, the spec with those 14 GPUs (over
# nodes alone, 13 would do).
review "one node: a plain Job gets checkpointing and fsdp over 8" \
    $data/job-70b-one-node.json 200 \
    patched $data/job-70b-one-node.json "$tmp/answer" \
    "$tsel=\"NVIDIA-B200\"" \
    "/spec/template/spec/containers/0/$gpu=\"8\"" \
    "/spec/template/spec/containers/0/$req=\"8\"" \
    "${ann}placement=\"B200 x 8\""
review "one node: nothing fits one, so the denial says how to run over nodes" \
    $data/job-70b-nodes.json 200 \
    denied $data/job-70b-nodes.json "$tmp/answer" 403 \
    "it needs B200 x 13 over 2 nodes"
review "one node: the denial places the Indexed Job of 2 pods" \
    $data/job-70b-nodes.json 200 \
    denied $data/job-70b-nodes.json "$tmp/answer" 403 \
    "parallelism and completions 2, one pod a node: memfloor places it as 2 pods of B200 x 7"
review "indexed job: 2 pods of 7 GPUs" \
    examples/k8s-indexed-admissionreview.json 200 \
    patched examples/k8s-indexed-admissionreview.json "$tmp/answer" \
    "$tsel=\"NVIDIA-B200\"" \
    "/spec/template/spec/containers/0/$gpu=\"7\"" \
    "/spec/template/spec/containers/0/$req=\"7\"" \
    "${ann}placement=\"B200 x 14 (2 pods of 7)\"" \
    "$tlabel=$(fingerprint examples/k8s-indexed-admissionreview.json \
        'resources: {gpu: {count: 14}}')"

# Each example review is what the API server makes of its Job's YAML:
# every field the YAML sets is in request.object, unchanged.
cat >"$tmp/within.py" <<'EOF'
import json, sys, yaml

def within(want, got, at):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            sys.exit("%s: not a mapping" % at)
        for k, v in want.items():
            if k not in got:
                sys.exit("%s.%s: missing" % (at, k))
            within(v, got[k], at + "." + k)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            sys.exit("%s: not the same list" % at)
        for i, (w, g) in enumerate(zip(want, got)):
            within(w, g, "%s[%d]" % (at, i))
    elif want != got:
        sys.exit("%s: %r is not %r" % (at, got, want))

with open(sys.argv[1]) as f:
    job = yaml.safe_load(f)
with open(sys.argv[2]) as f:
    within(job, json.load(f)["request"]["object"], "object")
EOF
for pair in k8s-job.yaml:k8s-admissionreview.json \
    k8s-job-sidecar.yaml:k8s-sidecar-admissionreview.json \
    k8s-job-indexed.yaml:k8s-indexed-admissionreview.json; do
	job=examples/${pair%%:*} rev=examples/${pair#*:}
	if ! "$py" -c 'import yaml' >/dev/null 2>&1; then
		echo "skip - $rev vs $job (no PyYAML)"
	elif why=$(timeout 30 "$py" "$tmp/within.py" "$job" "$rev" 2>&1); then
		pass "$rev carries $job"
	else
		fail "$rev vs $job: $why"
	fi
done

# A container that asks for a GPU the placement gives another: denied,
# named (design 18).
review "denied: a second container limits nvidia.com/gpu" \
    $data/pod-conflict.json 200 \
    denied $data/pod-conflict.json "$tmp/answer" 400 \
    "container pinned: resources.limits nvidia.com/gpu is 1, but GPUs go only to container echo-server"

review "denied: floor over the largest card" \
    $data/pod-too-big.json 200 \
    denied $data/pod-too-big.json "$tmp/answer" 403 \
    "minMemory 200G (200.0 GB) is more than the largest card in the catalogue, B200 (192.3 GB)"
review "denied: suggested fix in the message" \
    $data/pod-eager.json 200 \
    denied $data/pod-eager.json "$tmp/answer" 403 \
    "suggested fix: sdpa (spec.workload.attention: sdpa), placement B200 x1"
review "bad quantity annotation: denied with 400" \
    $data/pod-bad-quantity.json 200 \
    denied $data/pod-bad-quantity.json "$tmp/answer" 400 \
    "annotation memfloor.dev/min-memory: '88Gx' is not a quantity"
review "bad spec annotation: denied with 400" \
    $data/pod-bad-spec.json 200 \
    denied $data/pod-bad-spec.json "$tmp/answer" 400 \
    "annotation memfloor.dev/spec: spec.workload.methd: unknown field"
review "no annotation: allowed unchanged" \
    $data/pod-plain.json 200 \
    unchanged $data/pod-plain.json "$tmp/answer"
review "DELETE: allowed unchanged" \
    $data/pod-delete.json 200 \
    unchanged $data/pod-delete.json "$tmp/answer"

# --- select: memory (design 18) ----------------------------------------------
# The shipped catalogue with "kubernetes: {select: memory}" added, served by
# a second daemon.
{ cat "$design6"; printf 'kubernetes:\n  select: memory\n'; } \
    >"$tmp/gpus-memory.yaml"
main_url=$url
start_daemon "$tmp/daemon-memory.log" -f "$tmp/gpus-memory.yaml"
daemon2=$pid
if [ -z "$port" ]; then
	fail "memfloord with select: memory did not start: $(cat \
	    "$tmp/daemon-memory.log")"
else
	url=http://127.0.0.1:$port/v1/admission-review
	tpl=/spec/template/spec
	aff=$tpl/affinity/nodeAffinity
	terms=$aff/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms
	pref=$aff/preferredDuringSchedulingIgnoredDuringExecution
	# 40Gi = 40 x 1024 MiB = 40960 MiB: "Gt 40959", in both of the Job's
	# terms, after the expressions each had, which stay.
	mem='{"key":"nvidia.com/gpu.memory","operator":"Gt","values":["40959"]}'
	set -- "$terms/0/matchExpressions/1=$mem" \
	    "$terms/1/matchExpressions/2=$mem" "$terms/0/matchExpressions/2=-" \
	    "$terms/2=-" \
	    "$terms/0/matchExpressions/0/values=[\"eu-west-1a\"]" \
	    "$terms/1/matchExpressions/0/values=[\"eu-west-1b\"]" \
	    "$terms/1/matchExpressions/1/operator=\"NotIn\""
	# The cards of at least 40Gi, cheapest per reference hour first
	# (hourlyPrice / relativeThroughput: 2.42, 2.65, 2.70, 2.99, 3.14,
	# 3.50, 4.10, 5.21), weights falling by ten from 100; the A100 40GB
	# reports 40960 MiB, exactly 40Gi (design 20).
	i=0
	for product in NVIDIA-B200 NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition \
	    NVIDIA-L40S NVIDIA-H100-80GB-HBM3 NVIDIA-RTX-A6000 NVIDIA-H200 \
	    NVIDIA-A100-SXM4-40GB NVIDIA-A100-SXM4-80GB; do
		set -- "$@" "$pref/$i/weight=$((100 - 10 * i))" \
		    "$pref/$i/preference/matchExpressions/0/key=\"nvidia.com/gpu.product\"" \
		    "$pref/$i/preference/matchExpressions/0/values=[\"$product\"]"
		i=$((i + 1))
	done
	# The nodeSelector keeps its key and gains none; train, the container
	# memfloor.dev/container names, gets requests and limits of 1; the
	# metrics container, the init container and the sidecar get nothing.
	review "select memory: affinity in every term, cards preferred in order, GPUs to train alone" \
	    examples/k8s-sidecar-admissionreview.json 200 \
	    patched examples/k8s-sidecar-admissionreview.json "$tmp/answer" \
	    "$@" "$pref/8=-" \
	    "$tpl/nodeSelector={\"kubernetes.io/os\":\"linux\"}" \
	    "$tpl/containers/1/$gpu=\"1\"" "$tpl/containers/1/$req=\"1\"" \
	    "$tpl/containers/1/resources/limits/memory=\"64Gi\"" \
	    "$tpl/containers/0/resources={\"limits\":{\"cpu\":\"100m\"}}" \
	    "$tpl/initContainers/0/resources={}" \
	    "$tpl/initContainers/1/resources={\"limits\":{\"memory\":\"256Mi\"}}" \
	    "$tpl/initContainers/1/restartPolicy=\"Always\"" \
	    "${ann}placement=\"B200 x 1\"" "${ann}min-memory=\"40Gi\"" \
	    "${ann}estimated-cost=\"29.02\""
	# Reviewed again (a Job created from the one memfloor patched, or its
	# update): the object as the answer patched it, the floor in the spec
	# annotation set to FLOOR, and an expression of the pod's own, "Gt
	# 1000", after memfloor's in term 0.
	cp "$tmp/answer" "$tmp/sidecar-answer"
	cat >"$tmp/again.py" <<'EOF2'
import base64, json, sys
import jsonpatch

req = json.load(open(sys.argv[1]))
resp = json.load(open(sys.argv[2]))["response"]
obj = jsonpatch.JsonPatch(json.loads(base64.b64decode(resp["patch"]))) \
    .apply(req["request"]["object"])
ann = obj["metadata"]["annotations"]
ann["memfloor.dev/spec"] = ann["memfloor.dev/spec"].replace("40Gi",
                                                           sys.argv[3])
terms = obj["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
    "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
terms[0]["matchExpressions"].append(
    {"key": "nvidia.com/gpu.memory", "operator": "Gt", "values": ["1000"]})
req["request"]["object"] = obj
json.dump(req, sys.stdout)
EOF2
	own='{"key":"nvidia.com/gpu.memory","operator":"Gt","values":["1000"]}'
	for floor in 40Gi 88Gi; do
		"$py" "$tmp/again.py" examples/k8s-sidecar-admissionreview.json \
		    "$tmp/sidecar-answer" $floor >"$tmp/again-$floor.json"
	done
	# The same floor: each term keeps one memory expression of memfloor's,
	# the pod's own beside it, and the eight cards stay preferred.
	review "select memory: reviewed again at its floor, nothing added twice" \
	    "$tmp/again-40Gi.json" 200 \
	    patched "$tmp/again-40Gi.json" "$tmp/answer" \
	    "$terms/0/matchExpressions/1=$mem" \
	    "$terms/0/matchExpressions/2=$own" "$terms/0/matchExpressions/3=-" \
	    "$terms/1/matchExpressions/2=$mem" "$terms/1/matchExpressions/3=-" \
	    "$pref/7/weight=30" "$pref/8=-"
	# 88Gi = 90112 MiB: memfloor's "Gt 40959" becomes "Gt 90111" where
	# it stands, the pod's own stays; the cards of 88Gi, cheapest first:
	# B200, RTX-PRO-6000, H200 (2.42, 2.65, 3.50), at 100, 90, 80, and
	# none of the 40Gi ones left preferred.
	mem88='{"key":"nvidia.com/gpu.memory","operator":"Gt","values":["90111"]}'
	review "select memory: reviewed again at another floor, memfloor's own replaced" \
	    "$tmp/again-88Gi.json" 200 \
	    patched "$tmp/again-88Gi.json" "$tmp/answer" \
	    "$terms/0/matchExpressions/0/values=[\"eu-west-1a\"]" \
	    "$terms/0/matchExpressions/1=$mem88" \
	    "$terms/0/matchExpressions/2=$own" "$terms/0/matchExpressions/3=-" \
	    "$terms/1/matchExpressions/1/operator=\"NotIn\"" \
	    "$terms/1/matchExpressions/2=$mem88" "$terms/1/matchExpressions/3=-" \
	    "$pref/0/weight=100" \
	    "$pref/0/preference/matchExpressions/0/values=[\"NVIDIA-B200\"]" \
	    "$pref/1/weight=90" \
	    "$pref/1/preference/matchExpressions/0/values=[\"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition\"]" \
	    "$pref/2/weight=80" \
	    "$pref/2/preference/matchExpressions/0/values=[\"NVIDIA-H200\"]" \
	    "$pref/3=-" "${ann}min-memory=\"88Gi\""
	# 88Gi = 90112 MiB; the pod has no affinity: all of it is created.
	naff=/spec/affinity/nodeAffinity
	review "select memory: affinity created, no nodeSelector" \
	    $data/pod-min-memory.json 200 \
	    patched $data/pod-min-memory.json "$tmp/answer" \
	    "$naff/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/values=[\"90111\"]" \
	    "$naff/preferredDuringSchedulingIgnoredDuringExecution/2/weight=80" \
	    "$naff/preferredDuringSchedulingIgnoredDuringExecution/3=-" \
	    "/spec/nodeSelector=-" "/spec/containers/0/$req=\"1\""
	review "select memory: the conflicting container still denied" \
	    $data/pod-conflict.json 200 \
	    denied $data/pod-conflict.json "$tmp/answer" 400 \
	    "container pinned: resources.limits nvidia.com/gpu is 1"
	kill "$daemon2" 2>/dev/null || true
	wait "$daemon2" 2>/dev/null || true
fi
daemon2=""
url=$main_url

# Not AdmissionReviews: HTTP 400 with the field named.
bad() {
	name=$1 field=$2
	printf '%s' "$3" >"$tmp/bad.json"
	code=$(post "$tmp/bad.json")
	got=$(timeout 30 "$py" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("field"))' \
	    "$tmp/answer" 2>/dev/null || echo "?")
	if [ "$code" = 400 ] && [ "$got" = "$field" ]; then
		pass "$name"
	else
		fail "$name: HTTP $code, field $got: $(head -c 300 "$tmp/answer")"
	fi
}
bad "v1beta1 review: HTTP 400" apiVersion \
    '{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}'
bad "review without request: HTTP 400" request \
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}'
bad "review without uid: HTTP 400" request.uid \
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}'
bad "not JSON: HTTP 400" None 'kind: AdmissionReview'

# The daemon must still be serving, and must have logged the decisions.
if kill -0 "$daemon" 2>/dev/null && wait_log "$tmp/daemon.log" \
    'path="/v1/admission-review" status=200 .*job="llama-8b-lora" decision=admitted'
then
	pass "daemon alive, request log names the job and decision"
else
	fail "daemon log: $(tail -n 5 "$tmp/daemon.log")"
fi


# --- the examples' answers, from the shipped catalogue ----------------------
examples_from() {
	start_daemon "$tmp/daemon-examples.log" "$@"
	daemon3=$pid
	if [ -z "$port" ]; then
		fail "memfloord with the shipped catalogue did not start: $(cat \
		    "$tmp/daemon-examples.log")"
		return 1
	fi
	url=http://127.0.0.1:$port/v1/admission-review
}
same_as_example() {
	review "$1: the answer in examples/" "examples/$2.json" 200 \
	    same "examples/$2.json" "$tmp/answer" "examples/$2.response.json"
}
if examples_from; then
	same_as_example "example job" k8s-admissionreview
	same_as_example "indexed job" k8s-indexed-admissionreview
	# Timed (the shipped cards are modelled): the job over nodes and the
	# Indexed Job of as many pods are one card, count and nodes, and so
	# one cost; referenceHours is the job's at its own count, not at the
	# GPU each pod takes at least.
	code=$(post $data/job-70b-nodes.json)
	is "over nodes, timed: the Indexed Job costs what the job does" \
	    "$code $("$py" -c 'import json, re, sys
m = json.load(open(sys.argv[1]))["response"]["status"]["message"]
a = re.search(r"needs (\S+) x (\d+) over (\d+) nodes \(\$([\d.]+) to finish\)", m)
b = re.search(r"as (\d+) pods of (\S+) x (\d+), \$([\d.]+)\)", m)
print(bool(a and b and a.group(1) == b.group(2) and
    int(a.group(2)) == int(b.group(1)) * int(b.group(3)) and
    a.group(3) == b.group(1) and a.group(4) == b.group(4)))' "$tmp/answer")" \
	    "200 True"
fi
stop_all "$daemon3"
{ cat catalog/gpus.yaml; printf 'kubernetes:\n  select: memory\n'; } \
    >"$tmp/gpus-shipped-memory.yaml"
if examples_from -f "$tmp/gpus-shipped-memory.yaml"; then
	same_as_example "select memory" k8s-sidecar-admissionreview
fi

summary
