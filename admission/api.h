/*
 * api.h: one call per memfloor request, shared by the daemon and the
 * command line so both give the same answer for the same input.
 *
 * A call takes the request body and answers with a kind (what happened, for
 * the caller to map to an HTTP status or an exit code) and a body in the
 * requested output form.  Nothing here knows HTTP.
 */
#ifndef MF_API_H
#define MF_API_H

#include <stddef.h>

#include "../catalog/catalog.h"
#include "base/buf.h"
#include "base/jw.h"
#include "doc/doc.h"
#include "fingerprint/fingerprint.h"
#include "model/model.h"

enum mf_output { MF_OUT_JSON, MF_OUT_YAML, MF_OUT_TEXT };

enum mf_answer_kind {
	MF_ANS_OK,       /* 200 */
	MF_ANS_REJECTED, /* 403: an admission said no */
	MF_ANS_INVALID,  /* 400: the input is wrong; the body says where */
	MF_ANS_TOOBIG,   /* 413 */
	MF_ANS_INTERNAL, /* 500: out of memory */
	MF_ANS_UPSTREAM  /* 502: a model config could not be fetched or read */
};

enum mf_verdict { MF_VERDICT_NONE, MF_VERDICT_ADMITTED, MF_VERDICT_REJECTED };

struct mf_answer {
	enum mf_answer_kind kind;
	char *body; /* owned, NUL-terminated */
	size_t len;
	const char *content_type; /* static string */
	char job[254];   /* job name (253 bytes at most) for the log, or "" */
	char field[128]; /* an error's field for the log, or "" */
	enum mf_verdict verdict;
	/* An admit's or an estimate's job: its fingerprint (design 23), as
	 * the body says it; "" for other answers and errors. */
	char fingerprint[MF_FP_HEX];
	/* An admission (verdict admitted) when mf_api's observed is set: the
	 * job (borrowed from the request: valid until mf_request_free), the
	 * fixes admission applied, the card and the count, which place it;
	 * NULL and "" otherwise. */
	const struct mf_job *placed;
	unsigned placed_fixes;
	char placed_card[128];
	int64_t placed_count;
};

struct mf_observed; /* place/place.h */

struct mf_api {
	const struct mf_catalog *cat;   /* borrowed for the call */
	const struct mf_models *models; /* borrowed; may be NULL */
	/* The estimator asked for (?estimator=, --estimator), or NULL for
	 * the catalogue's. */
	const char *estimator;
	/* Design 23: what runs of the job of fingerprint fp measured, a
	 * card each, into *out (out->n 0: none); NULL: observations are not
	 * kept, so an admit neither looks its runs up nor notes itself for
	 * the store (mf_answer's placed).  Called once an admit, from the
	 * request's thread. */
	void (*observed)(const char *fp, struct mf_observed *out);
};

/*
 * The shape of every call that answers a request body; the daemon's routes
 * and the command line pick one of these.
 */
typedef void (*mf_api_call)(const struct mf_api *api, const char *body,
    size_t len, enum mf_doc_format fmt, enum mf_output out,
    struct mf_answer *ans);

/*
 * Each call fills *ans completely, even on bad input or allocation failure
 * (then with a fixed body); release it with mf_answer_free.  fmt says how
 * to read the body (MF_DOC_AUTO sniffs JSON by its first byte).
 */
void mf_api_admit(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans);
void mf_api_estimate(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans);
/*
 * A PyTorch out-of-memory message as text, or JSON {"message": "...",
 * "job": {a Job manifest}}; with a job, a capacity diagnosis also places
 * the job with a floor above the card that failed.
 */
void mf_api_diagnose(const struct mf_api *api, const char *body, size_t len,
    enum mf_doc_format fmt, enum mf_output out, struct mf_answer *ans);
/*
 * An admit or an estimate in two phases, for a job whose model is at a
 * URL: mf_api_prepare reads the body once (the document and the job);
 * when mf_request_url names a config, the caller
 * fetches it (memfloord without holding a server thread, memfloor
 * directly) and hands it over with mf_request_config, or a model it read
 * before with mf_request_model; then mf_api_decide answers.
 * mf_api_admit and mf_api_estimate are both phases at once, for jobs whose
 * model needs no fetch.
 */
enum mf_call { MF_CALL_ADMIT, MF_CALL_ESTIMATE };
struct mf_request;

/* *req (free with mf_request_free), or NULL with ans holding the error
 * answer. */
void mf_api_prepare(const struct mf_api *api, enum mf_call call,
    const char *body, size_t len, enum mf_doc_format fmt, enum mf_output out,
    struct mf_request **req, struct mf_answer *ans);
/* The spec.model.configUrl still to fetch, or NULL.  Borrowed from req. */
const char *mf_request_url(const struct mf_request *req);
/*
 * The config fetched for that URL, text[0..len): MF_OK with the model read
 * (also copied to *model, for a cache), or the answer to give in ans: 502
 * when it is not JSON, 400 naming the field a config lacks.
 */
enum mf_rc mf_request_config(struct mf_request *req, const char *text,
    size_t len, struct mf_model *model, struct mf_answer *ans);
/* The model of that URL, read before (a cache). */
void mf_request_model(struct mf_request *req, const struct mf_model *model);
/* Answer the request (a URL not yet resolved is a 400). */
void mf_api_decide(const struct mf_api *api, struct mf_request *req,
    struct mf_answer *ans);
void mf_request_free(struct mf_request *req);

/* min_memory is the ?minMemory= text, or NULL for the whole catalogue. */
void mf_api_catalog(const struct mf_api *api, const char *min_memory,
    enum mf_output out, struct mf_answer *ans);
void mf_api_models(const struct mf_api *api, enum mf_output out,
    struct mf_answer *ans);
/*
 * The JSON Schema of a document (design 3, 4; fields.h): kind "Job" (and
 * NULL) or "GpuCatalog", as JSON or YAML, or for MF_OUT_TEXT its field
 * list in Markdown.  Another kind is a 400 naming the field "kind".
 */
void mf_api_schema(const char *kind, enum mf_output out, struct mf_answer *ans);
/* The row of the document of a kind in the table of fields: "Job" (and
 * NULL) or "GpuCatalog"; NULL for another kind. */
struct mf_field;
const struct mf_field *mf_api_document(const char *kind);
/* An answer for an error decided outside the library (404, 415, ...). */
void mf_api_error(enum mf_answer_kind kind, const char *field,
    const char *message, enum mf_output out, struct mf_answer *ans);
void mf_answer_free(struct mf_answer *ans);
/* The body, handed to the caller to free(), the answer left without one;
 * NULL when the body is not the answer's to give (the fixed body of an
 * out-of-memory answer), which then stays. */
char *mf_answer_take(struct mf_answer *ans);

/*
 * Set w->estimator to the one api asks for, else the catalogue's.  An
 * unknown name is MF_EINVAL naming the field "estimator"; w is untouched
 * on error.
 */
enum mf_rc mf_api_estimator(const struct mf_api *api, struct mf_workload *w,
    struct mf_error *err);

/*
 * The fingerprint an admit of job on api answers (design 23), into hex:
 * job, read and its model resolved, given api's estimator and placed with
 * what its runs measured (api->observed), fingerprinted as placed (as
 * written when it is rejected).  An observation posted with its job is
 * tied to its admission so.  MF_EINVAL and MF_ERANGE as the admit's,
 * MF_ENOMEM; hex is untouched on error.
 */
enum mf_rc mf_api_admit_fingerprint(const struct mf_api *api,
    const struct mf_job *job, char *hex, struct mf_error *err);

/*
 * An answer document in the form out asks for (YAML for MF_OUT_YAML, else
 * JSON), shared by every request module so that each document answer has
 * one cap and one content type: write it with the writer
 * mf_answer_doc_begin returns, then mf_answer_doc_end takes it as ans's
 * body with kind (a writer that failed answers 500).  Only the body, its
 * length, kind and content type of ans are set.
 */
struct mf_answer_doc {
	struct mf_buf b;
	struct mf_jw w;
};
struct mf_jw *mf_answer_doc_begin(struct mf_answer_doc *d, enum mf_output out);
void mf_answer_doc_end(struct mf_answer_doc *d, enum mf_answer_kind kind,
    enum mf_output out, struct mf_answer *ans);

/* Shared by the other request modules: set ans from JSON text (taken;
 * NULL answers 500), from a buffer's JSON text (taken, its length as the
 * buffer holds it; a failed buffer answers 500) or from an error. */
void
mf_answer_jtext(struct mf_answer *ans, enum mf_answer_kind kind, char *text);
void mf_answer_jbuf(struct mf_answer *ans, enum mf_answer_kind kind,
    struct mf_buf *b);
void mf_answer_err(struct mf_answer *ans, enum mf_rc rc,
    const struct mf_error *err, enum mf_output out);
void
mf_answer_text(struct mf_answer *ans, enum mf_answer_kind kind, char *text);

#endif
