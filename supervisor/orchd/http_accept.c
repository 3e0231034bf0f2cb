/*
 * http_accept.c - accept() failures on the public listener (http_conn.h):
 * out of descriptors, the listener pauses for PAUSE_MS, the connections
 * waiting in the backlog are taken with a reserve descriptor and refused
 * with a 503, and one log line tells of the episode (at most one every
 * LOG_EVERY_MS). libevent calls on_accept_error with evhttp's pointer, not
 * ours: the layer is found through its resume timer, the one event in the
 * base with on_resume as its callback, kept pending for that
 * (event_base_foreach_event; no global).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "base/clock.h"
#include "base/log.h"
#include "http_conn_int.h"
#include "orchd.h"

#define REFUSE_BATCH  64    /* connections refused with the reserve descriptor per failure */
#define PAUSE_MS      100   /* the listener's pause after an accept() failure */
#define LOG_EVERY_MS  10000 /* at most one accept_paused line this often */
#define IDLE_RESUME_S 3600  /* the resume timer's period when nothing is paused */

void
http_accept_episode_end(struct http_edge *e)
{
	if (e->logged)
		orch_log(ORCH_LOG_INFO, "accept_resumed", "refused=%llu paused_ms=%llu",
		         (unsigned long long)e->episode_refused,
		         (unsigned long long)(orch_mono_ms() - e->episode_ms));
	e->episode = e->logged = false;
	e->episode_refused = 0;
}

static void
resume_in(struct http_edge *e, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};

	event_add(e->ev_resume, &tv);
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct http_edge *e = arg;

	(void)fd;
	(void)what;
	if (!e->paused)
		return;
	e->paused = false;
	evconnlistener_enable(e->listener);
	resume_in(e, IDLE_RESUME_S * 1000ull);
}

/* Take the connections waiting in the backlog with the reserve descriptor, and refuse them. */
static uint32_t
refuse_waiting(struct http_edge *e)
{
	int lfd = evconnlistener_get_fd(e->listener);
	uint32_t n = 0;

	while (n < REFUSE_BATCH && e->reserve_fd >= 0) {
		close(e->reserve_fd);
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			http_conn_send_answer(fd, e->busy, e->busy_n);
			close(fd);
			n++;
		}
		e->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
	}
	return n;
}

static void
accept_failed(struct http_edge *e, int err)
{
	uint64_t now = orch_mono_ms();
	uint32_t refused = 0;

	if (e->reserve_fd < 0)
		e->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (err == EMFILE || err == ENFILE)
		refused = refuse_waiting(e);
	e->d->metrics.http_refused[MET_REFUSED_FDS] += refused;
	e->paused = true;
	resume_in(e, PAUSE_MS);
	if (!e->episode) {
		e->episode = true;
		e->episode_ms = now;
		if (e->last_log_ms == 0 || now - e->last_log_ms >= LOG_EVERY_MS) {
			e->logged = true;
			e->last_log_ms = now;
			orch_log(
			        ORCH_LOG_WARNING, "accept_paused",
			        "err=\"%s\" connections=%u refused=%u pause_ms=%d "
			        "note=\"open connections go on; new ones get 503 until descriptors free up\"",
			        strerror(err), e->n_conns, refused, PAUSE_MS);
		}
	}
	e->episode_refused += refused;
}

static int
find_edge(const struct event_base *base, const struct event *ev, void *arg)
{
	(void)base;
	if (event_get_callback(ev) != on_resume)
		return 0;
	*(struct http_edge **)arg = event_get_callback_arg(ev);
	return 1;
}

/* The listener's error callback; @http is evhttp's (see the design notes). */
static void
on_accept_error(struct evconnlistener *lev, void *http)
{
	int err = EVUTIL_SOCKET_ERROR();
	struct http_edge *e = NULL;

	(void)http;
	evconnlistener_disable(lev); /* first: no retrying at once, forever */
	event_base_foreach_event(evconnlistener_get_base(lev), find_edge, &e);
	if (e != NULL && e->listener == lev)
		accept_failed(e, err);
}

orch_err
http_conn_listen(struct orchd *d, struct evhttp_bound_socket *bound, struct orch_errinfo *reterr)
{
	struct http_edge *e = d->edge;
	struct params_err pe = {0};

	params_fail(&pe, ORCH_EOVERLOADED, NULL,
	            "no descriptor left to take the connection; try again shortly");
	e->busy_n = http_conn_format_answer(&pe, e->busy, sizeof(e->busy));
	e->listener = evhttp_bound_socket_get_listener(bound);
	e->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (e->busy_n == 0 || e->listener == NULL || e->reserve_fd < 0 ||
	    (e->ev_resume = event_new(d->base, -1, EV_PERSIST, on_resume, e)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "cannot set up the listener's limits");
	evconnlistener_set_error_cb(e->listener, on_accept_error);
	resume_in(e, IDLE_RESUME_S * 1000ull); /* always pending: find_edge looks for it */
	return ORCH_OK;
}
