#pragma once
/*
 * http_head.h - the head of an HTTP/1.1 request (request line and header
 * fields), read as its bytes arrive, before evhttp parses them, and checked
 * strictly (issue 16). evhttp 2.1 takes the first of two Content-Length
 * fields, ignores "Transfer-Encoding :" (the space makes it another field),
 * accepts bare LF line ends and folded lines, and has no Host rule; a proxy
 * in front that reads the same bytes another way could hide a second
 * request in the first. A head is refused unless:
 *   - every line ends with CRLF, none is folded (obs-fold), none holds a
 *     control character; the request line is METHOD SP /PATH SP HTTP/1.x;
 *   - every field name is a token with its colon right after it;
 *   - Content-Length is there at most once, as digits; Host, Content-Type,
 *     Authorization and Expect at most once;
 *   - there is no Transfer-Encoding (with Content-Length: 400; alone: 411);
 *   - only POST has a body: a POST has a Content-Length (411) of at most
 *     max_body_bytes (413) and Content-Type application/json (415);
 *   - an HTTP/1.1 request has a Host, and the allow-list takes it (421);
 *   - the head fits max_header_bytes and HTTP_HEAD_MAX_FIELDS (431);
 *   - the method is one evhttp knows (GET, HEAD, POST, PUT, DELETE, OPTIONS,
 *     TRACE, CONNECT, PATCH; 501 otherwise: evhttp would answer it with an
 *     HTML page), and an Expect is 100-continue (417; evhttp's again).
 * Everything else about a request (the route, which methods it takes) is
 * evhttp's and the handlers'. Pure (no libevent): orchd_core, its tests and the HTTP
 * fuzzer link it. Thread: any (no shared state).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct http_hosts;
struct params_err;

/* More header fields than this is 431, whatever their size. */
#define HTTP_HEAD_MAX_FIELDS 100

/* What a head may be. */
struct http_head_rules {
	uint32_t max_header_bytes; /* the whole head: request line to the final empty line */
	uint64_t max_body_bytes;
	const struct http_hosts *hosts; /* NULL: any Host */
};

/* What an accepted head says. */
struct http_head {
	bool post;               /* the one method with a body */
	uint64_t content_length; /* 0 without a body */
};

/* A head arriving in pieces. */
struct http_head_scan {
	char *buf; /* the head so far (at most max_header_bytes) */
	size_t n, cap;
	size_t line;    /* where the line being read starts */
	uint32_t lines; /* complete lines */
	bool done;      /* the empty line arrived: buf[0..n) is the whole head */
};

/*
 * http_head_feed - take @n bytes of a request at @p into @s until its head
 * ends: *@ret_used is how many were the head's (the rest is its body or the
 * next request). Each line is checked as it completes, so a bad one is
 * refused before evhttp reads it; s->done once the empty line is in. On a
 * refusal the code is returned and in @pe: ORCH_EINVAL (a line's syntax),
 * ORCH_EHEADERS_TOO_LARGE (@r's limits); ORCH_ENOMEM.
 */
orch_err http_head_feed(struct http_head_scan *s, const struct http_head_rules *r, const char *p,
                        size_t n, size_t *ret_used, struct params_err *pe);

/*
 * http_head_check - the whole head @p (@n bytes, its final empty line
 * included) against @r: ORCH_OK with *@ret filled, or the refusal, returned
 * and in @pe: ORCH_EINVAL (400), ORCH_ELENGTH_REQUIRED (411),
 * ORCH_ETOO_LARGE (413), ORCH_EMEDIA_TYPE (415), ORCH_EEXPECTATION (417),
 * ORCH_EMISDIRECTED (421), ORCH_EHEADERS_TOO_LARGE (431),
 * ORCH_ENOT_IMPLEMENTED (501).
 */
orch_err http_head_check(const char *p, size_t n, const struct http_head_rules *r,
                         struct http_head *ret, struct params_err *pe);

/* http_head_reset - forget the head but keep the buffer, for the connection's next request. */
void http_head_reset(struct http_head_scan *s);

/* http_head_fini - free the buffer; @s is then empty (reusable). */
void http_head_fini(struct http_head_scan *s);
