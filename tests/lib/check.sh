# shellcheck shell=sh disable=SC2154
# check.sh: what the shell tests share, sourced after $check_name (the
# test's name) and $daemon_bin (the memfloord to test) are set, and after
# the test's cleanup function, if it has one, is defined.
#
# It makes the scratch directory $tmp, and on exit runs cleanup and removes
# $tmp (INT and TERM exit 130 and 143), saying so when the test stops
# before its summary.  pass/fail record one check; is/has compare; summary
# prints "N passed, M failed" and fails when a check did; start_daemon runs
# memfloord on a free loopback port, serve the same or exits.

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mf-$check_name.XXXXXX")
summarized=""
# A test that stops before its summary (set -e, a command that failed)
# says so, and after which check, rather than ending with no word.
check_exit() {
	st=$?
	if [ -z "$summarized" ] && [ "$st" -ne 0 ]; then
		echo "FAIL - $check_name stopped (exit $st) before its summary," \
		    "after: $(tail -n 1 "$results" 2>/dev/null)"
	fi
	if command -v cleanup >/dev/null 2>&1; then
		cleanup
	fi
	rm -rf "$tmp"
}
trap check_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

results=$tmp/results
: >"$results"

pass() { echo "ok - $*" | tee -a "$results"; }
fail() { echo "FAIL - $*" | tee -a "$results"; }

# is NAME GOT WANT
is() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1: got '$2', expected '$3'"
	fi
}

summary() {
	summarized=1
	np=$(grep -c '^ok - ' "$results" || true)
	nf=$(grep -c '^FAIL - ' "$results" || true)
	echo "$np passed, $nf failed"
	[ "$nf" -eq 0 ]
}

# start_daemon LOG ARGS...: $daemon_bin with the shipped catalogue and
# models on a free loopback port ($listen when set, else 127.0.0.1:0; a
# -l in ARGS listens there too), run by $daemon_wrap if set (a command
# and its arguments); sets $pid, and $port (the first address's; empty
# when it did not start within 10 s).
start_daemon() {
	log=$1
	shift
	# The log exists before the daemon opens it, so sed below can read it.
	: >"$log"
	# shellcheck disable=SC2086 # daemon_wrap is a command line
	${daemon_wrap:-} "$daemon_bin" -d -l "${listen:-127.0.0.1:0}" -f catalog/gpus.yaml \
	    -m catalog/models "$@" >"$log" 2>&1 &
	pid=$!
	port=""
	i=0
	while [ $i -lt 100 ]; do
		port=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' \
		    "$log" | head -n 1)
		[ -n "$port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
}

# serve LOG ARGS...: start_daemon, or record why not, print the summary and
# exit 1 when memfloord is missing or does not start.
serve() {
	if [ ! -x "$daemon_bin" ]; then
		fail "memfloord not found at $daemon_bin (set MEMFLOORD)"
		summary || true
		exit 1
	fi
	start_daemon "$@"
	if [ -z "$port" ]; then
		fail "memfloord did not start: $(cat "$1")"
		summary || true
		exit 1
	fi
}

# wait_log FILE PATTERN [N] [TENTHS]: FILE has N (default 1) lines matching
# the extended regex within TENTHS tenths of a second (default 50).  The
# daemon writes request lines out up to 100 ms after the request.
wait_log() {
	w=0
	while [ "$(grep -Ec -- "$2" "$1" || true)" -lt "${3:-1}" ]; do
		[ $w -ge "${4:-50}" ] && return 1
		sleep 0.1
		w=$((w + 1))
	done
}

# apt_install WHO PACKAGE...: install Debian packages a test needs, as
# root with apt-get (updating the lists once if the first try fails),
# saying so as WHO; nothing when not root or without apt-get.  The caller
# checks again afterwards and fails plainly when it is still missing.
apt_install() {
	who=$1
	shift
	[ -z "${MF_NO_INSTALL:-}" ] || return 0
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 0
	echo "$who: installing $* with apt-get"
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq \
	    --no-install-recommends "$@" >/dev/null 2>&1 ||
	    { timeout 300 apt-get update -qq >/dev/null 2>&1 &&
	    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq \
	    --no-install-recommends "$@" >/dev/null 2>&1; } || true
}

# field KEY: the dotted KEY (placement.gpu) of the JSON answer in
# $tmp/ans; "" when it is not there or null.
field() {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$tmp/ans" "$1"
}

# need_program VAR WHO PACKAGE CANDIDATE...: sets VAR to the first
# CANDIDATE that is an executable (a path, or a name looked up on PATH);
# when none is, installs PACKAGE (apt_install, for WHO) and looks again;
# when still none is, the test fails naming the package and stops: a test
# never passes by skipping what it needs.
need_program() {
	_np_var=$1 _np_who=$2 _np_pkg=$3
	shift 3
	for _np_pass in 1 2; do
		for _np_c in "$@"; do
			case $_np_c in
			*/*) _np_p=$_np_c ;;
			*) _np_p=$(command -v "$_np_c" || true) ;;
			esac
			if [ -n "$_np_p" ] && [ -x "$_np_p" ]; then
				eval "$_np_var=\$_np_p"
				return 0
			fi
		done
		[ "$_np_pass" = 2 ] || apt_install "$_np_who" "$_np_pkg"
	done
	fail "$_np_who: none of $* (Debian: apt-get install $_np_pkg)"
	summary || true
	exit 1
}

# stop_all PID...: end the processes a test started (empty PIDs skipped),
# then wait for them, so a test's exit leaves none running.
stop_all() {
	for p in "$@"; do
		[ -z "$p" ] || kill "$p" 2>/dev/null || true
	done
	for p in "$@"; do
		[ -z "$p" ] || wait "$p" 2>/dev/null || true
	done
}
