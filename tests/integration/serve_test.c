/*
 * serve_test - a real `orch-worker serve` on the cpu device with
 * stories260K, driven over NNG as the supervisor would: handshake and load
 * progress, one job equal to llama.cpp's golden tokens (which `run` also
 * gives), concurrent jobs equal to their solo runs, cancel, duplicate ids,
 * malformed envelopes, heartbeats, drain, shutdown, SIGTERM, a failed load,
 * the worker's exit when its parent is killed, and the debug stream.
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
#include "t.h"

#define MAX_TOK 256

static char url[128], model[512], worker_bin[512];
static const char *debug_url; /* --debug-endpoint of the workers spawned, when set */

/* One job's view from the supervisor's side. */
struct job_out {
	uint64_t id;
	int32_t ids[MAX_TOK];
	uint32_t n;
	bool started, ended;
	int finish;     /* End's finish reason */
	int error_code; /* Error's code, 0 when none */
	uint32_t tokens_out;
};

static pid_t
spawn(const char *model_path, const char *extra)
{
	pid_t pid = fork();

	if (pid == 0) {
		const char *argv[24] = {worker_bin,       "serve",
		                        "--endpoint",     url,
		                        "--model",        model_path,
		                        "--device",       "cpu",
		                        "--worker-id",    "t1",
		                        "--slots",        "4",
		                        "--context",      "256",
		                        "--threads",      "1",
		                        "--heartbeat-ms", extra ? extra : "200"};
		if (debug_url != NULL) {
			argv[18] = "--debug-endpoint";
			argv[19] = debug_url;
		}
		execv(worker_bin, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	return pid;
}

/* waitpid with a limit: the exit status, or -1 after @ms. */
static int
wait_exit(pid_t pid, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	return -1;
}

static void
send_env(struct ipc_chan *c, Orch__Envelope *env)
{
	T_OK(ipc_send(c, env, 5000, NULL));
}

static void
submit(struct ipc_chan *c, uint64_t id, char *prompt, float temp, uint64_t seed, uint32_t max)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Submit s = ORCH__SUBMIT__INIT;
	Orch__SamplingParams sp = ORCH__SAMPLING_PARAMS__INIT;

	sp.temperature = temp;
	sp.top_p = 1.0f;
	sp.repeat_penalty = 1.0f;
	sp.has_seed = true;
	sp.seed = seed;
	s.job_id = id;
	s.prompt = prompt;
	s.sampling = &sp;
	s.max_tokens = max;
	env.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
	env.submit = &s;
	send_env(c, &env);
}

static void
control(struct ipc_chan *c, Orch__Envelope__BodyCase what, uint64_t job)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Cancel cancel = ORCH__CANCEL__INIT;
	Orch__Drain drain = ORCH__DRAIN__INIT;
	Orch__Shutdown shut = ORCH__SHUTDOWN__INIT;

	env.body_case = what;
	if (what == ORCH__ENVELOPE__BODY_CANCEL) {
		cancel.job_id = job;
		env.cancel = &cancel;
	} else if (what == ORCH__ENVELOPE__BODY_DRAIN) {
		env.drain = &drain;
	} else {
		env.shutdown = &shut;
	}
	send_env(c, &env);
}

/* Fold one worker message into @jobs (n of them); counts heartbeats. */
static void
absorb(const Orch__Envelope *env, struct job_out *jobs, size_t n, int *heartbeats)
{
	for (size_t k = 0; k < n; k++) {
		struct job_out *j = &jobs[k];
		switch (env->body_case) {
		case ORCH__ENVELOPE__BODY_STARTED:
			if (env->started->job_id == j->id)
				j->started = true;
			break;
		case ORCH__ENVELOPE__BODY_TOKEN_BATCH:
			for (size_t i = 0; i < env->token_batch->n_tokens; i++) {
				const Orch__TokenEntry *e = env->token_batch->tokens[i];
				if (e->job_id == j->id && e->token_id >= 0 && j->n < MAX_TOK)
					j->ids[j->n++] = e->token_id;
			}
			break;
		case ORCH__ENVELOPE__BODY_END:
			if (env->end->job_id == j->id) {
				T_TRUE(!j->ended); /* exactly one terminal event */
				j->ended = true;
				j->finish = (int)env->end->finish_reason;
				j->tokens_out = env->end->tokens_out;
			}
			break;
		case ORCH__ENVELOPE__BODY_ERROR:
			if (env->error->job_id == j->id) {
				T_TRUE(!j->ended);
				j->ended = true;
				j->error_code = (int)env->error->code;
			}
			break;
		default:
			break;
		}
	}
	if (env->body_case == ORCH__ENVELOPE__BODY_HEARTBEAT && heartbeats)
		(*heartbeats)++;
}

/* Receive until every job in @jobs has ended (or 60 s pass). */
static void
run_until_ended(struct ipc_chan *c, struct job_out *jobs, size_t n, int *heartbeats)
{
	for (int spins = 0; spins < 6000; spins++) {
		bool all = true;
		for (size_t k = 0; k < n; k++)
			all &= jobs[k].ended;
		if (all)
			return;
		Orch__Envelope *env = NULL;
		orch_err e = ipc_recv(c, 10, &env, NULL);
		if (e != ORCH_OK)
			continue;
		absorb(env, jobs, n, heartbeats);
		ipc_envelope_free(env);
	}
	T_FAIL_("jobs did not end within 60 s");
}

/* Start a worker (*@pid) and go through the handshake; the channel in *@c. */
static void
start(struct ipc_chan **c, pid_t *pid)
{
	Orch__Envelope *env = NULL;
	int last_pct = -1, marks = 0;

	T_OK(ipc_open(url, IPC_LISTEN, c, NULL));
	*pid = spawn(model, NULL);
	T_OK(ipc_recv(*c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_HELLO);
	T_OK(ipc_check_hello(env->hello, NULL));
	T_STREQ(env->hello->worker_id, "t1");
	T_STREQ(env->hello->device, "cpu");
	ipc_envelope_free(env);
	for (;;) {
		T_OK(ipc_recv(*c, 10000, &env, NULL));
		if (env->body_case != ORCH__ENVELOPE__BODY_LOAD_PROGRESS)
			break;
		int pct = (int)env->load_progress->percent;
		T_TRUE(pct > last_pct);
		marks += pct == 0 || pct == 25 || pct == 50 || pct == 75 || pct == 100;
		last_pct = pct;
		ipc_envelope_free(env);
	}
	T_EQ(marks, 5); /* 0, 25, 50, 75 and 100 % at least */
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_READY);
	T_EQ(env->ready->slots, 4);
	T_EQ(env->ready->context_length, 256);
	T_EQ(env->ready->vocab_size, 512);
	T_STREQ(env->ready->architecture, "llama");
	T_STREQ(env->ready->tokenizer_source, "gguf");
	T_STREQ(env->ready->chat_template, "fallback"); /* stories260K has none */
	ipc_envelope_free(env);
}

static void
stop(struct ipc_chan *c, pid_t pid)
{
	control(c, ORCH__ENVELOPE__BODY_SHUTDOWN, 0);
	T_EQ(wait_exit(pid, 5000), 0);
	ipc_close(c);
}

/* The golden ids for "Once upon a time" (64 tokens, greedy). */
static uint32_t
golden(int32_t *ids)
{
	char path[600];
	char *text = NULL;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/models/golden-stories260K.json", getenv("ORCH_TESTDATA"));
	if ((f = fopen(path, "rb")) == NULL)
		return 0;
	text = malloc(1 << 24);
	n = fread(text, 1, (1 << 24) - 1, f);
	fclose(f);
	text[n] = '\0';
	cJSON *root = cJSON_Parse(text);
	const cJSON *g = cJSON_GetObjectItem(
	        cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0), "generated_tokens");
	uint32_t k = 0;
	for (int i = 0; i < cJSON_GetArraySize(g) && k < MAX_TOK; i++)
		ids[k++] = cJSON_GetArrayItem(g, i)->valueint;
	cJSON_Delete(root);
	free(text);
	return k;
}

static char p_once[] = "Once upon a time";
static char *prompts[8];

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
	while (pair[0].n < 3) {
		Orch__Envelope *env = NULL;
		if (ipc_recv(c, 5000, &env, NULL) != ORCH_OK)
			break;
		absorb(env, pair, 2, &heartbeats);
		ipc_envelope_free(env);
	}
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

	/* a duplicate id is refused; the original job is unaffected */
	struct job_out dup[2] = {{.id = 400}, {.id = 400}};
	submit(c, 400, p_once, 0.0f, 1, 16);
	submit(c, 400, p_once, 0.0f, 1, 16);
	Orch__Envelope *env = NULL;
	int refused = 0;
	while (!dup[0].ended || refused == 0) {
		if (ipc_recv(c, 5000, &env, NULL) != ORCH_OK)
			break;
		if (env->body_case == ORCH__ENVELOPE__BODY_ERROR && env->error->job_id == 400 &&
		    env->error->code == ORCH__ERROR_CODE__INVALID_REQUEST)
			refused++;
		else
			absorb(env, dup, 1, &heartbeats);
		ipc_envelope_free(env);
	}
	T_EQ(refused, 1);
	T_EQ(dup[0].n, 16);
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
		while (j.n < 2) {
			Orch__Envelope *env = NULL;
			if (ipc_recv(c, 5000, &env, NULL) != ORCH_OK)
				break;
			absorb(env, &j, 1, NULL);
			ipc_envelope_free(env);
		}
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

/* SIGKILL of the worker's parent makes the worker exit. */
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
	T_EQ(wait_exit(worker, 10000), 0);
	ipc_close(c);
}

/* ---- the debug stream ---- */

/* Read the records of @s for @ms; note a "step" one with timings and a "log" one of a job start. */
static void
scan_records(struct ipc_debug_sub *s, int ms, bool *step, bool *log)
{
	struct sbuf r = {0};

	for (int t = 0; t < ms; t += 20) {
		while (ipc_debug_sub_next(s, 20, &r, NULL) == ORCH_OK) {
			*step |= strncmp(r.p, "step step=", 10) == 0 && strstr(r.p, " forward_ms=");
			*log |= strncmp(r.p, "log level=info event=job_start ", 31) == 0;
		}
	}
	sbuf_fini(&r);
}

/* Run @argv (a NULL-terminated list) and return its exit status and stdout (first 8 KiB). */
static int
run_cmd(const char *const *argv, char *out, size_t n)
{
	int fds[2];
	size_t got = 0;

	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	close(fds[1]);
	ssize_t k;
	while (got + 1 < n && (k = read(fds[0], out + got, n - 1 - got)) > 0)
		got += (size_t)k;
	out[got] = '\0';
	close(fds[0]);
	return wait_exit(pid, 20000);
}

/*
 * --debug-endpoint: log and step records reach a subscriber, a state dump
 * lists the worker and its jobs, an unknown request gets an error reply,
 * and `orch-worker attach` prints both; a bad endpoint fails the start.
 */
static void
test_debug(void)
{
	char dbg[128], ctl[140], out[8192], bogus[] = "bogus";
	struct ipc_chan *c = NULL;
	struct ipc_debug_sub *sub = NULL;
	struct sbuf d = {0};
	pid_t pid = 0;

	snprintf(dbg, sizeof(dbg), "ipc:///tmp/orch-serve-debug-%d.sock", (int)getpid());
	debug_url = dbg;
	T_OK(ipc_debug_sub_open(dbg, NULL, 0, &sub, NULL));
	start(&c, &pid);

	/* records: the subscription connects in the background, so run jobs until they flow */
	bool step = false, log = false;
	for (uint64_t id = 100; id < 150 && !(step && log); id++) {
		struct job_out j = {.id = id};
		submit(c, id, p_once, 0.0f, 1, 4);
		run_until_ended(c, &j, 1, NULL);
		scan_records(sub, 40, &step, &log);
	}
	T_TRUE(step);
	T_TRUE(log);

	/* a state dump with a job running, then without it */
	struct job_out j = {.id = 77};
	submit(c, 77, p_once, 0.0f, 1, 250);
	while (j.n < 2) {
		Orch__Envelope *env = NULL;
		if (ipc_recv(c, 5000, &env, NULL) != ORCH_OK)
			break;
		absorb(env, &j, 1, NULL);
		ipc_envelope_free(env);
	}
	T_OK(ipc_debug_dump(dbg, 5000, &d, NULL));
	T_TRUE(strncmp(d.p, "worker id=t1 ", 13) == 0);
	T_TRUE(strstr(d.p, " slots_total=4 ") && strstr(d.p, " context=256 "));
	T_TRUE(strstr(d.p, "\njob id=77 ") && strstr(d.p, " state=decode "));
	control(c, ORCH__ENVELOPE__BODY_CANCEL, 77);
	run_until_ended(c, &j, 1, NULL);
	T_OK(ipc_debug_dump(dbg, 5000, &d, NULL));
	T_TRUE(strstr(d.p, "job id=77") == NULL && strstr(d.p, " jobs=0 "));

	/* an unknown request */
	nng_socket req;
	nng_msg *m = NULL;
	T_OK(ipc_debug_ctl_url(dbg, ctl, sizeof(ctl), NULL));
	T_TRUE(nng_req0_open(&req) == 0);
	nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5000);
	T_TRUE(nng_dial(req, ctl, NULL, 0) == 0);
	T_TRUE(nng_send(req, bogus, 5, 0) == 0);
	T_TRUE(nng_recvmsg(req, &m, 0) == 0);
	T_TRUE(m != NULL && strncmp(nng_msg_body(m), "error unknown request", 21) == 0);
	nng_msg_free(m);
	nng_close(req);

	/* orch-worker attach: --dump, and a stream of step records */
	const char *dump_argv[] = {worker_bin, "attach", dbg, "--dump", NULL};
	T_EQ(run_cmd(dump_argv, out, sizeof(out)), 0);
	T_TRUE(strncmp(out, "worker id=t1 ", 13) == 0);
	pid_t att = fork();
	if (att == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, STDOUT_FILENO);
		execl(worker_bin, worker_bin, "attach", dbg, "--topic", "step", "--count", "3",
		      "--timeout-ms", "20000", (char *)NULL);
		_exit(127);
	}
	int st = -1;
	for (uint64_t id = 200; id < 400 && st < 0; id++) {
		struct job_out k = {.id = id};
		submit(c, id, p_once, 0.0f, 1, 4);
		run_until_ended(c, &k, 1, NULL);
		st = wait_exit(att, 20);
	}
	T_EQ(st, 0);
	stop(c, pid);
	ipc_debug_sub_close(sub);
	sbuf_fini(&d);

	/* no worker there: attach --dump gives up with exit 1 */
	const char *none_argv[] = {
	        worker_bin, "attach",       "ipc:///tmp/orch-no-such-worker.sock",
	        "--dump",   "--timeout-ms", "300",
	        NULL};
	T_EQ(run_cmd(none_argv, out, sizeof(out)), 1);

	/* a bad endpoint: Hello, then Error naming it, then exit 1 */
	Orch__Envelope *env = NULL;
	debug_url = "bogus://x";
	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	pid = spawn(model, NULL);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_HELLO);
	ipc_envelope_free(env);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_ERROR);
	T_TRUE(strstr(env->error->message, "bogus://x") != NULL);
	ipc_envelope_free(env);
	T_EQ(wait_exit(pid, 5000), 1);
	ipc_close(c);
	debug_url = NULL;
	unlink(dbg + strlen("ipc://"));
	unlink(ctl + strlen("ipc://"));
}

int
main(void)
{
	const char *bin = getenv("ORCH_BIN"), *data = getenv("ORCH_TESTDATA");
	static char p[8][32];

	if (bin == NULL || data == NULL) {
		fprintf(stderr, "ORCH_BIN and ORCH_TESTDATA must be set (ctest sets them)\n");
		return 1;
	}
	snprintf(worker_bin, sizeof(worker_bin), "%s/orch-worker", bin);
	snprintf(model, sizeof(model), "%s/models/stories260K.gguf", data);
	snprintf(url, sizeof(url), "ipc:///tmp/orch-serve-test-%d.sock", (int)getpid());
	static const char *const texts[8] = {"Once upon a time", "The dog",  "Lily saw",
	                                     "One day",          "Tom was",  "The sun",
	                                     "A little bird",    "She liked"};
	for (int k = 0; k < 8; k++) {
		snprintf(p[k], sizeof(p[k]), "%s", texts[k]);
		prompts[k] = p[k];
	}
	T_RUN(test_jobs);
	T_RUN(test_malformed);
	T_RUN(test_drain);
	T_RUN(test_cancel_queued);
	T_RUN(test_shutdown);
	T_RUN(test_load_failure);
	T_RUN(test_alloc_failure);
	T_RUN(test_parent_death);
	T_RUN(test_debug);
	unlink(url + strlen("ipc://"));
	return t_done();
}
