#pragma once
/*
 * orchd.h - the daemon's state (DESIGN.md §5). One thread, one libevent
 * loop; nothing here is locked. Each module has its own header with its own
 * structs: models.h (the registry), workers.h, jobs.h, wire.h (envelopes),
 * placement.h, devices.h, metrics.h, config.h, notify.h (systemd); the API
 * above (api/: reply.h, api.h, admin.h) and the HTTP edge (http_exchange.h,
 * sse.h, http_conn.h) keep theirs.
 */
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "counters.h"
#include "devices.h"
#include "http_cors.h"
#include "keys.h"

struct event;
struct event_base;
struct evhttp;
struct http_edge;
struct offloader;
struct job;
struct model_entry;
struct model_hooks;
struct worker_hooks;
struct orchd; /* the callbacks below take it before its definition */
struct tok_req;

/*
 * orchd_model_event_fn - a model changed (state, load progress): the admin
 * API tells its followers. NULL where nobody listens (unit tests).
 */
typedef void (*orchd_model_event_fn)(struct orchd *d, struct model_entry *m, const char *what);

struct orchd {
	struct event_base *base;
	struct orchd_config cfg;
	const char *config_path;
	char worker_bin[CFG_PATH_MAX];
	struct devices devices;
	struct model_entry *models;
	struct job *jobs; /* every job: live, and ended ones still followed or kept */
	struct job *live; /* the jobs not ended: what worker messages are about */
	struct job *kept_head,
	        *kept_tail; /* ended, kept for resuming: oldest first (jobs_keep.c) */
	uint32_t n_kept;
	uint64_t kept_bytes;
	uint64_t next_job_id;
	struct tok_req *tok_reqs; /* POST /tokenize, /detokenize waiting for a worker's answer */
	uint64_t next_tok_id;
	uint32_t n_jobs, n_conns;
	struct evhttp *http, *admin_http, *admin_tcp;
	struct http_edge *edge;         /* the public listener's connections (http_conn.h) */
	struct http_cors cors;          /* the web origins the public API answers (cors_origins) */
	struct offloader *offload;      /* work off the loop (offload.h) */
	uint32_t insp_pending;          /* model files being read (inspect.h) */
	bool reload_busy, reload_again; /* SIGHUP's files being read; read again after (reload.h) */
	char hash_dir[CFG_PATH_MAX + 32]; /* the models' digests: STATE_DIR/model-hashes (main.c) */
	struct admin_pull *pulls; /* pulls run for admin clients, newest first (admin_pull.h) */
	struct event *ev_signal[3], *ev_watchdog, *ev_shutdown;
	struct api_keys keys; /* the public API's; none: open */
	char admin_token[256];
	bool stopping, ready_sent;
	bool admin_bound; /* admin_socket's file is this orchd's (admin_stop removes it) */
	/* orchd --model FILE: that model's name; its load failing before it was ever ready
	 * stops orchd with exit_code 1, as llama-server -m does (models.c) */
	char flag_model[64];
	int exit_code;
	int rundir_lock; /* 1 + the descriptor holding runtime_dir's lock (rundir.h); 0: none */
	uint64_t started_ms, started_unix, stop_ms;
	uint64_t cut_ms; /* when shutdown_timeout_s ended the running jobs (main.c); 0: not */
	bool stop_now;   /* a second SIGINT or SIGTERM while stopping: end them without waiting */
	struct metrics metrics;
	orchd_model_event_fn on_model_event;
	/* how the core's lower modules report up (core.c's core_init sets both) */
	const struct worker_hooks *worker_hooks;
	const struct model_hooks *model_hooks;
	/* drain and exit, as SIGTERM (main.c): the admin API's POST /admin/shutdown calls it */
	void (*stop)(struct orchd *d, const char *why);
};
