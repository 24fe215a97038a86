/*
 * doc_scan.c: the scanners of doc_scan.h that few tokens need, out of line:
 * blank space other than one space or a newline and an indentation, a \u
 * escape, a sequence of UTF-8.
 */
#include "doc_scan.h"

static int
hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return 0;
	}
	*out = v;
	return 1;
}

size_t
mf_scan_utf8(const unsigned char *s, const unsigned char *end)
{
	size_t n = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
	uint32_t v;

	if (s[0] < 0xC2 || s[0] > 0xF4 || (size_t)(end - s) < n)
		return 0;
	v = s[0] & (0x7Fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3Fu);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
		return 0;
	return n;
}

const char *
mf_scan_unicode(const char *p, const char *end, uint32_t *c)
{
	uint32_t lo;

	if (end - p < 4 || !hex4(p, c))
		return NULL;
	p += 4;
	if (*c >= 0xDC00 && *c <= 0xDFFF)
		return NULL;
	if (*c >= 0xD800 && *c <= 0xDBFF) {
		if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
		    !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
			return NULL;
		*c = 0x10000 + ((*c - 0xD800) << 10) + (lo - 0xDC00);
		p += 6;
	}
	return *c == 0 ? NULL : p;
}
