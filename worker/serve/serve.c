/*
 * serve.c - the serving worker's loop.
 *
 * One thread drives everything: it drains the channel (Submit, Cancel,
 * Drain, Shutdown), runs one scheduler step, sends that step's TokenBatch
 * and then the terminal events of the jobs that ended in it, and sends a
 * Heartbeat when one is due. While idle it waits on the channel until the
 * next heartbeat. A Cancel therefore takes effect at the next step.
 *
 * SIGTERM (or Shutdown) winds down: every job is cancelled and ends with
 * its terminal event. The supervisor's death is different: nobody can
 * receive those events, so the parent-death signal (SIGUSR2) exits at once
 * from the handler, dropping the jobs; the kernel frees the memory, the
 * device context and the sockets.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "engine/kv_blocks.h"
#include "serve_int.h"
#include "text/prompt.h"

#define SEND_TIMEOUT_MS 5000

static volatile sig_atomic_t stop_signal;

static void
on_sigterm(int sig)
{
	(void)sig;
	stop_signal = 1;
}

/* The supervisor died: one log line (async-signal-safe write) and exit now. */
static void
on_orphaned(int sig)
{
	static const char line[] = "<4>event=supervisor_died action=exit jobs=dropped\n";
	ssize_t wr = write(STDERR_FILENO, line, sizeof(line) - 1);

	(void)sig;
	(void)wr;
	_exit(1);
}

void
serve_send(struct serve *sv, Orch__Envelope *env)
{
	struct orch_errinfo e = {0};

	if (ipc_send(sv->ch, env, SEND_TIMEOUT_MS, &e) != ORCH_OK)
		orch_log(ORCH_LOG_WARNING, "ipc_send_failed", "body=%s msg=\"%s\"",
		         ipc_body_name(env->body_case), e.msg);
}

void
serve_send_error(struct serve *sv, uint64_t job, orch_err code, const char *msg)
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
	serve_send(sv, &env);
}

/* ---- scheduler callbacks: collect the step's output ---- */

static void
on_token(void *ctx, struct sched_job *sj, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct serve_job *j = ctx;
	struct serve *sv = j->sv;
	const struct harmony_tag *tag = n > 0 ? sched_job_tag(sj) : NULL;
	struct serve_mark mark = serve_entries_mark(sv);
	struct entry_text *o;
	Orch__TokenEntry *e = serve_entry(sv, sj->id, text, n, &o);

	if (e != NULL && tag != NULL) {
		o->channel = sv->text.n;
		sbuf_puts(&sv->text, tag->channel);
		sbuf_putc(&sv->text, '\0');
		o->recipient = sv->text.n;
		sbuf_puts(&sv->text, tag->recipient);
		sbuf_putc(&sv->text, '\0');
	}
	if (e == NULL || !serve_lp_entry(sv, j, e, o, index, id) || sv->text.oom) {
		/* this text is lost, so the job cannot go on; the others' stay */
		serve_entries_undo(sv, mark);
		sched_cancel(sv->eng->s, sj->id);
		return;
	}
	e->index = index;
	e->token_id = id;
	if (tag != NULL) {
		e->in_message = true;
		e->message = tag->message;
	}
}

static void
on_end(void *ctx, struct sched_job *sj, enum orch_finish why, orch_err err, const char *msg)
{
	struct serve_job *j = ctx;
	struct serve *sv = j->sv;
	struct ending *e = &sv->endings[sv->n_endings++];

	(void)sj;
	if (err == ORCH_EVRAM)
		sv->degraded = true;
	if (err == ORCH_ECUDA)
		sv->cuda_error = true;
	e->j = j;
	e->why = why;
	e->err = err;
	snprintf(e->msg, sizeof(e->msg), "%s", msg ? msg : "");
}

static const struct sched_job_ops job_ops = {
        .on_token = on_token, .on_logits = NULL, .on_end = on_end};
/* a job with logprobs: the raw logits too (it samples on the host) */
static const struct sched_job_ops job_ops_lp = {.on_token = on_token,
                                                .on_logits = serve_lp_logits,
                                                .on_end = on_end,
                                                .on_prompt = serve_echo_logits};

static struct serve_job *
find_job(struct serve *sv, uint64_t id)
{
	for (struct serve_job *j = sv->jobs; j != NULL; j = j->next)
		if (j->sj.id == id)
			return j;
	return NULL;
}

void
serve_job_free(struct serve *sv, struct serve_job *j)
{
	for (struct serve_job **p = &sv->jobs; *p != NULL; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			sv->n_jobs--;
			break;
		}
	}
	for (uint32_t i = 0; i < j->sj.n_stops; i++)
		orch_free(j->stops[i]);
	orch_free(j->cache_salt);
	sbuf_fini(&j->echo_text);
	orch_free(j->bias);
	grammars_end(&j->gj);
	tok_ids_fini(&j->ids);
	tok_ids_fini(&j->script);
	orch_free(j);
}

/* Send the step's TokenBatch, then its terminal events; free the ended jobs. */
static void
flush_step(struct serve *sv, uint64_t sampled_ns)
{
	serve_entries_send(sv, sampled_ns);
	for (uint32_t i = 0; i < sv->n_endings; i++) {
		struct ending *e = &sv->endings[i];
		struct sched_job *sj = &e->j->sj;
		if (e->why == ORCH_FINISH_CANCELLED) {
			serve_send_error(sv, sj->id,
			                 e->j->timed_out ? ORCH_ETIMEOUT : ORCH_ECANCELLED,
			                 e->j->timed_out ? "deadline passed" : "cancelled");
		} else if (e->why == ORCH_FINISH_ERROR) {
			serve_send_error(sv, sj->id, e->err, e->msg);
		} else {
			Orch__Envelope env = ORCH__ENVELOPE__INIT;
			Orch__End end = ORCH__END__INIT;
			end.job_id = sj->id;
			end.tokens_out = sj->tokens_out;
			end.prompt_tokens = sj->n_prompt;
			end.finish_reason = (Orch__FinishReason)orch_finish_proto(e->why);
			end.prefill_ms = sj->prefill_ms;
			end.decode_ms = sj->decode_ms;
			end.seed = sj->sp.seed;
			end.cached_tokens = sj->cached_tokens;
			env.body_case = ORCH__ENVELOPE__BODY_END;
			env.end = &end;
			serve_send(sv, &env);
		}
		serve_job_free(sv, e->j);
	}
	sv->n_endings = 0;
}

/* ---- incoming messages ---- */

/* @m's prompt, or its chat rendered by the template, as ids into @ids. */
static orch_err
encode(struct serve *sv, const Orch__Submit *m, struct tok_ids *ids, struct orch_errinfo *e)
{
	uint32_t n_vocab = sv->eng->m.hp.n_vocab;
	orch_err rv;

	if (m->n_prompt_tokens > 0) { /* token ids: as they are */
		for (size_t i = 0; i < m->n_prompt_tokens; i++) {
			if (m->prompt_tokens[i] < 0 || (uint32_t)m->prompt_tokens[i] >= n_vocab)
				return orch_errf(
				        e, ORCH_EINVAL,
				        "prompt: token %d is not in the model's vocabulary "
				        "(ids 0 to %u)",
				        m->prompt_tokens[i], n_vocab - 1);
			if (tok_ids_push(ids, m->prompt_tokens[i]) != ORCH_OK)
				return orch_errf(e, ORCH_ENOMEM, "out of memory");
		}
		return ORCH_OK;
	}
	struct prompt_msg *msgs = serve_prompt_msgs(m->messages, m->n_messages);
	if (msgs == NULL)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	struct prompt_chat chat = {msgs, m->n_messages, m->template_vars_json};
	rv = prompt_encode(&sv->eng->mt, m->prompt, strlen(m->prompt), m->literal_prompt,
	                   m->chat || m->n_messages > 0 ? &chat : NULL, ids, e);
	orch_free(msgs);
	return rv;
}

/*
 * The one max_tokens rule (docs/http-api.md): a max_tokens the client gave
 * must fit beside the prompt of @n_prompt tokens, else CONTEXT_LENGTH_EXCEEDED
 * with both numbers (no job number: the message reaches the client); a
 * default one is cut to the room there is (admit).
 */
static orch_err
room_ok(struct serve *sv, const Orch__Submit *m, uint32_t n_prompt, struct orch_errinfo *e)
{
	uint32_t n_ctx = sv->eng->n_ctx;

	/* a prompt over the context alone: sched_submit says so, without max_tokens */
	if (!m->max_tokens_strict || n_prompt > n_ctx ||
	    (uint64_t)n_prompt + m->max_tokens <= n_ctx)
		return ORCH_OK;
	return orch_errf(e, ORCH_ECONTEXT,
	                 "a prompt of %u tokens plus max_tokens %u exceeds the context of %u "
	                 "tokens",
	                 n_prompt, m->max_tokens, n_ctx);
}

/* @m's stop strings and cache salt into @j, which owns the copies; false: out of memory. */
static bool
copy_strings(struct serve_job *j, const Orch__Submit *m)
{
	for (size_t i = 0; i < m->n_stop; i++) {
		if ((j->stops[i] = orch_strndup(m->stop[i], strlen(m->stop[i]))) == NULL)
			return false;
		j->sj.n_stops++;
	}
	if (m->cache_salt != NULL && m->cache_salt[0] != '\0') {
		size_t n = strlen(m->cache_salt);
		if ((j->cache_salt = orch_strndup(m->cache_salt, n)) == NULL)
			return false;
		j->sj.cache_salt = j->cache_salt;
		j->sj.cache_salt_len = (uint32_t)n;
	}
	return true;
}

/*
 * @p's logit_bias into @j's sampling, each token checked against the
 * vocabulary; with ignore_eos, the end-of-generation tokens banned after it
 * (a ban is final: no bias lifts it), unless @m has a grammar, whose
 * completion needs them.
 */
static orch_err
copy_bias(struct serve *sv, struct serve_job *j, const Orch__Submit *m, struct orch_errinfo *e)
{
	const Orch__SamplingParams *p = m->sampling;
	uint32_t n_vocab = sv->eng->m.hp.n_vocab;
	const int32_t *eog = NULL;
	size_t n_eog = 0;

	if (p == NULL)
		return ORCH_OK;
	if (p->ignore_eos && m->grammar[0] == '\0')
		n_eog = tok_eog(sv->eng->mt.tok, &eog);
	if (p->n_bias_tokens + n_eog == 0)
		return ORCH_OK;
	if (p->n_bias_values != p->n_bias_tokens || p->n_bias_tokens > ORCH_MAX_LOGIT_BIAS)
		return orch_errf(e, ORCH_EINVAL, "logit_bias: %zu tokens, %zu values (at most %u)",
		                 p->n_bias_tokens, p->n_bias_values, ORCH_MAX_LOGIT_BIAS);
	if ((j->bias = orch_calloc(p->n_bias_tokens + n_eog, sizeof(*j->bias))) == NULL)
		return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
	for (size_t i = 0; i < p->n_bias_tokens; i++) {
		if (p->bias_tokens[i] < 0 || (uint32_t)p->bias_tokens[i] >= n_vocab)
			return orch_errf(e, ORCH_EINVAL,
			                 "logit_bias: token %d is not in the model's vocabulary "
			                 "(ids 0 to %u)",
			                 p->bias_tokens[i], n_vocab - 1);
		j->bias[i] = (struct samp_bias){p->bias_tokens[i], p->bias_values[i]};
	}
	for (size_t i = 0; i < n_eog; i++)
		j->bias[p->n_bias_tokens + i] = (struct samp_bias){eog[i], -100.0f};
	j->sj.sp.bias = j->bias;
	j->sj.sp.n_bias = (uint32_t)(p->n_bias_tokens + n_eog);
	return ORCH_OK;
}

/*
 * Admit @m as a new job in *@ret: tokenize, copy its parameters, hand it to
 * the scheduler. On failure everything it allocated is freed, and the code
 * is the wire one to answer with (VRAM_OOM for any allocation failure).
 */
static orch_err
admit(struct serve *sv, const Orch__Submit *m, struct serve_job **ret, struct orch_errinfo *e)
{
	struct serve_job *j;
	orch_err rv;

	*ret = NULL;
	if (m->n_messages > ORCH_MAX_MESSAGES)
		return orch_errf(e, ORCH_EINVAL, "more than %u chat messages", ORCH_MAX_MESSAGES);
	if ((j = orch_calloc(1, sizeof(*j))) == NULL)
		return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
	j->sv = sv;
	rv = encode(sv, m, &j->ids, e);
	if (rv == ORCH_OK)
		rv = room_ok(sv, m, (uint32_t)j->ids.n, e);
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
	if (sv->eng->mt.harmony) {
		harmony_init(&j->hm, sv->eng->mt.tok, &sv->eng->mt.hv);
		j->sj.hm = &j->hm;
		j->sj.hm_raw = !m->chat && m->n_messages == 0;
	} else if (sv->eng->mt.think && (m->chat || m->n_messages > 0)) {
		j->sj.tv = &sv->eng->mt.tv; /* a chat's reasoning, tagged apart from its answer */
	}
	j->sj.keep_space = !m->chat && m->n_messages == 0; /* a completion follows its prompt */
	serve_script(sv, j);
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
		j->sj.sp.presence_penalty = p->presence_penalty;
		j->sj.sp.frequency_penalty = p->frequency_penalty;
	}
	j->sj.sp.seed =
	        m->sampling && m->sampling->has_seed ? m->sampling->seed : samp_random_seed();
	uint32_t room = j->sj.n_prompt < sv->eng->n_ctx ? sv->eng->n_ctx - j->sj.n_prompt : 0;
	j->sj.max_tokens = m->max_tokens == 0 || m->max_tokens > room ? room : m->max_tokens;
	if (m->prompt_only)
		j->sj.max_tokens = 0;
	j->sj.stops = (const char *const *)j->stops;
	j->logprobs = m->logprobs;
	j->n_top = m->logprobs ? m->top_logprobs : 0; /* at most 20 (ipc_check) */
	j->sj.ops = j->logprobs ? &job_ops_lp : &job_ops;
	j->echo = m->echo;
	j->sj.prompt_logits = m->echo && m->logprobs;
	j->sj.ctx = j;
	j->deadline_ms = m->deadline_unix_ms;
	j->submitted_ms = orch_mono_ms();
	snprintf(j->correlation, sizeof(j->correlation), "%s", m->correlation_id);
	j->next = sv->jobs;
	sv->jobs = j;
	sv->n_jobs++;
	if (!copy_strings(j, m)) {
		serve_job_free(sv, j);
		return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
	}
	if ((rv = copy_bias(sv, j, m, e)) != ORCH_OK ||
	    (rv = serve_grammar(sv, j, m, e)) != ORCH_OK) {
		serve_job_free(sv, j);
		return rv;
	}
	struct serve_mark mark = serve_entries_mark(sv);
	if (j->echo && !serve_echo_start(sv, j)) {
		serve_job_free(sv, j);
		return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
	}
	if ((rv = sched_submit(sv->eng->s, &j->sj, e)) != ORCH_OK) {
		serve_entries_undo(sv, mark);
		serve_job_free(sv, j);
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
	struct serve_job *j = NULL;
	bool inject = sv->fault_job != 0 && m->job_id == sv->fault_job;

	if (sv->draining || stop_signal)
		return serve_send_error(sv, m->job_id, ORCH_EQUEUE_FULL, "the worker is draining");
	if (find_job(sv, m->job_id) != NULL)
		return serve_send_error(sv, m->job_id, ORCH_EINVAL, "job_id is already in use");
	if (sv->n_jobs >= sv->max_jobs)
		return serve_send_error(sv, m->job_id, ORCH_EQUEUE_FULL,
		                        "the worker's queue is full");
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
		return serve_send_error(sv, m->job_id, rv, e.msg);
	}
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Started st = ORCH__STARTED__INIT;
	st.job_id = m->job_id;
	st.prompt_tokens = j->sj.n_prompt;
	st.seed = j->sj.sp.seed;
	env.body_case = ORCH__ENVELOPE__BODY_STARTED;
	env.started = &st;
	serve_send(sv, &env);
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
	case ORCH__ENVELOPE__BODY_TOKENIZE:
		serve_tokenize(sv, env->tokenize);
		return true;
	case ORCH__ENVELOPE__BODY_CANCEL:
		sched_cancel(sv->eng->s, env->cancel->job_id); /* unknown ids are ignored */
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

void
serve_status(struct serve *sv, Orch__Heartbeat *hb)
{
	struct be_memory mem;

	struct kvb_stats kv;

	sched_usage(sv->eng->s, &hb->slots_busy, &hb->kv_cells_used);
	hb->slots_total = sv->o->slots;
	hb->kv_cells_total = (uint64_t)sv->o->slots * sv->eng->n_ctx;
	if (sched_kv_stats(sv->eng->s, &kv)) {
		hb->kv_cells_total = (uint64_t)kv.total * sv->eng->kv_block_tokens;
		hb->kv_cells_used = (uint64_t)kv.used * sv->eng->kv_block_tokens; /* shared once */
		hb->kv_blocks_total = kv.total;
		hb->kv_blocks_used = kv.used;
		hb->kv_blocks_cached = kv.cached;
		hb->prefix_query_tokens = kv.query_tokens;
		hb->prefix_hit_tokens = kv.hit_tokens;
	}
	hb->preemptions = sched_preemptions(sv->eng->s);
	sv->eng->ops->memory(sv->eng->b, &mem);
	hb->memory_used = mem.used;
	hb->residency_ok = sv->resident;
	hb->residency_error = sv->resident ? (char *)(uintptr_t) "" : sv->residency_error;
	hb->decode_steps = sv->steps;
	hb->degraded = sv->degraded;
	hb->draining = sv->draining;
}

static void
heartbeat(struct serve *sv)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Heartbeat hb = ORCH__HEARTBEAT__INIT;

	serve_status(sv, &hb);
	env.body_case = ORCH__ENVELOPE__BODY_HEARTBEAT;
	env.heartbeat = &hb;
	serve_send(sv, &env);
	sv->degraded = false;
}

/* ---- the loop ---- */

static void
cancel_expired(struct serve *sv)
{
	uint64_t now = 0;

	for (struct serve_job *j = sv->jobs; j != NULL; j = j->next) {
		if (j->deadline_ms == 0 || j->timed_out)
			continue;
		if (now == 0)
			now = orch_unix_ms();
		if (now >= j->deadline_ms) {
			j->timed_out = true;
			sched_cancel(sv->eng->s, j->sj.id);
		}
	}
}

/*
 * Residency: every --residency-check-s seconds (and after a CUDA error) the
 * backend checks that everything it allocated is still device memory. A
 * failed check marks the worker unhealthy in its heartbeats; a lost CUDA
 * context makes it exit (status 1) so that orchd restarts it.
 */
static bool
check_device(struct serve *sv, uint64_t now)
{
	struct orch_errinfo e = {0};
	orch_err rv = ORCH_OK;

	if (sv->eng->ops->check == NULL && !serve_fault_residency_armed())
		return true;
	if (!sv->cuda_error && now < sv->next_check_ms)
		return true;
	sv->next_check_ms = now + (uint64_t)sv->o->residency_s * 1000;
	if (sv->eng->ops->check != NULL)
		rv = sv->eng->ops->check(sv->eng->b, &e);
	if (rv == ORCH_OK && serve_fault_residency()) /* test builds: ORCH_FAULT_RESIDENCY */
		rv = orch_errf(&e, ORCH_EVRAM, "injected residency fault (ORCH_FAULT_RESIDENCY)");
	if (rv == ORCH_ECUDA) {
		orch_log(ORCH_LOG_ERR, "cuda_lost", "msg=\"%s\"", e.msg);
		return false;
	}
	sv->cuda_error = false;
	if ((rv == ORCH_OK) != sv->resident)
		orch_log(rv == ORCH_OK ? ORCH_LOG_INFO : ORCH_LOG_ERR, "residency",
		         "resident=%s msg=\"%s\"", rv == ORCH_OK ? "true" : "false", e.msg);
	sv->resident = rv == ORCH_OK;
	snprintf(sv->residency_error, sizeof(sv->residency_error), "%.255s",
	         rv == ORCH_OK ? "" : e.msg);
	return true;
}

/* Every message waiting (up to @wait ms for the first); false when the supervisor is gone or said
 * so. */
static bool
receive(struct serve *sv, int wait, uint64_t *last_rx)
{
	bool go_on = true;

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
			return false;
		}
		*last_rx = orch_mono_ms();
		wait = 0;
		go_on &= handle(sv, env);
		ipc_envelope_free(env);
	}
	return go_on;
}

/* Shutdown: cancel every job and step until each has ended (and said so). */
static void
wind_down(struct serve *sv)
{
	for (struct serve_job *j = sv->jobs; j != NULL; j = j->next)
		sched_cancel(sv->eng->s, j->sj.id);
	while (!sched_idle(sv->eng->s)) {
		sched_step(sv->eng->s);
		flush_step(sv, 0);
	}
	orch_log(ORCH_LOG_INFO, "shutdown", "steps=%llu", (unsigned long long)sv->steps);
}

static int
loop(struct serve *sv)
{
	uint64_t next_hb = orch_mono_ms(), last_rx = orch_mono_ms();
	bool shutdown = false;

	for (;;) {
		uint64_t now = orch_mono_ms();
		if (!check_device(sv, now)) {
			flush_step(sv, 0);
			return 1;
		}
		if (now >= next_hb) {
			heartbeat(sv);
			next_hb = now + sv->o->heartbeat_ms;
		}
		bool idle = sched_idle(sv->eng->s);
		int wait = idle ? (int)(next_hb - now) : 0;
		if (sv->dbg != NULL) { /* wait on both the channel and state-dump requests */
			if (wait > 0) {
				struct pollfd p[2] = {{ipc_recv_fd(sv->ch), POLLIN, 0},
				                      {ipc_debug_request_fd(sv->dbg), POLLIN, 0}};
				poll(p, 2, wait);
				wait = 0;
			}
			serve_debug_poll(sv);
		}
		shutdown |= !receive(sv, wait, &last_rx);
		if (stop_signal)
			shutdown = true;
		if (sv->o->supervisor_timeout_ms &&
		    orch_mono_ms() - last_rx > sv->o->supervisor_timeout_ms) {
			orch_log(ORCH_LOG_WARNING, "supervisor_gone", "silent_ms=%llu",
			         (unsigned long long)(orch_mono_ms() - last_rx));
			shutdown = true;
		}
		if (shutdown) {
			wind_down(sv);
			return 0;
		}
		cancel_expired(sv);
		if (sv->n_endings > 0) /* jobs cancelled before their first step end now */
			flush_step(sv, 0);
		if (!sched_idle(sv->eng->s)) {
			uint64_t t0 = orch_mono_ns();
			sched_step(sv->eng->s);
			sv->steps++;
			uint64_t t1 = orch_mono_ns();
			flush_step(sv, t1);
			if (sv->dbg != NULL)
				serve_debug_step(sv, (double)(t1 - t0) / 1e6,
				                 (double)(orch_mono_ns() - t1) / 1e6);
		}
		if (sv->draining && sched_idle(sv->eng->s)) {
			orch_log(ORCH_LOG_INFO, "drained", "steps=%llu",
			         (unsigned long long)sv->steps);
			return 0;
		}
	}
}

int
serve_run(const struct serve_opts *o)
{
	struct serve sv = {.o = o,
	                   .last_pct = -5, /* -5: 0 % is the first mark */
	                   .resident = true,
	                   .progress_log_ms = orch_mono_ms()};
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
	sa.sa_handler = on_orphaned;
	sigaction(SIGUSR2, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGUSR2); /* the supervisor's death ends us at once */
	if (getppid() == 1)               /* it died before we asked */
		on_orphaned(SIGUSR2);
	if (ipc_open(o->endpoint, IPC_DIAL, &sv.ch, &e) != ORCH_OK) {
		orch_log_err(e.code, &e, "ipc_open_failed", "endpoint=%s", o->endpoint);
		return 1;
	}
	sv.started_ms = orch_mono_ms();
	serve_ident_start(&sv);
	serve_hello(&sv);
	orch_err rv = ORCH_OK;
	/* a busy endpoint (a left-over worker on its way out): a few tries, then
	 * a retriable error, so the supervisor starts us again later */
	for (int try = 0; o->debug_endpoint != NULL && try < 20; try++) {
		if ((rv = serve_debug_open(&sv, &e)) != ORCH_EAGAIN)
			break;
		nanosleep(&(struct timespec){0, 100000000}, NULL);
	}
	if (o->debug_endpoint != NULL && rv != ORCH_OK) {
		orch_log_err(rv, &e, "debug_open_failed", "endpoint=%s", o->debug_endpoint);
		serve_send_error(&sv, 0, rv, e.msg);
		serve_teardown(&sv);
		return 1;
	}
	orch_log(ORCH_LOG_INFO, "model_load_start", "model=%s device=%s", o->model, o->device);
	rv = serve_load(&sv, &e);
	if (rv != ORCH_OK) {
		orch_log_err(rv, &e, "model_load_failed", "model=%s", o->model);
		serve_send_error(&sv, 0, rv == ORCH_ENOMEM ? ORCH_EINSUFFICIENT_VRAM : rv, e.msg);
	} else {
		if (sv.last_pct < 100)
			serve_progress(&sv, 1, 1);
		serve_ident_finish(&sv);
		orch_log(ORCH_LOG_INFO, "model_load_complete", "model=%s ctx=%u slots=%u", o->model,
		         sv.eng->n_ctx, o->slots);
		serve_ready(&sv);
		rc = loop(&sv);
	}
	serve_teardown(&sv);
	return rc;
}
