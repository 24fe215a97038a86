/*
 * test_negotiate.c: the answer's form from Accept (daemon/negotiate.c),
 * as RFC 9110 12.5.1 weighs it: the highest q, a type's q that of the
 * range naming it most closely, q=0 refusing it, equal ones by their
 * place in the list; JSON by default and when nothing listed is ours.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "memfloord.h"

static void
test_negotiate_forms(void **state)
{
	static const struct {
		const char *accept;
		enum mf_output want;
	} cases[] = {
		{ NULL, MF_OUT_JSON },
		{ "", MF_OUT_JSON },
		{ "application/yaml", MF_OUT_YAML },
		{ "Application/YAML", MF_OUT_YAML },
		{ "text/plain", MF_OUT_TEXT },
		{ "text/yaml", MF_OUT_YAML },
		/* Equal q: the one listed first, as before q was read. */
		{ "application/yaml, application/json", MF_OUT_YAML },
		{ "application/json, application/yaml", MF_OUT_JSON },
		/* q=0 refuses a type; a higher q wins over the place. */
		{ "application/yaml;q=0, application/json", MF_OUT_JSON },
		{ "text/plain;q=0.5, application/yaml", MF_OUT_YAML },
		{ "application/json; q=0.2, text/plain; q=0.9", MF_OUT_TEXT },
		{ "application/yaml ; Q=0.3, application/json;q=0.1",
		    MF_OUT_YAML },
		/* The closest range sets a type's q. */
		{ "*/*;q=0.1, application/yaml", MF_OUT_YAML },
		{ "application/json;q=0, */*", MF_OUT_YAML },
		{ "text/*", MF_OUT_TEXT },
		{ "text/*, text/plain;q=0", MF_OUT_YAML },
		/* A browser's: nothing of ours but the any-range. */
		{ "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		    MF_OUT_JSON },
		/* A parameter list that ends at its ';' (found by fuzzing:
		 * read past the header). */
		{ "application/yaml;", MF_OUT_YAML },
		{ "text/html, */*; ", MF_OUT_JSON },
		{ "application/yaml; q", MF_OUT_YAML },
		/* Nothing acceptable, or a q that is not a number. */
		{ "application/json;q=0", MF_OUT_JSON },
		{ "application/yaml;q=x", MF_OUT_JSON },
		{ "application/yamlx, xapplication/yaml", MF_OUT_JSON },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (mfd_negotiate(cases[i].accept) != cases[i].want)
			fail_msg("Accept: %s: %d, not %d",
			    cases[i].accept ? cases[i].accept : "(none)",
			    (int)mfd_negotiate(cases[i].accept),
			    (int)cases[i].want);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
