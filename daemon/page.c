/*
 * page.c: the web page (GET /, /page.js, /page.css), compiled in.
 *
 * The files of web/ are assembled into the program with .incbin, so the
 * page needs no generated source: every build that compiles the daemon's
 * sources from the source tree (the ASan, TSan and fuzz builds too) gets the
 * same bytes, and the Makefile rebuilds page.o when a file of web/ changes.
 * Paths are relative to the repository root, where make runs the
 * compiler.
 *
 * The script and the style sheet are served as files of their own rather
 * than inline with CSP hashes: the Content-Security-Policy is then one
 * constant ('self'), with no hash to recompute at build time, and each
 * file stays as it is written.  No request leaves the origin: connect-src
 * 'self' is the JSON API, and img-src data: is only the empty favicon.
 */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "memfloord.h"

/* NAME and NAME_end bracket the bytes of FILE, followed by one NUL. */
#define MFD_ASSET(name, file) \
	__asm__(".section .rodata\n" \
	        ".balign 16\n" \
	        ".globl " #name "\n" \
	        ".hidden " #name "\n" #name ":\n" \
	        ".incbin \"" file "\"\n" \
	        ".globl " #name "_end\n" \
	        ".hidden " #name "_end\n" #name "_end:\n" \
	        ".byte 0\n" \
	        ".previous\n"); \
	extern const char name[], name##_end[]

MFD_ASSET(mfd_page_html, "web/index.html");
MFD_ASSET(mfd_page_js, "web/page.js");
MFD_ASSET(mfd_page_css, "web/page.css");

static const struct {
	const char *path;
	const char *type;
	const char *start, *end;
} assets[] = {
	{ "/", "text/html; charset=utf-8", mfd_page_html, mfd_page_html_end },
	{ "/page.js", "text/javascript; charset=utf-8", mfd_page_js,
	    mfd_page_js_end },
	{ "/page.css", "text/css; charset=utf-8", mfd_page_css,
	    mfd_page_css_end },
};

void
mfd_page(const char *path, struct mf_answer *ans)
{
	size_t i, n;
	char *body;

	for (i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
		if (strcmp(assets[i].path, path) == 0)
			break;
	/* The routes that call this are the paths of assets[]. */
	if (i == sizeof(assets) / sizeof(assets[0])) {
		mf_api_error(MF_ANS_INTERNAL, NULL, "no such page", MF_OUT_JSON,
		    ans);
		return;
	}
	n = (size_t)(assets[i].end - assets[i].start);
	body = malloc(n + 1);
	if (body == NULL) {
		mf_api_error(MF_ANS_INTERNAL, NULL, "out of memory",
		    MF_OUT_JSON, ans);
		return;
	}
	memcpy(body, assets[i].start, n + 1);
	memset(ans, 0, sizeof(*ans));
	ans->kind = MF_ANS_OK;
	ans->body = body;
	ans->len = n;
	ans->content_type = assets[i].type;
}

void
mfd_page_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "Content-Security-Policy",
	    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
}
