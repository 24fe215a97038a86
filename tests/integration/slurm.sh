#!/bin/sh
# tier: full (installs and starts a Slurm cluster: munge, slurmctld, slurmd)
# tests/integration/slurm.sh: memfloor in front of a real Slurm (slurm/cli_filter.lua,
# slurm/job_submit.lua, `memfloor catalog slurm`; docs/slurm.md).
#
# First, without Slurm: the table `memfloor catalog slurm` writes from
# tests/data/slurm/gpus.yaml loads in Lua with each card's type, memory and
# mapping, cheapest first; a decision on a mapped card carries
# placement.slurm, one on the shipped catalogue none.
#
# Then installs Debian's slurmctld, slurmd, slurm-client, munge, lua5.1,
# lua-socket and lua-cjson when missing (as root, with apt-get), starts
# munged, slurmctld and slurmd from a temporary directory (SLURM_CONF
# points into it; free ports; one node with gpu:a4000 x2, gpu:h100 x2 and
# gpu:b200 x1 faked by files, in partitions gpu and big) and memfloord on a
# free loopback port with tests/data/slurm/gpus.yaml, and submits held jobs
# with the real sbatch as the user nobody:
#   - a floor (#SBATCH --comment, or MEMFLOOR_MIN_MEMORY, or a manifest in
#     MEMFLOOR_JOB) gets the gres type, count, partition and constraint
#     memfloor chose, the floor and the job's fingerprint in its comment
#     and the check in its AdminComment (scontrol show job);
#   - a placement over two nodes asks for exactly its GPUs: the gres a
#     node when its count divides by the nodes, else the job's GPUs
#     (--gpus) on --nodes (a second node, never started, holds the other
#     half of the cluster's H100s);
#   - a job too big for every card is refused with the suggested fix on
#     sbatch's stderr, and no job is made;
#   - through a SLURM_CONF without CliFilterPlugins, job_submit.lua refuses
#     a floor with too small a gres type (or none, or an untyped GPU that
#     may be too small, or a bad quantity) and accepts one that holds it;
#   - a job that states nothing keeps its gres and memfloord is not asked;
#   - with memfloord stopped the default policy (open) submits as written
#     with the floor kept for job_submit.lua, closed stops the submission,
#     and a memfloord that accepts but never answers costs the timeout.
# Every daemon it started is stopped on exit.  When it cannot start them
# it says why and fails; only when not run as root outside CI (CI=true)
# does it skip the Slurm part, saying so.
#
# Run from the repository root (or set MF_TOP).  Prints one line per check
# and "N passed, M failed"; exits non-zero when a check failed.
# shellcheck disable=SC2016 # single-quoted patterns match a literal $
set -eu

top=${MF_TOP:-.}
cd "$top"
top=$(pwd)
cli=${MEMFLOOR:-build/memfloor}
daemon_bin=${MEMFLOORD:-build/memfloord}
check_name=slurm
started=""      # pids of what this test started, newest first
policy_rc=""    # a policy-rc.d this test made for the install
cleanup() {
	# shellcheck disable=SC2086 # a list of PIDs
	stop_all $started
	[ -z "$policy_rc" ] || rm -f "$policy_rc"
}
# shellcheck source=tests/lib/check.sh
. "$top/tests/lib/check.sh"
chmod 755 "$tmp"

# has NAME FILE PATTERN: FILE has a line matching the extended regex.
has() {
	if grep -Eq -- "$3" "$2"; then
		pass "$1"
	else
		fail "$1: no /$3/ in: $(head -c 600 "$2")"
	fi
}
hasnt() {
	if grep -Eq -- "$3" "$2"; then
		fail "$1: /$3/ in: $(head -c 600 "$2")"
	else
		pass "$1"
	fi
}

# give_up WHY: the Slurm part cannot run; fail, or skip outside CI when
# the reason is that this is not root.
give_up() {
	fail "$1"
	for f in "$tmp"/*.log "$tmp"/*.out; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	summary || true
	exit 1
}

cat=tests/data/slurm/gpus.yaml
# Where job_submit.lua looks for it: beside itself, in SLURM_CONF's directory.
table=$tmp/memfloor_gpus.lua

# --- without Slurm -------------------------------------------------------

rc=0
"$cli" catalog slurm "$cat" >"$table" 2>"$tmp/err" || rc=$?
is "catalog slurm: exit status" "$rc" 0
has "catalog slurm: a4000 first, 16e9 bytes" "$table" \
    '^	\{ gpu = "RTX-A4000", memory = 16000000000, memoryText = "16G", type = "a4000" \},$'
has "catalog slurm: b200 with its partition and constraint" "$table" \
    'gpu = "B200", memory = 180000000000, .*type = "b200", partition = "big", constraint = "hbm3e"'
hasnt "catalog slurm: no entry for a card without a mapping" "$table" L40S
rc=0
"$cli" catalog slurm catalog/gpus.yaml >"$tmp/out" 2>"$tmp/err" || rc=$?
is "catalog slurm: a catalogue without mappings writes no table, exit 2" \
    "$rc:$(wc -c <"$tmp/out" | tr -d ' ')" "2:0"
has "catalog slurm: and shows a mapping" "$tmp/err" \
    '^      slurm: \{gres: "gpu:'
rc=0
"$cli" catalog slurm tests/data/catalog/bad-slurm-shared.yaml >"$tmp/out" 2>"$tmp/err" || rc=$?
is "catalog slurm: a bad catalogue is exit 2" "$rc" 2
has "catalog slurm: the error names the field" "$tmp/err" \
    '^bad-slurm-shared.yaml:19: gpus\[2\]\.slurm\.gres: '

# decision JSON FIELD...: print the dotted fields of a JSON file, one a line
# ("-" for an absent one).
jget() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    v = d
    for k in path.split("."):
        if isinstance(v, list):
            v = v[int(k)] if int(k) < len(v) else None
        elif isinstance(v, dict) and k in v:
            v = v[k]
        else:
            v = None
            break
    print("-" if v is None else v if not isinstance(v, dict) else json.dumps(v, sort_keys=True))
PY
}
cat >"$tmp/floor.yaml" <<'EOF2'
apiVersion: memfloor.dev/v1
kind: Job
metadata: {name: floor-40}
spec: {resources: {gpu: {minMemory: 40Gi}}}
EOF2
"$cli" admit "$tmp/floor.yaml" -f "$cat" -o json >"$tmp/d.json" || true
is "decision: no slurm member on a card without a mapping" \
    "$(jget "$tmp/d.json" placement.gpu placement.slurm | tr '\n' ' ')" \
    'L40S - '
is "decision: an alternative's slurm has the gres with the count, partition" \
    "$(jget "$tmp/d.json" alternatives.0.gpu alternatives.0.slurm | tr '\n' ' ')" \
    'H100 {"gres": "gpu:h100:1", "partition": "gpu"} '
is "decision: the B200 alternative has its partition and constraint" \
    "$(jget "$tmp/d.json" alternatives.1.gpu alternatives.1.slurm.constraint | tr '\n' ' ')" \
    'B200 hbm3e '
"$cli" admit "$tmp/floor.yaml" -o json >"$tmp/d.json" || true
hasnt "decision: no slurm member anywhere on the shipped catalogue" "$tmp/d.json" '"slurm"'
# H100s two a node, on up to two nodes: four of them are two nodes of two,
# and Slurm reads --gres a node; three are two nodes too, and a gres a node
# of two would hold four, so the request is the job's three (--gpus).
awk '{ print } /^  - name: H100$/ { print "    gpusPerNode: 2"; print "    maxNodes: 2" }' \
    "$cat" | sed '/^  - name: H100$/,/^  - name:/ s/^    maxCount: 2$/    maxCount: 4/' \
    >"$tmp/nodes.yaml"
cat >"$tmp/floor4.yaml" <<'EOF2'
apiVersion: memfloor.dev/v1
kind: Job
metadata: {name: floor-60-x4}
spec: {resources: {gpu: {minMemory: 60Gi, count: 4}}}
EOF2
"$cli" admit "$tmp/floor4.yaml" -f "$tmp/nodes.yaml" -o json >"$tmp/d.json" || true
is "decision over two nodes: the gres a node and the nodes" \
    "$(jget "$tmp/d.json" placement.gpu placement.count placement.nodes placement.slurm | tr '\n' ' ')" \
    'H100 4 2 {"gres": "gpu:h100:2", "nodes": 2, "partition": "gpu"} '
sed 's/floor-60-x4/floor-60-x3/; s/count: 4/count: 3/' "$tmp/floor4.yaml" >"$tmp/floor3.yaml"
"$cli" admit "$tmp/floor3.yaml" -f "$tmp/nodes.yaml" -o json >"$tmp/d.json" || true
is "decision over two nodes, a count they do not divide: the job's GPUs" \
    "$(jget "$tmp/d.json" placement.gpu placement.count placement.nodes placement.slurm | tr '\n' ' ')" \
    'H100 3 2 {"gpus": "h100:3", "nodes": 2, "partition": "gpu"} '

# --- Slurm ---------------------------------------------------------------

debs="slurmctld slurmd slurm-client munge lua5.1 lua-socket lua-cjson"
have_all() {
	for c in slurmctld slurmd sbatch scontrol munged lua5.1 runuser; do
		command -v "$c" >/dev/null 2>&1 || return 1
	done
	lua5.1 -e 'require("socket.http") require("cjson")' 2>/dev/null
}
install_slurm() {
	if [ "$(id -u)" != 0 ]; then
		if [ "${CI:-}" = true ]; then
			give_up "not root: the test runs munged, slurmctld and slurmd as root (and installs $debs when missing)"
		fi
		echo "skip - the Slurm part: not root, and it runs the Slurm daemons as root ($debs)"
		summary
		exit $?
	fi
	have_all && return 0
	command -v apt-get >/dev/null || give_up "Slurm is missing and there is no apt-get to install $debs"
	# Keep the packages' scripts from starting a system munged or slurmd.
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		policy_rc=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$policy_rc"
		chmod 755 "$policy_rc"
	fi
	echo "slurm: installing $debs"
	# shellcheck disable=SC2086 # debs is a list
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $debs) \
	    >"$tmp/apt.log" 2>&1 || give_up "apt-get install $debs failed: $(tail -n 5 "$tmp/apt.log")"
	if [ -n "$policy_rc" ]; then
		rm -f "$policy_rc"
		policy_rc=""
	fi
	have_all || give_up "still missing after apt-get install $debs"
}
if [ "$(id -u)" != 0 ] || ! have_all; then
	install_slurm
fi

if command -v lua5.1 >/dev/null 2>&1; then
	is "catalog slurm: the table loads in Lua, cheapest first" \
	    "$(lua5.1 -e "t = dofile('$table') for _, e in ipairs(t) do io.write(e.type, '=', string.format('%.0f', e.memory), ' ') end")" \
	    "a4000=16000000000 h100=80000000000 b200=180000000000 "
fi

# --- the cluster ---------------------------------------------------------

D=$tmp
mkdir -p "$D/state" "$D/spool" "$D/dev" "$D/bypass"
host=$(hostname -s)
ports=$(python3 -c '
import socket
s = [socket.socket() for _ in range(4)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
# shellcheck disable=SC2086 # four port numbers
set -- $ports
ctld_port=$1
slurmd_port=$2
hang_port=$3
n2_port=$4      # the second node's slurmd, which is never started
head -c 1024 /dev/urandom >"$D/munge.key"
chmod 600 "$D/munge.key"
for i in 0 1 2 3 4; do
	mknod "$D/dev/gpu$i" c 1 3 2>/dev/null || touch "$D/dev/gpu$i"
done
# The CPU layout this machine has, as slurmd sees it.
layout=$(slurmd -C | head -n 1 | sed 's/^NodeName=[^ ]* //')
cat >"$D/slurm.conf" <<EOF2
ClusterName=memfloor
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
SlurmctldDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
ReturnToService=2
JobSubmitPlugins=lua
CliFilterPlugins=lua
NodeName=$host NodeAddr=127.0.0.1 $layout Gres=gpu:a4000:2,gpu:h100:2,gpu:b200:1 Features=hbm3e State=UNKNOWN
NodeName=memfloor-n2 NodeAddr=127.0.0.1 Port=$n2_port $layout Gres=gpu:h100:2 State=UNKNOWN
PartitionName=gpu Nodes=$host,memfloor-n2 Default=YES MaxTime=INFINITE State=UP
PartitionName=big Nodes=$host MaxTime=INFINITE State=UP
EOF2
cat >"$D/gres.conf" <<EOF2
NodeName=$host Name=gpu Type=a4000 File=$D/dev/gpu[0-1]
NodeName=$host Name=gpu Type=h100 File=$D/dev/gpu[2-3]
NodeName=$host Name=gpu Type=b200 File=$D/dev/gpu4
EOF2
cp slurm/cli_filter.lua slurm/job_submit.lua "$D/"
# A user who skips the client side: the same cluster without CliFilterPlugins.
grep -v '^CliFilterPlugins=' "$D/slurm.conf" >"$D/bypass/slurm.conf"
chmod -R a+rX "$D"
chmod 600 "$D/munge.key"
export SLURM_CONF="$D/slurm.conf"

munged -F -S "$D/munge.sock" --key-file="$D/munge.key" \
    --log-file="$D/munged.log" --pid-file="$D/munged.pid" \
    --seed-file="$D/munged.seed" >"$D/munged.out" 2>&1 &
started="$! $started"
i=0
until [ -S "$D/munge.sock" ]; do
	[ $i -ge 50 ] && give_up "munged did not start"
	sleep 0.1
	i=$((i + 1))
done
slurmctld -D -i >"$D/slurmctld.out" 2>&1 &
started="$! $started"
slurmd -D >"$D/slurmd.out" 2>&1 &
started="$! $started"
i=0
until sinfo -h -N -n "$host" -o '%T' 2>/dev/null | grep -Eq '^idle'; do
	[ $i -ge 150 ] && give_up "slurmctld and slurmd did not bring the node up within 15 s: $(sinfo -N 2>&1 | tail -n 3)"
	sleep 0.1
	i=$((i + 1))
done
pass "slurm: munged, slurmctld and slurmd are up, the node is idle"

# start_memfloord CATALOG LOG: memfloord on a free port with CATALOG, its log in
# LOG; its pid in $mpid and port in $port, or the test gives up.
start_memfloord() {
	: >"$2"
	"$daemon_bin" -d -l 127.0.0.1:0 -f "$1" -m catalog/models >"$2" 2>&1 &
	mpid=$!
	started="$mpid $started"
	port=""
	i=0
	while [ $i -lt 100 ] && [ -z "$port" ]; do
		port=$(sed -n 's/.*listening on .* port \([0-9][0-9]*\).*/\1/p' "$2" | head -n 1)
		kill -0 "$mpid" 2>/dev/null || break
		[ -n "$port" ] || sleep 0.1
		i=$((i + 1))
	done
	[ -n "$port" ] || give_up "memfloord with $1 did not start: $(cat "$2")"
}
mlog=$tmp/memfloord.log
start_memfloord "$cat" "$mlog"
url=http://127.0.0.1:$port

# cli_filter.lua in Lua alone, against a memfloord on the two-node
# catalogue: the placement's nodes become --nodes, and a fingerprint the
# comment brought from an earlier job is replaced by this job's.
mpid_main=$mpid
start_memfloord "$tmp/nodes.yaml" "$tmp/nodes.log"
nport=$port
port=${url##*:}
mpid=$mpid_main
old=0123456789abcdef0123456789abcdef
cat >"$tmp/cf.lua" <<'LUA'
slurm = { SUCCESS = 0, ERROR = -1 }
function slurm.log_info() end
function slurm.log_error() end
function slurm.log_user() end
dofile(arg[1])
local o = { type = "sbatch", gres = arg[3],
	comment = "memfloor:fingerprint=" .. arg[2] .. " memfloor:min-memory=60Gi" }
local rc = slurm_cli_pre_submit(o, 0)
print(rc, o.gres, o.gpus, o.nodes, o.partition, o.comment)
LUA
fp=$("$cli" fingerprint "$tmp/floor4.yaml" -f "$tmp/nodes.yaml" 2>/dev/null || true)
is "cli_filter.lua, two nodes: --gres a node, --nodes, this job's fingerprint" \
    "$(MEMFLOOR_URL=http://127.0.0.1:$nport lua5.1 "$tmp/cf.lua" slurm/cli_filter.lua "$old" gpu:4 2>"$tmp/cf.err" | tr '\t' ' ')" \
    "0 gpu:h100:2 nil 2 gpu memfloor:min-memory=60Gi memfloor:fingerprint=$fp"
fp=$("$cli" fingerprint "$tmp/floor3.yaml" -f "$tmp/nodes.yaml" 2>/dev/null || true)
is "cli_filter.lua, three GPUs on two nodes: --gpus, the user's GPU gres dropped, the rest kept" \
    "$(MEMFLOOR_URL=http://127.0.0.1:$nport lua5.1 "$tmp/cf.lua" slurm/cli_filter.lua "$old" gpu:3,nvme:1 2>"$tmp/cf.err" | tr '\t' ' ')" \
    "0 nvme:1 h100:3 2 gpu memfloor:min-memory=60Gi memfloor:fingerprint=$fp"
is "cli_filter.lua, three GPUs on two nodes: a gres of GPUs only becomes none (Slurm refuses an empty one)" \
    "$(MEMFLOOR_URL=http://127.0.0.1:$nport lua5.1 "$tmp/cf.lua" slurm/cli_filter.lua "$old" gpu:3 2>"$tmp/cf.err" | cut -f 2-4 | tr '\t' ' ')" \
    "none h100:3 2"

# sub NAME [ENV=V...] -- SBATCH-ARGS...: sbatch as nobody, held, from $D,
# named NAME (sbatch's default name for an empty NAME),
# with MEMFLOOR_URL set; stdout in $out, stderr in $err, status in $rc,
# the job id in $job (empty when none).  SUB_CONF picks another SLURM_CONF.
out=$tmp/out
err=$tmp/err
sub() {
	name=$1
	shift
	envs=""
	while [ "$1" != "--" ]; do
		envs="$envs $1"
		shift
	done
	shift
	rc=0
	# shellcheck disable=SC2086 # envs is a list of words
	(cd "$D" && timeout 60 runuser -u nobody -- env \
	    SLURM_CONF="${SUB_CONF:-$D/slurm.conf}" MEMFLOOR_URL="$url" $envs \
	    sbatch --hold --parsable ${name:+-J "$name"} -o /dev/null "$@") \
	    >"$out" 2>"$err" || rc=$?
	job=$(sed -n 's/^\([0-9][0-9]*\).*/\1/p' "$out")
}
# show FIELD: the field of scontrol show job $job.
show() {
	scontrol show job "$job" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}
admits() { grep -c 'POST /v1/admit' "$mlog" || true; }

printf '#!/bin/sh\n#SBATCH --comment=memfloor:min-memory=20Gi\nhostname\n' \
    >"$D/floor20.sh"
printf '#!/bin/sh\nhostname\n' >"$D/plain.sh"
cp examples/llama-70b-full-reject.yaml "$D/too-big.yaml"
cp "$tmp/floor.yaml" "$D/floor40.yaml"
chmod a+r "$D"/*.sh "$D"/*.yaml

# A floor in the script's #SBATCH --comment: the cheapest card that holds
# 20Gi is the L40S, which the cluster does not have; of those it has, the
# H100 (per reference hour 2.00 against the B200's 2.42).
sub "" -- floor20.sh
is "#SBATCH floor: sbatch exit status" "$rc" 0
has "#SBATCH floor: one decision line on stderr" "$err" \
    '^memfloor: floor20.sh: H100 x1, \$2\.0000 per reference hour \(L40S, the cheapest, is not in this cluster\); gres gpu:h100:1, partition gpu, need 20Gi$'
is "#SBATCH floor: TresPerNode is the type memfloor chose" "$(show TresPerNode)" "gres:gpu:h100:1"
is "#SBATCH floor: Partition" "$(show Partition)" "gpu"
is "#SBATCH floor: the comment keeps the floor" "$(show Comment)" "memfloor:min-memory=20Gi"
has "#SBATCH floor: AdminComment has job_submit.lua's check" \
    "$(scontrol show job "$job" >"$tmp/job"; echo "$tmp/job")" \
    'AdminComment=memfloor: min-memory=20Gi holds: gpu:h100:1 on H100 80G'

# A floor in the environment, 88Gi: only the B200 holds it, in partition
# big with the constraint hbm3e; the floor is written into the comment.
sub floor88 MEMFLOOR_MIN_MEMORY=88Gi -- plain.sh
is "environment floor: sbatch exit status" "$rc" 0
is "environment floor: TresPerNode" "$(show TresPerNode)" "gres:gpu:b200:1"
is "environment floor: Partition" "$(show Partition)" "big"
is "environment floor: Features (the constraint)" "$(show Features)" "hbm3e"
is "environment floor: the floor is in the comment" "$(show Comment)" "memfloor:min-memory=88Gi"

# The user's count is kept, other gres too; a manifest in MEMFLOOR_JOB.
sub floor40 MEMFLOOR_MIN_MEMORY=40Gi -- --gres=gpu:2 plain.sh
is "the user's GPU count is kept" "$(show TresPerNode)" "gres:gpu:h100:2"

# Over two nodes, against the catalogue of H100s two a node: four GPUs are
# the gres a node, two of them; three are --gpus=h100:3, so that Slurm
# holds three, not the four of a gres a node of two.
mlog_main=$mlog
url=http://127.0.0.1:$nport
mlog=$tmp/nodes.log
sub nodes4 MEMFLOOR_MIN_MEMORY=60Gi -- --gres=gpu:4 plain.sh
is "two nodes, four GPUs: sbatch exit status" "$rc" 0
is "two nodes, four GPUs: the gres a node, two nodes" \
    "$(show TresPerNode) $(show TresPerJob) $(show NumNodes)" "gres:gpu:h100:2  2-2"
sub nodes3 MEMFLOOR_MIN_MEMORY=60Gi -- --gres=gpu:3 plain.sh
is "two nodes, three GPUs: sbatch exit status" "$rc" 0
has "two nodes, three GPUs: the decision line says --gpus" "$err" \
    '^memfloor: nodes3: H100 x3, .*; gpus h100:3, nodes 2, partition gpu, need 60Gi$'
is "two nodes, three GPUs: three for the job, none a node, two nodes" \
    "$(show TresPerJob) $(show TresPerNode) $(show NumNodes)" "gres:gpu:h100:3  2-2"
has "two nodes, three GPUs: AdminComment has job_submit.lua's check" \
    "$(scontrol show job "$job" >"$tmp/job"; echo "$tmp/job")" \
    'AdminComment=memfloor: min-memory=60Gi holds: gpu:h100:3 on H100 80G'
url=http://127.0.0.1:$port
mlog=$mlog_main
sub manifest MEMFLOOR_JOB=floor40.yaml -- plain.sh
is "MEMFLOOR_JOB: sbatch exit status" "$rc" 0
is "MEMFLOOR_JOB: the manifest's floor places it" "$(show TresPerNode)" "gres:gpu:h100:1"
has "MEMFLOOR_JOB: the decision names the manifest's job" "$err" '^memfloor: floor-40: H100 x1'

# A derived need whose floor, rounded up to a GiB, is above the card that
# holds it: 71.9 GB fits the H100's 72 GB usable, but the floor in effect is
# 75Gi (80.5 GB).  The comment gets the card's memory, so that
# job_submit.lua does not refuse the placement.
cat >"$D/infer.yaml" <<'EOF2'
apiVersion: memfloor.dev/v1
kind: Job
metadata: {name: infer}
spec:
  model: {name: meta-llama/Llama-3.1-8B}
  workload: {kind: inference, concurrency: 52, contextLength: 8192}
EOF2
chmod a+r "$D/infer.yaml"
sub "" MEMFLOOR_JOB=infer.yaml -- plain.sh
is "rounded floor above the card: sbatch exit status" "$rc" 0
has "rounded floor above the card: placed on the H100" "$err" \
    '^memfloor: infer: H100 x1, .*; gres gpu:h100:1, partition gpu, need 75Gi$'
is "rounded floor above the card: the comment has the card's memory" \
    "$(show Comment)" "memfloor:min-memory=80000000000"
# The job's fingerprint (design 23), which memfloor fingerprint gives for
# the same manifest and catalogue, follows in the comment: what an epilog
# posts the job's peak under (docs/slurm.md).
fp=$("$cli" fingerprint "$D/infer.yaml" -f "$cat" -m catalog/models)
scontrol show job "$job" >"$tmp/job"
has "the comment records the job's fingerprint" "$tmp/job" \
    "Comment=memfloor:min-memory=80000000000 memfloor:fingerprint=$fp( |\$)"

# Too big for every card: refused, with the suggested fix, and no job.
n=$(squeue -h | wc -l)
sub too-big MEMFLOOR_JOB=too-big.yaml -- plain.sh
is "too big: sbatch exit status" "$rc" 1
has "too big: the reason on stderr" "$err" \
    '^memfloor: llama-70b-full rejected: the job needs 1222\.2 GB per GPU, .* but the largest usable card, B200, holds 162\.0 GB'
has "too big: the suggested fix on stderr" "$err" \
    '^memfloor: suggested fix: lora \(checkpointing, lora\): set spec\.duration\.referenceHours: 135, spec\.workload\.gradientCheckpointing: true, spec\.workload\.method: lora; then B200 x1, \$327\.09 to finish, need 158Gi; a modelling decision'
has "too big: the code change on stderr" "$err" '^memfloor: code change: .*peft\.get_peft_model'
is "too big: no job was made" "$(squeue -h | wc -l)" "$n"
sub floor500 -- --comment=memfloor:min-memory=500Gi plain.sh
is "a floor above every card: refused" "$rc" 1
has "a floor above every card: the reason" "$err" \
    '^memfloor: floor500 rejected: minMemory 500Gi \(536.9 GB\) is more than the largest card in the catalogue, B200 \(180.0 GB\)$'
has "a floor above every card: no fix to suggest" "$err" '^memfloor: no fix in the catalogue makes it fit$'
sub both MEMFLOOR_MIN_MEMORY=1Gi MEMFLOOR_JOB=floor40.yaml -- plain.sh
is "a floor and a manifest together: refused" "$rc" 1
has "a floor and a manifest together: says to give one" "$err" 'states both a floor and a Job manifest'
sub badqty -- --comment=memfloor:min-memory=88Gx plain.sh
is "a bad floor: refused" "$rc" 1
has "a bad floor: memfloord's error names the field" "$err" \
    "^memfloor: spec\.resources\.gpu\.minMemory: '88Gx' is not a quantity"

sub gpus MEMFLOOR_MIN_MEMORY=20Gi -- --gpus=1 plain.sh
is "a floor with --gpus: refused" "$rc" 1
has "a floor with --gpus: says to use --gres" "$err" \
    '^memfloor: --gpus=1: memfloor asks for the GPUs with --gres; drop --gpus'
curl -s "$url/v1/catalog" >"$tmp/catalog.json" || true
is "GET /v1/catalog: each card's mapping" \
    "$(jget "$tmp/catalog.json" gpus.0.slurm gpus.1.slurm gpus.3.slurm | tr '\n' ' ')" \
    '{"gres": "gpu:a4000"} - {"constraint": "hbm3e", "gres": "gpu:b200", "partition": "big"} '

# A job that states nothing keeps its gres; memfloord is not asked.
a=$(admits)
sub plain -- --gres=gpu:a4000:1 plain.sh
is "nothing stated: sbatch exit status" "$rc" 0
is "nothing stated: TresPerNode is the user's" "$(show TresPerNode)" "gres:gpu:a4000:1"
is "nothing stated: no memfloor line" "$(grep -c memfloor "$err" || true)" 0
sleep 0.3
is "nothing stated: memfloord was not asked" "$(admits)" "$a"
is "nothing stated: no AdminComment" "$(show AdminComment)" ""

# Without the client side: job_submit.lua checks the floor on the
# controller against the table.
SUB_CONF=$D/bypass/slurm.conf
export SUB_CONF
sub small -- --comment=memfloor:min-memory=40Gi --gres=gpu:a4000:1 plain.sh
is "bypass, too small a type: refused" "$rc" 1
has "bypass, too small a type: job_submit.lua says why and what fits" "$err" \
    'memfloor: comment memfloor:min-memory=40Gi: gpu:a4000:1 may run on RTX-A4000 \(16G\), less than the floor; ask for one of, cheapest first: gpu:h100 \(H100, 80G\), gpu:b200 \(B200, 180G\)'
hasnt "bypass: the client side did not run" "$err" '^memfloor: small:'
sub small-env MEMFLOOR_MIN_MEMORY=40Gi -- --gres=gpu:a4000:1 plain.sh
is "bypass, floor in the environment, too small: refused" "$rc" 1
has "bypass, floor in the environment: named" "$err" 'environment MEMFLOOR_MIN_MEMORY=40Gi: gpu:a4000:1 may run on RTX-A4000'
sub untyped -- --comment=memfloor:min-memory=40Gi --gres=gpu:1 plain.sh
is "bypass, an untyped GPU that may be an A4000: refused" "$rc" 1
has "bypass, untyped: named" "$err" 'gpu:1 may run on RTX-A4000'
# The B200 is mapped to partition big, the H100 to gpu; the A4000 to none,
# so it may be in either, and the B200 is in gpu too.
sub untyped-gpu -- --comment=memfloor:min-memory=40Gi -p gpu --gres=gpu:1 plain.sh
is "bypass, untyped in a partition a bigger card is mapped to: refused" "$rc" 1
has "bypass, untyped in partition gpu: named" "$err" 'gpu:1 may run on RTX-A4000'
sub untyped-big -- --comment=memfloor:min-memory=100Gi -p big --gres=gpu:1 plain.sh
is "bypass, untyped in partition big: refused all the same" "$rc" 1
sub nogpu -- --comment=memfloor:min-memory=40Gi plain.sh
is "bypass, no GPU: refused" "$rc" 1
has "bypass, no GPU: named" "$err" 'min-memory=40Gi but the job asks for no GPU'
sub unknown -- --comment=memfloor:min-memory=40Gi --gres=gpu:v100:1 plain.sh
is "bypass, a type the table lacks: refused" "$rc" 1
has "bypass, a type the table lacks: named" "$err" 'gpu:v100:1 is of a GPU type memfloor.s table does not know'
sub badq -- --comment=memfloor:min-memory=40Gx --gres=gpu:h100:1 plain.sh
is "bypass, a bad quantity: refused" "$rc" 1
has "bypass, a bad quantity: named" "$err" "comment memfloor:min-memory: '40Gx' is not a byte quantity"
sub fits -- --comment=memfloor:min-memory=40Gi --gres=gpu:h100:1 plain.sh
is "bypass, a type that holds the floor: accepted" "$rc" 0
has "bypass, accepted: AdminComment" "$(scontrol show job "$job" >"$tmp/job"; echo "$tmp/job")" \
    'AdminComment=memfloor: min-memory=40Gi holds: gpu:h100:1 on H100 80G'
# scontrol update of a held job is checked too.
upd() {
	rc=0
	timeout 30 runuser -u nobody -- env SLURM_CONF="$D/slurm.conf" \
	    scontrol update jobid="$job" "$@" >"$out" 2>"$err" || rc=$?
}
upd TresPerNode=gres:gpu:a4000:1
is "scontrol update to too small a type: refused" "$rc:$(show TresPerNode)" "1:gres:gpu:h100:1"
upd TresPerNode=gres:gpu:b200:1
is "scontrol update to a type that holds it: done" "$rc:$(show TresPerNode)" "0:gres:gpu:b200:1"
has "scontrol update: the refusal is in slurmctld's log" "$D/slurmctld.log" \
    'memfloor: job fits of uid 65534 refused: comment memfloor:min-memory=40Gi: gpu:a4000:1 may run on RTX-A4000'
sub plain2 -- --gres=gpu:a4000:1 plain.sh
is "bypass, no floor: accepted as written" "$rc:$(show TresPerNode)" "0:gres:gpu:a4000:1"
sub plus -- --comment=memfloor:min-memory=+40Gi --gres=gpu:h100:1 plain.sh
is "bypass, a signed quantity (+40Gi) as memfloord reads it: accepted" "$rc" 0
unset SUB_CONF
# A floor in exponent form, as memfloord writes it back (1e11 is 100e9):
# recorded as it is, not as the card's memory.
sub exp MEMFLOOR_MIN_MEMORY=1e11 -- plain.sh
is "a floor of 1e11: recorded as 100e9" \
    "$rc:$(show Comment | sed 's/ memfloor:fingerprint=.*//')" "0:memfloor:min-memory=100e9"

# memfloord stopped: the default policy is open.
kill "$mpid"
mrc=0
wait "$mpid" 2>/dev/null || mrc=$?
is "memfloord: exit status on SIGTERM" "$mrc" 0
hasnt "memfloord: no sanitizer report" "$mlog" 'Sanitizer|runtime error'
sub down-open MEMFLOOR_MIN_MEMORY=20Gi -- --gres=gpu:h100:1 plain.sh
is "memfloord down, open: submitted" "$rc" 0
has "memfloord down, open: says so" "$err" \
    "^memfloor: memfloord at $url: connection refused; submitted as written \(MEMFLOOR_UNREACHABLE=open\)$"
is "memfloord down, open: the user's gres" "$(show TresPerNode)" "gres:gpu:h100:1"
is "memfloord down, open: the floor is kept" "$(show Comment)" "memfloor:min-memory=20Gi"
sub down-small MEMFLOOR_MIN_MEMORY=20Gi -- --gres=gpu:a4000:1 plain.sh
is "memfloord down, open: job_submit.lua still refuses too small a type" "$rc" 1
has "memfloord down, open, too small: job_submit.lua's reason" "$err" 'gpu:a4000:1 may run on RTX-A4000'
sub down-closed MEMFLOOR_UNREACHABLE=closed MEMFLOOR_MIN_MEMORY=20Gi -- --gres=gpu:h100:1 plain.sh
is "memfloord down, closed: stopped" "$rc" 1
has "memfloord down, closed: says so" "$err" \
    "^memfloor: memfloord at $url: connection refused; not submitted \(MEMFLOOR_UNREACHABLE=closed\)"
sub down-plain MEMFLOOR_UNREACHABLE=closed -- --gres=gpu:a4000:1 plain.sh
is "memfloord down, closed: a job that states nothing still goes" "$rc" 0

# A memfloord that accepts the connection but never answers.
python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
open(sys.argv[2], "w").close()
time.sleep(120)' "$hang_port" "$tmp/hang.ready" &
started="$! $started"
# Listening before sbatch runs, however slow the machine.
i=0
while [ ! -e "$tmp/hang.ready" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
url=http://127.0.0.1:$hang_port
t0=$(date +%s)
sub hang MEMFLOOR_TIMEOUT=1 MEMFLOOR_UNREACHABLE=closed MEMFLOOR_MIN_MEMORY=20Gi -- --gres=gpu:h100:1 plain.sh
t1=$(date +%s)
is "memfloord silent, closed: stopped" "$rc" 1
has "memfloord silent: a timeout" "$err" "^memfloor: memfloord at $url: timeout; not submitted"
if [ $((t1 - t0)) -le 5 ]; then
	pass "memfloord silent: sbatch took $((t1 - t0)) s with MEMFLOOR_TIMEOUT=1"
else
	fail "memfloord silent: sbatch took $((t1 - t0)) s with MEMFLOOR_TIMEOUT=1"
fi

summary
