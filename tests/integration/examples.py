#!/usr/bin/env python3
"""Send every request in examples/ to a real memfloord and check the answer.

A request file starts with a line "# POST /v1/..." (YAML and text bodies),
or is named NAME.diagnose.json.  Its "# expect:" lines hold figures from
the design's reference tables: path=value (exact) and gb(path)=value
(bytes / 1e9 to one decimal; paths may be joined with + and -).  The
answer must also equal NAME.response.json, so the examples never go stale
(run with --update to rewrite them after a reviewed change), and the
command line (memfloor estimate|admit|diagnose -o json) must give the same
answer offline.  Prints "N passed, M failed".

README.md's try-it shows text answers: each indented block after a line
"<!-- answer: examples/NAME.response.json -->" must say what that answer
says (readme_problems), so the front page never shows stale figures.

/v1/estimate and /v1/admit requests are sent twice (design 13): as they
are, answered by the default estimator pytorch (NAME.response.json,
checked against the "# expect-pytorch:" lines), and with ?estimator=post
(--estimator post on the command line), the reference post's arithmetic
(NAME.post.response.json, checked against the "# expect:" lines, which
are the design's reference figures).
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import urllib.error

TOP = os.environ.get("MF_TOP", os.getcwd())
DAEMON = os.environ.get("MEMFLOORD", os.path.join(TOP, "build/memfloord"))
CLI = os.environ.get("MEMFLOOR", os.path.join(TOP, "build/memfloor"))
UPDATE = "--update" in sys.argv


def start():
    log = tempfile.NamedTemporaryFile(prefix="mf-examples-", delete=False)
    proc = subprocess.Popen(
        [DAEMON, "-d", "-l", "127.0.0.1:0", "-f",
         os.path.join(TOP, "catalog/gpus.yaml"), "-m",
         os.path.join(TOP, "catalog/models")],
        stdout=log, stderr=log)
    for _ in range(100):
        with open(log.name) as f:
            m = re.search(r"listening on \S+ port (\d+)", f.read())
        if m:
            return proc, int(m.group(1)), log.name
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit("memfloord did not start: " + open(log.name).read())


def requests():
    for path in sorted(glob.glob(os.path.join(TOP, "examples", "*"))):
        if path.endswith(".diagnose.json"):
            yield path, "/v1/diagnose", "application/json"
            continue
        if path.endswith(".json"):
            continue
        with open(path, errors="replace") as f:
            m = re.match(r"# POST (/v1/\S+)", f.readline())
        if m:
            ctype = "text/plain" if path.endswith(".txt") \
                else "application/yaml"
            yield path, m.group(1), ctype


def send(port, endpoint, body, ctype):
    req = urllib.request.Request(
        "http://127.0.0.1:%d%s" % (port, endpoint), data=body,
        headers={"Content-Type": ctype}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def lookup(doc, path):
    """a.b.c, where a list of named objects is indexed by name."""
    for part in path.split("."):
        if isinstance(doc, list):
            doc = next(x for x in doc
                       if x.get("name") == part or x.get("fix") == part)
        else:
            doc = doc[part]
    return doc


def gb(doc, expr):
    total, sign = 0, 1
    for tok in re.split(r"([+-])", expr):
        if tok in "+-":
            sign = 1 if tok == "+" else -1
        else:
            v = lookup(doc, tok)
            total += sign * (v["bytes"] if isinstance(v, dict) else v)
    return "%.1f" % (total / 1e9)


def check_expect(path, status, doc, prefix):
    problems = []
    with open(path, errors="replace") as f:
        lines = [l[len(prefix):] for l in f if l.startswith(prefix)]
    for item in " ".join(lines).split():
        key, want = item.split("=", 1)
        try:
            if key == "status":
                got = str(status)
            elif key.startswith("gb(") and key.endswith(")"):
                got = gb(doc, key[3:-1])
            else:
                got = lookup(doc, key)
                got = json.dumps(got, separators=(",", ":")) \
                    if not isinstance(got, str) else got
        except (KeyError, StopIteration, TypeError) as e:
            got = "missing (%r)" % e
        if got != want:
            problems.append("%s: want %s, got %s" % (key, want, got))
    return problems


def cli_answer(path, endpoint, estimator):
    verb = endpoint.rsplit("/", 1)[1]
    extra = ["--estimator", estimator] if estimator else []
    r = subprocess.run([CLI, verb, path, "-o", "json", "-f",
                        os.path.join(TOP, "catalog/gpus.yaml"), "-m",
                        os.path.join(TOP, "catalog/models")] + extra,
                       capture_output=True, timeout=60)
    return json.loads(r.stdout or r.stderr)


def variants(endpoint):
    """(estimator or None, expect prefix, golden suffix) per answer."""
    if endpoint in ("/v1/estimate", "/v1/admit"):
        return [(None, "# expect-pytorch:", ".response.json"),
                ("post", "# expect:", ".post.response.json")]
    return [(None, "# expect:", ".response.json")]


def check(port, path, endpoint, ctype, body, estimator, prefix, suffix):
    query = "?estimator=" + estimator if estimator else ""
    status, raw = send(port, endpoint + query, body, ctype)
    doc = json.loads(raw)
    cli_differs = (os.path.exists(CLI) and
                   cli_answer(path, endpoint, estimator) != doc)
    # The fingerprint is a digest of the job (test_fingerprint.c): any
    # field added to the workload moves every one, so the answers kept
    # here leave it out.
    doc.pop("fingerprint", None)
    base = re.sub(r"(\.diagnose)?\.[a-z]+$", "", path)
    golden = base + suffix
    problems = check_expect(path, status, doc, prefix)
    if UPDATE:
        with open(golden, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    elif not os.path.exists(golden):
        problems.append("no %s" % os.path.basename(golden))
    elif json.load(open(golden)) != doc:
        problems.append("answer differs from %s" % os.path.basename(golden))
    if cli_differs:
        problems.append("memfloor %s%s gives a different answer" %
                        (endpoint.rsplit("/", 1)[1],
                         " --estimator " + estimator if estimator else ""))
    return problems


def readme_blocks(text):
    """(answer file, lines of the indented block after its marker)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"<!-- answer: (\S+) -->$", line)
        if not m:
            continue
        block, j = [], i + 1
        while j < len(lines) and (lines[j] == "" or
                                  lines[j].startswith("    ")):
            block.append(lines[j][4:])
            j += 1
        yield m.group(1), [b for b in block if b.strip()]


def table_of(name):
    """The text table memfloor admit writes for the request whose answer is
    name (examples/NAME.response.json, its request examples/NAME.yaml),
    a line a row, its spaces squeezed.  The command line's JSON answer is
    that file (check), so the table says what the answer says, rounded
    from its unrounded figures."""
    request = os.path.join(TOP, name[:-len(".response.json")] + ".yaml")
    r = subprocess.run([CLI, "admit", request, "-o", "table", "-f",
                        os.path.join(TOP, "catalog/gpus.yaml"), "-m",
                        os.path.join(TOP, "catalog/models")],
                       capture_output=True, timeout=60)
    return [" ".join(line.split()) for line in r.stdout.decode().splitlines()
            if line.strip()]


def readme_problems(path):
    """What README.md's answer blocks say that their answers do not."""
    problems, seen = [], 0
    with open(path) as f:
        text = f.read()
    for name, block in readme_blocks(text):
        seen += 1
        want = table_of(name)
        got = [" ".join(b.split()) for b in block]
        if got != want:
            problems.append("%s: README shows\n    %s\n  the answer says\n"
                            "    %s" % (name, "\n    ".join(got),
                                        "\n    ".join(want)))
    if seen == 0:
        problems.append("no <!-- answer: --> block in README.md")
    return problems


def main():
    passed = failed = 0
    problems = readme_problems(os.path.join(TOP, "README.md"))
    if problems:
        failed += 1
        print("FAIL README.md try-it\n  %s" % "\n  ".join(problems))
    else:
        passed += 1
        print("ok   README.md try-it")
    proc, port, log = start()
    try:
        for path, endpoint, ctype in requests():
            with open(path, "rb") as f:
                body = f.read()
            for estimator, prefix, suffix in variants(endpoint):
                problems = check(port, path, endpoint, ctype, body,
                                 estimator, prefix, suffix)
                name = os.path.basename(path) + \
                    (" (estimator %s)" % estimator if estimator else "")
                if problems:
                    failed += 1
                    print("FAIL %s\n  %s" % (name, "\n  ".join(problems)))
                else:
                    passed += 1
                    print("ok   %s" % name)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.unlink(log)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
