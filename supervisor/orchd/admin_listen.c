/*
 * admin_listen.c - the admin API's listeners (admin_listen.h): HTTP on a unix
 * socket (mode 0660, found by orchctl through base/discover.h), and on TCP
 * with its own bearer token when admin_listen is set. The API itself is
 * api/admin.c's; each request reaches it as a plain api_req (http_exchange.h).
 */
#include "admin_listen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "admin.h"
#include "admin_state.h"
#include "base/alloc.h"
#include "base/discover.h"
#include "base/log.h"
#include "base/readfile.h"
#include "http_exchange.h"
#include "keys.h"
#include "orchd.h"
#include "reply.h"

static void
on_restore(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	admin_state_restore(arg);
}

static void
route(struct evhttp_request *req, void *arg)
{
	struct api_req *r = http_exchange_new(arg, req);

	if (r != NULL)
		admin_route(arg, r);
}

/* The TCP listener: the admin token first (keys.c: any case of "Bearer", constant time). */
static void
route_tcp(struct evhttp_request *req, void *arg)
{
	struct orchd *d = arg;
	struct api_req *r = http_exchange_new(d, req);

	if (r == NULL)
		return;
	if (!keys_token_equal(r->authorization, d->admin_token))
		return reply_error(r, ORCH_EUNAUTHORIZED, NULL, "the admin token is needed");
	admin_route(d, r);
}

/*
 * Remove @path when it is a socket nobody listens on (what a dead orchd left);
 * ORCH_EIO when another process answers there or something else has the name.
 */
static orch_err
admin_stale_remove(const struct sockaddr_un *sa, struct orch_errinfo *reterr)
{
	struct stat st;

	if (lstat(sa->sun_path, &st) != 0)
		return ORCH_OK;
	if (!S_ISSOCK(st.st_mode))
		return orch_errf(reterr, ORCH_EIO, "admin socket %s: the name is taken by a %s",
		                 sa->sun_path, S_ISDIR(st.st_mode) ? "directory" : "file");
	/* non-blocking: a listener with a full backlog answers EAGAIN, and is live; only a
	 * refused connect says nobody listens (EACCES: another user's socket, left alone) */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int err = 0;
	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err != 0 && err != EAGAIN && err != ECONNREFUSED && err != ENOENT)
		return orch_errf(reterr, ORCH_EIO,
		                 "admin socket %s: cannot tell whether another orchd uses it (%s): "
		                 "remove it, or give this orchd another admin_socket",
		                 sa->sun_path, strerror(err));
	bool live = err == 0 || err == EAGAIN;
	if (live)
		return orch_errf(reterr, ORCH_EIO,
		                 "admin socket %s is in use by another orchd: give each orchd its "
		                 "own admin_socket",
		                 sa->sun_path);
	unlink(sa->sun_path);
	return ORCH_OK;
}

orch_err
admin_start(struct orchd *d, struct orch_errinfo *reterr)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(d->cfg.admin_socket) >= sizeof(sa.sun_path))
		return orch_errf(reterr, ORCH_EINVAL, "admin_socket path is too long");
	memcpy(sa.sun_path, d->cfg.admin_socket, strlen(d->cfg.admin_socket) + 1);
	if (admin_stale_remove(&sa, reterr) != ORCH_OK)
		return ORCH_EIO;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return orch_errf(reterr, ORCH_EIO, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = errno;
		close(fd);
		return orch_errf(reterr, ORCH_EIO, "admin socket %s: %s", sa.sun_path,
		                 strerror(err));
	}
	d->admin_bound = true; /* the file is ours now: admin_stop removes it */
	if (chmod(sa.sun_path, 0660) != 0 || listen(fd, 64) != 0) {
		int err = errno;
		close(fd);
		return orch_errf(reterr, ORCH_EIO, "admin socket %s: %s", sa.sun_path,
		                 strerror(err));
	}
	struct orch_errinfo de = {0}; /* orchctl finds it with no setting (base/discover.h) */
	if (orch_discover_add(sa.sun_path, getpid(), &de) != ORCH_OK)
		orch_log(ORCH_LOG_WARNING, "discovery_failed", "msg=\"%s\"", de.msg);
	if ((d->admin_http = evhttp_new(d->base)) == NULL ||
	    evhttp_accept_socket(d->admin_http, fd) != 0) {
		close(fd);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	evhttp_set_allowed_methods(d->admin_http,
	                           EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_max_body_size(d->admin_http, 1u << 20);
	evhttp_set_gencb(d->admin_http, route, d);
	d->on_model_event = admin_model_event;
	/* the state file's models join after the configuration's (main.c adds those next) */
	event_base_once(d->base, -1, EV_TIMEOUT, on_restore, d, &(struct timeval){0, 0});
	orch_log(ORCH_LOG_INFO, "admin_listening", "socket=%s", sa.sun_path);
	if (d->cfg.admin_listen[0]) {
		char *tok = NULL;
		size_t n = 0;
		if (d->cfg.admin_token_file[0] == '\0' ||
		    orch_read_file(d->cfg.admin_token_file, 4096, &tok, &n, reterr) != ORCH_OK)
			return d->cfg.admin_token_file[0]
			               ? ORCH_EIO
			               : orch_errf(reterr, ORCH_EINVAL,
			                           "admin_listen needs admin_token_file");
		tok[strcspn(tok, "\r\n")] = '\0';
		snprintf(d->admin_token, sizeof(d->admin_token), "%s", tok);
		orch_free(tok);
		if (d->admin_token[0] == '\0')
			return orch_errf(reterr, ORCH_EINVAL, "admin_token_file is empty");
		char host[128];
		const char *colon = strrchr(d->cfg.admin_listen, ':');
		snprintf(host, sizeof(host), "%.*s", (int)(colon - d->cfg.admin_listen),
		         d->cfg.admin_listen);
		if ((d->admin_tcp = evhttp_new(d->base)) == NULL ||
		    evhttp_bind_socket(d->admin_tcp, host, (ev_uint16_t)atoi(colon + 1)) != 0)
			return orch_errf(reterr, ORCH_EIO, "cannot listen on %s",
			                 d->cfg.admin_listen);
		evhttp_set_allowed_methods(d->admin_tcp,
		                           EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
		evhttp_set_gencb(d->admin_tcp, route_tcp, d);
	}
	return ORCH_OK;
}

void
admin_stop(struct orchd *d)
{
	if (d->admin_http)
		evhttp_free(d->admin_http);
	if (d->admin_tcp)
		evhttp_free(d->admin_tcp);
	d->admin_http = d->admin_tcp = NULL;
	if (d->admin_bound) { /* a start refused before binding leaves another orchd's file */
		unlink(d->cfg.admin_socket);
		orch_discover_remove(getpid());
	}
	d->admin_bound = false;
}
