/*
 * http_access_test.c - the access log's line: method and path from a head
 * (the query never), what the route notes, the end reasons, one line per
 * request and none for a closed one.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "http_access.h"
#include "t.h"

static char last[2048];
static int lines;

static void
sink(void *ctx, enum orch_log_level level, const char *line, size_t n)
{
	(void)ctx;
	(void)level;
	snprintf(last, sizeof(last), "%.*s", (int)n, line);
	lines++;
}

/* The line of a request whose head is @head, ended with @status and @end. */
static const char *
line_of(const char *head, int status, const char *end)
{
	struct http_access a;

	http_access_begin(&a, 1000000);
	http_access_head(&a, head, strlen(head));
	http_access_sent(&a, 42);
	http_access_end(&a, status, end, 3500000);
	return last;
}

static void
test_heads(void)
{
	T_STREQ(line_of("GET /v1/models?key=secret HTTP/1.1\r\nHost: x\r\n\r\n", 200, NULL),
	        "event=http_access method=GET path=/v1/models status=200 bytes=42 ms=2.5 job=-");
	T_STREQ(line_of("GET /a#frag HTTP/1.1\r\n", 404, NULL),
	        "event=http_access method=GET path=/a status=404 bytes=42 ms=2.5 job=-");
	T_STREQ(line_of("GET /health HTTP/1.1\r\nHost: x\r\n", 0, "deadline"),
	        "event=http_access method=GET path=/health status=0 bytes=42 ms=2.5 job=- "
	        "end=deadline");
	/* a head cut anywhere, or not a request line: what it has */
	T_STREQ(line_of("GET /he", 0, "closed"),
	        "event=http_access method=GET path=/he status=0 bytes=42 ms=2.5 job=- end=closed");
	T_STREQ(line_of("GET", 400, NULL),
	        "event=http_access method=- path=- status=400 bytes=42 ms=2.5 job=-");
	T_STREQ(line_of("\r\nGET / HTTP/1.1", 400, NULL),
	        "event=http_access method=- path=- status=400 bytes=42 ms=2.5 job=-");
	T_STREQ(line_of("GET  /x HTTP/1.1", 400, NULL),
	        "event=http_access method=GET path=- status=400 bytes=42 ms=2.5 job=-");
	T_STREQ(line_of("AVERYLONGMETHODNAME /x HTTP/1.1", 501, NULL),
	        "event=http_access method=- path=- status=501 bytes=42 ms=2.5 job=-");
	/* a quote in a path is escaped by the log, a control byte ends it */
	T_STREQ(line_of("GET /a\"b HTTP/1.1", 404, NULL),
	        "event=http_access method=GET path=\"/a\\\"b\" status=404 bytes=42 ms=2.5 job=-");
	/* a job's id is a capability: a hash of it, wherever the request ends */
	const char *l = line_of("OPTIONS /jobs/0123456789abcdef0123456789abcdef/events HTTP/1.1",
	                        401, NULL);
	T_TRUE(strstr(l, "0123456789abcdef") == NULL);
	T_TRUE(strstr(l, "path=\"/jobs/{id:") != NULL || strstr(l, "path=/jobs/{id:") != NULL);
	T_TRUE(strstr(l, "}/events ") != NULL);
	char h1[64], h2[64];
	snprintf(h1, sizeof(h1), "%s",
	         strstr(line_of("GET /jobs/abc/events HTTP/1.1", 405, NULL), "path="));
	snprintf(h2, sizeof(h2), "%s",
	         strstr(line_of("GET /jobs/abd HTTP/1.1", 405, NULL), "path="));
	T_TRUE(strncmp(h1, h2, 23) != 0); /* another id, another hash ("path=/jobs/{id:" + 8) */
	/* the same id, the same hash */
	T_TRUE(strncmp(strstr(line_of("GET /jobs/abc HTTP/1.1", 405, NULL), "path="), h1, 23) == 0);
	T_TRUE(strstr(line_of("GET /jobs/ HTTP/1.1", 404, NULL), "path=/jobs/ ") != NULL);
	/* however the path is written (issue 52 A6, the attack run): no route takes these,
	 * and the id is hidden all the same */
	static const char *const forms[] = {
	        "GET //jobs/0123456789abcdef0123456789abcdef/events HTTP/1.1",
	        "GET /./jobs/0123456789abcdef0123456789abcdef/events HTTP/1.1",
	        "GET /x/../jobs/0123456789abcdef0123456789abcdef/events HTTP/1.1",
	        "GET /JOBS/0123456789abcdef0123456789abcdef/events HTTP/1.1",
	        "GET /jobs%2F0123456789abcdef0123456789abcdef/events HTTP/1.1",
	        "GET /cancel/0123456789abcdef0123456789abcdef HTTP/1.1",
	        "GET http://127.0.0.1:8080/jobs/0123456789abcdef0123456789abcdef/events HTTP/1.1",
	        "GET /Jobs/my-secret-id/events HTTP/1.1",
	};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		l = line_of(forms[i], 404, NULL);
		T_TRUE(strstr(l, "0123456789abcdef") == NULL && strstr(l, "my-secret-id") == NULL);
		T_TRUE(strstr(l, "{id:") != NULL);
	}
	T_STREQ(line_of("GET /a\x01"
	                "b HTTP/1.1",
	                400, NULL),
	        "event=http_access method=GET path=/a status=400 bytes=42 ms=2.5 job=-");
}

static void
test_long_path(void)
{
	char head[600];
	struct http_access a;

	memset(head, 0, sizeof(head));
	memcpy(head, "GET /", 5);
	memset(head + 5, 'p', 500); /* no hex digits: not taken for an id */
	memcpy(head + 505, " HTTP/1.1\r\n", 11);
	http_access_begin(&a, 0);
	http_access_head(&a, head, strlen(head));
	T_EQ(strlen(a.path), HTTP_ACCESS_PATH_MAX);
}

static void
test_note_and_once(void)
{
	struct http_access a;
	int before = lines;

	http_access_begin(&a, 0);
	http_access_head(&a, "GET /jobs/0123abcd/events HTTP/1.1\r\n", 36);
	http_access_note(&a, "/jobs/{id}/events", NULL);
	http_access_note(&a, NULL, "89ca2a5f848c05d6");
	http_access_end(&a, 200, NULL, 2000000);
	T_STREQ(last, "event=http_access method=GET path=/jobs/{id}/events status=200 bytes=0 "
	              "ms=2.0 job=89ca2a5f848c05d6");
	http_access_end(&a, 200, "closed", 3000000); /* closed: no second line */
	http_access_sent(&a, 10);                    /* nor bytes for it */
	T_EQ(lines, before + 1);
	T_EQ(a.bytes, 0);
}

int
main(void)
{
	orch_log_set_sink(sink, NULL);
	T_RUN(test_heads);
	T_RUN(test_long_path);
	T_RUN(test_note_and_once);
	orch_log_set_sink(NULL, NULL);
	return t_done();
}
