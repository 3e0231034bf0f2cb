/*
 * serve_test - a real `orch-worker serve` on the cpu device with
 * stories260K, driven over NNG as the supervisor would: handshake and load
 * progress, one job equal to llama.cpp's golden tokens (which `run` also
 * gives), concurrent jobs equal to their solo runs, cancel, duplicate ids,
 * malformed envelopes, heartbeats, drain, shutdown, SIGTERM, a failed load,
 * and the worker's exit when its parent is killed (the debug stream:
 * serve_debug_test.c; the harness: serve_harness.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/protocol/reqrep0/req.h>

#include "ipc/debug.h"
#include "ipc/ipc.h"
#include "serve_harness.h"
#include "t.h"

/*
 * A duplicate job id is refused; the original job is unaffected. The first
 * job is long (200 greedy tokens, ~50 ms at full speed and no end token
 * before) so that it is still live when the second Submit arrives, even on a
 * loaded machine: a 16-token one could end first, and its id be free again.
 */
static void
check_duplicate_id(struct ipc_chan *c, int *heartbeats)
{
	struct job_out dup[2] = {{.id = 400}, {.id = 400}};
	Orch__Envelope *env = NULL;
	int refused = 0;

	time_t end = time(NULL) + 30; /* heartbeats keep arriving: a bound, not a receive timeout */

	submit(c, 400, p_once, 0.0f, 1, 200);
	submit(c, 400, p_once, 0.0f, 1, 16);
	while ((!dup[0].ended || refused == 0) && time(NULL) < end) {
		if (ipc_recv(c, 5000, &env, NULL) != ORCH_OK)
			break;
		if (env->body_case == ORCH__ENVELOPE__BODY_ERROR && env->error->job_id == 400 &&
		    env->error->code == ORCH__ERROR_CODE__INVALID_REQUEST)
			refused++;
		else
			absorb(env, dup, 1, heartbeats);
		ipc_envelope_free(env);
	}
	T_EQ(refused, 1);
	T_EQ(dup[0].n, 200);
}

static void
test_jobs(void)
{
	struct ipc_chan *c = NULL;
	pid_t pid = 0;
	start(&c, &pid);
	int32_t want[MAX_TOK];
	uint32_t n_want = golden(want);
	int heartbeats = 0;

	/* one job: llama.cpp's tokens */
	struct job_out one = {.id = 1};
	submit(c, 1, p_once, 0.0f, 1, 64);
	run_until_ended(c, &one, 1, &heartbeats);
	T_TRUE(one.started);
	T_EQ(n_want, 64);
	T_EQ(one.n, 64);
	T_TRUE(memcmp(one.ids, want, sizeof(int32_t) * 64) == 0);
	T_EQ(one.finish, ORCH__FINISH_REASON__FINISH_LENGTH);
	T_EQ(one.tokens_out, 64);

	/* 8 jobs alone, then together: the same tokens */
	static struct job_out solo[8], together[8];
	for (int k = 0; k < 8; k++) {
		solo[k] = (struct job_out){.id = 100 + (uint64_t)k};
		submit(c, solo[k].id, prompts[k], 0.9f, 7 + (uint64_t)k, 24);
		run_until_ended(c, &solo[k], 1, &heartbeats);
		together[k] = (struct job_out){.id = 200 + (uint64_t)k};
	}
	for (int k = 0; k < 8; k++)
		submit(c, together[k].id, prompts[k], 0.9f, 7 + (uint64_t)k, 24);
	run_until_ended(c, together, 8, &heartbeats);
	for (int k = 0; k < 8; k++) {
		T_EQ(together[k].n, solo[k].n);
		T_TRUE(together[k].error_code == 0 &&
		       memcmp(together[k].ids, solo[k].ids, sizeof(int32_t) * solo[k].n) == 0);
	}

	/* cancel mid-stream: CANCELLED; the neighbour finishes; the slot is reused */
	struct job_out pair[2] = {{.id = 300}, {.id = 301}};
	submit(c, 300, p_once, 0.0f, 1, 200);
	submit(c, 301, p_once, 0.0f, 1, 32);
	run_until_tokens(c, pair, 2, 3, &heartbeats);
	control(c, ORCH__ENVELOPE__BODY_CANCEL, 300);
	control(c, ORCH__ENVELOPE__BODY_CANCEL, 300);  /* repeated: harmless */
	control(c, ORCH__ENVELOPE__BODY_CANCEL, 9999); /* unknown: harmless */
	run_until_ended(c, pair, 2, &heartbeats);
	T_EQ(pair[0].error_code, ORCH__ERROR_CODE__CANCELLED);
	T_TRUE(pair[0].n < 200);
	T_EQ(pair[1].finish, ORCH__FINISH_REASON__FINISH_LENGTH);
	T_TRUE(memcmp(pair[1].ids, want, sizeof(int32_t) * 32) == 0);
	struct job_out again = {.id = 302};
	submit(c, 302, p_once, 0.0f, 1, 8);
	run_until_ended(c, &again, 1, &heartbeats);
	T_EQ(again.n, 8);

	check_duplicate_id(c, &heartbeats);
	T_TRUE(heartbeats > 0);
	stop(c, pid);
}

/* Garbage from a raw peer is survived; the next job runs. */
static void
test_malformed(void)
{
	nng_socket raw;
	Orch__Envelope *env = NULL;
	uint8_t junk[64];

	T_TRUE(nng_pair1_open(&raw) == 0);
	T_TRUE(nng_listen(raw, url, NULL, 0) == 0);
	pid_t pid = spawn(model, NULL);
	nng_msg *m;
	do { /* Hello, progress, Ready */
		T_TRUE(nng_recvmsg(raw, &m, 0) == 0);
		T_OK(ipc_decode(nng_msg_body(m), nng_msg_len(m), &env, NULL));
		nng_msg_free(m);
		bool ready = env->body_case == ORCH__ENVELOPE__BODY_READY;
		ipc_envelope_free(env);
		if (ready)
			break;
	} while (1);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	T_TRUE(nng_send(raw, junk, sizeof(junk), 0) == 0);
	static const uint8_t truncated[] = {0x2a, 0x10, 0x08};
	T_TRUE(nng_send(raw, (void *)(uintptr_t)truncated, sizeof(truncated), 0) == 0);
	static const uint8_t no_body[] = {0};
	T_TRUE(nng_send(raw, (void *)(uintptr_t)no_body, 0, 0) == 0);
	/* a Submit with version-less junk fields and job id 0: invalid */
	static const uint8_t job0[] = {0x2a, 0x02, 0x08, 0x00};
	T_TRUE(nng_send(raw, (void *)(uintptr_t)job0, sizeof(job0), 0) == 0);
	/* then a real job */
	Orch__Envelope sub = ORCH__ENVELOPE__INIT;
	Orch__Submit s = ORCH__SUBMIT__INIT;
	s.job_id = 5;
	s.prompt = p_once;
	s.max_tokens = 4;
	sub.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
	sub.submit = &s;
	size_t n = orch__envelope__get_packed_size(&sub);
	uint8_t buf[256];
	orch__envelope__pack(&sub, buf);
	T_TRUE(nng_send(raw, buf, n, 0) == 0);
	bool ended = false;
	for (int k = 0; k < 200 && !ended; k++) {
		T_TRUE(nng_recvmsg(raw, &m, 0) == 0);
		T_OK(ipc_decode(nng_msg_body(m), nng_msg_len(m), &env, NULL));
		nng_msg_free(m);
		ended = env->body_case == ORCH__ENVELOPE__BODY_END && env->end->job_id == 5;
		ipc_envelope_free(env);
	}
	T_TRUE(ended);
	T_EQ(kill(pid, 0), 0); /* still alive */
	kill(pid, SIGTERM);
	T_EQ(wait_exit(pid, 5000), 0);
	nng_close(raw);
}

/* Drain finishes the active job and exits 0; new jobs are refused meanwhile. */
static void
test_drain(void)
{
	struct ipc_chan *c = NULL;
	pid_t pid = 0;
	start(&c, &pid);
	struct job_out jobs[2] = {{.id = 1}, {.id = 2}};

	submit(c, 1, p_once, 0.0f, 1, 48);
	control(c, ORCH__ENVELOPE__BODY_DRAIN, 0);
	submit(c, 2, p_once, 0.0f, 1, 8);
	run_until_ended(c, jobs, 2, NULL);
	T_EQ(jobs[0].finish, ORCH__FINISH_REASON__FINISH_LENGTH);
	T_EQ(jobs[0].n, 48);
	T_EQ(jobs[1].error_code, ORCH__ERROR_CODE__QUEUE_FULL);
	T_EQ(wait_exit(pid, 5000), 0);
	ipc_close(c);
}

/* A job cancelled in the same breath as its Submit ends at once, on an otherwise idle worker. */
static void
test_cancel_queued(void)
{
	struct ipc_chan *c = NULL;
	pid_t pid = 0;
	struct job_out j = {.id = 31};

	start(&c, &pid);
	submit(c, 31, p_once, 0.0f, 1, 200);
	control(c, ORCH__ENVELOPE__BODY_CANCEL, 31);
	for (int t = 0; t < 50 && !j.ended; t++) { /* 500 ms, half a heartbeat period */
		Orch__Envelope *env = NULL;
		if (ipc_recv(c, 10, &env, NULL) == ORCH_OK) {
			absorb(env, &j, 1, NULL);
			ipc_envelope_free(env);
		}
	}
	T_TRUE(j.ended);
	T_EQ(j.error_code, ORCH__ERROR_CODE__CANCELLED);
	stop(c, pid);
}

/* Shutdown and SIGTERM cancel active jobs (each gets its terminal event) and exit 0. */
static void
test_shutdown(void)
{
	for (int how = 0; how < 2; how++) {
		struct ipc_chan *c = NULL;
		pid_t pid = 0;
		start(&c, &pid);
		struct job_out j = {.id = 9};
		submit(c, 9, p_once, 0.0f, 1, 250);
		run_until_tokens(c, &j, 1, 2, NULL);
		if (how == 0)
			control(c, ORCH__ENVELOPE__BODY_SHUTDOWN, 0);
		else
			kill(pid, SIGTERM);
		run_until_ended(c, &j, 1, NULL);
		T_EQ(j.error_code, ORCH__ERROR_CODE__CANCELLED);
		T_EQ(wait_exit(pid, 5000), 0);
		ipc_close(c);
	}
}

/* A model that cannot load: Error MODEL_LOAD_FAILED for job 0, then a non-zero exit. */
static void
test_load_failure(void)
{
	struct ipc_chan *c = NULL;
	Orch__Envelope *env = NULL;

	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	pid_t pid = spawn("/nonexistent/model.gguf", NULL);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_HELLO);
	ipc_envelope_free(env);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_ERROR);
	T_EQ(env->error->job_id, 0);
	T_EQ(env->error->code, ORCH__ERROR_CODE__MODEL_LOAD_FAILED);
	T_STREQ(env->error->model_path, "/nonexistent/model.gguf");
	T_TRUE(strstr(env->error->message, "/nonexistent/model.gguf") != NULL);
	ipc_envelope_free(env);
	T_EQ(wait_exit(pid, 5000), 1);
	ipc_close(c);
}

/*
 * An allocation failure while admitting a job (ORCH_FAULT_ADMIT=JOB:N makes
 * allocation N of job JOB's admission fail) fails that job with VRAM_OOM,
 * frees what it had (ASan checks at exit), marks the next heartbeat
 * degraded, and the next job runs. N walks every allocation of admission.
 */
static void
test_alloc_failure(void)
{
	bool succeeded = false;

	for (int n = 0; n < 64 && !succeeded; n++) {
		char fault[32];
		struct ipc_chan *c = NULL;
		pid_t pid = 0;
		snprintf(fault, sizeof(fault), "77:%d", n);
		setenv("ORCH_FAULT_ADMIT", fault, 1);
		start(&c, &pid);
		unsetenv("ORCH_FAULT_ADMIT");
		struct job_out jobs[2] = {{.id = 77}, {.id = 78}};
		submit(c, 77, p_once, 0.0f, 1, 8);
		run_until_ended(c, jobs, 1, NULL);
		if (jobs[0].error_code == 0) {
			succeeded = true; /* n is past the last allocation admission makes */
			T_EQ(jobs[0].n, 8);
		} else {
			T_EQ(jobs[0].error_code, ORCH__ERROR_CODE__VRAM_OOM);
			bool degraded = false;
			for (int k = 0; k < 200 && !degraded; k++) {
				Orch__Envelope *env = NULL;
				if (ipc_recv(c, 10, &env, NULL) != ORCH_OK)
					continue;
				degraded = env->body_case == ORCH__ENVELOPE__BODY_HEARTBEAT &&
				           env->heartbeat->degraded;
				ipc_envelope_free(env);
			}
			T_TRUE(degraded);
		}
		submit(c, 78, p_once, 0.0f, 1, 8);
		run_until_ended(c, &jobs[1], 1, NULL);
		T_EQ(jobs[1].error_code, 0);
		T_EQ(jobs[1].n, 8);
		stop(c, pid);
		if (t_failed_checks)
			return;
	}
	T_TRUE(succeeded);
}

/* SIGKILL of the worker's parent makes the worker exit at once, status 1 (its jobs dropped). */
static void
test_parent_death(void)
{
	int fds[2];
	struct ipc_chan *c = NULL;
	pid_t worker = 0;

	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	prctl(PR_SET_CHILD_SUBREAPER, 1); /* the orphaned worker comes to us */
	T_EQ(pipe(fds), 0);
	pid_t mid = fork();
	if (mid == 0) {
		pid_t w = spawn(model, NULL);
		if (write(fds[1], &w, sizeof(w)) != sizeof(w))
			_exit(1);
		pause();
		_exit(0);
	}
	T_EQ(read(fds[0], &worker, sizeof(worker)), (ssize_t)sizeof(worker));
	close(fds[0]);
	close(fds[1]);
	Orch__Envelope *env = NULL;
	T_OK(ipc_recv(c, 10000, &env, NULL)); /* Hello: it runs */
	ipc_envelope_free(env);
	kill(mid, SIGKILL);
	T_EQ(wait_exit(mid, 5000), 128 + SIGKILL);
	T_EQ(wait_exit(worker, 10000), 1);
	ipc_close(c);
}

int
main(void)
{
	if (!harness_init())
		return 1;
	T_RUN(test_jobs);
	T_RUN(test_malformed);
	T_RUN(test_drain);
	T_RUN(test_cancel_queued);
	T_RUN(test_shutdown);
	T_RUN(test_load_failure);
	T_RUN(test_alloc_failure);
	T_RUN(test_parent_death);
	unlink(url + strlen("ipc://"));
	return t_done();
}
