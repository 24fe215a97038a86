#!/bin/sh
# tier: full (installs PostgreSQL and starts a server of its own)
# tests/integration/postgres.sh: two memfloord replicas sharing one
# PostgreSQL store (design 23, docs/observations.md).
#
# Installs Debian's postgresql when initdb is missing (as root, with
# apt-get), makes a cluster with initdb in the scratch directory (as the
# user postgres, or nobody, when run as root: initdb refuses root) and
# starts it with pg_ctl on a free port, listening on a Unix socket in
# the scratch directory only.  Then starts replicas A and B with --store
# postgresql://... (a password in the URL, which trust ignores and no log
# line may show) and a catalogue whose observations.refreshSeconds is 1,
# and checks:
#   - the schema is made once, version 1 in memfloor_schema;
#   - an observation posted to A changes B's next admission of the job,
#     within a few of B's refresh periods: a torch peak 25% above the
#     estimate on RTX-A6000 raises the need on every card by 25%
#     (observations.sh's arithmetic);
#   - with PostgreSQL stopped, both keep admitting with the observed need
#     (from the summaries in memory); a write is a 503 with Retry-After;
#     the outage is logged once, not at every request; a job admitted
#     again and again waits in the queue as one (/metrics), and is
#     written once the database is back;
#   - PostgreSQL started again, a write is taken again within a few
#     tries that honour Retry-After, and the log says the store is back;
#   - with PostgreSQL hung (SIGSTOP), a write is still answered (503) and
#     admissions go on; once it runs again, writes are taken;
#   - every observation acknowledged with 201 is there after kill -9 of
#     the replica that took them and an immediate (crash) stop and start
#     of PostgreSQL;
#   - a transaction whose connection is closed between two of its
#     statements (without a word, as a failover does) is never reported
#     committed, none of its statements
#     commits on the next connection, and the store goes on (pg_tx.c);
#   - a database holding a table that is not memfloor's, and one of a
#     newer schema, stop memfloord (and memfloord -n) with a message that
#     names the table or the schema.
# It fails, saying why, when PostgreSQL cannot be installed or started;
# it never skips.
#
# Run from the repository root (or set MF_TOP).  Prints one line per check
# and "N passed, M failed"; exits non-zero when a check failed.
set -eu

top=${MF_TOP:-.}
cd "$top"
top=$(pwd)
daemon_bin=${MEMFLOORD:-build/memfloord}
check_name=postgres
pid_a=""
pid_b=""
pg_on=""
cleanup() {
	stop_all "$pid_a" "$pid_b"
	if [ -n "$pg_on" ]; then
		as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate -w stop \
		    >/dev/null 2>&1 || true
	fi
}
# shellcheck source=tests/lib/check.sh
. "$top/tests/lib/check.sh"
chmod 755 "$tmp"

# give_up WHY: PostgreSQL cannot run here; fail, show the logs, stop.
give_up() {
	fail "$1"
	for f in "$tmp"/pg/*.log "$tmp"/*.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	summary || true
	exit 1
}

# --- PostgreSQL ------------------------------------------------------------

find_bin() {
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/psql" ] &&
		    pgbin=$d
	done
	[ -n "${pgbin:-}" ]
}
pgbin=""
if ! find_bin; then
	apt_install postgres postgresql
	find_bin || give_up "PostgreSQL's initdb, pg_ctl and psql are missing (Debian: apt-get install postgresql)"
fi

# The server runs as a user that is not root; files it writes live in
# $tmp/pg, which that user owns.
pguser=""
if [ "$(id -u)" = 0 ]; then
	for u in postgres nobody; do
		if id "$u" >/dev/null 2>&1; then
			pguser=$u
			break
		fi
	done
	[ -n "$pguser" ] || give_up "run as root and no user postgres or nobody to run PostgreSQL as"
	command -v runuser >/dev/null 2>&1 || give_up "run as root and no runuser to start PostgreSQL as $pguser"
fi
# as_pg COMMAND...: COMMAND as that user, from a directory it may enter.
as_pg() {
	if [ -n "$pguser" ]; then
		(cd "$tmp/pg" && runuser -u "$pguser" -- "$@")
	else
		"$@"
	fi
}
mkdir -p "$tmp/pg"
[ -z "$pguser" ] || chown "$pguser" "$tmp/pg"
pgdata=$tmp/pg/data
pgport=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
as_pg "$pgbin/initdb" -D "$pgdata" -U memfloor --auth=trust \
    >"$tmp/pg/initdb.log" 2>&1 ||
    give_up "initdb failed: $(tail -n 3 "$tmp/pg/initdb.log")"
pg_start() {
	as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$tmp/pg/server.log" -w -t 60 \
	    -o "-k $tmp/pg -p $pgport -c listen_addresses=''" start \
	    >"$tmp/pg/ctl.log" 2>&1
}
pg_stop() {
	as_pg "$pgbin/pg_ctl" -D "$pgdata" -m "$1" -w -t 60 stop \
	    >"$tmp/pg/ctl.log" 2>&1
}
pg_start || give_up "pg_ctl start failed: $(cat "$tmp/pg/ctl.log")"
pg_on=1
sql() {
	"$pgbin/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h "$tmp/pg" -p "$pgport" \
	    -U memfloor -d "$1" -c "$2"
}
for d in memfloor other newer race lost; do
	sql postgres "CREATE DATABASE $d" >/dev/null ||
	    give_up "CREATE DATABASE $d failed"
done
secret=not-to-be-logged
url="postgresql://memfloor:$secret@/memfloor?host=$tmp/pg&port=$pgport"

# --- two replicas ------------------------------------------------------------

cp catalog/gpus.yaml "$tmp/gpus.yaml"
printf '\nobservations:\n  refreshSeconds: 1\n' >>"$tmp/gpus.yaml"
printf 'replica-token\n' >"$tmp/token"
auth="Authorization: Bearer replica-token"

# replica NAME: start one on the store; sets pid_NAME and base_NAME.
replica() {
	serve "$tmp/$1.log" -f "$tmp/gpus.yaml" --store "$url" \
	    --observe-token-file "$tmp/token"
	eval "pid_$1=\$pid; base_$1=http://127.0.0.1:\$port"
}
replica a
replica b
is "the schema is made once: version 1" \
    "$(sql memfloor 'SELECT count(*), max(version) FROM memfloor_schema')" \
    "1|1"

# The job (tests/data/observations/trained.yaml): Llama 3.1 8B, LoRA all-linear
# rank 16, checkpointing, sequences of 2,048, a billion tokens.
cp "$top/tests/data/observations/trained.yaml" "$tmp/train.yaml"

# admit BASE: the job admitted by BASE; the answer in $tmp/ans, the
# status in $code.
admit() {
	code=$(curl -s -m 10 -o "$tmp/ans" -w '%{http_code}' -X POST \
	    --data-binary @"$tmp/train.yaml" "$1/v1/admit")
}
# raised: whether the answer's need is the estimate * 1.25 on every card
# (to the byte, give or take the rounding of the ratio) and tcard is
# left behind.
raised() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
est, card = int(sys.argv[2]), sys.argv[3]
ps = [d["placement"]] + d["alternatives"]
print(all("observed" in p and abs(p["observed"]["needBytes"] - est * 1.25) < 2
          for p in ps) and card not in [p["gpu"] for p in ps])' \
	    "$tmp/ans" "$est" "$tcard"
}
# post BASE PEAK: a torch peak of the job on RTX-A6000, by its manifest;
# the status in $code, the headers in $tmp/headers.
post() {
	{
		printf 'card: RTX-A6000\ncount: 1\npeakReservedBytes: %s\n' "$2"
		printf 'source: torch\njob:\n'
		sed 's/^/  /' "$tmp/train.yaml"
	} >"$tmp/obs.yaml"
	code=$(curl -s -m 15 -o "$tmp/ans" -D "$tmp/headers" \
	    -w '%{http_code}' -X POST -H "$auth" \
	    -H 'Content-Type: application/yaml' --data-binary @"$tmp/obs.yaml" \
	    "$1/v1/observations")
}

admit "$base_b"
is "B admits the job" "$code $(field admitted)" "200 True"
est=$(field need.perGpuBytes)
tcard=$(field placement.gpu)
fp=$(field fingerprint)
peak=$((est + est / 4))
post "$base_a" "$peak"
is "A takes a peak 25% above the estimate on RTX-A6000: 201" "$code" 201
acked=1
# B reads it within its refresh period (1 s); 50 tries 0.1 s apart.
n=0
while [ $n -lt 50 ]; do
	admit "$base_b"
	[ "$(raised)" = True ] && break
	sleep 0.1
	n=$((n + 1))
done
is "B's next admissions: the need 25% higher on every card, past $tcard" \
    "$(raised)" True
is "B says it is observed: 1 run, ratio 1.25" \
    "$(field observed.runs) $(field observed.needRatio)" "1 1.25"

# --- PostgreSQL stopped ------------------------------------------------------

pg_stop fast || give_up "pg_ctl stop failed: $(cat "$tmp/pg/ctl.log")"
for r in a b; do
	eval "base=\$base_$r"
	admit "$base"
	is "database down: $r admits, 200" "$code $(field admitted)" "200 True"
	is "database down: $r admits with the observed need" "$(raised)" True
done
for i in 1 2 3; do
	post "$base_a" "$peak"
	is "database down: write $i to A is a 503" "$code" 503
	has_retry=$(grep -ci '^retry-after: [0-9]' "$tmp/headers" || true)
	is "database down: write $i to A says Retry-After" "$has_retry" 1
done
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X DELETE -H "$auth" \
    "$base_b/v1/observations/1")
is "database down: a DELETE to B is a 503" "$code" 503
# Three of A's refresh periods pass with the database down, A admitting
# the job all the while: its admissions wait as one entry, however many
# times the writer has tried the database meanwhile (every 2 s or so).
n=0
while [ $n -lt 8 ]; do
	admit "$base_a"
	sleep 0.4
	n=$((n + 1))
done
# store_metric NAME: the value of memfloor_NAME in A's /metrics.
store_metric() {
	curl -s -m 10 "$base_a/metrics" | sed -n "s/^memfloor_$1 //p"
}
is "database down: A's admissions of the job wait as one, none dropped" \
    "$(store_metric store_admissions_queued) $(store_metric store_admissions_dropped_total)" \
    "1 0"
is "the outage is logged once by A" \
    "$(grep -c 'admissions answer from the summaries in memory' "$tmp/a.log" || true)" \
    1
is "the outage is logged once by B" \
    "$(grep -c 'admissions answer from the summaries in memory' "$tmp/b.log" || true)" \
    1

# --- PostgreSQL back -----------------------------------------------------------

pg_start || give_up "pg_ctl start again failed: $(cat "$tmp/pg/ctl.log")"
# A client that honours Retry-After (1 s) gets its write in: at most 10.
n=0
while [ $n -lt 10 ]; do
	post "$base_a" "$peak"
	[ "$code" = 201 ] && break
	sleep 1
	n=$((n + 1))
done
is "database back: a write to A is taken, 201" "$code" 201
acked=$((acked + 1))
wait_log "$tmp/a.log" 'is reachable again' 1 50 || true
is "A logs that the store is back" \
    "$(grep -c 'is reachable again' "$tmp/a.log" || true)" 1
n=0
while [ $n -lt 50 ] && [ "$(store_metric store_admissions_queued)" != 0 ]; do
	sleep 0.1
	n=$((n + 1))
done
is "database back: A's admissions are written, none dropped" \
    "$(store_metric store_admissions_queued) $(store_metric store_admissions_dropped_total)" \
    "0 0"

# --- PostgreSQL hung ---------------------------------------------------------

# The server and its backends stopped (SIGSTOP), not gone: connections
# are accepted and never answered.  A write is given up on and answered
# 503 (curl's own limit, 15 s, is only there to tell a hang from an
# answer); admissions answer as before.
pg_pids=$(head -n 1 "$pgdata/postmaster.pid")
pg_pids="$pg_pids $(ps -o pid= --ppid "$pg_pids" | tr '\n' ' ')"
# shellcheck disable=SC2086 # a list of PIDs
kill -STOP $pg_pids
admit "$base_b"
is "database hung: B admits with the observed need" \
    "$code $(raised)" "200 True"
post "$base_a" "$peak"
is "database hung: a write to A is answered, 503" "$code" 503
admit "$base_a"
is "database hung: A admits with the observed need" \
    "$code $(raised)" "200 True"
# shellcheck disable=SC2086 # a list of PIDs
kill -CONT $pg_pids
n=0
while [ $n -lt 15 ]; do
	post "$base_a" "$peak"
	[ "$code" = 201 ] && break
	sleep 1
	n=$((n + 1))
done
is "database going again: a write to A is taken, 201" "$code" 201
acked=$((acked + 1))

# --- acknowledged, then kill -9 and a crash of the database ------------------

n=0
while [ $n -lt 20 ]; do
	post "$base_b" "$peak"
	[ "$code" = 201 ] && acked=$((acked + 1))
	n=$((n + 1))
done
is "B acknowledges 20 more" "$acked" 23
kill -9 "$pid_b"
wait "$pid_b" 2>/dev/null || true
pid_b=""
pg_stop immediate || give_up "pg_ctl stop -m immediate failed: $(cat "$tmp/pg/ctl.log")"
pg_start || give_up "pg_ctl start after the crash failed: $(cat "$tmp/pg/ctl.log")"
replica b
code=$(curl -s -m 10 -o "$tmp/list" -w '%{http_code}' \
    "$base_b/v1/observations?fingerprint=$fp")
# The write answered 503 while the database was hung had been sent: the
# server, let go, may have committed it (a 503 says it was not known to be
# kept, not that it was not).  So: the 23 acknowledged, and that one at
# most.
is "after kill -9 and a crash of the database: the 23 acknowledged listed by B" \
    "$code $(python3 -c 'import json, sys
n = len(json.load(open(sys.argv[1]))["observations"])
print(int(sys.argv[2]) <= n <= int(sys.argv[2]) + 1)' "$tmp/list" "$acked")" \
    "200 True"
is "the admissions were recorded through the queue" \
    "$(sql memfloor "SELECT count(*) > 0 FROM admissions WHERE fingerprint = '$fp'")" \
    t
is "no log line shows the password" \
    "$(cat "$tmp/a.log" "$tmp/b.log" | grep -c "$secret" || true)" 0
for r in a b; do
	eval "p=\$pid_$r"
	kill "$p"
	rc=0
	wait "$p" || rc=$?
	eval "pid_$r=''"
	is "replica $r: exit status on SIGTERM" "$rc" 0
	is "replica $r: no sanitizer report" \
	    "$(grep -Ec 'Sanitizer|runtime error' "$tmp/$r.log" || true)" 0
done

# --- two replicas migrating one new database at once -------------------------

# Both make the schema in a transaction; the one that loses reads the
# winner's, and both start.
race="postgresql://memfloor@/race?host=$tmp/pg&port=$pgport"
"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models --store "$race" \
    >"$tmp/race1.log" 2>&1 &
r1=$!
"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models --store "$race" \
    >"$tmp/race2.log" 2>&1 &
r2=$!
rc1=0
rc2=0
wait "$r1" || rc1=$?
wait "$r2" || rc2=$?
is "two replicas migrating a new database at once: both start" \
    "$rc1 $rc2" "0 0"
is "two replicas migrating a new database at once: one schema, version 1" \
    "$(sql race 'SELECT count(*), max(version) FROM memfloor_schema')" "1|1"

# --- a transaction lost with its connection ----------------------------------

# pg_tx (tests/integration/pg_tx.c) runs the writer's statements through
# the store's back end, connected through a proxy of its own, and closes
# the connection between two of them.
pg_tx=${MF_PG_TX:-build/pg_tx}
rc=0
"$pg_tx" "$tmp/pg" "$pgport" lost >"$tmp/pg_tx.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && ! grep -q '^FAIL' "$tmp/pg_tx.log"; then
	pass "a transaction lost with its connection: never committed, and the store goes on ($(grep -c '^ok' "$tmp/pg_tx.log") checks)"
else
	fail "a transaction lost with its connection: exit $rc: $(cat "$tmp/pg_tx.log")"
fi

# --- databases that are not memfloor's ---------------------------------------

# refused NAME DB WANT: memfloord --store on database DB exits non-zero
# with a message holding WANT, and so does memfloord -n.
refused() {
	u="postgresql://memfloor@/$2?host=$tmp/pg&port=$pgport"
	rc=0
	timeout 20 "$daemon_bin" -d -l 127.0.0.1:0 -f catalog/gpus.yaml \
	    -m catalog/models --store "$u" >"$tmp/refused.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
	    grep -qF -- "$3" "$tmp/refused.log" &&
	    grep -qF -- "/$2?" "$tmp/refused.log"; then
		pass "$1: memfloord stops, naming it"
	else
		fail "$1: exit $rc: $(cat "$tmp/refused.log")"
	fi
	rc=0
	"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models --store "$u" \
	    >"$tmp/refused.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && grep -qF -- "$3" "$tmp/refused.log"; then
		pass "$1: memfloord -n says so"
	else
		fail "$1: memfloord -n exit $rc: $(cat "$tmp/refused.log")"
	fi
}
sql other "CREATE TABLE accounts (name TEXT); INSERT INTO accounts VALUES ('alice')"
refused "a database with a table of its own" other "table accounts is not memfloor's"
is "the other database is left as it was" \
    "$(sql other "SELECT string_agg(table_name, ',') FROM information_schema.tables WHERE table_schema = 'public'")" \
    accounts
rc=0
"$daemon_bin" -n -f catalog/gpus.yaml -m catalog/models \
    --store "postgresql://memfloor@/newer?host=$tmp/pg&port=$pgport" \
    >"$tmp/newer.log" 2>&1 || rc=$?
is "memfloord -n makes the schema of an empty database" "$rc" 0
sql newer "UPDATE memfloor_schema SET version = 99"
refused "a database of a newer schema" newer "schema 99 is newer than this memfloord's (1)"

summary
