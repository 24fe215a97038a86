#!/bin/sh
# tests/integration/models.sh: model directories (-m) beside the shipped models, their reload on
# SIGHUP, and a model file that does not parse.
#
# A site directory holds a model of its own (acme/site-8b, Llama 3.1 8B's config), Llama 3.1 8B
# itself with 16 layers instead of 32 (it must replace the shipped one), a config whose
# num_hidden_layers is 0 (line 4) and one that is not JSON (line 3).  `memfloord -n` must fail
# on them; memfloord must log each as FILE:LINE: problem and serve the rest with the shipped
# models; SIGHUP must read the directories again, keeping a model whose file broke, the models
# of an organisation's directory that cannot be read (the site's own meta-llama, not the
# shipped one's) and the whole set when a directory is gone; the command line must read the
# directories the same way.
#
# Parameter counts by hand (Llama 3.1 8B: hidden 4096, intermediate 14336, 32 heads of 128, 8 KV
# heads, vocabulary 128256, untied): a layer is q and o 2 x 4096 x 4096 = 33554432, k and v
# 2 x 4096 x 1024 = 8388608, the MLP 3 x 4096 x 14336 = 176160768 and two norms 8192: 218112000.
# The embeddings and the head are 2 x 128256 x 4096 = 1050673152, the final norm 4096.  32 layers:
# 6979584000 + 1050677248 = 8030261248 (the published count); 16 layers: 3489792000 + 1050677248 =
# 4540469248.
set -eu

top=${MF_TOP:-.}
cd "$top"
daemon_bin=${MEMFLOORD:-build/memfloord}
cli=${MEMFLOOR:-build/memfloor}
check_name=models
pid=""
cleanup() {
	stop_all "$pid"
}
. "$top/tests/lib/check.sh"

# has NAME FILE PATTERN: FILE has a line matching the extended regex.
has() {
	if grep -Eq -- "$3" "$2"; then
		pass "$1"
	else
		fail "$1: no /$3/ in: $(head -c 400 "$2")"
	fi
}
hasnt() {
	if grep -Eq -- "$3" "$2"; then
		fail "$1: /$3/ in: $(grep -E -- "$3" "$2" | head -c 300)"
	else
		pass "$1"
	fi
}

site=$tmp/site
mkdir -p "$site/acme" "$site/meta-llama"
cp catalog/models/meta-llama/Llama-3.1-8B.json "$site/acme/site-8b.json"
sed 's/"num_hidden_layers": 32,/"num_hidden_layers": 16,/' \
    catalog/models/meta-llama/Llama-3.1-8B.json >"$site/meta-llama/Llama-3.1-8B.json"
printf '{\n  "model_type": "llama",\n  "hidden_size": 4096,\n  "num_hidden_layers": 0\n}\n' \
    >"$site/acme/zero.json"
printf '{\n  "model_type": "llama",\n  "hidden_size": ,\n}\n' >"$site/acme/bad.json"

# --- memfloord -n fails on a file that does not parse -----------------------------------
rc=0
"$daemon_bin" -n -f catalog/gpus.yaml -m "$site" >"$tmp/n.out" 2>&1 || rc=$?
is "memfloord -n: a bad model file fails the check" "$rc" 1
has "memfloord -n: says FILE:LINE: problem" "$tmp/n.out" \
    "$site/acme/(bad\.json:3: not valid JSON|zero\.json:4: acme/zero\.num_hidden_layers: 0 is out of range)"
hasnt "memfloord -n: not configuration OK" "$tmp/n.out" 'configuration OK'

# --- served: the shipped models, the site's, the bad files left out --------------------------
# No -m catalog/models: start_daemon's own -m names the shipped directory, which is read once.
serve "$tmp/d.log" -m "$site"
base=http://127.0.0.1:$port
has "start-up: the file whose layers are 0, FILE:LINE: problem" "$tmp/d.log" \
    " error $site/acme/zero\.json:4: acme/zero\.num_hidden_layers: 0 is out of range \[1, 4096\]; left out"
has "start-up: the file that is not JSON, FILE:LINE: problem" "$tmp/d.log" \
    " error $site/acme/bad\.json:3: not valid JSON"
# The shipped directory's models, and the site's two good files.
nshipped=$(find catalog/models -name '*.json' | wc -l | tr -d ' ')
has "start-up: the models directories and their counts" "$tmp/d.log" \
    "models loaded: $((nshipped + 1)) in service \($nshipped from [^,]*catalog/models, 2 from $site;"
curl -s -m 5 "$base/v1/models" >"$tmp/models.json"
has "GET /v1/models: the site's own model" "$tmp/models.json" \
    '\{"name":"acme/site-8b","parameters":8030261248\}'
has "GET /v1/models: the shipped ones stay (Llama 3.1 70B)" "$tmp/models.json" \
    '"name":"meta-llama/Llama-3.1-70B"'
has "GET /v1/models: the site's Llama 3.1 8B (16 layers) replaces the shipped one" \
    "$tmp/models.json" '\{"name":"meta-llama/Llama-3.1-8B","parameters":4540469248\}'
hasnt "GET /v1/models: no model of the bad files" "$tmp/models.json" 'acme/(zero|bad)'

job() {
	printf 'apiVersion: memfloor.dev/v1\nkind: Job\nmetadata:\n  name: m\nspec:\n  model:\n    name: %s\n  workload:\n    sequenceLength: 4096\n' "$1"
}
job acme/site-8b >"$tmp/site.yaml"
code=$(curl -s -m 10 -o "$tmp/est.json" -w '%{http_code}' --data-binary @"$tmp/site.yaml" \
    "$base/v1/estimate")
is "POST /v1/estimate: the site's model is estimated" "$code" 200
has "POST /v1/estimate: with its parameters" "$tmp/est.json" '"parameters":8030261248,'
job acme/nope >"$tmp/nope.yaml"
code=$(curl -s -m 10 -o "$tmp/nope.json" -w '%{http_code}' --data-binary @"$tmp/nope.yaml" \
    "$base/v1/estimate")
is "POST /v1/estimate: an unknown model is a 400" "$code" 400
has "an unknown model: named, and where the known ones are listed" "$tmp/nope.json" \
    "'acme/nope' is not a known model: GET /v1/models lists the models served"
has "an unknown model: how to give its config" "$tmp/nope.json" \
    "give its config.json as spec.model.config, or its URL as spec.model.configUrl"
hasnt "an unknown model: not said to be 'not a shipped model'" "$tmp/nope.json" 'shipped model'

# --- SIGHUP reads the directories again -------------------------------------------------------
# A new model; site-8b's file broken: its last good model stays.
cp catalog/models/Qwen/Qwen2.5-7B.json "$site/acme/new.json"
printf '{ "model_type": "llama", \n' >"$site/acme/site-8b.json"
kill -HUP "$pid"
wait_log "$tmp/d.log" 'models SIGHUP: ' || true
has "SIGHUP: the broken file, said, its model kept" "$tmp/d.log" \
    " error $site/acme/site-8b\.json:[0-9]+: .*; keeping the model it held until now"
has "SIGHUP: the models reloaded" "$tmp/d.log" \
    "models SIGHUP: $((nshipped + 2)) in service \($nshipped from [^,]*, 3 from $site;"
curl -s -m 5 "$base/v1/models" >"$tmp/models.json"
has "after SIGHUP: the new model" "$tmp/models.json" '\{"name":"acme/new","parameters":7615616512\}'
has "after SIGHUP: the broken file's last good model" "$tmp/models.json" \
    '\{"name":"acme/site-8b","parameters":8030261248\}'
# An organisation's directory that cannot be read (a symlink to nothing, which root cannot
# read either): its models stay, the site's Llama 3.1 8B of 16 layers among them, while the
# shipped directory's meta-llama is read as before.
mv "$site/meta-llama" "$tmp/meta-llama.away"
ln -s "$tmp/nowhere" "$site/meta-llama"
kill -HUP "$pid"
wait_log "$tmp/d.log" 'models SIGHUP: ' 2 || true
has "SIGHUP: an organisation's directory that cannot be read, said, its model kept" "$tmp/d.log" \
    " error $site/meta-llama: No such file or directory; keeping the model it held until now$"
grep 'models SIGHUP: ' "$tmp/d.log" | tail -n 1 >"$tmp/last.log"
has "SIGHUP: its model counted in" "$tmp/last.log" \
    "models SIGHUP: $((nshipped + 2)) in service \($nshipped from [^,]*, 3 from $site;"
curl -s -m 5 "$base/v1/models" >"$tmp/models3.json"
is "after SIGHUP: the same models, the site's Llama 3.1 8B kept" "$(cmp -s "$tmp/models.json" \
    "$tmp/models3.json" && echo same)" same
rm "$site/meta-llama"
mv "$tmp/meta-llama.away" "$site/meta-llama"
# The whole directory gone: the set in service stays.
mv "$site" "$tmp/site.gone"
kill -HUP "$pid"
wait_log "$tmp/d.log" 'models reload \(SIGHUP\) failed' || true
has "SIGHUP without the directory: said, the models kept" "$tmp/d.log" \
    "models reload \(SIGHUP\) failed, keeping the $((nshipped + 2)) in service: .*$site"
curl -s -m 5 "$base/v1/models" >"$tmp/models2.json"
is "after a failed reload: the same models" "$(cmp -s "$tmp/models.json" "$tmp/models2.json" &&
    echo same)" same
mv "$tmp/site.gone" "$site"
stop_all "$pid"
pid=""

# --- the command line reads them the same way --------------------------------------------------
cp catalog/models/meta-llama/Llama-3.1-8B.json "$site/acme/site-8b.json"
rc=0
"$cli" estimate "$tmp/site.yaml" -m "$site" -o json >"$tmp/cli.json" 2>"$tmp/cli.err" || rc=$?
is "memfloor estimate -m: the site's model, exit 0" "$rc" 0
has "memfloor estimate -m: its parameters" "$tmp/cli.json" '"parameters":8030261248,'
has "memfloor estimate -m: the bad file said, left out" "$tmp/cli.err" \
    "^memfloor: $site/acme/zero\.json:4: acme/zero\.num_hidden_layers: 0 is out of range \[1, 4096\]; left out$"
job meta-llama/Llama-3.1-70B >"$tmp/70b.yaml"
rc=0
"$cli" estimate "$tmp/70b.yaml" -m "$site" -o json >"$tmp/cli.json" 2>/dev/null || rc=$?
is "memfloor estimate -m: the shipped models stay" "$rc" 0

summary
