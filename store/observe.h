/*
 * observe.h: the body of POST /v1/observations (design 23), JSON or YAML,
 * read and checked against the catalogue in service:
 *
 *   job (a Job manifest) or fingerprint (32 hex digits): one of them;
 *   card: a catalogue name, or the product name the driver reports (a
 *     card's nvidia.com/gpu.product label, or its dcgmModelName);
 *   count: GPUs the run had;
 *   peakReservedBytes (one GPU, torch.cuda.max_memory_reserved) with
 *     peakAllocatedBytes optional, or deviceUsedBytes (the device's, as
 *     DCGM reports it), or both; none above the card's memory;
 *   tokensPerSecond, or stepSeconds with tokensPerStep: optional, > 0;
 *   source: torch, dcgm or log.
 *
 * Unknown fields are refused, as the manifest's are.
 */
#ifndef MF_OBSERVE_H
#define MF_OBSERVE_H

#include <stddef.h>

#include "../admission/doc/doc.h"
#include "../admission/model/model.h"
#include "../catalog/catalog.h"
#include "store.h"

/*
 * Read body[0..len) (fmt as mf_doc_parse takes it) into *out, figures not
 * given -1, against api's catalogue (which it must have) and models.  A
 * job's fingerprint is the one its admit on api answers
 * (mf_api_admit_fingerprint: placed with its runs' observations, through
 * api->observed), and *named is 0; a fingerprint given is taken as it is,
 * and *named is 1 (the caller checks that the store knows it).  A bad body is
 * MF_EINVAL naming the field (MF_ETOOBIG, MF_ENOMEM as mf_doc_parse); *out is
 * untouched on error.  Nothing is kept here.
 */
struct mf_api;
enum mf_rc mf_obs_read(const char *body, size_t len, enum mf_doc_format fmt,
    const struct mf_api *api, struct mf_observation *out, int *named,
    struct mf_error *err);

/*
 * Hold o, read from a body or built by a reader of the daemon's own (the
 * Prometheus reader), to the rules above against cat: a fingerprint of 32
 * hex digits; o->card a catalogue name or a product name, written as the
 * catalogue's name; a count; a memory figure, none above the card's
 * memory, allocated within reserved; speeds from 1e-6 to below 1e15 or
 * absent (-1), a step's two together; a known source.  MF_EINVAL naming
 * the field (no position); o->card is untouched on error.  Every
 * observation kept passes here.
 */
enum mf_rc mf_obs_check(const struct mf_catalog *cat, struct mf_observation *o,
    struct mf_error *err);

#endif
