/*
 * ipc_bench - the supervisor <-> worker hop (issue 5).
 *
 *   ipc_bench raw [N]            a child process sends TokenBatch
 *                                envelopes (1 and 64 entries): 5,000 at
 *                                5,000/s for the hop latency (send →
 *                                decoded here), then N as fast as the
 *                                channel takes them for messages/s and MB/s
 *   ipc_bench worker BIN MODEL   a real `orch-worker serve` (64 slots) runs
 *                                1 and 64 concurrent jobs of 128 tokens,
 *                                8 rounds each;
 *                                TokenBatch messages/s and the latency from
 *                                a token being sampled in the worker to its
 *                                envelope being decoded here
 *
 * Both processes run on this machine, so CLOCK_MONOTONIC is one clock. The
 * child of "raw" is forked before NNG starts (NNG is not fork-safe).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "ipc/ipc.h"

#define MAX_SAMPLES (1u << 21)
#define ROUNDS      8 /* of the worker runs */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
report(const char *what, uint64_t *lat, size_t n, uint64_t msgs, uint64_t bytes, uint64_t tokens,
       double secs)
{
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("%-28s msgs/s %9.0f  tokens/s %9.0f  MB/s %7.1f  hop p50 %6.1f us  p99 %7.1f us  "
	       "max %8.1f us  (%llu msgs)\n",
	       what, (double)msgs / secs, (double)tokens / secs, (double)bytes / secs / 1e6,
	       n ? (double)lat[n / 2] / 1e3 : 0.0, n ? (double)lat[n * 99 / 100] / 1e3 : 0.0,
	       n ? (double)lat[n - 1] / 1e3 : 0.0, (unsigned long long)msgs);
}

/* ---- raw: the channel alone ---- */

#define PACED      5000u        /* messages one every PACE_NS: the hop's latency */
#define PACE_NS    200000u      /* 5,000 messages/s, far below what the channel takes */
#define WARMUP     100u         /* paced messages left out (connection set-up) */
#define FLOOD_FLAG (1ull << 63) /* in TokenBatch.step: a flood message */

static void
raw_sender(const char *url, int go_fd, uint32_t n_flood, uint32_t entries)
{
	struct ipc_chan *c;
	Orch__TokenEntry e[64], *ep[64];
	char text[] = " word", go;

	if (read(go_fd, &go, 1) != 1 || ipc_open(url, IPC_DIAL, &c, NULL) != ORCH_OK)
		_exit(1);
	for (uint32_t i = 0; i < entries; i++) {
		orch__token_entry__init(&e[i]);
		e[i].job_id = i + 1;
		e[i].token_id = 1234;
		e[i].text = text;
		ep[i] = &e[i];
	}
	uint64_t next = orch_mono_ns();
	for (uint32_t m = 0; m < PACED + n_flood; m++) {
		Orch__Envelope env = ORCH__ENVELOPE__INIT;
		Orch__TokenBatch tb = ORCH__TOKEN_BATCH__INIT;
		if (m < PACED) {
			while (orch_mono_ns() < next)
				;
			next += PACE_NS;
		}
		for (uint32_t i = 0; i < entries; i++)
			e[i].index = m;
		tb.step = m < PACED ? m : FLOOD_FLAG | m;
		tb.n_tokens = entries;
		tb.tokens = ep;
		tb.sampled_ns = orch_mono_ns();
		env.body_case = ORCH__ENVELOPE__BODY_TOKEN_BATCH;
		env.token_batch = &tb;
		if (ipc_send(c, &env, 10000, NULL) != ORCH_OK)
			_exit(1);
	}
	sleep(1); /* let the last ones leave before the socket closes */
	ipc_close(c);
	_exit(0);
}

static int
bench_raw(uint32_t n_flood)
{
	static const uint32_t widths[] = {1, 64};
	char url[128];
	pid_t kids[2];
	int go[2][2];
	uint64_t *lat = malloc(PACED * sizeof(*lat));

	if (lat == NULL)
		return 1;
	snprintf(url, sizeof(url), "ipc:///tmp/orch-ipc-bench-%d.sock", (int)getpid());
	for (int w = 0; w < 2; w++) { /* fork both senders before NNG starts */
		if (pipe(go[w]) != 0)
			return 1;
		if ((kids[w] = fork()) == 0) {
			char u[140];
			snprintf(u, sizeof(u), "%s.%d", url, w);
			raw_sender(u, go[w][0], n_flood, widths[w]);
		}
	}
	for (int w = 0; w < 2; w++) {
		struct ipc_chan *c;
		char u[140], what[64];
		uint64_t bytes = 0, t0 = 0, t1 = 0, flood = 0;
		size_t n = 0;
		snprintf(u, sizeof(u), "%s.%d", url, w);
		if (ipc_open(u, IPC_LISTEN, &c, NULL) != ORCH_OK || write(go[w][1], "g", 1) != 1)
			return 1;
		while (flood < n_flood) {
			Orch__Envelope *env;
			if (ipc_recv(c, 10000, &env, NULL) != ORCH_OK)
				break;
			uint64_t now = orch_mono_ns();
			const Orch__TokenBatch *tb = env->token_batch;
			if (tb->step & FLOOD_FLAG) {
				if (flood++ == 0)
					t0 = now;
				t1 = now;
				bytes += orch__envelope__get_packed_size(env);
			} else if (tb->step >= WARMUP) {
				lat[n++] = now - tb->sampled_ns;
			}
			ipc_envelope_free(env);
		}
		double secs = (double)(t1 - t0) / 1e9;
		snprintf(what, sizeof(what), "raw, %u entries/msg", widths[w]);
		report(what, lat, n, flood, bytes, flood * widths[w], secs);
		ipc_close(c);
		unlink(u + strlen("ipc://"));
		waitpid(kids[w], NULL, 0);
	}
	free(lat);
	return 0;
}

/* ---- worker: the real thing ---- */

static int
bench_worker(const char *bin, const char *model)
{
	static const uint32_t concurrency[] = {1, 64};
	char url[128];
	struct ipc_chan *c;
	Orch__Envelope *env;
	uint64_t *lat = malloc(MAX_SAMPLES * sizeof(*lat));

	snprintf(url, sizeof(url), "ipc:///tmp/orch-ipc-bench-w%d.sock", (int)getpid());
	if (lat == NULL || ipc_open(url, IPC_LISTEN, &c, NULL) != ORCH_OK)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		execl(bin, bin, "serve", "--endpoint", url, "--model", model, "--device", "cpu",
		      "--worker-id", "bench", "--slots", "64", "--context", "256", "--threads", "1",
		      "--no-hash-beside", (char *)NULL);
		_exit(127);
	}
	for (;;) { /* Hello, LoadProgress..., Ready */
		if (ipc_recv(c, 30000, &env, NULL) != ORCH_OK)
			return 1;
		bool ready = env->body_case == ORCH__ENVELOPE__BODY_READY;
		ipc_envelope_free(env);
		if (ready)
			break;
	}
	for (int r = 0; r < 2; r++) {
		uint32_t jobs = concurrency[r];
		uint64_t msgs = 0, tokens = 0, bytes = 0, t0 = orch_mono_ns();
		size_t n = 0;
		char prompt[] = "Once upon a time";
		for (uint32_t round = 0; round < ROUNDS; round++) {
			uint32_t ended = 0;
			for (uint32_t k = 0; k < jobs; k++) {
				Orch__Envelope e = ORCH__ENVELOPE__INIT;
				Orch__Submit s = ORCH__SUBMIT__INIT;
				Orch__SamplingParams sp = ORCH__SAMPLING_PARAMS__INIT;
				sp.temperature = 0.8f;
				sp.top_p = 1.0f;
				sp.repeat_penalty = 1.0f;
				sp.has_seed = true;
				sp.seed = k + 1;
				s.job_id = 100000u * (uint64_t)(r + 1) + 1000u * round + k;
				s.prompt = prompt;
				s.sampling = &sp;
				s.max_tokens = 128;
				e.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
				e.submit = &s;
				if (ipc_send(c, &e, 5000, NULL) != ORCH_OK)
					return 1;
			}
			while (ended < jobs) {
				if (ipc_recv(c, 30000, &env, NULL) != ORCH_OK)
					return 1;
				uint64_t now = orch_mono_ns();
				if (env->body_case == ORCH__ENVELOPE__BODY_TOKEN_BATCH) {
					if (n < MAX_SAMPLES)
						lat[n++] = now - env->token_batch->sampled_ns;
					msgs++;
					tokens += env->token_batch->n_tokens;
					bytes += orch__envelope__get_packed_size(env);
				}
				ended += env->body_case == ORCH__ENVELOPE__BODY_END ||
				         env->body_case == ORCH__ENVELOPE__BODY_ERROR;
				ipc_envelope_free(env);
			}
		}
		char what[64];
		snprintf(what, sizeof(what), "worker, %u concurrent jobs", jobs);
		report(what, lat, n, msgs, bytes, tokens, (double)(orch_mono_ns() - t0) / 1e9);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	ipc_close(c);
	unlink(url + strlen("ipc://"));
	free(lat);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "raw") == 0)
		return bench_raw(argc >= 3 ? (uint32_t)strtoul(argv[2], NULL, 10) : 200000);
	if (argc == 4 && strcmp(argv[1], "worker") == 0)
		return bench_worker(argv[2], argv[3]);
	fprintf(stderr, "usage: ipc_bench raw [N] | ipc_bench worker ORCH_WORKER MODEL\n");
	return 2;
}
