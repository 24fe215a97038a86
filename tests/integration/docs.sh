#!/bin/sh
# tests/integration/docs.sh: the field lists of docs/manifest.md and
# docs/catalog.md are the table's (admission/manifest/job_fields.c and
# catalog/catalog_fields.c, as `memfloor schema --markdown` writes it; make
# docs writes them), and every Job field path the man pages and docs/ name
# is a field of the table
# (tests/lib/docfields.py).  Prints one line per check; exits non-zero when
# one failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
cli=${MEMFLOOR:-build/memfloor}
timeout 60 python3 tests/lib/docfields.py "$cli" --check
