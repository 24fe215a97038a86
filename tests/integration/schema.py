#!/usr/bin/env python3
"""GET /v1/schema against a real JSON Schema validator and the daemon.

Starts $MEMFLOORD on a free loopback port, fetches the Job schema
(/v1/schema) and the catalogue's (/v1/schema?kind=GpuCatalog), checks that
each is a valid draft 2020-12 schema, and then:

- every Job manifest in examples/ validates, and so does the
  memfloor.dev/spec annotation of every Kubernetes object there (against
  the schema's spec); the shipped catalogue and the good test catalogues
  validate against the catalogue's schema;
- a misspelt field, an unknown value, a field that changes nothing for the
  workload (issue 27), a memory that cannot be meant and a wrong kind are
  refused by the schema, and the daemon refuses each of them too (400),
  while the probes that validate are ones the daemon reads (not 400): the
  schema and the reader say the same;
- the bad test catalogues the schema can judge (types, bounds, forms,
  unknown keys) are refused.

Run with the Python of a venv that holds tests/requirements-schema.txt
(tests/integration/schema.sh, make test).  Prints one line per check and
"N passed, M failed"; exits 1 when a check failed.
"""
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import jsonschema
import yaml

TOP = os.environ.get("MF_TOP", os.getcwd())
DAEMON = os.environ.get("MEMFLOORD", os.path.join(TOP, "build/memfloord"))
PASSED = []
FAILED = []


def ok(name):
    PASSED.append(name)
    print("ok   " + name)


def bad(name, why):
    FAILED.append(name)
    print("FAIL " + name + ": " + why)


def start():
    log = tempfile.NamedTemporaryFile(prefix="mf-schema-", delete=False)
    proc = subprocess.Popen(
        [DAEMON, "-d", "-l", "127.0.0.1:0", "-f",
         os.path.join(TOP, "catalog/gpus.yaml"), "-m",
         os.path.join(TOP, "catalog/models")],
        stdout=log, stderr=log)
    for _ in range(100):
        with open(log.name) as f:
            m = re.search(r"listening on \S+ port (\d+)", f.read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit("memfloord did not start: " + open(log.name).read())


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                timeout=10) as r:
        return r.status, json.load(r)


def admit_status(port, doc):
    """The daemon's status for the manifest doc, sent as JSON."""
    req = urllib.request.Request(
        "http://127.0.0.1:%d/v1/admit" % port, data=json.dumps(doc).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def errors(validator, doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.path))


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def spec_schema(job):
    """The schema of a Job's spec alone (the memfloor.dev/spec annotation):
    its rules live inside it, so it stands by itself."""
    s = copy.deepcopy(job["properties"]["spec"])
    s["$schema"] = job["$schema"]
    return s


def annotations(obj):
    """Every memfloor.dev/spec annotation in a Kubernetes object, walking
    templates and AdmissionReview requests."""
    if isinstance(obj, dict):
        ann = (obj.get("metadata") or {}).get("annotations") or {}
        if "memfloor.dev/spec" in ann:
            yield ann["memfloor.dev/spec"]
        for v in obj.values():
            yield from annotations(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from annotations(v)


def check_examples(job_v, spec_v):
    jobs = specs = 0
    for path in sorted(glob.glob(os.path.join(TOP, "examples/*.yaml")) +
                       glob.glob(os.path.join(TOP, "examples/*.json"))):
        if path.endswith(".response.json"):
            continue
        name = os.path.basename(path)
        doc = load_yaml(path)
        if isinstance(doc, dict) and doc.get("apiVersion") == "memfloor.dev/v1":
            jobs += 1
            errs = errors(job_v, doc)
            if errs:
                bad("example " + name, errs[0].message)
            else:
                ok("example " + name + " validates")
        for text in annotations(doc):
            specs += 1
            errs = errors(spec_v, yaml.safe_load(text))
            if errs:
                bad("example " + name + " spec annotation", errs[0].message)
            else:
                ok("example " + name + " spec annotation validates")
    if jobs < 20 or specs < 2:
        bad("examples", "only %d manifests and %d annotations" % (jobs, specs))


def check_catalogues(cat_v):
    good = [os.path.join(TOP, "catalog/gpus.yaml")] + sorted(
        glob.glob(os.path.join(TOP, "tests/data/catalog/good-*")))
    for path in good:
        errs = errors(cat_v, load_yaml(path))
        name = os.path.relpath(path, TOP)
        if errs:
            bad("catalogue " + name, errs[0].message)
        else:
            ok("catalogue " + name + " validates")
    # Those a schema can judge; a repeated name, a gres shared by cards of
    # different memory and YAML syntax are the reader's alone.
    for base in ["bad-headroom", "bad-label", "bad-memory", "bad-time-factor",
                 "bad-unknown-key"]:
        path = os.path.join(TOP, "tests/data/catalog", base + ".yaml")
        if errors(cat_v, load_yaml(path)):
            ok("catalogue " + base + " is refused")
        else:
            bad("catalogue " + base, "validates, but memfloord refuses it")
    cat = load_yaml(os.path.join(TOP, "catalog/gpus.yaml"))
    cat["gpus"][0]["memory"] = 80
    if errors(cat_v, cat):
        ok("a card's memory of 80 (bytes) is refused")
    else:
        bad("memory 80", "validates")


# A training job and an inference job the probes vary.
TRAIN = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
         "metadata": {"name": "probe"},
         "spec": {"model": {"name": "meta-llama/Llama-3.1-8B"},
                  "workload": {"sequenceLength": 1024}}}
SERVE = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
         "metadata": {"name": "probe"},
         "spec": {"model": {"name": "meta-llama/Llama-3.1-8B"},
                  "workload": {"kind": "inference", "contextLength": 4096}}}
FLOOR = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
         "metadata": {"name": "probe"},
         "spec": {"resources": {"gpu": {"minMemory": "88Gi"}}}}


def with_(base, path, value):
    doc = copy.deepcopy(base)
    keys = path.split(".")
    at = doc
    for k in keys[:-1]:
        at = at.setdefault(k, {})
    at[keys[-1]] = value
    return doc


# (what, manifest, valid): the schema and the daemon must agree.
PROBES = [
    ("a misspelt field", with_(TRAIN, "spec.workload.sequenceLenght", 1), False),
    ("an unknown value", with_(TRAIN, "spec.workload.precision", "fp64"), False),
    # A floor: the estimator does not model design 19's dtypes yet.
    ("a precision of design 19", with_(FLOOR, "spec.workload.precision",
                                       "bf16-true"), True),
    ("checkpointing op", with_(TRAIN, "spec.workload.gradientCheckpointing",
                               "op"), True),
    ("checkpointing every 4th layer",
     with_(TRAIN, "spec.workload.gradientCheckpointing", 4), True),
    ("checkpointing 0", with_(TRAIN, "spec.workload.gradientCheckpointing",
                              0), False),
    ("lossChunks with a chunked loss",
     with_(with_(TRAIN, "spec.workload.loss", "chunked"),
           "spec.workload.lossChunks", 4), True),
    ("lossChunks with the standard loss",
     with_(TRAIN, "spec.workload.lossChunks", 4), False),
    ("a qlora block with method qlora",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"blockSize": 128}), True),
    ("a qlora blockSize bitsandbytes does not take",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"blockSize": 100}), False),
    ("a qlora block with method lora",
     with_(with_(TRAIN, "spec.workload.method", "lora"),
           "spec.workload.qlora", {"blockSize": 64}), False),
    # lora.targets: a name, or a list of module names (design 22).
    ("lora on a list of modules",
     with_(with_(TRAIN, "spec.workload.method", "lora"),
           "spec.workload.lora", {"targets": ["q_proj", "v_proj"],
                                  "dtype": "bf16"}), True),
    ("lora on an empty list",
     with_(with_(TRAIN, "spec.workload.method", "lora"),
           "spec.workload.lora", {"targets": []}), False),
    ("lora on a module name that is none",
     with_(with_(TRAIN, "spec.workload.method", "lora"),
           "spec.workload.lora", {"targets": ["q"]}), False),
    ("lora in fp8", with_(with_(TRAIN, "spec.workload.method", "lora"),
                          "spec.workload.lora", {"dtype": "fp8"}), False),
    ("lora with dropout", with_(with_(TRAIN, "spec.workload.method", "lora"),
                                "spec.workload.lora", {"dropout": 0.05}),
     True),
    ("lora dropout above 1",
     with_(with_(TRAIN, "spec.workload.method", "lora"),
           "spec.workload.lora", {"dropout": 1.5}), False),
    ("qlora with PEFT's k-bit preparation",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"kbitPrep": True}), True),
    ("qlora with bitsandbytes 0.42's matmul",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"keepsInput": True}), True),
    ("qlora.keepsInput not a boolean",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"keepsInput": "0.42"}), False),
    ("qlora loaded by torchao",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"quantizer": "torchao"}), True),
    ("qlora.quantizer unknown",
     with_(with_(TRAIN, "spec.workload.method", "qlora"),
           "spec.workload.qlora", {"quantizer": "gptq"}), False),
    ("training with concurrency", with_(TRAIN, "spec.workload.concurrency",
                                        8), False),
    ("training with contextLength", with_(TRAIN, "spec.workload.contextLength",
                                          8), False),
    ("training with kvCacheDtype", with_(TRAIN, "spec.workload.kvCacheDtype",
                                         "fp8"), False),
    ("inference with optimizer", with_(SERVE, "spec.workload.optimizer",
                                       "sgd"), False),
    ("inference with lora", with_(SERVE, "spec.workload.lora", {"rank": 8}),
     False),
    ("inference with microBatch", with_(SERVE, "spec.workload.microBatch", 2),
     False),
    ("inference with sequenceLength",
     with_(SERVE, "spec.workload.sequenceLength", 2), False),
    ("inference with gradientCheckpointing",
     with_(SERVE, "spec.workload.gradientCheckpointing", True), False),
    ("inference with method lora", with_(SERVE, "spec.workload.method",
                                         "lora"), False),
    ("inference with method full", with_(SERVE, "spec.workload.method",
                                         "full"), True),
    ("inference with sequenceParallel",
     with_(SERVE, "spec.workload.parallelism", {"sequenceParallel": True}),
     False),
    ("vllm with maxNumSeqs", with_(with_(SERVE, "spec.workload.server", "vllm"),
                                   "spec.workload.maxNumSeqs", 64), True),
    ("maxNumSeqs without vllm", with_(SERVE, "spec.workload.maxNumSeqs", 64),
     False),
    ("vllm with serverVersion 0.7.3",
     with_(with_(SERVE, "spec.workload.server", "vllm"),
           "spec.workload.serverVersion", "0.7.3"), True),
    ("serverVersion v0.7.3, not MAJOR.MINOR.PATCH",
     with_(with_(SERVE, "spec.workload.server", "vllm"),
           "spec.workload.serverVersion", "v0.7.3"), False),
    ("serverVersion without vllm",
     with_(SERVE, "spec.workload.serverVersion", "0.7.3"), False),
    ("method full with a lora block", with_(TRAIN, "spec.workload.lora",
                                            {"rank": 8}), False),
    ("method lora with a lora block",
     with_(with_(TRAIN, "spec.workload.method", "lora"), "spec.workload.lora",
           {"rank": 8}), True),
    ("sharding with lora",
     with_(with_(TRAIN, "spec.workload.method", "lora"),
           "spec.workload.sharding", {"gpus": 2}), True),
    ("minMemory 80 (bytes)", with_(FLOOR, "spec.resources.gpu.minMemory", 80),
     False),
    ("minMemory 80GB", with_(FLOOR, "spec.resources.gpu.minMemory", "80GB"),
     False),
    ("minMemory 94.5G", with_(FLOOR, "spec.resources.gpu.minMemory", "94.5G"),
     True),
    ("a catalogue's kind", with_(FLOOR, "kind", "GpuCatalog"), False),
    ("an unknown fix", with_(FLOOR, "spec.allowedFixes", ["fsdq"]), False),
    ("a framework at a release",
     with_(TRAIN, "spec.workload.framework", "torchtune@0.4"), True),
    ("a framework's unknown release",
     with_(TRAIN, "spec.workload.framework", "torchtune@0.3"), False),
    ("a framework for inference",
     with_(SERVE, "spec.workload.framework", "torchtune"), False),
]


def check_probes(port, job_v):
    for what, doc, valid in PROBES:
        schema_ok = not errors(job_v, doc)
        status, answer = admit_status(port, doc)
        daemon_ok = status != 400
        if schema_ok != valid:
            bad(what, "the schema %s it" % ("takes" if schema_ok else
                                            "refuses"))
        elif daemon_ok != valid:
            bad(what, "memfloord answers %d: %s" % (status, answer))
        else:
            ok("%s: %s by the schema and by memfloord" %
               (what, "taken" if valid else "refused"))


def main():
    proc, port = start()
    try:
        status, job = get(port, "/v1/schema")
        status2, cat = get(port, "/v1/schema?kind=GpuCatalog")
        for name, s, st in (("Job", job, status), ("GpuCatalog", cat, status2)):
            if st != 200:
                bad("GET schema " + name, "status %d" % st)
                continue
            try:
                jsonschema.Draft202012Validator.check_schema(s)
                ok("the %s schema is a valid draft 2020-12 schema" % name)
            except jsonschema.SchemaError as e:
                bad("schema " + name, e.message)
        job_v = jsonschema.Draft202012Validator(job)
        spec_v = jsonschema.Draft202012Validator(spec_schema(job))
        cat_v = jsonschema.Draft202012Validator(cat)
        check_examples(job_v, spec_v)
        check_catalogues(cat_v)
        check_probes(port, job_v)
    finally:
        proc.terminate()
        proc.wait()
    print("%d passed, %d failed" % (len(PASSED), len(FAILED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
