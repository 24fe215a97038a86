/*
 * test_oom.c: PyTorch out-of-memory messages (design section 10).
 *
 * Byte figures are worked out by hand from format_size(): "x.xx U" is
 * xxx * 1024^k / 100 rounded to the nearest byte, written below as
 * "7.33 GiB = 733 * 2^30 / 100 = 7870527569.92 -> 7870527570".
 *
 * The real messages of tests/data/oom/messages.txt (a copy of the
 * project's collection of messages PyTorch printed), containers.txt (PyTorch
 * naming itself "Process P") and runtime.txt (the CUDA runtime's own
 * error), and the examples/oom-*.txt requests are read from $MF_TOP, else
 * the current directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "files.h"
#include "oom/oom.h"
#include "readback.h"
#include "msg.h"

#define NOPE (-1)

struct want {
	int64_t tried, total, free, allocated, ru, process, others, allowed;
	int64_t pools;
	int gpu;
	enum mf_oom_format format;
	enum mf_oom_backend backend;
	enum mf_oom_cause cause;
};

static void
check_parsed(const struct mf_oom *o, const struct want *w)
{
	assert_int_equal(o->tried, w->tried);
	assert_int_equal(o->total, w->total);
	assert_int_equal(o->free, w->free);
	assert_int_equal(o->allocated, w->allocated);
	assert_int_equal(o->reserved_unallocated, w->ru);
	assert_int_equal(o->process, w->process);
	assert_int_equal(o->others, w->others);
	assert_int_equal(o->allowed, w->allowed);
	assert_int_equal(o->private_pools, w->pools);
	assert_int_equal(o->gpu, w->gpu);
	assert_int_equal(o->format, w->format);
	assert_int_equal(o->backend, w->backend);
	assert_int_equal(o->cause, w->cause);
}

static void
check_text(const char *text, const struct want *w, struct mf_oom *out)
{
	struct mf_error err;
	enum mf_rc rc;

	memset(&err, 0, sizeof(err));
	rc = mf_oom_parse(text, strlen(text), out, &err);
	if (rc != MF_OK)
		fail_msg("parse failed: %s\n%s", MSG(&err), text);
	check_parsed(out, w);
}

/* ---- the real messages of messages.txt ---- */

/*
 * pytorch#13751, the 1.0 format:
 *   16.00 GiB = 1600 * 2^30 / 100 = 17179869184
 *   11.93 GiB = 1193 * 2^30 / 100 = 12809739960.32 -> 12809739960
 *   4.00 GiB = 4294967296
 *   7.33 GiB = 733 * 2^30 / 100 = 7870527569.92 -> 7870527570
 *   179.00 KiB = 179 * 1024 = 183296 (the "cached" figure)
 * Cause: tried 17179869184 > total 12809739960 -> capacity.
 */
static const struct want want_13751 = { 17179869184, 12809739960, 7870527570,
	4294967296, 183296, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V1_0, MF_OOM_CUDA,
	MF_OOM_CAPACITY };

/*
 * pytorch#35901, 1.4 format, no hint:
 *   10.84 GiB = 1084 * 2^30 / 100 = 11639361372.16 -> 11639361372
 *   23.65 GiB = 2365 * 2^30 / 100 = 25393994137.6 -> 25393994138
 *   1.06 GiB = 106 * 2^30 / 100 = 1138166333.44 -> 1138166333
 *   10.26 GiB = 1026 * 2^30 / 100 = 11016591114.24 -> 11016591114
 *   12.53 GiB = 1253 * 2^30 / 100 = 13453985054.72 -> 13453985055
 *   reserved unallocated = 13453985055 - 1138166333 = 12315818722
 * Cause: tried <= total; free 11016591114 < tried;
 *   outside = 25393994138 - 11016591114 - 13453985055 = 923417969, under
 *   25% of total (6348498534.5); ru 12315818722 >= tried and >= 5% of
 *   total (1269699706.9) -> fragmentation.
 */
static const struct want want_35901 = { 11639361372, 25393994138, 11016591114,
	1138166333, 12315818722, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V1_4,
	MF_OOM_CUDA, MF_OOM_FRAGMENTATION };

/*
 * pytorch#111363, 2.1 ("capacty"), after a wrapper's exception name:
 *   64.00 MiB = 64 * 2^20 = 67108864
 *   79.15 GiB = 7915 * 2^30 / 100 = 84986665369.6 -> 84986665370
 *   38.09 GiB = 3809 * 2^30 / 100 = 40898826076.16 -> 40898826076
 *   41.06 GiB = 4106 * 2^30 / 100 = 44087839293.44 -> 44087839293
 *   39.10 GiB = 3910 * 2^30 / 100 = 41983305318.4 -> 41983305318
 *   427.46 MiB = 42746 * 2^20 / 100 = 448224296.96 -> 448224297
 * Cause: free 40898826076 >= tried 67108864 -> limit (the reporter had set
 * a per-process memory fraction).
 */
static const struct want want_111363 = { 67108864, 84986665370, 40898826076,
	41983305318, 448224297, 44087839293, NOPE, NOPE, NOPE, 0, MF_OOM_V2_1,
	MF_OOM_CUDA, MF_OOM_LIMIT };

/*
 * pytorch#16417 (2024 comment), 2.2+:
 *   22.00 MiB = 22 * 2^20 = 23068672
 *   23.65 GiB -> 25393994138 (above)
 *   11.06 MiB = 1106 * 2^20 / 100 = 11597250.56 -> 11597251
 *   23.60 GiB = 2360 * 2^30 / 100 = 25340307046.4 -> 25340307046
 *   22.90 GiB = 2290 * 2^30 / 100 = 24588687769.6 -> 24588687770
 *   194.87 MiB = 19487 * 2^20 / 100 = 204336005.12 -> 204336005
 * Cause: free < tried; outside = 25393994138 - 11597251 - (24588687770 +
 *   204336005) = 589373112 < 25%; ru 204336005 >= tried but < 5% of total
 *   (1269699706.9) -> capacity.
 */
static const struct want want_16417 = { 23068672, 25393994138, 11597251,
	24588687770, 204336005, 25340307046, NOPE, NOPE, NOPE, 0, MF_OOM_V2_2,
	MF_OOM_CUDA, MF_OOM_CAPACITY };

/*
 * vllm-project/vllm#34643, 2.2+ in a container: two processes of 248.00 MiB
 * and this one, "Process 162519".
 *   1.71 GiB = 171 * 2^30 / 100 = 1836098519.04 -> 1836098519
 *   22.30 GiB = 2230 * 2^30 / 100 = 23944442675.2 -> 23944442675
 *   1.52 GiB = 152 * 2^30 / 100 = 1632087572.48 -> 1632087572
 *   248.00 MiB = 248 * 2^20 = 260046848
 *   20.28 GiB = 2028 * 2^30 / 100 = 21775484190.72 -> 21775484191
 *   19.55 GiB = 1955 * 2^30 / 100 = 20991652659.2 -> 20991652659
 *   244.94 MiB = 24494 * 2^20 / 100 = 256838205.44 -> 256838205
 * PyTorch reserved 20991652659 + 256838205 = 21248490864: the 248.00 MiB
 * entries hold less, so Process 162519 is the only one that can be this
 * process (526993327 bytes, 503 MiB, beyond the reserved: a CUDA
 * context); the others hold 2 * 260046848 = 520093696.
 * Cause: free < tried; outside = 23944442675 - 1632087572 - 21248490864 =
 *   1063864239 < 25% (5986110669); ru < tried -> capacity.
 */
static const struct want want_34643 = { 1836098519, 23944442675, 1632087572,
	20991652659, 256838205, 21775484191, 520093696, NOPE, NOPE, 0,
	MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_CAPACITY };

/*
 * vllm-project/vllm#8903, 2.2+ in vLLM's Docker image: one entry.
 *   19.63 GiB = 1963 * 2^30 / 100 = 21077552005.12 -> 21077552005
 *   79.15 GiB -> 84986665370 (above)
 *   17.73 GiB = 1773 * 2^30 / 100 = 19037442539.52 -> 19037442540
 *   61.41 GiB = 6141 * 2^30 / 100 = 65938485411.84 -> 65938485412
 *   56.64 GiB = 5664 * 2^30 / 100 = 60816736911.36 -> 60816736911
 *   4.07 GiB = 407 * 2^30 / 100 = 4370129223.68 -> 4370129224
 * Reserved 65186866135 <= 65938485412: Process 78729 is this process (the
 * only entry, 751619277 bytes or 717 MiB above it), with no other process
 * listed.
 * Cause: free < tried; outside = 84986665370 - 19037442540 - 65186866135
 *   = 762356695 < 25%; ru < tried -> capacity.
 */
static const struct want want_8903 = { 21077552005, 84986665370, 19037442540,
	60816736911, 4370129224, 65938485412, NOPE, NOPE, NOPE, 3, MF_OOM_V2_2,
	MF_OOM_CUDA, MF_OOM_CAPACITY };

/*
 * kaito-project/kaito#976, 2.2+ with private pools, one entry.
 *   546.00 MiB = 546 * 2^20 = 572522496
 *   15.77 GiB = 1577 * 2^30 / 100 = 16932908564.48 -> 16932908564
 *   514.19 MiB = 51419 * 2^20 / 100 = 539167293.44 -> 539167293
 *   15.25 GiB = 1525 * 2^30 / 100 = 16374562816
 *   13.73 GiB = 1373 * 2^30 / 100 = 14742475243.52 -> 14742475244
 *   46.00 MiB = 48234496
 *   736.86 MiB = 73686 * 2^20 / 100 = 772653711.36 -> 772653711
 * Reserved 15515128955 <= 16374562816: the only entry is this process
 * (859433861 bytes, 820 MiB, above it).
 * Cause: free < tried; outside = 16932908564 - 539167293 - 15515128955 =
 *   878612316 < 25%; ru 772653711 >= tried but < 5% of total (846645429)
 *   -> capacity.
 */
static const struct want want_976 = { 572522496, 16932908564, 539167293,
	14742475244, 772653711, 16374562816, NOPE, NOPE, 48234496, 0,
	MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_CAPACITY };

/* The CUDA runtime's error prints no figures: format and backend only. */
#define RUNTIME(fmt, be) \
	{ \
		NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, -1, fmt, \
		    be, MF_OOM_OUTSIDE \
	}

static const struct want want_465 = RUNTIME(MF_OOM_RT_THC, MF_OOM_CUDA);
static const struct want want_iim28 = RUNTIME(MF_OOM_RT_HINT, MF_OOM_CUDA);
static const struct want want_wan565 = RUNTIME(MF_OOM_RT_DSA, MF_OOM_CUDA);
static const struct want want_wan1083 = RUNTIME(MF_OOM_RT_DSA, MF_OOM_CUDA);
static const struct want want_12366 = RUNTIME(MF_OOM_RT_HELP, MF_OOM_CUDA);
static const struct want want_zt17 = RUNTIME(MF_OOM_RT_BARE, MF_OOM_CUDA);

struct known {
	const char *source; /* appears in the block's comment lines */
	const struct want *want;
	int64_t self_pid; /* the entry that is this process; 0: none */
};

static const struct known known[] = {
	{ "#13751", &want_13751, 0 },
	{ "#35901", &want_35901, 0 },
	{ "#111363", &want_111363, 0 },
	{ "#16417", &want_16417, 0 },
	{ "vllm issue #34643", &want_34643, 162519 },
	{ "vllm issue #8903", &want_8903, 78729 },
	{ "kaito issue #976", &want_976, 562167 },
	{ "pytorch issue #465", &want_465, 0 },
	{ "IIM issue #28", &want_iim28, 0 },
	{ "WanVideoWrapper issue #565", &want_wan565, 0 },
	{ "Wan2GP issue #1083", &want_wan1083, 0 },
	{ "ComfyUI issue #12366", &want_12366, 0 },
	{ "None_Z-trainer issue #17", &want_zt17, 0 },
};

/* What PyTorch printed, message by message, with notes (tests/data/oom). */
static const char *const message_files[] = {
	"tests/data/oom/messages.txt",
	"tests/data/oom/containers.txt",
	"tests/data/oom/runtime.txt",
};
#define NFILES (sizeof(message_files) / sizeof(message_files[0]))

static char *
read_messages(size_t file)
{
	char path[4096], *text;

	text = slurp(top_path(path, sizeof(path), message_files[file]), NULL);
	if (text == NULL)
		fail_msg("cannot read %s (set MF_TOP)", path);
	return text;
}

/*
 * The line at *p, NUL-terminated in place over its '\n'; *p moves past it.
 * NULL once *p is at the end.
 */
static char *
next_line(char **p)
{
	char *line = *p, *nl;

	if (*line == '\0')
		return NULL;
	nl = strchr(line, '\n');
	if (nl == NULL) {
		*p = line + strlen(line);
	} else {
		*nl = '\0';
		*p = nl + 1;
	}
	return line;
}

/* Append line and a '\n' to dst[0..cap), whose text is *len long. */
static void
append_line(char *dst, size_t *len, size_t cap, const char *line)
{
	int k = snprintf(dst + *len, cap - *len, "%s\n", line);

	assert_true(k > 0 && (size_t)k < cap - *len);
	*len += (size_t)k;
}

/*
 * Check one block: the comment lines name the source, the other lines are
 * the message, which must be one whose figures are written out in known[].
 * Returns 1 when the block held a message.
 */
static int
check_block(char *block)
{
	char msg[8192], notes[4096];
	size_t m = 0, n = 0, i;
	char *p = block, *line;
	struct mf_oom o;
	struct mf_error err;
	int matched = 0;

	msg[0] = notes[0] = '\0';
	for (line = next_line(&p); line != NULL; line = next_line(&p)) {
		if (line[0] == '#')
			append_line(notes, &n, sizeof(notes), line);
		else if (line[0] != '\0')
			append_line(msg, &m, sizeof(msg), line);
	}
	if (m == 0)
		return 0;
	memset(&err, 0, sizeof(err));
	if (mf_oom_parse(msg, m, &o, &err) != MF_OK)
		fail_msg("%s\n%s\n%s", notes, msg, MSG(&err));
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (strstr(notes, known[i].source) == NULL)
			continue;
		check_parsed(&o, known[i].want);
		if (known[i].self_pid == 0)
			assert_int_equal(o.self, -1);
		else
			assert_int_equal(o.procs[o.self].pid,
			    known[i].self_pid);
		matched++;
	}
	if (matched != 1)
		fail_msg("no figures written out for this message:\n%s", notes);
	return 1;
}

static void
test_parse_real_messages(void **state)
{
	char *text[NFILES], *p, *next;
	int blocks = 0, found;
	size_t f, i;

	(void)state;
	for (f = 0; f < NFILES; f++)
		text[f] = read_messages(f);
	/* Every known source is in one of the files. */
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		for (f = 0, found = 0; f < NFILES; f++)
			found += strstr(text[f], known[i].source) != NULL;
		if (found != 1)
			fail_msg("%s: in %d files", known[i].source, found);
	}
	for (f = 0; f < NFILES; f++) {
		for (p = text[f]; p != NULL; p = next) {
			next = strstr(p, "\n-----");
			if (next != NULL) {
				*next = '\0';
				next += strlen("\n-----");
			}
			blocks += check_block(p);
		}
		free(text[f]);
	}
	/* One block per known message, each checked above. */
	assert_int_equal(blocks, sizeof(known) / sizeof(known[0]));
}

/* ---- written messages, one per other variant ---- */

/*
 * The example in pytorch#99699 (the PR that made the 2.1 message), wrapped
 * over lines as given there: another process and this process.
 *   138.00 MiB = 138 * 2^20 = 144703488
 *   15.90 GiB = 1590 * 2^30 / 100 = 17072495001.6 -> 17072495002
 *   8.44 MiB = 844 * 2^20 / 100 = 8849981.44 -> 8849981
 *   577.00 MiB = 577 * 2^20 = 605028352
 *   15.32 GiB = 1532 * 2^30 / 100 = 16449724743.68 -> 16449724744
 *   14.12 GiB = 1412 * 2^30 / 100 = 15161234554.88 -> 15161234555
 *   410.41 MiB = 41041 * 2^20 / 100 = 430346076.16 -> 430346076
 * Cause: free < tried; outside = 17072495002 - 8849981 - (15161234555 +
 *   430346076) = 1472064390 < 25% (4268123750.5); ru >= tried but < 5%
 *   (853624750.1) -> capacity.
 */
static const char msg_99699[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "138.00 MiB.\n"
    "GPU 0 has a total capacty of 15.90 GiB of which 8.44 MiB is free.\n"
    "Process 1246069 has 577.00 MiB memory in use. Including non-PyTorch "
    "memory,\n"
    "this process has 15.32 GiB memory in use. Of the allocated memory\n"
    "14.12 GiB is allocated by PyTorch, and 410.41 MiB is reserved\n"
    "by PyTorch but unallocated. If reserved but unallocated memory is "
    "large\n"
    "try setting max_split_size_mb to avoid fragmentation.  See "
    "documentation\n"
    " for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n";

static void
test_parse_v2_1_wrapped_with_processes(void **state)
{
	static const struct want w = { 144703488, 17072495002, 8849981,
		15161234555, 430346076, 16449724744, 605028352, NOPE, NOPE, 0,
		MF_OOM_V2_1, MF_OOM_CUDA, MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_99699, &w, &o);
	assert_int_equal(o.nprocs, 1);
	assert_int_equal(o.procs[0].pid, 1246069);
	assert_int_equal(o.procs[0].bytes, 605028352);
}

/*
 * 1.4 with a memory fraction ("X allowed;", PyTorch 1.8+) and the
 * max_split_size_mb hint (1.10+):
 *   20.00 MiB = 20 * 2^20 = 20971520
 *   11.76 GiB = 1176 * 2^30 / 100 = 12627203850.24 -> 12627203850
 *   4.62 GiB = 462 * 2^30 / 100 = 4960687226.88 -> 4960687227
 *   6.81 GiB = 681 * 2^30 / 100 = 7312181821.44 -> 7312181821
 *   4.77 GiB = 477 * 2^30 / 100 = 5121748500.48 -> 5121748500
 *   4.74 GiB = 474 * 2^30 / 100 = 5089536245.76 -> 5089536246
 *   ru = 5089536246 - 4960687227 = 128849019
 * Cause: free 7312181821 >= tried 20971520 -> limit.
 */
static const char msg_v14_allowed[] =
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
    "11.76 GiB total capacity; 4.62 GiB already allocated; 6.81 GiB free; "
    "4.77 GiB allowed; 4.74 GiB reserved in total by PyTorch) If reserved "
    "memory is >> allocated memory try setting max_split_size_mb to avoid "
    "fragmentation.  See documentation for Memory Management and "
    "PYTORCH_CUDA_ALLOC_CONF";

static void
test_parse_v1_4_allowed_and_hint(void **state)
{
	static const struct want w = { 20971520, 12627203850, 7312181821,
		4960687227, 128849019, NOPE, NOPE, 5121748500, NOPE, 0,
		MF_OOM_V1_4, MF_OOM_CUDA, MF_OOM_LIMIT };
	struct mf_oom o;

	(void)state;
	check_text(msg_v14_allowed, &w, &o);
}

/*
 * 1.4 with the hint, from YingqianWang/iPASSR#9 (2024), "0 bytes free":
 *   10.73 GiB = 1073 * 2^30 / 100 = 11521249771.52 -> 11521249772
 *   8.00 GiB = 8589934592
 *   17.20 GiB = 1720 * 2^30 / 100 = 18468359372.8 -> 18468359373
 *   19.15 GiB = 1915 * 2^30 / 100 = 20562155929.6 -> 20562155930
 *   ru = 20562155930 - 18468359373 = 2093796557
 * Cause: tried 11521249772 > total 8589934592 -> capacity.
 */
static const char msg_v14_hint[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "10.73 GiB (GPU 0; 8.00 GiB total capacity; 17.20 GiB already "
    "allocated; 0 bytes free; 19.15 GiB reserved in total by PyTorch) If "
    "reserved memory is >> allocated memory try setting max_split_size_mb "
    "to avoid fragmentation.  See documentation for Memory Management and "
    "PYTORCH_CUDA_ALLOC_CONF";

static void
test_parse_v1_4_hint_zero_free(void **state)
{
	static const struct want w = { 11521249772, 8589934592, 0, 18468359373,
		2093796557, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V1_4, MF_OOM_CUDA,
		MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_v14_hint, &w, &o);
}

/*
 * 1.4, written, with CRLF line breaks and indentation; nothing else on the
 * card is PyTorch's:
 *   512.00 MiB = 512 * 2^20 = 536870912
 *   10.76 GiB = 1076 * 2^30 / 100 = 11553462026.24 -> 11553462026
 *   2.10 GiB = 210 * 2^30 / 100 = 2254857830.4 -> 2254857830
 *   312.56 MiB = 31256 * 2^20 / 100 = 327742914.56 -> 327742915
 *   2.35 GiB = 235 * 2^30 / 100 = 2523293286.4 -> 2523293286
 *   ru = 2523293286 - 2254857830 = 268435456
 * Cause: free < tried; outside = 11553462026 - 327742915 - 2523293286 =
 *   8702425825 >= 25% of total (2888365506.5) -> other-process.
 */
static const char msg_v14_other[] =
    "Traceback (most recent call last):\r\n"
    "  File \"train.py\", line 12, in <module>\r\n"
    "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB\r\n"
    "    (GPU 0; 10.76 GiB total capacity; 2.10 GiB already allocated;\r\n"
    "    312.56 MiB free; 2.35 GiB reserved in total by PyTorch)\r\n";

static void
test_parse_v1_4_crlf_other_process(void **state)
{
	static const struct want w = { 536870912, 11553462026, 327742915,
		2254857830, 268435456, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V1_4,
		MF_OOM_CUDA, MF_OOM_OTHER_PROCESS };
	struct mf_oom o;

	(void)state;
	check_text(msg_v14_other, &w, &o);
}

/*
 * 1.0, written, after a log line, wrapped and indented with tabs:
 *   2.50 MiB = 250 * 2^20 / 100 = 2621440
 *   10.92 GiB = 1092 * 2^30 / 100 = 11725260718.08 -> 11725260718
 *   10.28 GiB = 1028 * 2^30 / 100 = 11038065950.72 -> 11038065951
 *   1.56 MiB = 156 * 2^20 / 100 = 1635778.56 -> 1635779
 *   17.03 MiB = 1703 * 2^20 / 100 = 17857249.28 -> 17857249
 * Cause: free < tried; outside = 11725260718 - 1635779 - (11038065951 +
 *   17857249) = 667701739 < 25%; ru >= tried but < 5% (586263035.9)
 *   -> capacity.
 */
static const char msg_v10_wrapped[] =
    "2019-03-01 10:00:01,123 ERROR worker-3 step 1200 failed:\n"
    "RuntimeError: CUDA out of memory. Tried to allocate 2.50 MiB (GPU 3;\n"
    "\t10.92 GiB total capacity; 10.28 GiB already allocated;\n"
    "\t1.56 MiB free; 17.03 MiB cached)\n";

static void
test_parse_v1_0_log_prefix_tabs(void **state)
{
	static const struct want w = { 2621440, 11725260718, 1635779,
		11038065951, 17857249, NOPE, NOPE, NOPE, NOPE, 3, MF_OOM_V1_0,
		MF_OOM_CUDA, MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_v10_wrapped, &w, &o);
}

/*
 * 2.1 in a container: PyTorch names itself "Process 224".
 *   1.95 GiB = 195 * 2^30 / 100 = 2093796556.8 -> 2093796557
 *   23.69 GiB = 2369 * 2^30 / 100 = 25436943810.56 -> 25436943811
 *   1.50 GiB = 150 * 2^30 / 100 = 1610612736
 *   22.18 GiB = 2218 * 2^30 / 100 = 23815593656.32 -> 23815593656
 *   19.71 GiB = 1971 * 2^30 / 100 = 21163451351.04 -> 21163451351
 *   2.17 GiB = 217 * 2^30 / 100 = 2330019758.08 -> 2330019758
 * Cause: free < tried; outside = 25436943811 - 1610612736 - (21163451351
 *   + 2330019758) = 332859966 < 25%; ru 2330019758 >= tried 2093796557
 *   and >= 5% of total (1271847190.55) -> fragmentation.
 */
static const char msg_v21_container[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "1.95 GiB. GPU 0 has a total capacty of 23.69 GiB of which 1.50 GiB is "
    "free. Process 224 has 22.18 GiB memory in use. Of the allocated "
    "memory 19.71 GiB is allocated by PyTorch, and 2.17 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large "
    "try setting max_split_size_mb to avoid fragmentation.  See "
    "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF";

static void
test_parse_v2_1_single_process_is_this_one(void **state)
{
	static const struct want w = { 2093796557, 25436943811, 1610612736,
		21163451351, 2330019758, 23815593656, NOPE, NOPE, NOPE, 0,
		MF_OOM_V2_1, MF_OOM_CUDA, MF_OOM_FRAGMENTATION };
	struct mf_oom o;

	(void)state;
	check_text(msg_v21_container, &w, &o);
	assert_int_equal(o.nprocs, 1);
	assert_int_equal(o.procs[0].pid, 224);
	/* The only entry, and it holds the 23493471109 PyTorch reserved. */
	assert_int_equal(o.self, 0);
	assert_int_equal(o.self_from, MF_OOM_SELF_ONLY);
}

/*
 * 2.2+, written: two processes on an 80 GB card, the expandable_segments
 * hint and URL.
 *   2.00 GiB = 2147483648
 *   79.19 GiB = 7919 * 2^30 / 100 = 85029615042.56 -> 85029615043
 *   1.25 GiB = 125 * 2^30 / 100 = 1342177280
 *   40.12 GiB = 4012 * 2^30 / 100 = 43078521978.88 -> 43078521979
 *   37.80 GiB = 3780 * 2^30 / 100 = 40587440947.2 -> 40587440947
 *   35.10 GiB = 3510 * 2^30 / 100 = 37688338022.4 -> 37688338022
 *   1.21 GiB = 121 * 2^30 / 100 = 1299227607.04 -> 1299227607
 * Cause: free < tried; outside = 85029615043 - 1342177280 - (37688338022 +
 *   1299227607) = 44699872134 >= 25% of total (21257403760.75)
 *   -> other-process.
 */
static const char msg_v22_other[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
    "GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.25 GiB is "
    "free. Process 3121 has 40.12 GiB memory in use. Including non-PyTorch "
    "memory, this process has 37.80 GiB memory in use. Of the allocated "
    "memory 35.10 GiB is allocated by PyTorch, and 1.21 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large "
    "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

static void
test_parse_v2_2_other_process(void **state)
{
	static const struct want w = { 2147483648, 85029615043, 1342177280,
		37688338022, 1299227607, 40587440947, 43078521979, NOPE, NOPE,
		1, MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_OTHER_PROCESS };
	struct mf_oom o;

	(void)state;
	check_text(msg_v22_other, &w, &o);
	assert_int_equal(o.nprocs, 1);
	assert_int_equal(o.procs[0].pid, 3121);
}

/*
 * 2.2+, newest wording: private pools (CUDA Graphs) and the docs.pytorch.org
 * URL.
 *   4.00 GiB = 4294967296
 *   39.38 GiB = 3938 * 2^30 / 100 = 42283953029.12 -> 42283953029
 *   3.12 GiB = 312 * 2^30 / 100 = 3350074490.88 -> 3350074491
 *   36.25 GiB = 3625 * 2^30 / 100 = 38923141120
 *   25.50 GiB = 2550 * 2^30 / 100 = 27380416512
 *   1.00 GiB = 1073741824
 *   10.20 GiB = 1020 * 2^30 / 100 = 10952166604.8 -> 10952166605
 * Cause: free < tried; outside = 42283953029 - 3350074491 - (27380416512 +
 *   10952166605) = 601295421 < 25%; ru 10952166605 >= tried and >= 5%
 *   (2114197651.45) -> fragmentation.
 */
static const char msg_v22_pools[] =
    "CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
    "capacity of 39.38 GiB of which 3.12 GiB is free. Including non-PyTorch "
    "memory, this process has 36.25 GiB memory in use. Of the allocated "
    "memory 25.50 GiB is allocated by PyTorch, with 1.00 GiB allocated in "
    "private pools (e.g., CUDA Graphs), and 10.20 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large "
    "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-"
    "memory-usage-with-pytorch-cuda-alloc-conf)";

static void
test_parse_v2_2_private_pools_fragmentation(void **state)
{
	static const struct want w = { 4294967296, 42283953029, 3350074491,
		27380416512, 10952166605, 38923141120, NOPE, NOPE, 1073741824,
		0, MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_FRAGMENTATION };
	struct mf_oom o;

	(void)state;
	check_text(msg_v22_pools, &w, &o);
}

/*
 * ROCm, from ROCm/TheRock#2118 (a CI log line): "X allowed;" and private
 * pools "(e.g., HIP Graphs)".
 *   2.00 MiB = 2097152
 *   287.98 GiB = 28798 * 2^30 / 100 = 309216170475.52 -> 309216170476
 *   275.86 GiB = 27586 * 2^30 / 100 = 296202419568.64 -> 296202419569
 *   1.05 GiB = 105 * 2^30 / 100 = 1127428915.2 -> 1127428915
 *   1017.01 MiB = 101701 * 2^20 / 100 = 1066412277.76 -> 1066412278
 *   17.00 MiB = 17825792
 *   54.99 MiB = 5499 * 2^20 / 100 = 57661194.24 -> 57661194
 * Cause: free 296202419569 >= tried 2097152 -> limit.
 */
static const char msg_hip_allowed[] =
    "2025-11-14T08:52:38.3746210Z FAILED [0.0004s] test_autograd.py::"
    "TestAutogradDeviceTypeCUDA::test_set_requires_grad_only_for_floats_"
    "cuda_int32 - torch.OutOfMemoryError: HIP out of memory. Tried to "
    "allocate 2.00 MiB. GPU 0 has a total capacity of 287.98 GiB of which "
    "275.86 GiB is free. 1.05 GiB allowed; Of the allocated memory 1017.01 "
    "MiB is allocated by PyTorch, with 17.00 MiB allocated in private "
    "pools (e.g., HIP Graphs), and 54.99 MiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

static void
test_parse_hip_allowed_private_pools(void **state)
{
	static const struct want w = { 2097152, 309216170476, 296202419569,
		1066412278, 57661194, NOPE, NOPE, 1127428915, 17825792, 0,
		MF_OOM_V2_2, MF_OOM_HIP, MF_OOM_LIMIT };
	struct mf_oom o;

	(void)state;
	check_text(msg_hip_allowed, &w, &o);
}

/*
 * 2.2+ without NVML (no process clause), "bytes" figures:
 *   20.00 MiB = 20971520
 *   7.79 GiB = 779 * 2^30 / 100 = 8364448808.96 -> 8364448809
 *   7.40 GiB = 740 * 2^30 / 100 = 7945689497.6 -> 7945689498
 * Cause: free 0 < tried; outside = 8364448809 - 0 - (7945689498 + 512) =
 *   418758799 < 25%; ru 512 < tried -> capacity.
 */
static const char msg_v22_bytes[] =
    "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
    "capacity of 7.79 GiB of which 0 bytes is free. Of the allocated memory "
    "7.40 GiB is allocated by PyTorch, and 512 bytes is reserved by PyTorch "
    "but unallocated.";

static void
test_parse_v2_2_no_process_bytes_unit(void **state)
{
	static const struct want w = { 20971520, 8364448809, 0, 7945689498, 512,
		NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V2_2, MF_OOM_CUDA,
		MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_v22_bytes, &w, &o);
}

/*
 * format_size() has no TiB: 4 TiB prints "4096.00 GiB" = 4096 * 2^30 =
 * 4398046511104.
 *   31.33 GiB = 3133 * 2^30 / 100 = 33640331345.92 -> 33640331346
 *   30.95 GiB = 3095 * 2^30 / 100 = 33232309452.8 -> 33232309453
 * Cause: tried > total -> capacity.
 */
static const char msg_huge[] =
    "CUDA out of memory. Tried to allocate 4096.00 GiB. GPU 0 has a total "
    "capacity of 31.33 GiB of which 30.95 GiB is free. Of the allocated "
    "memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by "
    "PyTorch but unallocated.";

static void
test_parse_gib_above_tib(void **state)
{
	static const struct want w = { 4398046511104, 33640331346, 33232309453,
		0, 0, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V2_2, MF_OOM_CUDA,
		MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_huge, &w, &o);
}

/*
 * 2.1 with neither process clause (NVML unavailable), as torchrun prints it
 * with a rank prefix:
 *   256.00 MiB = 256 * 2^20 = 268435456
 *   14.75 GiB = 1475 * 2^30 / 100 = 15837691904
 *   201.06 MiB = 20106 * 2^20 / 100 = 210826690.56 -> 210826691
 *   13.91 GiB = 1391 * 2^30 / 100 = 14935748771.84 -> 14935748772
 *   412.35 MiB = 41235 * 2^20 / 100 = 432380313.6 -> 432380314
 * Cause: free < tried; outside = 15837691904 - 210826691 - (14935748772 +
 *   432380314) = 258736127 < 25% (3959422976); ru 432380314 >= tried but
 *   < 5% of total (791884595.2) -> capacity.
 */
static const char msg_v21_neither[] =
    "[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
    "allocate 256.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which "
    "201.06 MiB is free. Of the allocated memory 13.91 GiB is allocated by "
    "PyTorch, and 412.35 MiB is reserved by PyTorch but unallocated. If "
    "reserved but unallocated memory is large try setting "
    "max_split_size_mb to avoid fragmentation.  See documentation for "
    "Memory Management and PYTORCH_CUDA_ALLOC_CONF";

static void
test_parse_v2_1_no_process_clause(void **state)
{
	static const struct want w = { 268435456, 15837691904, 210826691,
		14935748772, 432380314, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V2_1,
		MF_OOM_CUDA, MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_v21_neither, &w, &o);
	assert_int_equal(o.nprocs, 0);
}

/*
 * 2.1 with a memory fraction: "this process has" and "X allowed;".
 *   1.50 GiB = 150 * 2^30 / 100 = 1610612736
 *   39.39 GiB = 3939 * 2^30 / 100 = 42294690447.36 -> 42294690447
 *   17.82 GiB = 1782 * 2^30 / 100 = 19134079303.68 -> 19134079304
 *   21.55 GiB = 2155 * 2^30 / 100 = 23139136307.2 -> 23139136307
 *   19.70 GiB = 1970 * 2^30 / 100 = 21152713932.8 -> 21152713933
 *   18.92 GiB = 1892 * 2^30 / 100 = 20315195310.08 -> 20315195310
 *   1.87 GiB = 187 * 2^30 / 100 = 2007897210.88 -> 2007897211
 * Cause: free 19134079304 >= tried 1610612736 -> limit.
 */
static const char msg_v21_allowed[] =
    "RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 2 "
    "has a total capacty of 39.39 GiB of which 17.82 GiB is free. "
    "Including non-PyTorch memory, this process has 21.55 GiB memory in "
    "use. 19.70 GiB allowed; Of the allocated memory 18.92 GiB is "
    "allocated by PyTorch, and 1.87 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "max_split_size_mb to avoid fragmentation.  See documentation for "
    "Memory Management and PYTORCH_CUDA_ALLOC_CONF";

static void
test_parse_v2_1_allowed(void **state)
{
	static const struct want w = { 1610612736, 42294690447, 19134079304,
		20315195310, 2007897211, 23139136307, NOPE, 21152713933, NOPE,
		2, MF_OOM_V2_1, MF_OOM_CUDA, MF_OOM_LIMIT };
	struct mf_oom o;

	(void)state;
	check_text(msg_v21_allowed, &w, &o);
}

/*
 * 2.1 spelling with both process clauses and the private-pools clause
 * (PyTorch added that clause after fixing the spelling; the clauses are
 * read whichever spelling comes first).
 *   1.25 GiB = 125 * 2^30 / 100 = 1342177280
 *   23.64 GiB = 2364 * 2^30 / 100 = 25383256719.36 -> 25383256719
 *   1.01 GiB = 101 * 2^30 / 100 = 1084479242.24 -> 1084479242
 *   9.12 GiB = 912 * 2^30 / 100 = 9792525434.88 -> 9792525435
 *   13.40 GiB = 1340 * 2^30 / 100 = 14388140441.6 -> 14388140442
 *   11.08 GiB = 1108 * 2^30 / 100 = 11897059409.92 -> 11897059410
 *   2.00 GiB = 2147483648
 *   1.79 GiB = 179 * 2^30 / 100 = 1921997864.96 -> 1921997865
 * Cause: free < tried; outside = 25383256719 - 1084479242 - (11897059410 +
 *   1921997865) = 10479720202 >= 25% of total (6345814179.75)
 *   -> other-process.
 */
static const char msg_v21_pools[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "1.25 GiB. GPU 0 has a total capacty of 23.64 GiB of which 1.01 GiB is "
    "free. Process 5012 has 9.12 GiB memory in use. Including non-PyTorch "
    "memory, this process has 13.40 GiB memory in use. Of the allocated "
    "memory 11.08 GiB is allocated by PyTorch, with 2.00 GiB allocated in "
    "private pools (e.g., CUDA Graphs), and 1.79 GiB is reserved by "
    "PyTorch but unallocated.";

static void
test_parse_v2_1_private_pools(void **state)
{
	static const struct want w = { 1342177280, 25383256719, 1084479242,
		11897059410, 1921997865, 14388140442, 9792525435, NOPE,
		2147483648, 0, MF_OOM_V2_1, MF_OOM_CUDA, MF_OOM_OTHER_PROCESS };
	struct mf_oom o;

	(void)state;
	check_text(msg_v21_pools, &w, &o);
	assert_int_equal(o.nprocs, 1);
	assert_int_equal(o.procs[0].pid, 5012);
	assert_int_equal(o.procs[0].bytes, 9792525435);
}

/*
 * Under WSL and Windows WDDM NVML cannot say what a process uses and
 * answers 2^64 - 1, which format_size() prints as 17179869184.00 GiB
 * ((2^64 - 1) / 2^30 = 17179869183.99999999907, to two decimals): no
 * figure, not a figure above 1 EiB.
 *   20.00 MiB = 20 * 2^20 = 20971520
 *   8.00 GiB = 8 * 2^30 = 8589934592
 *   7.06 GiB = 706 * 2^30 / 100 = 7580617277.44 -> 7580617277
 *   135.27 MiB = 13527 * 2^20 / 100 = 141840875.52 -> 141840876
 * Cause: free 0 < tried; outside = 8589934592 - 0 - (7580617277 +
 *   141840876) = 867476439 < 25% (2147483648); ru 141840876 >= tried but
 *   < 5% (429496729.6) -> capacity.
 */
static const char msg_v21_wsl[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "20.00 MiB. GPU 0 has a total capacty of 8.00 GiB of which 0 bytes is "
    "free. Including non-PyTorch memory, this process has 17179869184.00 "
    "GiB memory in use. Of the allocated memory 7.06 GiB is allocated by "
    "PyTorch, and 135.27 MiB is reserved by PyTorch but unallocated. If "
    "reserved but unallocated memory is large try setting "
    "max_split_size_mb to avoid fragmentation.  See documentation for "
    "Memory Management and PYTORCH_CUDA_ALLOC_CONF";

static void
test_parse_process_unknown(void **state)
{
	static const struct want w = { 20971520, 8589934592, 0, 7580617277,
		141840876, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V2_1, MF_OOM_CUDA,
		MF_OOM_CAPACITY };
	struct mf_oom o;

	(void)state;
	check_text(msg_v21_wsl, &w, &o);
	assert_int_equal(o.nprocs, 0);
}

/*
 * 2.2+ under WSL with a memory fraction: neither process figure is known.
 *   3.00 GiB = 3 * 2^30 = 3221225472
 *   11.99 GiB = 1199 * 2^30 / 100 = 12874164469.76 -> 12874164470
 *   9.41 GiB = 941 * 2^30 / 100 = 10103910563.84 -> 10103910564
 *   4.80 GiB = 480 * 2^30 / 100 = 5153960755.2 -> 5153960755
 *   1.62 GiB = 162 * 2^30 / 100 = 1739461754.88 -> 1739461755
 *   20.00 MiB = 20971520
 * Cause: free 10103910564 >= tried 3221225472 -> limit.
 */
static const char msg_v22_wsl_allowed[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 "
    "GiB. GPU 0 has a total capacity of 11.99 GiB of which 9.41 GiB is "
    "free. Process 4420 has 17179869184.00 GiB memory in use. Including "
    "non-PyTorch memory, this process has 17179869184.00 GiB memory in "
    "use. 4.80 GiB allowed; Of the allocated memory 1.62 GiB is allocated "
    "by PyTorch, and 20.00 MiB is reserved by PyTorch but unallocated. If "
    "reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

static void
test_parse_processes_unknown_allowed(void **state)
{
	static const struct want w = { 3221225472, 12874164470, 10103910564,
		1739461755, 20971520, NOPE, NOPE, 5153960755, NOPE, 0,
		MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_LIMIT };
	struct mf_oom o;
	json_t *j, *p;

	(void)state;
	check_text(msg_v22_wsl_allowed, &w, &o);
	assert_int_equal(o.nprocs, 1);
	assert_int_equal(o.procs[0].pid, 4420);
	assert_int_equal(o.procs[0].bytes, -1);
	j = readback_oom(&o);
	assert_non_null(j);
	p = json_array_get(json_object_get(j, "processes"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "pid")), 4420);
	assert_true(json_is_null(json_object_get(p, "bytes")));
	assert_true(json_is_null(json_object_get(j, "processBytes")));
	assert_true(json_is_null(json_object_get(j, "otherProcessBytes")));
	json_decref(j);
}

/*
 * Figures near 1 EiB (2^60 = 1152921504606846976) in every unit are read
 * exactly; above it they are MF_ERANGE.
 */
static enum mf_rc
tried_bytes(const char *fig, int64_t *out)
{
	char text[512];
	struct mf_oom o;
	struct mf_error err;
	enum mf_rc rc;

	snprintf(text, sizeof(text),
	    "CUDA out of memory. Tried to allocate "
	    "%s. GPU 0 has a total capacity of 1.00 GiB of which 0 bytes is "
	    "free. Of the allocated memory 0 bytes is allocated by PyTorch, "
	    "and 0 bytes is reserved by PyTorch but unallocated.",
	    fig);
	rc = mf_oom_parse(text, strlen(text), &o, &err);
	if (rc == MF_OK)
		*out = o.tried;
	return rc;
}

static void
test_parse_sizes_near_max(void **state)
{
	int64_t b = 0;

	(void)state;
	/* 2^60 in bytes, KiB (2^50 * 2^10), MiB (2^40 * 2^20), GiB. */
	assert_int_equal(tried_bytes("1152921504606846976 bytes", &b), MF_OK);
	assert_int_equal(b, 1152921504606846976);
	assert_int_equal(tried_bytes("1125899906842624.00 KiB", &b), MF_OK);
	assert_int_equal(b, 1152921504606846976);
	assert_int_equal(tried_bytes("1099511627776.00 MiB", &b), MF_OK);
	assert_int_equal(b, 1152921504606846976);
	assert_int_equal(tried_bytes("1073741824.00 GiB", &b), MF_OK);
	assert_int_equal(b, 1152921504606846976);
	/*
	 * 1073741823.99 GiB = 2^60 - 2^30 / 100 = 1152921504606846976 -
	 * 10737418.24 = 1152921504596109557.76 -> 1152921504596109558.
	 */
	assert_int_equal(tried_bytes("1073741823.99 GiB", &b), MF_OK);
	assert_int_equal(b, 1152921504596109558);
	/* One byte, one hundredth of a KiB or MiB above 2^60. */
	assert_int_equal(tried_bytes("1152921504606846977 bytes", &b),
	    MF_ERANGE);
	assert_int_equal(tried_bytes("1125899906842624.01 KiB", &b), MF_ERANGE);
	assert_int_equal(tried_bytes("1099511627776.01 MiB", &b), MF_ERANGE);
	/* Far above: the whole part alone is out of range. */
	assert_int_equal(tried_bytes("2147483648.00 GiB", &b), MF_ERANGE);
	assert_int_equal(tried_bytes("9223372036854775807 bytes", &b),
	    MF_ERANGE);
	/* One decimal: 1.5 GiB = 15 * 2^30 / 10 = 1610612736. */
	assert_int_equal(tried_bytes("1.5 GiB", &b), MF_OK);
	assert_int_equal(b, 1610612736);
	/* 1.01 KiB = 101 * 1024 / 100 = 1034.24 -> 1034. */
	assert_int_equal(tried_bytes("1.01 KiB", &b), MF_OK);
	assert_int_equal(b, 1034);
	/* 1.99 KiB = 199 * 1024 / 100 = 2037.76 -> 2038. */
	assert_int_equal(tried_bytes("1.99 KiB", &b), MF_OK);
	assert_int_equal(b, 2038);
}

/* ---- the cause rules at their edges, with figures in bytes ---- */

static enum mf_oom_cause
cause_of(int tried, int total, int free_, int alloc, int ru)
{
	char text[512];
	struct mf_oom o;
	struct mf_error err;

	snprintf(text, sizeof(text),
	    "CUDA out of memory. Tried to allocate "
	    "%d bytes. GPU 0 has a total capacity of %d bytes of which %d "
	    "bytes is free. Of the allocated memory %d bytes is allocated by "
	    "PyTorch, and %d bytes is reserved by PyTorch but unallocated.",
	    tried, total, free_, alloc, ru);
	if (mf_oom_parse(text, strlen(text), &o, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	return o.cause;
}

static void
test_cause_rule_edges(void **state)
{
	(void)state;
	/* Rule 1 needs tried > total; equal falls through (outside 0). */
	assert_int_equal(cause_of(1001, 1000, 0, 0, 0), MF_OOM_CAPACITY);
	assert_int_equal(cause_of(1000, 1000, 0, 1000, 0), MF_OOM_CAPACITY);
	/* Rule 1 before rule 2: free >= tried but tried > total. */
	assert_int_equal(cause_of(1001, 1000, 1001, 0, 0), MF_OOM_CAPACITY);
	/* Rule 2: free == tried is enough. */
	assert_int_equal(cause_of(100, 1000, 100, 0, 0), MF_OOM_LIMIT);
	assert_int_equal(cause_of(100, 1000, 99, 901, 0), MF_OOM_CAPACITY);
	/* Rule 3: outside = 1000 - 50 - 700 = 250 = 25% exactly. */
	assert_int_equal(cause_of(100, 1000, 50, 700, 0), MF_OOM_OTHER_PROCESS);
	/* 1000 - 50 - 701 = 249: under 25%, ru 0 -> capacity. */
	assert_int_equal(cause_of(100, 1000, 50, 701, 0), MF_OOM_CAPACITY);
	/* Rule 3 before rule 4: outside 250 and ru 100 >= tried, >= 5%. */
	assert_int_equal(cause_of(100, 1000, 50, 600, 100),
	    MF_OOM_OTHER_PROCESS);
	/* Rule 4: outside = 1000 - 0 - 800 = 200; ru 50 = tried = 5%. */
	assert_int_equal(cause_of(50, 1000, 0, 750, 50), MF_OOM_FRAGMENTATION);
	/* ru 49 >= tried 49 but under 5% of 1000 -> capacity. */
	assert_int_equal(cause_of(49, 1000, 0, 752, 49), MF_OOM_CAPACITY);
	/* ru 60 >= 5% but under tried 61 -> capacity. */
	assert_int_equal(cause_of(61, 1000, 0, 740, 60), MF_OOM_CAPACITY);
}

/* ---- errors ---- */

static enum mf_rc
parse_err(const char *text, struct mf_error *err)
{
	struct mf_oom o;
	enum mf_rc rc;

	memset(&o, 0x5a, sizeof(o));
	memset(err, 0, sizeof(*err));
	rc = mf_oom_parse(text, strlen(text), &o, err);
	if (rc != MF_OK) {
		struct mf_oom untouched;

		/* The out-parameter is untouched on error. */
		memset(&untouched, 0x5a, sizeof(untouched));
		assert_memory_equal(&o, &untouched, sizeof(o));
	}
	return rc;
}

static void
test_parse_no_message_is_einval(void **state)
{
	struct mf_error err;
	struct mf_oom o;

	(void)state;
	assert_int_equal(parse_err("", &err), MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "no PyTorch out-of-memory"));
	assert_int_equal(parse_err("Traceback (most recent call last):\n"
	                           "ValueError: bad shape\n",
	                     &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "no PyTorch out-of-memory"));
	/* Foreign messages without figures say what is missing. */
	assert_int_equal(parse_err("RuntimeError: CUDA out of memory", &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "no PyTorch message with"));
	assert_non_null(strstr(MSG(&err), "CUDA error: out of memory"));
	/* Other backends' messages are not taken. */
	assert_int_equal(parse_err("MPS backend out of memory (MPS allocated: "
	                           "1.00 GiB, other allocations: 0 bytes, max "
	                           "allowed: 9.07 GiB).",
	                     &err),
	    MF_EINVAL);
	assert_int_equal(mf_oom_parse(NULL, 0, &o, &err), MF_EINVAL);
	assert_int_equal(mf_oom_parse("x", 1, NULL, &err), MF_EINVAL);
	/* err may be NULL. */
	assert_int_equal(mf_oom_parse("x", 1, &o, NULL), MF_EINVAL);
}

static void
test_parse_malformed_names_place(void **state)
{
	struct mf_error err;

	(void)state;
	assert_int_equal(parse_err("line one\nline two\n"
	                           "RuntimeError: CUDA out of memory. Tried to "
	                           "allocate 16.00 GiB "
	                           "(GPU 0; 11.93 GiB totl capacity; 4.00 GiB "
	                           "already allocated; 7.33 "
	                           "GiB free; 179.00 KiB cached)",
	                     &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "expected 'total capacity;'"));
	assert_non_null(strstr(MSG(&err), "found 'totl capacity;"));
	/*
	 * "totl" starts at column 81 of line 3: "RuntimeError: " (14) "CUDA
	 * out of memory. " (20) "Tried to allocate " (18) "16.00 GiB " (10)
	 * "(GPU 0; " (8) "11.93 GiB " (10) = 80 characters before it.
	 */
	assert_int_equal(err.line, 3);
	assert_int_equal(err.column, 81);
	/* Three decimals are not format_size(). */
	assert_int_equal(parse_err("CUDA out of memory. Tried to allocate "
	                           "7.333 GiB (GPU 0; 11.93 GiB total "
	                           "capacity; 4.00 GiB already "
	                           "allocated; 7.33 GiB free; 179.00 KiB "
	                           "cached)",
	                     &err),
	    MF_EINVAL);
	/* Nor is a unit it never prints. */
	assert_int_equal(parse_err("CUDA out of memory. Tried to allocate "
	                           "1.00 TiB (GPU 0; 11.93 GiB total capacity; "
	                           "4.00 GiB already "
	                           "allocated; 7.33 GiB free; 179.00 KiB "
	                           "cached)",
	                     &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "a unit"));
	/* "bytes" only after a whole number. */
	assert_int_equal(parse_err("CUDA out of memory. Tried to allocate "
	                           "1.50 bytes (GPU 0; 11.93 GiB total "
	                           "capacity; 4.00 GiB already "
	                           "allocated; 7.33 GiB free; 179.00 KiB "
	                           "cached)",
	                     &err),
	    MF_EINVAL);
}

static void
test_parse_figure_too_large_is_erange(void **state)
{
	struct mf_error err;

	(void)state;
	/* 2^60 bytes = 1073741824 GiB; one more hundredth is too much. */
	assert_int_equal(
	    parse_err(
	        "CUDA out of memory. Tried to allocate "
	        "1073741824.01 GiB. GPU 0 has a total capacity of 1.00 GiB of "
	        "which 0 bytes is free. Of the allocated memory 0 bytes is "
	        "allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
	        "unallocated.",
	        &err),
	    MF_ERANGE);
	assert_int_equal(parse_err("CUDA out of memory. Tried to allocate "
	                           "99999999999999999999999.00 GiB. GPU 0 has "
	                           "a total capacity of "
	                           "1.00 GiB",
	                     &err),
	    MF_ERANGE);
	assert_int_equal(
	    parse_err(
	        "CUDA out of memory. Tried to allocate "
	        "1073741824.00 GiB. GPU 0 has a total capacity of 1.00 GiB of "
	        "which 0 bytes is free. Of the allocated memory 0 bytes is "
	        "allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
	        "unallocated.",
	        &err),
	    MF_OK);
}

/*
 * Every prefix of a message: no crash, MF_EINVAL until the last figure is
 * complete, and "cut off" once the anchor is there.
 */
static void
check_prefixes(const char *msg, const char *head, const char *last)
{
	size_t n = strlen(msg), full, anchor, i;
	const char *end = strstr(msg, last), *a = strstr(msg, head);
	struct mf_oom o;
	struct mf_error err;
	enum mf_rc rc;

	assert_non_null(end);
	assert_non_null(a);
	full = (size_t)(end - msg) + strlen(last);
	anchor = (size_t)(a - msg) + strlen(head);
	for (i = 0; i <= n; i++) {
		/* A copy of exactly i bytes, so ASan sees any overread. */
		char *cut = malloc(i ? i : 1);

		assert_non_null(cut);
		memcpy(cut, msg, i);
		memset(&err, 0, sizeof(err));
		rc = mf_oom_parse(cut, i, &o, &err);
		free(cut);
		if (i >= full) {
			assert_int_equal(rc, MF_OK);
			continue;
		}
		assert_int_equal(rc, MF_EINVAL);
		if (i >= anchor && strstr(MSG(&err), "cut off") == NULL)
			fail_msg("prefix %zu: %s", i, MSG(&err));
	}
}

static void
test_parse_truncated_never_partial(void **state)
{
	(void)state;
	check_prefixes(msg_v22_other, "out of memory.", "but unallocated.");
	check_prefixes(msg_99699, "out of memory.", "but unallocated.");
	check_prefixes(msg_v22_pools, "out of memory.", "but unallocated.");
	check_prefixes(msg_hip_allowed, "out of memory.", "but unallocated.");
	check_prefixes(msg_v14_allowed, "out of memory.", "by PyTorch)");
	check_prefixes(msg_v10_wrapped, "out of memory.", "cached)");
}

static void
test_parse_last_complete_message_wins(void **state)
{
	char text[4096];
	struct mf_oom o;
	struct mf_error err;

	(void)state;
	/* A cut-off message, then two whole ones: the last ended the run. */
	snprintf(text, sizeof(text),
	    "retrying after: CUDA out of memory. "
	    "Tried to allocate 1.00 GiB. GPU 0 has a total\n%s\n%s",
	    msg_v22_bytes, msg_v22_other);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.tried, 2147483648);
	assert_int_equal(o.cause, MF_OOM_OTHER_PROCESS);
	/* The other way round; a cut-off one after them does not count. */
	snprintf(text, sizeof(text),
	    "%s\n%s\nCUDA out of memory. Tried to allocate 1.00 GiB. GPU 0",
	    msg_v22_other, msg_v22_bytes);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.tried, 20971520);
	assert_int_equal(o.cause, MF_OOM_CAPACITY);
}

static void
test_parse_not_nul_terminated(void **state)
{
	size_t n = sizeof(msg_v22_bytes) - 1;
	char *copy = malloc(n);
	struct mf_oom o;
	struct mf_error err;

	(void)state;
	assert_non_null(copy);
	memcpy(copy, msg_v22_bytes, n);
	assert_int_equal(mf_oom_parse(copy, n, &o, &err), MF_OK);
	assert_int_equal(o.reserved_unallocated, 512);
	free(copy);
}

static void
test_parse_many_processes(void **state)
{
	char text[8192];
	size_t n;
	struct mf_oom o;
	struct mf_error err;
	int i;

	(void)state;
	n = (size_t)snprintf(text, sizeof(text),
	    "CUDA out of memory. Tried "
	    "to allocate 2.00 MiB. GPU 0 has a total capacity of 1.00 GiB of "
	    "which 1.00 MiB is free.");
	/* 20 processes of 10.00 MiB: 16 kept, all 20 summed. */
	for (i = 0; i < 20; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
		    " Process %d has 10.00 MiB memory in use.", 100 + i);
	snprintf(text + n, sizeof(text) - n,
	    " Of the allocated memory 1.00 "
	    "MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch "
	    "but unallocated.");
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.nprocs, MF_OOM_MAX_PROCS);
	assert_int_equal(o.procs[15].pid, 115);
	/* Several processes, no "this process", and four not kept: any of
	 * them may be this one, so neither sum is known. */
	assert_int_equal(o.nlisted, 20);
	assert_int_equal(o.self_from, MF_OOM_SELF_UNKNOWN);
	assert_int_equal(o.others, -1);
	assert_int_equal(o.process, -1);
	/* outside = 2^30 - 2^20 - 2^20 = 1071644672 >= 25%. */
	assert_int_equal(o.cause, MF_OOM_OTHER_PROCESS);
}

/* ---- names, JSON and the text report ---- */

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(mf_oom_cause_name(MF_OOM_CAPACITY), "capacity");
	assert_string_equal(mf_oom_cause_name(MF_OOM_LIMIT), "limit");
	assert_string_equal(mf_oom_cause_name(MF_OOM_OTHER_PROCESS),
	    "other-process");
	assert_string_equal(mf_oom_cause_name(MF_OOM_FRAGMENTATION),
	    "fragmentation");
	assert_string_equal(mf_oom_cause_name(MF_OOM_OUTSIDE),
	    "outside-allocator");
	assert_string_equal(mf_oom_cause_name((enum mf_oom_cause)99),
	    "unknown");
	/* The releases that print each format (oom.h says from where). */
	assert_string_equal(mf_oom_format_name(MF_OOM_V1_0), "1.0-1.3");
	assert_string_equal(mf_oom_format_name(MF_OOM_V1_4), "1.4-2.0");
	assert_string_equal(mf_oom_format_name(MF_OOM_V2_1), "2.1");
	assert_string_equal(mf_oom_format_name(MF_OOM_V2_2), "2.2+");
	assert_string_equal(mf_oom_format_name(MF_OOM_RT_THC), "0.x");
	assert_string_equal(mf_oom_format_name(MF_OOM_RT_BARE), "1.0+");
	assert_string_equal(mf_oom_format_name(MF_OOM_RT_HINT), "1.x");
	assert_string_equal(mf_oom_format_name(MF_OOM_RT_DSA), "2.0+");
	assert_string_equal(mf_oom_format_name(MF_OOM_RT_HELP), "2.9+");
	assert_string_equal(mf_oom_format_name(MF_OOM_ASYNC),
	    "cudaMallocAsync-2.0+");
	assert_string_equal(mf_oom_format_name((enum mf_oom_format)0),
	    "unknown");
}

static json_t *
json_of(const char *text)
{
	struct mf_oom o;
	struct mf_error err;
	json_t *j;

	if (mf_oom_parse(text, strlen(text), &o, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	j = readback_oom(&o);
	assert_non_null(j);
	return j;
}

/* Every advice string and the explanation contain needle (or must not). */
static int
advice_has(json_t *j, const char *needle)
{
	json_t *a = json_object_get(j, "advice"), *v;
	size_t i;
	int found = 0;

	assert_true(json_is_array(a));
	assert_true(json_array_size(a) > 0);
	json_array_foreach (a, i, v) {
		assert_true(json_is_string(v));
		if (strstr(json_string_value(v), needle) != NULL)
			found = 1;
	}
	return found;
}

static void
check_no_empty_cache(json_t *j)
{
	json_t *e = json_object_get(j, "explanation");

	assert_true(json_is_string(e));
	assert_true(strlen(json_string_value(e)) > 0);
	assert_null(strstr(json_string_value(e), "empty_cache"));
	assert_false(advice_has(j, "empty_cache"));
}

/* ---- which listed process is this one ---- */

/*
 * Written, as PyTorch prints it in a container on an 80 GB card: another
 * process holds more than this one, so two entries hold at least what
 * PyTorch reserved, and only one of them that plus a CUDA context.
 *   2.00 GiB = 2147483648
 *   79.19 GiB -> 85029615043 (above)
 *   354.00 MiB = 354 * 2^20 = 371195904
 *   41.20 GiB = 4120 * 2^30 / 100 = 44238163148.8 -> 44238163149
 *   37.58 GiB = 3758 * 2^30 / 100 = 40351217745.92 -> 40351217746
 *   36.52 GiB = 3652 * 2^30 / 100 = 39213051412.48 -> 39213051412
 *   538.20 MiB = 53820 * 2^20 / 100 = 564343603.2 -> 564343603
 * Reserved = 39213051412 + 564343603 = 39777395015.  Process 58: 40351217746
 * - 39777395015 = 573822731 (547 MiB), inside 256 MiB to 1 GiB; Process
 * 2210: 4460768134 (4.15 GiB) beyond it.  So this process is 58 and
 * otherProcessBytes is 2210's 44238163149 alone (not 78.78 GiB).
 * Cause: free < tried; outside = 85029615043 - 371195904 - 39777395015 =
 *   44881024124 >= 25% (21257403761) -> other-process.
 */
static const char msg_self_by_context[] =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
    "GiB. GPU 0 has a total capacity of 79.19 GiB of which 354.00 MiB is "
    "free. Process 2210 has 41.20 GiB memory in use. Process 58 has 37.58 "
    "GiB memory in use. Of the allocated memory 36.52 GiB is allocated by "
    "PyTorch, and 538.20 MiB is reserved by PyTorch but unallocated.";

static void
test_parse_self_by_context(void **state)
{
	static const struct want w = { 2147483648, 85029615043, 371195904,
		39213051412, 564343603, 40351217746, 44238163149, NOPE, NOPE, 0,
		MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_OTHER_PROCESS };
	struct mf_oom o;
	json_t *j, *self;

	(void)state;
	check_text(msg_self_by_context, &w, &o);
	assert_int_equal(o.self, 1);
	assert_int_equal(o.self_from, MF_OOM_SELF_CONTEXT);
	j = readback_oom(&o);
	assert_non_null(j);
	self = json_object_get(j, "thisProcess");
	assert_string_equal(json_string_value(json_object_get(self, "from")),
	    "context");
	assert_int_equal(json_integer_value(json_object_get(self, "pid")), 58);
	assert_int_equal(json_integer_value(
	                     json_object_get(self, "nonPyTorchBytes")),
	    573822731);
	/* The advice names the other process, not this one. */
	assert_true(advice_has(j, "pid 2210 (41.20 GiB)."));
	assert_false(advice_has(j, "58 ("));
	assert_non_null(
	    strstr(json_string_value(json_object_get(j, "explanation")),
	        "This process is Process 58 (37.58 GiB"));
	json_decref(j);
}

/*
 * Written: two entries, each what PyTorch reserved plus about a context.
 *   512.00 MiB = 536870912
 *   23.99 GiB = 2399 * 2^30 / 100 = 25759066357.76 -> 25759066358
 *   200.00 MiB = 209715200
 *   11.90 GiB = 1190 * 2^30 / 100 = 12777527705.6 -> 12777527706
 *   11.60 GiB = 1160 * 2^30 / 100 = 12455405158.4 -> 12455405158
 *   11.00 GiB = 11811160064
 *   100.00 MiB = 104857600
 * Reserved 11916017664: 12777527706 is 861510042 (822 MiB) above it and
 * 12455405158 539387494 (514 MiB): both could be this process.
 * Cause: free < tried; outside = 25759066358 - 209715200 - 11916017664 =
 *   13633333494 >= 25% (6439766590) -> other-process.
 */
static const char msg_self_unknown[] =
    "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total "
    "capacity of 23.99 GiB of which 200.00 MiB is free. Process 71 has "
    "11.90 GiB memory in use. Process 72 has 11.60 GiB memory in use. Of "
    "the allocated memory 11.00 GiB is allocated by PyTorch, and 100.00 "
    "MiB is reserved by PyTorch but unallocated.";

static void
test_parse_self_unknown(void **state)
{
	static const struct want w = { 536870912, 25759066358, 209715200,
		11811160064, 104857600, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V2_2,
		MF_OOM_CUDA, MF_OOM_OTHER_PROCESS };
	struct mf_oom o;
	json_t *j, *self;
	const char *e;

	(void)state;
	check_text(msg_self_unknown, &w, &o);
	assert_int_equal(o.self, -1);
	assert_int_equal(o.self_from, MF_OOM_SELF_UNKNOWN);
	j = readback_oom(&o);
	assert_non_null(j);
	self = json_object_get(j, "thisProcess");
	assert_string_equal(json_string_value(json_object_get(self, "from")),
	    "unknown");
	assert_true(json_is_null(json_object_get(self, "pid")));
	assert_true(json_is_null(json_object_get(j, "otherProcessBytes")));
	assert_true(json_is_null(json_object_get(j, "processBytes")));
	/* It says so, and what it assumed. */
	e = json_string_value(json_object_get(j, "explanation"));
	assert_non_null(strstr(e, "the figures cannot tell"));
	assert_non_null(strstr(e, "256.00 MiB to 1024.00 MiB"));
	assert_true(advice_has(j, "pid 71 (11.90 GiB), 72 (11.60 GiB)."));
	json_decref(j);
}

/*
 * An entry just at what PyTorch reserved counts within the figures'
 * precision: the two GiB figures and the MiB one may each be off by half
 * a hundredth of their unit (5368710 + 5368710 + 5243 bytes).
 *   20.00 GiB = 21474836480; 19.50 GiB = 20937965568; 512.00 MiB =
 *   536870912: reserved 21474836480, the entry exactly that.
 */
static void
test_parse_self_within_precision(void **state)
{
	static const char msg[] =
	    "CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a "
	    "total capacity of 39.39 GiB of which 512.00 MiB is free. Process "
	    "9 has 20.00 GiB memory in use. Process 10 has 17.00 GiB memory "
	    "in use. Of the allocated memory 19.50 GiB is allocated by "
	    "PyTorch, and 512.00 MiB is reserved by PyTorch but unallocated.";
	struct mf_oom o;
	struct mf_error err;

	(void)state;
	assert_int_equal(mf_oom_parse(msg, strlen(msg), &o, &err), MF_OK);
	/* 17.00 GiB is under the reserved: Process 9 is the only one. */
	assert_int_equal(o.self, 0);
	assert_int_equal(o.self_from, MF_OOM_SELF_ONLY);
	assert_int_equal(o.process, 21474836480);
	/* 17 * 2^30 = 18253611008. */
	assert_int_equal(o.others, 18253611008);
}

/*
 * A figure printed "1.00 GiB" reads as exactly 2^30 bytes, which
 * format_size() itself prints as "1024.00 MiB": its precision is still a
 * GiB figure's.
 *   7.79 GiB = 779 * 2^30 / 100 = 8364448808.96 -> 8364448809
 *   1.00 GiB = 1073741824; 4.00 MiB = 4194304; 6.00 GiB = 6442450944
 *   reserved = 1073741824 + 4194304 = 1077936128
 * Process 7 is 4194304 bytes short of it, within the two GiB figures' and
 * the MiB one's precision: 5368710 + 5368710 + 5243 = 10742663.  So both
 * entries hold what PyTorch reserved; neither is that plus a context (7 is
 * about none, 8 is 5364514816 above it, past 1 GiB): unknown.  With the
 * MiB figure's precision alone (3 * 5243) Process 8 would be the only one.
 * 1.01 GiB = 101 * 2^30 / 100 = 1084479242.24 -> 1084479242, above the
 * reserved outright: unknown too.
 * Cause: free 104857600 < tried 2147483648; outside = 8364448809 -
 *   104857600 - 1077936128 = 7181655081 >= 25% (2091112203) ->
 *   other-process.
 */
static void
test_parse_self_precision_of_printed_unit(void **state)
{
	static const char fmt[] =
	    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
	    "capacity of 7.79 GiB of which 100.00 MiB is free. Process 7 has "
	    "%s memory in use. Process 8 has 6.00 GiB memory in use. Of the "
	    "allocated memory 1.00 GiB is allocated by PyTorch, and 4.00 MiB "
	    "is reserved by PyTorch but unallocated.";
	static const char *const seven[] = { "1.00 GiB", "1.01 GiB" };
	static const struct want w = { 2147483648, 8364448809, 104857600,
		1073741824, 4194304, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_V2_2,
		MF_OOM_CUDA, MF_OOM_OTHER_PROCESS };
	char msg[512];
	struct mf_oom o;

	(void)state;
	for (size_t i = 0; i < sizeof(seven) / sizeof(seven[0]); i++) {
		snprintf(msg, sizeof(msg), fmt, seven[i]);
		check_text(msg, &w, &o);
		assert_int_equal(o.nprocs, 2);
		assert_int_equal(o.procs[0].bytes,
		    i == 0 ? 1073741824 : 1084479242);
		assert_int_equal(o.self, -1);
		assert_int_equal(o.self_from, MF_OOM_SELF_UNKNOWN);
	}
}

/* ---- PyTorch 2.3's device index, written as a character ---- */

/*
 * pytorch#126766 and #129632: 2.3 streams the int8_t device index as a
 * char.  GPU 1 is the byte 0x01, GPU 31 0x1f; a log may drop it ("GPU
 * has", two spaces); a capture of the C++ string keeps GPU 0's NUL.
 *   274.00 MiB = 274 * 2^20 = 287309824
 *   4.93 GiB = 493 * 2^30 / 100 = 5293547192.32 -> 5293547192
 *   137.69 MiB = 13769 * 2^20 / 100 = 144378429.44 -> 144378429
 *   4.30 GiB = 430 * 2^30 / 100 = 4617089843.2 -> 4617089843
 *   4.14 GiB = 414 * 2^30 / 100 = 4445291151.36 -> 4445291151
 *   35.88 MiB = 3588 * 2^20 / 100 = 37622906.88 -> 37622907
 * Cause: free < tried; outside = 5293547192 - 144378429 - (4445291151 +
 *   37622907) = 666254705, under 25% (1323386798); reserved but
 *   unallocated under tried -> capacity.
 */
static const char v23_head[] =
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "274.00 MiB. GPU ";
static const char v23_tail[] =
    " has a total capacity of 4.93 GiB of which 137.69 MiB is free. "
    "Including non-PyTorch memory, this process has 4.30 GiB memory in "
    "use. Of the allocated memory 4.14 GiB is allocated by PyTorch, and "
    "35.88 MiB is reserved by PyTorch but unallocated.";

/* v23_head, index (n bytes), v23_tail into buf; the length. */
static size_t
v23_message(char *buf, size_t size, const char *index, size_t n)
{
	size_t h = sizeof(v23_head) - 1, t = sizeof(v23_tail) - 1;

	assert_true(h + n + t <= size);
	memcpy(buf, v23_head, h);
	memcpy(buf + h, index, n);
	memcpy(buf + h + n, v23_tail, t);
	return h + n + t;
}

static void
test_parse_v2_3_index_as_byte(void **state)
{
	static const struct {
		const char *index;
		size_t n;
	} forms[] = { { "\001", 1 }, { "", 0 }, { "\037", 1 }, { "\0", 1 } };
	static const struct want w = { 287309824, 5293547192, 144378429,
		4445291151, 37622907, 4617089843, NOPE, NOPE, NOPE, NOPE,
		MF_OOM_V2_2, MF_OOM_CUDA, MF_OOM_CAPACITY };
	char msg[512], report[4096];
	struct mf_oom o;
	struct mf_error err;
	json_t *j;

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t len =
		    v23_message(msg, sizeof(msg), forms[i].index, forms[i].n);

		if (mf_oom_parse(msg, len, &o, &err) != MF_OK)
			fail_msg("form %zu: %s", i, MSG(&err));
		check_parsed(&o, &w);
		j = readback_oom(&o);
		assert_non_null(j);
		assert_true(json_is_null(json_object_get(j, "gpu")));
		assert_string_equal(json_string_value(
		                        json_object_get(j, "explanation")),
		    "The GPU (4.93 GiB) is full of this job's own tensors: "
		    "PyTorch has 4.14 GiB allocated and 35.88 MiB reserved but "
		    "unallocated, 137.69 MiB is free and nothing else holds "
		    "much of the card, so the 274.00 MiB it asked for does not "
		    "fit.");
		json_decref(j);
		assert_true(mf_oom_text(&o, report, sizeof(report)) > 0);
		assert_non_null(strstr(report,
		    "CUDA out of memory on the GPU (PyTorch 2.2+ message)\n"));
		assert_null(strstr(report, "GPU -"));
	}
}

/* Where the GPU is unknown every cause's explanation says "the GPU". */
static void
test_report_unknown_gpu(void **state)
{
	static const struct {
		const char *msg, *says;
	} cases[] = {
		{ msg_v22_bytes, "The GPU (" },
		{ msg_huge, "larger than the GPU's whole memory" },
		{ msg_v14_allowed, "The GPU had " },
		{ msg_v22_other, " of the GPU's " },
		{ msg_v22_pools, " unallocated on the GPU, " },
	};
	struct mf_oom o;
	struct mf_error err;
	char report[4096];
	json_t *j;
	const char *e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(mf_oom_parse(cases[i].msg,
		                     strlen(cases[i].msg), &o, &err),
		    MF_OK);
		o.gpu = -1;
		j = readback_oom(&o);
		assert_non_null(j);
		e = json_string_value(json_object_get(j, "explanation"));
		if (strstr(e, cases[i].says) == NULL || strstr(e, "GPU -"))
			fail_msg("case %zu: %s", i, e);
		json_decref(j);
		assert_true(mf_oom_text(&o, report, sizeof(report)) > 0);
		assert_non_null(strstr(report, "out of memory on the GPU ("));
		assert_null(strstr(report, "GPU -"));
	}
}

/*
 * GPU 0's NUL ends 2.3's message after "GPU " (pytorch#129632): no
 * figures are left, and the error says why rather than asking for the
 * whole message, at the end of the text or of the line.
 */
static void
test_parse_v2_3_stops_after_gpu(void **state)
{
	static const char *const stops[] = {
		"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
		"allocate 83.82 GiB. GPU ",
		"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
		"allocate 83.82 GiB. GPU",
		"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
		"allocate 83.82 GiB. GPU \nException raised from malloc at "
		"../c10/cuda/CUDACachingAllocator.cpp:1125 (most recent call "
		"first):\n",
	};
	struct mf_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		assert_int_equal(parse_err(stops[i], &err), MF_EINVAL);
		if (strstr(MSG(&err), "stops after 'GPU '") == NULL ||
		    strstr(MSG(&err), "PyTorch 2.3") == NULL ||
		    strstr(MSG(&err), "where it is caught") == NULL ||
		    strstr(MSG(&err), "paste the whole message") != NULL)
			fail_msg("case %zu: %s", i, MSG(&err));
	}
	/* The third stops at the end of line 1: it points at line 2. */
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 1);
	/* An index byte says GPU 1 printed; a text that ends after it is cut
	 * off. */
	assert_int_equal(parse_err("CUDA out of memory. Tried to allocate "
	                           "1.00 GiB. GPU \001",
	                     &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "paste the whole message"));
	/* Anything else in the index's place is not as PyTorch prints it. */
	assert_int_equal(parse_err("CUDA out of memory. Tried to allocate "
	                           "1.00 GiB. GPU x has a total capacity of",
	                     &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "expected a number, found 'x has"));
}

/* ---- cudaMallocAsync's message ---- */

/*
 * The message as mallocAsync in c10/cuda/CUDAMallocAsyncAllocator.cpp
 * streams it (pytorch#82682): the index as n bytes (digits, or from 2.3
 * the character), the five figures as format_size() prints them (fig:
 * allocated, requested, device limit, free, PyTorch limit), after prefix.
 * The length.
 */
static size_t
async_message(char *buf, size_t size, const char *prefix, const char *index,
    size_t n, const char *const fig[5])
{
	size_t len;
	int k;

	k = snprintf(buf, size, "%sAllocation on device ", prefix);
	assert_true(k > 0 && (size_t)k + n < size);
	len = (size_t)k;
	memcpy(buf + len, index, n);
	len += n;
	k = snprintf(buf + len, size - len,
	    " would exceed allowed memory. (out of memory)"
	    "\nCurrently allocated     : %s"
	    "\nRequested               : %s"
	    "\nDevice limit            : %s"
	    "\nFree (according to CUDA): %s"
	    "\nPyTorch limit (set by user-supplied memory fraction)"
	    "\n                        : %s",
	    fig[0], fig[1], fig[2], fig[3], fig[4]);
	assert_true(k > 0 && (size_t)k < size - len);
	return len + (size_t)k;
}

/*
 * GPU 0, no memory fraction set, at the end of a traceback after a log
 * line:
 *   10.50 GiB = 1050 * 2^30 / 100 = 11274289152 (allocated)
 *   2.00 GiB = 2147483648 (requested)
 *   11.76 GiB = 1176 * 2^30 / 100 = 12627203850.24 -> 12627203850
 *   1.06 GiB = 106 * 2^30 / 100 = 1138166333.44 -> 1138166333
 *   17179869184.00 GiB = 2^64: UINT64_MAX, no limit
 * No reserved figure.  Cause: tried <= total; free < tried; no limit;
 *   outside = 12627203850 - 1138166333 - 11274289152 = 214748365, under
 *   25% (3156800963) -> capacity.
 */
static const char msg_async[] =
    "[2026-01-12 09:14:03] ERROR train: step 412 failed\n"
    "Traceback (most recent call last):\n"
    "  File \"train.py\", line 61, in <module>\n"
    "    loss = model(batch).loss\n"
    "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed "
    "memory. (out of memory)\n"
    "Currently allocated     : 10.50 GiB\n"
    "Requested               : 2.00 GiB\n"
    "Device limit            : 11.76 GiB\n"
    "Free (according to CUDA): 1.06 GiB\n"
    "PyTorch limit (set by user-supplied memory fraction)\n"
    "                        : 17179869184.00 GiB\n";

static void
test_parse_async_no_limit(void **state)
{
	static const struct want w = { 2147483648, 12627203850, 1138166333,
		11274289152, NOPE, NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_ASYNC,
		MF_OOM_CUDA, MF_OOM_CAPACITY };
	static const char *const fig[5] = { "10.50 GiB", "2.00 GiB",
		"11.76 GiB", "1.06 GiB", "17179869184.00 GiB" };
	struct mf_oom o, built;
	struct mf_error err;
	char msg[1024], report[4096];
	size_t len;
	json_t *j;

	(void)state;
	check_text(msg_async, &w, &o);
	assert_int_equal(o.nprocs, 0);
	assert_int_equal(o.self_from, MF_OOM_SELF_NONE);
	/* The same message as the source streams it, with no prefix. */
	len = async_message(msg, sizeof(msg), "", "0", 1, fig);
	assert_int_equal(mf_oom_parse(msg, len, &built, &err), MF_OK);
	check_parsed(&built, &w);
	j = readback_oom(&o);
	assert_non_null(j);
	assert_true(
	    json_is_null(json_object_get(j, "reservedUnallocatedBytes")));
	assert_true(json_is_null(json_object_get(j, "allowedBytes")));
	assert_string_equal(json_string_value(json_object_get(j, "format")),
	    "cudaMallocAsync-2.0+");
	assert_string_equal(json_string_value(
	                        json_object_get(j, "explanation")),
	    "GPU 0 (11.76 GiB) is full of this job's own tensors: PyTorch has "
	    "10.50 GiB allocated, 1.06 GiB is free and nothing else holds "
	    "much of the card, so the 2.00 GiB it asked for does not fit.");
	check_no_empty_cache(j);
	json_decref(j);
	assert_true(mf_oom_text(&o, report, sizeof(report)) > 0);
	assert_non_null(strstr(report,
	    "CUDA out of memory on GPU 0 (PyTorch "
	    "cudaMallocAsync-2.0+ message)\n"));
	assert_non_null(strstr(report, "allocated              10.50 GiB"));
	assert_null(strstr(report, "reserved"));
	assert_null(strstr(report, "\n  allowed"));
	assert_null(strstr(report, "unknown"));
	/* Never read in part: every prefix is refused, as cut off once
	 * "Allocation on device" is there. */
	check_prefixes(msg_async, "Allocation on device", "184.00 GiB");
}

/*
 * GPU 1 with a memory fraction: PyTorch's own limit refuses it before
 * CUDA is asked.
 *   5.50 GiB = 550 * 2^30 / 100 = 5905580032 (allocated)
 *   512.00 MiB = 512 * 2^20 = 536870912 (requested)
 *   11.76 GiB -> 12627203850 (above)
 *   300.00 MiB = 300 * 2^20 = 314572800 (free)
 *   5.88 GiB = 588 * 2^30 / 100 = 6313601925.12 -> 6313601925 (limit)
 * Cause: tried <= total; free < tried; allocated + tried = 6442450944 >
 *   6313601925 -> limit (without it, outside = 12627203850 - 314572800 -
 *   5905580032 = 6407051018 would read as other-process).
 */
static const char msg_async_limit[] =
    "torch.cuda.OutOfMemoryError: Allocation on device 1 would exceed "
    "allowed memory. (out of memory)\n"
    "Currently allocated     : 5.50 GiB\n"
    "Requested               : 512.00 MiB\n"
    "Device limit            : 11.76 GiB\n"
    "Free (according to CUDA): 300.00 MiB\n"
    "PyTorch limit (set by user-supplied memory fraction)\n"
    "                        : 5.88 GiB\n";

static void
test_parse_async_over_limit(void **state)
{
	static const struct want w = { 536870912, 12627203850, 314572800,
		5905580032, NOPE, NOPE, NOPE, 6313601925, NOPE, 1, MF_OOM_ASYNC,
		MF_OOM_CUDA, MF_OOM_LIMIT };
	struct mf_oom o;
	json_t *j;

	(void)state;
	check_text(msg_async_limit, &w, &o);
	assert_true(mf_oom_over_limit(&o));
	j = readback_oom(&o);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "allowedBytes")),
	    6313601925);
	assert_string_equal(json_string_value(
	                        json_object_get(j, "explanation")),
	    "PyTorch's own limit refused the allocation: this process may "
	    "use 5.88 GiB of GPU 1, and the 5.50 GiB allocated plus the "
	    "512.00 MiB it asked for is more; the cudaMallocAsync allocator "
	    "checks that limit before it asks CUDA, whatever the card has "
	    "free (300.00 MiB).");
	assert_true(
	    advice_has(j, "torch.cuda.set_per_process_memory_fraction()"));
	assert_true(advice_has(j, "5.88 GiB"));
	assert_false(advice_has(j, "MPS"));
	check_no_empty_cache(j);
	json_decref(j);
}

/*
 * The fraction 1.0: the limit is the card's total and was not reached,
 * yet CUDA refused with room on the card.
 *   4.00 GiB = 4294967296 (allocated), 1.00 GiB = 1073741824 (requested)
 *   11.76 GiB -> 12627203850 (device limit and PyTorch limit)
 *   2.00 GiB = 2147483648 (free)
 * Cause: free >= tried -> limit; allocated + tried = 5368709120 is under
 *   the limit, so not PyTorch's own: no fraction advice.
 */
static const char msg_async_room[] =
    "Allocation on device 0 would exceed allowed memory. (out of memory)\n"
    "Currently allocated     : 4.00 GiB\n"
    "Requested               : 1.00 GiB\n"
    "Device limit            : 11.76 GiB\n"
    "Free (according to CUDA): 2.00 GiB\n"
    "PyTorch limit (set by user-supplied memory fraction)\n"
    "                        : 11.76 GiB";

static void
test_parse_async_limit_not_reached(void **state)
{
	static const struct want w = { 1073741824, 12627203850, 2147483648,
		4294967296, NOPE, NOPE, NOPE, 12627203850, NOPE, 0,
		MF_OOM_ASYNC, MF_OOM_CUDA, MF_OOM_LIMIT };
	struct mf_oom o;
	json_t *j;

	(void)state;
	check_text(msg_async_room, &w, &o);
	assert_false(mf_oom_over_limit(&o));
	j = readback_oom(&o);
	assert_non_null(j);
	assert_non_null(strstr(json_string_value(
	                           json_object_get(j, "explanation")),
	    "not the card (PyTorch's own limit, 11.76 GiB, was not reached)."));
	assert_false(advice_has(j, "set_per_process_memory_fraction"));
	assert_true(advice_has(j, "MPS"));
	check_no_empty_cache(j);
	json_decref(j);
	check_prefixes(msg_async_room, "Allocation on device",
	    "fraction)\n                        : 11.76 GiB");
}

/*
 * Most of the card held outside what PyTorch allocated, with the index
 * as 2.3 to 2.9 write it:
 *   2.50 GiB = 250 * 2^30 / 100 = 2684354560 (allocated)
 *   1.00 GiB = 1073741824 (requested)
 *   23.65 GiB = 2365 * 2^30 / 100 = 25393994137.6 -> 25393994138
 *   512.00 MiB = 512 * 2^20 = 536870912 (free)
 * Cause: free < tried; no limit; outside = 25393994138 - 536870912 -
 *   2684354560 = 22172768666 >= 25% (6348498535) -> other-process, which
 *   here may be what CUDA's pool keeps for this process.
 */
static void
test_parse_async_index_and_other_process(void **state)
{
	static const struct {
		const char *index;
		size_t n;
		int gpu;
	} forms[] = { { "0", 1, 0 }, { "12", 2, 12 }, { "\001", 1, -1 },
		{ "", 0, -1 }, { "\037", 1, -1 }, { "\0", 1, -1 },
		{ "\n", 1, -1 } };
	static const char *const fig[5] = { "2.50 GiB", "1.00 GiB", "23.65 GiB",
		"512.00 MiB", "17179869184.00 GiB" };
	struct want w = { 1073741824, 25393994138, 536870912, 2684354560, NOPE,
		NOPE, NOPE, NOPE, NOPE, 0, MF_OOM_ASYNC, MF_OOM_CUDA,
		MF_OOM_OTHER_PROCESS };
	char msg[1024], says[64];
	struct mf_oom o;
	struct mf_error err;
	json_t *j;
	const char *e;

	(void)state;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t len = async_message(msg, sizeof(msg),
		    "torch.OutOfMemoryError: ", forms[i].index, forms[i].n,
		    fig);

		if (mf_oom_parse(msg, len, &o, &err) != MF_OK)
			fail_msg("form %zu: %s", i, MSG(&err));
		w.gpu = forms[i].gpu;
		check_parsed(&o, &w);
		j = readback_oom(&o);
		assert_non_null(j);
		e = json_string_value(json_object_get(j, "explanation"));
		if (forms[i].gpu < 0)
			snprintf(says, sizeof(says), "of the GPU's 23.65 GiB");
		else
			snprintf(says, sizeof(says), "of GPU %d's 23.65 GiB",
			    forms[i].gpu);
		if (strstr(e, says) == NULL ||
		    strstr(e, "CUDA's pool keeps") == NULL ||
		    strstr(e, "reserved") != NULL)
			fail_msg("form %zu: %s", i, e);
		assert_true(advice_has(j, "ps -elf | grep python"));
		assert_true(advice_has(j,
		    "torch.cuda.memory_reserved() is what "
		    "CUDA's pool holds"));
		assert_true(advice_has(j, "share of the 20.65 GiB"));
		check_no_empty_cache(j);
		json_decref(j);
	}
}

/*
 * GPU 0's NUL ends the message after "Allocation on device " from 2.3 to
 * 2.9 (pytorch#168369): the error says so, at the end of the text or of
 * its line.
 */
static void
test_parse_async_stops_after_device(void **state)
{
	static const char *const stops[] = {
		"torch.OutOfMemoryError: Allocation on device ",
		"torch.OutOfMemoryError: Allocation on device",
		"torch.OutOfMemoryError: Allocation on device \nPrompt executed "
		"in 4.21 seconds\n",
	};
	struct mf_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		assert_int_equal(parse_err(stops[i], &err), MF_EINVAL);
		if (strstr(MSG(&err), "stops after 'Allocation on device '") ==
		        NULL ||
		    strstr(MSG(&err), "2.3 to 2.9") == NULL ||
		    strstr(MSG(&err), "paste the whole message") != NULL)
			fail_msg("case %zu: %s", i, MSG(&err));
	}
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 1);
	/* An index byte and nothing after it: cut off. */
	assert_int_equal(parse_err("Allocation on device \001", &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "paste the whole message"));
	/* The first line alone: cut off before its figures. */
	assert_int_equal(parse_err("torch.OutOfMemoryError: Allocation on "
	                           "device 0 would exceed allowed memory. "
	                           "(out of memory)\n",
	                     &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "cut off"));
	assert_non_null(strstr(MSG(&err), "'Currently allocated :'"));
	/* Anything else in the index's place is not as PyTorch prints it. */
	assert_int_equal(parse_err("Allocation on device memory failed", &err),
	    MF_EINVAL);
	assert_non_null(strstr(MSG(&err), "expected a number, found 'memory"));
	/* A limit above 1 EiB that is not the no-limit sentinel. */
	assert_int_equal(parse_err("Allocation on device 0 would exceed "
	                           "allowed memory. (out of memory)\n"
	                           "Currently allocated     : 1.00 GiB\n"
	                           "Requested               : 1.00 GiB\n"
	                           "Device limit            : 1.00 GiB\n"
	                           "Free (according to CUDA): 0 bytes\n"
	                           "PyTorch limit (set by user-supplied "
	                           "memory fraction)\n"
	                           "                        : "
	                           "17179869184.01 GiB",
	                     &err),
	    MF_ERANGE);
}

/* The cause rules on cudaMallocAsync's figures, in bytes; limit < 0 is
 * the no-limit sentinel. */
static enum mf_oom_cause
async_cause_of(int alloc, int tried, int total, int free_, int limit)
{
	char figs[5][32], text[1024];
	const char *fig[5] = { figs[0], figs[1], figs[2], figs[3], figs[4] };
	struct mf_oom o;
	struct mf_error err;
	size_t len;

	snprintf(figs[0], sizeof(figs[0]), "%d bytes", alloc);
	snprintf(figs[1], sizeof(figs[1]), "%d bytes", tried);
	snprintf(figs[2], sizeof(figs[2]), "%d bytes", total);
	snprintf(figs[3], sizeof(figs[3]), "%d bytes", free_);
	if (limit < 0)
		snprintf(figs[4], sizeof(figs[4]), "17179869184.00 GiB");
	else
		snprintf(figs[4], sizeof(figs[4]), "%d bytes", limit);
	len = async_message(text, sizeof(text), "", "0", 1, fig);
	if (mf_oom_parse(text, len, &o, &err) != MF_OK)
		fail_msg("%s", MSG(&err));
	return o.cause;
}

static void
test_cause_async_rule_edges(void **state)
{
	(void)state;
	/* Its own limit: allocated + tried == limit is not over it. */
	assert_int_equal(async_cause_of(900, 100, 2000, 0, 1000),
	    MF_OOM_OTHER_PROCESS);
	assert_int_equal(async_cause_of(900, 101, 2000, 0, 1000), MF_OOM_LIMIT);
	/* Rule 1 first: the request alone larger than the card. */
	assert_int_equal(async_cause_of(0, 1001, 1000, 0, 500),
	    MF_OOM_CAPACITY);
	/* Without a limit, free >= tried is still a limit. */
	assert_int_equal(async_cause_of(0, 100, 1000, 100, -1), MF_OOM_LIMIT);
	/* No reserved figure counts as none: outside = 1000 - 0 - 750 = 250
	 * = 25% exactly; 1000 - 0 - 751 = 249 is capacity, never
	 * fragmentation. */
	assert_int_equal(async_cause_of(750, 100, 1000, 0, -1),
	    MF_OOM_OTHER_PROCESS);
	assert_int_equal(async_cause_of(751, 100, 1000, 0, -1),
	    MF_OOM_CAPACITY);
	assert_int_equal(async_cause_of(751, 1, 1000, 0, -1), MF_OOM_CAPACITY);
}

/* The last whole message wins across both allocators' formats. */
static void
test_parse_async_among_others(void **state)
{
	char text[4096];
	struct mf_oom o;
	struct mf_error err;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s", msg_v22_bytes, msg_async_limit);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_ASYNC);
	assert_int_equal(o.tried, 536870912);
	/* A cut-off one after it does not count. */
	snprintf(text, sizeof(text), "%s\n%sAllocation on device 0 would",
	    msg_v22_bytes, msg_async_limit);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_ASYNC);
	snprintf(text, sizeof(text), "%s\n%s", msg_async_limit, msg_v22_bytes);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_V2_2);
	/* The runtime's lines are looked for up to the next message. */
	snprintf(text, sizeof(text),
	    "CUDA error: out of memory\nAllocation on device 0 would exceed "
	    "allowed memory. (out of memory)\nCompile with "
	    "`TORCH_USE_CUDA_DSA` to enable device-side assertions.\n");
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_RT_BARE);
}

/* ---- the CUDA runtime's own error ---- */

/* Written: a ROCm build's "HIP error", with the 2.0+ lines for HIP. */
static const char msg_runtime_hip[] =
    "RuntimeError: HIP error: out of memory\n"
    "HIP kernel errors might be asynchronously reported at some other API "
    "call, so the stacktrace below might be incorrect.\n"
    "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
    "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n";

static void
test_runtime_error(void **state)
{
	struct mf_oom o;
	struct mf_error err;
	char text[2048], report[4096];
	json_t *j;

	(void)state;
	assert_int_equal(mf_oom_parse(msg_runtime_hip, strlen(msg_runtime_hip),
	                     &o, &err),
	    MF_OK);
	assert_int_equal(o.backend, MF_OOM_HIP);
	assert_int_equal(o.format, MF_OOM_RT_DSA);
	assert_int_equal(o.cause, MF_OOM_OUTSIDE);
	assert_true(mf_oom_is_runtime(o.format));
	assert_false(mf_oom_is_runtime(MF_OOM_V2_2));
	j = readback_oom(&o);
	assert_non_null(j);
	/* No figures: every byte count null, no process, no GPU. */
	assert_true(json_is_null(json_object_get(j, "triedBytes")));
	assert_true(json_is_null(json_object_get(j, "totalBytes")));
	assert_true(json_is_null(json_object_get(j, "gpu")));
	assert_true(json_is_null(json_object_get(j, "thisProcess")));
	assert_string_equal(json_string_value(json_object_get(j, "cause")),
	    "outside-allocator");
	assert_string_equal(json_string_value(json_object_get(j, "format")),
	    "2.0+");
	assert_non_null(
	    strstr(json_string_value(json_object_get(j, "explanation")),
	        "HIP runtime"));
	assert_true(advice_has(j, "NCCL_BUFFSIZE"));
	assert_true(advice_has(j, "set_per_process_memory_fraction"));
	assert_true(advice_has(j, "rocm-smi"));
	check_no_empty_cache(j);
	json_decref(j);
	assert_true(mf_oom_text(&o, report, sizeof(report)) > 0);
	assert_non_null(strstr(report,
	    "HIP runtime error: out of memory "
	    "(PyTorch 2.0+ message)"));
	assert_non_null(strstr(report, "cause: outside-allocator"));
	/* The last message wins, of either kind; a later allocator message's
	 * lines are not read as the runtime error's. */
	snprintf(text, sizeof(text), "%s\nCUDA error: out of memory\n%s",
	    msg_v22_bytes, msg_v22_other);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_V2_2);
	snprintf(text, sizeof(text),
	    "%s\nRuntimeError: CUDA error: out of memory\nCUDA kernel errors "
	    "might be asynchronously reported at some other API call,so the "
	    "stacktrace below might be incorrect.",
	    msg_v22_other);
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_RT_HINT);
	/* Two runtime errors: the second's lines are its own. */
	snprintf(text, sizeof(text),
	    "CUDA error: out of memory\nCUDA error: out of memory\nCompile "
	    "with `TORCH_USE_CUDA_DSA` to enable device-side assertions.");
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_RT_DSA);
	snprintf(text, sizeof(text),
	    "CUDA error: out of memory\nCompile with `TORCH_USE_CUDA_DSA` to "
	    "enable device-side assertions.\nCUDA error: out of memory\n");
	assert_int_equal(mf_oom_parse(text, strlen(text), &o, &err), MF_OK);
	assert_int_equal(o.format, MF_OOM_RT_BARE);
}

static void
test_json_figures_and_nulls(void **state)
{
	json_t *j;

	(void)state;
	j = json_of(msg_v22_other);
	assert_int_equal(json_integer_value(json_object_get(j, "triedBytes")),
	    2147483648);
	assert_int_equal(json_integer_value(json_object_get(j, "totalBytes")),
	    85029615043);
	assert_int_equal(json_integer_value(json_object_get(j, "freeBytes")),
	    1342177280);
	assert_int_equal(json_integer_value(
	                     json_object_get(j, "allocatedBytes")),
	    37688338022);
	assert_int_equal(json_integer_value(
	                     json_object_get(j, "reservedUnallocatedBytes")),
	    1299227607);
	assert_int_equal(json_integer_value(json_object_get(j, "processBytes")),
	    40587440947);
	assert_int_equal(json_integer_value(
	                     json_object_get(j, "otherProcessBytes")),
	    43078521979);
	assert_true(json_is_null(json_object_get(j, "allowedBytes")));
	assert_true(json_is_null(json_object_get(j, "privatePoolBytes")));
	assert_int_equal(json_integer_value(json_object_get(j, "gpu")), 1);
	assert_int_equal(json_integer_value(
	                     json_object_get(json_array_get(json_object_get(j,
	                                                        "processes"),
	                                         0),
	                         "pid")),
	    3121);
	assert_string_equal(json_string_value(json_object_get(j, "format")),
	    "2.2+");
	assert_string_equal(json_string_value(json_object_get(j, "backend")),
	    "cuda");
	assert_string_equal(json_string_value(json_object_get(j, "cause")),
	    "other-process");
	json_decref(j);

	/* 1.0: no process figures at all. */
	j = json_of(msg_v10_wrapped);
	assert_true(json_is_null(json_object_get(j, "processBytes")));
	assert_true(json_is_null(json_object_get(j, "otherProcessBytes")));
	assert_int_equal(json_array_size(json_object_get(j, "processes")), 0);
	assert_int_equal(json_integer_value(
	                     json_object_get(j, "reservedUnallocatedBytes")),
	    17857249);
	assert_string_equal(json_string_value(json_object_get(j, "format")),
	    "1.0-1.3");
	json_decref(j);
}

static void
test_json_advice_per_cause(void **state)
{
	json_t *j;

	(void)state;
	j = json_of(msg_v22_other); /* other-process */
	assert_true(advice_has(j, "ps -elf | grep python"));
	assert_true(advice_has(j, "nvidia-smi"));
	assert_true(advice_has(j, "3121"));
	check_no_empty_cache(j);
	json_decref(j);

	j = json_of(msg_v22_pools); /* fragmentation */
	assert_string_equal(json_string_value(json_object_get(j, "cause")),
	    "fragmentation");
	assert_true(advice_has(j,
	    "PYTORCH_ALLOC_CONF=expandable_segments:"
	    "True"));
	assert_true(advice_has(j, "PYTORCH_CUDA_ALLOC_CONF"));
	assert_true(advice_has(j, "max_split_size_mb"));
	check_no_empty_cache(j);
	json_decref(j);

	j = json_of(msg_v22_bytes); /* capacity */
	assert_string_equal(json_string_value(json_object_get(j, "cause")),
	    "capacity");
	assert_true(advice_has(j, "torch.cuda.max_memory_allocated()"));
	assert_true(advice_has(j, "checkpointing"));
	assert_true(advice_has(j, "8-bit Adam"));
	assert_true(advice_has(j, "QLoRA"));
	assert_true(advice_has(j, "FSDP"));
	assert_true(advice_has(j, "POST /v1/admit"));
	assert_true(advice_has(j, "allowedFixes"));
	check_no_empty_cache(j);
	json_decref(j);

	j = json_of(msg_v14_allowed); /* limit, fraction printed */
	assert_string_equal(json_string_value(json_object_get(j, "cause")),
	    "limit");
	assert_true(advice_has(j,
	    "torch.cuda.set_per_process_memory_"
	    "fraction()"));
	assert_true(advice_has(j, "4.77 GiB"));
	assert_true(advice_has(j, "MPS"));
	check_no_empty_cache(j);
	json_decref(j);

	j = json_of(msg_hip_allowed); /* limit on ROCm */
	assert_string_equal(json_string_value(json_object_get(j, "backend")),
	    "hip");
	check_no_empty_cache(j);
	json_decref(j);

	j = json_of(msg_huge); /* capacity, the request alone too big */
	check_no_empty_cache(j);
	json_decref(j);
}

/* Every message in this file, for the checks that hold for all of them. */
static const char *const all_msgs[] = {
	msg_99699,
	msg_v14_allowed,
	msg_v14_hint,
	msg_v14_other,
	msg_v10_wrapped,
	msg_v21_container,
	msg_v22_other,
	msg_v22_pools,
	msg_hip_allowed,
	msg_v22_bytes,
	msg_huge,
	msg_v21_neither,
	msg_v21_allowed,
	msg_v21_pools,
	msg_v21_wsl,
	msg_v22_wsl_allowed,
	msg_self_by_context,
	msg_self_unknown,
	msg_runtime_hip,
	msg_async,
	msg_async_limit,
	msg_async_room,
};

/* One message's diagnosis: JSON and text, nowhere torch.cuda.empty_cache. */
static void
check_never_empty_cache(const char *msg)
{
	struct mf_oom o;
	struct mf_error err;
	json_t *j;
	char *dump, text[8192];
	int need;

	if (mf_oom_parse(msg, strlen(msg), &o, &err) != MF_OK)
		fail_msg("%s\n%s", MSG(&err), msg);
	j = readback_oom(&o);
	assert_non_null(j);
	check_no_empty_cache(j);
	dump = json_dumps(j, 0);
	assert_non_null(dump);
	assert_null(strstr(dump, "empty_cache"));
	free(dump);
	json_decref(j);
	need = mf_oom_text(&o, text, sizeof(text));
	assert_true(need > 0 && (size_t)need < sizeof(text));
	assert_null(strstr(text, "empty_cache"));
}

static void
test_advice_never_empty_cache(void **state)
{
	char *text, *p, *next;
	size_t i, f;
	int causes[5] = { 0, 0, 0, 0, 0 }, blocks = 0;
	struct mf_oom o;
	struct mf_error err;

	(void)state;
	for (i = 0; i < sizeof(all_msgs) / sizeof(all_msgs[0]); i++) {
		check_never_empty_cache(all_msgs[i]);
		assert_int_equal(mf_oom_parse(all_msgs[i], strlen(all_msgs[i]),
		                     &o, &err),
		    MF_OK);
		causes[o.cause]++;
	}
	/* Every cause is among them. */
	for (i = 0; i < 5; i++)
		assert_true(causes[i] > 0);
	/* The real messages too, each block whole (comment lines and all). */
	for (f = 0; f < NFILES; f++) {
		text = read_messages(f);
		for (p = text; p != NULL; p = next) {
			next = strstr(p, "\n-----");
			if (next != NULL) {
				*next = '\0';
				next += strlen("\n-----");
			}
			if (strstr(p, "out of memory") != NULL) {
				check_never_empty_cache(p);
				blocks++;
			}
		}
		free(text);
	}
	assert_int_equal(blocks, sizeof(known) / sizeof(known[0]));
}

static void
test_json_keys_exact(void **state)
{
	static const char *const keys[] = {
		"triedBytes",
		"totalBytes",
		"freeBytes",
		"allocatedBytes",
		"reservedUnallocatedBytes",
		"processBytes",
		"otherProcessBytes",
		"allowedBytes",
		"privatePoolBytes",
		"processes",
		"thisProcess",
		"gpu",
		"backend",
		"format",
		"cause",
		"explanation",
		"advice",
	};
	json_t *j;
	size_t i;

	(void)state;
	j = json_of(msg_v22_other);
	assert_int_equal(json_object_size(j), sizeof(keys) / sizeof(keys[0]));
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(j, keys[i]) == NULL)
			fail_msg("no key %s", keys[i]);
	json_decref(j);
}

/*
 * examples/oom-*.txt as the daemon receives them: "# POST /v1/diagnose",
 * a line naming the case, "# expect: ..." with the figures worked out by
 * hand, then the message.  Read from $MF_TOP (the repository root), else
 * the current directory.
 */
static void
check_example(const char *name)
{
	char path[4096], cause[32], *text, *expect;
	long long tried, total;
	struct mf_oom o;
	struct mf_error err;
	json_t *j;

	snprintf(path, sizeof(path), "%s/examples/%s", top(), name);
	text = slurp(path, NULL);
	if (text == NULL)
		fail_msg("cannot read %s (set MF_TOP)", path);
	assert_int_equal(strncmp(text, "# POST /v1/diagnose\n",
	                     strlen("# POST /v1/diagnose\n")),
	    0);
	expect = strstr(text, "\n# expect: ");
	assert_non_null(expect);
	if (sscanf(expect,
	        "\n# expect: status=200 cause=%31s triedBytes=%lld "
	        "totalBytes=%lld",
	        cause, &tried, &total) != 3)
		fail_msg("%s: bad expect line", name);
	if (mf_oom_parse(text, strlen(text), &o, &err) != MF_OK)
		fail_msg("%s: %s", name, MSG(&err));
	j = readback_oom(&o);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "cause")),
	    cause);
	assert_int_equal(json_integer_value(json_object_get(j, "triedBytes")),
	    tried);
	assert_int_equal(json_integer_value(json_object_get(j, "totalBytes")),
	    total);
	json_decref(j);
	free(text);
}

static void
test_examples_expectations(void **state)
{
	(void)state;
	check_example("oom-1.0-cached.txt");
	check_example("oom-1.4-reserved.txt");
	check_example("oom-2.1-capacty.txt");
	check_example("oom-2.2-expandable.txt");
	check_example("oom-other-process.txt");
	check_example("oom-limit.txt");
	check_example("oom-2.0-cudamallocasync.txt");
}

/* Every cap shorter than the answer fails cleanly, never past the cap
 * (ASan checks that nothing leaks); the first that holds it succeeds. */
static void
test_json_cap(void **state)
{
	struct mf_oom o;
	struct mf_error err;
	struct mf_buf b;
	struct mf_jw w;
	size_t cap;

	(void)state;
	assert_int_equal(mf_oom_parse(msg_v22_other, strlen(msg_v22_other), &o,
	                     &err),
	    MF_OK);
	for (cap = 1;; cap++) {
		mf_buf_init(&b, cap);
		mf_jw_init(&w, &b);
		mf_jw_open(&w, NULL, '{');
		mf_oom_write(&w, &o);
		mf_jw_close(&w, '}');
		if (b.rc == MF_OK)
			break;
		assert_int_equal(b.rc, MF_ETOOBIG);
		assert_true(b.len < cap);
		mf_buf_free(&b);
	}
	assert_true(cap > 100);
	assert_non_null(strstr(b.data, "\"cause\":\"other-process\""));
	mf_buf_free(&b);
}

static void
test_text_report_snprintf_contract(void **state)
{
	struct mf_oom o;
	struct mf_error err;
	char big[8192], small[40];
	int need;

	(void)state;
	assert_int_equal(mf_oom_parse(msg_v22_pools, strlen(msg_v22_pools), &o,
	                     &err),
	    MF_OK);
	need = mf_oom_text(&o, NULL, 0);
	assert_true(need > 0 && (size_t)need < sizeof(big));
	assert_int_equal(mf_oom_text(&o, big, sizeof(big)), need);
	assert_int_equal(strlen(big), (size_t)need);
	assert_non_null(strstr(big, "cause: fragmentation"));
	assert_non_null(strstr(big, "GPU 0"));
	/* Sizes print as PyTorch printed them. */
	assert_non_null(strstr(big, "10.20 GiB"));
	assert_non_null(strstr(big, "39.38 GiB"));
	assert_null(strstr(big, "empty_cache"));
	/* Cut to size, NUL-terminated, same length reported. */
	memset(small, 'x', sizeof(small));
	assert_int_equal(mf_oom_text(&o, small, sizeof(small)), need);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, big, sizeof(small) - 1);
	assert_int_equal(mf_oom_text(NULL, big, sizeof(big)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_real_messages),
		cmocka_unit_test(test_parse_v2_1_wrapped_with_processes),
		cmocka_unit_test(test_parse_v1_4_allowed_and_hint),
		cmocka_unit_test(test_parse_v1_4_hint_zero_free),
		cmocka_unit_test(test_parse_v1_4_crlf_other_process),
		cmocka_unit_test(test_parse_v1_0_log_prefix_tabs),
		cmocka_unit_test(test_parse_v2_1_single_process_is_this_one),
		cmocka_unit_test(test_parse_v2_2_other_process),
		cmocka_unit_test(test_parse_v2_2_private_pools_fragmentation),
		cmocka_unit_test(test_parse_hip_allowed_private_pools),
		cmocka_unit_test(test_parse_v2_2_no_process_bytes_unit),
		cmocka_unit_test(test_parse_gib_above_tib),
		cmocka_unit_test(test_parse_v2_1_no_process_clause),
		cmocka_unit_test(test_parse_v2_1_allowed),
		cmocka_unit_test(test_parse_v2_1_private_pools),
		cmocka_unit_test(test_parse_process_unknown),
		cmocka_unit_test(test_parse_processes_unknown_allowed),
		cmocka_unit_test(test_parse_sizes_near_max),
		cmocka_unit_test(test_cause_rule_edges),
		cmocka_unit_test(test_parse_no_message_is_einval),
		cmocka_unit_test(test_parse_malformed_names_place),
		cmocka_unit_test(test_parse_figure_too_large_is_erange),
		cmocka_unit_test(test_parse_truncated_never_partial),
		cmocka_unit_test(test_parse_last_complete_message_wins),
		cmocka_unit_test(test_parse_not_nul_terminated),
		cmocka_unit_test(test_parse_many_processes),
		cmocka_unit_test(test_parse_self_by_context),
		cmocka_unit_test(test_parse_self_unknown),
		cmocka_unit_test(test_parse_self_within_precision),
		cmocka_unit_test(test_parse_self_precision_of_printed_unit),
		cmocka_unit_test(test_parse_v2_3_index_as_byte),
		cmocka_unit_test(test_report_unknown_gpu),
		cmocka_unit_test(test_parse_v2_3_stops_after_gpu),
		cmocka_unit_test(test_parse_async_no_limit),
		cmocka_unit_test(test_parse_async_over_limit),
		cmocka_unit_test(test_parse_async_limit_not_reached),
		cmocka_unit_test(test_parse_async_index_and_other_process),
		cmocka_unit_test(test_parse_async_stops_after_device),
		cmocka_unit_test(test_cause_async_rule_edges),
		cmocka_unit_test(test_parse_async_among_others),
		cmocka_unit_test(test_runtime_error),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_json_figures_and_nulls),
		cmocka_unit_test(test_json_advice_per_cause),
		cmocka_unit_test(test_json_keys_exact),
		cmocka_unit_test(test_advice_never_empty_cache),
		cmocka_unit_test(test_examples_expectations),
		cmocka_unit_test(test_json_cap),
		cmocka_unit_test(test_text_report_snprintf_contract),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
