/*
 * route.c - route tables (route.h): matching, running, the methods a path
 * takes and their Allow value; percent-decoding and query numbers.
 */
#include "route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/parse.h"
#include "reply.h"

/* Whether @path matches @rt; the variable part of a prefix route into @arg. */
static bool
route_match(const struct api_route *rt, const char *path, char *arg, size_t n)
{
	size_t lp = strlen(rt->path), ls = rt->suffix ? strlen(rt->suffix) : 0;
	size_t lpath = strlen(path);

	if (!rt->prefix) {
		arg[0] = '\0';
		return strcmp(path, rt->path) == 0;
	}
	if (lpath <= lp + ls || strncmp(path, rt->path, lp) != 0 ||
	    (ls && strcmp(path + lpath - ls, rt->suffix) != 0))
		return false;
	size_t k = lpath - lp - ls;
	if (k >= n || memchr(path + lp, '/', k) != NULL)
		return false;
	memcpy(arg, path + lp, k);
	arg[k] = '\0';
	return true;
}

/* Whether a row of @method takes a request of @m: HEAD runs the GET row. */
static bool
method_match(int method, int m)
{
	return method == m || (m == API_HEAD && method == API_GET);
}

bool
api_percent_decode(const char *s, size_t n, char *out, size_t size)
{
	size_t k = 0;

	if (size == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int hi = c == '%' && i + 2 < n ? orch_hex_digit(s[i + 1]) : -1;
		int lo = hi >= 0 ? orch_hex_digit(s[i + 2]) : -1;
		if (lo >= 0) { /* a '%' not followed by two hex digits stays itself */
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (k + 1 >= size)
			return false;
		out[k++] = c;
	}
	out[k] = '\0';
	return true;
}

bool
api_route_run(struct orchd *d, struct api_req *r, const struct api_route *table, size_t n)
{
	char arg[256], dec[256];

	for (size_t i = 0; i < n; i++) {
		if (!method_match(table[i].method, r->method) ||
		    !route_match(&table[i], r->path, arg, sizeof(arg)))
			continue;
		api_percent_decode(arg, strlen(arg), dec, sizeof(dec)); /* never longer */
		table[i].handler(d, r, dec);
		return true;
	}
	return false;
}

unsigned
api_route_methods(const struct api_route *table, size_t n, const char *path)
{
	char arg[256];
	unsigned m = 0;

	for (size_t i = 0; i < n; i++)
		if (route_match(&table[i], path, arg, sizeof(arg)))
			m |= (unsigned)table[i].method;
	if (m & API_GET)
		m |= API_HEAD;
	return m ? m | API_OPTIONS : 0;
}

const char *
api_method_name(int m)
{
	static const struct {
		int m;
		const char *name;
	} t[] = {{API_GET, "GET"},         {API_HEAD, "HEAD"},   {API_POST, "POST"},
	         {API_PUT, "PUT"},         {API_PATCH, "PATCH"}, {API_DELETE, "DELETE"},
	         {API_OPTIONS, "OPTIONS"}, {API_TRACE, "TRACE"}, {API_CONNECT, "CONNECT"}};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].m == m)
			return t[i].name;
	return "?";
}

void
api_allow_value(unsigned methods, char *out, size_t n)
{
	static const int order[] = {API_GET,   API_HEAD,   API_POST,   API_PUT,
	                            API_PATCH, API_DELETE, API_OPTIONS};
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (!(methods & (unsigned)order[i]) || k >= n)
			continue;
		int w = snprintf(out + k, n - k, "%s%s", k ? ", " : "", api_method_name(order[i]));
		k += w > 0 ? (size_t)w : 0;
	}
}

unsigned long long
api_query_u64(const char *query, const char *key, unsigned long long def, unsigned long long max)
{
	size_t lk = strlen(key);

	for (const char *p = query; p != NULL && *p != '\0';) {
		const char *end = strchr(p, '&'), *eq = strchr(p, '=');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char v[32], *stop;
		if (eq != NULL && eq < p + len && (size_t)(eq - p) == lk &&
		    strncasecmp(p, key, lk) == 0) {
			if (!api_percent_decode(eq + 1, len - lk - 1, v, sizeof(v)) || v[0] < '0' ||
			    v[0] > '9')
				return def;
			unsigned long long x = strtoull(v, &stop, 10);
			return *stop != '\0' ? def : x > max ? max : x;
		}
		p = end ? end + 1 : NULL;
	}
	return def;
}
