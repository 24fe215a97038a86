#!/bin/sh
# Every fix of every rejection in examples/, applied and admitted again.
exec python3 "${MF_TOP:-.}/tests/integration/fixes.py" "$@"
