#!/bin/sh
# tests/integration/deploy.sh: render deploy/ (the kustomize base) and check the objects
# it makes, the systemd unit and the container build file.
#
# Rendering uses, in this order: $KUSTOMIZE (a kustomize binary), kustomize
# on PATH, `kubectl kustomize` (kubectl with kustomize v4 or later), else a
# small renderer written here in Python that knows the few kustomize
# features deploy/ uses.  When a real kustomize ran, the Python renderer
# runs too and must agree with it.  MF_RENDER=fallback forces the Python one.
#
# The component deploy/postgres is rendered over the base's Deployment and
# checked: --store from the Secret through the environment; so is
# deploy/prometheus: --prometheus a Service's URL, dcgm-exporter's settings
# said.
#
# Needs python3 with PyYAML; as root it installs Debian's python3-yaml when
# missing.  When $MEMFLOORD (or build/memfloord) exists, the daemon is run
# with the Deployment's own arguments: `memfloord -n`, then on a loopback
# port with TLS, its catalogue updated the way the kubelet updates a
# ConfigMap volume (needs openssl and curl).
#
# Prints one line per check and ends with "N passed, N failed, N skipped";
# exits non-zero when a check failed.
set -eu

top=${MF_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
deploy=$top/deploy
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mf-deploy.XXXXXX")
daemon=""
cleanup() {
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
log=$tmp/log
: >"$log"

pass() { echo "ok - $*" | tee -a "$log"; }
fail() { echo "FAIL - $*" | tee -a "$log"; }
skip() { echo "skip - $*" | tee -a "$log"; }

summary() {
	np=$(grep -c '^ok - ' "$log" || true)
	nf=$(grep -c '^FAIL - ' "$log" || true)
	ns=$(grep -c '^skip - ' "$log" || true)
	echo "$np passed, $nf failed, $ns skipped"
	[ "$nf" -eq 0 ]
}

is_root() { [ "$(id -u)" = 0 ]; }

apt_install() {
	echo "deploy: installing $* with apt-get"
	apt-get update -qq >/dev/null &&
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends "$@" >/dev/null
}

# --- python3 with PyYAML ---------------------------------------------------
find_python() {
	for p in python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null 2>&1 &&
		    "$p" -c 'import yaml' >/dev/null 2>&1; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

if ! py=$(find_python); then
	if is_root && command -v apt-get >/dev/null 2>&1; then
		apt_install python3 python3-yaml || true
	fi
	if ! py=$(find_python); then
		fail "python3 with PyYAML is needed" \
		    "(Debian: apt-get install python3-yaml)"
		summary
		exit 1
	fi
fi

# --- the Python half: renderer and checks ----------------------------------
cat >"$tmp/mf_deploy.py" <<'PYEOF'
"""Renderer for the kustomize subset deploy/ uses, and the checks."""
import ipaddress
import json
import os
import re
import sys

import yaml


class Unsupported(Exception):
    pass


# ---------------------------------------------------------------- render

def load_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def read_kustomization(d):
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                return yaml.safe_load(f) or {}
    raise Unsupported(d + ": no kustomization file")


KNOWN = {"apiVersion", "kind", "resources", "components",
         "configMapGenerator", "generatorOptions", "patches"}


def generate_configmap(d, g, global_opts):
    opts = dict(global_opts or {})
    opts.update(g.get("options") or {})
    extra = set(g) - {"name", "namespace", "files", "literals", "options",
                      "behavior"}
    if extra:
        raise Unsupported("configMapGenerator: " + ", ".join(sorted(extra)))
    if g.get("behavior", "create") != "create":
        raise Unsupported("configMapGenerator behavior " + g["behavior"])
    if not opts.get("disableNameSuffixHash"):
        raise Unsupported("configMapGenerator without disableNameSuffixHash"
                          " (the name hash is not reproduced here)")
    data = {}
    for spec in g.get("files") or []:
        key, _, path = spec.rpartition("=")
        key = key or os.path.basename(path)
        with open(os.path.join(d, path), encoding="utf-8") as f:
            data[key] = f.read()
    for spec in g.get("literals") or []:
        key, _, value = spec.partition("=")
        data[key] = value
    meta = {"name": g["name"]}
    if g.get("namespace"):
        meta["namespace"] = g["namespace"]
    for field in ("labels", "annotations"):
        if opts.get(field):
            meta[field] = dict(opts[field])
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "data": data}


def merge(dst, patch, where):
    """Strategic merge limited to maps: lists and $patch are refused."""
    for k, v in patch.items():
        if k.startswith("$"):
            raise Unsupported(where + ": directive " + k)
        if isinstance(v, list):
            raise Unsupported(where + ": list in a patch (" + k + ")")
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v, where)
        elif v is None:
            dst.pop(k, None)
        else:
            dst[k] = v


def same_object(obj, patch):
    om, pm = obj.get("metadata", {}), patch.get("metadata", {})
    return (obj.get("kind") == patch.get("kind")
            and om.get("name") == pm.get("name")
            and (pm.get("namespace") is None
                 or om.get("namespace") == pm.get("namespace")))


def json6902(doc, ops, where):
    """The JSON Patch ops add and replace (a list's "-" appends)."""
    for op in ops:
        if op.get("op") not in ("add", "replace") or "value" not in op:
            raise Unsupported(where + ": JSON patch op " + str(op.get("op")))
        keys = [k.replace("~1", "/").replace("~0", "~")
                for k in op["path"].lstrip("/").split("/")]
        cur = doc
        for k in keys[:-1]:
            cur = cur[int(k)] if isinstance(cur, list) else cur[k]
        last = keys[-1]
        if isinstance(cur, dict):
            cur[last] = op["value"]
        elif last == "-" and op["op"] == "add":
            cur.append(op["value"])
        elif op["op"] == "add":
            cur.insert(int(last), op["value"])
        else:
            cur[int(last)] = op["value"]


def targeted(objs, p):
    """A patch with a target: JSON 6902 ops on the one object it names."""
    t = p["target"]
    if set(t) - {"group", "version", "kind", "name"}:
        raise Unsupported("patches: target " + ", ".join(sorted(t)))
    api = "/".join(x for x in (t.get("group"), t.get("version")) if x)
    hits = [o for o in objs if o.get("kind") == t.get("kind")
            and o["metadata"].get("name") == t.get("name")
            and (not api or o.get("apiVersion", "").startswith(api))]
    if len(hits) != 1:
        raise Unsupported("patch target %s/%s matches %d objects" % (
            t.get("kind"), t.get("name"), len(hits)))
    ops = yaml.safe_load(p["patch"])
    if not isinstance(ops, list):
        raise Unsupported("patches: a target's patch that is not JSON 6902")
    json6902(hits[0], ops, "patch of %s/%s" % (t["kind"], t["name"]))


def apply_patches(d, objs, patches):
    for p in patches or []:
        if "target" in p and set(p) == {"target", "patch"}:
            targeted(objs, p)
            continue
        if set(p) - {"path", "patch"}:
            raise Unsupported("patches: only path/patch are handled")
        if "path" in p:
            docs = load_docs(os.path.join(d, p["path"]))
        else:
            docs = [x for x in yaml.safe_load_all(p["patch"]) if x]
        for doc in docs:
            if not isinstance(doc, dict):
                raise Unsupported("patches: JSON 6902 patches")
            hits = [o for o in objs if same_object(o, doc)]
            if len(hits) != 1:
                raise Unsupported("patch for %s/%s matches %d objects" % (
                    doc.get("kind"), doc.get("metadata", {}).get("name"),
                    len(hits)))
            body = {k: v for k, v in doc.items()
                    if k not in ("apiVersion", "kind")}
            body["metadata"] = {k: v for k, v in doc["metadata"].items()
                                if k not in ("name", "namespace")}
            merge(hits[0], body, p.get("path", "inline patch"))


def build(d, objs=None, component=False):
    k = read_kustomization(d)
    extra = set(k) - KNOWN
    if extra:
        raise Unsupported(d + ": " + ", ".join(sorted(extra)))
    want = "Component" if component else "Kustomization"
    if k.get("kind", "Kustomization") != want:
        raise Unsupported(d + ": kind " + str(k.get("kind")))
    objs = [] if objs is None else objs
    for r in k.get("resources") or []:
        p = os.path.join(d, r)
        if os.path.isdir(p):
            objs.extend(build(p))
        else:
            objs.extend(load_docs(p))
    # kustomize's order: resources, then components, then this
    # kustomization's generators, then its transformers (patches).
    for c in k.get("components") or []:
        build(os.path.join(d, c), objs, component=True)
    for g in k.get("configMapGenerator") or []:
        objs.append(generate_configmap(d, g, k.get("generatorOptions")))
    apply_patches(d, objs, k.get("patches"))
    return objs


def cmd_render(d):
    try:
        objs = build(d)
    except Unsupported as e:
        sys.stderr.write("fallback renderer: not supported: %s\n" % e)
        return 2
    yaml.safe_dump_all(objs, sys.stdout, sort_keys=True)
    return 0


def keyed(path):
    out = {}
    for o in load_docs(path):
        m = o.get("metadata", {})
        out[(o.get("apiVersion"), o.get("kind"), m.get("namespace", ""),
             m.get("name"))] = o
    return out


def cmd_compare(a, b):
    ka, kb = keyed(a), keyed(b)
    for key in sorted(set(ka) | set(kb), key=str):
        if ka.get(key) != kb.get(key):
            print("differs: %s" % "/".join(str(x) for x in key))
            return 1
    return 0


# ---------------------------------------------------------------- CEL
# Enough of CEL to evaluate the webhook's match conditions against sample
# objects: string literals, field paths, has(), `in` on maps, !, &&, ||,
# == and != on strings, parentheses.  Errors follow CEL: `false && error`
# is false, `true || error` is true; any other error is an error, which the
# API server hands to failurePolicy.

class CelError(Exception):
    pass


TOKEN = re.compile(r"\s*(?:(&&|\|\||==|!=|[()!.])|('(?:[^'\\]|\\.)*'|"
                   r'"(?:[^"\\]|\\.)*")|([A-Za-z_][A-Za-z0-9_]*))')


def cel_tokens(src):
    pos, out = 0, []
    src = src.strip()
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m:
            raise Unsupported("CEL at %r" % src[pos:pos + 20])
        pos = m.end()
        if m.group(2):
            out.append(("str", m.group(2)[1:-1]))
        elif m.group(3):
            out.append(("id", m.group(3)))
        else:
            out.append(("op", m.group(1)))
    return out


class Cel:
    def __init__(self, src):
        self.t = cel_tokens(src)
        self.i = 0
        self.tree = self.disj()
        if self.i != len(self.t):
            raise Unsupported("CEL: trailing %r" % (self.t[self.i:],))

    def peek(self, v=None):
        if self.i < len(self.t) and (v is None or self.t[self.i][1] == v):
            return self.t[self.i]
        return None

    def take(self, v):
        if not self.peek(v):
            raise Unsupported("CEL: expected %r" % v)
        self.i += 1

    def disj(self):
        n = self.conj()
        while self.peek("||"):
            self.i += 1
            n = ("or", n, self.conj())
        return n

    def conj(self):
        n = self.rel()
        while self.peek("&&"):
            self.i += 1
            n = ("and", n, self.rel())
        return n

    def rel(self):
        n = self.unary()
        for op in ("in", "==", "!="):
            if self.peek(op) and (op != "in" or self.t[self.i][0] == "id"):
                self.i += 1
                return (op, n, self.unary())
        return n

    def unary(self):
        if self.peek("!"):
            self.i += 1
            return ("not", self.unary())
        if self.peek("("):
            self.i += 1
            n = self.disj()
            self.take(")")
            return n
        tok = self.peek()
        if tok is None:
            raise Unsupported("CEL: unexpected end")
        self.i += 1
        if tok[0] == "str":
            return ("lit", tok[1])
        if tok[1] == "has":
            self.take("(")
            path = self.path()
            self.take(")")
            return ("has", path)
        self.i -= 1
        return ("path", self.path())

    def path(self):
        tok = self.peek()
        if tok is None or tok[0] != "id":
            raise Unsupported("CEL: expected a name")
        self.i += 1
        names = [tok[1]]
        while self.peek("."):
            self.i += 1
            tok = self.peek()
            if tok is None or tok[0] != "id":
                raise Unsupported("CEL: expected a field name")
            self.i += 1
            names.append(tok[1])
        return names

    def eval(self, env):
        return self.ev(self.tree, env)

    def lookup(self, names, env):
        if names[0] not in env:
            raise CelError("undeclared " + names[0])
        v = env[names[0]]
        for n in names[1:]:
            if not isinstance(v, dict) or n not in v:
                raise CelError("no such key: " + n)
            v = v[n]
        return v

    def ev(self, n, env):
        op = n[0]
        if op == "lit":
            return n[1]
        if op == "path":
            return self.lookup(n[1], env)
        if op == "has":
            parent = self.lookup(n[1][:-1], env)
            if not isinstance(parent, dict):
                raise CelError("has() on a non-map")
            return n[1][-1] in parent
        if op == "not":
            v = self.ev(n[1], env)
            if not isinstance(v, bool):
                raise CelError("! on a non-bool")
            return not v
        if op in ("and", "or"):
            vals = []
            for side in n[1:]:
                try:
                    v = self.ev(side, env)
                    if not isinstance(v, bool):
                        raise CelError(op + " on a non-bool")
                    vals.append(v)
                except CelError as e:
                    vals.append(e)
            short = op == "or"
            if short in vals:
                return short
            for v in vals:
                if isinstance(v, CelError):
                    raise v
            return not short
        a, b = self.ev(n[1], env), self.ev(n[2], env)
        if op == "in":
            if not isinstance(b, (dict, list)):
                raise CelError("in on a non-container")
            return a in b
        if op == "==":
            return a == b
        return a != b


# ---------------------------------------------------------------- checks

DAEMON_FLAGS = {"-d", "-n", "-v"}
DAEMON_OPTS = {"-f", "--catalog", "-m", "-l", "--listen", "--threads",
               "--max-body", "--tls-cert", "--tls-key", "--model-host",
               "--log-format"}
ANNOTATIONS = ("memfloor.dev/min-memory", "memfloor.dev/spec")

results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    line = ("ok - " if ok else "FAIL - ") + name
    if not ok and detail:
        line += ": " + str(detail)
    print(line)


def selector_matches(sel, labels):
    if sel is None:
        return True
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def parse_args(args, takes=None):
    """memfloord's argv after the program name -> ({flag: value}, errors);
    takes: the flags with a value that are allowed (DAEMON_OPTS)."""
    takes = DAEMON_OPTS if takes is None else takes
    opts, errs, i = {}, [], 0
    while i < len(args):
        a = args[i]
        if a in DAEMON_FLAGS:
            opts[a] = True
        elif a in takes and i + 1 < len(args):
            opts[a] = args[i + 1]
            i += 1
        else:
            errs.append(a)
        i += 1
    return opts, errs


def port_number(container, port):
    if isinstance(port, int):
        return port
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return p.get("containerPort")
    return None


def mount_for(container, path):
    best = None
    for m in container.get("volumeMounts") or []:
        mp = m["mountPath"].rstrip("/")
        if path.startswith(mp + "/") and (best is None or
                                          len(mp) > len(best["mountPath"])):
            best = m
    return best


def check_deployment(objs, dep):
    name = "Deployment memfloor"
    spec = dep["spec"]
    tmpl = spec["template"]
    pod = tmpl["spec"]
    plabels = tmpl["metadata"].get("labels") or {}
    check(name + ": 2 replicas", spec.get("replicas") == 2,
          spec.get("replicas"))
    check(name + ": selector matches its pod labels",
          selector_matches(spec.get("selector"), plabels))
    conts = pod.get("containers") or []
    check(name + ": one container", len(conts) == 1, len(conts))
    c = conts[0]
    argv = (c.get("command") or [])[1:] + (c.get("args") or [])
    opts, errs = parse_args(argv)
    check(name + ": every argument is a memfloord flag", not errs, errs)
    want = {"-d": True, "-l": ":8443", "--tls-cert": "/tls/tls.crt",
            "--tls-key": "/tls/tls.key", "-f": "/etc/memfloor/gpus.yaml",
            "-m": "/usr/share/memfloor/models", "--log-format": "json"}
    for k, v in want.items():
        check("%s: argument %s %s" % (name, k, "" if v is True else v),
              opts.get(k) == v, opts.get(k))
    check(name + ": runs /usr/sbin/memfloord (make install PREFIX=/usr)",
          (c.get("command") or [""])[0] == "/usr/sbin/memfloord",
          c.get("command"))
    listen_port = int(opts.get("-l", ":0").rsplit(":", 1)[1])
    cports = [p.get("containerPort") for p in c.get("ports") or []]
    check(name + ": container port is the listen port 8443",
          listen_port == 8443 and 8443 in cports, cports)

    for probe, path in (("readinessProbe", "/readyz"),
                        ("livenessProbe", "/healthz")):
        p = c.get(probe) or {}
        g = p.get("httpGet") or {}
        check("%s: %s is HTTPS GET %s on 8443" % (name, probe, path),
              g.get("scheme") == "HTTPS" and g.get("path") == path
              and port_number(c, g.get("port")) == 8443, g)

    psc = pod.get("securityContext") or {}
    csc = c.get("securityContext") or {}
    check(name + ": runAsNonRoot", psc.get("runAsNonRoot") is True
          or csc.get("runAsNonRoot") is True)
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    check(name + ": numeric non-root user", isinstance(uid, int) and uid > 0,
          uid)
    check(name + ": readOnlyRootFilesystem",
          csc.get("readOnlyRootFilesystem") is True)
    check(name + ": allowPrivilegeEscalation false",
          csc.get("allowPrivilegeEscalation") is False)
    check(name + ": drops ALL capabilities",
          "ALL" in ((csc.get("capabilities") or {}).get("drop") or [])
          and not (csc.get("capabilities") or {}).get("add"))
    sec = (csc.get("seccompProfile") or psc.get("seccompProfile") or {})
    check(name + ": seccomp RuntimeDefault",
          sec.get("type") == "RuntimeDefault", sec)
    check(name + ": no service account token",
          pod.get("automountServiceAccountToken") is False)

    res = c.get("resources") or {}
    check(name + ": cpu and memory requests and limits",
          all(k in (res.get(s) or {}) for s in ("requests", "limits")
              for k in ("cpu", "memory")), res)

    spread = [t for t in pod.get("topologySpreadConstraints") or []
              if t.get("topologyKey") == "kubernetes.io/hostname"
              and selector_matches(t.get("labelSelector"), plabels)]
    anti = ((pod.get("affinity") or {}).get("podAntiAffinity") or {})
    anti_terms = (anti.get("requiredDuringSchedulingIgnoredDuringExecution")
                  or []) + [t.get("podAffinityTerm") or {} for t in anti.get(
                      "preferredDuringSchedulingIgnoredDuringExecution")
                      or []]
    anti_ok = [t for t in anti_terms
               if t.get("topologyKey") == "kubernetes.io/hostname"
               and selector_matches(t.get("labelSelector"), plabels)]
    check(name + ": spread over nodes (topology spread or anti-affinity "
          "on its own pods)", spread or anti_ok)

    vols = {v["name"]: v for v in pod.get("volumes") or []}
    cat = opts.get("-f", "")
    m = mount_for(c, cat)
    vol = vols.get(m["name"]) if m else None
    cm_name = ((vol or {}).get("configMap") or {}).get("name")
    check(name + ": catalogue from a ConfigMap volume", cm_name is not None,
          vol)
    check(name + ": catalogue mounted as a directory (no subPath)",
          m is not None and "subPath" not in m and "subPathExpr" not in m
          and m["mountPath"].rstrip("/") == os.path.dirname(cat), m)
    ns = dep["metadata"].get("namespace")
    cms = [o for o in objs if o["kind"] == "ConfigMap"
           and o["metadata"].get("name") == cm_name
           and o["metadata"].get("namespace") == ns]
    check(name + ": its ConfigMap %s exists, unhashed name, key %s" % (
        cm_name, os.path.basename(cat)),
        len(cms) == 1 and os.path.basename(cat) in (cms[0].get("data") or {}))

    tm = mount_for(c, opts.get("--tls-cert", ""))
    km = mount_for(c, opts.get("--tls-key", ""))
    tvol = vols.get(tm["name"]) if tm else None
    secret = ((tvol or {}).get("secret") or {}).get("secretName")
    check(name + ": TLS cert and key from one Secret volume",
          secret is not None and tm is km, tvol)
    certs = [o for o in objs if o["kind"] == "Certificate"
             and o["metadata"].get("namespace") == ns
             and o["spec"].get("secretName") == secret]
    check(name + ": a cert-manager Certificate writes Secret %s" % secret,
          len(certs) == 1)
    return plabels, cms[0] if cms else None


def check_service(svc, dep, plabels):
    name = "Service memfloor"
    c = dep["spec"]["template"]["spec"]["containers"][0]
    check(name + ": selects the Deployment's pods",
          selector_matches({"matchLabels": svc["spec"].get("selector")},
                           plabels) and svc["spec"].get("selector"))
    ports = svc["spec"].get("ports") or []
    ok = [p for p in ports if p.get("port") == 443
          and port_number(c, p.get("targetPort")) == 8443]
    check(name + ": port 443 -> 8443", len(ok) == 1, ports)


def check_pdb(pdb, dep, plabels):
    name = "PodDisruptionBudget memfloor"
    spec = pdb["spec"]
    check(name + ": minAvailable 1", spec.get("minAvailable") == 1,
          spec.get("minAvailable"))
    check(name + ": selects the Deployment's pods",
          selector_matches(spec.get("selector"), plabels)
          and spec.get("selector"))
    check(name + ": leaves room to drain (minAvailable < replicas)",
          spec.get("minAvailable", 0) < dep["spec"].get("replicas", 1))


def check_priority(pc, dep):
    name = "PriorityClass memfloor-webhook"
    pod = dep["spec"]["template"]["spec"]
    check("Deployment memfloor: priorityClassName memfloor-webhook",
          pod.get("priorityClassName") == "memfloor-webhook",
          pod.get("priorityClassName"))
    if pc is None:
        return
    v = pc.get("value")
    check(name + ": above workloads, below the system classes",
          isinstance(v, int) and 0 < v < 1000000000, v)
    check(name + ": not the cluster's default", not pc.get("globalDefault"))


def check_network_policy(d, dep, plabels):
    name = "NetworkPolicy memfloor (component network-policy)"
    objs = build(d, [], component=True)
    nps = [o for o in objs if o.get("kind") == "NetworkPolicy"]
    check(name + ": present", len(nps) == 1, len(nps))
    if len(nps) != 1:
        return
    spec = nps[0]["spec"]
    c = dep["spec"]["template"]["spec"]["containers"][0]
    check(name + ": namespace memfloor",
          nps[0]["metadata"].get("namespace") == "memfloor")
    check(name + ": selects the Deployment's pods",
          selector_matches(spec.get("podSelector"), plabels)
          and spec.get("podSelector"))
    check(name + ": restricts ingress", spec.get("policyTypes") == ["Ingress"],
          spec.get("policyTypes"))
    rules = spec.get("ingress") or []
    ports = [port_number(c, p.get("port")) for r in rules
             for p in r.get("ports") or []]
    check(name + ": every rule is for port 8443 only",
          rules and all(r.get("ports") for r in rules)
          and set(ports) == {8443}, ports)
    froms = [f for r in rules for f in r.get("from") or []]
    check(name + ": every rule names its sources", rules and all(
        r.get("from") for r in rules), rules)
    check(name + ": the API server by address (ipBlock)",
          any("ipBlock" in f for f in froms))
    scrapers = [f for f in froms if "namespaceSelector" in f]
    check(name + ": the metrics scraper by namespace and pod labels",
          len(scrapers) == 1 and scrapers[0].get("podSelector"), scrapers)


def check_store_component(d, dep):
    """deploy/postgres on a copy of the Deployment: --store from the
    Secret through the environment, the tokens from the Secret too."""
    import copy
    name = "Deployment memfloor (component postgres)"
    try:
        objs = build(d, [copy.deepcopy(dep)], component=True)
    except Unsupported as e:
        check(name + ": renders", False, e)
        return
    base = dep["spec"]["template"]["spec"]["containers"][0]
    pod = objs[0]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    args = c.get("args") or []
    env = {e["name"]: e for e in c.get("env") or []}
    ref = ((env.get("MEMFLOOR_STORE") or {}).get("valueFrom") or
           {}).get("secretKeyRef")
    check(name + ": MEMFLOOR_STORE from Secret memfloor-store, key url",
          ref == {"name": "memfloor-store", "key": "url"}, ref)
    check(name + ": the base's arguments kept, in order",
          args[:len(base.get("args") or [])] == (base.get("args") or []),
          args)
    opts, errs = parse_args(args, DAEMON_OPTS | {"--store",
                                                 "--observe-token-file"})
    check(name + ": every argument is a memfloord flag", not errs, errs)
    check(name + ": --store $(MEMFLOOR_STORE), expanded by the kubelet",
          opts.get("--store") == "$(MEMFLOOR_STORE)", opts.get("--store"))
    tok = opts.get("--observe-token-file", "")
    m = mount_for(c, tok)
    vol = [v for v in pod.get("volumes") or []
           if m and v.get("name") == m.get("name")]
    sec = (vol[0].get("secret") or {}) if vol else {}
    items = {i.get("path"): i.get("key") for i in sec.get("items") or []}
    check(name + ": --observe-token-file is key observe-token of the "
          "Secret, mounted read-only",
          m and m.get("readOnly") and sec.get("secretName") == "memfloor-store"
          and items.get(tok[len(m["mountPath"].rstrip("/")) + 1:]) ==
          "observe-token", (tok, m, sec))
    text = yaml.safe_dump_all(objs)
    check(name + ": no database URL in the manifests",
          "postgres://" not in text and "postgresql://" not in text)


def check_prometheus_component(d, dep):
    """deploy/prometheus on a copy of the Deployment: the base's arguments
    kept, --prometheus an http URL of a Service, every argument a flag of
    memfloord's, dcgm-exporter's settings named where they are set."""
    import copy
    name = "Deployment memfloor (component prometheus)"
    try:
        objs = build(d, [copy.deepcopy(dep)], component=True)
    except Unsupported as e:
        check(name + ": renders", False, e)
        return
    base = dep["spec"]["template"]["spec"]["containers"][0]
    args = objs[0]["spec"]["template"]["spec"]["containers"][0].get(
        "args") or []
    check(name + ": the base's arguments kept, in order",
          args[:len(base.get("args") or [])] == (base.get("args") or []),
          args)
    opts, errs = parse_args(args, DAEMON_OPTS | {"--prometheus"})
    check(name + ": every argument is a memfloord flag", not errs, errs)
    url = opts.get("--prometheus", "")
    check(name + ": --prometheus an http URL of a Service",
          re.match(r"^https?://[a-z0-9.-]+\.svc(:[0-9]+)?$", url), url)
    with open(os.path.join(d, "kustomization.yaml"), encoding="utf-8") as f:
        text = f.read()
    for s in ("DCGM_EXPORTER_KUBERNETES",
              "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS",
              "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
              "memfloor\\\\.dev/fingerprint"):
        check(name + ": says dcgm-exporter's " + s, s in text)


def sample_objects():
    """(description, object, should the webhook be called)."""
    out = []
    for kind in ("Job", "Pod"):
        out += [
            (kind + " without annotations", {"metadata": {"name": "x"}},
             False),
            (kind + " with empty annotations",
             {"metadata": {"name": "x", "annotations": {}}}, False),
            (kind + " with other annotations",
             {"metadata": {"annotations": {"team": "a"}}}, False),
        ]
        for a in ANNOTATIONS:
            out.append(("%s with %s" % (kind, a),
                        {"metadata": {"annotations": {a: "88Gi"}}}, True))
    return out


def check_webhook(objs, whc, svc, dep):
    name = "MutatingWebhookConfiguration memfloor"
    hooks = whc.get("webhooks") or []
    check(name + ": has webhooks", hooks)
    for h in hooks:
        n = "%s: %s" % (name, h.get("name"))
        check(n + ": admissionReviewVersions [v1]",
              h.get("admissionReviewVersions") == ["v1"],
              h.get("admissionReviewVersions"))
        check(n + ": sideEffects None", h.get("sideEffects") == "None",
              h.get("sideEffects"))
        t = h.get("timeoutSeconds")
        check(n + ": timeoutSeconds set and under 10",
              isinstance(t, int) and 1 <= t < 10, t)
        check(n + ": failurePolicy set",
              h.get("failurePolicy") in ("Fail", "Ignore"),
              h.get("failurePolicy"))
        check(n + ": reinvocationPolicy Never",
              h.get("reinvocationPolicy") == "Never",
              h.get("reinvocationPolicy"))

        def covers(group, resource):
            for r in h.get("rules") or []:
                if (group in r.get("apiGroups", []) or "*" in
                        r.get("apiGroups", [])) \
                        and ("v1" in r.get("apiVersions", [])
                             or "*" in r.get("apiVersions", [])) \
                        and resource in r.get("resources", []) \
                        and ("CREATE" in r.get("operations", [])
                             or "*" in r.get("operations", [])):
                    return True
            return False

        check(n + ": rules cover CREATE of batch/v1 jobs",
              covers("batch", "jobs"))
        check(n + ": rules cover CREATE of v1 pods", covers("", "pods"))
        check(n + ": rules ask for nothing but CREATE",
              all(r.get("operations") == ["CREATE"]
                  for r in h.get("rules") or []))

        cc = (h.get("clientConfig") or {}).get("service") or {}
        svc_ports = [p.get("port") for p in svc["spec"].get("ports") or []]
        check(n + ": calls Service memfloor/memfloor on its port",
              cc.get("name") == svc["metadata"]["name"]
              and cc.get("namespace") == svc["metadata"]["namespace"]
              and cc.get("port", 443) in svc_ports, cc)
        check(n + ": path /v1/admission-review",
              cc.get("path") == "/v1/admission-review", cc.get("path"))

        nsel = h.get("namespaceSelector")
        excluded = [x for x in ("kube-system", "memfloor")
                    if not selector_matches(
                        nsel, {"kubernetes.io/metadata.name": x})]
        check(n + ": namespaceSelector leaves out kube-system and memfloor",
              excluded == ["kube-system", "memfloor"], nsel)
        check(n + ": namespaceSelector keeps other namespaces",
              selector_matches(nsel,
                               {"kubernetes.io/metadata.name": "default"}))

        conds = h.get("matchConditions") or []
        check(n + ": matchConditions or objectSelector present",
              conds or h.get("objectSelector"))
        if not conds:
            continue
        try:
            progs = [(c["name"], Cel(c["expression"])) for c in conds]
        except Unsupported as e:
            check(n + ": matchConditions parse", False,
                  "%s (tests/integration/deploy.sh evaluates a CEL subset)" % e)
            continue
        for desc, obj, want in sample_objects():
            got, err = True, None
            for cname, prog in progs:
                try:
                    if not prog.eval({"object": obj, "oldObject": None}):
                        got = False
                except CelError as e:
                    err = "%s: %s" % (cname, e)
            verdict = "sent" if want else "not sent"
            check("%s: matchConditions: %s is %s" % (n, desc, verdict),
                  err is None and got == want,
                  err or ("sent" if got else "not sent"))

    ann = (whc["metadata"].get("annotations") or {}).get(
        "cert-manager.io/inject-ca-from", "")
    ns, _, cname = ann.partition("/")
    certs = [o for o in objs if o["kind"] == "Certificate"
             and o["metadata"].get("namespace") == ns
             and o["metadata"]["name"] == cname]
    check(name + ": cert-manager.io/inject-ca-from names a Certificate",
          len(certs) == 1, ann or "no annotation")
    if len(certs) != 1:
        return
    cert = certs[0]
    host = "%s.%s.svc" % (svc["metadata"]["name"],
                          svc["metadata"]["namespace"])
    dns = cert["spec"].get("dnsNames") or []
    check("Certificate %s: covers %s and %s.cluster.local" % (
        cname, host, host), host in dns and host + ".cluster.local" in dns,
        dns)
    check("Certificate %s: is not a CA" % cname,
          not cert["spec"].get("isCA"))
    # Follow issuers up to a self-signed root.
    seen, ref, chain_ok = set(), cert["spec"].get("issuerRef") or {}, False
    while ref and ref.get("name") not in seen:
        seen.add(ref.get("name"))
        iss = [o for o in objs if o["kind"] == ref.get("kind", "Issuer")
               and o["metadata"]["name"] == ref.get("name")
               and o["metadata"].get("namespace") == ns]
        if len(iss) != 1:
            break
        ispec = iss[0]["spec"]
        if "selfSigned" in ispec:
            chain_ok = True
            break
        secret = (ispec.get("ca") or {}).get("secretName")
        ca = [o for o in objs if o["kind"] == "Certificate"
              and o["metadata"].get("namespace") == ns
              and o["spec"].get("secretName") == secret
              and o["spec"].get("isCA")]
        if len(ca) != 1:
            break
        ref = ca[0]["spec"].get("issuerRef") or {}
    check("Certificate %s: issued by a chain of Issuers in %s that ends "
          "at a self-signed one" % (cname, ns), chain_ok)


def cmd_check(rendered, top):
    objs = load_docs(rendered)

    def one(kind, name):
        hits = [o for o in objs if o.get("kind") == kind
                and o["metadata"].get("name") == name]
        check("%s %s present" % (kind, name), len(hits) == 1,
              "%d found" % len(hits))
        return hits[0] if len(hits) == 1 else None

    nsobj = one("Namespace", "memfloor")
    dep = one("Deployment", "memfloor")
    svc = one("Service", "memfloor")
    pdb = one("PodDisruptionBudget", "memfloor")
    whc = one("MutatingWebhookConfiguration", "memfloor")
    # Under this exact name: no content hash (disableNameSuffixHash).
    one("ConfigMap", "memfloor-catalog")
    if nsobj:
        check("Namespace memfloor: enforces the restricted Pod Security "
              "Standard", (nsobj["metadata"].get("labels") or {}).get(
                  "pod-security.kubernetes.io/enforce") == "restricted")
    cluster_scoped = {"Namespace", "MutatingWebhookConfiguration",
                      "PriorityClass"}
    stray = ["%s/%s" % (o["kind"], o["metadata"]["name"]) for o in objs
             if o["kind"] not in cluster_scoped
             and o["metadata"].get("namespace") != "memfloor"]
    check("every namespaced object is in namespace memfloor", not stray,
          stray)
    if not (dep and svc and pdb and whc):
        return
    plabels, cm = check_deployment(objs, dep)
    check_service(svc, dep, plabels)
    check_pdb(pdb, dep, plabels)
    check_priority(one("PriorityClass", "memfloor-webhook"), dep)
    check_network_policy(os.path.join(top, "deploy", "network-policy"),
                         dep, plabels)
    check_store_component(os.path.join(top, "deploy", "postgres"), dep)
    check_prometheus_component(os.path.join(top, "deploy", "prometheus"),
                               dep)
    check_webhook(objs, whc, svc, dep)
    if cm is not None:
        with open(os.path.join(top, "deploy", "gpus.yaml"),
                  encoding="utf-8") as f:
            src = f.read()
        data = cm["data"].get("gpus.yaml")
        check("ConfigMap memfloor-catalog: holds deploy/gpus.yaml as it is",
              data == src)
        try:
            doc = yaml.safe_load(data or "")
            good = doc.get("kind") == "GpuCatalog" and doc.get("gpus")
        except (yaml.YAMLError, AttributeError) as e:
            good, doc = False, e
        check("ConfigMap memfloor-catalog: a GpuCatalog with GPUs", good)


# ---------------------------------------------------------------- helpers

def kubelet_write(etc, files):
    """Update a directory the way the kubelet updates a ConfigMap volume:
    the files go into a new hidden directory, the ..data symlink is
    renamed onto it in one step, and each key is a symlink through ..data.
    """
    import tempfile
    old = None
    data = os.path.join(etc, "..data")
    if os.path.islink(data):
        old = os.path.join(etc, os.readlink(data))
    ts = tempfile.mkdtemp(prefix="..", dir=etc)
    for k, v in files.items():
        with open(os.path.join(ts, k), "w", encoding="utf-8") as f:
            f.write(v)
    os.chmod(ts, 0o755)
    tmp = os.path.join(etc, "..data_tmp")
    os.symlink(os.path.basename(ts), tmp)
    os.replace(tmp, data)
    for k in files:
        if not os.path.lexists(os.path.join(etc, k)):
            os.symlink(os.path.join("..data", k), os.path.join(etc, k))
    if old:
        for name in os.listdir(old):
            os.unlink(os.path.join(old, name))
        os.rmdir(old)


def cmd_args(rendered, etc, tls, models, listen=""):
    """Print the Deployment's memfloord argv, one per line, with its paths
    moved to local ones (and -l set to listen, if given), and lay out its
    ConfigMap in etc as the kubelet would."""
    for o in load_docs(rendered):
        if o["kind"] == "Deployment":
            c = o["spec"]["template"]["spec"]["containers"][0]
            argv = (c.get("command") or [])[1:] + (c.get("args") or [])
            moves = (("/etc/memfloor/", etc + "/"), ("/tls/", tls + "/"),
                     ("/usr/share/memfloor/models", models))
            prev = None
            for a in argv:
                for old, new in moves:
                    if a.startswith(old):
                        a = new + a[len(old):]
                if listen and prev in ("-l", "--listen"):
                    a = listen
                print(a)
                prev = a
        if o["kind"] == "ConfigMap":
            kubelet_write(etc, dict(o.get("data") or {}))
    return 0


def cmd_swap(etc, key, field, value):
    """Change one top-level field (or gpus[0].FIELD, written gpu.FIELD) of
    the catalogue in etc/key, and publish it as the kubelet would."""
    with open(os.path.join(etc, key), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if field.startswith("gpu."):
        doc["gpus"][0][field[4:]] = yaml.safe_load(value)
    else:
        doc[field] = yaml.safe_load(value)
    kubelet_write(etc, {key: yaml.safe_dump(doc, sort_keys=False)})
    return 0


def unit_lines(path):
    """systemd unit -> [(section, key, value)], continuation lines joined."""
    out, section, buf = [], None, ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if buf:
                line = buf + " " + line.strip()
                buf = ""
            if line.endswith("\\"):
                buf = line[:-1].rstrip()
                continue
            s = line.strip()
            if not s or s[0] in "#;":
                continue
            if s.startswith("["):
                section = s.strip("[]")
                continue
            k, _, v = s.partition("=")
            out.append((section, k.strip(), v.strip()))
    return out


def cmd_unit(path):
    kv = unit_lines(path)

    def get(key):
        return [v for s, k, v in kv if s == "Service" and k == key]

    name = "memfloord.service"
    check(name + ": Type=simple", get("Type") == ["simple"], get("Type"))
    start = (get("ExecStart") or [""])[-1].split()
    check(name + ": ExecStart runs /usr/local/sbin/memfloord -d",
          start[:1] == ["/usr/local/sbin/memfloord"] and "-d" in start,
          start)
    opts, errs = parse_args(start[1:])
    check(name + ": every argument is a memfloord flag", not errs, errs)
    check(name + ": catalogue and models from make install's /usr/local",
          opts.get("-f", "").startswith("/usr/local/share/memfloor/")
          and opts.get("-m", "").startswith("/usr/local/share/memfloor/"),
          opts)
    reload = " ".join(get("ExecReload"))
    check(name + ": ExecReload sends SIGHUP to $MAINPID",
          re.search(r"kill -HUP \$MAINPID$", reload), reload)
    for key, want in (("DynamicUser", "yes"), ("ProtectSystem", "strict"),
                      ("NoNewPrivileges", "yes"), ("PrivateTmp", "yes"),
                      ("ProtectHome", "yes"), ("PrivateDevices", "yes"),
                      ("CapabilityBoundingSet", "")):
        check("%s: %s=%s" % (name, key, want), get(key) == [want], get(key))
    check(name + ": [Install] WantedBy=multi-user.target",
          ("Install", "WantedBy", "multi-user.target") in kv)
    return 0


def cmd_dockerfile(path):
    name = "Dockerfile"
    stages, cur = [], None
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        word, _, rest = s.partition(" ")
        if word.upper() == "FROM":
            cur = {"from": rest.split(), "lines": []}
            stages.append(cur)
        elif cur is not None:
            cur["lines"].append((word.upper(), rest.strip()))
    check(name + ": two stages, both debian:bookworm-slim",
          len(stages) == 2 and all(st["from"][0] == "debian:bookworm-slim"
                                   for st in stages),
          [st["from"] for st in stages])
    if len(stages) != 2:
        return 0
    build, run = stages

    def runs(st):
        return " ".join(r for w, r in st["lines"] if w == "RUN")

    def installed(st):
        pk = []
        for m in re.finditer(r"apt-get install ([^&;|]*)", runs(st)):
            pk += [w for w in m.group(1).split() if not w.startswith("-")]
        return pk

    dev = {"libmicrohttpd-dev", "libyaml-dev", "libjansson-dev",
           "libcurl4-openssl-dev", "libgnutls28-dev", "libsqlite3-dev",
           "libpq-dev"}
    check(name + ": build stage installs the -dev packages",
          dev <= set(installed(build)), installed(build))
    check(name + ": build stage runs make and make install PREFIX=/usr "
          "DESTDIR=/out",
          re.search(r"\bmake\b", runs(build)) and
          re.search(r"make install PREFIX=/usr DESTDIR=/out", runs(build)))
    rt = {"libmicrohttpd12", "libyaml-0-2", "libjansson4", "libcurl4",
          "libsqlite3-0", "libpq5", "ca-certificates"}
    check(name + ": runtime stage installs only the runtime libraries",
          set(installed(run)) == rt, installed(run))
    check(name + ": runtime stage copies /out from the build stage",
          any(w == "COPY" and r.split()[:2] == ["--from=build", "/out/"]
              for w, r in run["lines"]))
    users = [r for w, r in run["lines"] if w == "USER"]
    uid = users[-1].split(":")[0] if users else ""
    check(name + ": runs as a numeric non-root user",
          uid.isdigit() and int(uid) > 0, users)
    check(name + ": EXPOSE 8443",
          any(w == "EXPOSE" and "8443" in r.split()
              for w, r in run["lines"]))
    ep = [r for w, r in run["lines"] if w == "ENTRYPOINT"]
    try:
        ep = json.loads(ep[-1]) if ep else []
    except ValueError:
        ep = ep[-1].split()
    check(name + ": ENTRYPOINT memfloord -d",
          ep[:1] and ep[0].endswith("/memfloord") and "-d" in ep[1:], ep)
    print("#packages " + " ".join(sorted(set(installed(build))
                                         | set(installed(run)))))
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    rc = {"render": cmd_render, "compare": cmd_compare, "check": cmd_check,
          "args": cmd_args, "swap": cmd_swap, "unit": cmd_unit,
          "dockerfile": cmd_dockerfile}[cmd](*args)
    if cmd in ("check", "unit", "dockerfile"):
        return 0
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
PYEOF

# Run a Python check command; its "ok/FAIL" lines go to the log, a crash is
# a failure.
pycheck() {
	if "$py" "$tmp/mf_deploy.py" "$@" >"$tmp/py.out" 2>"$tmp/py.err"; then
		:
	else
		echo "FAIL - checker '$1' crashed: $(tail -n 1 "$tmp/py.err")" \
		    >>"$tmp/py.out"
	fi
	grep -v '^#' "$tmp/py.out" | tee -a "$log"
}

# --- deploy/gpus.yaml is the shipped catalogue -----------------------------
if [ -f "$top/catalog/gpus.yaml" ]; then
	if cmp -s "$top/catalog/gpus.yaml" "$deploy/gpus.yaml"; then
		pass "deploy/gpus.yaml is identical to catalog/gpus.yaml"
	else
		fail "deploy/gpus.yaml differs from catalog/gpus.yaml" \
		    "(cp catalog/gpus.yaml deploy/gpus.yaml)"
	fi
else
	skip "catalog/gpus.yaml does not exist yet: copy check not run"
fi

# --- render ----------------------------------------------------------------
kust=""
kust_name=""
if [ "${MF_RENDER:-}" = fallback ]; then
	echo "deploy: MF_RENDER=fallback: not looking for kustomize"
elif [ -n "${KUSTOMIZE:-}" ]; then
	kust="$KUSTOMIZE build"
	kust_name="$KUSTOMIZE $("$KUSTOMIZE" version 2>/dev/null | head -n 1)"
elif command -v kustomize >/dev/null 2>&1; then
	kust="kustomize build"
	kust_name="kustomize $(kustomize version 2>/dev/null | head -n 1)"
elif command -v kubectl >/dev/null 2>&1; then
	# Components need kustomize v3.7; kubectl has printed the version of
	# the kustomize inside it since 1.24, which ships v4.5.
	kv=$(kubectl version --client 2>/dev/null |
	    sed -n 's/^Kustomize Version: v\([0-9]*\).*/\1/p')
	if [ -n "$kv" ] && [ "$kv" -ge 4 ]; then
		kust="kubectl kustomize"
		kust_name="kubectl kustomize ($(kubectl version --client |
		    sed -n 's/^Kustomize Version: //p'))"
	else
		echo "deploy: kubectl's kustomize is too old for deploy/"
	fi
fi

rendered=$tmp/fallback.yaml
if "$py" "$tmp/mf_deploy.py" render "$deploy" >"$tmp/fallback.yaml" \
    2>"$tmp/fallback.err"; then
	fb_ok=1
else
	fb_ok=0
fi

if [ -n "$kust" ]; then
	echo "deploy: rendering with $kust_name"
	# shellcheck disable=SC2086 # $kust is a command and its verb
	if $kust "$deploy" >"$tmp/kustomize.yaml" 2>"$tmp/kustomize.err"; then
		pass "kustomize renders deploy/"
		rendered=$tmp/kustomize.yaml
		if [ -s "$tmp/kustomize.err" ]; then
			echo "deploy: kustomize said:"
			sed 's/^/    /' "$tmp/kustomize.err"
		fi
	else
		fail "kustomize renders deploy/: $(cat "$tmp/kustomize.err")"
		summary
		exit 1
	fi
	if [ "$fb_ok" = 1 ] &&
	    "$py" "$tmp/mf_deploy.py" compare "$tmp/kustomize.yaml" \
	    "$tmp/fallback.yaml" >"$tmp/cmp.out"; then
		pass "the Python renderer agrees with kustomize"
	else
		fail "the Python renderer agrees with kustomize:" \
		    "$(cat "$tmp/cmp.out" "$tmp/fallback.err" 2>/dev/null)"
	fi
else
	[ "${MF_RENDER:-}" = fallback ] || echo "deploy: no kustomize found"
	echo "deploy: rendering with the Python fallback renderer" \
	    "(the kustomize subset deploy/ uses)"
	if [ "$fb_ok" = 1 ]; then
		pass "the Python renderer renders deploy/"
	else
		fail "the Python renderer renders deploy/:" \
		    "$(cat "$tmp/fallback.err")"
		summary
		exit 1
	fi
fi

# --- the objects -----------------------------------------------------------
pycheck check "$rendered" "$top"

# --- the daemon, run as the Deployment runs it ------------------------------
# Its own arguments, with the paths moved here: the catalogue in a directory
# laid out and later updated as the kubelet does a ConfigMap volume, an
# ECDSA certificate for the Service's name in SEC 1 form as cert-manager
# writes it.  Skipped until memfloord is built.
memfloord=${MEMFLOORD:-$top/build/memfloord}
host=memfloor.memfloor.svc

# Deployment argv (one per line in $tmp/args) -> "$@"
load_args() {
	"$py" "$tmp/mf_deploy.py" args "$rendered" "$tmp/etc" "$tmp/tls" \
	    "$top/catalog/models" "$1" >"$tmp/args"
}

https() {
	curl -s --max-time 5 --cacert "$tmp/tls/tls.crt" \
	    --resolve "$host:$port:127.0.0.1" "$@" || true
}

status_of() {
	https -o /dev/null -w '%{http_code}' "https://$host:$port$1"
}

# wait_for TENTHS CMD...: run CMD every 0.2 s until it succeeds.
wait_for() {
	n=$1
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

is_ready() { [ "$(status_of /readyz)" = 200 ]; }
serves() { https "https://$host:$port/v1/catalog" | grep -q "$1"; }
gone() { ! kill -0 "$daemon" 2>/dev/null; }

if [ ! -x "$memfloord" ]; then
	skip "memfloord with the Deployment's arguments: no $memfloord"
elif ! command -v openssl >/dev/null 2>&1 ||
    ! command -v curl >/dev/null 2>&1; then
	skip "memfloord with the Deployment's arguments: needs openssl, curl"
else
	mkdir "$tmp/etc" "$tmp/tls"
	if ! { openssl ecparam -name prime256v1 -genkey -noout \
	    -out "$tmp/tls/tls.key" &&
	    openssl req -x509 -new -key "$tmp/tls/tls.key" -days 1 \
	    -subj "/CN=$host" -addext "subjectAltName=DNS:$host" \
	    -out "$tmp/tls/tls.crt"; } 2>"$tmp/openssl.err"; then
		fail "openssl could not make a test certificate:" \
		    "$(cat "$tmp/openssl.err")"
	else
		load_args ""
		set --
		while IFS= read -r a; do
			set -- "$@" "$a"
		done <"$tmp/args"
		if out=$("$memfloord" -n "$@" 2>&1) &&
		    echo "$out" | grep -q 'configuration OK'; then
			pass "memfloord -n accepts the Deployment's arguments" \
			    "and the ConfigMap's catalogue"
		else
			fail "memfloord -n $*: $out"
		fi

		port=$("$py" -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		load_args "127.0.0.1:$port"
		set --
		while IFS= read -r a; do
			set -- "$@" "$a"
		done <"$tmp/args"
		"$memfloord" "$@" >"$tmp/daemon.log" 2>&1 &
		daemon=$!
		if wait_for 50 is_ready; then
			pass "memfloord: /readyz 200 over TLS, certificate" \
			    "verified for $host"
		else
			fail "memfloord: /readyz not 200 within 10 s:" \
			    "$(tail -n 5 "$tmp/daemon.log")"
		fi
		code=$(status_of /healthz)
		if [ "$code" = 200 ]; then
			pass "memfloord: /healthz 200"
		else
			fail "memfloord: /healthz answered '$code'"
		fi

		"$py" "$tmp/mf_deploy.py" swap "$tmp/etc" gpus.yaml \
		    gpu.hourlyPrice 12.345
		if wait_for 75 serves 12.345; then
			pass "memfloord: reloads the catalogue when the" \
			    "ConfigMap volume's ..data symlink is swapped"
		else
			fail "memfloord: catalogue swapped in the volume was" \
			    "not in service within 15 s"
		fi

		"$py" "$tmp/mf_deploy.py" swap "$tmp/etc" gpus.yaml \
		    headroom 5
		sleep 3
		if is_ready && serves 12.345; then
			pass "memfloord: an invalid catalogue leaves the one" \
			    "in service"
		else
			fail "memfloord: after an invalid catalogue: not" \
			    "ready, or the last good one is gone"
		fi

		kill -HUP "$daemon" 2>/dev/null || true
		if wait_for 25 is_ready; then
			pass "memfloord: still ready after SIGHUP"
		else
			fail "memfloord: not ready after SIGHUP"
		fi

		kill -TERM "$daemon" 2>/dev/null || true
		if wait_for 50 gone; then
			if wait "$daemon"; then rc=0; else rc=$?; fi
			daemon=""
			if [ "$rc" = 0 ]; then
				pass "memfloord: exits 0 on SIGTERM"
			else
				fail "memfloord: exit status $rc on SIGTERM"
			fi
		else
			fail "memfloord: still running 10 s after SIGTERM"
		fi
	fi
fi

# --- systemd unit ----------------------------------------------------------
pycheck unit "$deploy/memfloord.service"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify also wants the programs to exist: point it at one that does.
	mkdir "$tmp/unit"
	sed 's#/usr/local/sbin/memfloord#/bin/true#' \
	    "$deploy/memfloord.service" >"$tmp/unit/memfloord.service"
	if (cd "$tmp/unit" && systemd-analyze verify ./memfloord.service) \
	    >"$tmp/verify.out" 2>&1 && ! [ -s "$tmp/verify.out" ]; then
		pass "systemd-analyze verify memfloord.service: no complaint"
	else
		fail "systemd-analyze verify memfloord.service:" \
		    "$(cat "$tmp/verify.out")"
	fi
	if (cd "$tmp/unit" && systemd-analyze security --offline=yes \
	    ./memfloord.service) >"$tmp/sec.out" 2>&1; then
		level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' \
		    "$tmp/sec.out")
		if [ -z "$level" ]; then
			skip "systemd-analyze security: no exposure level read"
		elif awk "BEGIN { exit !($level <= 2.0) }"; then
			pass "systemd-analyze security: exposure $level (<= 2.0)"
		else
			fail "systemd-analyze security: exposure $level > 2.0"
		fi
	else
		skip "systemd-analyze security --offline not supported here"
	fi
else
	skip "systemd-analyze not installed: unit not verified by systemd"
fi

# --- container build file --------------------------------------------------
pycheck dockerfile "$deploy/Dockerfile"
pkgs=$(sed -n 's/^#packages //p' "$tmp/py.out")
# The package names must exist in Debian: asked of apt's lists when there
# are some (this machine is Debian too; the image is bookworm).
have_apt_lists() {
	for f in /var/lib/apt/lists/*_Packages*; do
		[ -e "$f" ] && return 0
	done
	return 1
}
if command -v apt-cache >/dev/null 2>&1 && have_apt_lists; then
	missing=""
	for p in $pkgs; do
		apt-cache policy "$p" 2>/dev/null |
		    grep -q 'Candidate: [0-9]' || missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		pass "Dockerfile: every package it installs is in apt's lists"
	else
		fail "Dockerfile: not in apt's lists:$missing"
	fi
else
	skip "Dockerfile: no apt lists to look its packages up in"
fi

summary
