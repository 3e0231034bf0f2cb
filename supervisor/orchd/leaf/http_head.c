/*
 * http_head.c - a request's head, strictly (http_head.h). One set of line
 * checks serves both the piecewise reader (each line as it completes) and
 * the whole-head check (every line again, then the fields that frame the
 * body or name the host).
 */
#include "http_head.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "http_host.h"
#include "params.h"

/* The fields a head may carry once at most, and what they said. */
enum { F_LENGTH, F_HOST, F_TYPE, F_AUTH, F_TE, F_EXPECT, F_DEADLINE, F_COUNT };

struct fields {
	uint32_t count[F_COUNT];
	const char *value[F_COUNT]; /* the first one, trimmed */
	size_t len[F_COUNT];
};

/* X-Deadline twice: which is meant? A proxy's tighter one must not be lost. */
static const char *const field_names[F_COUNT] = {
        "Content-Length",    "Host",   "Content-Type", "Authorization",
        "Transfer-Encoding", "Expect", "X-Deadline"};

/* The methods evhttp knows (the routes answer them: 404, 405, OPTIONS, HEAD). */
static const char *const methods[] = {"GET",     "HEAD",  "POST",    "PUT",  "DELETE",
                                      "OPTIONS", "TRACE", "CONNECT", "PATCH"};

static orch_err
refuse(struct params_err *pe, orch_err code, const char *msg)
{
	params_fail(pe, code, NULL, "%s", msg);
	return code;
}

static bool
tchar(char c)
{
	return isalnum((unsigned char)c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* METHOD SP /TARGET SP HTTP/1.1 (or 1.0), @n bytes without the CRLF. */
static orch_err
request_line(const char *p, size_t n, struct params_err *pe)
{
	size_t m = 0, t, v;

	while (m < n && tchar(p[m]))
		m++;
	t = m + 1;
	for (v = t; v < n && (unsigned char)p[v] > ' ' && (unsigned char)p[v] < 0x7f; v++)
		;
	if (m == 0 || m >= n || p[m] != ' ' || v == t || v >= n || p[v] != ' ' || n - v - 1 != 8 ||
	    (memcmp(p + v + 1, "HTTP/1.1", 8) != 0 && memcmp(p + v + 1, "HTTP/1.0", 8) != 0))
		return refuse(pe, ORCH_EINVAL,
		              "the request line is not METHOD SP TARGET SP HTTP/1.1 (or HTTP/1.0)");
	if (p[t] != '/')
		return refuse(pe, ORCH_EINVAL, "the request target is not a path (origin-form)");
	return ORCH_OK;
}

/* NAME ":" VALUE, @n bytes without the CRLF; the name's length into *@ret_name. */
static orch_err
field_line(const char *p, size_t n, size_t *ret_name, struct params_err *pe)
{
	size_t k = 0;

	if (n > 0 && (p[0] == ' ' || p[0] == '\t'))
		return refuse(pe, ORCH_EINVAL, "a folded header line (obs-fold)");
	while (k < n && tchar(p[k]))
		k++;
	if (k > 0 && k < n && (p[k] == ' ' || p[k] == '\t'))
		return refuse(pe, ORCH_EINVAL, "whitespace between a field name and its colon");
	if (k == 0 || k >= n || p[k] != ':')
		return refuse(pe, ORCH_EINVAL, "a header line that is not NAME: VALUE");
	for (size_t i = k + 1; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return refuse(pe, ORCH_EINVAL, "a control character in a field value");
	}
	*ret_name = k;
	return ORCH_OK;
}

/* Line @idx of a head (@n bytes, no CRLF): its syntax; a field's name length into *@ret_name. */
static orch_err
line_ok(uint32_t idx, const char *p, size_t n, size_t *ret_name, struct params_err *pe)
{
	if (memchr(p, '\r', n) != NULL)
		return refuse(pe, ORCH_EINVAL, "a bare CR in the head");
	if (n == 0 && idx == 0)
		return refuse(pe, ORCH_EINVAL, "an empty line before the request line");
	*ret_name = 0;
	return idx == 0 ? request_line(p, n, pe) : field_line(p, n, ret_name, pe);
}

static orch_err
grow(struct http_head_scan *s, size_t want, size_t max)
{
	size_t cap = s->cap ? s->cap : 1024;
	char *b;

	while (cap < want)
		cap *= 2;
	if (cap > max)
		cap = max;
	if ((b = orch_reallocarray(s->buf, cap, 1)) == NULL)
		return ORCH_ENOMEM;
	s->buf = b;
	s->cap = cap;
	return ORCH_OK;
}

/* The line that ended at s->n (its LF the last byte in). */
static orch_err
end_line(struct http_head_scan *s, struct params_err *pe)
{
	size_t start = s->line, name;
	orch_err rv;

	if (s->n - start < 2 || s->buf[s->n - 2] != '\r')
		return refuse(pe, ORCH_EINVAL,
		              "a line of the head ends with a bare LF (want CRLF)");
	s->line = s->n;
	if (s->n - start == 2 && s->lines > 0) {
		s->done = true;
		return ORCH_OK;
	}
	if ((rv = line_ok(s->lines, s->buf + start, s->n - start - 2, &name, pe)) != ORCH_OK)
		return rv;
	if (++s->lines > HTTP_HEAD_MAX_FIELDS + 1)
		return refuse(pe, ORCH_EHEADERS_TOO_LARGE, "more header fields than orchd takes");
	return ORCH_OK;
}

orch_err
http_head_feed(struct http_head_scan *s, const struct http_head_rules *r, const char *p, size_t n,
               size_t *ret_used, struct params_err *pe)
{
	size_t i = 0;
	orch_err rv = ORCH_OK;

	for (; i < n && !s->done; i++) {
		if (s->n == r->max_header_bytes) {
			rv = refuse(pe, ORCH_EHEADERS_TOO_LARGE,
			            "the head is over max_header_bytes");
			break;
		}
		if (s->n == s->cap && (rv = grow(s, s->n + 1, r->max_header_bytes)) != ORCH_OK) {
			params_fail(pe, rv, NULL, "out of memory");
			break;
		}
		s->buf[s->n++] = p[i];
		if (p[i] == '\n' && (rv = end_line(s, pe)) != ORCH_OK) {
			i++;
			break;
		}
	}
	*ret_used = i;
	return rv;
}

/* Trim spaces and tabs around @*p (@*n bytes). */
static void
trim(const char **p, size_t *n)
{
	while (*n > 0 && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*n)--;
	}
	while (*n > 0 && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
		(*n)--;
}

/* Note a field line (@n bytes, name @name long) in @f. */
static void
note(struct fields *f, const char *p, size_t n, size_t name)
{
	for (int i = 0; i < F_COUNT; i++) {
		if (strlen(field_names[i]) != name || strncasecmp(p, field_names[i], name) != 0)
			continue;
		if (f->count[i]++ == 0) {
			f->value[i] = p + name + 1;
			f->len[i] = n - name - 1;
			trim(&f->value[i], &f->len[i]);
		}
	}
}

/* The request line's method (@n bytes at @p): its length; whether evhttp knows it into *@known. */
static size_t
method_of(const char *p, size_t n, bool *known)
{
	const char *sp = memchr(p, ' ', n);
	size_t m = sp ? (size_t)(sp - p) : n;

	*known = false;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		*known |= strlen(methods[i]) == m && memcmp(p, methods[i], m) == 0;
	return m;
}

/* What the request line says. */
struct line0 {
	bool post, http11, known; /* POST; HTTP/1.1; a method evhttp knows */
	size_t method;            /* the method's length (at the head's start) */
};

/* Every line of the head @p (@n bytes) into @f and @l. */
static orch_err
lines(const char *p, size_t n, struct fields *f, struct line0 *l, struct params_err *pe)
{
	size_t pos = 0, name;
	uint32_t idx = 0;
	orch_err rv;

	for (;;) {
		const char *lf = memchr(p + pos, '\n', n - pos);
		size_t e = lf ? (size_t)(lf - p) : n;
		if (lf == NULL)
			return refuse(pe, ORCH_EINVAL, "the head does not end with an empty line");
		if (e == pos || p[e - 1] != '\r')
			return refuse(pe, ORCH_EINVAL,
			              "a line of the head ends with a bare LF (want CRLF)");
		if (e - 1 == pos && idx > 0)
			return e + 1 == n ? ORCH_OK
			                  : refuse(pe, ORCH_EINVAL, "bytes after the head's end");
		if ((rv = line_ok(idx, p + pos, e - 1 - pos, &name, pe)) != ORCH_OK)
			return rv;
		if (idx == 0) {
			l->post = e - 1 - pos > 5 && memcmp(p + pos, "POST ", 5) == 0;
			l->http11 = p[e - 2] == '1';
			l->method = method_of(p, e - 1, &l->known);
		} else {
			note(f, p + pos, e - 1 - pos, name);
		}
		if (++idx > HTTP_HEAD_MAX_FIELDS + 1)
			return refuse(pe, ORCH_EHEADERS_TOO_LARGE,
			              "more header fields than orchd takes");
		pos = e + 1;
	}
}

/* application/json, any case, parameters (charset) allowed. */
static bool
json_type(const char *v, size_t n)
{
	size_t k = 0;

	while (k < n && v[k] != ';')
		k++;
	while (k > 0 && (v[k - 1] == ' ' || v[k - 1] == '\t'))
		k--;
	return k == 16 && strncasecmp(v, "application/json", 16) == 0;
}

/* Content-Length as 1-18 digits into *@ret. */
static bool
length_ok(const char *v, size_t n, uint64_t *ret)
{
	uint64_t x = 0;

	if (n == 0 || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = x;
	return true;
}

/* The fields that frame the body. */
static orch_err
framing(const struct fields *f, bool post, const struct http_head_rules *r, struct http_head *h,
        struct params_err *pe)
{
	if (f->count[F_LENGTH] &&
	    !length_ok(f->value[F_LENGTH], f->len[F_LENGTH], &h->content_length))
		return refuse(pe, ORCH_EINVAL, "Content-Length is not a number");
	if (f->count[F_TE] && f->count[F_LENGTH])
		return refuse(pe, ORCH_EINVAL, "both Transfer-Encoding and Content-Length");
	if (!post && (f->count[F_TE] || h->content_length > 0))
		return refuse(pe, ORCH_EINVAL, "only POST takes a body");
	if (!post)
		return ORCH_OK;
	if (!f->count[F_LENGTH])
		return refuse(
		        pe, ORCH_ELENGTH_REQUIRED,
		        "a POST needs Content-Length: send the JSON body with its length (Transfer-Encoding is not taken)");
	if (h->content_length > r->max_body_bytes) {
		params_fail(pe, ORCH_ETOO_LARGE, NULL, "the body is %llu bytes; the most is %llu",
		            (unsigned long long)h->content_length,
		            (unsigned long long)r->max_body_bytes);
		return ORCH_ETOO_LARGE;
	}
	return ORCH_OK;
}

/* Host @v (@n bytes) against the allow-list. */
static orch_err
host_ok(const struct http_hosts *hosts, const char *v, size_t n, struct params_err *pe)
{
	orch_err rv = http_hosts_check(hosts, v, n);
	int shown = (int)(n > 100 ? 100 : n);

	if (rv == ORCH_EINVAL)
		params_fail(pe, rv, NULL, "Host '%.*s' is not HOST[:PORT]", shown, v);
	else if (rv != ORCH_OK)
		params_fail(pe, rv, NULL,
		            "Host '%.*s' is not a name of this server (allowed_hosts)", shown, v);
	return rv;
}

orch_err
http_head_check(const char *p, size_t n, const struct http_head_rules *r, struct http_head *ret,
                struct params_err *pe)
{
	struct fields f = {0};
	struct http_head h = {0};
	struct line0 l = {0};
	orch_err rv;

	if (n > r->max_header_bytes)
		return refuse(pe, ORCH_EHEADERS_TOO_LARGE, "the head is over max_header_bytes");
	if ((rv = lines(p, n, &f, &l, pe)) != ORCH_OK)
		return rv;
	h.post = l.post;
	for (int i = 0; i < F_COUNT; i++)
		if (f.count[i] > 1) {
			params_fail(pe, ORCH_EINVAL, NULL, "more than one %s field",
			            field_names[i]);
			return ORCH_EINVAL;
		}
	if ((rv = framing(&f, h.post, r, &h, pe)) != ORCH_OK)
		return rv;
	if (f.count[F_HOST] == 0 && l.http11)
		return refuse(pe, ORCH_EINVAL, "an HTTP/1.1 request without Host");
	if (f.count[F_HOST] && r->hosts &&
	    (rv = host_ok(r->hosts, f.value[F_HOST], f.len[F_HOST], pe)) != ORCH_OK)
		return rv;
	if (!l.known) {
		params_fail(pe, ORCH_ENOT_IMPLEMENTED, NULL,
		            "the method %.*s is not one orchd knows",
		            (int)(l.method > 32 ? 32 : l.method), p);
		return ORCH_ENOT_IMPLEMENTED;
	}
	if (f.count[F_EXPECT] &&
	    (f.len[F_EXPECT] != 12 || strncasecmp(f.value[F_EXPECT], "100-continue", 12) != 0))
		return refuse(pe, ORCH_EEXPECTATION, "Expect takes only 100-continue");
	if (h.post && (!f.count[F_TYPE] || !json_type(f.value[F_TYPE], f.len[F_TYPE])))
		return refuse(pe, ORCH_EMEDIA_TYPE,
		              "a POST body must be Content-Type: application/json (curl: add -H "
		              "'Content-Type: application/json'; -d alone sends a form)");
	*ret = h;
	return ORCH_OK;
}

void
http_head_reset(struct http_head_scan *s)
{
	s->n = 0;
	s->line = 0;
	s->lines = 0;
	s->done = false;
}

void
http_head_fini(struct http_head_scan *s)
{
	orch_free(s->buf);
	*s = (struct http_head_scan){0};
}
