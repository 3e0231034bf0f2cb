/*
 * serve.c - the serving worker's loop.
 *
 * One thread drives everything: it drains the channel (Submit, Cancel,
 * Drain, Shutdown), runs one scheduler step, sends that step's TokenBatch
 * and then the terminal events of the jobs that ended in it, and sends a
 * Heartbeat when one is due. While idle it waits on the channel until the
 * next heartbeat. A Cancel therefore takes effect at the next step.
 */
#include "serve.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "backend.h"
#include "ggml_type.h"
#include "gguf.h"
#include "ipc.h"
#include "log.h"
#include "model.h"
#include "prompt.h"
#include "sbuf.h"
#include "scheduler.h"
#include "tokenizer.h"

#define SEND_TIMEOUT_MS 5000
#define N_TYPES         64 /* ggml type ids are below this */
#define MAX_STOPS       16

struct job {
	struct sched_job sj;
	struct tok_ids ids;
	char *stops[MAX_STOPS];
	uint64_t deadline_ms;
	bool timed_out, live;
	struct serve *sv;
	struct job *next;
};

/* A terminal event waiting for the end of the step. */
struct ending {
	struct job *j;
	enum sched_finish why;
	orch_err err;
	char msg[256];
};

struct serve {
	const struct serve_opts *o;
	struct ipc_chan *ch;
	struct gguf_file *f;
	struct model m;
	struct tok *t;
	const struct be_ops *ops;
	struct be_model *b;
	struct sched *s;
	uint32_t n_ctx, max_jobs;
	struct job *jobs; /* live jobs */
	uint32_t n_jobs;
	/* this step's output */
	Orch__TokenEntry *entries;
	Orch__TokenEntry **entry_ptrs;
	size_t *text_off; /* each entry's text in @text */
	struct sbuf text; /* the step's texts, NUL-separated; reused step after step */
	uint32_t n_entries, cap_entries;
	struct ending *endings;
	uint32_t n_endings;
	uint64_t steps;
	bool draining, degraded;
	int last_pct;
	/* ORCH_FAULT_ADMIT="JOB:N" (test builds): allocation N admitting job JOB fails */
	uint64_t fault_job;
	long fault_n;
};

static volatile sig_atomic_t stop_signal;

static void
on_sigterm(int sig)
{
	(void)sig;
	stop_signal = 1;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t
unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
send_env(struct serve *sv, Orch__Envelope *env)
{
	struct orch_errinfo e = {0};

	if (ipc_send(sv->ch, env, SEND_TIMEOUT_MS, &e) != ORCH_OK)
		orch_log(ORCH_LOG_WARNING, "ipc_send_failed", "body=%s msg=\"%s\"",
		         ipc_body_name(env->body_case), e.msg);
}

static void
send_error(struct serve *sv, uint64_t job, orch_err code, const char *msg)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Error er = ORCH__ERROR__INIT;
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", msg ? msg : "");
	er.job_id = job;
	er.code = (Orch__ErrorCode)orch_err_proto(code);
	er.message = buf;
	er.retriable = orch_err_retriable(code);
	if (job == 0) {
		er.model_path = (char *)(uintptr_t)sv->o->model;
		er.device = (char *)(uintptr_t)sv->o->device;
	}
	env.body_case = ORCH__ENVELOPE__BODY_ERROR;
	env.error = &er;
	send_env(sv, &env);
}

/* ---- scheduler callbacks: collect the step's output ---- */

static void
on_token(void *ctx, struct sched_job *sj, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct job *j = ctx;
	struct serve *sv = j->sv;

	if (sv->n_entries == sv->cap_entries)
		return; /* cannot happen: the capacity is two per live job */
	size_t off = sv->text.n;
	sbuf_put(&sv->text, text, n);
	sbuf_putc(&sv->text, '\0');
	if (sv->text.oom) { /* this text is lost, so the job cannot go on; the others' stay */
		sched_cancel(sv->s, sj->id);
		sv->text.oom = false;
		sv->text.n = off;
		if (sv->text.p != NULL)
			sv->text.p[off] = '\0';
		return;
	}
	Orch__TokenEntry *e = &sv->entries[sv->n_entries];
	orch__token_entry__init(e);
	e->job_id = sj->id;
	e->index = index;
	e->token_id = id;
	sv->text_off[sv->n_entries] = off;
	sv->entry_ptrs[sv->n_entries] = e;
	sv->n_entries++;
}

static void
on_end(void *ctx, struct sched_job *sj, enum sched_finish why, orch_err err, const char *msg)
{
	struct job *j = ctx;
	struct serve *sv = j->sv;
	struct ending *e = &sv->endings[sv->n_endings++];

	(void)sj;
	e->j = j;
	e->why = why;
	e->err = err;
	snprintf(e->msg, sizeof(e->msg), "%s", msg ? msg : "");
}

static const struct sched_job_ops job_ops = {on_token, NULL, on_end};

static struct job *
find_job(struct serve *sv, uint64_t id)
{
	for (struct job *j = sv->jobs; j != NULL; j = j->next)
		if (j->sj.id == id)
			return j;
	return NULL;
}

static void
job_free(struct serve *sv, struct job *j)
{
	for (struct job **p = &sv->jobs; *p != NULL; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			sv->n_jobs--;
			break;
		}
	}
	for (uint32_t i = 0; i < j->sj.n_stops; i++)
		orch_free(j->stops[i]);
	tok_ids_fini(&j->ids);
	orch_free(j);
}

/* Send the step's TokenBatch, then its terminal events; free the ended jobs. */
static void
flush_step(struct serve *sv, uint64_t sampled_ns)
{
	if (sv->n_entries > 0) {
		Orch__Envelope env = ORCH__ENVELOPE__INIT;
		for (uint32_t i = 0; i < sv->n_entries; i++) /* the buffer has stopped moving */
			sv->entries[i].text = sv->text.p + sv->text_off[i];
		Orch__TokenBatch tb = ORCH__TOKEN_BATCH__INIT;
		tb.step = sv->steps;
		tb.sampled_ns = sampled_ns;
		tb.n_tokens = sv->n_entries;
		tb.tokens = sv->entry_ptrs;
		env.body_case = ORCH__ENVELOPE__BODY_TOKEN_BATCH;
		env.token_batch = &tb;
		send_env(sv, &env);
		sbuf_clear(&sv->text);
		sv->n_entries = 0;
	}
	for (uint32_t i = 0; i < sv->n_endings; i++) {
		struct ending *e = &sv->endings[i];
		struct sched_job *sj = &e->j->sj;
		if (e->why == SCHED_CANCELLED) {
			send_error(sv, sj->id, e->j->timed_out ? ORCH_ETIMEOUT : ORCH_ECANCELLED,
			           e->j->timed_out ? "deadline passed" : "cancelled");
		} else if (e->why == SCHED_ERROR) {
			send_error(sv, sj->id, e->err, e->msg);
		} else {
			Orch__Envelope env = ORCH__ENVELOPE__INIT;
			Orch__End end = ORCH__END__INIT;
			end.job_id = sj->id;
			end.tokens_out = sj->tokens_out;
			end.prompt_tokens = sj->n_prompt;
			end.finish_reason = e->why == SCHED_STOP ? ORCH__FINISH_REASON__FINISH_STOP
			                    : e->why == SCHED_LENGTH
			                            ? ORCH__FINISH_REASON__FINISH_LENGTH
			                            : ORCH__FINISH_REASON__FINISH_EOS;
			end.prefill_ms = sj->prefill_ms;
			end.decode_ms = sj->decode_ms;
			end.seed = sj->sp.seed;
			env.body_case = ORCH__ENVELOPE__BODY_END;
			env.end = &end;
			send_env(sv, &env);
		}
		job_free(sv, e->j);
	}
	sv->n_endings = 0;
}

/* ---- incoming messages ---- */

/*
 * Admit @m as a new job in *@ret: tokenize, copy its parameters, hand it to
 * the scheduler. On failure everything it allocated is freed, and the code
 * is the wire one to answer with (VRAM_OOM for any allocation failure).
 */
static orch_err
admit(struct serve *sv, const Orch__Submit *m, struct job **ret, struct orch_errinfo *e)
{
	struct prompt_msg msgs[64];
	struct job *j;
	orch_err rv;

	*ret = NULL;
	if (m->n_messages > sizeof(msgs) / sizeof(msgs[0]))
		return orch_errf(e, ORCH_EINVAL, "more than 64 chat messages");
	if ((j = orch_calloc(1, sizeof(*j))) == NULL)
		return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
	j->sv = sv;
	for (size_t i = 0; i < m->n_messages; i++)
		msgs[i] = (struct prompt_msg){m->messages[i]->role, m->messages[i]->content};
	rv = prompt_encode(sv->f, sv->t, m->prompt, strlen(m->prompt), msgs, m->n_messages, &j->ids,
	                   e);
	if (rv != ORCH_OK) {
		tok_ids_fini(&j->ids);
		orch_free(j);
		if (rv == ORCH_ETEMPLATE || rv == ORCH_ETEMPLATE_RAISE)
			return orch_errf(e, ORCH_EINVAL, "%s", e->msg);
		return rv == ORCH_ENOMEM
		               ? orch_errf(e, ORCH_EVRAM, "out of memory admitting the job")
		               : rv;
	}
	j->sj.id = m->job_id;
	j->sj.prompt = j->ids.v;
	j->sj.n_prompt = (uint32_t)j->ids.n;
	j->sj.sp = samp_defaults();
	if (m->sampling != NULL) {
		const Orch__SamplingParams *p = m->sampling;
		j->sj.sp.temperature = p->temperature;
		j->sj.sp.top_k = p->top_k > 1000000 ? 1000000 : (int32_t)p->top_k;
		j->sj.sp.top_p = p->top_p;
		j->sj.sp.min_p = p->min_p;
		j->sj.sp.repeat_penalty = p->repeat_penalty;
		if (p->repeat_last_n)
			j->sj.sp.repeat_last_n = p->repeat_last_n;
	}
	j->sj.sp.seed =
	        m->sampling && m->sampling->has_seed ? m->sampling->seed : samp_random_seed();
	uint32_t room = j->sj.n_prompt < sv->n_ctx ? sv->n_ctx - j->sj.n_prompt : 0;
	j->sj.max_tokens = m->max_tokens == 0 || m->max_tokens > room ? room : m->max_tokens;
	j->sj.stops = (const char *const *)j->stops;
	j->sj.ops = &job_ops;
	j->sj.ctx = j;
	j->deadline_ms = m->deadline_unix_ms;
	j->next = sv->jobs;
	sv->jobs = j;
	sv->n_jobs++;
	for (size_t i = 0; i < m->n_stop; i++) {
		if ((j->stops[i] = orch_strndup(m->stop[i], strlen(m->stop[i]))) == NULL) {
			job_free(sv, j);
			return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
		}
		j->sj.n_stops++;
	}
	if ((rv = sched_submit(sv->s, &j->sj, e)) != ORCH_OK) {
		job_free(sv, j);
		return rv == ORCH_ENOMEM
		               ? orch_errf(e, ORCH_EVRAM, "out of memory admitting the job")
		               : rv;
	}
	*ret = j;
	return ORCH_OK;
}

static void
submit(struct serve *sv, const Orch__Submit *m)
{
	struct orch_errinfo e = {0};
	struct job *j = NULL;
	bool inject = sv->fault_job != 0 && m->job_id == sv->fault_job;

	if (sv->draining || stop_signal)
		return send_error(sv, m->job_id, ORCH_EQUEUE_FULL, "the worker is draining");
	if (find_job(sv, m->job_id) != NULL)
		return send_error(sv, m->job_id, ORCH_EINVAL, "job_id is already in use");
	if (sv->n_jobs >= sv->max_jobs)
		return send_error(sv, m->job_id, ORCH_EQUEUE_FULL, "the worker's queue is full");
	if (inject) /* test builds: allocation fault_n of this admission fails */
		alloc_fail_after(sv->fault_n, 1);
	orch_err rv = admit(sv, m, &j, &e);
	if (inject)
		alloc_fail_after(-1, 0);
	if (rv != ORCH_OK || j == NULL) {
		if (rv == ORCH_EVRAM)
			sv->degraded = true;
		orch_log(ORCH_LOG_WARNING, "job_refused", "job=%llu err=%s msg=\"%s\"",
		         (unsigned long long)m->job_id, orch_err_wire(rv), e.msg);
		return send_error(sv, m->job_id, rv, e.msg);
	}
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Started st = ORCH__STARTED__INIT;
	st.job_id = m->job_id;
	st.prompt_tokens = j->sj.n_prompt;
	st.seed = j->sj.sp.seed;
	env.body_case = ORCH__ENVELOPE__BODY_STARTED;
	env.started = &st;
	send_env(sv, &env);
	orch_log(ORCH_LOG_INFO, "job_start", "job=%llu correlation=%s prompt_tokens=%u",
	         (unsigned long long)m->job_id, m->correlation_id, j->sj.n_prompt);
}

/* Handle one message; false for Shutdown. */
static bool
handle(struct serve *sv, const Orch__Envelope *env)
{
	switch (env->body_case) {
	case ORCH__ENVELOPE__BODY_SUBMIT:
		submit(sv, env->submit);
		return true;
	case ORCH__ENVELOPE__BODY_CANCEL:
		sched_cancel(sv->s, env->cancel->job_id); /* unknown ids are ignored */
		return true;
	case ORCH__ENVELOPE__BODY_DRAIN:
		sv->draining = true;
		orch_log(ORCH_LOG_INFO, "drain", "jobs=%u", sv->n_jobs);
		return true;
	case ORCH__ENVELOPE__BODY_SHUTDOWN:
		return false;
	default:
		orch_log(ORCH_LOG_WARNING, "ipc_unexpected", "body=%s",
		         ipc_body_name(env->body_case));
		return true;
	}
}

static void
heartbeat(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Heartbeat hb = ORCH__HEARTBEAT__INIT;
	uint64_t needed;

	sched_usage(sv->s, &hb.slots_busy, &hb.kv_cells_used);
	hb.slots_total = sv->o->slots;
	hb.kv_cells_total = (uint64_t)sv->o->slots * sv->n_ctx;
	sv->ops->memory(sv->b, &needed, &hb.memory_used);
	hb.residency_ok = true; /* weights are mapped host memory on the cpu device */
	hb.decode_steps = sv->steps;
	hb.degraded = sv->degraded;
	hb.draining = sv->draining;
	env.body_case = ORCH__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	send_env(sv, &env);
	sv->degraded = false;
}

/* ---- the loop ---- */

static void
cancel_expired(struct serve *sv)
{
	uint64_t now = 0;

	for (struct job *j = sv->jobs; j != NULL; j = j->next) {
		if (j->deadline_ms == 0 || j->timed_out)
			continue;
		if (now == 0)
			now = unix_ms();
		if (now >= j->deadline_ms) {
			j->timed_out = true;
			sched_cancel(sv->s, j->sj.id);
		}
	}
}

static int
loop(struct serve *sv)
{
	uint64_t next_hb = now_ms(), last_rx = now_ms();
	bool shutdown = false;

	for (;;) {
		uint64_t now = now_ms();
		if (now >= next_hb) {
			heartbeat(sv);
			next_hb = now + sv->o->heartbeat_ms;
		}
		bool idle = sched_idle(sv->s);
		int wait = idle ? (int)(next_hb - now) : 0;
		for (;;) {
			Orch__Envelope *env = NULL;
			struct orch_errinfo e = {0};
			orch_err rv = ipc_recv(sv->ch, wait, &env, &e);
			if (rv == ORCH_EAGAIN)
				break;
			if (rv == ORCH_EPROTO) {
				orch_log(ORCH_LOG_WARNING, "ipc_drop", "msg=\"%s\"", e.msg);
				continue;
			}
			if (rv != ORCH_OK) {
				orch_log(ORCH_LOG_WARNING, "ipc_closed", "msg=\"%s\"", e.msg);
				shutdown = true;
				break;
			}
			last_rx = now_ms();
			wait = 0;
			shutdown |= !handle(sv, env);
			ipc_envelope_free(env);
		}
		if (stop_signal)
			shutdown = true;
		if (sv->o->supervisor_timeout_ms &&
		    now_ms() - last_rx > sv->o->supervisor_timeout_ms) {
			orch_log(ORCH_LOG_WARNING, "supervisor_gone", "silent_ms=%llu",
			         (unsigned long long)(now_ms() - last_rx));
			shutdown = true;
		}
		if (shutdown) {
			for (struct job *j = sv->jobs; j != NULL; j = j->next)
				sched_cancel(sv->s, j->sj.id);
			while (!sched_idle(sv->s)) {
				sched_step(sv->s);
				flush_step(sv, 0);
			}
			orch_log(ORCH_LOG_INFO, "shutdown", "steps=%llu",
			         (unsigned long long)sv->steps);
			return 0;
		}
		cancel_expired(sv);
		if (!sched_idle(sv->s)) {
			sched_step(sv->s);
			sv->steps++;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			flush_step(sv, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
		}
		if (sv->draining && sched_idle(sv->s)) {
			orch_log(ORCH_LOG_INFO, "drained", "steps=%llu",
			         (unsigned long long)sv->steps);
			return 0;
		}
	}
}

/* ---- start-up ---- */

/* LoadProgress at every multiple of 5 % the load crosses (so 0, 25, 50, 75, 100 always appear). */
static void
progress(void *ctx, uint64_t done, uint64_t total)
{
	struct serve *sv = ctx;
	int pct = total ? (int)(100 * done / total) : 100;

	for (int p = (sv->last_pct / 5 + 1) * 5; p <= pct; p += 5) {
		Orch__Envelope env = ORCH__ENVELOPE__INIT;
		Orch__LoadProgress lp = ORCH__LOAD_PROGRESS__INIT;
		lp.percent = (uint32_t)p;
		lp.bytes_done = done;
		lp.bytes_total = total;
		env.body_case = ORCH__ENVELOPE__BODY_LOAD_PROGRESS;
		env.load_progress = &lp;
		send_env(sv, &env);
		orch_log(ORCH_LOG_INFO, "model_load_progress", "percent=%d bytes=%llu", p,
		         (unsigned long long)done);
		sv->last_pct = p;
	}
}

static void
send_hello(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Hello h = ORCH__HELLO__INIT;
	char build[] = "orch-" PROJECT_VERSION;

	h.protocol_version = IPC_PROTOCOL_VERSION;
	h.build_id = build;
	h.worker_id = (char *)(uintptr_t)sv->o->worker_id;
	h.device = (char *)(uintptr_t)sv->o->device;
	h.model_path = (char *)(uintptr_t)sv->o->model;
	h.pid = (uint32_t)getpid();
	env.body_case = ORCH__ENVELOPE__BODY_HELLO;
	env.hello = &h;
	send_env(sv, &env);
}

static void
send_ready(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Ready r = ORCH__READY__INIT;
	char *kinds[N_TYPES];
	bool seen[N_TYPES] = {false};
	uint64_t needed;
	struct gguf_str name = {0};
	char name_buf[128] = "", arch[16], tk[8];

	for (size_t i = 0; i < gguf_tensor_count(sv->f); i++) {
		uint32_t ty = gguf_tensor_at(sv->f, i)->type;
		if (ty < N_TYPES && !seen[ty]) {
			seen[ty] = true;
			kinds[r.n_quant_kinds++] = (char *)(uintptr_t)ggml_type_name(ty);
		}
	}
	gguf_get_str(sv->f, "general.name", &name);
	snprintf(name_buf, sizeof(name_buf), "%.*s", (int)(name.len < 127 ? name.len : 127),
	         name.ptr ? name.ptr : "");
	snprintf(arch, sizeof(arch), "%s", model_arch_name(sv->m.hp.arch));
	snprintf(tk, sizeof(tk), "%s", tok_kind(sv->t) == TOK_SPM ? "spm" : "bpe");
	sv->ops->memory(sv->b, &needed, &r.memory_used);
	r.context_length = sv->n_ctx;
	r.slots = sv->o->slots;
	r.quant_kinds = kinds;
	r.tokenizer_kind = tk;
	r.vocab_size = sv->m.hp.n_vocab;
	r.architecture = arch;
	r.model_name = name_buf;
	env.body_case = ORCH__ENVELOPE__BODY_READY;
	env.ready = &r;
	send_env(sv, &env);
}

static orch_err
load(struct serve *sv, struct orch_errinfo *e)
{
	orch_err rv;

	if ((rv = be_for_device(sv->o->device, &sv->ops, e)) != ORCH_OK ||
	    (rv = gguf_open(sv->o->model, &sv->f, e)) != ORCH_OK ||
	    (rv = model_load(sv->f, &sv->m, e)) != ORCH_OK ||
	    (rv = tok_load_gguf(sv->f, &sv->t, e)) != ORCH_OK)
		return rv;
	if (tok_n_vocab(sv->t) != sv->m.hp.n_vocab)
		return orch_errf(e, ORCH_EMODEL_LOAD,
		                 "%s: the vocabulary has %u tokens, the model %u", sv->o->model,
		                 tok_n_vocab(sv->t), sv->m.hp.n_vocab);
	sv->n_ctx = sv->o->n_ctx ? sv->o->n_ctx
	                         : (sv->m.hp.n_ctx_train < 4096 ? sv->m.hp.n_ctx_train : 4096);
	struct be_config cfg = {sv->o->slots, sv->n_ctx, false, sv->o->threads,
	                        sv->o->chunk + sv->o->slots};
	struct sched_config sc = {sv->o->slots, sv->n_ctx, sv->o->chunk};
	if ((rv = sv->ops->load(&sv->m, &cfg, progress, sv, &sv->b, e)) != ORCH_OK)
		return rv;
	if (sched_new(sv->ops, sv->b, sv->t, sv->m.hp.n_vocab, &sc, &sv->s) != ORCH_OK)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	sv->max_jobs = 4 * sv->o->slots + 16;
	sv->cap_entries = 2 * sv->max_jobs;
	sv->entries = orch_calloc(sv->cap_entries, sizeof(*sv->entries));
	sv->entry_ptrs = orch_calloc(sv->cap_entries, sizeof(*sv->entry_ptrs));
	sv->text_off = orch_calloc(sv->cap_entries, sizeof(*sv->text_off));
	sv->endings = orch_calloc(sv->max_jobs, sizeof(*sv->endings));
	if (!sv->entries || !sv->entry_ptrs || !sv->text_off || !sv->endings)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	return ORCH_OK;
}

static void
teardown(struct serve *sv)
{
	while (sv->jobs != NULL)
		job_free(sv, sv->jobs);
	sched_free(sv->s);
	if (sv->b != NULL)
		sv->ops->free(sv->b);
	tok_free(sv->t);
	model_free(&sv->m);
	gguf_close(sv->f);
	orch_free(sv->entries);
	orch_free(sv->entry_ptrs);
	orch_free(sv->text_off);
	sbuf_fini(&sv->text);
	orch_free(sv->endings);
	ipc_close(sv->ch);
}

int
serve_run(const struct serve_opts *o)
{
	struct serve sv = {.o = o, .last_pct = -5}; /* -5: 0 % is the first mark */
	struct orch_errinfo e = {0};
	struct sigaction sa = {0};
	int rc = 1;

	const char *fault = getenv("ORCH_FAULT_ADMIT");
	if (fault != NULL) {
		unsigned long long job = 0;
		if (sscanf(fault, "%llu:%ld", &job, &sv.fault_n) == 2 && sv.fault_n >= 0)
			sv.fault_job = job;
	}
	sa.sa_handler = on_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* the supervisor's death ends us */
	if (getppid() == 1)
		stop_signal = 1;
	if (ipc_open(o->endpoint, IPC_DIAL, &sv.ch, &e) != ORCH_OK) {
		orch_log_err(e.code, &e, "ipc_open_failed", "endpoint=%s", o->endpoint);
		return 1;
	}
	send_hello(&sv);
	orch_log(ORCH_LOG_INFO, "model_load_start", "model=%s device=%s", o->model, o->device);
	orch_err rv = load(&sv, &e);
	if (rv != ORCH_OK) {
		orch_log_err(rv, &e, "model_load_failed", "model=%s", o->model);
		send_error(&sv, 0, rv == ORCH_ENOMEM ? ORCH_EINSUFFICIENT_VRAM : rv, e.msg);
	} else {
		if (sv.last_pct < 100)
			progress(&sv, 1, 1);
		orch_log(ORCH_LOG_INFO, "model_load_complete", "model=%s ctx=%u slots=%u", o->model,
		         sv.n_ctx, o->slots);
		send_ready(&sv);
		rc = loop(&sv);
	}
	teardown(&sv);
	return rc;
}
