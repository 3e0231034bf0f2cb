/*
 * serve_harness.c - see serve_harness.h.
 */
#include "serve_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
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

#include "base/build_id.h"
#include "base/filehash.h"
#include "ipc/debug.h"
#include "ipc/ipc.h"
#include "t.h"

char url[128], model[512], worker_bin[512];
const char *debug_url; /* --debug-endpoint of the workers spawned, when set */

/* posix_spawn, not fork: NNG's threads run here (see serve_debug_test.c's start_cmd). */
pid_t
spawn(const char *model_path, const char *extra)
{
	const char *argv[24] = {worker_bin,        "serve",
	                        "--endpoint",      url,
	                        "--model",         model_path,
	                        "--device",        "cpu",
	                        "--worker-id",     "t1",
	                        "--slots",         "4",
	                        "--context",       "256",
	                        "--threads",       "1",
	                        "--heartbeat-ms",  extra ? extra : "200",
	                        "--no-hash-beside"}; /* the shared models stay as they are */
	pid_t pid;

	if (debug_url != NULL) {
		argv[19] = "--debug-endpoint";
		argv[20] = debug_url;
	}
	if (posix_spawn(&pid, worker_bin, NULL, NULL, (char *const *)(uintptr_t)argv, environ) != 0)
		return -1;
	return pid;
}

/* waitpid with a limit: the exit status, or -1 after @ms. */
int
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

void
send_env(struct ipc_chan *c, Orch__Envelope *env)
{
	T_OK(ipc_send(c, env, 5000, NULL));
}

void
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

void
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
void
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
void
run_until_tokens(struct ipc_chan *c, struct job_out *jobs, size_t n, uint32_t want, int *heartbeats)
{
	while (jobs[0].n < want) {
		Orch__Envelope *env = NULL;
		if (ipc_recv(c, 5000, &env, NULL) != ORCH_OK)
			break;
		absorb(env, jobs, n, heartbeats);
		ipc_envelope_free(env);
	}
}

void
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

/* The SHA-256 of the model file, computed here. */
const char *
model_sha256(void)
{
	static char hex[SHA256_HEX];
	struct filehash_stamp st;

	if (hex[0] == '\0' && filehash_compute(model, hex, &st, NULL, NULL) != ORCH_OK)
		snprintf(hex, sizeof(hex), "(cannot hash %.40s)", model);
	return hex;
}

/* Start a worker (*@pid) and go through the handshake; the channel in *@c. */
void
start(struct ipc_chan **c, pid_t *pid)
{
	Orch__Envelope *env = NULL;
	char sha[SHA256_HEX];
	int last_pct = -1, marks = 0;

	T_OK(ipc_open(url, IPC_LISTEN, c, NULL));
	*pid = spawn(model, NULL);
	T_OK(ipc_recv(*c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_HELLO);
	T_OK(ipc_check_hello(env->hello, orch_build_id(), NULL));
	T_STREQ(env->hello->worker_id, "t1");
	T_STREQ(env->hello->device, "cpu");
	T_EQ(strlen(env->hello->tokenizer_hash), 64);
	T_STREQ(env->hello->sm, ""); /* GPU facts are empty on the cpu */
	T_STREQ(env->hello->cuda_version, "");
	snprintf(sha, sizeof(sha), "%s", env->hello->model_sha256);
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
	T_STREQ(env->ready->quant_kind, "F32");
	/* --no-hash-beside and no cache directory: hashed during the load, in Ready */
	T_STREQ(sha[0] ? sha : env->ready->model_sha256, model_sha256());
	ipc_envelope_free(env);
}

void
stop(struct ipc_chan *c, pid_t pid)
{
	control(c, ORCH__ENVELOPE__BODY_SHUTDOWN, 0);
	T_EQ(wait_exit(pid, 5000), 0);
	ipc_close(c);
}

/* The golden ids for "Once upon a time" (64 tokens, greedy). */
uint32_t
golden(int32_t *ids)
{
	char path[600];
	char *text = NULL;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s", t_path("models/golden-stories260K.json"));
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

char p_once[] = "Once upon a time";
char *prompts[8];

bool
harness_init(void)
{
	const char *bin = getenv("ORCH_BIN");
	static char p[8][32];

	if (bin == NULL || getenv("ORCH_TESTDATA") == NULL) {
		fprintf(stderr, "ORCH_BIN and ORCH_TESTDATA must be set (ctest sets them)\n");
		return false;
	}
	snprintf(worker_bin, sizeof(worker_bin), "%s/orch-worker", bin);
	snprintf(model, sizeof(model), "%s", t_path("models/stories260K.gguf"));
	t_path("models/golden-stories260K.json"); /* skipped at once where it is missing */
	snprintf(url, sizeof(url), "ipc:///tmp/orch-serve-test-%d.sock", (int)getpid());
	static const char *const texts[8] = {"Once upon a time", "The dog",  "Lily saw",
	                                     "One day",          "Tom was",  "The sun",
	                                     "A little bird",    "She liked"};
	for (int k = 0; k < 8; k++) {
		snprintf(p[k], sizeof(p[k]), "%s", texts[k]);
		prompts[k] = p[k];
	}
	return true;
}
