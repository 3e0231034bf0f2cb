/*
 * health_test.c - what orchd keeps of a worker's Hello, Ready and
 * Heartbeat (wire.c) and shows in GET /health (health.c): identity, what it
 * loaded, residency; a Hello of another build refused for good; a failed
 * residency check making the worker unhealthy (no new jobs, drained,
 * counted once, the reason kept) without failing its model; GPU-only facts
 * only for GPU workers.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/build_id.h"
#include "base/clock.h"
#include "core.h"
#include "health.h"
#include "ipc/ipc.h"
#include "metrics.h"
#include "models.h"
#include "offload.h"
#include "orchd.h"
#include "t.h"
#include "wire.h"
#include "workers.h"

static struct orchd d;
static char sha[] = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";
static char tok_hash[] = "cde47bfa8e3a0cdf23690a2da17c348d936072013deb64aca1fd0c859b6c4573";

static struct model_entry *
model(const char *name, const char *device)
{
	struct cfg_model c = {0};
	struct model_entry *m = NULL;

	snprintf(c.name, sizeof(c.name), "%s", name);
	snprintf(c.path, sizeof(c.path), "/nonexistent.gguf");
	snprintf(c.devices[0], sizeof(c.devices[0]), "%s", device);
	c.n_devices = 1;
	c.replicas = 1;
	c.slots = 2;
	return models_add(&d, &c, &m, NULL) == ORCH_OK ? m : NULL;
}

static void
hello(struct worker *w, char *build, char *model_sha, char *sm)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Hello h = ORCH__HELLO__INIT;
	char id[] = "w", dev[] = "cpu", cuda[] = "13.0";

	h.protocol_version = IPC_PROTOCOL_VERSION;
	h.build_id = build;
	h.worker_id = id;
	h.device = dev;
	h.model_sha256 = model_sha;
	h.tokenizer_hash = tok_hash;
	h.sm = sm;
	if (sm[0])
		h.cuda_version = h.driver_version = cuda;
	env.body_case = ORCH__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	wire_dispatch(&d, w, &env);
}

static void
ready(struct worker *w, char *model_sha)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Ready r = ORCH__READY__INIT;
	char q[] = "Q4_K_M", kind[] = "bpe", src[] = "gguf", arch[] = "qwen2";

	r.memory_used = 123456;
	r.context_length = 4096;
	r.slots = 2;
	r.vocab_size = 151936;
	r.quant_kind = q;
	r.tokenizer_kind = kind;
	r.tokenizer_source = src;
	r.architecture = arch;
	r.model_sha256 = model_sha;
	env.body_case = ORCH__ENVELOPE__BODY_READY;
	env.ready = &r;
	wire_dispatch(&d, w, &env);
}

static void
heartbeat(struct worker *w, bool resident, char *why)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Heartbeat hb = ORCH__HEARTBEAT__INIT;

	hb.slots_total = 2;
	hb.kv_cells_total = 8192;
	hb.memory_used = 200000;
	hb.residency_ok = resident;
	hb.residency_error = why;
	env.body_case = ORCH__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	wire_dispatch(&d, w, &env);
}

/* The /health object of worker 0 of model @name (in @root, freed by the caller). */
static const cJSON *
worker0(const cJSON *root, const char *name)
{
	const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "models"), name);
	return cJSON_GetArrayItem(cJSON_GetObjectItem(m, "workers"), 0);
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}

static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* A process to stand for the worker (orchd only signals it on a refused Hello). */
static pid_t
stand_in(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void
test_refused_build(void)
{
	struct model_entry *m = model("old", "cpu");
	struct worker *w = m->workers[0];
	char other[] = "orch-0.0.1+elsewhere", empty[] = "";
	int st = 0;

	w->pid = stand_in();
	w->state = WORKER_STARTING;
	hello(w, other, sha, empty);
	T_EQ(w->state, WORKER_STARTING); /* not taken */
	T_EQ(w->last_exit, -1);          /* no restart: the binary on disk is another build */
	T_TRUE(strstr(m->error, "is build 'orch-0.0.1+elsewhere'") != NULL);
	T_EQ(waitpid(w->pid, &st, 0), w->pid);
	T_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	w->pid = 0;
}

static void
test_health_and_residency(void)
{
	struct model_entry *m = model("h", "cpu");
	struct worker *w = m->workers[0];
	char build[128], empty[] = "", why[] = "weights at 0x7f00 are not resident device memory";

	snprintf(build, sizeof(build), "%s", orch_build_id());
	w->pid = stand_in();
	w->state = WORKER_STARTING;
	hello(w, build, empty, empty); /* no digest yet: Ready brings it */
	T_EQ(w->state, WORKER_LOADING);
	ready(w, sha);
	T_EQ(w->state, WORKER_READY);
	T_EQ(m->state, MODEL_READY);
	heartbeat(w, true, empty);
	cJSON *root = health_json(&d);
	const cJSON *x = worker0(root, "h"),
	            *mo = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "models"), "h");
	T_STREQ(str(root, "status"), "ok");
	T_STREQ(str(root, "build_id"), orch_build_id());
	T_STREQ(str(mo, "status"), "healthy");
	T_STREQ(str(mo, "quant_kind"), "Q4_K_M");
	T_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(mo, "resident")));
	T_STREQ(str(x, "status"), "healthy");
	T_STREQ(str(x, "quant_kind"), "Q4_K_M");
	T_STREQ(str(x, "tokenizer_kind"), "gguf-bpe");
	T_STREQ(str(x, "model_sha256"), sha);
	T_STREQ(str(x, "tokenizer_hash"), tok_hash);
	T_EQ(num(x, "vocab_size"), 151936);
	T_EQ(num(x, "context_length"), 4096);
	T_EQ(num(x, "vram_bytes_used"), 200000);
	T_TRUE(num(x, "uptime_seconds") >= 0);
	T_TRUE(cJSON_IsTrue(cJSON_GetObjectItem(x, "resident")));
	T_TRUE(cJSON_GetObjectItem(x, "sm") == NULL); /* cpu: no GPU facts */
	cJSON_Delete(root);
	/* a failed residency check: unhealthy, drained, counted once; the model goes on */
	heartbeat(w, false, why);
	heartbeat(w, false, why);
	T_EQ(w->state, WORKER_UNHEALTHY);
	T_EQ(w->unhealthy_total, 1);
	T_TRUE(strstr(w->unhealthy_reason, "residency check failed: weights at 0x7f00") != NULL);
	T_EQ(m->state, MODEL_LOADING); /* not failed: a restart follows */
	root = health_json(&d);
	x = worker0(root, "h");
	mo = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "models"), "h");
	T_STREQ(str(x, "status"), "unhealthy");
	T_STREQ(str(x, "state"), "unhealthy");
	T_TRUE(strstr(str(x, "reason"), "not resident device memory") != NULL);
	T_TRUE(cJSON_IsFalse(cJSON_GetObjectItem(x, "resident")));
	T_STREQ(str(mo, "status"), "unhealthy");
	cJSON_Delete(root);
	struct sbuf b = {0};
	metrics_render(&d, &b);
	T_TRUE(b.p && strstr(b.p, "orch_worker_unhealthy_total{model=\"h\",worker=\"h-0\","
	                          "reason=\"residency\"} 1\n"));
	T_TRUE(b.p && strstr(b.p, "orch_worker_healthy{model=\"h\",worker=\"h-0\"} 0\n"));
	sbuf_fini(&b);
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, 0);
	w->pid = 0;
}

static void
test_gpu_facts(void)
{
	struct model_entry *m = model("g", "cuda:0");
	struct worker *w = m->workers[0];
	char build[128], sm[] = "sm_90";

	snprintf(build, sizeof(build), "%s", orch_build_id());
	w->state = WORKER_STARTING;
	hello(w, build, sha, sm);
	ready(w, sha);
	cJSON *root = health_json(&d);
	const cJSON *x = worker0(root, "g");
	T_STREQ(str(x, "sm"), "sm_90");
	T_STREQ(str(x, "cuda_runtime_version"), "13.0");
	T_STREQ(str(x, "model_sha256"), sha);
	cJSON_Delete(root);
}

int
main(void)
{
	d.started_ms = orch_mono_ms();
	cfg_defaults(&d.cfg);
	core_init(&d);
	T_RUN(test_refused_build);
	T_RUN(test_health_and_residency);
	T_RUN(test_gpu_facts);
	offload_stop(&d); /* the model files' reads (inspect.h) their models started */
	return t_done();
}
