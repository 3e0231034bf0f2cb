/*
 * sse_test - the SSE writer (supervisor/orchd/sse.c) behind a real evhttp
 * listener on loopback and a raw client socket: a stream's events and its
 * end arrive in order; a writer that gets more than SSE_MAX_PENDING_BYTES
 * ahead of the chunk in flight (a client that does not keep up) is cut
 * with an OVERLOADED error event, its owner is told "slow" once, the
 * metric counts it, and orchd holds no more than the cap for it; with
 * sse_set_cut, the cut is the text the stream's API ends with (OpenAI's
 * error chunk and [DONE]) instead of the native event.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "orchd.h"
#include "sse.h"
#include "t.h"

#define BLOCK 4096

struct ctx {
	struct orchd *d;
	const char *gone_why;
	int gone_calls;
	size_t wrote;    /* bytes given to sse_write */
	size_t total;    /* bytes the handler means to write */
	const char *cut; /* sse_set_cut's text; NULL: the native event */
};

static void
on_gone(struct sse_stream *s, void *arg, const char *why)
{
	struct ctx *c = arg;

	(void)s;
	c->gone_why = why;
	c->gone_calls++;
}

static void
handler(struct evhttp_request *req, void *arg)
{
	struct ctx *c = arg;
	struct sse_stream *s = NULL;
	char block[BLOCK];

	memset(block, 'x', sizeof(block));
	memcpy(block, "data: ", 6);
	memcpy(block + BLOCK - 2, "\n\n", 2);
	T_OK(sse_start(c->d, req, on_gone, c, &s));
	if (c->cut != NULL)
		sse_set_cut(s, c->cut);
	/* all in one go: nothing drains while the handler runs, so everything past the
	 * first chunk waits behind it */
	while (c->wrote < c->total && c->gone_calls == 0) {
		sse_write(s, block, sizeof(block));
		c->wrote += sizeof(block);
	}
	if (c->gone_calls == 0)
		sse_end(s); /* a cut stream is already freed */
}

/* Run the loop and read the client socket until @want is seen (or 10 s pass). */
static size_t
pump(struct event_base *base, int fd, const char *want, char **ret_buf)
{
	size_t n = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	uint64_t end = orch_mono_ms() + 10000;

	if (buf == NULL)
		abort();
	buf[0] = '\0';
	while (orch_mono_ms() < end) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 5) <= 0)
			continue;
		if (n + BLOCK + 1 > cap) {
			cap *= 2;
			if ((buf = realloc(buf, cap)) == NULL)
				abort();
		}
		ssize_t k = read(fd, buf + n, BLOCK);
		if (k <= 0)
			break;
		n += (size_t)k;
		buf[n] = '\0';
		if (strstr(buf + (n > 2 * BLOCK ? n - 2 * BLOCK : 0), want) != NULL)
			break;
	}
	*ret_buf = buf;
	return n;
}

/* A client connected to @port that has sent its GET. */
static int
client(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	static const char get[] = "GET /events HTTP/1.1\r\nHost: t\r\n\r\n";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    write(fd, get, sizeof(get) - 1) != (ssize_t)(sizeof(get) - 1)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void
run(size_t total, const char *cut, const char *want, struct ctx *c, char **ret_buf, size_t *ret_n)
{
	struct event_base *base = event_base_new();
	struct evhttp *http = evhttp_new(base);
	struct orchd *d = calloc(1, sizeof(*d));
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	T_TRUE(base && http && d);
	d->base = base;
	d->cfg.sse_keepalive_s = 15;
	*c = (struct ctx){.d = d, .total = total, .cut = cut};
	struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	T_TRUE(bs != NULL);
	T_TRUE(getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&a, &alen) == 0);
	evhttp_set_gencb(http, handler, c);
	int fd = client(ntohs(a.sin_port));
	T_TRUE(fd >= 0);
	*ret_n = pump(base, fd, want, ret_buf);
	T_EQ(d->metrics.sse_slow_clients, c->gone_calls && strcmp(c->gone_why, "slow") == 0);
	close(fd);
	for (int i = 0; i < 20; i++) /* the server sees the close */
		event_base_loop(base, EVLOOP_NONBLOCK);
	evhttp_free(http);
	event_base_free(base);
	free(d);
}

/* A stream within the cap: every event, then the chunked terminator; nobody is cut. */
static void
test_whole_stream(void)
{
	struct ctx c;
	char *buf = NULL;
	size_t n = 0;

	run(64 * BLOCK, NULL, "\r\n0\r\n\r\n", &c, &buf, &n);
	T_TRUE(strstr(buf, "HTTP/1.1 200") == buf);
	T_TRUE(strstr(buf, "Content-Type: text/event-stream") != NULL);
	T_TRUE(strstr(buf, "Cache-Control: no-cache") != NULL);
	T_TRUE(strstr(buf, "\r\n0\r\n\r\n") != NULL);
	T_EQ(c.gone_calls, 0);
	T_TRUE(n > c.wrote); /* every byte, plus headers and chunk sizes */
	free(buf);
}

/* Far more than the cap at once: cut with an error event, told once, counted, bounded. */
static void
test_slow_client_cut(void)
{
	struct ctx c;
	char *buf = NULL;
	size_t n = 0;

	run(64u << 20, NULL, "\"code\":\"OVERLOADED\"", &c, &buf, &n);
	printf("wrote %zu bytes; the client got %zu before the cut\n", c.wrote, n);
	T_EQ(c.gone_calls, 1);
	T_STREQ(c.gone_why, "slow");
	T_TRUE(strstr(buf, "event: error\ndata: {\"code\":\"OVERLOADED\"") != NULL);
	/* what orchd held: one chunk in flight and at most the cap behind it */
	T_TRUE(c.wrote <= 2 * (size_t)SSE_MAX_PENDING_BYTES + BLOCK);
	T_TRUE(n < c.wrote + BLOCK);
	free(buf);
}

/* An OpenAI stream is cut in its own form: an error chunk, then [DONE], no native event. */
static void
test_slow_client_cut_text(void)
{
	static const char text[] =
	        "data: {\"error\":{\"code\":\"OVERLOADED\"}}\n\ndata: [DONE]\n\n";
	struct ctx c;
	char *buf = NULL;
	size_t n = 0;

	run(64u << 20, text, "[DONE]\n\n", &c, &buf, &n);
	T_EQ(c.gone_calls, 1);
	T_TRUE(strstr(buf, text) != NULL);
	T_TRUE(strstr(buf, "event: error") == NULL);
	free(buf);
}

int
main(void)
{
	T_RUN(test_whole_stream);
	T_RUN(test_slow_client_cut);
	T_RUN(test_slow_client_cut_text);
	return t_done();
}
