/*
 * render.h: decisions, estimates, the catalogue and errors as JSON (the
 * design 8 shapes), YAML, and text tables a person reads in a terminal.
 *
 * JSON and YAML come from one writer (jw.h) with two back ends.
 */
#ifndef MF_RENDER_H
#define MF_RENDER_H

#include <stdint.h>

#include "../../catalog/catalog.h"
#include "../base/err.h"
#include "../base/jw.h"
#include "../estimate/estimate.h"
#include "../manifest/manifest.h"
#include "../model/model.h"
#include "../place/place.h"

/*
 * The design 8 shapes, written into w (JSON or YAML).  key names the value
 * inside the object w has open; NULL at the top or inside a list.  A
 * failure is left in w's buffer.
 */
void
mf_write_decision(struct mf_jw *w, const char *key, const struct mf_job *job,
    const struct mf_decision *d, const struct mf_catalog *cat);
/* The estimate of job's own workload (no fixes applied); fp, the job's
 * fingerprint (design 23), written first, or NULL inside a decision, whose
 * own fingerprint is the job's as placed; wk, the work of its step
 * (mf_work_of with e), or NULL to have it worked out here. */
void mf_write_estimate(struct mf_jw *w, const char *key,
    const struct mf_job *job, const char *fp, const struct mf_estimate *e,
    const struct mf_work *wk, const struct mf_catalog *cat);
/* min_memory > 0: only cards with that much memory, by cost per
 * reference hour; min_format is its enum mf_qty_format. */
void mf_write_catalog(struct mf_jw *w, const struct mf_catalog *cat,
    int64_t min_memory, int min_format);
void mf_write_models(struct mf_jw *w, const struct mf_models *models);
/* {"error", "field", "line", "column"} of design 8. */
void mf_write_error(struct mf_jw *w, const struct mf_error *err);
/* Text tables a person reads in a terminal; malloc'd, NULL when an
 * allocation failed. */
char *mf_text_decision(const struct mf_job *job, const struct mf_decision *d);
char *mf_text_estimate(const struct mf_job *job, const struct mf_estimate *e,
    const struct mf_catalog *cat);
char *mf_text_catalog(const struct mf_catalog *cat, int64_t min_memory,
    int min_format);
char *mf_text_models(const struct mf_models *models);

#endif
