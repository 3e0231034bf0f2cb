/*
 * http_cors.c - the CORS origin list (http_cors.h): parsed once at start,
 * a request's Origin put in the same form and looked up.
 */
#include "http_cors.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Where the host of "scheme://host..." (@n bytes at @p) ends; 0 when it is no host. */
static size_t
host_end(const char *p, size_t n, size_t start)
{
	size_t h = start;

	if (h < n && p[h] == '[') { /* [IPv6] */
		while (++h < n && (isxdigit((unsigned char)p[h]) || p[h] == ':' || p[h] == '.'))
			;
		return h < n && p[h] == ']' && h > start + 1 ? h + 1 : 0;
	}
	while (h < n && (isalnum((unsigned char)p[h]) || p[h] == '-' || p[h] == '.'))
		h++;
	return h > start ? h : 0;
}

/*
 * The origin @p (@n bytes) into @out (@cap bytes): lower case, without a
 * default port; false when it is not "http(s)://HOST[:PORT]".
 */
static bool
normalize(const char *p, size_t n, char *out, size_t cap)
{
	size_t s = n > 8 && strncasecmp(p, "https://", 8) == 0  ? 8
	           : n > 7 && strncasecmp(p, "http://", 7) == 0 ? 7
	                                                        : 0;
	size_t h = s ? host_end(p, n, s) : 0, keep = n;
	uint32_t port = 0;

	if (h == 0 || n >= cap)
		return false;
	if (h < n) { /* ":PORT", 1-65535 */
		if (p[h] != ':' || n - h < 2 || n - h > 6)
			return false;
		for (size_t i = h + 1; i < n; i++) {
			if (p[i] < '0' || p[i] > '9')
				return false;
			port = port * 10 + (uint32_t)(p[i] - '0');
		}
		if (port == 0 || port > 65535)
			return false;
		if (port == (s == 8 ? 443u : 80u))
			keep = h;
	}
	for (size_t i = 0; i < keep; i++)
		out[i] = (char)tolower((unsigned char)p[i]);
	out[keep] = '\0';
	return true;
}

orch_err
http_cors_init(struct http_cors *c, const char *origins, struct orch_errinfo *reterr)
{
	const char *p = origins;

	*c = (struct http_cors){0};
	for (;;) {
		p += strspn(p, ", \t");
		size_t n = strcspn(p, ", \t");
		if (n == 0)
			break;
		c->on = true;
		if (n == 1 && p[0] == '*') {
			c->any = true;
		} else if (c->n == HTTP_CORS_MAX) {
			return orch_errf(reterr, ORCH_EINVAL, "cors_origins: more than %d origins",
			                 HTTP_CORS_MAX);
		} else if (!normalize(p, n, c->origin[c->n], sizeof(c->origin[0]))) {
			return orch_errf(reterr, ORCH_EINVAL,
			                 "cors_origins: '%.*s' is not an origin "
			                 "(http://HOST[:PORT] or https://HOST[:PORT], no path)",
			                 (int)(n > 200 ? 200 : n), p);
		} else {
			c->n++;
		}
		p += n;
	}
	if (c->any && c->n > 0)
		return orch_errf(reterr, ORCH_EINVAL, "cors_origins: '*' or a list, not both");
	return ORCH_OK;
}

const char *
http_cors_allow(const struct http_cors *c, const char *origin)
{
	char norm[HTTP_CORS_ORIGIN_MAX];

	if (!c->on || origin == NULL)
		return NULL;
	if (c->any)
		return "*";
	if (!normalize(origin, strlen(origin), norm, sizeof(norm)))
		return NULL; /* "null" (a sandboxed page, a file), or garbage */
	for (uint32_t i = 0; i < c->n; i++)
		if (strcmp(norm, c->origin[i]) == 0)
			return origin;
	return NULL;
}
