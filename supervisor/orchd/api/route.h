#pragma once
/*
 * route.h - route tables as data (issue 53): matching a request's method and
 * path to its handler, the methods a path takes, and their names. The edge's
 * listeners and the admin API keep their tables; nothing here is HTTP's
 * transport. Thread: any (tables are constant).
 */
#include <stdbool.h>
#include <stddef.h>

struct api_req;
struct orchd;

/* api_handler_fn - a route's handler; @arg is the path's variable part ("" for exact routes). */
typedef void (*api_handler_fn)(struct orchd *d, struct api_req *r, const char *arg);

/*
 * One route: @method (an api_method), @path matched exactly, or as a prefix
 * when @prefix (then the rest up to @suffix, percent-decoded, is the
 * handler's argument, and the path must end with @suffix).
 */
struct api_route {
	int method;
	const char *path;
	bool prefix;
	const char *suffix;
	api_handler_fn handler;
};

/*
 * api_route_run - run the route of @table (@n rows) matching @r (a HEAD runs
 * the GET row: the edge leaves the body out); false when none does (nothing
 * answered).
 */
bool api_route_run(struct orchd *d, struct api_req *r, const struct api_route *table, size_t n);

/* api_route_methods - the methods @table's rows take at @path (with HEAD and OPTIONS); 0: none. */
unsigned api_route_methods(const struct api_route *table, size_t n, const char *path);

/* api_method_name - "GET", "POST", ... for an api_method @m; "?" for another. */
const char *api_method_name(int m);

/* api_allow_value - an Allow header's value for @methods into @out (@n bytes). */
void api_allow_value(unsigned methods, char *out, size_t n);

/*
 * api_percent_decode - @n bytes at @s with each %XX decoded ('+' kept) into
 * @out (@size bytes, NUL-terminated); false when it does not fit.
 */
bool api_percent_decode(const char *s, size_t n, char *out, size_t size);

/*
 * api_query_u64 - the query parameter @key of @query ("a=1&b=2") as a number
 * in [0, @max]; @def when it is absent or not such a number.
 */
unsigned long long api_query_u64(const char *query, const char *key, unsigned long long def,
                                 unsigned long long max);
