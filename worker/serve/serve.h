#pragma once
/*
 * serve.h - the serving worker (docs/protocol.md): Hello, load with
 * LoadProgress, Ready, then jobs from Submit through the scheduler with
 * one TokenBatch per decode step, Cancel, Heartbeat, Drain, Shutdown.
 * Exactly one terminal event (End or Error) per accepted job.
 */
#include <stdbool.h>
#include <stdint.h>

#include "engine/scheduler.h"
#include "text/model_text.h"

#ifdef __cplusplus
extern "C" {
#endif

struct serve_opts {
	const char *endpoint, *model, *device, *worker_id;
	const char *debug_endpoint; /* NULL: no debug stream */
	uint32_t slots, n_ctx, threads, heartbeat_ms;
	uint32_t supervisor_timeout_ms; /* exit when nothing arrives for this long; 0: never */
	uint32_t chunk;                 /* prompt tokens per step */
	enum sched_policy policy;       /* how a step is filled (--scheduler) */
	uint32_t residency_s;           /* seconds between residency checks (cuda) */
	bool no_graphs;                 /* cuda: no CUDA graphs */
	enum text_source tokenizer;     /* gguf, or hf-json beside the model */
	const char *hash_cache_dir; /* the model digest's cache when not beside it (NULL: none) */
	bool no_hash_beside;        /* never write MODEL.sha256 */
	/* the paged KV pool (docs/configuration.md); zeros: slots × context */
	uint32_t kv_cache_mib;    /* the pool's budget */
	double kv_cache_fraction; /* or this share of the memory free after the weights */
	uint32_t kv_block_tokens; /* 0: the default */
	bool no_prefix_cache;     /* never reuse cached prompt prefixes */
};

/* serve_run - serve until Drain completes, Shutdown or SIGTERM (0), or a failure (1). */
int serve_run(const struct serve_opts *o);

#ifdef __cplusplus
}
#endif
