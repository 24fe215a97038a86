--[[
slurm/job_submit.lua: memfloor on the controller (Slurm's job_submit/lua
plugin; design section 16; docs/slurm.md).

It runs inside slurmctld under its locks, so it makes no network call: it
checks a job against the table that `memfloor catalog slurm gpus.yaml`
writes (gres type, memory in bytes and GPU name of every card the
catalogue maps to Slurm).  A job that carries a memfloor floor, in its
comment (memfloor:min-memory=88Gi, which cli_filter.lua also writes) or
in its environment (MEMFLOOR_MIN_MEMORY), is refused when a GPU it asks for
is of a type with less memory than the floor, of a type the table does not
know, of no type where some type is too small, or when it asks for no GPU
at all.  An accepted job gets the check in its admin_comment.  A job
without a floor is not looked at.

This catches a user who skipped or edited the client side: cli_filter.lua
runs in the user's own sbatch and can be bypassed with another SLURM_CONF.
--]]

-- Settings.
local settings = {
	-- The table made by `memfloor catalog slurm`; nil for
	-- memfloor_gpus.lua in the directory of this script.
	table = nil,
}

local PREFIX = "memfloor: "
-- Whether the job being checked is a submission, whose user gets refusals.
local user_msg = true

local function script_dir()
	local src = debug.getinfo(1, "S").source or ""
	return string.match(src, "^@(.*)/[^/]*$") or "."
end

-- The table, read for each job that carries a floor so that a new table
-- takes effect at once; nil and why when it cannot be read.
local function load_table()
	local path = settings.table or (script_dir() .. "/memfloor_gpus.lua")
	local chunk, err = loadfile(path)
	if chunk == nil then
		return nil, err
	end
	setfenv(chunk, {})
	local ok, t = pcall(chunk)
	if not ok or type(t) ~= "table" then
		return nil, path .. ": not a memfloor table: " .. tostring(t)
	end
	for i, e in ipairs(t) do
		if type(e.memory) ~= "number" or type(e.gpu) ~= "string" then
			return nil, string.format("%s: entry %d has no memory "
			    .. "or gpu", path, i)
		end
	end
	return t
end

local units = {
	[""] = 1, k = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18,
	Ki = 2 ^ 10, Mi = 2 ^ 20, Gi = 2 ^ 30, Ti = 2 ^ 40, Pi = 2 ^ 50,
	Ei = 2 ^ 60,
}

-- A Kubernetes byte quantity ("88Gi", "94.5G", "1e11", "+88Gi") in
-- bytes, or nil.
local function bytes(s)
	s = string.gsub(s, "^%+", "", 1)
	local num, rest = string.match(s, "^(%d+%.?%d*)(.*)$")
	if num == nil then
		num, rest = string.match(s, "^(%.%d+)(.*)$")
	end
	if num == nil then
		return nil
	end
	local exp = string.match(rest, "^[eE]([%+%-]?%d+)$")
	local v
	if exp ~= nil then
		v = tonumber(num) * 10 ^ tonumber(exp)
	elseif units[rest] ~= nil then
		v = tonumber(num) * units[rest]
	end
	if v == nil or v < 1 or v ~= math.floor(v) or v >= 2 ^ 63 then
		return nil
	end
	return v
end

local function env_floor(job_desc)
	local ok, v = pcall(function()
		return job_desc.environment.MEMFLOOR_MIN_MEMORY
	end)
	if ok and v ~= nil and v ~= "" then
		return v
	end
	return nil
end

-- The floor text and where it came from, or nil.
local function floor_of(job_desc)
	local v = string.match(job_desc.comment or "",
	    "memfloor:min%-memory=([^%s,]*)")
	if v ~= nil then
		return v, "comment memfloor:min-memory"
	end
	v = env_floor(job_desc)
	if v ~= nil then
		return v, "environment MEMFLOOR_MIN_MEMORY"
	end
	return nil
end

-- The GPUs a job asks for: a list of {type = TYPE or nil, text = ...}
-- from --gres and --gpus*.
local function gpu_requests(job_desc)
	local out = {}
	for _, field in ipairs({ "tres_per_node", "tres_per_job",
	    "tres_per_task", "tres_per_socket" }) do
		for entry in string.gmatch(job_desc[field] or "", "[^,]+") do
			local e = string.gsub(entry, "^gres[:/]", "")
			local rest = string.match(e, "^gpu(.*)$")
			if rest ~= nil then
				rest = string.gsub(rest, "[:=]%d+$", "")
				local t = string.match(rest, "^:([^:=]+)$")
				table.insert(out, { type = t, text = e })
			end
		end
	end
	return out
end

-- Table entries whose memory holds the floor, as "type (GPU, 80G)".
local function fitting(t, floor)
	local out = {}
	for _, e in ipairs(t) do
		if e.type ~= nil and e.memory >= floor then
			table.insert(out, string.format("gpu:%s (%s, %s)", e.type,
			    e.gpu, e.memoryText or tostring(e.memory)))
		end
	end
	return out
end

local function refuse(job_desc, text, t, floor)
	local msg = PREFIX .. text
	if t ~= nil and floor ~= nil then
		local fit = fitting(t, floor)
		if #fit > 0 then
			msg = msg .. "; ask for one of, cheapest first: "
			    .. table.concat(fit, ", ")
		else
			msg = msg .. "; no GPU type of this cluster holds it"
		end
	end
	slurm.log_info("%sjob %s of uid %s refused: %s", PREFIX,
	    tostring(job_desc.name), tostring(job_desc.user_id), text)
	if user_msg then
		slurm.log_user("%s", msg)
	end
	return slurm.ERROR
end

-- The entry of the smallest memory, for a GPU asked for without a type.
-- Every card counts, whatever partition the job names: a card's
-- partition is where a placement on it goes, not the only cards that
-- partition holds (a card without one may be in any, a card with one in
-- others too).
local function untyped_memory(t)
	local least = nil
	for _, e in ipairs(t) do
		if least == nil or e.memory < least.memory then
			least = e
		end
	end
	return least
end

-- job reads the job's fields; the AdminComment is written to out, the
-- job_desc of a submission (nil for an update: Slurm 22.05 lets neither a
-- user's update change it nor job_modify send the user a message).
local function check(job, out)
	user_msg = out ~= nil
	local text, from = floor_of(job)
	if text == nil then
		return slurm.SUCCESS
	end
	local floor = bytes(text)
	if floor == nil then
		return refuse(job, string.format("%s: '%s' is not a byte "
		    .. "quantity such as 88Gi", from, text))
	end
	local t, err = load_table()
	if t == nil then
		slurm.log_error("%s%s", PREFIX, err)
		return refuse(job, string.format("%s=%s cannot be checked: "
		    .. "the controller has no memfloor table (the site runs "
		    .. "memfloor catalog slurm)", from, text))
	end
	local by_type = {}
	for _, e in ipairs(t) do
		if e.type ~= nil then
			by_type[e.type] = e
		end
	end
	local reqs = gpu_requests(job)
	if #reqs == 0 then
		return refuse(job, string.format("%s=%s but the job asks "
		    .. "for no GPU", from, text), t, floor)
	end
	local seen = {}
	for _, r in ipairs(reqs) do
		local e
		if r.type ~= nil then
			e = by_type[r.type]
			if e == nil then
				return refuse(job, string.format("%s=%s: %s "
				    .. "is of a GPU type memfloor's table does "
				    .. "not know", from, text, r.text), t, floor)
			end
		else
			e = untyped_memory(t)
		end
		if e == nil then
			return refuse(job, string.format("%s=%s cannot be "
			    .. "checked: memfloor's table is empty", from, text))
		end
		if e.memory < floor then
			return refuse(job, string.format("%s=%s: %s may "
			    .. "run on %s (%s), less than the floor", from, text,
			    r.text, e.gpu, e.memoryText or tostring(e.memory)),
			    t, floor)
		end
		table.insert(seen, string.format("%s on %s %s", r.text, e.gpu,
		    e.memoryText or tostring(e.memory)))
	end
	local note = string.format("memfloor: min-memory=%s holds: %s", text,
	    table.concat(seen, ", "))
	local old = job.admin_comment
	if old ~= nil and old ~= "" then
		old = string.gsub(old, ";? ?memfloor: min%-memory=.*$", "")
	end
	if old ~= nil and old ~= "" then
		note = old .. "; " .. note
	end
	if out ~= nil then
		out.admin_comment = note
	end
	return slurm.SUCCESS
end

local function guarded(job, out)
	local ok, rc = pcall(check, job, out)
	if ok then
		return rc
	end
	-- A fault in this script must not let a floor through unchecked,
	-- nor stop a job that states none.
	slurm.log_error("%sjob_submit.lua failed: %s", PREFIX, tostring(rc))
	local fok, floor = pcall(floor_of, job)
	if not fok or floor ~= nil then
		if out ~= nil then
			slurm.log_user("%sthe floor could not be checked: %s",
			    PREFIX, tostring(rc))
		end
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	return guarded(job_desc, job_desc)
end

-- scontrol update: the job as it would be, the update's fields over the
-- job's, so that a gres changed after submission is checked too.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	local job = setmetatable({}, { __index = function(_, key)
		local v = job_desc[key]
		if v == nil then
			v = job_rec[key]
		end
		return v
	end })
	return guarded(job, nil)
end
