#!/bin/sh
# The examples in examples/ against the real daemon and the command line.
exec python3 "${MF_TOP:-.}/tests/integration/examples.py" "$@"
