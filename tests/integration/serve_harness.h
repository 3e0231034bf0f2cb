#pragma once
/*
 * serve_harness.h - a real `orch-worker serve` (cpu, stories260K) driven
 * over NNG as the supervisor would, for serve_test and serve_debug_test.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/ipc.h"

#define MAX_TOK 256

extern char url[128], model[512], worker_bin[512];
extern const char *debug_url; /* --debug-endpoint of the workers spawned, when set */
extern char p_once[];         /* "Once upon a time" */
extern char *prompts[8];      /* eight short story openings */

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

pid_t spawn(const char *model_path, const char *extra);
int wait_exit(pid_t pid, int ms);
void send_env(struct ipc_chan *c, Orch__Envelope *env);
void submit(struct ipc_chan *c, uint64_t id, char *prompt, float temp, uint64_t seed, uint32_t max);
void control(struct ipc_chan *c, Orch__Envelope__BodyCase what, uint64_t job);
void absorb(const Orch__Envelope *env, struct job_out *jobs, size_t n, int *heartbeats);
/* run_until_tokens - absorb messages until @jobs[0] has @want tokens (or 5 s pass quietly). */
void run_until_tokens(struct ipc_chan *c, struct job_out *jobs, size_t n, uint32_t want,
                      int *heartbeats);
void run_until_ended(struct ipc_chan *c, struct job_out *jobs, size_t n, int *heartbeats);
void start(struct ipc_chan **c, pid_t *pid);
void stop(struct ipc_chan *c, pid_t pid);
uint32_t golden(int32_t *ids);
/* model_sha256 - the SHA-256 (hex) of @model, computed by the test. */
const char *model_sha256(void);
bool harness_init(void);
