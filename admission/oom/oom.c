#include "oom.h"

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Matching works on the raw text: a space in a pattern matches one or more
 * whitespace characters, so a message wrapped over lines or indented reads
 * as the one line PyTorch printed.  Every step either advances the cursor
 * over what it matched or leaves it where it was and records, when it got
 * furthest so far, what it expected there; that record becomes the error.
 */
enum fault {
	FAULT_SHAPE, /* not as PyTorch prints it, or cut off (cut) */
	FAULT_RANGE, /* a figure is above MF_OOM_MAX_BYTES */
	FAULT_GPU0,  /* the message stops after "GPU " (device_index) */
	FAULT_ASYNC0 /* after "Allocation on device " (device_index) */
};

struct cur {
	const char *s;
	size_t len;
	size_t pos;
	bool failed;      /* a failure has been recorded */
	size_t fail;      /* where the furthest failure happened */
	const char *want; /* what was expected there */
	bool want_lit;    /* want is literal message text, not a description */
	bool cut;         /* the text ended there */
	enum fault fault; /* what the failure there is */
};

#define SNIP 24      /* characters of the text quoted in an error */
#define PAREN_MAX 64 /* "(e.g., CUDA Graphs)" and the like */

static bool
is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' ||
	    ch == '\v' || ch == '\f';
}

static bool
is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static size_t
skip_ws(const struct cur *c, size_t p)
{
	while (p < c->len && is_ws(c->s[p]))
		p++;
	return p;
}

/*
 * Record a failure at p unless one further on is already known.  Of
 * failures at one place the last wins, except that one where the text ran
 * out is kept: a truncated message reads as cut off, not as malformed.
 */
static bool
miss(struct cur *c, size_t p, const char *want, bool want_lit, bool cut,
    enum fault fault)
{
	p = skip_ws(c, p);
	cut = cut || p >= c->len;
	if (c->failed && (p < c->fail || (p == c->fail && c->cut && !cut)))
		return false;
	c->failed = true;
	c->fail = p;
	c->want = want;
	c->want_lit = want_lit;
	c->cut = cut;
	c->fault = fault;
	return false;
}

/*
 * Match pat at p; on success store the end in *end.  On failure say in
 * *ran_out (may be NULL) whether the text ended first.  Records nothing.
 */
static bool
match(const struct cur *c, size_t p, const char *pat, size_t *end,
    bool *ran_out)
{
	for (; *pat != '\0'; pat++) {
		if (p >= c->len)
			break;
		if (*pat == ' ') {
			if (!is_ws(c->s[p]))
				break;
			p = skip_ws(c, p);
		} else {
			if (c->s[p] != *pat)
				break;
			p++;
		}
	}
	if (ran_out != NULL)
		*ran_out = p >= c->len;
	if (*pat != '\0')
		return false;
	*end = p;
	return true;
}

/* Match pat at the cursor and advance, or record what was expected. */
static bool
lit(struct cur *c, const char *pat)
{
	size_t end;
	bool ran_out;

	if (match(c, c->pos, pat, &end, &ran_out)) {
		c->pos = end;
		return true;
	}
	while (*pat == ' ')
		pat++;
	return miss(c, c->pos, pat, true, ran_out, FAULT_SHAPE);
}

/* A decimal integer of at most max; for device indices and pids. */
static bool
num(struct cur *c, int64_t max, int64_t *out)
{
	size_t p = c->pos;
	int64_t v = 0;

	if (p >= c->len || !is_digit(c->s[p]))
		return miss(c, p, "a number", false, false, FAULT_SHAPE);
	while (p < c->len && is_digit(c->s[p])) {
		if (v > (max - (c->s[p] - '0')) / 10)
			return miss(c, c->pos, "a smaller number", false, false,
			    FAULT_SHAPE);
		v = v * 10 + (c->s[p] - '0');
		p++;
	}
	*out = v;
	c->pos = p;
	return true;
}

/*
 * The unit after a format_size() number: 0 for bytes, k for 1024^k.
 * "bytes" only follows a whole number.
 */
static int
unit(struct cur *c, size_t *p, bool whole)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB" };
	size_t end;
	bool ran_out = false, r;
	int k;

	for (k = 0; k < 4; k++) {
		if (k == 0 && !whole)
			continue;
		if (match(c, *p, units[k], &end, &r)) {
			*p = end;
			return k;
		}
		ran_out = ran_out || r;
	}
	miss(c, *p, "a unit (bytes, KiB, MiB or GiB)", false, ran_out,
	    FAULT_SHAPE);
	return -1;
}

/*
 * The digits of a figure as mant / 10^nfrac; *whole when there is no
 * decimal point.  format_size() prints two decimals; none or one is taken
 * too.
 */
static bool
mantissa(struct cur *c, size_t *p, int64_t *mant, int *nfrac, bool *whole)
{
	int64_t m = 0;
	int nf = -1;

	if (*p >= c->len || !is_digit(c->s[*p]))
		return miss(c, *p, "a size such as 7.33 GiB", false, false,
		    FAULT_SHAPE);
	for (; *p < c->len; (*p)++) {
		if (c->s[*p] == '.' && nf < 0 && *p + 1 >= c->len)
			return miss(c, *p + 1, "the decimals of a size", false,
			    true, FAULT_SHAPE);
		if (c->s[*p] == '.' && nf < 0 && is_digit(c->s[*p + 1])) {
			nf = 0;
			continue;
		}
		if (!is_digit(c->s[*p]))
			break;
		if (nf >= 2)
			return miss(c, *p, "at most two decimals", false, false,
			    FAULT_SHAPE);
		if (m > (INT64_MAX - 9) / 10)
			return miss(c, c->pos, "a figure up to 1 EiB", false,
			    false, FAULT_RANGE);
		m = m * 10 + (c->s[*p] - '0');
		if (nf >= 0)
			nf++;
	}
	*mant = m;
	*nfrac = nf < 0 ? 0 : nf;
	*whole = nf < 0;
	return true;
}

/*
 * A format_size() figure in bytes: mant / 10^nfrac * 1024^k, rounded to the
 * nearest byte, with k in *unit_k.  It is only known to the printed
 * precision, which the unit gives and the bytes alone do not (slack).  The
 * whole part and the decimals are scaled apart, so the product never leaves
 * 64 bits: the whole part is checked against MF_OOM_MAX_BYTES before it is
 * scaled, and the decimals (under 100) times 2^30 stay below 2^37.  A half
 * byte never occurs: frac * 2^(10k) / 100 for k >= 1 has a denominator
 * dividing 25.
 */
static bool
size_unit(struct cur *c, int64_t *out, int *unit_k)
{
	static const int64_t pow10[] = { 1, 10, 100 };
	size_t p = c->pos;
	int64_t mant, ipart, frac, unitb, den, bytes;
	int nfrac, k;
	bool whole;

	if (!mantissa(c, &p, &mant, &nfrac, &whole))
		return false;
	if (p >= c->len || !is_ws(c->s[p]))
		return miss(c, p, "a unit (bytes, KiB, MiB or GiB)", false,
		    false, FAULT_SHAPE);
	p = skip_ws(c, p);
	k = unit(c, &p, whole);
	if (k < 0)
		return false;
	unitb = (int64_t)1 << (10 * k);
	assert(nfrac >= 0 && (size_t)nfrac < sizeof(pow10) / sizeof(pow10[0]));
	den = pow10[nfrac];
	ipart = mant / den;
	frac = mant % den;
	if (ipart > MF_OOM_MAX_BYTES / unitb)
		return miss(c, c->pos, "a figure up to 1 EiB", false, false,
		    FAULT_RANGE);
	bytes = ipart * unitb + (2 * frac * unitb + den) / (2 * den);
	if (bytes > MF_OOM_MAX_BYTES)
		return miss(c, c->pos, "a figure up to 1 EiB", false, false,
		    FAULT_RANGE);
	*out = bytes;
	*unit_k = k;
	c->pos = p;
	return true;
}

/* A figure whose precision is not needed. */
static bool
size(struct cur *c, int64_t *out)
{
	int k;

	return size_unit(c, out, &k);
}

/* "( ... )" of at most PAREN_MAX characters. */
static bool
paren(struct cur *c)
{
	size_t p = c->pos, end;

	if (p >= c->len || c->s[p] != '(')
		return miss(c, p, "(", true, false, FAULT_SHAPE);
	for (end = p + 1; end < c->len && end - p < PAREN_MAX; end++) {
		if (c->s[end] == ')') {
			c->pos = end + 1;
			return true;
		}
	}
	return miss(c, end, ")", true, false, FAULT_SHAPE);
}

/* 1.x: " (GPU N; X total capacity; ... X cached)" or "... by PyTorch)". */
static bool
parse_v1(struct cur *c, struct mf_oom *o)
{
	int64_t gpu, x, reserved;

	if (!lit(c, " (GPU ") || !num(c, 1000000, &gpu) || !lit(c, "; ") ||
	    !size(c, &o->total) || !lit(c, " total capacity; ") ||
	    !size(c, &o->allocated) || !lit(c, " already allocated; ") ||
	    !size(c, &o->free) || !lit(c, " free; ") || !size(c, &x))
		return false;
	o->gpu = (int)gpu;
	if (lit(c, " cached)")) {
		o->format = MF_OOM_V1_0;
		o->reserved_unallocated = x;
		return true;
	}
	if (lit(c, " allowed; ")) {
		o->allowed = x;
		if (!size(c, &x))
			return false;
	}
	if (!lit(c, " reserved in total by PyTorch)"))
		return false;
	reserved = x;
	o->format = MF_OOM_V1_4;
	o->reserved_unallocated =
	    reserved > o->allocated ? reserved - o->allocated : 0;
	return true;
}

/*
 * The unit (k of 1024^k) each figure that tells this process among the
 * entries was printed in: what their precision is (slack).
 */
struct units {
	int allocated;
	int reserved_unallocated;
	int procs[MF_OOM_MAX_PROCS];
};

/* bytes is -1 when the driver could not say; it is then not summed. */
static void
add_proc(struct mf_oom *o, struct units *u, int64_t pid, int64_t bytes, int k)
{
	o->nlisted++;
	if (o->nprocs < MF_OOM_MAX_PROCS) {
		o->procs[o->nprocs].pid = pid;
		o->procs[o->nprocs].bytes = bytes;
		u->procs[o->nprocs] = k;
		o->nprocs++;
	}
	if (bytes < 0)
		return;
	o->others = (o->others < 0 ? 0 : o->others) + bytes;
	if (o->others > MF_OOM_MAX_BYTES)
		o->others = MF_OOM_MAX_BYTES;
}

/*
 * A figure, or -1 for UINT64_MAX, which format_size() prints as
 * 17179869184.00 GiB: NVML's NVML_VALUE_NOT_AVAILABLE for a process's use
 * (as under Windows WDDM and WSL), and cudaMallocAsync's limit where no
 * memory fraction is set (lazy_init_device in CUDAMallocAsyncAllocator.cpp).
 */
static bool
size_or_none(struct cur *c, int64_t *out, int *unit_k)
{
	size_t end;

	if (match(c, c->pos, "17179869184.00 GiB", &end, NULL)) {
		*out = -1;
		*unit_k = 3;
		c->pos = end;
		return true;
	}
	return size_unit(c, out, unit_k);
}

/* One "... has X memory in use." clause; false (cursor kept) if none. */
static bool
proc_clause(struct cur *c, struct mf_oom *o, struct units *u, bool *self)
{
	size_t start = c->pos;
	int64_t pid, bytes;
	int k;

	if (lit(c, " Including non-PyTorch memory, this process has ")) {
		if (size_or_none(c, &bytes, &k) && lit(c, " memory in use.")) {
			o->process = bytes;
			*self = true;
			return true;
		}
	} else if (lit(c, " Process ")) {
		if (num(c, INT64_MAX / 16, &pid) && lit(c, " has ") &&
		    size_or_none(c, &bytes, &k) && lit(c, " memory in use.")) {
			add_proc(o, u, pid, bytes, k);
			return true;
		}
	}
	c->pos = start;
	return false;
}

/* "X allowed;" where a memory fraction is set. */
static void
allowed_clause(struct cur *c, struct mf_oom *o)
{
	size_t start = c->pos;
	int64_t x;

	if (lit(c, " ") && size(c, &x) && lit(c, " allowed;")) {
		o->allowed = x;
		return;
	}
	c->pos = start;
}

/* "Of the allocated memory X is allocated by PyTorch, ... unallocated." */
static bool
parse_v2_tail(struct cur *c, struct mf_oom *o, struct units *u)
{
	size_t start;
	int64_t x;

	if (!lit(c, " Of the allocated memory ") ||
	    !size_unit(c, &o->allocated, &u->allocated) ||
	    !lit(c, " is allocated by PyTorch, "))
		return false;
	start = c->pos;
	if (lit(c, "with ")) {
		if (size(c, &x) && lit(c, " allocated in private pools ") &&
		    paren(c) && lit(c, ", "))
			o->private_pools = x;
		else
			c->pos = start;
	}
	return lit(c, "and ") &&
	    size_unit(c, &o->reserved_unallocated, &u->reserved_unallocated) &&
	    lit(c, " is reserved by PyTorch but unallocated.");
}

/*
 * How far rounding to format_size()'s two decimals may have moved a figure
 * printed in 1024^k bytes: half a hundredth of that unit (none for bytes).
 * The unit is the printed one, not one worked out from the bytes:
 * format_size() prints 2^30 bytes as "1024.00 MiB", yet "1.00 GiB" reads
 * as 2^30 too, and is known only to a GiB figure's precision.
 */
static int64_t
slack(int k)
{
	int64_t unit = k == 0 ? 0 : (int64_t)1 << (10 * k);

	assert(k >= 0 && k <= 3);
	return (unit + 199) / 200;
}

/* Whether entry b can be this process, and whether b is what PyTorch
 * reserved plus a CUDA context; within tol, the three figures' precision. */
static void
weigh(const struct mf_oom *o, int64_t b, int64_t tol, bool *holds,
    bool *context)
{
	int64_t reserved = o->allocated + o->reserved_unallocated;

	*holds = b + tol >= reserved;
	*context = *holds && b - reserved + tol >= MF_OOM_CONTEXT_MIN &&
	    b - reserved - tol <= MF_OOM_CONTEXT_MAX;
}

/* Which "Process P" entry is this process, -1 when none can be told. */
static int
find_self(const struct mf_oom *o, const struct units *u, enum mf_oom_self *from)
{
	int64_t tol = slack(u->allocated) + slack(u->reserved_unallocated);
	int only = -1, ctx = -1, nonly = 0, nctx = 0;
	bool holds, context;

	*from = MF_OOM_SELF_UNKNOWN;
	/* An entry not kept, or one NVML could not size, may be this one. */
	if (o->nlisted > o->nprocs)
		return -1;
	assert(o->nprocs <= MF_OOM_MAX_PROCS);
	for (int i = 0; i < o->nprocs; i++) {
		if (o->procs[i].bytes < 0)
			return -1;
		weigh(o, o->procs[i].bytes, tol + slack(u->procs[i]), &holds,
		    &context);
		if (holds) {
			only = i;
			nonly++;
		}
		if (context) {
			ctx = i;
			nctx++;
		}
	}
	if (nonly == 1)
		*from = MF_OOM_SELF_ONLY;
	else if (nctx == 1)
		*from = MF_OOM_SELF_CONTEXT;
	return nonly == 1 ? only : nctx == 1 ? ctx : -1;
}

/*
 * This process among the entries, and the others' sum.  NVML lists every
 * process on the card; a process PyTorch cannot match to its own pid (in a
 * container's pid namespace) is listed as "Process P" with the others.
 */
static void
identify(struct mf_oom *o, const struct units *u, bool printed)
{
	int64_t sum = -1;

	o->self = -1;
	if (printed || o->nlisted == 0) {
		o->self_from = printed ? MF_OOM_SELF_PRINTED : MF_OOM_SELF_NONE;
		return;
	}
	o->self = find_self(o, u, &o->self_from);
	o->others = -1;
	if (o->self < 0)
		return;
	assert(o->self < MF_OOM_MAX_PROCS && o->nprocs <= MF_OOM_MAX_PROCS);
	o->process = o->procs[o->self].bytes;
	for (int i = 0; i < o->nprocs; i++)
		if (i != o->self && o->procs[i].bytes >= 0)
			sum = (sum < 0 ? 0 : sum) + o->procs[i].bytes;
	o->others = sum > MF_OOM_MAX_BYTES ? MF_OOM_MAX_BYTES : sum;
}

/*
 * The device index after the gap at the cursor, before next ("has " after
 * ". GPU", "would " after "Allocation on device").  PyTorch 2.3 streams it
 * as a character (c10::DeviceIndex is an int8_t; pytorch#123984, #126766,
 * #129632, and #168369 for cudaMallocAsync's): GPU 1 to 31 print as a
 * control byte, which a log or a paste may drop or show as a space ("GPU
 * has"), and GPU 0 as a NUL, which ends the message after the gap.  A byte
 * in the index's place, or none, leaves o->gpu at -1.  A message that
 * stops there, at the end of the text or of its line, is the fault gpu0.
 */
static bool
device_index(struct cur *c, struct mf_oom *o, const char *next, enum fault gpu0)
{
	size_t gap = c->pos, end;
	int64_t gpu;

	if (skip_ws(c, gap) >= c->len)
		return miss(c, gap, "the device index", false, true, gpu0);
	if (!is_ws(c->s[gap]))
		return miss(c, gap, "a space and the device index", false,
		    false, FAULT_SHAPE);
	c->pos = skip_ws(c, gap);
	assert(c->pos < c->len);
	if (is_digit(c->s[c->pos])) {
		if (!num(c, 1000000, &gpu))
			return false;
		o->gpu = (int)gpu;
		return true;
	}
	if ((unsigned char)c->s[c->pos] < 0x20) {
		c->pos++;
		return true;
	}
	if (match(c, c->pos, next, &end, NULL)) {
		/* The byte is gone: " has a total" reads from the gap. */
		c->pos = gap;
		return true;
	}
	if (memchr(c->s + gap, '\n', c->pos - gap) != NULL)
		return miss(c, c->pos, "the device index", false, false, gpu0);
	return num(c, 1000000, &gpu);
}

/* 2.x: ". GPU N has a total capacty of X of which X is free. ..." */
static bool
parse_v2(struct cur *c, struct mf_oom *o)
{
	struct units u;
	bool self = false;

	memset(&u, 0, sizeof(u));
	if (!lit(c, ". GPU") || !device_index(c, o, "has ", FAULT_GPU0) ||
	    !lit(c, " has a total "))
		return false;
	if (lit(c, "capacty of "))
		o->format = MF_OOM_V2_1;
	else if (lit(c, "capacity of "))
		o->format = MF_OOM_V2_2;
	else
		return false;
	if (!size(c, &o->total) || !lit(c, " of which ") ||
	    !size(c, &o->free) || !lit(c, " is free."))
		return false;
	while (proc_clause(c, o, &u, &self))
		;
	allowed_clause(c, o);
	if (!parse_v2_tail(c, o, &u))
		return false;
	identify(o, &u, self);
	return true;
}

static void
blank(struct mf_oom *o)
{
	memset(o, 0, sizeof(*o));
	o->tried = o->total = o->free = o->allocated = -1;
	o->reserved_unallocated = o->process = o->others = -1;
	o->allowed = o->private_pools = -1;
	o->gpu = -1;
	o->self = -1;
}

/*
 * cudaMallocAsync's, after "Allocation on device" (oom.h): each figure on
 * a line of its own after a name padded to one column, which the
 * whitespace runs of the patterns take.  mallocAsync in
 * c10/cuda/CUDAMallocAsyncAllocator.cpp (pytorch#82682) writes it as
 *
 *   "Allocation on device ", device,
 *   " would exceed allowed memory. (out of memory)",
 *   "\nCurrently allocated     : ", format_size(pytorch_used_bytes[device]),
 *   "\nRequested               : ", format_size(size),
 *   "\nDevice limit            : ", format_size(device_total),
 *   "\nFree (according to CUDA): ", format_size(device_free),
 *   "\nPyTorch limit (set by user-supplied memory fraction)"
 *   "\n                        : ", format_size(pytorch_memory_limits[device])
 */
static bool
parse_async(struct cur *c, struct mf_oom *o)
{
	int k;

	o->format = MF_OOM_ASYNC;
	return device_index(c, o, "would ", FAULT_ASYNC0) &&
	    lit(c, " would exceed allowed memory. (out of memory)") &&
	    lit(c, " Currently allocated : ") && size(c, &o->allocated) &&
	    lit(c, " Requested : ") && size(c, &o->tried) &&
	    lit(c, " Device limit : ") && size(c, &o->total) &&
	    lit(c, " Free (according to CUDA): ") && size(c, &o->free) &&
	    lit(c,
	        " PyTorch limit (set by user-supplied memory fraction) : ") &&
	    size_or_none(c, &o->allowed, &k);
}

/* "CUDA out of memory." or "HIP out of memory." starting exactly at p. */
static bool
anchor(struct cur *c, size_t p, struct mf_oom *o)
{
	size_t end;

	if (match(c, p, "CUDA out of memory.", &end, NULL))
		o->backend = MF_OOM_CUDA;
	else if (match(c, p, "HIP out of memory.", &end, NULL))
		o->backend = MF_OOM_HIP;
	else
		return false;
	c->pos = end;
	return true;
}

/* "Allocation on device", cudaMallocAsync's message, starting exactly at p. */
static bool
async_anchor(struct cur *c, size_t p, struct mf_oom *o)
{
	size_t end;

	if (!match(c, p, "Allocation on device", &end, NULL))
		return false;
	o->backend = MF_OOM_CUDA;
	c->pos = end;
	return true;
}

/* The first characters of the anchors, to skip the rest of the text fast. */
static bool
may_anchor(char ch)
{
	return ch == 'C' || ch == 'H' || ch == 'c' || ch == 'A';
}

/*
 * The CUDA runtime's error, raised where an allocation outside the caching
 * allocator failed: no figures, only the lines PyTorch adds after it,
 * which say which releases print it (oom.h).
 */
static const struct {
	const char *text;
	enum mf_oom_backend backend;
	enum mf_oom_format format;
} rt_anchors[] = {
	{ "CUDA error: out of memory", MF_OOM_CUDA, MF_OOM_RT_BARE },
	{ "HIP error: out of memory", MF_OOM_HIP, MF_OOM_RT_BARE },
	{ "cuda runtime error (2) : out of memory", MF_OOM_CUDA,
	    MF_OOM_RT_THC },
};

/* The lines after it, each first printed by a later release than the
 * last (the formats are in that order). */
static const struct {
	const char *text;
	enum mf_oom_format format;
} rt_marks[] = {
	{ "other API call,so the stacktrace", MF_OOM_RT_HINT },
	{ "other API call, so the stacktrace", MF_OOM_RT_DSA },
	{ "Compile with `TORCH_USE_CUDA_DSA`", MF_OOM_RT_DSA },
	{ "Compile with `TORCH_USE_HIP_DSA`", MF_OOM_RT_DSA },
	{ "Search for `cudaErrorMemoryAllocation'", MF_OOM_RT_HELP },
	{ "Search for `hipErrorOutOfMemory'", MF_OOM_RT_HELP },
};

/* How far after the runtime's error its own lines are looked for. */
#define RT_TAIL 2048

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The runtime's error starting exactly at p: its index, or -1. */
static int
rt_anchor(const struct cur *c, size_t p, size_t *end)
{
	size_t e;

	for (size_t k = 0; k < NELEM(rt_anchors); k++) {
		if (!match(c, p, rt_anchors[k].text, &e, NULL))
			continue;
		*end = e;
		return (int)k;
	}
	return -1;
}

/* Whether any message of either kind starts at p. */
static bool
any_anchor(struct cur *c, size_t p)
{
	struct mf_oom scratch;
	size_t e, keep = c->pos;
	bool found;

	if (!may_anchor(c->s[p]))
		return false;
	found = anchor(c, p, &scratch) || async_anchor(c, p, &scratch) ||
	    rt_anchor(c, p, &e) >= 0;
	c->pos = keep;
	return found;
}

/*
 * The runtime's error whose anchor rt_anchors[k] ends at c->pos: its
 * format is that of the latest of its lines within RT_TAIL bytes, up to
 * the next message.
 */
static void
parse_runtime(struct cur *c, int k, struct mf_oom *o)
{
	size_t lim = c->len - c->pos > RT_TAIL ? c->pos + RT_TAIL : c->len;
	size_t e;

	assert(k >= 0 && (size_t)k < NELEM(rt_anchors));
	o->backend = rt_anchors[k].backend;
	o->format = rt_anchors[k].format;
	if (o->format == MF_OOM_RT_THC)
		return;
	for (size_t p = c->pos; p < lim && !any_anchor(c, p); p++)
		for (size_t m = 0; m < NELEM(rt_marks); m++)
			if (rt_marks[m].format > o->format &&
			    match(c, p, rt_marks[m].text, &e, NULL))
				o->format = rt_marks[m].format;
}

int
mf_oom_is_runtime(enum mf_oom_format f)
{
	return f >= MF_OOM_RT_THC && f <= MF_OOM_RT_HELP;
}

/* Figures are at most 2^60, so the sum cannot overflow. */
int
mf_oom_over_limit(const struct mf_oom *o)
{
	return o->format == MF_OOM_ASYNC && o->allowed >= 0 &&
	    o->allocated + o->tried > o->allowed;
}

/* The message after its anchor. */
static bool
parse_message(struct cur *c, struct mf_oom *o)
{
	size_t at;

	if (!lit(c, " Tried to allocate ") || !size(c, &o->tried))
		return false;
	at = c->pos;
	if (match(c, at, " (", &at, NULL))
		return parse_v1(c, o);
	return parse_v2(c, o);
}

/* Figures are at most 2^60, so this cannot overflow. */
int64_t
mf_oom_outside_bytes(const struct mf_oom *o)
{
	int64_t ru = o->reserved_unallocated < 0 ? 0 : o->reserved_unallocated;

	return o->total - o->free - (o->allocated + ru);
}

static enum mf_oom_cause
decide(const struct mf_oom *o)
{
	if (mf_oom_is_runtime(o->format))
		return MF_OOM_OUTSIDE;
	if (o->tried > o->total)
		return MF_OOM_CAPACITY;
	if (o->free >= o->tried || mf_oom_over_limit(o))
		return MF_OOM_LIMIT;
	/* x >= total / n exactly, for whole x: x >= ceil(total / n). */
	if (mf_oom_outside_bytes(o) >= (o->total + 3) / 4)
		return MF_OOM_OTHER_PROCESS;
	if (o->reserved_unallocated >= 0 &&
	    o->reserved_unallocated >= o->tried &&
	    o->reserved_unallocated >= (o->total + 19) / 20)
		return MF_OOM_FRAGMENTATION;
	return MF_OOM_CAPACITY;
}

/* Case-blind search for "out of memory", to word a better error. */
static bool
mentions_oom(const char *s, size_t len)
{
	static const char needle[] = "out of memory";
	size_t n = sizeof(needle) - 1, i, j;

	for (i = 0; i + n <= len; i++) {
		for (j = 0; j < n; j++) {
			char ch = s[i + j];

			if (ch >= 'A' && ch <= 'Z')
				ch = (char)(ch - 'A' + 'a');
			if (ch != needle[j])
				break;
		}
		if (j == n)
			return true;
	}
	return false;
}

/* Up to SNIP characters from p, whitespace runs as one space, ASCII only. */
static void
snippet(const struct cur *c, size_t p, char *buf, size_t size)
{
	size_t n = 0;

	while (p < c->len && n + 1 < size && n < SNIP) {
		char ch = c->s[p];

		if (is_ws(ch)) {
			p = skip_ws(c, p);
			ch = ' ';
		} else {
			p++;
			if ((unsigned char)ch < 0x20 ||
			    (unsigned char)ch >= 0x7f)
				ch = '?';
		}
		buf[n++] = ch;
	}
	buf[n] = '\0';
}

static void
line_col(const struct cur *c, size_t p, int *line, int *col)
{
	size_t i, bol = 0;
	int l = 1;

	for (i = 0; i < p && i < c->len; i++) {
		if (c->s[i] == '\n') {
			l++;
			bol = i + 1;
		}
	}
	*line = l;
	*col = (int)(p - bol + 1);
}

static enum mf_rc
fail(const struct cur *c, bool seen, struct mf_error *err)
{
	char found[SNIP + 1], want[96];
	size_t n;
	int line, col;

	if (!seen) {
		if (mentions_oom(c->s, c->len))
			return mf_error_set(err, MF_EINVAL, NULL, 0, 0,
			    "the text reports running out of memory but holds no PyTorch message with figures ('CUDA out of memory. Tried to allocate ...') and not the CUDA runtime's ('CUDA error: out of memory'); paste the whole message PyTorch printed");
		return mf_error_set(err, MF_EINVAL, NULL, 0, 0,
		    "the text holds no PyTorch out-of-memory message ('CUDA out of memory. Tried to allocate ...', or the CUDA runtime's 'CUDA error: out of memory')");
	}
	line_col(c, c->fail, &line, &col);
	/* A pattern's closing space is the gap before the next figure. */
	n = strlen(c->want);
	while (n > 0 && c->want[n - 1] == ' ')
		n--;
	if (c->want_lit)
		snprintf(want, sizeof(want), "'%.*s'", (int)n, c->want);
	else
		snprintf(want, sizeof(want), "%s", c->want);
	if (c->fault == FAULT_RANGE)
		return mf_error_set(err, MF_ERANGE, NULL, line, col,
		    "the out-of-memory message has a figure above 1 EiB");
	if (c->fault == FAULT_GPU0)
		return mf_error_set(err, MF_EINVAL, NULL, line, col,
		    "the out-of-memory message stops after 'GPU ', before its figures: PyTorch 2.3 ends it there on GPU 0 (the index is written as a character, 0 as the NUL that ends a string; pytorch#123984), or the text was cut off; call torch.cuda.mem_get_info() where it is caught");
	if (c->fault == FAULT_ASYNC0)
		return mf_error_set(err, MF_EINVAL, NULL, line, col,
		    "the out-of-memory message stops after 'Allocation on device ', before its figures: under backend:cudaMallocAsync PyTorch 2.3 to 2.9 end it there on GPU 0 (the index is written as a character, 0 as the NUL that ends a string; pytorch#168369), or the text was cut off; call torch.cuda.mem_get_info() where it is caught");
	if (c->cut)
		return mf_error_set(err, MF_EINVAL, NULL, line, col,
		    "the out-of-memory message is cut off: the text ends where %s should follow; paste the whole message",
		    want);
	snippet(c, c->fail, found, sizeof(found));
	return mf_error_set(err, MF_EINVAL, NULL, line, col,
	    "the out-of-memory message is not as PyTorch prints it: expected %s, found '%s'",
	    want, found);
}

enum mf_rc
mf_oom_parse(const char *text, size_t len, struct mf_oom *out,
    struct mf_error *err)
{
	struct cur c;
	struct mf_oom o, last;
	bool seen = false, found = false;
	size_t i;

	if (out == NULL || (text == NULL && len > 0))
		return mf_error_set(err, MF_EINVAL, NULL, 0, 0,
		    "no text or no place for the diagnosis");
	memset(&c, 0, sizeof(c));
	c.s = text;
	c.len = len;
	/* A log may hold several messages (a retry at a smaller batch, one
	 * per rank): the last whole one is what ended the run. */
	for (i = 0; i < len; i++) {
		size_t end;
		int k;
		bool ok;

		if (!may_anchor(text[i]))
			continue;
		blank(&o);
		k = rt_anchor(&c, i, &end);
		if (k >= 0) {
			c.pos = end;
			parse_runtime(&c, k, &o);
			o.cause = decide(&o);
			last = o;
			found = true;
			i = end - 1;
			continue;
		}
		if (anchor(&c, i, &o))
			ok = parse_message(&c, &o);
		else if (async_anchor(&c, i, &o))
			ok = parse_async(&c, &o);
		else
			continue;
		seen = true;
		if (ok) {
			o.cause = decide(&o);
			last = o;
			found = true;
			i = c.pos - 1;
		}
	}
	if (!found)
		return fail(&c, seen, err);
	*out = last;
	return MF_OK;
}

const char *
mf_oom_cause_name(enum mf_oom_cause cause)
{
	switch (cause) {
	case MF_OOM_CAPACITY:
		return "capacity";
	case MF_OOM_LIMIT:
		return "limit";
	case MF_OOM_OTHER_PROCESS:
		return "other-process";
	case MF_OOM_FRAGMENTATION:
		return "fragmentation";
	case MF_OOM_OUTSIDE:
		return "outside-allocator";
	}
	return "unknown";
}

const char *
mf_oom_format_name(enum mf_oom_format f)
{
	switch (f) {
	case MF_OOM_V1_0:
		return "1.0-1.3";
	case MF_OOM_V1_4:
		return "1.4-2.0";
	case MF_OOM_V2_1:
		return "2.1";
	case MF_OOM_V2_2:
		return "2.2+";
	case MF_OOM_RT_THC:
		return "0.x";
	case MF_OOM_RT_BARE:
		return "1.0+";
	case MF_OOM_RT_HINT:
		return "1.x";
	case MF_OOM_RT_DSA:
		return "2.0+";
	case MF_OOM_RT_HELP:
		return "2.9+";
	case MF_OOM_ASYNC:
		return "cudaMallocAsync-2.0+";
	}
	return "unknown";
}
