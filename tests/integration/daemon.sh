#!/bin/sh
# tests/integration/daemon.sh: memfloord's flags, where it listens, what it logs about
# clients it closes, and what it says when started wrong.
#
# Starts $MEMFLOORD (default build/memfloord) on free loopback ports:
# `-l :PORT` must answer on 127.0.0.1 and, where the host has IPv6, on
# [::1] (one dual-stack socket); a connection that sends half a request
# and stops must be closed at the request deadline with a log line that
# names the client's address, and a burst of them must be one line, not
# one each.  A connection is accepted only once its first bytes are in
# (TCP_DEFER_ACCEPT): one that has sent nothing stays in the kernel's
# queue.  Bad flag values must name the option and what it takes.
# --version prints the VERSION file's version; -l given twice answers on
# each address; the start-up log names the catalogue file and its GPU
# count (grep'd from the file) and the models directory and its count; a
# catalogue file removed is a warning and stays in service, and put back
# is a reload; a named pipe swapped in for it is refused at once, on a
# change and on SIGHUP, the catalogue stays in service and SIGTERM still
# ends the daemon; a catalogue reached through a symlink to a file in
# another directory, or through a release directory flipped by a
# symlink, is reloaded when it changes there; a port in use names the
# address and how to choose another; make run LISTEN=ADDR:PORT answers
# there.
#
# Run from the repository root (or set MF_TOP).  Prints one line per check
# and "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
check_name=daemon
pid=""
lpid=""
cleanup() {
	stop_all "$pid" "$lpid"
}
. "$top/tests/lib/check.sh"

stop() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=""
}

# serve CATALOG LOG: memfloord on a free port with CATALOG, its log in LOG
# (emptied first), its pid in $pid and port in $port once it listens.
serve() {
	: >"$2"
	"$daemon_bin" -d -l 127.0.0.1:0 -f "$1" >"$2" 2>&1 &
	pid=$!
	wait_log "$2" 'listening on ' || true
	port=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' "$2" | head -n 1)
}

# --- bad flag values name the option and what it takes ----------------------
# bad_flag WANT ARGS...: memfloord ARGS exits 2 and says WANT on stderr.
bad_flag() {
	want=$1
	shift
	rc=0
	"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models "$@" \
	    >"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" = 2 ] && grep -qF -- "$want" "$tmp/out"; then
		pass "memfloord $*: exit 2, '$want'"
	else
		fail "memfloord $*: exit $rc, want 2 and '$want': $(head -n 2 "$tmp/out")"
	fi
}
bad_flag "--threads '0': takes a number of threads from 1 to 1024" \
    --threads 0
bad_flag "--max-body '10': takes a size in bytes from 1024" --max-body 10
bad_flag "--log-format 'xml': takes text or json" --log-format xml
bad_flag "--request-timeout '0': takes a number of seconds from 1 to 3600" \
    --request-timeout 0
bad_flag "--max-conns-per-ip 'lots': takes a number of connections" \
    --max-conns-per-ip lots
# One client may hold at most the 8,192 connections memfloord serves in all.
bad_flag "--max-conns-per-ip '8193': takes a number of connections from 1 to 8192" \
    --max-conns-per-ip 8193
bad_flag "--max-body-memory 1048576 must be more than --max-body 1048576" \
    --max-body-memory 1048576

# --- -l :PORT listens on both families --------------------------------------
listen=:0 start_daemon "$tmp/ds.log"
if [ -z "$port" ]; then
	fail "memfloord -l :0 did not start: $(cat "$tmp/ds.log")"
else
	is "-l :PORT answers on 127.0.0.1" \
	    "$(curl -s -m 5 "http://127.0.0.1:$port/healthz")" ok
	if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' \
	    2>/dev/null; then
		is "-l :PORT answers on [::1] too (one dual-stack socket)" \
		    "$(curl -s -g -m 5 "http://[::1]:$port/healthz")" ok
	else
		pass "no IPv6 loopback here: [::1] not tried"
	fi
fi
stop

# --- a connection is handed to the daemon with its first bytes ---------------
# The kernel holds a connection that has sent nothing (SYN-RECV on the
# daemon's side, /proc/net/tcp state 03) until its first bytes come; then
# it is accepted (ESTABLISHED, 01) and answered.
start_daemon "$tmp/defer.log"
states=$(python3 - "$port" <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])

def state(peer):
    """The daemon's side of the connection from peer: its /proc/net/tcp state."""
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        local, remote = f[1].split(":"), f[2].split(":")
        if int(local[1], 16) == port and int(remote[1], 16) == peer:
            return f[3]
    return "none"

s = socket.create_connection(("127.0.0.1", port))
peer = s.getsockname()[1]
time.sleep(0.2)
before = state(peer)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
s.settimeout(5)
answer = s.recv(15)
print(before, state(peer), answer.decode(errors="replace").replace(" ", "_"))
PYEOF
)
is "a connection that has sent nothing is not accepted; its request is answered" \
    "$states" "03 01 HTTP/1.1_200_OK"
if grep -q TCP_DEFER_ACCEPT "$tmp/defer.log"; then
	fail "the start-up log: $(grep TCP_DEFER_ACCEPT "$tmp/defer.log")"
else
	pass "the start-up log says nothing of TCP_DEFER_ACCEPT"
fi
stop

# --- the catalogue in text says what a floor left out -------------------------
start_daemon "$tmp/cat.log"
curl -s -m 5 -H 'Accept: text/plain' \
    "http://127.0.0.1:$port/v1/catalog?minMemory=88Gi" >"$tmp/cat.txt"
rows=$(grep -c '^[A-Z0-9][A-Za-z0-9-]* *[0-9][0-9.]* ' "$tmp/cat.txt" || true)
if grep -q "^$rows of them with at least 88Gi of memory (minMemory)" "$tmp/cat.txt" &&
    [ "$rows" -gt 0 ]; then
	pass "?minMemory=88Gi in text: '$rows of them with at least 88Gi', $rows rows"
else
	fail "?minMemory=88Gi in text, $rows rows: $(head -n 3 "$tmp/cat.txt")"
fi
stop

# --- connections closed at the deadline are logged, a line a second ----------
start_daemon "$tmp/dl.log" --request-timeout 1
closed=$(python3 - "$port" <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
socks = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/admit HTTP/1.1\r\nHost: x\r\n")
    socks.append(s)
time.sleep(2.5)
closed = 0
for s in socks:
    s.settimeout(0.5)
    try:
        closed += s.recv(1) == b""
    except OSError:
        closed += 1
print(closed)
PYEOF
)
is "20 connections that stop mid-request are closed at the deadline" \
    "$closed" 20
lines=$(grep -c 'connection from 127\.0\.0\.1:[0-9]* closed' "$tmp/dl.log" || true)
if [ "$lines" -ge 1 ] && [ "$lines" -le 4 ]; then
	pass "20 connections cut at the deadline: $lines log lines naming 127.0.0.1"
else
	fail "20 connections cut at the deadline: $lines lines: $(tail -n 3 "$tmp/dl.log")"
fi
stop

# --- --version, from the VERSION file --------------------------------------------
version=$(cat VERSION)
is "memfloord --version" "$("$daemon_bin" --version)" "memfloord $version"
cli_bin=${MEMFLOOR:-build/memfloor}
is "memfloor --version" "$("$cli_bin" --version)" "memfloor $version"

# --- -l twice listens on each -------------------------------------------------------
start_daemon "$tmp/two.log" -l '[::1]:0'
port2=$(sed -n 's/.*listening on \[::1\]:0 port \([0-9][0-9]*\).*/\1/p' "$tmp/two.log")
if [ -z "$port" ]; then
	fail "memfloord -l 127.0.0.1:0 -l [::1]:0 did not start: $(cat "$tmp/two.log")"
elif python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' \
    2>/dev/null; then
	is "-l twice: the first address answers" \
	    "$(curl -s -m 5 "http://127.0.0.1:$port/healthz")" ok
	is "-l twice: the second answers too" \
	    "$(curl -s -g -m 5 "http://[::1]:$port2/healthz")" ok
else
	pass "no IPv6 loopback here: -l twice not tried on [::1]"
fi
stop

# --- the start-up log names the catalogue and the models -----------------------------
ncards=$(grep -c '^  - name: ' catalog/gpus.yaml)
nmodels=$(find catalog/models -name '*.json' | wc -l | tr -d ' ')
cp catalog/gpus.yaml "$tmp/gpus.yaml"
serve "$tmp/gpus.yaml" "$tmp/cat.log"
has_line() {
	if grep -Eq -- "$2" "$3"; then pass "$1"; else fail "$1: no /$2/ in $(cat "$3")"; fi
}
has_line "start-up log: the catalogue file and its $ncards GPUs" \
    " info catalogue $tmp/gpus\.yaml: $ncards GPUs$" "$tmp/cat.log"
has_line "start-up log: the models directory and its $nmodels models" \
    " info models loaded: $nmodels in service \($nmodels from [^ ]*/catalog/models\)$" "$tmp/cat.log"

# --- the catalogue file removed: said, and kept in service ---------------------------
rm "$tmp/gpus.yaml"
wait_log "$tmp/cat.log" 'was removed' || true
has_line "catalogue removed: a warning naming it and the version kept" \
    " warn catalogue $tmp/gpus\.yaml was removed; keeping version 1 in service" "$tmp/cat.log"
is "catalogue removed: still ready" \
    "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" 200
is "catalogue removed: still served, version 1" \
    "$(curl -s -m 5 "http://127.0.0.1:$port/v1/catalog" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["version"], len(d["gpus"]))')" \
    "1 $ncards"
# Design 21: each card's speed figures as the catalogue states them, the
# achieved shares in effect (Hopper's 0.803 and 0.92, time.c), the
# reference card, and a derived relativeThroughput: an L40S's 362.05T x
# 0.776 over an H100's 989.4T x 0.803, 280.9508 / 794.4882 = 0.3536.
is "catalogue: the cards' speed figures and the reference" \
    "$(curl -s -m 5 "http://127.0.0.1:$port/v1/catalog" | python3 -c '
import json, sys
d = json.load(sys.stdin)
g = {c["name"]: c for c in d["gpus"]}
h, l = g["H100"], g["L40S"]
print(d["reference"], h["architecture"], h["flops"]["bf16"],
      h["memoryBandwidth"], h["efficiency"]["matmul"],
      h["efficiency"]["memory"], h["interconnect"]["kind"],
      h["interconnect"]["bandwidth"], h["network"]["bandwidth"],
      "%.4f" % l["relativeThroughput"], l["relativeThroughputGiven"])')" \
    "H100 hopper 989400000000000 3350000000000 0.803 0.92 nvswitch 450000000000 50000000000 0.3536 False"
cp catalog/gpus.yaml "$tmp/gpus.yaml"
wait_log "$tmp/cat.log" 'reloaded \(file changed\): version 2' || true
has_line "catalogue put back: loaded as a change" \
    "reloaded \(file changed\): version 2, $ncards GPUs" "$tmp/cat.log"
# A key with a carriage return and a terminal's escape in it: the error
# names it, the text log's line holds them escaped, and no line is ended
# or forged from within (only the newlines that end lines).
printf '"bad\\rkey\\u001b[31m": 1\n' >>"$tmp/gpus.yaml"
wait_log "$tmp/cat.log" 'reload \(file changed\) failed' || true
has_line "text log: a file's control bytes escaped in a line" \
    'failed, keeping version 2: .*gpus\.yaml:[0-9]+: bad\\u000dkey\\u001b\[31m: unknown field$' \
    "$tmp/cat.log"
is "text log: no carriage return nor escape byte" \
    "$(tr -cd '\r\033' <"$tmp/cat.log" | wc -c | tr -d ' ')" 0

# --- a port in use: which address, and how to choose another -------------------------
rc=0
"$daemon_bin" -d -l "127.0.0.1:$port" >"$tmp/busy.log" 2>&1 || rc=$?
is "a port in use: exit 1" "$rc" 1
has_line "a port in use: the address, why, and how to choose another" \
    "cannot listen on 127\.0\.0\.1:$port: Address already in use .*choose another address with -l ADDR:PORT \(make run LISTEN=ADDR:PORT\)" \
    "$tmp/busy.log"
stop

# --- a catalogue in a directory that is a symlink, or is made again ------------------
# A ConfigMap key mounted at a path with a directory in it: the directory
# is a symlink the volume moves on at each update, and the one it left is
# removed; then the directory removed and made again.  Every update is
# loaded.
mkdir "$tmp/v1"
cp catalog/gpus.yaml "$tmp/v1/gpus.yaml"
ln -s v1 "$tmp/conf"
: >"$tmp/swap.log"
"$daemon_bin" -d -l 127.0.0.1:0 -f "$tmp/conf/gpus.yaml" >"$tmp/swap.log" 2>&1 &
pid=$!
wait_log "$tmp/swap.log" 'listening on ' || true
# update N: the catalogue in vN, conf moved onto it, v(N-1) removed.
update() {
	mkdir "$tmp/v$1"
	cp catalog/gpus.yaml "$tmp/v$1/gpus.yaml"
	ln -s "v$1" "$tmp/conf.new"
	mv -T "$tmp/conf.new" "$tmp/conf"
	rm -rf "$tmp/v$(($1 - 1))"
}
update 2
wait_log "$tmp/swap.log" 'reloaded \(file changed\): version 2' || true
update 3
wait_log "$tmp/swap.log" 'reloaded \(file changed\): version 3' || true
has_line "a directory symlink moved on twice: both loaded" \
    "reloaded \(file changed\): version 3, $ncards GPUs" "$tmp/swap.log"
rm "$tmp/conf"
rm -rf "$tmp/v3"
wait_log "$tmp/swap.log" 'was removed' || true
sleep 1.5
mkdir "$tmp/v4"
cp catalog/gpus.yaml "$tmp/v4/gpus.yaml"
ln -s v4 "$tmp/conf"
wait_log "$tmp/swap.log" 'reloaded \(file changed\): version 4' || true
has_line "the directory removed and made again: loaded" \
    "reloaded \(file changed\): version 4, $ncards GPUs" "$tmp/swap.log"
stop

# --- a named pipe swapped in for the catalogue: refused, never waited on -------
# Opening a named pipe to read waits for a writer, and a reload waiting
# there held its lock, so SIGTERM never ended the daemon.
cp catalog/gpus.yaml "$tmp/fifo.yaml"
serve "$tmp/fifo.yaml" "$tmp/fifo.log"
mkfifo "$tmp/new.fifo"
mv "$tmp/new.fifo" "$tmp/fifo.yaml"
wait_log "$tmp/fifo.log" 'reload \(file changed\) failed' || true
has_line "a named pipe swapped in: refused, version 1 kept" \
    "catalogue reload \(file changed\) failed, keeping version 1: $tmp/fifo\.yaml: not a regular file \(a named pipe\)$" \
    "$tmp/fifo.log"
kill -HUP "$pid"
wait_log "$tmp/fifo.log" 'reload \(SIGHUP\) failed' || true
has_line "a named pipe there on SIGHUP: refused too" \
    "catalogue reload \(SIGHUP\) failed, keeping version 1: $tmp/fifo\.yaml: not a regular file \(a named pipe\)$" \
    "$tmp/fifo.log"
is "a named pipe there: version 1 still served" \
    "$(curl -s -m 5 "http://127.0.0.1:$port/v1/catalog" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["version"], len(d["gpus"]))')" \
    "1 $ncards"
kill -TERM "$pid"
w=0
while kill -0 "$pid" 2>/dev/null && [ $w -lt 50 ]; do
	sleep 0.1
	w=$((w + 1))
done
kill -KILL "$pid" 2>/dev/null || true
rc=0
wait "$pid" 2>/dev/null || rc=$?
pid=""
is "a named pipe there: SIGTERM ends the daemon within 5 s, exit 0" "$rc" 0

# --- a catalogue through a symlink: the changes where it leads are seen -------
# etc/gpus.yaml a link to srv/gpus.yaml: an edit in srv is loaded.  And
# a release directory flipped (rel/current from releases/v1 to v2,
# neither removed): the flip is loaded, then an edit in v2.
mkdir -p "$tmp/etc" "$tmp/srv" "$tmp/rel/releases/v1" "$tmp/rel/releases/v2"
cp catalog/gpus.yaml "$tmp/srv/gpus.yaml"
ln -s "$tmp/srv/gpus.yaml" "$tmp/etc/gpus.yaml"
cp catalog/gpus.yaml "$tmp/rel/releases/v1/gpus.yaml"
cp catalog/gpus.yaml "$tmp/rel/releases/v2/gpus.yaml"
ln -s releases/v1 "$tmp/rel/current"
: >"$tmp/link.log"
: >"$tmp/flip.log"
"$daemon_bin" -d -l 127.0.0.1:0 -f "$tmp/etc/gpus.yaml" >"$tmp/link.log" 2>&1 &
lpid=$!
"$daemon_bin" -d -l 127.0.0.1:0 -f "$tmp/rel/current/gpus.yaml" >"$tmp/flip.log" 2>&1 &
pid=$!
wait_log "$tmp/link.log" 'listening on ' || true
wait_log "$tmp/flip.log" 'listening on ' || true
# edit DIR: a new catalogue renamed over DIR/gpus.yaml, as editors write.
edit() {
	cp catalog/gpus.yaml "$1/gpus.yaml.new"
	mv "$1/gpus.yaml.new" "$1/gpus.yaml"
}
edit "$tmp/srv"
wait_log "$tmp/link.log" 'reloaded \(file changed\): version 2' || true
has_line "a link to a file in another directory: an edit there is loaded" \
    "reloaded \(file changed\): version 2, $ncards GPUs" "$tmp/link.log"
ln -s releases/v2 "$tmp/rel/current.tmp"
mv -T "$tmp/rel/current.tmp" "$tmp/rel/current"
wait_log "$tmp/flip.log" 'reloaded \(file changed\): version 2' || true
has_line "a release directory flipped: loaded" \
    "reloaded \(file changed\): version 2, $ncards GPUs" "$tmp/flip.log"
edit "$tmp/rel/releases/v2"
wait_log "$tmp/flip.log" 'reloaded \(file changed\): version 3' || true
has_line "a release directory flipped: an edit in the new release is loaded" \
    "reloaded \(file changed\): version 3, $ncards GPUs" "$tmp/flip.log"
stop_all "$lpid"
stop

# --- make run LISTEN=... --------------------------------------------------------------
# The daemon this test runs, through make run, on a port of its choosing.
bdir=$(dirname "$daemon_bin")
free=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$tmp/run.log"
make -s --no-print-directory run BUILD="$bdir" LISTEN="127.0.0.1:$free" >"$tmp/run.log" 2>&1 &
mpid=$!
wait_log "$tmp/run.log" "listening on 127\.0\.0\.1:$free port $free" 1 600 || true
is "make run LISTEN=127.0.0.1:$free: answers there" \
    "$(curl -s -m 5 "http://127.0.0.1:$free/healthz")" ok
for child in $(pgrep -P "$mpid" || true); do
	kill "$child" 2>/dev/null || true
done
stop_all "$mpid"

summary
