/*
 * oom_report.c: a parsed out-of-memory message (oom.c) in words, its cause
 * explained with the figures as the message printed them and advice for
 * it, written as JSON or YAML (mf_oom_write) or text (mf_oom_text).
 */
#include "oom.h"

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * The diagnosis in words.  Sizes print as format_size() does, so they read
 * as in the user's message.
 */
#define MAX_ADVICE 4
#define SIZESTR 32

struct report {
	char explanation[640];
	char advice[MAX_ADVICE][640];
	int nadvice;
};

struct figs {
	char tried[SIZESTR], total[SIZESTR], free[SIZESTR], alloc[SIZESTR];
	char ru[SIZESTR], allowed[SIZESTR], outside[SIZESTR];
	/* gpu_name's, within a sentence and to start one */
	char gpu[SIZESTR], gpu_start[SIZESTR];
};

static void
fmt_size(int64_t b, char *buf, size_t size)
{
	if (b < 0)
		snprintf(buf, size, "an unknown amount");
	else if (b <= 1024)
		snprintf(buf, size, "%lld bytes", (long long)b);
	else if (b <= 1048576)
		snprintf(buf, size, "%.2f KiB", (double)b / 1024.0);
	else if (b <= 1073741824)
		snprintf(buf, size, "%.2f MiB", (double)b / 1048576.0);
	else
		snprintf(buf, size, "%.2f GiB", (double)b / 1073741824.0);
}

/*
 * "GPU N", or "the GPU" ("The GPU" to start a sentence) where the message
 * gave no index (PyTorch 2.3 prints it as a byte; oom.h).
 */
static void
gpu_name(const struct mf_oom *o, bool start, char *buf, size_t size)
{
	if (o->gpu >= 0)
		snprintf(buf, size, "GPU %d", o->gpu);
	else
		snprintf(buf, size, "%s GPU", start ? "The" : "the");
}

static void
fill_figs(const struct mf_oom *o, struct figs *f)
{
	gpu_name(o, false, f->gpu, sizeof(f->gpu));
	gpu_name(o, true, f->gpu_start, sizeof(f->gpu_start));
	fmt_size(o->tried, f->tried, sizeof(f->tried));
	fmt_size(o->total, f->total, sizeof(f->total));
	fmt_size(o->free, f->free, sizeof(f->free));
	fmt_size(o->allocated, f->alloc, sizeof(f->alloc));
	fmt_size(o->reserved_unallocated, f->ru, sizeof(f->ru));
	fmt_size(o->allowed, f->allowed, sizeof(f->allowed));
	fmt_size(mf_oom_outside_bytes(o) < 0 ? 0 : mf_oom_outside_bytes(o),
	    f->outside, sizeof(f->outside));
}

static void advise(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
advise(struct report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nadvice >= MAX_ADVICE)
		return;
	va_start(ap, fmt);
	vsnprintf(r->advice[r->nadvice], sizeof(r->advice[0]), fmt, ap);
	va_end(ap);
	r->nadvice++;
}

static void
report_capacity(const struct mf_oom *o, const struct figs *f, struct report *r)
{
	if (o->tried > o->total)
		snprintf(r->explanation, sizeof(r->explanation),
		    "The allocation alone (%s) is larger than %s's whole memory (%s): no setting makes it fit on this card.",
		    f->tried, f->gpu, f->total);
	else if (o->format == MF_OOM_ASYNC)
		snprintf(r->explanation, sizeof(r->explanation),
		    "%s (%s) is full of this job's own tensors: PyTorch has %s allocated, %s is free and nothing else holds much of the card, so the %s it asked for does not fit.",
		    f->gpu_start, f->total, f->alloc, f->free, f->tried);
	else
		snprintf(r->explanation, sizeof(r->explanation),
		    "%s (%s) is full of this job's own tensors: PyTorch has %s allocated and %s reserved but unallocated, %s is free and nothing else holds much of the card, so the %s it asked for does not fit.",
		    f->gpu_start, f->total, f->alloc, f->ru, f->free, f->tried);
	advise(r,
	    "Measure the peak: run one step at a smaller batch and read torch.cuda.max_memory_allocated() (after torch.cuda.reset_peak_memory_stats()); the peak plus headroom is what the job needs.");
	advise(r,
	    "Cut the peak with the memory fixes: gradient checkpointing, 8-bit Adam (bnb.optim.Adam8bit), LoRA or QLoRA (modelling decisions), FSDP across several GPUs. POST /v1/admit with allowedFixes finds the cheapest combination that fits.");
	advise(r,
	    "Or run on a larger card: a spec.resources.gpu.minMemory above this card's %s keeps admission off it.",
	    f->total);
}

/* cudaMallocAsync's own limit refused it, before CUDA was asked. */
static void
report_over_limit(const struct figs *f, struct report *r)
{
	snprintf(r->explanation, sizeof(r->explanation),
	    "PyTorch's own limit refused the allocation: this process may use %s of %s, and the %s allocated plus the %s it asked for is more; the cudaMallocAsync allocator checks that limit before it asks CUDA, whatever the card has free (%s).",
	    f->allowed, f->gpu, f->alloc, f->tried, f->free);
	advise(r,
	    "A per-process memory fraction caps this process at %s: raise it or remove the torch.cuda.set_per_process_memory_fraction() call.",
	    f->allowed);
}

static void
report_limit(const struct mf_oom *o, const struct figs *f, struct report *r)
{
	bool async = o->format == MF_OOM_ASYNC;
	const char *pre = "", *post = "";

	if (mf_oom_over_limit(o)) {
		report_over_limit(f, r);
		return;
	}
	if (o->allowed >= 0) {
		pre = async ? " (PyTorch's own limit, " :
		              " (this process may use only ";
		post = async ? ", was not reached)" : ")";
	}
	snprintf(r->explanation, sizeof(r->explanation),
	    "%s had %s free, at least the %s PyTorch asked for, yet the allocation was refused: a limit below the card's capacity stopped it, not the card%s%s%s.",
	    f->gpu_start, f->free, f->tried, pre,
	    o->allowed >= 0 ? f->allowed : "", post);
	/* cudaMallocAsync's message says whether a fraction is set, and its
	 * limit, checked first, was not reached: none to look for. */
	if (!async && o->allowed >= 0)
		advise(r,
		    "A per-process memory fraction caps this process at %s: raise it or remove the torch.cuda.set_per_process_memory_fraction() call.",
		    f->allowed);
	else if (!async)
		advise(r,
		    "Look for a per-process memory fraction: torch.cuda.set_per_process_memory_fraction() in the code or in a framework it uses; raise it or remove it.");
	advise(r,
	    "Under CUDA MPS, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT caps each client's memory: check the MPS daemon's settings.");
	advise(r,
	    "Otherwise another CUDA context refused it: a second allocator in the same process (JAX preallocates most of the card; TensorFlow, CuPy) or a driver-level limit.");
}

/* What this process holds beyond PyTorch's reserved, -1 when unknown. */
static int64_t
non_pytorch(const struct mf_oom *o)
{
	int64_t x = o->process - (o->allocated + o->reserved_unallocated);

	return o->process < 0 ? -1 : x < 0 ? 0 : x;
}

/* The sentence on which listed process is this one, appended at buf. */
static void
say_self(const struct mf_oom *o, char *buf, size_t size)
{
	char self[SIZESTR], rest[SIZESTR], ctx[SIZESTR], lo[SIZESTR],
	    hi[SIZESTR];
	int64_t x = o->total - o->free - o->process;

	fmt_size(o->process, self, sizeof(self));
	fmt_size(non_pytorch(o), ctx, sizeof(ctx));
	fmt_size(x < 0 ? 0 : x, rest, sizeof(rest));
	fmt_size(MF_OOM_CONTEXT_MIN, lo, sizeof(lo));
	fmt_size(MF_OOM_CONTEXT_MAX, hi, sizeof(hi));
	if (o->self_from == MF_OOM_SELF_UNKNOWN)
		snprintf(buf, size,
		    " The message lists %d process%s without saying which is this one, and the figures cannot tell: it would hold PyTorch's reserved memory plus a CUDA context (%s to %s), and %s of them do.",
		    o->nlisted, o->nlisted == 1 ? "" : "es", lo, hi,
		    o->nlisted > o->nprocs ?
		        "not all are listed whole, so any" :
		        "not exactly one");
	else if ((o->self_from == MF_OOM_SELF_ONLY ||
	             o->self_from == MF_OOM_SELF_CONTEXT) &&
	    o->self >= 0 && o->self < MF_OOM_MAX_PROCS)
		snprintf(buf, size,
		    " This process is Process %lld (%s: what PyTorch reserved plus %s, %s); other processes about %s.",
		    (long long)o->procs[o->self].pid, self, ctx,
		    o->self_from == MF_OOM_SELF_ONLY ?
		        "the only entry that holds what PyTorch reserved" :
		        "a CUDA context",
		    rest);
	else if (o->process >= 0)
		snprintf(buf, size,
		    " This process holds %s of it; other processes about %s.",
		    ctx, rest);
	else
		buf[0] = '\0';
}

/* "pid (X), ..." of the entries that are not this process. */
static void
list_others(const struct mf_oom *o, char *list, size_t size)
{
	char b[SIZESTR];
	size_t n = 0;
	int k;

	list[0] = '\0';
	/* Whole entries only: a pid cut short would name the wrong process. */
	assert(o->nprocs <= MF_OOM_MAX_PROCS);
	for (int i = 0; i < o->nprocs; i++) {
		if (i == o->self)
			continue;
		fmt_size(o->procs[i].bytes, b, sizeof(b));
		k = snprintf(list + n, size - n, "%s%lld (%s)", n ? ", " : "",
		    (long long)o->procs[i].pid, b);
		if (k < 0 || (size_t)k >= size - n) {
			list[n] = '\0';
			break;
		}
		n += (size_t)k;
	}
}

static void
report_other(const struct mf_oom *o, const struct figs *f, struct report *r)
{
	bool async = o->format == MF_OOM_ASYNC;
	char list[480];
	int k;

	if (async)
		k = snprintf(r->explanation, sizeof(r->explanation),
		    "%s of %s's %s is held outside what PyTorch has allocated (total less %s free and %s allocated): another process on the card, memory this process took outside PyTorch, or freed blocks that CUDA's pool keeps for this process; the cudaMallocAsync allocator's message prints nothing that tells them apart.",
		    f->outside, f->gpu, f->total, f->free, f->alloc);
	else
		k = snprintf(r->explanation, sizeof(r->explanation),
		    "%s of %s's %s is held outside this process's PyTorch allocator (total less %s free, %s allocated and %s reserved): another process on the card, or memory this process took outside PyTorch.",
		    f->outside, f->gpu, f->total, f->free, f->alloc, f->ru);
	if (k > 0 && (size_t)k < sizeof(r->explanation))
		say_self(o, r->explanation + k,
		    sizeof(r->explanation) - (size_t)k);
	list_others(o, list, sizeof(list));
	advise(r,
	    "Find what else holds the card: ps -elf | grep python (a notebook kernel left running, an earlier run that did not exit, DataLoader workers that touched the GPU); stop it or use a free GPU.%s%s%s",
	    list[0] ? " The message names pid " : "", list, list[0] ? "." : "");
	advise(r,
	    "Do not trust %s for your own process: it shows what the driver handed out (%s plus the context), not what your tensors use; torch.cuda.memory_allocated() and torch.cuda.memory_reserved() do.",
	    o->backend == MF_OOM_HIP ? "rocm-smi" : "nvidia-smi",
	    async ? "CUDA's pool" : "PyTorch's whole cache");
	if (async)
		advise(r,
		    "Under backend:cudaMallocAsync, torch.cuda.memory_reserved() is what CUDA's pool holds for this process: read where the error is caught, its excess over torch.cuda.memory_allocated() is the pool's share of the %s; the rest is other processes, the CUDA context and libraries.",
		    f->outside);
}

/* The CUDA runtime's error: something outside the allocator failed. */
static void
report_outside(const struct mf_oom *o, struct report *r)
{
	const char *smi = o->backend == MF_OOM_HIP ? "rocm-smi" : "nvidia-smi";

	snprintf(r->explanation, sizeof(r->explanation),
	    "The %s runtime refused an allocation that PyTorch's caching allocator did not make: a cuBLAS or cuDNN workspace, NCCL's communication buffers, the CUDA context itself (the first CUDA call of a process), or a library's or custom kernel's own cudaMalloc. PyTorch's cache already held the memory those need, or another process did; the error prints no figures, so which one is not known from it.",
	    o->backend == MF_OOM_HIP ? "HIP" : "CUDA");
	advise(r,
	    "Look at the traceback's last frame: model.cuda() or the first CUDA call means the context could not be created, so the card is already full (%s and ps -elf | grep python find what holds it); torch.distributed or NCCL means its buffers (NCCL_BUFFSIZE makes them smaller); a matmul or convolution means a cuBLAS or cuDNN workspace.",
	    smi);
	advise(r,
	    "Leave room outside PyTorch's cache: torch.cuda.set_per_process_memory_fraction() below 1 (or a serving engine's gpu_memory_utilization) caps what the cache may take, so the libraries that allocate on their own still find memory.");
	advise(r,
	    "Measure what is held outside the cache: torch.cuda.mem_get_info() before the failing call, against torch.cuda.memory_reserved(); the difference is the context, other libraries and other processes.");
	advise(r,
	    "If the job simply needs more than the card has, cut its peak with the memory fixes (gradient checkpointing, 8-bit Adam, LoRA, FSDP) or run on a larger card; POST /v1/admit with allowedFixes finds the cheapest that fits.");
}

static void
report_frag(const struct mf_oom *o, const struct figs *f, struct report *r)
{
	snprintf(r->explanation, sizeof(r->explanation),
	    "PyTorch holds %s reserved but unallocated on %s, more than the %s it asked for, yet no cached block was large enough: the cache is fragmented into pieces smaller than the request.",
	    f->ru, f->gpu, f->tried);
	advise(r,
	    "Set PYTORCH_ALLOC_CONF=expandable_segments:True before the process starts (PYTORCH_CUDA_ALLOC_CONF is the older name%s): segments then grow in place instead of leaving slivers.",
	    o->backend == MF_OOM_HIP ?
	        "; ROCm builds also read PYTORCH_HIP_ALLOC_CONF" :
	        "");
	advise(r,
	    "On a PyTorch without expandable segments, or if that is not enough, set max_split_size_mb (for example PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512) so large cached blocks are not split for small requests.");
}

static void
build_report(const struct mf_oom *o, struct report *r)
{
	struct figs f;

	memset(r, 0, sizeof(*r));
	if (o->cause == MF_OOM_OUTSIDE) {
		report_outside(o, r);
		return;
	}
	fill_figs(o, &f);
	switch (o->cause) {
	case MF_OOM_LIMIT:
		report_limit(o, &f, r);
		break;
	case MF_OOM_OTHER_PROCESS:
		report_other(o, &f, r);
		break;
	case MF_OOM_FRAGMENTATION:
		report_frag(o, &f, r);
		break;
	case MF_OOM_CAPACITY:
	default:
		report_capacity(o, &f, r);
		break;
	}
}

/* "thisProcess": which listed process is this one, and how it was told. */
static void
write_self(struct mf_jw *w, const struct mf_oom *o)
{
	static const char *const from[] = { [MF_OOM_SELF_PRINTED] = "message",
		[MF_OOM_SELF_ONLY] = "only-candidate",
		[MF_OOM_SELF_CONTEXT] = "context",
		[MF_OOM_SELF_UNKNOWN] = "unknown" };

	if (o->self_from == MF_OOM_SELF_NONE) {
		mf_jw_null_lit(w, "thisProcess");
		return;
	}
	mf_jw_open_lit(w, "thisProcess", '{');
	assert((size_t)o->self_from < sizeof(from) / sizeof(from[0]));
	mf_jw_str_lit(w, "from", from[o->self_from]);
	if (o->self >= 0 && o->self < MF_OOM_MAX_PROCS)
		mf_jw_int_lit(w, "pid", o->procs[o->self].pid);
	else
		mf_jw_null_lit(w, "pid");
	mf_jw_int_known(w, "nonPyTorchBytes", non_pytorch(o));
	mf_jw_close(w, '}');
}

void
mf_oom_write(struct mf_jw *w, const struct mf_oom *o)
{
	struct report r;

	build_report(o, &r);
	mf_jw_int_known(w, "triedBytes", o->tried);
	mf_jw_int_known(w, "totalBytes", o->total);
	mf_jw_int_known(w, "freeBytes", o->free);
	mf_jw_int_known(w, "allocatedBytes", o->allocated);
	mf_jw_int_known(w, "reservedUnallocatedBytes", o->reserved_unallocated);
	mf_jw_int_known(w, "processBytes", o->process);
	mf_jw_int_known(w, "otherProcessBytes", o->others);
	mf_jw_int_known(w, "allowedBytes", o->allowed);
	mf_jw_int_known(w, "privatePoolBytes", o->private_pools);
	mf_jw_open_lit(w, "processes", '[');
	assert(o->nprocs <= MF_OOM_MAX_PROCS);
	for (int i = 0; i < o->nprocs; i++) {
		mf_jw_open(w, NULL, '{');
		mf_jw_int_lit(w, "pid", o->procs[i].pid);
		mf_jw_int_known(w, "bytes", o->procs[i].bytes);
		mf_jw_close(w, '}');
	}
	mf_jw_close(w, ']');
	write_self(w, o);
	mf_jw_int_known(w, "gpu", o->gpu);
	mf_jw_str_lit(w, "backend", o->backend == MF_OOM_HIP ? "hip" : "cuda");
	mf_jw_str_lit(w, "format", mf_oom_format_name(o->format));
	mf_jw_str_lit(w, "cause", mf_oom_cause_name(o->cause));
	mf_jw_str_lit(w, "explanation", r.explanation);
	mf_jw_open_lit(w, "advice", '[');
	assert(r.nadvice <= MAX_ADVICE);
	for (int i = 0; i < r.nadvice; i++)
		mf_jw_str(w, NULL, r.advice[i]);
	mf_jw_close(w, ']');
}

/* An snprintf-style appender: len counts what the whole text needs. */
struct out {
	char *buf;
	size_t size;
	size_t len;
	bool bad;
};

static void
put(struct out *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct out *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	if (w->len < w->size)
		n = vsnprintf(w->buf + w->len, w->size - w->len, fmt, ap);
	else
		n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		w->bad = true;
	else
		w->len += (size_t)n;
}

static void
put_fig(struct out *w, const char *name, int64_t b, const char *note)
{
	char s[SIZESTR];

	if (b < 0)
		return;
	fmt_size(b, s, sizeof(s));
	put(w, "  %-22s %s%s\n", name, s, note);
}

int
mf_oom_text(const struct mf_oom *o, char *buf, size_t size)
{
	struct out w = { buf, buf == NULL ? 0 : size, 0, false };
	struct report r;
	char note[48] = "", gpu[SIZESTR];
	int i;

	if (o == NULL)
		return -1;
	if (w.size > 0)
		buf[0] = '\0';
	build_report(o, &r);
	if (mf_oom_is_runtime(o->format))
		put(&w,
		    "%s runtime error: out of memory (PyTorch %s message)\n",
		    o->backend == MF_OOM_HIP ? "HIP" : "CUDA",
		    mf_oom_format_name(o->format));
	else {
		gpu_name(o, false, gpu, sizeof(gpu));
		put(&w, "%s out of memory on %s (PyTorch %s message)\n",
		    o->backend == MF_OOM_HIP ? "HIP" : "CUDA", gpu,
		    mf_oom_format_name(o->format));
	}
	put_fig(&w, "tried to allocate", o->tried, "");
	put_fig(&w, "total", o->total, "");
	put_fig(&w, "free", o->free, "");
	put_fig(&w, "allocated", o->allocated, " (by PyTorch)");
	put_fig(&w, "reserved, unallocated", o->reserved_unallocated, "");
	put_fig(&w, "allowed", o->allowed, " (memory fraction)");
	if (o->self >= 0 && o->self < MF_OOM_MAX_PROCS)
		snprintf(note, sizeof(note), " (Process %lld)",
		    (long long)o->procs[o->self].pid);
	put_fig(&w, "this process", o->process, note);
	put_fig(&w, "other processes", o->others, "");
	put(&w, "cause: %s\n%s\n", mf_oom_cause_name(o->cause), r.explanation);
	assert(r.nadvice <= MAX_ADVICE);
	for (i = 0; i < r.nadvice; i++)
		put(&w, "- %s\n", r.advice[i]);
	if (w.bad || w.len > (size_t)INT32_MAX)
		return -1;
	return (int)w.len;
}
