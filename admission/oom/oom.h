/*
 * oom.h: read a PyTorch CUDA out-of-memory message and say why it happened
 * (design section 10).
 *
 * Every format PyTorch's caching allocator has printed is recognised, each
 * named by the PyTorch releases that print it (mf_oom_format_name):
 *
 *   1.0-1.3  CUDA out of memory. Tried to allocate X (GPU N; X total
 *            capacity; X already allocated; X free; X cached)
 *            (pytorch#13751, November 2018, first in 1.0)
 *   1.4-2.0  ... X free; [X allowed; ]X reserved in total by PyTorch)
 *            [ If reserved memory is >> allocated memory try setting
 *            max_split_size_mb ...]  (the "reserved" statistics of
 *            pytorch#27361, October 2019, first in 1.4; "allowed" from 1.8's
 *            set_per_process_memory_fraction; printed until 2.0)
 *   2.1      CUDA out of memory. Tried to allocate X. GPU N has a total
 *            capacty of X of which X is free. [Including non-PyTorch
 *            memory, this process has X memory in use. ][Process P has X
 *            memory in use. ...] Of the allocated memory X is allocated by
 *            PyTorch, and X is reserved by PyTorch but unallocated. If
 *            reserved ... max_split_size_mb ...  (pytorch#99699, April 2023,
 *            after 2.0 was released: first in 2.1)
 *   2.2+     the expandable_segments hint in place of max_split_size_mb
 *            (pytorch#113481, November 2023, after 2.1's release: first
 *            in 2.2), with "capacity" spelled right; later
 *            releases add "X allowed; " before "Of the allocated memory" and
 *            "with X allocated in private pools (e.g., CUDA Graphs), "
 *            before "and X is reserved" (pytorch#124673, April 2024).
 *            2.3 writes the device index as a character (c10::DeviceIndex
 *            is an int8_t; pytorch#123984, #126766, #129632): GPU 1 prints
 *            as the byte 0x01, which a log may drop ("GPU  has"), and GPU 0
 *            as a NUL, which ends the message after "GPU ".  The first two
 *            are read with the GPU unknown; the last has lost its figures.
 *
 * the message of the cudaMallocAsync allocator, which PyTorch uses in place
 * of its caching allocator under PYTORCH_CUDA_ALLOC_CONF=
 * backend:cudaMallocAsync (c10/cuda/CUDAMallocAsyncAllocator.cpp,
 * mallocAsync; pytorch#82682, commit 25725fd, first released in 2.0; the
 * wording is the same in every release since):
 *
 *   cudaMallocAsync-2.0+
 *            Allocation on device N would exceed allowed memory. (out of
 *            memory)
 *            Currently allocated     : X
 *            Requested               : X
 *            Device limit            : X
 *            Free (according to CUDA): X
 *            PyTorch limit (set by user-supplied memory fraction)
 *                                    : X
 *            "Currently allocated" is what PyTorch's tensors hold; what
 *            CUDA's pool keeps of freed blocks is not printed, so there is
 *            no reserved figure.  The limit is PyTorch's own check of the
 *            allocated bytes, made before it asks CUDA; where no fraction
 *            is set it is UINT64_MAX, printed "17179869184.00 GiB" and read
 *            as none.  From 2.3 (pytorch#119545 made the index a
 *            c10::DeviceIndex) until pytorch#168369 (November 2025, after
 *            2.9) the index is written as a character, as in 2.3's message
 *            above: read with the GPU unknown, except GPU 0, whose NUL ends
 *            the message after "Allocation on device ".  Only the CUDA
 *            spelling is read.
 *
 * and the CUDA runtime's own error, raised where an allocation outside the
 * caching allocator failed (cuBLAS and cuDNN workspaces, NCCL's buffers,
 * the CUDA context, a custom kernel's cudaMalloc), which prints no
 * figures; it is named by the lines PyTorch adds after it:
 *
 *   0.x      cuda runtime error (2) : out of memory at FILE:LINE (THC's
 *            check; pytorch#465, PyTorch 0.1.6)
 *   1.0+     CUDA error: out of memory, and nothing after it that dates it
 *            (a first line pasted alone reads so in every release)
 *   1.x      ... CUDA kernel errors might be asynchronously reported at some
 *            other API call,so the stacktrace below might be incorrect.
 *            For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
 *   2.0+     ... "call, so the stacktrace" and "Compile with
 *            `TORCH_USE_CUDA_DSA` to enable device-side assertions."
 *            (pytorch#84609, the device-side assertions of 2.0)
 *   2.9+     ... "Search for `cudaErrorMemoryAllocation' in
 *            https://docs.nvidia.com/... for more information." (pytorch
 *            #158484 and #158688, July 2025, after 2.8's branch)
 *
 * ROCm builds print the same text with "HIP" for "CUDA".  The message may
 * sit anywhere in the text (after exception names, "RuntimeError:", log
 * timestamps, a wrapper's own words) and may be broken over lines: any run
 * of whitespace (spaces, tabs, newlines, indentation) stands for the single
 * space PyTorch printed.  The trailing hint sentence is not needed.
 *
 * Sizes are PyTorch's format_size(): "N bytes" up to 1024 bytes, otherwise
 * "x.xx KiB", "x.xx MiB" or "x.xx GiB" (GiB is the largest unit it prints:
 * 2 TiB reads "2048.00 GiB").  A size converts to bytes as value * 1024^k
 * rounded to the nearest byte, so each figure is only known to the printed
 * precision (a hundredth of its unit: about 10 MiB for a GiB figure).
 */
#ifndef MF_OOM_H
#define MF_OOM_H

#include <stddef.h>
#include <stdint.h>

#include "../base/err.h"
#include "../base/jw.h"

/* "Process P has X memory in use." clauses kept; later ones are summed only. */
#define MF_OOM_MAX_PROCS 16

/*
 * What a CUDA context, with what the libraries keep beside PyTorch's
 * cache, takes on the card: how this process's own "Process P has X"
 * entry is told apart from the others' (mf_oom_parse).  The messages that
 * name this process ("this process has X") show it as X less what PyTorch
 * reserved: 0.51 GiB (pytorch#16417, 2024 comment), 0.80 GiB (the example
 * of pytorch#99699); and where PyTorch in a container names itself
 * "Process P": 0.49 GiB (vllm-project/vllm#34643), 0.70 GiB (vllm#8903),
 * 0.80 GiB (kaito-project/kaito#976); about 600 MB for each PyTorch
 * process (NVIDIA/nvidia-container-toolkit#235).  The window is taken wide
 * around them, 256 MiB to 1 GiB.
 */
#define MF_OOM_CONTEXT_MIN ((int64_t)256 << 20)
#define MF_OOM_CONTEXT_MAX ((int64_t)1 << 30)

/* Figures above this (1 EiB) are refused with MF_ERANGE. */
#define MF_OOM_MAX_BYTES ((int64_t)1 << 60)

/* Append-only; the names are mf_oom_format_name's. */
enum mf_oom_format {
	MF_OOM_V1_0 = 1, /* "... X free; X cached)" */
	MF_OOM_V1_4,     /* "... X reserved in total by PyTorch)" */
	MF_OOM_V2_1,     /* "has a total capacty of" (sic) */
	MF_OOM_V2_2,     /* "has a total capacity of" */
	/* The CUDA runtime's error: no figures (see above). */
	MF_OOM_RT_THC,  /* "cuda runtime error (2) : out of memory" */
	MF_OOM_RT_BARE, /* "CUDA error: out of memory" and nothing to date */
	MF_OOM_RT_HINT, /* "... API call,so the stacktrace ..." */
	MF_OOM_RT_DSA,  /* "... TORCH_USE_CUDA_DSA ..." */
	MF_OOM_RT_HELP, /* "Search for `cudaErrorMemoryAllocation' ..." */
	MF_OOM_ASYNC    /* "Allocation on device N would exceed ..." */
};

enum mf_oom_backend {
	MF_OOM_CUDA, /* "CUDA out of memory." */
	MF_OOM_HIP   /* "HIP out of memory." (ROCm builds) */
};

/* Decided in this order; see mf_oom_parse.  Append-only. */
enum mf_oom_cause {
	MF_OOM_CAPACITY,
	MF_OOM_LIMIT,
	MF_OOM_OTHER_PROCESS,
	MF_OOM_FRAGMENTATION,
	MF_OOM_OUTSIDE /* the CUDA runtime's error: outside the allocator */
};

/* How this process's own use of the card was found. */
enum mf_oom_self {
	MF_OOM_SELF_NONE,    /* the message lists no process */
	MF_OOM_SELF_PRINTED, /* "this process has X" */
	MF_OOM_SELF_ONLY,    /* the one entry holding PyTorch's reserved */
	MF_OOM_SELF_CONTEXT, /* the one entry that is reserved plus a context */
	MF_OOM_SELF_UNKNOWN  /* listed, but the figures do not say which */
};

struct mf_oom_proc {
	int64_t pid;
	int64_t bytes; /* -1 where the driver could not say (below) */
};

/*
 * One parsed message.  Byte figures are -1 when the message did not print
 * them; tried, total, free and allocated are printed by every format of
 * both allocators and so are always set after them, reserved_unallocated
 * by every format of the caching allocator (not by cudaMallocAsync's); the
 * CUDA runtime's error prints none of them (mf_oom_is_runtime).
 */
struct mf_oom {
	int64_t tried;     /* "Tried to allocate X" */
	int64_t total;     /* the card's total capacity */
	int64_t free;      /* free on the card, as CUDA reported it */
	int64_t allocated; /* by PyTorch (2.x: private pools included) */
	/*
	 * Reserved by PyTorch's cache but not allocated: 1.0 "X cached";
	 * 1.4 "X reserved in total" minus allocated (0 if the text says less
	 * than allocated); 2.1+ printed as such; -1 for cudaMallocAsync's,
	 * which has no such cache and prints no such figure.
	 */
	int64_t reserved_unallocated;
	/*
	 * This process's whole use of the card: "this process has X"; when
	 * that is absent, the "Process P has X" entry the figures show to be
	 * this process (in a container PyTorch cannot match its own pid and
	 * names itself that way; see self).  -1 otherwise, and where the
	 * driver could not say: NVML's "not available" (2^64 - 1, seen under
	 * Windows WDDM and WSL) prints as "17179869184.00 GiB" and is read as
	 * no figure.
	 */
	int64_t process;
	/*
	 * Sum over the "Process P has X" entries with a figure that are not
	 * this process; -1 when there are none, or when which entry is this
	 * process cannot be told (self_from MF_OOM_SELF_UNKNOWN).
	 */
	int64_t others;
	/*
	 * What a per-process memory fraction allows: "X allowed;", or
	 * cudaMallocAsync's "PyTorch limit" (-1 for its no-limit sentinel).
	 */
	int64_t allowed;
	int64_t private_pools; /* "with X allocated in private pools" */
	int gpu;               /* device index; -1 unless printed as digits */
	int nprocs;            /* entries used in procs */
	int nlisted;           /* "Process P" entries printed, kept or not */
	struct mf_oom_proc procs[MF_OOM_MAX_PROCS]; /* "Process P", in order */
	/*
	 * This process among procs, -1 when it is not one of them.  Where the
	 * message does not name it ("this process has X"), it is the one entry
	 * that holds at least what PyTorch reserved (allocated plus reserved
	 * but unallocated), else the one entry that holds that plus a CUDA
	 * context (MF_OOM_CONTEXT_MIN to _MAX), each within the printed
	 * precision of the three figures; otherwise it is unknown.
	 */
	int self;
	enum mf_oom_self self_from;
	enum mf_oom_format format;
	enum mf_oom_backend backend;
	enum mf_oom_cause cause;
};

/*
 * Find the last complete out-of-memory message in text[0..len) (text need
 * not be NUL-terminated; it may be NULL when len is 0), fill *out and
 * decide the cause.  The CUDA runtime's error is outside-allocator; an
 * allocator message is
 *
 *   1 capacity       tried > total;
 *   2 limit          free >= tried (the card had room), or
 *                    mf_oom_over_limit;
 *   3 other-process  mf_oom_outside_bytes >= 25% of total;
 *   4 fragmentation  reserved_unallocated >= tried and >= 5% of total
 *                    (never for cudaMallocAsync's, which prints none);
 *   5 capacity       otherwise.
 *
 * Errors (*out untouched, err filled when not NULL; err->line and
 * err->column locate the problem within text, err->field is empty):
 *   MF_EINVAL  the text holds no such message, or the message is cut off
 *              before its last figure ("Of the allocated memory ... is
 *              reserved by PyTorch but unallocated" in 2.x, the closing
 *              "cached)" / "reserved in total by PyTorch)" in 1.x), or does
 *              not continue as PyTorch prints it.  A truncated message is
 *              never reported in part.  One that stops after "GPU " is
 *              said to be PyTorch 2.3's on GPU 0 (see above) or cut off,
 *              and one that stops after "Allocation on device " to be
 *              cudaMallocAsync's on GPU 0 from 2.3 to 2.9, or cut off.
 *   MF_ERANGE  a figure is above MF_OOM_MAX_BYTES (a process's or
 *              cudaMallocAsync's limit's "17179869184.00 GiB" is no
 *              figure, see above).
 * Never allocates; runs in time linear in len.
 */
enum mf_rc mf_oom_parse(const char *text, size_t len, struct mf_oom *out,
    struct mf_error *err);

/* "capacity", "limit", "other-process", "fragmentation",
 * "outside-allocator"; "unknown" else. */
const char *mf_oom_cause_name(enum mf_oom_cause c);

/* The PyTorch releases that print format f ("1.4-2.0", "2.2+", "0.x",
 * "cudaMallocAsync-2.0+"; see the top of this file); "unknown" else. */
const char *mf_oom_format_name(enum mf_oom_format f);

/* Whether f is the CUDA runtime's error, which prints no figures. */
int mf_oom_is_runtime(enum mf_oom_format f);
/* Memory on the card that PyTorch's allocator in this process does not
 * account for: total - free - (allocated + reserved but unallocated where
 * printed).  For cudaMallocAsync's message it includes what CUDA's pool
 * keeps of freed blocks, which that message does not print. */
int64_t mf_oom_outside_bytes(const struct mf_oom *o);

/* Whether cudaMallocAsync's own limit refused the allocation: a limit is
 * printed and allocated + tried exceeds it (PyTorch's check, made before
 * it asks CUDA; read from the rounded figures). */
int mf_oom_over_limit(const struct mf_oom *o);

/*
 * The diagnosis's members, written into the object w has open:
 * {"triedBytes", "totalBytes", "freeBytes", "allocatedBytes",
 *  "reservedUnallocatedBytes", "processBytes", "otherProcessBytes",
 *  "allowedBytes", "privatePoolBytes" (integers, null when not printed),
 *  "processes": [{"pid", "bytes"}], "thisProcess" (null when no process
 *  is listed, else {"from": "message" | "only-candidate" | "context" |
 *  "unknown", "pid" (null when the message names it "this process" or it
 *  is unknown), "nonPyTorchBytes" (its use beyond what PyTorch reserved:
 *  the CUDA context and what libraries took outside the cache; null when
 *  unknown)}), "gpu" (null unless printed as digits), "backend" ("cuda" |
 *  "hip"), "format", "cause", "explanation" (one paragraph), "advice"
 *  (strings, most useful first)}.  A failure is left in w's buffer.
 */
void mf_oom_write(struct mf_jw *w, const struct mf_oom *o);

/*
 * A short report for a terminal (figures, cause, explanation, advice) in
 * buf, NUL-terminated and cut to size (buf may be NULL when size is 0).
 * Returns the length the whole report needs, not counting the NUL, as
 * snprintf does; -1 when o is NULL.
 */
int mf_oom_text(const struct mf_oom *o, char *buf, size_t size);

#endif
