#!/bin/sh
# tsan.sh: the integration tests against a daemon built with ThreadSanitizer.
#
# Builds memfloord and the integration test programs with clang and
# -fsanitize=thread in build/tsan, runs each program against that daemon,
# and fails a program that fails or that shows a ThreadSanitizer warning:
# its own, or the daemon's (a daemon that reported a race exits 66, and the
# tests print the log of a daemon that did not exit 0 cleanly).
#
# Usage: sh tests/lib/tsan.sh [it_NAME ...]      (default: every tests/integration/it_*.c)
# Each program's output is kept in build/tsan/it_NAME.log.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
cd "$top" || exit 1
B=build/tsan

if [ $# -gt 0 ]; then
	tests="$*"
else
	tests=$(for f in tests/integration/it_*.c; do basename "$f" .c; done)
fi
targets=$B/memfloord
for t in $tests; do
	targets="$targets $B/$t"
done

command -v clang >/dev/null || { echo "tsan: needs clang"; exit 1; }
echo "== building with -fsanitize=thread in $B"
# shellcheck disable=SC2086 # targets is a list
make -s BUILD=$B CC=clang OPT="-O1 -g" LTO= SAN=-fsanitize=thread $targets ||
	exit 1

MEMFLOORD=$top/$B/memfloord
MF_TOP=$top
# Report every race rather than stop at the first; exit 66 after one.
TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export MEMFLOORD MF_TOP TSAN_OPTIONS

passed=0
failed=0
for t in $tests; do
	log=$B/$t.log
	t0=$(date +%s)
	timeout 600 "$B/$t" >"$log" 2>&1
	rc=$?
	took=$(($(date +%s) - t0))
	races=$(grep -c 'WARNING: ThreadSanitizer' "$log")
	if [ "$rc" -eq 0 ] && [ "$races" -eq 0 ]; then
		passed=$((passed + 1))
		echo "== $t: passed ($took s)"
		continue
	fi
	failed=$((failed + 1))
	echo "== $t: FAILED (exit $rc, $races ThreadSanitizer warnings, $took s); see $log"
	grep -a -A 24 'WARNING: ThreadSanitizer' "$log" | head -150
	grep -a '^\[  FAILED  \]' "$log" | sort -u
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
