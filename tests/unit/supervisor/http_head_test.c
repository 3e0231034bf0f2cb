/*
 * http_head_test.c - a request's head, strictly: each smuggling and browser
 * case of issue 16 with its exact code, the same verdict fed whole or one
 * byte at a time, the head's end found exactly, and an OOM loop.
 */
#include <stdio.h>
#include <string.h>

#include "http_head.h"
#include "http_host.h"
#include "params.h"
#include "t.h"

static struct http_hosts hosts;
static const struct http_head_rules rules = {
        .max_header_bytes = 1024, .max_body_bytes = 100, .hosts = &hosts};

#define POST_HEAD(extra)                                                                             \
	"POST /execute HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n" extra \
	"\r\n"

static const struct {
	const char *head;
	orch_err want;
} cases[] = {
        {POST_HEAD("Content-Length: 2\r\n"), ORCH_OK},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_OK},
        {"GET /health HTTP/1.0\r\n\r\n", ORCH_OK}, /* 1.0 may leave Host out */
        {"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", ORCH_OK},
        {POST_HEAD("content-length: 7\r\nX-Empty:\r\n"), ORCH_OK},
        /* smuggling: framing */
        {POST_HEAD("Content-Length: 2\r\nContent-Length: 40\r\n"), ORCH_EINVAL},
        {POST_HEAD("Content-Length: 2\r\nContent-Length: 2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Content-Length: 2, 2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Content-Length: +2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Content-Length: 0x2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Content-Length:\r\n"), ORCH_EINVAL},
        {POST_HEAD("Transfer-Encoding : chunked\r\nContent-Length: 2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Content-Length\t: 2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n"), ORCH_EINVAL},
        {POST_HEAD("Transfer-Encoding: chunked\r\n"), ORCH_ELENGTH_REQUIRED},
        {POST_HEAD(""), ORCH_ELENGTH_REQUIRED},
        {POST_HEAD("X-A: b\r\n Transfer-Encoding: chunked\r\nContent-Length: 2\r\n"),
         ORCH_EINVAL}, /* obs-fold */
        {"POST /execute HTTP/1.1\nHost: localhost\nContent-Length: 2\n\n", ORCH_EINVAL},
        {POST_HEAD("X-A: b\rContent-Length: 9\r\nContent-Length: 2\r\n"), ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nContent-Length: 30\r\n\r\n", ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n",
         ORCH_EINVAL},
        {POST_HEAD("Content-Length: 101\r\n"), ORCH_ETOO_LARGE},
        {POST_HEAD("Content-Length: 99999999999999999999\r\n"), ORCH_EINVAL},
        /* the request line */
        {"GET  /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_EINVAL},
        {"GET http://localhost/health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_EINVAL},
        {"GET /health HTTP/2.0\r\nHost: localhost\r\n\r\n", ORCH_EINVAL},
        {"GET /he\x01lth HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_EINVAL},
        {"\r\nGET /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nX: a\x7f\r\n\r\n", ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nno colon\r\n\r\n", ORCH_EINVAL},
        /* browsers */
        {"POST /execute HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
         "Content-Length: 2\r\n\r\n",
         ORCH_EMEDIA_TYPE},
        {"POST /execute HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n",
         ORCH_EMEDIA_TYPE},
        {"POST /execute HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/jsonx\r\n"
         "Content-Length: 2\r\n\r\n",
         ORCH_EMEDIA_TYPE},
        {"POST /execute HTTP/1.1\r\nHost: localhost\r\n"
         "Content-Type: Application/JSON ; charset=utf-8\r\nContent-Length: 2\r\n\r\n",
         ORCH_OK},
        {"POST /execute HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
         "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n",
         ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: rebind.invalid:8080\r\n\r\n", ORCH_EMISDIRECTED},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nHost: rebind.invalid\r\n\r\n", ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\n\r\n", ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: a b\r\n\r\n", ORCH_EINVAL},
        /* X-Deadline twice: which one is meant (a proxy's tighter one must not be lost) */
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Deadline: 9999999999\r\n"
         "x-deadline: 1\r\n\r\n",
         ORCH_EINVAL},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Deadline: 9999999999\r\n\r\n", ORCH_OK},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer a\r\n"
         "Authorization: Bearer b\r\n\r\n",
         ORCH_EINVAL},
        /* methods and Expect (issue 18): what evhttp would answer with an HTML page */
        {"OPTIONS /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_OK},
        {"HEAD /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_OK},
        {"PATCH /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_OK},
        {"FOO /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_ENOT_IMPLEMENTED},
        {"get /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_ENOT_IMPLEMENTED},
        {"GETX /health HTTP/1.1\r\nHost: localhost\r\n\r\n", ORCH_ENOT_IMPLEMENTED},
        {"FOO /health HTTP/1.1\r\nHost: rebind.invalid\r\n\r\n", ORCH_EMISDIRECTED},
        {POST_HEAD("Content-Length: 2\r\nExpect: 100-Continue\r\n"), ORCH_OK},
        {POST_HEAD("Content-Length: 2\r\nExpect: 200-ok\r\n"), ORCH_EEXPECTATION},
        {"GET /health HTTP/1.1\r\nHost: localhost\r\nExpect: x\r\n\r\n", ORCH_EEXPECTATION},
        {POST_HEAD("Content-Length: 2\r\nExpect: 100-continue\r\nExpect: 100-continue\r\n"),
         ORCH_EINVAL},
};

/* Feed @head whole, or byte by byte when @bytewise; the verdict (check after the feed). */
static orch_err
verdict(const char *head, size_t n, bool bytewise, size_t *ret_used, struct params_err *pe)
{
	struct http_head_scan s = {0};
	struct http_head h;
	size_t used = 0, k;
	orch_err rv = ORCH_OK;

	while (rv == ORCH_OK && !s.done && used < n) {
		rv = http_head_feed(&s, &rules, head + used, bytewise ? 1 : n - used, &k, pe);
		used += k;
	}
	if (rv == ORCH_OK)
		rv = s.done ? http_head_check(s.buf, s.n, &rules, &h, pe) : ORCH_EAGAIN;
	http_head_fini(&s);
	*ret_used = used;
	return rv;
}

static void
test_cases(void)
{
	T_OK(http_hosts_init(&hosts, "", "127.0.0.1:8080", NULL));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct params_err pe = {0}, pe1 = {0};
		size_t n = strlen(cases[i].head), used, used1;
		orch_err whole = verdict(cases[i].head, n, false, &used, &pe);
		orch_err bytes = verdict(cases[i].head, n, true, &used1, &pe1);
		if (whole != cases[i].want || bytes != whole || used != used1 ||
		    (whole != ORCH_OK && (pe.code != whole || pe.msg[0] == '\0')))
			T_FAIL_("case %zu: %s / %s, want %s (%s)", i, orch_err_name(whole),
			        orch_err_name(bytes), orch_err_name(cases[i].want), pe.msg);
		struct http_head h;
		if (whole == ORCH_OK &&
		    http_head_check(cases[i].head, n, &rules, &h, &pe) != ORCH_OK)
			T_FAIL_("case %zu: the whole-head check disagrees: %s", i, pe.msg);
	}
}

/* The head's end is found exactly: the body and a pipelined request stay for the caller. */
static void
test_boundary(void)
{
	static const char req[] = POST_HEAD("Content-Length: 2\r\n") "{}GET / HTTP/1.1\r\n";
	size_t head = strlen(POST_HEAD("Content-Length: 2\r\n")), used;
	struct params_err pe = {0};
	struct http_head_scan s = {0};
	struct http_head h;

	T_OK(http_hosts_init(&hosts, "", "127.0.0.1:8080", NULL));
	T_OK(http_head_feed(&s, &rules, req, sizeof(req) - 1, &used, &pe));
	T_TRUE(s.done);
	T_EQ(used, head);
	T_OK(http_head_check(s.buf, s.n, &rules, &h, &pe));
	T_TRUE(h.post);
	T_EQ(h.content_length, 2);
	http_head_reset(&s);
	T_OK(http_head_feed(&s, &rules, "GET / HTTP/1.1\r\nHo", 18, &used, &pe));
	T_TRUE(!s.done);
	T_EQ(s.lines, 1);
	http_head_fini(&s);
	/* a bad line is refused when it completes, not at the head's end */
	static const char bad[] = "GET / HTTP/1.1\r\nTransfer-Encoding : x\r\nHost: localhost\r\n";
	T_ERR(http_head_feed(&s, &rules, bad, sizeof(bad) - 1, &used, &pe), ORCH_EINVAL);
	T_EQ(used, strlen("GET / HTTP/1.1\r\nTransfer-Encoding : x\r\n"));
	http_head_fini(&s);
}

static void
test_limits(void)
{
	char big[2048];
	struct params_err pe = {0};
	size_t used;
	int n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: localhost\r\nX: ");

	memset(big + n, 'a', sizeof(big) - (size_t)n);
	T_ERR(verdict(big, sizeof(big), false, &used, &pe), ORCH_EHEADERS_TOO_LARGE);
	T_EQ(used, 1024);
	T_ERR(verdict(big, sizeof(big), true, &used, &pe), ORCH_EHEADERS_TOO_LARGE);
	struct http_head_rules wide = rules;
	wide.max_header_bytes = 8192;
	char many[8192];
	size_t k = (size_t)snprintf(many, sizeof(many), "GET / HTTP/1.1\r\nHost: localhost\r\n");
	for (int i = 0; i < HTTP_HEAD_MAX_FIELDS; i++)
		k += (size_t)snprintf(many + k, sizeof(many) - k, "X%d: 1\r\n", i);
	k += (size_t)snprintf(many + k, sizeof(many) - k, "\r\n");
	struct http_head_scan s = {0};
	T_ERR(http_head_feed(&s, &wide, many, k, &used, &pe), ORCH_EHEADERS_TOO_LARGE);
	http_head_fini(&s);
	T_OK(http_hosts_init(&hosts, "", "127.0.0.1:8080", NULL));
	struct http_head h;
	T_ERR(http_head_check(many, k, &wide, &h, &pe), ORCH_EHEADERS_TOO_LARGE);
}

/* Every allocation of the reader failing in turn: ORCH_ENOMEM, no leak, then success. */
static void
test_oom(void)
{
	char head[1024];
	struct params_err pe = {0};
	size_t used;
	int n = snprintf(head, sizeof(head),
	                 "GET / HTTP/1.1\r\nHost: localhost\r\nX: %0900d\r\n\r\n", 0);
	orch_err rv = ORCH_ENOMEM;
	struct http_head_rules big = rules;

	big.max_header_bytes = 4096;
	for (long k = 0; rv == ORCH_ENOMEM && k < 10; k++) {
		struct http_head_scan s = {0};
		alloc_fail_after(k, 1);
		rv = http_head_feed(&s, &big, head, (size_t)n, &used, &pe);
		alloc_fail_after(-1, 0);
		T_TRUE(rv == ORCH_OK || rv == ORCH_ENOMEM);
		T_TRUE(rv == ORCH_ENOMEM || s.done);
		http_head_fini(&s);
	}
	T_OK(rv);
}

int
main(void)
{
	T_RUN(test_cases);
	T_RUN(test_boundary);
	T_RUN(test_limits);
	T_RUN(test_oom);
	return t_done();
}
