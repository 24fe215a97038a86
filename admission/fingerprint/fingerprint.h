/*
 * fingerprint.h: the fingerprint of a job (design 23), a digest of
 * everything its memory and time depend on: the model's shape (not its
 * name), the workload after defaults, the GPU count, and the fixes
 * admission applied (through the workload they change, so a fix and the
 * same change written into the manifest give one fingerprint).  Not the
 * job's name, duration or limits, not the card (an observation on one
 * card speaks for the job on every card), and not the estimator (how
 * memfloor reckons a job, not what it runs).
 *
 * The job is written field by field, in the fixed order of the tables in
 * fingerprint.c: as canonical JSON for the store's record (mf_fp_write),
 * and for the digest as those members' values, a varint each (mf_fp_job:
 * the same fields, a tenth of the bytes to hash).  The fingerprint is the
 * first 128 bits of the SHA-256 of that binary form, as 32 lowercase hex
 * digits: short enough for a Kubernetes label value (63 characters at
 * most).  So
 * the same job read from another manifest, in another field order, with
 * its config inline or by name, has the same fingerprint.  A member added
 * to struct mf_model or struct mf_workload counts once its row is added.
 */
#ifndef MF_FINGERPRINT_H
#define MF_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "../base/jw.h"
#include "../estimate/estimate.h"

/* Bytes of a fingerprint, and the size of its hex text with the NUL. */
#define MF_FP_BYTES 16
#define MF_FP_HEX (2 * MF_FP_BYTES + 1)

/*
 * The job as placed, canonically, into w under key (NULL at the top):
 * {"v", "model" (its shape, or null without one), "minMemory" (the floor,
 * only without a model), "workload" (job's workload with fixes applied
 * over count GPUs), "framework" (the release its recipe came from, or
 * null: a label for calibration's groups, not in the digest, since the
 * workload holds what the framework set), "count"}.  job's model must
 * be known unless model_source is MF_MODEL_NONE.  A failure is left in
 * w's buffer.
 */
void mf_fp_write(struct mf_jw *w, const char *key, const struct mf_job *job,
    unsigned fixes, int64_t count);
/*
 * The fingerprint of job placed with fixes (MF_FIXBIT set; 0 for the job
 * as written) over count GPUs, into hex (32 digits and a NUL).  No
 * allocation; never fails.
 */
void mf_fp_job(const struct mf_job *job, unsigned fixes, int64_t count,
    char hex[MF_FP_HEX]);
/*
 * The job as placed back from text[0..len), mf_fp_write's (version 1), into
 * *job (its model's shape, or its floor, its workload, with fixes already
 * in it: place it with none, and its framework, none where the text has
 * none) and *count.  What the text does not
 * hold (name, duration, limits, allowed fixes) is left 0, and so is the
 * name of a quantized model's method (quant.method NULL: a label for
 * answers, which no arithmetic reads; its format and figures are read).
 * An unquantized model's text written again is the text read.
 * MF_EINVAL naming the member for a text that is not mf_fp_write's;
 * MF_ENOMEM.  *job and *count are untouched on error.
 */
enum mf_rc mf_fp_read(const char *text, size_t len, struct mf_job *job,
    int64_t *count, struct mf_error *err);
/* Whether s is a fingerprint's text: 32 lowercase hex digits. */
int mf_fp_valid(const char *s);
/*
 * SHA-256 (FIPS 180-4) of data[0..len) into out[0..32).  Shared for its
 * test vectors.
 */
void mf_fp_sha256(const void *data, size_t len, unsigned char out[32]);

#endif
