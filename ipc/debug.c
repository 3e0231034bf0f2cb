/*
 * debug.c - the debug stream: a pub socket for records and a rep socket for
 * state-dump requests on the worker; a sub socket and a req socket on the
 * client.
 */
#include "debug.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>
#include <nng/protocol/pubsub0/sub.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "base/alloc.h"
#include "ipc_nng.h"

#define URL_MAX 256

struct ipc_debug {
	nng_socket pub, rep;
	bool pub_open, rep_open;
	char url[URL_MAX], ctl[URL_MAX];
};

struct ipc_debug_sub {
	nng_socket sock;
	char url[URL_MAX];
};

orch_err
ipc_debug_ctl_url(const char *url, char *buf, size_t n, struct orch_errinfo *reterr)
{
	int rv = -1;

	if (url != NULL && strncmp(url, "ipc://", 6) == 0 && url[6] != '\0') {
		rv = snprintf(buf, n, "%s.ctl", url);
	} else if (url != NULL && strncmp(url, "tcp://", 6) == 0) {
		const char *colon = strrchr(url + 6, ':');
		char *end;
		unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
		if (colon != NULL && colon[1] != '\0' && *end == '\0' && port >= 1 && port < 65535)
			rv = snprintf(buf, n, "%.*s:%lu", (int)(colon - url), url, port + 1);
	} else {
		return orch_errf(reterr, ORCH_EINVAL,
		                 "debug endpoint '%s': want ipc://PATH or tcp://HOST:PORT",
		                 url ? url : "");
	}
	if (rv < 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "debug endpoint '%s': want tcp://HOST:PORT with PORT in 1..65534",
		                 url);
	if ((size_t)rv >= n)
		return orch_errf(reterr, ORCH_EINVAL, "debug endpoint '%s' is too long", url);
	return ORCH_OK;
}

/* ---- the worker side ---- */

orch_err
ipc_debug_open(const char *url, struct ipc_debug **ret, struct orch_errinfo *reterr)
{
	struct ipc_debug *d;
	orch_err e;
	int rv;

	*ret = NULL;
	if ((d = orch_calloc(1, sizeof(*d))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if ((e = ipc_debug_ctl_url(url, d->ctl, sizeof(d->ctl), reterr)) != ORCH_OK) {
		orch_free(d);
		return e;
	}
	snprintf(d->url, sizeof(d->url), "%s", url);
	if ((rv = nng_pub0_open(&d->pub)) != 0) {
		e = ipc_nng_err(rv, "pub socket for", url, reterr);
		goto fail;
	}
	d->pub_open = true;
	if ((rv = nng_listen(d->pub, url, NULL, 0)) != 0) {
		e = ipc_nng_err(rv, "listen", url, reterr);
		goto fail;
	}
	if ((rv = nng_rep0_open(&d->rep)) != 0) {
		e = ipc_nng_err(rv, "rep socket for", d->ctl, reterr);
		goto fail;
	}
	d->rep_open = true;
	nng_socket_set_size(d->rep, NNG_OPT_RECVMAXSZ, IPC_DEBUG_MAX_MSG);
	if ((rv = nng_listen(d->rep, d->ctl, NULL, 0)) != 0) {
		e = ipc_nng_err(rv, "listen", d->ctl, reterr);
		goto fail;
	}
	*ret = d;
	return ORCH_OK;
fail:
	ipc_debug_close(d);
	return e;
}

void
ipc_debug_close(struct ipc_debug *d)
{
	if (d == NULL)
		return;
	if (d->pub_open)
		nng_close(d->pub);
	if (d->rep_open)
		nng_close(d->rep);
	orch_free(d);
}

void
ipc_debug_publish(struct ipc_debug *d, const char *topic, const char *text, size_t n)
{
	size_t tn = strlen(topic);
	nng_msg *m;

	if (tn + 1 + n > IPC_DEBUG_MAX_MSG || nng_msg_alloc(&m, 0) != 0)
		return;
	if (nng_msg_append(m, topic, tn) != 0 || nng_msg_append(m, " ", 1) != 0 ||
	    nng_msg_append(m, text, n) != 0 || nng_sendmsg(d->pub, m, NNG_FLAG_NONBLOCK) != 0)
		nng_msg_free(m); /* on success NNG owns it */
}

void
ipc_debug_publishf(struct ipc_debug *d, const char *topic, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	int rv = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (rv < 0)
		return;
	ipc_debug_publish(d, topic, buf, (size_t)rv < sizeof(buf) ? (size_t)rv : sizeof(buf) - 1);
}

int
ipc_debug_request_fd(struct ipc_debug *d)
{
	int fd;

	return nng_socket_get_int(d->rep, NNG_OPT_RECVFD, &fd) == 0 ? fd : -1;
}

bool
ipc_debug_request(struct ipc_debug *d, char *buf, size_t n)
{
	nng_msg *m;

	if (n == 0 || nng_recvmsg(d->rep, &m, NNG_FLAG_NONBLOCK) != 0)
		return false;
	size_t len = nng_msg_len(m) < n - 1 ? nng_msg_len(m) : n - 1;
	memcpy(buf, nng_msg_body(m), len);
	buf[len] = '\0';
	nng_msg_free(m);
	return true;
}

orch_err
ipc_debug_reply(struct ipc_debug *d, const char *text, size_t n, struct orch_errinfo *reterr)
{
	/* copied: nng_send without NNG_FLAG_ALLOC does not take the buffer */
	int rv = nng_send(d->rep, (void *)(uintptr_t)text, n, NNG_FLAG_NONBLOCK);

	return rv == 0 ? ORCH_OK : ipc_nng_err(rv, "reply on", d->ctl, reterr);
}

/* ---- the client side ---- */

orch_err
ipc_debug_sub_open(const char *url, const char *const *topics, size_t n_topics,
                   struct ipc_debug_sub **ret, struct orch_errinfo *reterr)
{
	struct ipc_debug_sub *s;
	int rv;

	*ret = NULL;
	if (url == NULL || strlen(url) >= URL_MAX)
		return orch_errf(reterr, ORCH_EINVAL, "debug: bad URL");
	if ((s = orch_calloc(1, sizeof(*s))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	snprintf(s->url, sizeof(s->url), "%s", url);
	if ((rv = nng_sub0_open(&s->sock)) != 0) {
		orch_free(s);
		return ipc_nng_err(rv, "sub socket for", url, reterr);
	}
	nng_socket_set_size(s->sock, NNG_OPT_RECVMAXSZ, IPC_DEBUG_MAX_MSG + 64);
	for (size_t i = 0; rv == 0 && i < n_topics; i++) {
		char t[64];
		int k = snprintf(t, sizeof(t), "%s ",
		                 topics[i]); /* the space: "log" is not "logx" */
		if (k < 0 || (size_t)k >= sizeof(t))
			rv = NNG_EINVAL;
		else
			rv = nng_socket_set(s->sock, NNG_OPT_SUB_SUBSCRIBE, t, (size_t)k);
	}
	if (rv == 0 && n_topics == 0)
		rv = nng_socket_set(s->sock, NNG_OPT_SUB_SUBSCRIBE, "", 0);
	if (rv == 0)
		rv = nng_dial(s->sock, url, NULL,
		              NNG_FLAG_NONBLOCK); /* retried until the worker is up */
	if (rv != 0) {
		orch_err e = ipc_nng_err(rv, "subscribe to", url, reterr);
		ipc_debug_sub_close(s);
		return e;
	}
	*ret = s;
	return ORCH_OK;
}

orch_err
ipc_debug_sub_next(struct ipc_debug_sub *s, int timeout_ms, struct sbuf *out,
                   struct orch_errinfo *reterr)
{
	nng_msg *m;
	int rv;

	nng_socket_set_ms(s->sock, NNG_OPT_RECVTIMEO,
	                  timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	if ((rv = nng_recvmsg(s->sock, &m, 0)) != 0)
		return ipc_nng_err(rv, "receive on", s->url, reterr);
	sbuf_clear(out);
	sbuf_put(out, nng_msg_body(m), nng_msg_len(m));
	nng_msg_free(m);
	if (sbuf_err(out) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	return ORCH_OK;
}

void
ipc_debug_sub_close(struct ipc_debug_sub *s)
{
	if (s == NULL)
		return;
	nng_close(s->sock);
	orch_free(s);
}

void
ipc_debug_sub_leave(struct ipc_debug_sub *s)
{
	orch_free(s); /* the socket stays NNG's until the process ends */
}

orch_err
ipc_debug_dump(const char *url, int timeout_ms, struct sbuf *out, struct orch_errinfo *reterr)
{
	char ctl[URL_MAX];
	nng_socket sock;
	nng_msg *m;
	orch_err e;
	int rv;

	if ((e = ipc_debug_ctl_url(url, ctl, sizeof(ctl), reterr)) != ORCH_OK)
		return e;
	if ((rv = nng_req0_open(&sock)) != 0)
		return ipc_nng_err(rv, "req socket for", ctl, reterr);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO,
	                  timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO,
	                  timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	if ((rv = nng_dial(sock, ctl, NULL, NNG_FLAG_NONBLOCK)) != 0 ||
	    (rv = nng_send(sock, (void *)(uintptr_t) "dump", 4, 0)) != 0 ||
	    (rv = nng_recvmsg(sock, &m, 0)) != 0) {
		e = ipc_nng_err(rv, "state dump from", ctl, reterr);
		nng_close(sock);
		return e;
	}
	sbuf_clear(out);
	sbuf_put(out, nng_msg_body(m), nng_msg_len(m));
	nng_msg_free(m);
	nng_close(sock);
	return sbuf_err(out) == ORCH_OK ? ORCH_OK : orch_errf(reterr, ORCH_ENOMEM, "out of memory");
}

#if defined(__SANITIZE_ADDRESS__)
#define ORCH_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORCH_LSAN 1
#endif
#endif
#ifdef ORCH_LSAN
/*
 * NNG 1.5.2 (Debian 12) can lose a message still queued on a pub pipe when
 * the socket closes (fixed upstream in 2023, nanomsg/nng#1643). A message
 * ipc_debug_publish() has handed to nng_sendmsg() is NNG's to free, so the
 * sanitizer builds tell LeakSanitizer to ignore leaks allocated there, and
 * nothing else.
 */
const char *__lsan_default_suppressions(void);

const char *
__lsan_default_suppressions(void)
{
	return "leak:ipc_debug_publish\n";
}
#endif
