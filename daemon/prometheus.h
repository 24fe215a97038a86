/*
 * prometheus.h: the Prometheus reader of design 23 (--prometheus URL).
 *
 * Every observations.refreshSeconds it asks Prometheus's /api/v1/query,
 * over the last --prometheus-window seconds of dcgm-exporter's
 * DCGM_FI_DEV_FB_USED series that carry the pod label
 * memfloor.dev/fingerprint (memfloor_dev_fingerprint once dcgm-exporter
 * has made it a label name), by fingerprint, GPU model, pod and host:
 * the largest sample, the time of the last one, and how many GPUs.  A
 * run whose series have had no sample for observations.finishAfter is
 * over: its peak, MiB made bytes, is kept as a dcgm observation of
 * deviceUsedBytes on the card whose nvidia.com/gpu.product is the GPU
 * model, through the path POST /v1/observations takes.  Its run is named
 * by the fingerprint, the pod and the time of its last sample, which
 * every reader sees the same once the run is over, so that two replicas
 * keep it once.  A Prometheus that cannot be reached or answers
 * something else is logged once an outage and asked again next period;
 * nothing is kept meanwhile, and admissions never wait on it.
 */
#ifndef MFD_PROMETHEUS_H
#define MFD_PROMETHEUS_H

#include <stddef.h>

#include "../admission/base/err.h"
#include "../admission/fingerprint/fingerprint.h"
#include "memfloord.h"

/* The most series one answer may hold, and its bytes. */
#define MFD_PROM_SERIES_MAX 20000
#define MFD_PROM_BODY_MAX (16u << 20)
#define MFD_PROM_MODEL_MAX 128
#define MFD_PROM_NS_MAX 64    /* a Kubernetes namespace: 63 */
#define MFD_PROM_POD_MAX 254  /* a pod's name: 253 */
#define MFD_PROM_HOST_MAX 254 /* a host name: 253 */
/* The window peaks are taken over when --prometheus-window is not given. */
#define MFD_PROM_WINDOW_DEFAULT 86400

/*
 * The labels a series' parts are read from, each part's names in the order
 * they are tried, the first present read; the queries group by every one
 * of them, so that each reaches the parser.  dcgm-exporter writes the
 * pod's namespace and pod (pod_namespace and pod_name with
 * --use-old-namespace), Hostname (hostname in some releases), modelName
 * and the pod's labels.  Prometheus scraping it with honor_labels false, a
 * ServiceMonitor's and a PodMonitor's default, gives namespace and pod to
 * the target, the dcgm-exporter pod itself, and renames the workload's
 * exported_namespace and exported_pod (and container, which is not read,
 * exported_container).  No target has pod_namespace, pod_name or the
 * other labels read, so those are never renamed, and beside pod_namespace
 * and pod_name namespace and pod are the target's.  X(NAME) is applied to
 * each name.
 */
#define MFD_PROM_FP_LABEL "memfloor_dev_fingerprint"
#define MFD_PROM_MODEL_LABEL "modelName"
#define MFD_PROM_NS_LABELS(X) \
	X("exported_namespace") X("pod_namespace") X("namespace")
#define MFD_PROM_POD_LABELS(X) X("exported_pod") X("pod_name") X("pod")
#define MFD_PROM_HOST_LABELS(X) X("Hostname") X("hostname")

/* One series of an instant vector, by the labels the reader groups on. */
struct mfd_prom_series {
	char fingerprint[MF_FP_HEX];    /* MFD_PROM_FP_LABEL */
	char model[MFD_PROM_MODEL_MAX]; /* MFD_PROM_MODEL_LABEL */
	char ns[MFD_PROM_NS_MAX];       /* MFD_PROM_NS_LABELS; "" none */
	char pod[MFD_PROM_POD_MAX];     /* MFD_PROM_POD_LABELS */
	char host[MFD_PROM_HOST_MAX];   /* MFD_PROM_HOST_LABELS; "" none */
	double value;                   /* finite, >= 0 */
	double at; /* the time Prometheus evaluated it at, Unix seconds */
};

/*
 * Read body[0..len), an answer of /api/v1/query, into *out (malloc'd; the
 * caller frees it) and *n: the series of its vector that carry a
 * fingerprint of 32 hex digits, a modelName and a pod, each label within
 * its size, and a finite value of at least 0; the others are left out and
 * counted in *skipped.  An answer that is not JSON, not of status
 * success (err: Prometheus's own error), not a vector, or whose series
 * are not {metric, value: [time, "number"]} is MF_EINVAL; more than
 * MFD_PROM_SERIES_MAX series MF_ETOOBIG; MF_ENOMEM.  The out-parameters
 * are untouched on error.
 */
enum mf_rc
mfd_prom_parse(const char *body, size_t len, struct mfd_prom_series **out,
    size_t *n, size_t *skipped, struct mf_error *err);

/* Whether the --prometheus flags hold together (a URL of http or https,
 * --store, the files readable): 0, or -1 logged. */
int mfd_prom_check(const struct mfd_config *cfg);
/* Start the reader's thread when --prometheus is given (after the
 * observations started): 0, or -1 logged. */
int mfd_prom_start(const struct mfd_config *cfg);
/* Stop the reader, ending a query in flight; a no-op when not started. */
void mfd_prom_stop(void);

#endif
