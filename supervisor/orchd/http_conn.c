/*
 * http_conn.c - the public listener's connections (http_conn.h).
 *
 * Design notes. evhttp owns each connection (struct evhttp_connection) and
 * its bufferevent; a struct conn lives beside it, found by the evhttp
 * connection in a hash.
 *   - evhttp asks for each new connection's bufferevent (evhttp_set_bevcb)
 *     before it has set the descriptor. We make it, watch its input buffer
 *     (evbuffer_add_cb: our callback runs when bytes arrive, before evhttp's
 *     read callback parses them) and make the timer active, so the
 *     admission runs on this loop turn, once evhttp has set the descriptor
 *     and its callbacks (bufferevent_getcb gives its connection) and before
 *     anything is read.
 *   - Admission: the limits; evhttp's close callback becomes ours (others
 *     set theirs through http_conn_set_closecb, and ours calls it first).
 *   - Phases: IDLE (between requests) -> HEAD (a head's bytes) -> BODY
 *     (Content-Length bytes) -> BUSY (evhttp has the request, a handler
 *     answers it) -> IDLE when the response is out (http_conn_done, from
 *     the request's completion callback), where bytes a client sent ahead
 *     are read as the next head. One timer per connection holds the
 *     phase's deadline.
 *   - A refused head, or a connection over a limit, is DOOMED: its bytes
 *     are drained from the input buffer inside our callback, so evhttp
 *     never parses them; on the next loop turn the answer is written to the
 *     socket (in HEAD no response is in progress) and the connection is
 *     failed through its bufferevent, as if the client had closed it, which
 *     makes evhttp free it (and call our close callback).
 *   - accept() failures: http_accept.c.
 */
#include "http_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "http_access.h"
#include "http_conn_int.h"
#include "http_head.h"
#include "http_host.h"
#include "orchd.h"
#include "params.h"

/* ---- answers written to the socket ---- */

static const char *
reason(int status)
{
	static const struct {
		int status;
		const char *text;
	} t[] = {{400, "Bad Request"},
	         {411, "Length Required"},
	         {413, "Content Too Large"},
	         {415, "Unsupported Media Type"},
	         {417, "Expectation Failed"},
	         {421, "Misdirected Request"},
	         {431, "Request Header Fields Too Large"},
	         {501, "Not Implemented"},
	         {503, "Service Unavailable"}};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].status == status)
			return t[i].text;
	return status < 500 ? "Client Error" : "Server Error";
}

size_t
http_conn_format_answer(const struct params_err *pe, char *out, size_t cap)
{
	cJSON *body = params_err_json(pe->code, pe->param[0] ? pe->param : NULL, pe->msg);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	int status = orch_err_http(pe->code), n = -1;

	if (text)
		n = snprintf(out, cap,
		             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
		             "Content-Length: %zu\r\nConnection: close\r\n%s\r\n%s\n",
		             status, reason(status), strlen(text) + 1,
		             orch_err_retriable(pe->code) ? "Retry-After: 1\r\n" : "", text);
	cJSON_free(text);
	cJSON_Delete(body);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

size_t
http_conn_send_answer(int fd, const char *p, size_t n)
{
	ssize_t k = n ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
	char sink[4096];

	/* read what the client sent on, so the close is a FIN after the answer, not a reset
	 * that can discard it */
	for (int i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	return k > 0 ? (size_t)k : 0;
}

/* ---- the tables ---- */

static size_t
conn_slot(const struct evhttp_connection *evcon)
{
	return ((uintptr_t)evcon >> 4) & (CONN_BUCKETS - 1);
}

static struct conn *
find(struct http_edge *e, const struct evhttp_connection *evcon)
{
	if (e == NULL || evcon == NULL)
		return NULL;
	for (struct conn *c = e->bucket[conn_slot(evcon)]; c; c = c->hnext)
		if (c->evcon == evcon)
			return c;
	return NULL;
}

static size_t
client_slot(const uint8_t *a)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ a[i]) * 16777619u;
	return h & (CLIENT_BUCKETS - 1);
}

/* The client at @a, made with no connections when new; NULL when out of memory. */
static struct client *
client_get(struct http_edge *e, const uint8_t *a)
{
	struct client **head = &e->clients[client_slot(a)], *cl;

	for (cl = *head; cl; cl = cl->next)
		if (memcmp(cl->addr, a, 16) == 0)
			return cl;
	if ((cl = orch_calloc(1, sizeof(*cl))) == NULL)
		return NULL;
	memcpy(cl->addr, a, 16);
	cl->next = *head;
	*head = cl;
	return cl;
}

static void
client_put(struct http_edge *e, struct client *cl)
{
	if (cl == NULL || --cl->n > 0)
		return;
	for (struct client **p = &e->clients[client_slot(cl->addr)]; *p; p = &(*p)->next)
		if (*p == cl) {
			*p = cl->next;
			break;
		}
	orch_free(cl);
}

/* The peer of socket @fd as 16 bytes (IPv4 mapped into IPv6; zeros when unknown). */
static void
peer_key(int fd, uint8_t *out)
{
	struct sockaddr_storage ss;
	socklen_t n = sizeof(ss);

	memset(out, 0, 16);
	if (getpeername(fd, (struct sockaddr *)&ss, &n) != 0)
		return;
	if (ss.ss_family == AF_INET6) {
		memcpy(out, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	} else if (ss.ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	}
}

/* ---- one connection ---- */

static void
set_gauge(struct http_edge *e)
{
	e->d->metrics.http_connections = e->n_conns;
}

/* Free @c; its bufferevent stays evhttp's. */
static void
conn_free(struct conn *c)
{
	struct http_edge *e = c->e;

	if (c->watch)
		evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->watch);
	if (c->out_watch)
		evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_watch);
	if (c->timer)
		event_free(c->timer);
	if (c->evcon)
		for (struct conn **p = &e->bucket[conn_slot(c->evcon)]; *p; p = &(*p)->hnext)
			if (*p == c) {
				*p = c->hnext;
				break;
			}
	if (c->prev)
		c->prev->next = c->next;
	else
		e->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	client_put(e, c->client);
	e->n_conns--;
	set_gauge(e);
	http_head_fini(&c->scan);
	orch_free(c);
}

static void
arm(struct conn *c, uint32_t seconds, int which)
{
	struct timeval tv = {(time_t)seconds, 0};

	c->deadline = which;
	event_add(c->timer, &tv);
}

/* Fail the connection as if the client had closed it: evhttp frees it, and @c. */
static void
end_conn(struct conn *c)
{
	bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF, 0);
}

/* Answer @c's verdict (none for ORCH_OK) on the socket and close it. */
static void
answer_and_end(struct conn *c)
{
	char buf[ANSWER_MAX];
	int status = orch_err_http(c->verdict.code);
	size_t n = c->verdict.code != ORCH_OK
	                   ? http_conn_format_answer(&c->verdict, buf, sizeof(buf))
	                   : 0;
	size_t sent = http_conn_send_answer(bufferevent_getfd(c->bev), buf, n);

	if (n > 0) {
		c->e->d->metrics.http_responses[status / 100]++;
		orch_log(ORCH_LOG_DEBUG, "http_refused", "err=%s requests=%u msg=\"%s\"",
		         orch_err_wire(c->verdict.code), c->requests, c->verdict.msg);
		http_access_sent(&c->access, sent);
		http_access_end(&c->access, status, NULL, orch_mono_ns());
	}
	end_conn(c);
}

/*
 * Refuse what @c sent: nothing more of it reaches evhttp; answered with @pe
 * (NULL: closed without an answer) on the next loop turn.
 */
static void
doom(struct conn *c, const struct params_err *pe)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);

	c->verdict = pe ? *pe : (struct params_err){0};
	c->phase = P_DOOMED;
	evbuffer_drain(in, evbuffer_get_length(in));
	event_del(c->timer);
	event_active(c->timer, EV_TIMEOUT, 1);
}

static void
busy(struct conn *c)
{
	c->phase = P_BUSY;
	event_del(c->timer);
}

/* Bytes of a head: how many were the head's. */
static size_t
head_bytes(struct conn *c, const char *p, size_t n)
{
	struct params_err pe = {0};
	struct http_head h;
	size_t used = 0;
	orch_err rv;

	if (http_head_feed(&c->scan, &c->e->rules, p, n, &used, &pe) != ORCH_OK) {
		http_access_head(&c->access, c->scan.buf, c->scan.n);
		doom(c, &pe);
		return n;
	}
	if (!c->scan.done)
		return used;
	rv = http_head_check(c->scan.buf, c->scan.n, &c->e->rules, &h, &pe);
	http_access_head(&c->access, c->scan.buf, c->scan.n);
	http_head_fini(&c->scan);
	if (rv != ORCH_OK) {
		doom(c, &pe);
		return n;
	}
	c->requests++;
	c->body_left = h.content_length;
	if (c->body_left == 0) {
		busy(c);
	} else {
		c->phase = P_BODY;
		arm(c, c->e->d->cfg.body_timeout_s, MET_DEADLINE_BODY);
	}
	return used;
}

/* @n bytes at @p in @c's phase: how many it took (0: the phase changed, go on). */
static size_t
consume(struct conn *c, const char *p, size_t n)
{
	size_t k;

	switch (c->phase) {
	case P_IDLE:
		c->phase = P_HEAD; /* the first head's deadline runs from the accept */
		c->req = NULL;
		c->status = 0;
		if (c->e->d->cfg.access_log)
			http_access_begin(&c->access, orch_mono_ns());
		if (c->requests > 0)
			arm(c, c->e->d->cfg.header_timeout_s, MET_DEADLINE_HEAD);
		return 0;
	case P_HEAD:
		return head_bytes(c, p, n);
	case P_BODY:
		k = n < c->body_left ? n : (size_t)c->body_left;
		c->body_left -= k;
		if (c->body_left == 0)
			busy(c);
		return k;
	case P_NEW:
	case P_BUSY:
	case P_DOOMED:
		return n; /* read later (BUSY: the next request, at http_conn_done) or never */
	}
	return n;
}

static bool
reading(const struct conn *c)
{
	return c->phase == P_IDLE || c->phase == P_HEAD || c->phase == P_BODY;
}

/* The @n bytes from offset @off of @in, through the phases, until one stops reading. */
static void
take(struct conn *c, struct evbuffer *in, size_t off, size_t n)
{
	struct evbuffer_ptr pos;
	struct evbuffer_iovec v[8];

	if (evbuffer_ptr_set(in, &pos, off, EVBUFFER_PTR_SET) != 0)
		return;
	while (n > 0 && reading(c)) {
		int k = evbuffer_peek(in, (ev_ssize_t)n, &pos, v, 8);
		size_t done = 0;
		for (int i = 0; i < k && i < 8 && reading(c); i++) {
			const char *p = v[i].iov_base;
			size_t len = v[i].iov_len < n - done ? v[i].iov_len : n - done;
			for (size_t used = 0; used < len && reading(c);) {
				size_t u = consume(c, p + used, len - used);
				used += u;
				done += u;
			}
		}
		if (!reading(c) || k <= 0 || done == 0)
			return; /* DOOMED drained @in: v[] points nowhere now */
		n -= done;
		evbuffer_ptr_set(in, &pos, done, EVBUFFER_PTR_ADD);
	}
}

/* evbuffer callback: bytes arrived in @c's input, before evhttp's read callback sees them. */
static void
on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;
	size_t len = evbuffer_get_length(in);

	if (info->n_added == 0 || c->phase == P_NEW || info->n_added > len)
		return;
	if (c->phase == P_DOOMED) {
		evbuffer_drain(in, len);
		return;
	}
	/* while a handler answers, evhttp reads on (to see a close) into this buffer: what a
	 * client sends ahead may fill it up to one more request, no further */
	if (c->phase == P_BUSY && len > c->e->rules.max_header_bytes + c->e->rules.max_body_bytes) {
		doom(c, NULL);
		return;
	}
	take(c, in, len - info->n_added, info->n_added);
}

/* The request in progress ends without its answer (@why); a head cut short says what it has. */
static void
cut_short(struct conn *c, const char *why)
{
	if (c->phase == P_HEAD && c->scan.n > 0)
		http_access_head(&c->access, c->scan.buf, c->scan.n);
	http_access_end(&c->access, c->status, why, orch_mono_ns());
}

static void
on_close(struct evhttp_connection *evcon, void *arg)
{
	struct conn *c = arg;

	/* the status that went out: evhttp has set the request's to 400 by now */
	cut_short(c, "closed");
	if (c->user_close)
		c->user_close(evcon, c->user_arg);
	conn_free(c);
}

/* Refuse @c now: over a limit. */
static void
refuse(struct conn *c, int why, const char *msg)
{
	c->e->d->metrics.http_refused[why]++;
	params_fail(&c->verdict, ORCH_EOVERLOADED, NULL, "%s", msg);
	c->phase = P_DOOMED;
	answer_and_end(c);
}

/* Next loop turn after the accept: evhttp has set up the connection. */
static void
admit(struct conn *c)
{
	struct http_edge *e = c->e;
	const struct orchd_config *cfg = &e->d->cfg;
	void *evcon = NULL;
	uint8_t addr[16];

	bufferevent_getcb(c->bev, NULL, NULL, NULL, &evcon);
	if (evcon == NULL || evhttp_connection_get_bufferevent(evcon) != c->bev) {
		conn_free(c); /* not evhttp's connection (not expected): leave it alone */
		return;
	}
	c->evcon = evcon;
	c->hnext = e->bucket[conn_slot(evcon)];
	e->bucket[conn_slot(evcon)] = c;
	evhttp_connection_set_closecb(evcon, on_close, c);
	peer_key(bufferevent_getfd(c->bev), addr);
	if ((c->client = client_get(e, addr)) != NULL)
		c->client->n++;
	if (e->episode)
		http_accept_episode_end(e);
	if (e->n_conns > cfg->max_connections || c->client == NULL)
		return refuse(c, MET_REFUSED_MAX, "too many connections (max_connections)");
	if (c->client->n > cfg->max_connections_per_client)
		return refuse(
		        c, MET_REFUSED_CLIENT,
		        "too many connections from this address (max_connections_per_client)");
	c->phase = P_IDLE;
	arm(c, cfg->header_timeout_s, MET_DEADLINE_HEAD);
	struct evbuffer *in = bufferevent_get_input(c->bev);
	if (evbuffer_get_length(in) > 0)
		take(c, in, 0, evbuffer_get_length(in));
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	static const char *const names[MET_DEADLINE_COUNT] = {"head", "body", "idle"};

	(void)fd;
	(void)what;
	switch (c->phase) {
	case P_NEW:
		admit(c);
		return;
	case P_DOOMED:
		answer_and_end(c);
		return;
	case P_IDLE:
	case P_HEAD:
	case P_BODY:
		c->e->d->metrics.http_deadlines[c->deadline]++;
		orch_log(ORCH_LOG_DEBUG, "http_deadline", "phase=%s requests=%u",
		         names[c->deadline], c->requests);
		cut_short(c, "deadline");
		end_conn(c);
		return;
	case P_BUSY:
		return;
	}
}

/* evbuffer callback: bytes left @c's output for the socket (the answer's, for the access log). */
static void
on_output(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
	struct conn *c = arg;

	(void)out;
	if (info->n_added > 0 && c->req != NULL && c->status == 0) /* the answer's head */
		c->status = evhttp_request_get_response_code(c->req);
	http_access_sent(&c->access, info->n_deleted);
}

/* evhttp_set_bevcb: a new connection's bufferevent, its descriptor not set yet. */
static struct bufferevent *
on_new_connection(struct event_base *base, void *arg)
{
	struct http_edge *e = arg;
	struct conn *c = orch_calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL; /* evhttp makes its own: that connection goes untracked */
	c->e = e;
	if ((c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)) == NULL ||
	    (c->timer = evtimer_new(base, on_timer, c)) == NULL ||
	    (c->watch = evbuffer_add_cb(bufferevent_get_input(c->bev), on_input, c)) == NULL ||
	    (c->out_watch = evbuffer_add_cb(bufferevent_get_output(c->bev), on_output, c)) ==
	            NULL) {
		if (c->timer)
			event_free(c->timer);
		if (c->bev)
			bufferevent_free(c->bev);
		orch_free(c);
		return NULL;
	}
	c->next = e->conns;
	if (e->conns)
		e->conns->prev = c;
	e->conns = c;
	e->n_conns++;
	set_gauge(e);
	event_active(c->timer, EV_TIMEOUT, 1);
	return c->bev;
}

/* ---- the request's side ---- */

bool
http_conn_checked(struct orchd *d, struct evhttp_request *req)
{
	struct conn *c = find(d->edge, evhttp_request_get_connection(req));

	if (c != NULL && c->phase == P_BUSY)
		c->req = req;
	return c == NULL || c->phase == P_BUSY;
}

void
http_conn_note(struct orchd *d, struct evhttp_request *req, const char *path, const char *job)
{
	struct conn *c = find(d->edge, evhttp_request_get_connection(req));

	if (c != NULL && c->req == req)
		http_access_note(&c->access, path, job);
}

void
http_conn_done(struct orchd *d, struct evhttp_request *req)
{
	struct conn *c = find(d->edge, evhttp_request_get_connection(req));
	struct evbuffer *in;

	if (c == NULL || c->phase != P_BUSY)
		return;
	http_access_end(&c->access, evhttp_request_get_response_code(req), NULL, orch_mono_ns());
	c->req = NULL;
	c->phase = P_IDLE;
	arm(c, d->cfg.keepalive_timeout_s, MET_DEADLINE_IDLE);
	in = bufferevent_get_input(c->bev);
	if (evbuffer_get_length(in) > 0)
		take(c, in, 0, evbuffer_get_length(in));
}

void
http_conn_watch_close(struct evhttp_connection *evcon, uint32_t write_timeout_s)
{
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	bufferevent_data_cb writecb = NULL;
	bufferevent_event_cb eventcb = NULL;
	void *arg = NULL;
	struct timeval w = {.tv_sec = (time_t)write_timeout_s};

	if (bev == NULL)
		return;
	/* evhttp's read timeout (request_timeout_s) would fire on a client that only waits,
	 * dropping it before the job's own deadline answers INFERENCE_TIMEOUT: reading has
	 * no timeout here (this layer's own deadlines cover a connection's reads) */
	bufferevent_set_timeouts(bev, NULL, &w);
	/* as evhttp_write_buffer does: evhttp's read callback would abort on bytes in this state */
	bufferevent_getcb(bev, NULL, &writecb, &eventcb, &arg);
	bufferevent_setcb(bev, NULL, writecb, eventcb, arg);
	bufferevent_enable(bev, EV_READ);
}

void
http_conn_set_closecb(struct orchd *d, struct evhttp_connection *evcon, http_close_fn fn, void *arg)
{
	struct conn *c = find(d->edge, evcon);

	if (c == NULL) {
		evhttp_connection_set_closecb(evcon, fn, arg);
		return;
	}
	c->user_close = fn;
	c->user_arg = arg;
}

void
http_conn_release(struct evhttp_request *req)
{
	if (evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req);
}

/* ---- the layer ---- */

orch_err
http_conn_start(struct orchd *d, struct orch_errinfo *reterr)
{
	struct http_edge *e = orch_calloc(1, sizeof(*e));

	if (e == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	e->d = d;
	e->reserve_fd = -1;
	if (http_hosts_init(&e->hosts, d->cfg.allowed_hosts, d->cfg.listen, reterr) != ORCH_OK) {
		orch_free(e);
		return ORCH_EINVAL;
	}
	e->rules = (struct http_head_rules){.max_header_bytes = d->cfg.max_header_bytes,
	                                    .max_body_bytes = d->cfg.max_body_bytes,
	                                    .hosts = &e->hosts};
	d->edge = e;
	evhttp_set_bevcb(d->http, on_new_connection, e);
	orch_log(ORCH_LOG_INFO, "http_limits",
	         "max_connections=%u per_client=%u header_timeout_s=%u body_timeout_s=%u "
	         "keepalive_timeout_s=%u hosts=%s",
	         d->cfg.max_connections, d->cfg.max_connections_per_client, d->cfg.header_timeout_s,
	         d->cfg.body_timeout_s, d->cfg.keepalive_timeout_s,
	         e->hosts.any           ? "any"
	         : e->hosts.ip_literals ? "listed+ip_literals"
	                                : "listed");
	return ORCH_OK;
}

void
http_conn_drop(struct orchd *d)
{
	struct http_edge *e = d->edge;

	for (struct conn *c = e ? e->conns : NULL, *next; c; c = next) {
		next = c->next;
		if (c->evcon == NULL)
			conn_free(c);
	}
}

void
http_conn_stop(struct orchd *d)
{
	struct http_edge *e = d->edge;

	if (e == NULL)
		return;
	while (e->conns) { /* left by evhttp_free() without a close callback: their
		              bufferevents are gone */
		e->conns->watch = e->conns->out_watch = NULL;
		conn_free(e->conns);
	}
	for (int i = 0; i < CLIENT_BUCKETS; i++)
		while (e->clients[i]) {
			struct client *cl = e->clients[i];
			e->clients[i] = cl->next;
			orch_free(cl);
		}
	if (e->ev_resume)
		event_free(e->ev_resume);
	if (e->reserve_fd >= 0)
		close(e->reserve_fd);
	orch_free(e);
	d->edge = NULL;
}
