/*
 * oom.h: read a PyTorch CUDA out-of-memory message and say why it happened
 * (design section 10).
 *
 * Every format PyTorch's caching allocator has printed is recognised:
 *
 *   1.0  CUDA out of memory. Tried to allocate X (GPU N; X total capacity;
 *        X already allocated; X free; X cached)
 *   1.4  ... X free; [X allowed; ]X reserved in total by PyTorch)
 *        [ If reserved memory is >> allocated memory try setting
 *        max_split_size_mb ...]
 *   2.1  CUDA out of memory. Tried to allocate X. GPU N has a total capacty
 *        of X of which X is free. [Including non-PyTorch memory, this
 *        process has X memory in use. ][Process P has X memory in use. ...]
 *        Of the allocated memory X is allocated by PyTorch, and X is
 *        reserved by PyTorch but unallocated. If reserved ...
 *   2.2  "capacity" spelled right, the expandable_segments hint; later
 *        releases add "X allowed; " before "Of the allocated memory" and
 *        "with X allocated in private pools (e.g., CUDA Graphs), " before
 *        "and X is reserved".
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

#include "err.h"
#include "jw.h"

/* "Process P has X memory in use." clauses kept; later ones are summed only. */
#define MF_OOM_MAX_PROCS 16

/* Figures above this (1 EiB) are refused with MF_ERANGE. */
#define MF_OOM_MAX_BYTES ((int64_t)1 << 60)

enum mf_oom_format {
	MF_OOM_V1_0 = 1, /* "... X free; X cached)" */
	MF_OOM_V1_4,     /* "... X reserved in total by PyTorch)" */
	MF_OOM_V2_1,     /* "has a total capacty of" (sic) */
	MF_OOM_V2_2      /* "has a total capacity of" */
};

enum mf_oom_backend {
	MF_OOM_CUDA, /* "CUDA out of memory." */
	MF_OOM_HIP   /* "HIP out of memory." (ROCm builds) */
};

/* Decided in this order; see mf_oom_parse. */
enum mf_oom_cause {
	MF_OOM_CAPACITY,
	MF_OOM_LIMIT,
	MF_OOM_OTHER_PROCESS,
	MF_OOM_FRAGMENTATION
};

struct mf_oom_proc {
	int64_t pid;
	int64_t bytes; /* -1 where the driver could not say (below) */
};

/*
 * One parsed message.  Byte figures are -1 when the message did not print
 * them; tried, total, free, allocated and reserved_unallocated are printed
 * by every format and so are always set after a successful parse.
 */
struct mf_oom {
	int64_t tried;     /* "Tried to allocate X" */
	int64_t total;     /* the card's total capacity */
	int64_t free;      /* free on the card, as CUDA reported it */
	int64_t allocated; /* by PyTorch (2.x: private pools included) */
	/*
	 * Reserved by PyTorch's cache but not allocated: 1.0 "X cached";
	 * 1.4 "X reserved in total" minus allocated (0 if the text says less
	 * than allocated); 2.1+ printed as such.
	 */
	int64_t reserved_unallocated;
	/*
	 * This process's whole use of the card: "this process has X"; when
	 * that is absent and exactly one "Process P has X" is printed, that
	 * figure (in a container PyTorch cannot match its own pid and names
	 * itself that way).  -1 otherwise, and where the driver could not
	 * say: NVML's "not available" (2^64 - 1, seen under Windows WDDM and
	 * WSL) prints as "17179869184.00 GiB" and is read as no figure.
	 */
	int64_t process;
	/* Sum over every "Process P has X" with a figure; -1 if none. */
	int64_t others;
	int64_t allowed; /* "X allowed;" (a per-process memory fraction) */
	int64_t private_pools; /* "with X allocated in private pools" */
	int gpu;               /* device index; -1 when not printed */
	int nprocs;            /* entries used in procs */
	struct mf_oom_proc procs[MF_OOM_MAX_PROCS]; /* "Process P", in order */
	enum mf_oom_format format;
	enum mf_oom_backend backend;
	enum mf_oom_cause cause;
};

/*
 * Find the last complete out-of-memory message in text[0..len) (text need
 * not be NUL-terminated; it may be NULL when len is 0), fill *out and
 * decide the cause:
 *
 *   1 capacity       tried > total;
 *   2 limit          free >= tried (the card had room);
 *   3 other-process  total - free - (allocated + reserved_unallocated)
 *                    >= 25% of total;
 *   4 fragmentation  reserved_unallocated >= tried and >= 5% of total;
 *   5 capacity       otherwise.
 *
 * Errors (*out untouched, err filled when not NULL; err->line and
 * err->column locate the problem within text, err->field is empty):
 *   MF_EINVAL  the text holds no such message, or the message is cut off
 *              before its last figure ("Of the allocated memory ... is
 *              reserved by PyTorch but unallocated" in 2.x, the closing
 *              "cached)" / "reserved in total by PyTorch)" in 1.x), or does
 *              not continue as PyTorch prints it.  A truncated message is
 *              never reported in part.
 *   MF_ERANGE  a figure is above MF_OOM_MAX_BYTES (a process's
 *              "17179869184.00 GiB" is no figure, see above).
 * Never allocates; runs in time linear in len.
 */
enum mf_rc mf_oom_parse(const char *text, size_t len, struct mf_oom *out,
    struct mf_error *err);

/* "capacity", "limit", "other-process", "fragmentation"; "unknown" else. */
const char *mf_oom_cause_name(enum mf_oom_cause c);

/* "1.0", "1.4", "2.1", "2.2"; "unknown" else. */
const char *mf_oom_format_name(enum mf_oom_format f);

/*
 * The diagnosis's members, written into the object w has open:
 * {"triedBytes", "totalBytes", "freeBytes", "allocatedBytes",
 *  "reservedUnallocatedBytes", "processBytes", "otherProcessBytes",
 *  "allowedBytes", "privatePoolBytes" (integers, null when not printed),
 *  "processes": [{"pid", "bytes"}], "gpu" (null when not printed),
 *  "backend" ("cuda" | "hip"), "format", "cause", "explanation" (one
 *  paragraph), "advice" (strings, most useful first)}.  A failure is left
 * in w's buffer.
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
