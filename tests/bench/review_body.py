#!/usr/bin/env python3
"""An AdmissionReview body as the API server sends it: compact JSON.

    review_body.py REVIEW.json [--floor QUANTITY] > BODY.json

Writes REVIEW.json without blank space (Go's encoding/json writes none),
and with --floor its memfloor.dev/spec annotation replaced by
memfloor.dev/min-memory: QUANTITY, first among the annotations: the Job of
examples/k8s-admissionreview.json with only a floor, which make bench
drives and docs/performance.md's profile of the review path reads.
"""
import json
import sys


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--floor"):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    with open(argv[1]) as f:
        review = json.load(f)
    if len(argv) == 4:
        meta = review["request"]["object"]["metadata"]
        ann = meta["annotations"]
        ann.pop("memfloor.dev/spec", None)
        meta["annotations"] = {"memfloor.dev/min-memory": argv[3], **ann}
    sys.stdout.write(json.dumps(review, separators=(",", ":")))


if __name__ == "__main__":
    main(sys.argv)
