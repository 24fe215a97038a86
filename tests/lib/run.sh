#!/bin/sh
# run.sh: run tests by name, for make check and make test.
#
# Usage: sh tests/lib/run.sh BUILD TIER [NAME[:CASE] ...]
#
# With names, runs each: a unit or integration program (test_place,
# it_admit: BUILD/NAME), or an integration script (cli or cli.sh:
# tests/integration/cli.sh).  NAME:CASE runs only the cmocka cases of the
# program whose names match CASE (* and ? as wildcards), and fails when
# none does.  Without names, runs every unit program, every integration
# program and every integration script of the tier: "fast" leaves out the
# scripts whose header says "# tier: full" (they install and start
# components of their own: chromium, Slurm), "full" runs them all.
#
# The programs find the daemon and the command line through MEMFLOORD and
# MEMFLOOR and the tree through MF_TOP, which the caller sets.  Prints
# "== NAME" before each and a summary after; exits 1 when one failed.
set -u

build=$1
tier=$2
shift 2

failed=""
count=0

# run_one NAME: run one program or script; 0 when it passed.
run_one() {
	name=${1%%:*}
	case_pattern=""
	case $1 in *:*) case_pattern=${1#*:} ;; esac
	script=tests/integration/${name%.sh}.sh
	echo "== $1"
	if [ -f "$build/$name" ] && [ -x "$build/$name" ]; then
		if [ -z "$case_pattern" ]; then
			timeout 300 "$build/$name"
			return
		fi
		out=$(MF_TEST_CASE=$case_pattern timeout 300 "$build/$name" 2>&1)
		rc=$?
		printf '%s\n' "$out"
		if printf '%s\n' "$out" | grep -q 'PASSED *\] 0 test'; then
			echo "run: no case of $name matches '$case_pattern'"
			return 1
		fi
		return $rc
	fi
	if [ -f "$script" ]; then
		[ -z "$case_pattern" ] ||
			{ echo "run: $script has no cases to choose"; return 1; }
		timeout 300 sh "$script"
		return
	fi
	echo "run: no test named '$name' (a program in $build/ or a script" \
	    "in tests/integration/)"
	return 1
}

if [ $# -eq 0 ]; then
	for f in tests/unit/test_*.c tests/integration/it_*.c; do
		set -- "$@" "$(basename "$f" .c)"
	done
	for f in tests/integration/*.sh; do
		if [ "$tier" = fast ] && grep -q '^# tier: full' "$f"; then
			continue
		fi
		set -- "$@" "$(basename "$f" .sh)"
	done
fi

for t in "$@"; do
	count=$((count + 1))
	run_one "$t" || failed="$failed $t"
done
if [ -n "$failed" ]; then
	echo "run: $count run, failed:$failed"
	exit 1
fi
echo "run: $count run, all passed"
