/*
 * workers_test - orchd's sends to a worker never block the loop
 * (supervisor/orchd/core/workers_io.c): against a real NNG peer that stops
 * reading, sends queue up to WORKER_SENDQ and then answer QUEUE_FULL at
 * once; when the peer reads again, the loop's send-fd event drains the
 * queue in order.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "core.h"
#include "ipc/ipc.h"
#include "loop.h"
#include "models.h"
#include "offload.h"
#include "orchd.h"
#include "t.h"
#include "workers.h"

#define MSG_BYTES (64u << 10)

static struct orchd d;

static struct model_entry *
model(const char *name)
{
	struct cfg_model c = {0};
	struct model_entry *m = NULL;

	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(c.path, sizeof(c.path), "/nonexistent.gguf");
	snprintf(c.devices[0], sizeof(c.devices[0]), "cpu");
	c.n_devices = 1;
	c.replicas = 1;
	c.slots = 1;
	return models_add(&d, &c, &m, NULL) == ORCH_OK ? m : NULL;
}

/* Messages @peer can take now, read and dropped (they are not envelopes: EPROTO). */
static uint32_t
peer_read(struct ipc_chan *peer)
{
	uint32_t n = 0;
	Orch__Envelope *env = NULL;
	orch_err rv;

	while ((rv = ipc_recv(peer, 0, &env, NULL)) != ORCH_EAGAIN) {
		if (rv == ORCH_OK)
			ipc_envelope_free(env);
		else if (rv != ORCH_EPROTO)
			break;
		n++;
	}
	return n;
}

static void
test_send_never_blocks(void)
{
	char url[128];
	struct model_entry *m = model("w");
	struct ipc_chan *peer = NULL;
	uint32_t ok = 0, full = 0, got = 0;

	T_TRUE(m != NULL);
	struct worker *w = m->workers[0];
	snprintf(url, sizeof(url), "ipc:///tmp/orch-workers-test-%d.sock", (int)getpid());
	T_OK(ipc_open(url, IPC_LISTEN, &w->ch, NULL));
	T_OK(ipc_open(url, IPC_DIAL, &peer, NULL));
	/* the peer reads nothing: the socket fills, then the queue, then QUEUE_FULL */
	for (int i = 0; i < 4 * WORKER_SENDQ && full < 8; i++) {
		uint8_t *buf = orch_calloc(1, MSG_BYTES);
		T_TRUE(buf != NULL);
		orch_err rv = workers_send(w, buf, MSG_BYTES, 0);
		if (rv == ORCH_OK)
			ok++;
		else if (rv == ORCH_EQUEUE_FULL)
			full++;
		else
			T_FAIL_("workers_send: %s", orch_err_name(rv));
	}
	printf("%u sends taken (%u waiting in the queue), then %u refused with QUEUE_FULL\n", ok,
	       w->sendq_n, full);
	T_EQ(full, 8);
	T_EQ(w->sendq_n, WORKER_SENDQ);
	T_TRUE(ok >= WORKER_SENDQ);
	/* the peer reads again: the loop flushes the queue as the socket frees */
	uint64_t end = orch_mono_ms() + 20000;
	while ((w->sendq_n > 0 || got < ok) && orch_mono_ms() < end) {
		got += peer_read(peer);
		loop_turn(d.base, false);
		usleep(1000);
	}
	T_EQ(w->sendq_n, 0);
	T_EQ(got, ok);
	workers_sendq_clear(w);
	ipc_close(peer);
	ipc_close(w->ch);
	w->ch = NULL;
	unlink(url + strlen("ipc://"));
}

int
main(void)
{
	cfg_defaults(&d.cfg);
	core_init(&d);
	snprintf(d.cfg.runtime_dir, sizeof(d.cfg.runtime_dir), "/tmp");
	d.base = loop_base_new();
	T_RUN(test_send_never_blocks);
	while (d.models) {
		struct model_entry *m = d.models;
		d.models = m->next;
		models_free(&d, m);
	}
	offload_stop(&d); /* the model file's read (inspect.h) models_add started */
	loop_base_free(d.base);
	return t_done();
}
