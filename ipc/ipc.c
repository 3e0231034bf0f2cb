/*
 * ipc.c - the pair1 channel: open, send, receive with a timeout or through
 * the socket's pollable fd, decode. Validation is in ipc_check.c.
 */
#include "ipc.h"

#include <stdio.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "base/alloc.h"
#include "ipc_nng.h"

struct ipc_chan {
	nng_socket sock;
	char url[256];
};

orch_err
ipc_nng_err(int rv, const char *what, const char *url, struct orch_errinfo *reterr)
{
	orch_err code = ORCH_EIO;

	switch (rv) {
	case NNG_ETIMEDOUT:
	case NNG_EAGAIN:
	case NNG_EADDRINUSE: /* another process holds it: it may let go (a retry may work) */
		code = ORCH_EAGAIN;
		break;
	case NNG_ECLOSED:
		code = ORCH_ECLOSED;
		break;
	case NNG_ENOMEM:
		code = ORCH_ENOMEM;
		break;
	case NNG_EADDRINVAL:
	case NNG_EINVAL:
	case NNG_ENOTSUP:
		code = ORCH_EINVAL;
		break;
	default:
		break;
	}
	return orch_errf(reterr, code, "%s %s: %s", what, url ? url : "", nng_strerror(rv));
}

static orch_err
nng_fail(int rv, const char *what, const struct ipc_chan *c, struct orch_errinfo *reterr)
{
	return ipc_nng_err(rv, what, c ? c->url : NULL, reterr);
}

orch_err
ipc_open(const char *url, enum ipc_role role, struct ipc_chan **ret, struct orch_errinfo *reterr)
{
	struct ipc_chan *c;
	int rv;

	*ret = NULL;
	if (url == NULL || strlen(url) >= sizeof(c->url))
		return orch_errf(reterr, ORCH_EINVAL, "ipc: bad URL");
	if ((c = orch_calloc(1, sizeof(*c))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	snprintf(c->url, sizeof(c->url), "%s", url);
	if ((rv = nng_pair1_open(&c->sock)) != 0) {
		orch_free(c);
		return nng_fail(rv, "pair1 socket for", NULL, reterr);
	}
	/* Up to twice the limit is received and refused by ipc_decode with a
	 * reason; beyond that NNG drops the message (and a stream connection). */
	nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ, 2 * (size_t)IPC_MAX_MSG);
	if (role == IPC_LISTEN)
		rv = nng_listen(c->sock, url, NULL, 0);
	else
		rv = nng_dial(c->sock, url, NULL, NNG_FLAG_NONBLOCK);
	if (rv != 0) {
		orch_err e = nng_fail(rv, role == IPC_LISTEN ? "listen" : "dial", c, reterr);
		ipc_close(c);
		return e;
	}
	*ret = c;
	return ORCH_OK;
}

void
ipc_close(struct ipc_chan *c)
{
	if (c == NULL)
		return;
	nng_close(c->sock);
	orch_free(c);
}

orch_err
ipc_encode(const Orch__Envelope *env, uint8_t **ret_buf, size_t *ret_n, struct orch_errinfo *reterr)
{
	orch_err e;

	if ((e = ipc_check(env, reterr)) != ORCH_OK)
		return e;
	size_t n = orch__envelope__get_packed_size(env);
	if (n > IPC_MAX_MSG)
		return orch_errf(reterr, ORCH_EPROTO, "ipc: %s message of %zu bytes is over %u",
		                 ipc_body_name(env->body_case), n, IPC_MAX_MSG);
	uint8_t *buf = orch_malloc(n ? n : 1);
	if (buf == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	orch__envelope__pack(env, buf);
	*ret_buf = buf;
	*ret_n = n;
	return ORCH_OK;
}

orch_err
ipc_send(struct ipc_chan *c, const Orch__Envelope *env, int timeout_ms, struct orch_errinfo *reterr)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	orch_err e;
	int rv;

	if ((e = ipc_encode(env, &buf, &n, reterr)) != ORCH_OK)
		return e;
	if (timeout_ms != 0)
		nng_socket_set_ms(c->sock, NNG_OPT_SENDTIMEO,
		                  timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	rv = nng_send(c->sock, buf, n, timeout_ms == 0 ? NNG_FLAG_NONBLOCK : 0);
	orch_free(buf);
	return rv == 0 ? ORCH_OK : nng_fail(rv, "send on", c, reterr);
}

orch_err
ipc_send_nb(struct ipc_chan *c, const uint8_t *buf, size_t n, struct orch_errinfo *reterr)
{
	int rv = nng_send(c->sock, (void *)(uintptr_t)buf, n, NNG_FLAG_NONBLOCK);

	return rv == 0 ? ORCH_OK : nng_fail(rv, "send on", c, reterr);
}

int
ipc_send_fd(struct ipc_chan *c)
{
	int fd = -1;

	return nng_socket_get_int(c->sock, NNG_OPT_SENDFD, &fd) == 0 ? fd : -1;
}

orch_err
ipc_recv(struct ipc_chan *c, int timeout_ms, Orch__Envelope **ret, struct orch_errinfo *reterr)
{
	nng_msg *m;
	int rv;

	*ret = NULL;
	if (timeout_ms != 0)
		nng_socket_set_ms(c->sock, NNG_OPT_RECVTIMEO,
		                  timeout_ms < 0 ? NNG_DURATION_INFINITE : timeout_ms);
	rv = nng_recvmsg(c->sock, &m, timeout_ms == 0 ? NNG_FLAG_NONBLOCK : 0);
	if (rv != 0)
		return nng_fail(rv, "receive on", c, reterr);
	orch_err e = ipc_decode(nng_msg_body(m), nng_msg_len(m), ret, reterr);
	nng_msg_free(m);
	return e;
}

int
ipc_recv_fd(struct ipc_chan *c)
{
	int fd;

	return nng_socket_get_int(c->sock, NNG_OPT_RECVFD, &fd) == 0 ? fd : -1;
}

orch_err
ipc_decode(const void *buf, size_t len, Orch__Envelope **ret, struct orch_errinfo *reterr)
{
	Orch__Envelope *env;
	orch_err e;

	*ret = NULL;
	if (len > IPC_MAX_MSG)
		return orch_errf(reterr, ORCH_EPROTO, "ipc: message of %zu bytes is over %u", len,
		                 IPC_MAX_MSG);
	if ((env = orch__envelope__unpack(NULL, len, buf)) == NULL)
		return orch_errf(reterr, ORCH_EPROTO,
		                 "ipc: message of %zu bytes is not an envelope", len);
	if ((e = ipc_check(env, reterr)) != ORCH_OK) {
		orch__envelope__free_unpacked(env, NULL);
		return e;
	}
	*ret = env;
	return ORCH_OK;
}

void
ipc_envelope_free(Orch__Envelope *env)
{
	if (env != NULL)
		orch__envelope__free_unpacked(env, NULL);
}
