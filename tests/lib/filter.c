/*
 * filter.c: linked into every cmocka program, so that one case can be run
 * alone: MF_TEST_CASE=PATTERN runs only the cases whose names match it
 * (cmocka's filter: * and ? wildcards).  make check T=test_place:CASE sets
 * it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

__attribute__((constructor)) static void
case_filter(void)
{
	const char *pattern = getenv("MF_TEST_CASE");

	if (pattern != NULL && *pattern != '\0')
		cmocka_set_test_filter(pattern);
}
