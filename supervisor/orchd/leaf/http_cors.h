#pragma once
/*
 * http_cors.h - which web origins may call the public API from a browser
 * (CORS, issue 18). Off by default: orchd then sends no Access-Control-*
 * field, so a page from another origin can neither read an answer nor send
 * a request that needs a preflight (every POST does: its body is
 * application/json).
 *
 * cors_origins (config) is "*" (any origin) or a list of origins,
 * "http://HOST[:PORT]" or "https://HOST[:PORT]" (HOST a name, an IPv4 or an
 * [IPv6]; no path), separated by commas or spaces. Scheme and host compare
 * without case; a default port (80 for http, 443 for https) is dropped, as
 * browsers drop it from Origin. Pure: no libevent. Thread: any (no shared
 * state).
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define HTTP_CORS_MAX        16
#define HTTP_CORS_ORIGIN_MAX 128
/* How long a browser may keep a preflight's answer (Access-Control-Max-Age). */
#define HTTP_CORS_MAX_AGE_S 600

struct http_cors {
	bool on;  /* cors_origins is set */
	bool any; /* "*" */
	uint32_t n;
	char origin[HTTP_CORS_MAX][HTTP_CORS_ORIGIN_MAX]; /* lower case, no default port */
};

/*
 * http_cors_init - the origins of @origins (the config's cors_origins; ""
 * for CORS off). ORCH_EINVAL, naming the entry, for one that is not an
 * origin, or more than HTTP_CORS_MAX.
 */
orch_err http_cors_init(struct http_cors *c, const char *origins, struct orch_errinfo *reterr);

/*
 * http_cors_allow - the Access-Control-Allow-Origin value for a request
 * whose Origin field is @origin (NULL: none): "*" when any origin may,
 * @origin itself when it is listed, NULL when CORS is off or it is not.
 */
const char *http_cors_allow(const struct http_cors *c, const char *origin);
