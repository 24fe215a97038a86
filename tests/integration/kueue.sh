#!/bin/sh
# tests/integration/kueue.sh: `memfloor catalog kueue FILE`, the catalogue's GPU types
# as Kueue ResourceFlavors (design 18).
#
# Renders the shipped catalogue and checks the output against Kueue's
# ResourceFlavor v1beta1 schema (kueue.x-k8s.io/v1beta1: metadata.name a
# DNS-1123 subdomain; spec has only nodeLabels, nodeTaints, tolerations and
# topologyName; nodeLabels a map of at most 8 strings with valid label keys
# and values), read with PyYAML; and that there is one flavor per GPU of
# catalog/gpus.yaml, in file order, named by the GPU name in lower case,
# with the GPU's labels as nodeLabels (catalog/gpus.yaml read with PyYAML,
# not with memfloor).  Where kubectl is installed, it must parse the
# flavors too: `kubectl annotate --local -f FILE -o json` reads and decodes
# every document without a cluster (kubectl create --dry-run=client needs
# the API server to know the kind).  Then the refusals: a name Kueue
# cannot take, two names equal in lower case, a GPU without labels, more
# than 8 labels; each exits 2 with FILE:LINE: FIELD on stderr (the file by
# its base name, as the catalogue's own errors).
#
# Run from the repository root (or set MF_TOP).  Needs python3 with PyYAML
# for the schema check (skipped without).  Prints one line per check and
# "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
cli=${MEMFLOOR:-build/memfloor}
check_name=kueue
. "$top/tests/lib/check.sh"

if [ ! -x "$cli" ]; then
	fail "memfloor not found at $cli (set MEMFLOOR)"
	summary
	exit 1
fi

# mf ARGS...: stdout in $tmp/out, stderr in $tmp/err, status in $rc.
mf() {
	rc=0
	timeout 60 "$cli" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

mf catalog kueue catalog/gpus.yaml
is "kueue: the shipped catalogue exits 0" "$rc" 0
is "kueue: nothing on stderr" "$(cat "$tmp/err")" ""
cp "$tmp/out" "$tmp/flavors.yaml"
is "kueue: one ResourceFlavor per GPU" \
    "$(grep -c '^kind: ResourceFlavor$' "$tmp/flavors.yaml")" \
    "$(grep -c '^  - name: ' catalog/gpus.yaml)"

if python3 -c 'import yaml' 2>/dev/null; then
	if why=$(timeout 30 python3 - "$tmp/flavors.yaml" catalog/gpus.yaml \
	    2>&1 <<'EOF'
"""The flavors against Kueue's ResourceFlavor v1beta1 schema and against
the catalogue, read here with PyYAML."""
import re
import sys

import yaml

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN = re.compile(r"^%s(\.%s)*$" % (DNS1123_LABEL, DNS1123_LABEL))
LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
SPEC_FIELDS = {"nodeLabels", "nodeTaints", "tolerations", "topologyName"}


def label_key_ok(k):
    prefix, _, name = k.rpartition("/")
    if prefix and (len(prefix) > 253 or not SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= 63 and bool(LABEL_NAME.match(name))


def check(f, n):
    at = "document %d" % n
    if set(f) - {"apiVersion", "kind", "metadata", "spec"}:
        sys.exit("%s: fields %s" % (at, sorted(f)))
    if f.get("apiVersion") != "kueue.x-k8s.io/v1beta1":
        sys.exit("%s: apiVersion %r" % (at, f.get("apiVersion")))
    if f.get("kind") != "ResourceFlavor":
        sys.exit("%s: kind %r" % (at, f.get("kind")))
    name = f["metadata"]["name"]
    if not isinstance(name, str) or len(name) > 253 \
            or not SUBDOMAIN.match(name):
        sys.exit("%s: metadata.name %r" % (at, name))
    spec = f["spec"]
    if set(spec) - SPEC_FIELDS:
        sys.exit("%s: spec fields %s" % (at, sorted(spec)))
    labels = spec.get("nodeLabels", {})
    if not isinstance(labels, dict) or len(labels) > 8:
        sys.exit("%s: nodeLabels %r" % (at, labels))
    for k, v in labels.items():
        if not isinstance(k, str) or not label_key_ok(k):
            sys.exit("%s: label key %r" % (at, k))
        if not isinstance(v, str) or len(v) > 63 or \
                (v and not LABEL_NAME.match(v)):
            sys.exit("%s: label value %r" % (at, v))
    return name, labels


with open(sys.argv[1]) as fh:
    flavors = [d for d in yaml.safe_load_all(fh) if d is not None]
with open(sys.argv[2]) as fh:
    gpus = yaml.safe_load(fh)["gpus"]
if len(flavors) != len(gpus):
    sys.exit("%d flavors for %d GPUs" % (len(flavors), len(gpus)))
for n, (f, g) in enumerate(zip(flavors, gpus)):
    name, labels = check(f, n)
    if name != g["name"].lower():
        sys.exit("flavor %d is %r, GPU %r" % (n, name, g["name"]))
    if labels != {k: str(v) for k, v in g["labels"].items()}:
        sys.exit("flavor %s: nodeLabels %r, labels %r"
                 % (name, labels, g["labels"]))
EOF
	); then
		pass "kueue: flavors fit Kueue's ResourceFlavor v1beta1 schema and the catalogue"
	else
		fail "kueue: schema check: $why"
	fi
else
	echo "skip - kueue: schema check (no PyYAML)"
fi

if command -v kubectl >/dev/null 2>&1; then
	if timeout 60 kubectl annotate --local -f "$tmp/flavors.yaml" \
	    memfloor.dev/check=1 -o json >"$tmp/kubectl.json" 2>"$tmp/kerr"
	then
		n=$(grep -c '"kind": "ResourceFlavor"' "$tmp/kubectl.json" || true)
		is "kueue: kubectl parses every flavor" "$n" \
		    "$(grep -c '^  - name: ' catalog/gpus.yaml)"
	else
		fail "kueue: kubectl: $(head -c 300 "$tmp/kerr")"
	fi
else
	echo "skip - kueue: kubectl parse (no kubectl)"
fi

# refused CASE FIELD ENTRY...: a catalogue of one or more GPU entries (each
# "NAME LABELS", LABELS a flow mapping) exits 2 naming FIELD.
refused() {
	what=$1 field=$2
	shift 2
	{
		printf 'apiVersion: memfloor.dev/v1\nkind: GpuCatalog\ngpus:\n'
		for e in "$@"; do
			printf '  - name: %s\n    memory: 16G\n    hourlyPrice: 1\n' \
			    "${e%% *}"
			printf '    relativeThroughput: 1\n    labels: %s\n' \
			    "${e#* }"
		done
	} >"$tmp/bad.yaml"
	mf catalog kueue "$tmp/bad.yaml"
	if [ "$rc" = 2 ] && [ ! -s "$tmp/out" ] &&
	    grep -q "^bad.yaml:[0-9]*: $field: " "$tmp/err"; then
		pass "kueue: refused: $what"
	else
		fail "kueue: $what: exit $rc, stderr: $(cat "$tmp/err")"
	fi
}
refused "a name with '_'" 'gpus\[0\]\.name' 'RTX_4090 {a: b}'
refused "two names equal in lower case" 'gpus\[1\]\.name' \
    'H100 {a: b}' 'h100 {a: c}'
refused "a GPU without labels" 'gpus\[0\]\.labels' 'A {}'
refused "nine labels" 'gpus\[0\]\.labels' \
    'A {a: v, b: v, c: v, d: v, e: v, f: v, g: v, h: v, i: v}'
mf catalog kueue "$tmp/none.yaml"
is "kueue: a missing file exits 2" "$rc" 2
mf catalog kueue
is "kueue: no file exits 2 with the usage" "$rc" 2

summary
