--[[
slurm/cli_filter.lua: memfloor in front of sbatch, salloc and srun (Slurm's
cli_filter/lua plugin; design section 16; docs/slurm.md).

A job states its GPU memory floor, or a whole memfloor Job manifest, in its
comment (so that it can live in the batch script) or in the environment:

    #SBATCH --comment=memfloor:min-memory=88Gi
    #SBATCH --comment=memfloor:job=train.yaml
    MEMFLOOR_MIN_MEMORY=88Gi sbatch train.sh
    MEMFLOOR_JOB=train.yaml sbatch train.sh

A comment that says memfloor:... wins over the environment.  The script
sends the Job to memfloord, sets the GPUs (type and count: --gres a node,
or --gpus for the job), nodes, partition and constraint of the placement
memfloord chose, adds the floor in effect to
the comment (memfloor:min-memory=QTY, which job_submit.lua checks on the
controller) with the job's fingerprint (memfloor:fingerprint=HEX, which an
epilog posts the job's measured peak under: docs/slurm.md) and prints one
line with the decision.  A rejection prints the
reason and the suggested fix and stops the submission.  A job that states
nothing is left untouched and memfloord is not asked.

This side is advice: a user can skip it (another SLURM_CONF).  The
controller's job_submit.lua is what enforces a floor.
--]]

-- Settings.  The site sets them here, or in the environment of the
-- commands (for instance in /etc/profile.d), which wins.
local settings = {
	-- MEMFLOOR_URL: memfloord, http only.
	url = "http://127.0.0.1:8080",
	-- MEMFLOOR_TIMEOUT: seconds for the connection and for each read.
	timeout = 2,
	-- MEMFLOOR_UNREACHABLE: what a job that stated a floor gets when
	-- memfloord cannot be reached or fails (no answer, a 5xx):
	--   open    submit it as written, with its floor in the comment so
	--           that job_submit.lua still refuses a gres too small for it;
	--   closed  stop the submission.
	unreachable = "open",
}

local PREFIX = "memfloor: "

local function say(fmt, ...)
	io.stderr:write(PREFIX .. string.format(fmt, ...) .. "\n")
end

local function setting(name, env)
	local v = os.getenv(env)
	if v ~= nil and v ~= "" then
		return v
	end
	return settings[name]
end

-- "memfloor:KEY=VALUE" words of a comment (separated by spaces or commas).
local function comment_words(comment)
	local found = {}
	for key, value in string.gmatch(comment or "",
	    "memfloor:([%w%-]+)=([^%s,]*)") do
		found[key] = value
	end
	return found
end

-- What the job states: {min_memory = QTY} or {job = PATH}, nil for
-- nothing, or nil and an error.
local function stated(options)
	local words = comment_words(options["comment"])
	-- A fingerprint is what cli_filter.lua recorded (a comment copied
	-- from an earlier job), not a statement.
	words.fingerprint = nil
	local from = "--comment"
	if next(words) == nil then
		words = {
			["min-memory"] = os.getenv("MEMFLOOR_MIN_MEMORY"),
			job = os.getenv("MEMFLOOR_JOB"),
		}
		from = "the environment (MEMFLOOR_MIN_MEMORY, MEMFLOOR_JOB)"
		if words["min-memory"] == "" then words["min-memory"] = nil end
		if words.job == "" then words.job = nil end
		if words["min-memory"] == nil and words.job == nil then
			return nil
		end
	end
	for key in pairs(words) do
		if key ~= "min-memory" and key ~= "job" then
			return nil, string.format("%s: memfloor:%s is not "
			    .. "memfloor:min-memory=QTY or memfloor:job=FILE",
			    from, key)
		end
	end
	if words["min-memory"] ~= nil and words.job ~= nil then
		return nil, from .. " states both a floor and a Job manifest: "
		    .. "give one (the manifest's spec.resources.gpu.minMemory "
		    .. "holds a floor)"
	end
	if words["min-memory"] == "" or words.job == "" then
		return nil, from .. ": memfloor:min-memory= or memfloor:job= "
		    .. "is empty"
	end
	return { min_memory = words["min-memory"], job = words.job }
end

-- The gres option as a list of entries without the "gres:" prefix, and
-- the GPU count the user asked for (nil when they did not).
local function split_gres(gres)
	local keep, count = {}, nil
	for entry in string.gmatch(gres or "", "[^,]+") do
		entry = string.gsub(entry, "^gres:", "")
		if entry == "gpu" or string.find(entry, "^gpu:") then
			local n = string.match(entry, ":(%d+)$")
			count = tonumber(n) or 1
		elseif entry ~= "" then
			table.insert(keep, entry)
		end
	end
	return keep, count
end

local function read_file(path)
	local f, err = io.open(path, "rb")
	if f == nil then
		return nil, err
	end
	local body = f:read("*a")
	f:close()
	return body
end

-- The request body and its content type.
local function request_body(options, want, cjson)
	if want.job ~= nil then
		local body, err = read_file(want.job)
		if body == nil then
			return nil, nil, "memfloor:job: " .. err
		end
		local kind = string.find(body, "^%s*{") and "application/json"
		    or "application/yaml"
		return body, kind
	end
	local _, count = split_gres(options["gres"])
	local name = options["job-name"]
	if name == nil or name == "" then
		-- sbatch's default: the script's base name.
		local ok, argv = pcall(function() return options.argv end)
		local script = ok and type(argv) == "table" and argv[1] or nil
		name = script and string.match(script, "([^/]+)$")
		    or options["type"] or "slurm-job"
	end
	local job = {
		apiVersion = "memfloor.dev/v1",
		kind = "Job",
		metadata = { name = name },
		spec = { resources = { gpu = {
			minMemory = want.min_memory, count = count or 1 } } },
	}
	return cjson.encode(job), "application/json"
end

-- POST the Job; the status and body, or nil and why memfloord could not
-- be reached.
local function post(url, body, kind)
	local ok, http = pcall(require, "socket.http")
	if not ok then
		return nil, "the Lua module socket.http is missing (lua-socket)"
	end
	local ltn12 = require("ltn12")
	local chunks = {}
	http.TIMEOUT = tonumber(setting("timeout", "MEMFLOOR_TIMEOUT")) or 2
	local r, code = http.request({
		url = url .. "/v1/admit",
		method = "POST",
		headers = {
			["content-type"] = kind,
			["content-length"] = tostring(#body),
			["accept"] = "application/json",
		},
		source = ltn12.source.string(body),
		sink = ltn12.sink.table(chunks),
	})
	if r == nil then
		return nil, tostring(code)
	end
	return code, table.concat(chunks)
end

local function is_null(v)
	return v == nil or type(v) == "userdata"
end

-- The first placement, cheapest first, on a card the catalogue maps to
-- Slurm.
local function slurm_placement(d)
	if not is_null(d.placement) and type(d.placement.slurm) == "table" then
		return d.placement
	end
	for _, p in ipairs(type(d.alternatives) == "table" and d.alternatives
	    or {}) do
		if type(p.slurm) == "table" then
			return p
		end
	end
	return nil
end

local function money(p)
	if not is_null(p.cost) then
		return string.format("$%.2f to finish", p.cost)
	end
	return string.format("$%.4f per reference hour", p.costPerReferenceHour)
end

-- Set the GPUs, nodes, partition and constraint to the placement's.
-- memfloord's placement.slurm asks for exactly the placement's GPUs: the
-- gres a node (--gres), or, over nodes its count does not divide by, the
-- job's GPUs (--gpus, which Slurm spreads over --nodes), in place of the
-- user's GPU gres.
local function apply(options, p, d)
	local keep = split_gres(options["gres"])
	local what = {}
	if p.slurm.gres ~= nil then
		table.insert(keep, p.slurm.gres)
		table.insert(what, "gres " .. p.slurm.gres)
	else
		options["gpus"] = p.slurm.gpus
		table.insert(what, "gpus " .. p.slurm.gpus)
	end
	local gres = table.concat(keep, ",")
	if gres ~= "" then
		options["gres"] = gres
	elseif (options["gres"] or "") ~= "" then
		-- Slurm refuses an empty --gres, and --gpus beside a GPU gres
		-- it does not divide; "none" asks for no gres.
		options["gres"] = "none"
	end
	if type(p.slurm.nodes) == "number" then
		options["nodes"] = string.format("%d", p.slurm.nodes)
		table.insert(what, "nodes " .. options["nodes"])
	end
	if p.slurm.partition ~= nil then
		options["partition"] = p.slurm.partition
		table.insert(what, "partition " .. p.slurm.partition)
	end
	if p.slurm.constraint ~= nil then
		options["constraint"] = p.slurm.constraint
		table.insert(what, "constraint " .. p.slurm.constraint)
	end
	local alt = ""
	if p ~= d.placement then
		alt = string.format(" (%s, the cheapest, is not in this cluster)",
		    d.placement.gpu)
	end
	say("%s: %s x%d, %s%s; %s, need %s", d.job, p.gpu, p.count,
	    money(p), alt, table.concat(what, ", "), d.minMemory)
end

-- Add memfloor:KEY=VALUE to the comment.
local function record(options, key, value)
	local comment = options["comment"] or ""
	if comment ~= "" then
		comment = comment .. " "
	end
	options["comment"] = comment .. "memfloor:" .. key .. "=" .. value
end

-- Add memfloor:min-memory=QTY to the comment unless it has one.
local function record_floor(options, qty)
	if comment_words(options["comment"])["min-memory"] == nil then
		record(options, "min-memory", qty)
	end
end

-- Put memfloor:fingerprint=HEX, the job as memfloor placed it (design
-- 23), in the comment, in place of any there (a comment copied from an
-- earlier job): what an epilog posts the job's measured peak under
-- (docs/slurm.md).
local function record_fingerprint(options, d)
	local fp = d.fingerprint
	if type(fp) == "string" and string.match(fp, "^%x+$") ~= nil
	    and #fp == 32 then
		local rest = string.gsub(options["comment"] or "",
		    "%s*memfloor:fingerprint=[^%s,]*", "")
		options["comment"] = string.match(rest, "^%s*(.-)$")
		record(options, "fingerprint", fp)
	end
end

local units = { [""] = 1, k = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15,
	E = 1e18, Ki = 2 ^ 10, Mi = 2 ^ 20, Gi = 2 ^ 30, Ti = 2 ^ 40,
	Pi = 2 ^ 50, Ei = 2 ^ 60 }

-- The floor to record for the controller: the decision's minMemory, or
-- the placed card's memory when that is less.  A derived need's floor is
-- rounded up to a whole GiB and may be above the card that holds the need
-- (71.9 GB fits 72 GB usable of 80G, but the floor is 75Gi); a card with
-- at least the recorded memory holds the job either way.
local function floor_to_record(d, p)
	local text = tostring(d.minMemory)
	local n, unit = string.match(text, "^(%d+%.?%d*)(%a*)$")
	local bytes = n ~= nil and units[unit] ~= nil
	    and tonumber(n) * units[unit] or nil
	local m, exp = string.match(text, "^(%d+%.?%d*)[eE]([%+%-]?%d+)$")
	if m ~= nil then
		bytes = tonumber(m) * 10 ^ tonumber(exp)
	end
	if bytes ~= nil and (type(p.memoryBytes) ~= "number"
	    or bytes <= p.memoryBytes) then
		return d.minMemory
	end
	return string.format("%.0f", p.memoryBytes)
end

local function list(t, sep)
	local out = {}
	for _, v in ipairs(type(t) == "table" and t or {}) do
		table.insert(out, tostring(v))
	end
	return table.concat(out, sep)
end

local function rejected(d)
	say("%s rejected: %s", d.job or "job", d.reason or "no reason given")
	local fix
	for _, f in ipairs(type(d.fixes) == "table" and d.fixes or {}) do
		if f.fix == d.suggested then
			fix = f
		end
	end
	if fix == nil then
		say("no fix in the catalogue makes it fit")
		return
	end
	local set = {}
	for k, v in pairs(type(fix.manifestChange) == "table"
	    and fix.manifestChange or {}) do
		table.insert(set, k .. ": " .. tostring(v))
	end
	table.sort(set)
	local where = "no card"
	if not is_null(fix.placement) then
		where = string.format("%s x%d, %s", fix.placement.gpu,
		    fix.placement.count, money(fix.placement))
	end
	say("suggested fix: %s (%s): set %s; then %s, need %s%s", fix.fix,
	    list(fix.fixes, ", "), table.concat(set, ", "), where,
	    tostring(fix.minMemory), fix.modellingDecision == true
	    and "; a modelling decision: it changes what is trained" or "")
	if type(fix.codeChange) == "table" and #fix.codeChange > 0 then
		say("code change: %s", list(fix.codeChange, "; "))
	end
end

-- memfloord could not be reached or failed: the site's policy.
local function unreachable(options, want, url, why)
	local policy = setting("unreachable", "MEMFLOOR_UNREACHABLE")
	if policy == "closed" then
		say("memfloord at %s: %s; not submitted "
		    .. "(MEMFLOOR_UNREACHABLE=closed): try again later", url, why)
		return slurm.ERROR
	end
	if want.min_memory ~= nil then
		record_floor(options, want.min_memory)
	end
	say("memfloord at %s: %s; submitted as written "
	    .. "(MEMFLOOR_UNREACHABLE=open)", url, why)
	return slurm.SUCCESS
end

local function pre_submit(options)
	-- A step inside an allocation has its GPUs already.
	if options["type"] == "srun" and os.getenv("SLURM_JOB_ID") ~= nil then
		return slurm.SUCCESS
	end
	local want, err = stated(options)
	if want == nil then
		if err ~= nil then
			say("%s", err)
			return slurm.ERROR
		end
		return slurm.SUCCESS
	end
	for _, o in ipairs({ "gpus", "gpus-per-node", "gpus-per-task",
	    "gpus-per-socket" }) do
		local v = options[o]
		if v ~= nil and v ~= "" and v ~= "0" then
			say("--%s=%s: memfloor asks for the GPUs with --gres; "
			    .. "drop --%s (give the count as --gres=gpu:N)",
			    o, v, o)
			return slurm.ERROR
		end
	end
	local cjson = require("cjson")
	local body, kind, rerr = request_body(options, want, cjson)
	if body == nil then
		say("%s", rerr)
		return slurm.ERROR
	end
	local url = string.gsub(setting("url", "MEMFLOOR_URL"), "/+$", "")
	local status, answer = post(url, body, kind)
	if status == nil then
		return unreachable(options, want, url, answer)
	end
	local ok, d = pcall(cjson.decode, answer)
	if not ok or type(d) ~= "table" then
		return unreachable(options, want, url, string.format(
		    "HTTP %s with an answer that is not JSON", status))
	end
	if status == 400 or status == 413 or status == 415 then
		say("%s", d.error or ("HTTP " .. status))
		return slurm.ERROR
	end
	if status == 403 then
		rejected(d)
		return slurm.ERROR
	end
	if status ~= 200 then
		return unreachable(options, want, url, string.format(
		    "HTTP %s: %s", status, tostring(d.error)))
	end
	local p = slurm_placement(d)
	if p == nil then
		say("%s: %s fits, but no card the catalogue maps to Slurm "
		    .. "does (the catalogue's slurm: entries)", d.job,
		    d.placement.gpu)
		return slurm.ERROR
	end
	apply(options, p, d)
	record_floor(options, floor_to_record(d, p))
	record_fingerprint(options, d)
	return slurm.SUCCESS
end

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
	local ok, rc = pcall(pre_submit, options)
	if ok then
		return rc
	end
	-- A fault in this script is treated as memfloord failing.
	local sok, want = pcall(stated, options)
	if not sok or want == nil then
		want = {}
	end
	return unreachable(options, want, setting("url", "MEMFLOOR_URL"),
	    "cli_filter.lua failed: " .. tostring(rc))
end

function slurm_cli_post_submit(offset, job_id, step_id)
	return slurm.SUCCESS
end
