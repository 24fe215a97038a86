/*
 * catalog_fields.c: the rows of the GPU catalogue in the table of fields
 * (fields.h): every field of a catalogue and of one of its GPUs, one row
 * each, and the forms of the strings they take.
 */
#include "catalog.h"

#include <stddef.h>
#include <string.h>

#include "../admission/base/qty.h"
#include "../admission/estimate/estimate.h"
#include "../admission/fields/fields.h"
#include "../admission/fix/fix.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define SUB(a) .sub = (a), .nsub = NELEM(a)
#define COFF(f) offsetof(struct mf_catalog, f)
#define GOFF(f) offsetof(struct mf_gpu, f)

/* --- forms of strings -------------------------------------------------- */

static int
is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9');
}

static int
name_char(char ch)
{
	return is_alnum(ch) || ch == '.' || ch == '_' || ch == '-';
}

/* [A-Za-z0-9._-], 1 to 63 characters: a GPU, a gres type, a partition. */
static int
name_ok(const char *s, size_t len)
{
	if (len == 0 || len > 63)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i]))
			return 0;
	return 1;
}

/* A Kubernetes label name or value: at most 63 characters of
 * [A-Za-z0-9._-] beginning and ending with a letter or digit. */
static int
label_part_ok(const char *s, size_t len)
{
	if (len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return 0;
	for (size_t i = 1; i + 1 < len; i++)
		if (!name_char(s[i]))
			return 0;
	return 1;
}

/* A label value may also be empty. */
static int
label_value_ok(const char *s, size_t len)
{
	return len == 0 || label_part_ok(s, len);
}

/* A DNS-1123 subdomain (a label key's prefix): lower-case, dot-separated. */
static int
dns_subdomain_ok(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0 || len > 253)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char ch = i < len ? s[i] : '.';

		if (ch == '.') {
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return 0;
			start = i + 1;
		} else if (!(ch >= 'a' && ch <= 'z') &&
		    !(ch >= '0' && ch <= '9') && ch != '-') {
			return 0;
		}
	}
	return 1;
}

/* A Kubernetes label key: [prefix/]name. */
static int
label_key_ok(const char *s, size_t len)
{
	const char *slash = memchr(s, '/', len);
	size_t p;

	if (slash == NULL)
		return len > 0 && label_part_ok(s, len);
	p = (size_t)(slash - s);
	return dns_subdomain_ok(s, p) && len - p - 1 > 0 &&
	    label_part_ok(slash + 1, len - p - 1);
}

/* "gpu:TYPE". */
static int
gres_ok(const char *s, size_t len)
{
	return len > 4 && memcmp(s, "gpu:", 4) == 0 && name_ok(s + 4, len - 4);
}

/* Features of [A-Za-z0-9._-] joined by & or |. */
static int
constraint_ok(const char *s, size_t len)
{
	size_t start = 0;

	if (len == 0)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != '&' && s[i] != '|') {
			if (!name_char(s[i]))
				return 0;
			continue;
		}
		if (i == start)
			return 0;
		start = i + 1;
	}
	return 1;
}

static const struct mf_form gpu_name_form = { name_ok, "^[A-Za-z0-9._-]{1,63}$",
	"a GPU name (1 to 63 characters of [A-Za-z0-9._-])" };
static const struct mf_form label_key_form = {
	label_key_ok,
	"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$",
	"a Kubernetes label key ([prefix/]name, name at most 63 characters of [A-Za-z0-9._-])"
};
static const struct mf_form label_value_form = { label_value_ok,
	"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$",
	"a Kubernetes label value (at most 63 characters of [A-Za-z0-9._-])" };
static const struct mf_form gres_form = {
	gres_ok, "^gpu:[A-Za-z0-9._-]{1,63}$",
	"a Slurm GPU gres (gpu:TYPE, TYPE 1 to 63 characters of [A-Za-z0-9._-])"
};
static const struct mf_form partition_form = { name_ok,
	"^[A-Za-z0-9._-]{1,63}$",
	"a Slurm partition name (1 to 63 characters of [A-Za-z0-9._-])" };
static const struct mf_form constraint_form = {
	constraint_ok, "^[A-Za-z0-9._-]+([&|][A-Za-z0-9._-]+)*$",
	"a Slurm constraint (features of [A-Za-z0-9._-] joined by & or |, at most 255 characters)"
};

/* --- names from other tables ------------------------------------------- */

static const char *
fix_name(int v)
{
	return v >= 0 ? mf_fix_name((enum mf_fix)v) : NULL;
}

static const char *
estimator_name(int v)
{
	return v >= 0 ? mf_estimator_name((enum mf_estimator)v) : NULL;
}

/*
 * The rows keep a layout of their own, as the Job's do (job_fields.c).
 */
/* clang-format off */
/* --- the GPU catalogue -------------------------------------------------- */

static const struct mf_field slurm_rows[] = {
	{ .key = "gres", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(slurm.gres), .flags = MF_FF_OWN, .form = &gres_form,
	    .max = 67, .title = "gres",
	    .doc = "gpu:TYPE as in gres.conf; cards that share one have the same memory" },
	{ .key = "partition", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(slurm.partition), .flags = MF_FF_OWN,
	    .form = &partition_form, .max = 63, .title = "Partition",
	    .doc = "the partition a job on this card goes to" },
	{ .key = "constraint", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(slurm.constraint), .flags = MF_FF_OWN,
	    .form = &constraint_form, .max = 255, .title = "Constraint",
	    .doc = "node features a job on this card asks for" },
};

/* What vLLM finds on a card (design 19; docs/serving.md). */
static const struct mf_field vllm_rows[] = {
	{ .key = "cudaMemory", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(cuda_memory), .offset2 = GOFF(vllm_format),
	    .min = 1, .unit = "bytes", .title = "CUDA memory",
	    .doc = "the total CUDA reports, vLLM's total_gpu_memory, at most memory; vLLM's budget is a share of it" },
	{ .key = "nonTorchMemory", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(non_torch), .offset2 = GOFF(vllm_format),
	    .flags = MF_FF_DEFAULT, .min = 1, .idef = MF_NON_TORCH_DEFAULT,
	    .unit = "bytes", .title = "Memory outside PyTorch",
	    .doc = "what vLLM holds outside PyTorch at tensor parallel 1 (cuBLAS workspaces)" },
	{ .key = "allReduceMemory", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(all_reduce), .offset2 = GOFF(vllm_format),
	    .flags = MF_FF_DEFAULT, .min = 1, .idef = MF_ALL_REDUCE_DEFAULT,
	    .unit = "bytes", .title = "All-reduce memory",
	    .doc = "what NCCL and the custom all-reduce add at tensor parallel 2 or more" },
};

/* The card's speed (design 21; docs/time.md): each figure with its
 * source beside it in the catalogue. */
static const struct mf_fname archs[] = {
	{ "ampere", MF_ARCH_AMPERE, "A100, A10, RTX 30 and RTX A cards",
	    { 0 } },
	{ "ada", MF_ARCH_ADA, "L4, L40S, RTX 40 and RTX Ada cards", { 0 } },
	{ "hopper", MF_ARCH_HOPPER, "H100, H200", { 0 } },
	{ "blackwell", MF_ARCH_BLACKWELL, "B200, B300, RTX PRO 6000", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_fname links[] = {
	{ "nvswitch", MF_LINK_NVSWITCH, "every GPU of a node at full NVLink bandwidth", { 0 } },
	{ "nvlink", MF_LINK_NVLINK, "NVLink bridges between pairs", { 0 } },
	{ "pcie", MF_LINK_PCIE, "PCIe with peer-to-peer", { 0 } },
	{ "pcie-no-p2p", MF_LINK_PCIE_NO_P2P,
	    "PCIe through host memory (GeForce cards)", { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

#define FLOPS_ROW(k, d, what)                                              \
	{ .key = k, .type = MF_FT_BYTES, .base = MF_FB_GPU,                  \
		.offset = GOFF(speed.flops[d]), .offset2 = GOFF(speed.format), \
		.min = 1, .unit = "FLOP/s", .title = k,                      \
		.doc = "dense " what " FLOP/s a GPU, no sparsity" }

static const struct mf_field flops_rows[] = {
	FLOPS_ROW("bf16", MF_DT_BF16,
	    "bf16 tensor (GeForce: with FP32 accumulate, as PyTorch runs)"),
	FLOPS_ROW("fp16", MF_DT_FP16, "fp16 tensor (FP32 accumulate)"),
	FLOPS_ROW("fp8", MF_DT_FP8, "fp8 tensor; only where the card has it"),
	FLOPS_ROW("tf32", MF_DT_TF32, "tf32 tensor"),
	FLOPS_ROW("fp32", MF_DT_FP32, "fp32 (no tensor cores)"),
};

static const struct mf_field efficiency_rows[] = {
	{ .key = "matmul", .type = MF_FT_NUMBER, .base = MF_FB_GPU,
	    .offset = GOFF(speed.eff_matmul), .lo = 0, .hi = 1, .lo_open = 1,
	    .text = "the architecture's", .unit = "fraction",
	    .title = "Matmul efficiency",
	    .doc = "achieved share of flops on large matmuls" },
	{ .key = "memory", .type = MF_FT_NUMBER, .base = MF_FB_GPU,
	    .offset = GOFF(speed.eff_memory), .lo = 0, .hi = 1, .lo_open = 1,
	    .text = "the architecture's", .unit = "fraction",
	    .title = "Memory efficiency",
	    .doc = "achieved share of memoryBandwidth (STREAM triad)" },
};

static const struct mf_field interconnect_rows[] = {
	{ .key = "kind", .type = MF_FT_ENUM, .base = MF_FB_GPU,
	    .offset = GOFF(speed.link), .flags = MF_FF_DEFAULT, .names = links,
	    .idef = MF_LINK_PCIE, .title = "Link",
	    .doc = "how the GPUs of a node reach each other" },
	{ .key = "bandwidth", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(speed.link_bw), .offset2 = GOFF(speed.format),
	    .flags = MF_FF_REQUIRED, .min = 1, .unit = "bytes/s",
	    .title = "Link bandwidth",
	    .doc = "what a collective achieves a GPU, one way" },
};

static const struct mf_field network_rows[] = {
	{ .key = "bandwidth", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(speed.net_bw), .offset2 = GOFF(speed.format),
	    .flags = MF_FF_REQUIRED, .min = 1, .unit = "bytes/s",
	    .title = "Network bandwidth",
	    .doc = "between nodes, a GPU, one way" },
};

static const struct mf_field label_value = { .key = "*",
	.type = MF_FT_STRING, .form = &label_value_form, .max = 63 };

static const struct mf_field card_rows[] = {
	{ .key = "name", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(name), .flags = MF_FF_REQUIRED | MF_FF_OWN,
	    .form = &gpu_name_form, .max = 63, .title = "Name",
	    .doc = "unique in the catalogue; placements name it" },
	{ .key = "memory", .type = MF_FT_MEMORY, .base = MF_FB_GPU,
	    .offset = GOFF(memory), .offset2 = GOFF(memory_format),
	    .flags = MF_FF_REQUIRED, .min = MF_QTY_MEMORY_MIN,
	    .unit = "bytes", .title = "Memory",
	    .doc = "per GPU, what its driver reports (nvidia-smi's total, e.g. 81559Mi)" },
	{ .key = "hourlyPrice", .type = MF_FT_NUMBER, .base = MF_FB_GPU,
	    .offset = GOFF(hourly_price), .flags = MF_FF_REQUIRED, .lo = 0,
	    .hi = 1e6, .unit = "USD per GPU-hour", .title = "Price",
	    .doc = "what one GPU costs an hour" },
	{ .key = "relativeThroughput", .type = MF_FT_NUMBER,
	    .base = MF_FB_GPU, .offset = GOFF(throughput), .lo = 0,
	    .hi = 1000, .lo_open = 1, .text = "modelled (design 21)",
	    .title = "Throughput",
	    .doc = "overrides the modelled speed: relative to the reference card's, for every job" },
	{ .key = "architecture", .type = MF_FT_ENUM, .base = MF_FB_GPU,
	    .offset = GOFF(speed.arch), .names = archs, .idef = MF_ARCH_NONE,
	    .title = "Architecture",
	    .doc = "selects the achieved shares' defaults" },
	{ .key = "flops", .type = MF_FT_OBJECT, .flags = MF_FF_NONEMPTY,
	    SUB(flops_rows), .title = "FLOPS",
	    .doc = "dense tensor FLOP/s a GPU by data type, no sparsity" },
	{ .key = "memoryBandwidth", .type = MF_FT_BYTES, .base = MF_FB_GPU,
	    .offset = GOFF(speed.bandwidth), .offset2 = GOFF(speed.format),
	    .min = 1, .unit = "bytes/s", .title = "Memory bandwidth",
	    .doc = "the datasheet's memory bandwidth" },
	{ .key = "efficiency", .type = MF_FT_OBJECT, .flags = MF_FF_NONEMPTY,
	    SUB(efficiency_rows), .title = "Efficiency",
	    .doc = "achieved shares measured on this card, over the architecture's" },
	{ .key = "interconnect", .type = MF_FT_OBJECT,
	    .flags = MF_FF_REQUIRES, SUB(interconnect_rows), .title = "Interconnect",
	    .doc = "the GPUs of one node: how they are linked and at what bandwidth; required of a card timed by its figures that may take more than one GPU of a node, and of the reference card when any card may (design 21)" },
	{ .key = "network", .type = MF_FT_OBJECT, .flags = MF_FF_REQUIRES,
	    SUB(network_rows),
	    .title = "Network", .doc = "between nodes; required of a card timed by its figures that may take more GPUs than a node holds, and of the reference card when any card may (design 21)" },
	{ .key = "gpusPerNode", .type = MF_FT_INT, .base = MF_FB_GPU,
	    .offset = GOFF(gpus_per_node), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_CAT_MAX_COUNT, .idef = 8, .unit = "GPUs",
	    .title = "GPUs a node", .doc = "GPUs of this type one node holds" },
	{ .key = "maxNodes", .type = MF_FT_INT, .base = MF_FB_GPU,
	    .offset = GOFF(max_nodes), .flags = MF_FF_DEFAULT, .min = 1,
	    .max = MF_CAT_MAX_COUNT, .idef = 1, .unit = "nodes",
	    .title = "Max nodes", .doc = "most nodes one job may span" },
	{ .key = "maxCount", .type = MF_FT_INT, .base = MF_FB_GPU,
	    .offset = GOFF(max_count), .min = 1, .max = MF_CAT_MAX_COUNT,
	    .text = "gpusPerNode x maxNodes, at most 1024", .unit = "GPUs",
	    .title = "Max count",
	    .doc = "most GPUs of this type one job may get, at most gpusPerNode x maxNodes" },
	{ .key = "labels", .type = MF_FT_MAP, .flags = MF_FF_HOOK,
	    .form = &label_key_form, .item = &label_value,
	    .max = MF_CAT_MAX_LABELS, .title = "Node labels",
	    .doc = "the node labels a Kubernetes placement selects on" },
	{ .key = "dcgmModelName", .type = MF_FT_STRING, .base = MF_FB_GPU,
	    .offset = GOFF(dcgm_model), .flags = MF_FF_OWN, .min = 1,
	    .max = 127, .title = "DCGM model name",
	    .doc = "the GPU model dcgm-exporter reports (modelName), where no nvidia.com/gpu.product label names it: what observations read from Prometheus are matched by" },
	{ .key = "slurm", .type = MF_FT_OBJECT, .flags = MF_FF_NONEMPTY,
	    SUB(slurm_rows), .title = "Slurm",
	    .doc = "how a Slurm job asks for this card (design 16)" },
	{ .key = "vllm", .type = MF_FT_OBJECT, .flags = MF_FF_NONEMPTY,
	    SUB(vllm_rows), .title = "vLLM",
	    .doc = "what vLLM finds on this card: its budget's total and the memory outside PyTorch" },
};

const struct mf_field mf_fields_gpu = { .key = "gpus[]",
	.type = MF_FT_OBJECT, .flags = MF_FF_REQUIRES, SUB(card_rows),
	.title = "GPU", .doc = "a card jobs may be placed on" };

static const struct mf_fname selects[] = {
	{ "product", MF_K8S_SELECT_PRODUCT,
	    "the placed card's labels in the pod's nodeSelector", { 0 } },
	{ "memory", MF_K8S_SELECT_MEMORY,
	    "a required node affinity on nvidia.com/gpu.memory, preferred terms for the card and its alternatives",
	    { 0 } },
	{ NULL, 0, NULL, { 0 } },
};

static const struct mf_field kubernetes_rows[] = {
	{ .key = "select", .type = MF_FT_ENUM, .base = MF_FB_CAT,
	    .offset = COFF(k8s_select), .flags = MF_FF_DEFAULT,
	    .names = selects, .idef = MF_K8S_SELECT_PRODUCT,
	    .title = "Select nodes on",
	    .doc = "how an admission review selects nodes (design 18)" },
};

static const struct mf_field time_factor = { .key = "*",
	.type = MF_FT_NUMBER, .flags = MF_FF_DEFAULT, .lo = 0, .hi = 100,
	.lo_open = 1, .ddef = 1.0 };

static const struct mf_field time_factor_rows[] = {
	{ .key = "checkpointing", .type = MF_FT_NUMBER,
	    .flags = MF_FF_DEFAULT, .lo = 0, .hi = 100, .lo_open = 1,
	    .ddef = 1.35,
	    .doc = "full recomputation costs 30-40% more time (Korthikanti et al., 2022)" },
};

/* What observed runs do at admission (design 23). */
static const struct mf_field observations_rows[] = {
	{ .key = "margin", .type = MF_FT_NUMBER, .base = MF_FB_CAT,
	    .offset = COFF(obs_margin), .flags = MF_FF_DEFAULT, .lo = 0,
	    .hi = 0.5, .hi_open = 1, .ddef = 0.05, .unit = "fraction",
	    .title = "Device margin",
	    .doc = "a device figure (DCGM's) is held against the card's memory less this share" },
	{ .key = "maxLowering", .type = MF_FT_NUMBER, .base = MF_FB_CAT,
	    .offset = COFF(obs_max_lowering), .flags = MF_FF_DEFAULT,
	    .lo = 0, .hi = 1, .hi_open = 1, .ddef = 0.10,
	    .unit = "fraction", .title = "Most lowering",
	    .doc = "the most an observation lowers a job's need on the cards it was not measured on" },
	{ .key = "refreshSeconds", .type = MF_FT_INT, .base = MF_FB_CAT,
	    .offset = COFF(obs_refresh_seconds), .flags = MF_FF_DEFAULT,
	    .min = 1, .max = 86400, .idef = 10, .unit = "seconds",
	    .title = "Refresh",
	    .doc = "how often memfloord reads the observations from its store" },
	{ .key = "finishAfter", .type = MF_FT_INT, .base = MF_FB_CAT,
	    .offset = COFF(obs_finish_after), .flags = MF_FF_DEFAULT,
	    .min = 1, .max = 604800, .idef = 300, .unit = "seconds",
	    .title = "Finished after",
	    .doc = "a run whose DCGM series have had no sample for this long is over, and its peak is kept (--prometheus)" },
};

enum { C_ESTIMATOR = 2, C_GRAPHS = 7 };

static const struct mf_field catalog_rows[] = {
	{ .key = "apiVersion", .type = MF_FT_CONST,
	    .flags = MF_FF_REQUIRED, .text = "memfloor.dev/v1",
	    .title = "API version", .doc = "memfloor.dev/v1" },
	{ .key = "kind", .type = MF_FT_CONST,
	    .flags = MF_FF_REQUIRED | MF_FF_FIRST,
	    .text = MF_FIELDS_CATALOG_KIND,
	    .title = "Kind", .doc = MF_FIELDS_CATALOG_KIND },
	[C_ESTIMATOR] = { .key = "estimator", .type = MF_FT_ENUM,
	    .base = MF_FB_CAT, .offset = COFF(estimator),
	    .flags = MF_FF_DEFAULT, .name_of = estimator_name,
	    .idef = MF_EST_PYTORCH, .title = "Estimator",
	    .doc = "the arithmetic of estimates (design 13); ?estimator= overrides it" },
	{ .key = "reference", .type = MF_FT_STRING, .base = MF_FB_CAT,
	    .offset = COFF(reference), .flags = MF_FF_OWN,
	    .form = &gpu_name_form, .max = 63, .text = MF_CAT_REFERENCE,
	    .title = "Reference card",
	    .doc = "the card referenceHours are measured on (design 21)" },
	{ .key = "headroom", .type = MF_FT_NUMBER, .base = MF_FB_CAT,
	    .offset = COFF(headroom), .flags = MF_FF_DEFAULT, .lo = 0,
	    .hi = 0.9, .hi_open = 1, .ddef = 0.10, .unit = "fraction",
	    .title = "Headroom",
	    .doc = "share of every card kept free (CUDA context, allocator)" },
	{ .key = "multiGpuEfficiency", .type = MF_FT_NUMBER,
	    .base = MF_FB_CAT, .offset = COFF(multi_gpu_efficiency),
	    .flags = MF_FF_DEFAULT, .lo = 0, .hi = 1, .lo_open = 1,
	    .ddef = 0.9, .unit = "fraction", .title = "Multi-GPU efficiency",
	    .doc = "each doubling of GPUs keeps this share of linear speed-up" },
	{ .key = "interNodeEfficiency", .type = MF_FT_NUMBER,
	    .base = MF_FB_CAT, .offset = COFF(inter_node_efficiency),
	    .flags = MF_FF_DEFAULT, .lo = 0, .hi = 1, .lo_open = 1,
	    .ddef = 0.8, .unit = "fraction", .title = "Inter-node efficiency",
	    .doc = "each doubling of nodes keeps this share of speed" },
	[C_GRAPHS] = { .key = "cudaGraphReserve", .type = MF_FT_BYTES,
	    .base = MF_FB_CAT, .offset = COFF(cuda_graph_reserve),
	    .offset2 = COFF(cuda_graph_format), .flags = MF_FF_DEFAULT,
	    .min = 1, .idef = MF_GRAPH_RESERVE_DEFAULT, .unit = "bytes",
	    .title = "CUDA graph reserve",
	    .doc = "what a vllm server keeps for CUDA graphs (design 14)" },
	{ .key = "timeFactors", .type = MF_FT_MAP, .base = MF_FB_CAT,
	    .offset = COFF(time_factor), SUB(time_factor_rows),
	    .item = &time_factor, .name_of = fix_name, .noun = "a fix",
	    .title = "Time factors",
	    .doc = "the run-time multiplier of each fix, 1.0 unless given" },
	{ .key = "observations", .type = MF_FT_OBJECT, SUB(observations_rows),
	    .title = "Observations",
	    .doc = "what the runs of a job measured, at its next admission (design 23)" },
	{ .key = "kubernetes", .type = MF_FT_OBJECT, SUB(kubernetes_rows),
	    .title = "Kubernetes", .doc = "how reviews select nodes" },
	{ .key = "gpus", .type = MF_FT_LIST,
	    .flags = MF_FF_REQUIRED | MF_FF_HOOK, .item = &mf_fields_gpu,
	    .noun = "GPU", .min = 1, .max = MF_CAT_MAX_GPUS, .title = "GPUs",
	    .doc = "the cards, at least one" },
};

const struct mf_field mf_fields_catalog = { .key = MF_FIELDS_CATALOG_KIND,
	.type = MF_FT_OBJECT, .flags = MF_FF_REQUIRES | MF_FF_FIRST,
	SUB(catalog_rows),
	.title = MF_FIELDS_CATALOG_TITLE,
	.doc = "the cards jobs are placed on, with their prices (design 4)" };

/* clang-format on */

void
mf_cat_workload_defaults(struct mf_workload *w)
{
	w->graph_reserve = catalog_rows[C_GRAPHS].idef;
	w->non_torch = MF_NON_TORCH_DEFAULT;
	w->all_reduce = MF_ALL_REDUCE_DEFAULT;
	w->estimator = (enum mf_estimator)catalog_rows[C_ESTIMATOR].idef;
}
