/*
 * qty.h: Kubernetes resource quantities used as byte sizes.
 *
 * Semantics follow k8s.io/apimachinery/pkg/api/resource: binary suffixes
 * Ki Mi Gi Ti Pi Ei, decimal suffixes k M G T P E, plain and fractional
 * numbers ("94.5G"), decimal exponents ("1e9", "5E3"), an optional leading
 * sign.  The sub-units m, u, n parse as quantities but are never byte sizes.
 */
#ifndef MF_QTY_H
#define MF_QTY_H

#include <stddef.h>
#include <stdint.h>

/* How a quantity was written; printing keeps the family, as Kubernetes does. */
enum mf_qty_format {
	MF_QTY_BINARY,  /* Ki Mi Gi ... */
	MF_QTY_DECIMAL, /* plain, k M G ... */
	MF_QTY_EXPONENT /* 1e9 */
};

enum mf_qty_err {
	MF_QTY_OK = 0,
	MF_QTY_EMPTY,       /* "" */
	MF_QTY_SYNTAX,      /* not a quantity: whitespace, bare suffix, junk */
	MF_QTY_SUBUNIT,     /* m, u or n: fractions of a byte */
	MF_QTY_FRACTION,    /* the value is not a whole number of bytes */
	MF_QTY_NOTPOSITIVE, /* zero or negative */
	MF_QTY_RANGE,       /* more than 2^63 - 1 bytes */
	MF_QTY_SMALL        /* a GPU's memory below MF_QTY_MEMORY_MIN */
};

/*
 * The least memory a GPU quantity may say: 1Gi.  No card has less, so a
 * smaller figure is a unit left out ("80" is 80 bytes, not 80Gi).
 */
#define MF_QTY_MEMORY_MIN (INT64_C(1) << 30)

/*
 * Parse s[0..len) as a byte size.  On success store the byte count in
 * *bytes and the notation in *format (format may be NULL).  On error the
 * out-parameters are untouched.
 */
enum mf_qty_err mf_qty_parse_bytes(const char *s, size_t len, int64_t *bytes,
    enum mf_qty_format *format);

/* mf_qty_parse_bytes for a GPU's memory: MF_QTY_SMALL below
 * MF_QTY_MEMORY_MIN. */
enum mf_qty_err mf_qty_parse_memory(const char *s, size_t len, int64_t *bytes,
    enum mf_qty_format *format);

/* A short phrase for an error ("is not a quantity"); never NULL. */
const char *mf_qty_strerror(enum mf_qty_err err);

/*
 * Why s[0..len) is refused, as a whole phrase into buf (NUL-terminated,
 * cut at size): "'88Gx' is not a quantity", with what a user most likely
 * meant where that is clear: "'80GB' is not a quantity: memory is written
 * 80G (10^9 bytes) or 80Gi (2^30 bytes)"; "'80' is 80 bytes, less than
 * 1Gi: a GPU's memory is written with its unit, e.g. 80Gi".  Returns buf.
 */
char *mf_qty_explain(const char *s, size_t len, enum mf_qty_err err, char *buf,
    size_t size);

/*
 * Write the canonical Kubernetes form of bytes (> 0) in the given family to
 * buf (NUL-terminated, truncated to size), as Kubernetes does: 88Gi ->
 * "88Gi", 1.5Gi -> "1536Mi", 94.5G -> "94500M", 1e9 -> "1e9".  A binary
 * value of 1Ki or more that no binary suffix divides prints as a plain byte
 * count ("2000"), and one below 1Ki in the decimal family ("1k").  Returns
 * the length the full text needs (like snprintf).  MF_QTY_STRMAX is always
 * enough.
 */
#define MF_QTY_STRMAX 32
size_t
mf_qty_format(int64_t bytes, enum mf_qty_format format, char *buf, size_t size);

#endif
