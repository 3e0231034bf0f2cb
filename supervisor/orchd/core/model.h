#pragma once
/*
 * model.h - one configured model as orchd keeps it: its record (struct
 * model_entry) and its states. The record alone, for the modules below the
 * registry (workers, placement); what is done with it is models.h's.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "config.h"
#include "counters.h"
#include "inspect.h"
#include "jobs.h"

struct event;
struct model_pull;
struct api_req;
struct job;
struct orchd;
struct worker;

enum model_state { MODEL_STOPPED, MODEL_LOADING, MODEL_READY, MODEL_FAILED, MODEL_UNLOADING };

/* One configured model (orchd's; the worker's struct model is its weights). */
struct model_entry {
	struct orchd *d;
	struct cfg_model cfg;
	enum model_state state;
	struct worker **workers; /* [cfg.replicas] */
	uint32_t n_workers;
	struct job *queue_head, *queue_tail; /* waiting for a worker */
	uint32_t queued;
	struct job_owner last_owner; /* scheduler = fair: whose job went out last */
	uint64_t last_used_ms;
	char error[512]; /* why it failed */
	/* cfg.ref: its file is looked up in the store at every read (cfg.path is it), or pulled */
	struct model_pull *pulling;
	char *pull_token;    /* an admin client's token for its first pull (orchctl load --pull) */
	orch_err error_code; /* ORCH_OK: a failed load (MODEL_LOAD_FAILED) */
	uint64_t need_bytes; /* memory estimate on cpu (placement.c); GPUs add the runtime */
	bool need_known;
	/* where its chat template comes from: "model", "tokenizer_config", "fallback"; "": not
	 * known yet */
	char chat_template_origin[24];
	/* its tool-call syntax: Ready's (tool_call.h's name, or "none"); "": not known yet */
	char tool_syntax[16];
	struct event *ev_wait;      /* retries a start waiting for evicted models' memory */
	struct inspect *inspecting; /* its file being read (inspect.h); NULL: none */
	struct inspect_model file;  /* what its file's last read found (GET /v1/models/ID) */
	struct event *ev_read;      /* that read's load_timeout_s */
	bool start_after;           /* a start waits for that read (and earlier models' reads) */
	orch_err read_rv;           /* the last read's result, and its message when not ORCH_OK */
	char read_msg[512];
	uint64_t wait_since_ms; /* 0: not waiting */
	int last_exit;
	uint64_t fail_ms[5]; /* the last failures' times, for "5 in 10 minutes" */
	uint32_t n_fail;
	uint32_t restarts;
	bool remove_when_stopped; /* unloaded through the admin API or a reload */
	/* orchd keeps it loaded: /ready waits for it. Set by preload and an admin load, cleared
	 * by an unload; a model started by a request alone is not wanted */
	bool wanted;
	bool runtime; /* added through the admin API: kept in the state file (admin_state.h) */
	uint64_t load_started_ms;
	uint64_t ready_since_ms; /* when it last became READY (monotonic) */
	struct model_metrics met;
	struct api_req **followers; /* GET /admin/models/NAME/events (api/admin.c's) */
	uint32_t n_followers;
	struct model_entry *next;
};
