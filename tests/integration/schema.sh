#!/bin/sh
# tier: full (installs the JSON Schema validator into build/venv)
# tests/integration/schema.sh: GET /v1/schema against a real JSON Schema
# validator (Python jsonschema, pinned in tests/requirements-schema.txt):
# every example validates, a misspelt field, an unknown value and a field
# that changes nothing are refused, and memfloord agrees with the schema on
# each probe (tests/integration/schema.py says what is checked).
#
# The validator lives in the venv $MF_VENV (default build/venv), which make
# suite and make test install; without it, this fails and says how to make
# it.  Prints one line per check and "N passed, M failed".
set -eu

top=${MF_TOP:-.}
cd "$top"
venv=${MF_VENV:-build/venv}
if [ ! -x "$venv/bin/python" ] ||
    ! "$venv/bin/python" -c 'import jsonschema, yaml' 2>/dev/null; then
	echo "FAIL the validator is not installed in $venv: make $venv/.installed"
	echo "0 passed, 1 failed"
	exit 1
fi
MEMFLOORD=${MEMFLOORD:-build/memfloord} timeout 120 "$venv/bin/python" \
    tests/integration/schema.py
