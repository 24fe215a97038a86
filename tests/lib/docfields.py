#!/usr/bin/env python3
"""The field lists of docs/manifest.md and docs/catalog.md, from the table.

    docfields.py MEMFLOOR --write   write them (make docs)
    docfields.py MEMFLOOR --check   exit 1 when a committed list differs

Each document holds its list between the lines "<!-- fields: begin -->" and
"<!-- fields: end -->": what `MEMFLOOR schema KIND --markdown` writes, made
from the table's rows (admission/manifest/job_fields.c,
catalog/catalog_fields.c), the rows the reader reads with.  --check
also holds every Job field path the man pages and docs/ name (spec.workload
.lora.rank, metadata.name) to the Job schema (`MEMFLOOR schema`): a path
under spec.resources, spec.model, spec.workload, spec.duration, spec.limits
or spec.allowedFixes must be a field; Kubernetes' own (spec.containers,
spec.template...) are not memfloor's and are left alone.
"""
import glob
import json
import os
import re
import subprocess
import sys

TOP = os.environ.get("MF_TOP", os.getcwd())
DOCS = [("docs/manifest.md", "Job"), ("docs/catalog.md", "GpuCatalog")]
BEGIN = "<!-- fields: begin -->\n"
END = "<!-- fields: end -->\n"


def generated(cli, kind):
    return subprocess.run([cli, "schema", kind, "--markdown"], check=True,
                          capture_output=True, text=True).stdout


def spliced(text, fields, name):
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        sys.exit("%s: needs one %r line and one %r line" %
                 (name, BEGIN.strip(), END.strip()))
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return head + BEGIN + fields.lstrip("\n") + "\n" + END + tail


def paths(schema, prefix=""):
    """Every dotted path of the schema's properties."""
    out = set()
    for k, s in (schema.get("properties") or {}).items():
        p = prefix + k
        out.add(p)
        out |= paths(s, p + ".")
        if "items" in s:
            out |= paths(s["items"], p + ".")
    return out


def named_paths(text):
    return set(re.findall(r"\b(?:spec|metadata)\.[A-Za-z0-9_.]*[A-Za-z0-9_]",
                          text))


def check_paths(cli):
    schema = json.loads(subprocess.run([cli, "schema"], check=True,
                                       capture_output=True, text=True).stdout)
    known = paths(schema)
    ours = ("spec.resources", "spec.model", "spec.workload", "spec.duration",
            "spec.limits", "spec.allowedFixes", "metadata.name")
    files = sorted(glob.glob(os.path.join(TOP, "man/*.[0-9]")) +
                   glob.glob(os.path.join(TOP, "docs/*.md")))
    bad = 0
    for f in files:
        with open(f) as fh:
            text = fh.read()
        for p in sorted(named_paths(text)):
            # A model config's own keys (spec.model.config.hidden_size) are
            # the model reader's, not the table's.
            if p.startswith("spec.model.config."):
                continue
            if p.startswith(ours) and p not in known:
                print("FAIL %s names %s, which is no field of the Job "
                      "manifest" % (os.path.relpath(f, TOP), p))
                bad += 1
    print("%s %d files' field paths are the table's" %
          ("ok  " if not bad else "FAIL", len(files)))
    return bad


def main(argv):
    if len(argv) != 3 or argv[2] not in ("--write", "--check"):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    cli, mode = argv[1], argv[2]
    failed = 0
    for name, kind in DOCS:
        path = os.path.join(TOP, name)
        with open(path) as f:
            text = f.read()
        want = spliced(text, generated(cli, kind), name)
        if mode == "--write":
            if want != text:
                with open(path, "w") as f:
                    f.write(want)
                print("wrote " + name)
        elif want != text:
            print("FAIL %s: its field list is not the table's; run make docs"
                  % name)
            failed += 1
        else:
            print("ok   %s: its field list is the table's" % name)
    if mode == "--check":
        failed += check_paths(cli)
        print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
