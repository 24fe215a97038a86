#!/usr/bin/env python3
"""Fill a memfloord store with observations, for make bench.

    observations.py PORT TOKEN-FILE MANIFEST N

Posts N observations to the daemon on 127.0.0.1:PORT, of N jobs other
than MANIFEST's (its manifest at sequence lengths 1..N tokens shorter),
each on an H100: the store a site's daemon holds, which the admissions
make bench counts look their own job up in and do not find, so that
their answers are those of a daemon without a store.  Fails on any
answer but 201.
"""
import json
import sys
import urllib.error
import urllib.request


def post(port, path, body, token=None, ctype="application/json"):
    headers = {"Content-Type": ctype}
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 body.encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def observation(manifest, card, count, peak):
    """An observation as YAML, the manifest under job."""
    job = "".join("  " + line + "\n" for line in manifest.splitlines()
                  if line.strip() and not line.startswith("#"))
    return (f"job:\n{job}card: {card}\ncount: {count}\n"
            f"peakReservedBytes: {peak}\nsource: torch\n")


def main():
    port, token_file, manifest, n = sys.argv[1:5]
    token = open(token_file).read().split()[0]
    text = open(manifest).read()
    seq = "sequenceLength: 4096"
    if seq not in text:
        sys.exit(f"{manifest}: no '{seq}' to vary")
    for i in range(1, int(n) + 1):
        o = observation(text.replace(seq, f"sequenceLength: {4096 - i}"),
                        "H100", 1, 40 << 30)
        status, ans = post(port, "/v1/observations", o, token,
                           "application/yaml")
        if status != 201:
            sys.exit(f"observation: HTTP {status}: {ans}")


if __name__ == "__main__":
    main()
