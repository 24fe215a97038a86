/*
 * fuzz_yaml.c: libFuzzer harness holding mf_yfast to libyaml.
 *
 * Whenever mf_yfast reads an input, libyaml must read it too and give the
 * same events: kinds, marks, values and plainness.  Inputs mf_yfast gives
 * up on are libyaml's alone, so they only have to not crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yevents.h"
#include "doc/yfast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ytext fast = { 0 }, slow = { 0 };

	if (mf_yfast((const char *)data, size, ytext_event, &fast) == 0) {
		if (ytext_libyaml((const char *)data, size, &slow) != 0 ||
		    strcmp(fast.s, slow.s) != 0)
			abort();
	}
	free(fast.s);
	free(slow.s);
	return 0;
}
