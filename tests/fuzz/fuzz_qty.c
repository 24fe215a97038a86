/*
 * fuzz_qty.c: libFuzzer harness for the quantity parser.
 *
 * Any byte string either fails to parse or gives a byte count whose
 * canonical text fits MF_QTY_STRMAX and parses back to the same count.  A
 * truncated format must agree with the full one.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/qty.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_round_trip(int64_t bytes, enum mf_qty_format format)
{
	char buf[MF_QTY_STRMAX], small[8];
	enum mf_qty_format again_format;
	int64_t again;
	size_t len;

	len = mf_qty_format(bytes, format, buf, sizeof(buf));
	if (len >= sizeof(buf) || strlen(buf) != len)
		abort();
	if (mf_qty_parse_bytes(buf, len, &again, &again_format) != MF_QTY_OK)
		abort();
	if (again != bytes)
		abort();
	if (mf_qty_format(bytes, format, small, sizeof(small)) != len)
		abort();
	if (strncmp(small, buf, sizeof(small) - 1) != 0 ||
	    strlen(small) >= sizeof(small))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum mf_qty_format format;
	enum mf_qty_err err;
	int64_t bytes = 0;

	err = mf_qty_parse_bytes((const char *)data, size, &bytes, &format);
	if (mf_qty_strerror(err) == NULL)
		abort();
	if (err != MF_QTY_OK)
		return 0;
	if (bytes <= 0)
		abort();
	check_round_trip(bytes, format);
	check_round_trip(bytes, MF_QTY_BINARY);
	check_round_trip(bytes, MF_QTY_DECIMAL);
	check_round_trip(bytes, MF_QTY_EXPONENT);
	return 0;
}
