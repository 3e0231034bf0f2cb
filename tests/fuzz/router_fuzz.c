/*
 * router_fuzz.c - libFuzzer target for orchd's public listener as a client
 * meets it: each input is the raw bytes of one TCP connection, written to
 * a real socket on 127.0.0.1 and read by the real stack (http_conn.c's head
 * reader and limits, evhttp's parser, the key check, the route tables, the
 * native and OpenAI handlers, job creation and failure, the JSON and SSE
 * answers). The client half-closes after its bytes and reads until orchd
 * closes; then every connection orchd had must be gone. (evhttp closes a
 * connection at the client's EOF, so of pipelined requests only those
 * answered before the half-close arrives are reached; http_fuzz.c feeds
 * pipelined heads to the head reader.) One model, "m", is
 * configured and failed (no worker is ever started); one API key,
 * "Bearer fuzz-key-0123456789", is in force. Any bytes give answers and a
 * closed connection, never a crash, a leak, a hang or an out-of-bounds read.
 * ROUTER_FUZZ_ECHO=1 writes orchd's answers to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "config.h"
#include "core.h"
#include "http_listen.h"
#include "inspect.h"
#include "jobs.h"
#include "keys.h"
#include "models.h"
#include "offload.h"
#include "orchd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY       "fuzz-key-0123456789"
#define WAIT_SECS 8 /* no input may keep a connection longer (the deadlines are 1 s) */

static struct orchd D;
static struct sockaddr_in addr;
static bool echo; /* ROUTER_FUZZ_ECHO=1: orchd's answers to stderr */

/* One connection's client side. */
struct client {
	int fd;
	const uint8_t *p;
	size_t n, sent;
	bool shut, closed;
	struct event *ev;
};

/* A free port on 127.0.0.1 (bound, read, closed). */
static int
free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &n) != 0)
		abort();
	close(fd);
	return ntohs(a.sin_port);
}

static void
setup(void)
{
	static const char *const server[][2] = {
	        {"header_timeout_s", "1"},      {"body_timeout_s", "1"},
	        {"keepalive_timeout_s", "1"},   {"request_timeout_s", "2"},
	        {"max_body_bytes", "65536"},    {"max_prompt_chars", "4096"},
	        {"allowed_hosts", "localhost"},
	};
	struct orch_errinfo e = {0};
	struct cfg_model *cm;
	struct model_entry *m;
	char listen[64];
	int port = free_port();

	echo = getenv("ROUTER_FUZZ_ECHO") != NULL;
	orch_log_set_level(ORCH_LOG_ERR);
	D.started_ms = orch_mono_ms();
	D.started_unix = orch_unix_ms();
	cfg_defaults(&D.cfg);
	core_init(&D);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	if (cfg_set(&D.cfg, "server", "listen", listen, &e) != ORCH_OK)
		abort();
	for (size_t i = 0; i < sizeof(server) / sizeof(server[0]); i++)
		if (cfg_set(&D.cfg, "server", server[i][0], server[i][1], &e) != ORCH_OK) {
			fprintf(stderr, "router_fuzz: %s: %s\n", server[i][0], e.msg);
			abort();
		}
	if (cfg_model_add(&D.cfg, "m", &cm, &e) != ORCH_OK ||
	    keys_parse("keys", KEY "\n", sizeof(KEY), &D.keys, &e) != ORCH_OK ||
	    (D.base = event_base_new()) == NULL || http_start(&D, &e) != ORCH_OK ||
	    models_add(&D, cm, &m, &e) != ORCH_OK) {
		fprintf(stderr, "router_fuzz: %s\n", e.msg);
		abort();
	}
	while (inspect_pending(&D) > 0) /* its file's read (inspect.h), so nothing is in flight */
		event_base_loop(D.base, EVLOOP_ONCE);
	m->state = MODEL_FAILED; /* answers without a worker */
	snprintf(m->error, sizeof(m->error), "no worker in the fuzzer");
	addr = (struct sockaddr_in){.sin_family = AF_INET,
	                            .sin_port = htons((uint16_t)port),
	                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

static void
on_late(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	fprintf(stderr, "router_fuzz: orchd kept a connection past %d s\n", WAIT_SECS);
	abort();
}

/* The client's socket: write what is left, half-close, read to the end. */
static void
on_client(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	char buf[16384];
	ssize_t k = 0;

	(void)what;
	while (!c->shut && c->sent < c->n) {
		k = send(fd, c->p + c->sent, c->n - c->sent, MSG_NOSIGNAL);
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (k < 0) /* refused early: orchd closed, the rest is moot */
			break;
		c->sent += (size_t)k;
	}
	if (!c->shut && (c->sent == c->n || k < 0)) {
		shutdown(fd, SHUT_WR);
		c->shut = true;
		event_del(c->ev); /* nothing left to write: read only */
		event_assign(c->ev, D.base, fd, EV_READ | EV_PERSIST, on_client, c);
		event_add(c->ev, NULL);
	}
	while ((k = recv(fd, buf, sizeof(buf), 0)) > 0)
		if (echo)
			fwrite(buf, 1, (size_t)k, stderr);
	if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
		c->closed = true;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct client c = {.p = data, .n = size};

	if (!ready) {
		setup();
		ready = true;
	}
	/* closed with a reset, which also ends orchd's side's TIME_WAIT: ten
	 * thousand connections a second would use up the ephemeral ports */
	struct linger reset = {.l_onoff = 1, .l_linger = 0};
	sigset_t all, old; /* libFuzzer's timeout alarm would interrupt connect() */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if ((c.fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) != 0 ||
	    connect(c.fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    fcntl(c.fd, F_SETFL, O_NONBLOCK) != 0) {
		fprintf(stderr, "router_fuzz: connect: %s\n", strerror(errno));
		abort();
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	struct timeval wait = {WAIT_SECS, 0};
	struct event *late = evtimer_new(D.base, on_late, NULL);

	evtimer_add(late, &wait);
	c.ev = event_new(D.base, c.fd, EV_READ | EV_WRITE | EV_PERSIST, on_client, &c);
	event_add(c.ev, NULL);
	while (!c.closed)
		event_base_loop(D.base, EVLOOP_ONCE);
	event_free(c.ev);
	close(c.fd);
	/* orchd's side goes too, on the same loop, and a body parsed off the loop comes back
	 * (api_parse.c: it holds its request until then) */
	while (D.metrics.http_connections > 0 || offload_pending(&D) > 0)
		event_base_loop(D.base, EVLOOP_ONCE);
	event_free(late);
	/* what finished jobs leave (kept for resuming) is bounded, and freed here */
	while (D.jobs)
		jobs_free(&D, D.jobs);
	return 0;
}
