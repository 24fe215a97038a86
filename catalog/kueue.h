/*
 * kueue.h: the catalogue's GPU types as Kueue ResourceFlavors
 * (kueue.x-k8s.io/v1beta1), for `memfloor catalog kueue FILE` (design 18).
 *
 * One flavor per GPU entry, in file order: metadata.name is the GPU name
 * in lower case, spec.nodeLabels the entry's labels.  Nothing else of the
 * flavor (nodeTaints, tolerations, topologyName) is written.
 */
#ifndef MF_KUEUE_H
#define MF_KUEUE_H

#include "../admission/base/buf.h"
#include "../admission/base/err.h"
#include "catalog.h"

/* What Kueue's ResourceFlavor v1beta1 schema allows in spec.nodeLabels. */
#define MF_KUEUE_MAX_LABELS 8

/*
 * Append the flavors to out as YAML documents separated by "---".  An
 * entry Kueue would refuse, or that would match every node, fails with
 * MF_EINVAL and err naming the entry ("SOURCE:LINE: gpus[3].name: ...");
 * out may then hold part of the text.  MF_ENOMEM or MF_ETOOBIG from out.
 */
enum mf_rc mf_kueue_flavors(const struct mf_catalog *cat, struct mf_buf *out,
    struct mf_error *err);

#endif
