/*
 * render.h: decisions, estimates, the catalogue and errors as JSON (the
 * design 8 shapes), YAML, and text tables a person reads in a terminal.
 *
 * Builders return a malloc'd string (or a new jansson reference) and NULL
 * when an allocation failed.
 */
#ifndef MF_RENDER_H
#define MF_RENDER_H

#include <jansson.h>
#include <stdint.h>

#include "../catalog/catalog.h"
#include "err.h"
#include "estimate.h"
#include "manifest.h"
#include "model.h"
#include "place.h"

/* jansson dump flags for answers built as jansson values. */
#define MF_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(10))

/* JSON text answers (design 8 shapes), newline-terminated; malloc'd, NULL
 * when an allocation failed. */
char *mf_json_decision(const struct mf_job *job, const struct mf_decision *d,
    const struct mf_catalog *cat);
/* The estimate of job's own workload (no fixes applied). */
char *mf_json_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat);
/* min_memory > 0: only cards with that much memory, by cost per
 * reference hour; min_format is its enum mf_qty_format. */
char *mf_json_catalog(const struct mf_catalog *cat, int64_t min_memory,
    int min_format);
char *mf_json_models(const struct mf_models *models);
char *mf_json_error(const struct mf_error *err);
/* The decision as a new jansson value, for answers that embed it. */
json_t *mf_render_decision(const struct mf_job *job,
    const struct mf_decision *d, const struct mf_catalog *cat);

char *mf_text_decision(const struct mf_job *job, const struct mf_decision *d);
char *mf_text_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat);
char *mf_text_catalog(const struct mf_catalog *cat, int64_t min_memory,
    int min_format);
char *mf_text_models(const struct mf_models *models);

/* Any JSON value as a YAML document (block style, strings quoted). */
char *mf_yaml_dump(const json_t *j);

/* The manifest and code changes of a fix, for a job's workload. */
const char *mf_fix_code(enum mf_fix fix);

#endif
