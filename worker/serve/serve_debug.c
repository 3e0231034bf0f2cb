/*
 * serve_debug.c - the serving worker's debug stream (docs/protocol.md,
 * "Debug stream"): its log lines as "log" records, one "step" record per
 * scheduler step, and state dumps on request.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "serve_int.h"

static const char *const level_names[] = {"emerg",   "alert",  "crit", "err",
                                          "warning", "notice", "info", "debug"};

static void
log_sink(void *ctx, enum orch_log_level level, const char *line, size_t n)
{
	struct serve *sv = ctx;
	char buf[2200];
	int k = snprintf(buf, sizeof(buf), "level=%s %.*s", level_names[(unsigned)level & 7u],
	                 (int)(n < 2048 ? n : 2048), line);

	if (k > 0)
		ipc_debug_publish(sv->dbg, "log", buf, (size_t)k < sizeof(buf) ? (size_t)k : 0);
}

orch_err
serve_debug_open(struct serve *sv, struct orch_errinfo *e)
{
	orch_err rv = ipc_debug_open(sv->o->debug_endpoint, &sv->dbg, e);

	if (rv == ORCH_OK)
		orch_log_set_sink(log_sink, sv);
	return rv;
}

void
serve_debug_close(struct serve *sv)
{
	if (sv->dbg == NULL)
		return;
	orch_log_set_sink(NULL, NULL);
	ipc_debug_close(sv->dbg);
	sv->dbg = NULL;
}

void
serve_debug_step(struct serve *sv, double step_ms, double flush_ms)
{
	struct sched_step_info st;
	uint32_t busy;
	uint64_t kv;

	sched_last_step(sv->eng->s, &st);
	sched_usage(sv->eng->s, &busy, &kv);
	ipc_debug_publishf(sv->dbg, "step",
	                   "step=%llu seqs=%u decode=%u prefill_tokens=%u tokens_out=%u "
	                   "forward_ms=%.3f sample_ms=%.3f step_ms=%.3f send_ms=%.3f jobs=%u "
	                   "slots_busy=%u kv_cells=%llu",
	                   (unsigned long long)sv->steps, st.seqs, st.decode_seqs,
	                   st.prefill_tokens, sv->last_entries, st.forward_ms, st.sample_ms,
	                   step_ms, flush_ms, sv->n_jobs, busy, (unsigned long long)kv);
}

/* The state dump: a "worker" line, then one "job" line per live job. */
static void
dump(struct serve *sv, struct sbuf *b)
{
	Orch__Heartbeat hb = ORCH__HEARTBEAT__INIT;
	struct be_memory mem = {0};
	uint64_t now = orch_mono_ms();

	serve_status(sv, &hb);
	sv->eng->ops->memory(sv->eng->b, &mem);
	sbuf_printf(b,
	            "worker id=%s pid=%d device=%s model=%s state=%s uptime_ms=%llu steps=%llu "
	            "jobs=%u max_jobs=%u slots_busy=%u slots_total=%u kv_cells_used=%llu "
	            "kv_cells_total=%llu context=%u memory_used=%llu memory_needed=%llu "
	            "residency_ok=%s degraded=%s\n",
	            sv->o->worker_id, (int)getpid(), sv->o->device, sv->o->model,
	            sv->draining ? "draining" : "serving",
	            (unsigned long long)(now - sv->started_ms), (unsigned long long)sv->steps,
	            sv->n_jobs, sv->max_jobs, hb.slots_busy, hb.slots_total,
	            (unsigned long long)hb.kv_cells_used, (unsigned long long)hb.kv_cells_total,
	            sv->eng->n_ctx, (unsigned long long)mem.used, (unsigned long long)mem.needed,
	            hb.residency_ok ? "yes" : "no", sv->degraded ? "yes" : "no");
	for (const struct serve_job *j = sv->jobs; j != NULL; j = j->next) {
		const struct sched_job *sj = &j->sj;
		sbuf_printf(b,
		            "job id=%llu correlation=%s state=%s slot=%d prompt_tokens=%u fed=%u "
		            "tokens_out=%u max_tokens=%u age_ms=%llu\n",
		            (unsigned long long)sj->id, j->correlation[0] ? j->correlation : "-",
		            sched_job_state(sj),
		            strcmp(sched_job_state(sj), "waiting") == 0 ? -1 : (int)sj->slot,
		            sj->n_prompt, sj->fed, sj->tokens_out, sj->max_tokens,
		            (unsigned long long)(now - j->submitted_ms));
	}
}

void
serve_debug_poll(struct serve *sv)
{
	char req[64];

	while (ipc_debug_request(sv->dbg, req, sizeof(req))) {
		struct orch_errinfo e = {0};
		struct sbuf b = {0};
		if (strcmp(req, "dump") == 0)
			dump(sv, &b);
		else
			sbuf_printf(&b, "error unknown request '%s'; the one request is 'dump'\n",
			            req);
		if (sbuf_err(&b) != ORCH_OK) {
			sbuf_clear(&b);
			sbuf_puts(&b, "error out of memory\n");
		}
		if (ipc_debug_reply(sv->dbg, b.p ? b.p : "", b.n, &e) != ORCH_OK)
			orch_log(ORCH_LOG_DEBUG, "debug_reply_failed", "msg=\"%s\"", e.msg);
		sbuf_fini(&b);
		orch_log(ORCH_LOG_DEBUG, "debug_dump", "request=%s", req);
	}
}
