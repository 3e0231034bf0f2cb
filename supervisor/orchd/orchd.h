#pragma once
/*
 * orchd.h - internal to orchd: the daemon's state and what its modules
 * share (DESIGN.md §5). One thread, one libevent loop; nothing here is
 * locked.
 *
 *   main.c      flags, config, start-up, signals, shutdown
 *   models.c    the registry: models, their state, queue and placement
 *   workers.c   spawn, handshake, monitor, restart with backoff, drain
 *   jobs.c      a job's events, its streams, and dispatch of worker messages
 *   http.c      the listener, routing, JSON errors, SSE streams
 *   api_native.c, api_openai.c, admin.c, metrics.c, notify.c
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "base/limits.h"
#include "base/sbuf.h"
#include "config.h"
#include "devices.h"
#include "ipc/ipc.h"
#include "metrics.h"

struct worker;
struct job;

enum model_state { MODEL_STOPPED, MODEL_LOADING, MODEL_READY, MODEL_FAILED, MODEL_UNLOADING };

struct model {
	struct orchd *d;
	struct cfg_model cfg;
	enum model_state state;
	struct worker **workers; /* [cfg.replicas] */
	uint32_t n_workers;
	struct job *queue_head, *queue_tail; /* waiting for a worker */
	uint32_t queued;
	uint64_t last_used_ms;
	char error[512];     /* why it failed */
	orch_err error_code; /* ORCH_OK: a failed load (MODEL_LOAD_FAILED) */
	uint64_t need_bytes; /* memory estimate on cpu (placement.c); GPUs add the runtime */
	bool need_known;
	char chat_template[24]; /* "model", "tokenizer_config", "fallback"; "": not known yet */
	struct event *ev_wait;  /* retries a start waiting for evicted models' memory */
	uint64_t wait_since_ms; /* 0: not waiting */
	int last_exit;
	uint64_t fail_ms[5]; /* the last failures' times, for "5 in 10 minutes" */
	uint32_t n_fail;
	uint32_t restarts;
	bool remove_when_stopped; /* unloaded through the admin API or a reload */
	uint64_t load_started_ms;
	struct model_metrics met;
	struct evhttp_request **followers; /* GET /admin/models/NAME/events */
	uint32_t n_followers;
	struct model *next;
};

enum worker_state {
	WORKER_STARTING, /* spawned, no Hello yet */
	WORKER_LOADING,  /* Hello seen, loading */
	WORKER_READY,
	WORKER_DRAINING,
	WORKER_BACKOFF, /* dead, waiting to restart */
	WORKER_STOPPED,
	WORKER_WAITING, /* not started: waiting for memory (placement.c) */
};

#define WORKER_LOG_LINES 256 /* output lines kept for 'orchctl logs' */
#define WORKER_TAIL      16  /* of them, the most in a failure's message */

/* One line of a worker's output, or orchd's note about the process. */
struct worker_line {
	uint64_t unix_ms;
	bool ours; /* orchd's note ("spawned pid N", "exited with status N") */
	char text[247];
};

struct worker {
	char id[CFG_NAME_MAX + 16];
	struct model *model;
	char device[16];
	uint32_t replica;
	enum worker_state state;
	pid_t pid;
	int pidfd, log_fd;
	struct ipc_chan *ch;
	struct event *ev_recv, *ev_pid, *ev_log, *ev_timer;
	char sock_path[CFG_PATH_MAX + 128], debug_url[CFG_PATH_MAX + 160];
	struct sbuf log_partial;                  /* an unfinished stderr line */
	struct worker_line log[WORKER_LOG_LINES]; /* a ring */
	uint64_t log_next;                        /* lines ever kept: the next one's number */
	uint64_t log_spawn;                       /* number of this process's first line */
	uint32_t load_pct;
	uint64_t spawned_ms, last_msg_ms, last_progress_ms;
	uint32_t restarts;
	uint64_t backoff_ms;
	bool restart_now; /* asked through the admin API: no backoff, not a failure */
	/* from the last heartbeat */
	uint32_t slots_busy, slots_total;
	uint64_t kv_used, kv_total, memory_used, decode_steps;
	bool residency_ok, degraded;
	/* jobs placed here */
	uint32_t jobs;
	uint64_t outstanding; /* tokens still to generate, estimated from max_tokens */
	int last_exit;
};

enum job_kind { JOB_NATIVE, JOB_OAI_COMPLETION, JOB_OAI_CHAT };

enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

enum ev_type { EV_STARTED, EV_TOKEN, EV_END, EV_ERROR };

/* One event of a job, kept for streams that attach later (resume). */
struct job_event {
	enum ev_type type;
	uint32_t index; /* EV_TOKEN: the token's index */
	char *text;     /* EV_TOKEN: the text delta; EV_ERROR: the message */
	orch_err code;  /* EV_ERROR */
	int finish;     /* EV_END: Orch__FinishReason */
	uint32_t tokens_out, prompt_tokens;
	double decode_ms, prefill_ms;
	uint64_t seed;
};

/* A client connection following a job. */
struct stream {
	struct evhttp_request *req;
	struct job *job;
	bool streaming; /* false: one JSON body at the end (OpenAI stream=false) */
	uint32_t sent;  /* events written */
	struct stream *next;
};

struct job {
	struct orchd *d;
	uint64_t id; /* on the wire to the worker */
	char ext_id[128];
	enum job_kind kind;
	struct model *model; /* NULL once the model is removed */
	char model_name[CFG_NAME_MAX];
	struct worker *worker;
	enum job_state state;
	/* the request */
	char *prompt;
	cJSON *messages; /* chat */
	Orch__SamplingParams sp;
	char *stops[ORCH_API_MAX_STOPS];
	uint32_t n_stops, max_tokens;
	bool include_usage;
	uint32_t resume_grace_s;
	char correlation[128];
	/* what happened */
	struct job_event *events;
	uint32_t n_events, cap_events;
	struct sbuf text; /* all the text so far (OpenAI stream=false) */
	uint32_t tokens_out, prompt_tokens;
	uint64_t created_ms, started_ms, first_token_ms, last_token_ms, ended_ms;
	uint64_t created_unix;
	struct stream *streams;
	bool cancel_sent;
	bool detached;          /* every stream is gone; waiting resume_grace_s for one */
	struct event *ev_timer; /* keep-alive while running; expiry once done */
	struct job *next_all, *next_queue;
	struct job *live_prev, *live_next; /* in orchd.live until its terminal event */
};

struct orchd {
	struct event_base *base;
	struct orchd_config cfg;
	const char *config_path;
	char worker_bin[CFG_PATH_MAX];
	struct devices devices;
	struct model *models;
	struct job *jobs; /* every job, kept events_keep_s after it ends */
	struct job *live; /* the jobs not ended: what worker messages are about */
	uint64_t next_job_id;
	uint32_t n_jobs, n_conns;
	struct evhttp *http, *admin_http, *admin_tcp;
	struct event *ev_sigterm, *ev_sigint, *ev_sighup, *ev_watchdog, *ev_shutdown;
	char **api_keys;
	uint32_t n_api_keys;
	char admin_token[256];
	bool stopping, ready_sent;
	uint64_t started_ms, started_unix, stop_ms;
	struct metrics metrics;
};

/* ---- main.c ---- */
/* orchd_state_changed - readiness or a status line may have changed (sd_notify). */
void orchd_state_changed(struct orchd *d);

/* ---- placement.c ---- */
enum place_result { PLACE_FIT, PLACE_WAIT, PLACE_REFUSE };
/*
 * placement_estimate - read @m's file for its memory estimate and whether it
 * has a chat template (m->chat_template, until a Ready says); errors are the file's.
 */
orch_err placement_estimate(struct model *m, struct orch_errinfo *reterr);
/*
 * placement_check - whether @w fits on its device now: PLACE_FIT; PLACE_WAIT
 * when memory is coming back (evicted or unloading models); PLACE_REFUSE
 * with ORCH_EINSUFFICIENT_VRAM and the bytes needed and free in @reterr.
 */
enum place_result placement_check(struct orchd *d, struct worker *w, struct orch_errinfo *reterr);

/* ---- models.c ---- */
struct model *models_find(struct orchd *d, const char *name);
orch_err models_add(struct orchd *d, const struct cfg_model *cfg, struct model **ret,
                    struct orch_errinfo *reterr);
/* models_start - start its workers if stopped (also after a failure). */
void models_start(struct orchd *d, struct model *m);
/* models_unload - drain and stop its workers; removed from the registry when @remove. */
void models_unload(struct orchd *d, struct model *m, bool remove);
/* models_submit - place @j on a READY worker or queue it (starting the model). */
orch_err models_submit(struct orchd *d, struct job *j, struct orch_errinfo *reterr);
/* models_dispatch - move queued jobs of @m onto workers with room. */
void models_dispatch(struct orchd *d, struct model *m);
/* models_worker_state - a worker of @m changed state: recompute the model's state. */
void models_worker_state(struct orchd *d, struct model *m);
/* models_unqueue - take @j out of its model's queue. */
void models_unqueue(struct job *j);
const char *models_state_name(enum model_state s);
/* models_all_ready - every preload model is READY. */
bool models_all_ready(const struct orchd *d);
void models_free(struct orchd *d, struct model *m);

/* ---- workers.c ---- */
orch_err workers_spawn(struct orchd *d, struct worker *w, struct orch_errinfo *reterr);
struct worker *workers_new(struct orchd *d, struct model *m, uint32_t replica);
/* workers_send - send to a worker; false when it could not be sent. */
bool workers_send(struct worker *w, Orch__Envelope *env);
/* workers_submit - send @j's Submit to @w. */
bool workers_submit(struct orchd *d, struct worker *w, struct job *j);
void workers_drain(struct orchd *d, struct worker *w);
void workers_stop(struct orchd *d, struct worker *w);
void workers_restart(struct orchd *d, struct worker *w);
void workers_free(struct worker *w);
const char *workers_state_name(enum worker_state s);
struct worker *workers_find(struct orchd *d, const char *id);

/* ---- jobs.c ---- */
struct job *jobs_new(struct orchd *d, enum job_kind kind, struct model *m);
struct job *jobs_find_ext(struct orchd *d, const char *ext_id);
struct job *jobs_find(struct orchd *d, uint64_t id);
/* jobs_event - append an event to @j and write it to its streams; terminal ones end it. */
void jobs_event(struct orchd *d, struct job *j, const struct job_event *ev);
/* jobs_fail - end @j with error @code unless it has ended. */
void jobs_fail(struct orchd *d, struct job *j, orch_err code, const char *msg);
/* jobs_cancel - the client is gone or asked: cancel in the worker, or drop from the queue. */
void jobs_cancel(struct orchd *d, struct job *j, const char *why);
/* jobs_from_worker - a Started, TokenBatch, End or Error of @w. */
void jobs_from_worker(struct orchd *d, struct worker *w, const Orch__Envelope *env);
/* jobs_worker_lost - every job of @w ends with WORKER_LOST. */
void jobs_worker_lost(struct orchd *d, struct worker *w, const char *why);
/* jobs_attach - follow @j on @req; events after @after are written first. */
void jobs_attach(struct orchd *d, struct job *j, struct evhttp_request *req, bool streaming,
                 uint32_t after);
void jobs_free(struct orchd *d, struct job *j);
const char *jobs_finish_name(int finish);

/* ---- http.c ---- */
orch_err http_start(struct orchd *d, struct orch_errinfo *reterr);
void http_stop(struct orchd *d);
/* http_error - a JSON error body {error:{code,message,param}} with the code's HTTP status. */
void http_error(struct evhttp_request *req, orch_err code, const char *param, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* http_json - send @body (freed) with @status. */
void http_json(struct evhttp_request *req, int status, cJSON *body);
/* http_body - the request body parsed as a JSON object; answers 400 and NULL otherwise. */
cJSON *http_body(struct orchd *d, struct evhttp_request *req);
/* http_sse_start - 200 with text/event-stream headers, chunked. */
void http_sse_start(struct evhttp_request *req);
/* http_sse_write - one chunk of an SSE stream. */
void http_sse_write(struct evhttp_request *req, const char *data, size_t n);
/* http_retry_after - add "Retry-After: @s". */
void http_retry_after(struct evhttp_request *req, unsigned s);

/* ---- api_native.c, api_openai.c, admin.c ---- */
/* api_room - room for one more stream; else answers 503 with Retry-After. */
bool api_room(struct orchd *d, struct evhttp_request *req);
void api_native_execute(struct orchd *d, struct evhttp_request *req);
void api_native_cancel(struct orchd *d, struct evhttp_request *req);
void api_native_events(struct orchd *d, struct evhttp_request *req, const char *job_id);
/* api_native_format - one event of a native stream as SSE text. */
void api_native_format(const struct job *j, uint32_t k, struct sbuf *out);
void api_openai_completions(struct orchd *d, struct evhttp_request *req, bool chat);
void api_openai_models(struct orchd *d, struct evhttp_request *req);
/* api_openai_format - event @k of an OpenAI stream as "data: ..." text (may be empty). */
void api_openai_format(const struct job *j, uint32_t k, struct sbuf *out);
/* api_openai_body - the whole response of a stream=false OpenAI job. */
cJSON *api_openai_body(const struct job *j);
orch_err admin_start(struct orchd *d, struct orch_errinfo *reterr);
void admin_stop(struct orchd *d);
/* admin_status - the status document (also GET /admin/status). */
cJSON *admin_status(struct orchd *d);
/* admin_model_event - a model changed: tell the /admin/models/NAME/events followers. */
void admin_model_event(struct orchd *d, struct model *m, const char *what);
