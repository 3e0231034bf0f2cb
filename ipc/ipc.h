#pragma once
/*
 * ipc.h - the supervisor <-> worker channel (DESIGN.md §3, docs/protocol.md).
 *
 * One NNG pair1 socket per worker, over ipc:// (or tcp:// for tests and
 * remote debugging). Each NNG message is one serialized orch.Envelope; no
 * other framing. Received messages are decoded and validated (ipc_check)
 * before the caller sees them: a malformed, oversized or invalid message is
 * dropped and reported as ORCH_EPROTO, and the channel stays usable. The
 * library does not log; its caller logs what it drops.
 *
 * Thread: a channel may be used by one sending and one receiving thread at
 * once (NNG sockets are thread-safe); open/close from one thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "proto/orch.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The protocol version sent in Hello; a peer with another one is refused. */
#define IPC_PROTOCOL_VERSION 1u

/* The largest envelope accepted (bytes); larger ones are dropped. */
#define IPC_MAX_MSG (16u << 20)

/* Limits ipc_check enforces on decoded messages (a job's: base/limits.h). */
#define IPC_MAX_BATCH     4096u
#define IPC_MAX_CHANNEL   63u   /* a harmony channel name (bytes) */
#define IPC_MAX_RECIPIENT 127u  /* a harmony recipient (bytes) */
#define IPC_MAX_PIECE     1024u /* a token's bytes in a logprob */

struct ipc_chan;

enum ipc_role {
	IPC_LISTEN, /* bind @url and wait for the peer (the supervisor) */
	IPC_DIAL,   /* connect to @url, retrying in the background (the worker) */
};

/*
 * ipc_open - a pair1 channel on @url ("ipc:///run/orch/worker-1.sock",
 * "tcp://127.0.0.1:5555"). ORCH_EINVAL for a bad URL, ORCH_EIO when the
 * address cannot be bound (message names it), ORCH_ENOMEM.
 */
orch_err ipc_open(const char *url, enum ipc_role role, struct ipc_chan **ret,
                  struct orch_errinfo *reterr);

/* ipc_close - close the socket and free @c (NULL is fine). Pending messages are lost. */
void ipc_close(struct ipc_chan *c);

/*
 * ipc_send - serialize @env and send it, waiting up to @timeout_ms (-1:
 * forever) for the peer to take it. ORCH_EAGAIN on timeout (nothing sent),
 * ORCH_ECLOSED once closed, ORCH_EPROTO for an envelope ipc_check refuses or
 * one over IPC_MAX_MSG, ORCH_ENOMEM.
 */
orch_err ipc_send(struct ipc_chan *c, const Orch__Envelope *env, int timeout_ms,
                  struct orch_errinfo *reterr);

/*
 * ipc_encode - check and serialize @env into a new buffer *@ret_buf of
 * *@ret_n bytes (orch_free it). ORCH_EPROTO for an envelope ipc_check
 * refuses or one over IPC_MAX_MSG, ORCH_ENOMEM.
 */
orch_err ipc_encode(const Orch__Envelope *env, uint8_t **ret_buf, size_t *ret_n,
                    struct orch_errinfo *reterr);

/*
 * ipc_send_nb - send @n bytes from ipc_encode without waiting (the buffer
 * stays the caller's). ORCH_EAGAIN when the peer cannot take it now (poll
 * ipc_send_fd and try again), ORCH_ECLOSED once closed. Never blocks.
 */
orch_err ipc_send_nb(struct ipc_chan *c, const uint8_t *buf, size_t n, struct orch_errinfo *reterr);

/*
 * ipc_send_fd - a file descriptor that polls readable when a send may
 * succeed (NNG_OPT_SENDFD), for an event loop; -1 on failure.
 */
int ipc_send_fd(struct ipc_chan *c);

/*
 * ipc_recv - the next valid envelope in *@ret (free with ipc_envelope_free),
 * waiting up to @timeout_ms (0: do not wait, -1: forever). ORCH_EAGAIN when
 * none arrived in time; ORCH_EPROTO when a message arrived but was malformed
 * or invalid (it is dropped; the message says why; call again for the next);
 * ORCH_ECLOSED once closed.
 */
orch_err ipc_recv(struct ipc_chan *c, int timeout_ms, Orch__Envelope **ret,
                  struct orch_errinfo *reterr);

/*
 * ipc_recv_fd - a file descriptor that polls readable when a message may be
 * waiting (for an event loop); then ipc_recv(c, 0, ...). -1 on failure.
 */
int ipc_recv_fd(struct ipc_chan *c);

/* ipc_decode - decode and validate one serialized envelope of @len bytes (what ipc_recv does). */
orch_err ipc_decode(const void *buf, size_t len, Orch__Envelope **ret, struct orch_errinfo *reterr);

/* ipc_envelope_free - free an envelope from ipc_recv or ipc_decode (NULL is fine). */
void ipc_envelope_free(Orch__Envelope *env);

/*
 * ipc_check - whether @env is a valid message: a body is set and its fields
 * are in range (job ids non-zero, sampling parameters finite and in range,
 * counts and lengths within the IPC_MAX_* limits). ORCH_EPROTO with the reason.
 */
orch_err ipc_check(const Orch__Envelope *env, struct orch_errinfo *reterr);

/*
 * ipc_check_hello - whether a peer's Hello speaks IPC_PROTOCOL_VERSION and,
 * when @build_id is not NULL, comes from that build (orchd passes its own:
 * a worker of another build is refused, docs/protocol.md). ORCH_EPROTO
 * naming both versions or both builds otherwise.
 */
orch_err ipc_check_hello(const Orch__Hello *h, const char *build_id, struct orch_errinfo *reterr);

/* ipc_body_name - "submit", "token_batch", ... for a body case; "none" when unset. */
const char *ipc_body_name(Orch__Envelope__BodyCase body);

#ifdef __cplusplus
}
#endif
