#pragma once
/*
 * config.h - orchd's configuration (docs/configuration.md): an INI file read
 * with libinih, then command-line flags over it. Every key is known; an
 * unknown section or key, or a bad value, is an error naming the line.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define CFG_NAME_MAX    64
#define CFG_PATH_MAX    1024
#define CFG_MAX_DEVICES 8

/*
 * A model's scheduling policy (docs/configuration.md, scheduler): fcfs, jobs in
 * arrival order, each step decoding every running job before it feeds prompts;
 * prefill_first, the worker feeds waiting prompts before it decodes; fair, the
 * queue is served by API key, the key with the fewest jobs running first.
 */
enum cfg_sched { CFG_SCHED_FCFS, CFG_SCHED_PREFILL_FIRST, CFG_SCHED_FAIR };

/* cfg_sched_name - "fcfs", "prefill_first", "fair". */
const char *cfg_sched_name(enum cfg_sched s);

struct cfg_model {
	char name[CFG_NAME_MAX];
	char path[CFG_PATH_MAX];
	/* model = hf:...: a reference in the model store (canonical), whose file becomes path
	 * when the model starts; pull: fetch it then if the store lacks it (model_pull.h) */
	char ref[CFG_PATH_MAX];
	bool pull;
	char devices[CFG_MAX_DEVICES][16]; /* "cpu", "cuda:0" */
	uint32_t n_devices;
	uint32_t slots, context, replicas, threads;
	bool preload;
	bool hf_tokenizer; /* tokenizer = hf-json: tokenizer.json beside the GGUF */
	/* the paged KV pool (docs/configuration.md); zeros: slots × context */
	uint32_t kv_cache_mib;
	double kv_cache_fraction;
	uint32_t kv_block_tokens; /* 0: the worker's default (16) */
	bool prefix_cache;        /* enable_prefix_cache (default yes) */
	enum cfg_sched scheduler; /* default fcfs */
};

enum cfg_evict { CFG_EVICT_NONE, CFG_EVICT_LRU };

struct orchd_config {
	/* [server] */
	char listen[128]; /* HOST:PORT of the public API */
	char admin_socket[CFG_PATH_MAX];
	char admin_listen[128]; /* optional TCP HOST:PORT of the admin API ("" = none) */
	char admin_token_file[CFG_PATH_MAX];
	char runtime_dir[CFG_PATH_MAX];
	char state_dir[CFG_PATH_MAX]; /* models.json (admin_state.h); "" = see admin_state_dir */
	char model_dir[CFG_PATH_MAX]; /* the model store (store.h); "" = see model_pull_dir */
	char hf_token_file[CFG_PATH_MAX]; /* pull = yes: a token for gated repositories */
	char api_keys_file[CFG_PATH_MAX]; /* "" = no API keys */
	char worker_bin[CFG_PATH_MAX];    /* "" = orch-worker beside orchd */
	uint32_t max_queue;               /* per model */
	uint32_t request_timeout_s;
	uint32_t max_tokens;       /* cap on a request's max_tokens */
	uint32_t max_prompt_chars; /* cap on a native prompt's length */

	uint32_t max_chat_messages; /* a chat's messages, 1-ORCH_MAX_MESSAGES (issue 18) */
	uint32_t max_body_bytes;
	uint32_t max_header_bytes;
	uint32_t max_connections;

	/* connection limits and HTTP strictness (issue 16); max_connections counts them all */
	uint32_t max_connections_per_client; /* open connections from one client address */
	uint32_t header_timeout_s;    /* a request's head must be in this long after it starts */
	uint32_t body_timeout_s;      /* its body this long after the head */
	uint32_t keepalive_timeout_s; /* a connection idle between requests is closed after this */
	char allowed_hosts[1024];     /* the Host allow-list (http_host.h); "" = the default */
	char cors_origins[2048];      /* the web origins CORS lets in (http_cors.h); "" = off */
	bool access_log; /* a line per request of the public listener (http_access.h) */
	bool chat_page;  /* serve the chat page at / (http_static.h) */

	uint32_t events_keep_s;   /* a finished job's events stay for resuming this long */
	uint32_t sse_keepalive_s; /* comment line on an idle stream */
	uint32_t handshake_timeout_s, load_timeout_s, heartbeat_timeout_s;
	uint32_t shutdown_timeout_s;
	uint32_t residency_check_s; /* workers check their device memory this often */
	uint32_t unhealthy_drain_s; /* an unhealthy worker's jobs get this long to finish */
	bool hash_cache_beside;     /* workers may write MODEL.sha256 beside a model (opt-in) */
	uint32_t watchdog_s;        /* unused unless systemd sets WATCHDOG_USEC */
	enum cfg_evict evict;
	uint64_t vram_headroom_bytes;
	uint64_t cpu_memory_bytes; /* cap on what orchd places on cpu; 0 = MemAvailable only */
	uint32_t evict_wait_s;     /* how long a start waits for evicted models' memory */
	char nvml_library[CFG_PATH_MAX]; /* dlopen()ed for the GPU inventory */
	/* API keys, job ownership and retention (issue 16) */
	uint32_t events_keep_jobs;  /* finished native jobs kept for resuming, at most */
	uint64_t events_keep_bytes; /* and their memory, at most (events_keep_mib) */
	/* [model "NAME"] */
	struct cfg_model *models;
	uint32_t n_models;
};

/* cfg_defaults - every key at its default; no models. */
void cfg_defaults(struct orchd_config *c);

/*
 * cfg_load - read @path over @c's current values. ORCH_EIO when it cannot
 * be read, ORCH_EINVAL for an unknown section or key or a bad value, with
 * "PATH:LINE: what" in the message.
 */
orch_err cfg_load(struct orchd_config *c, const char *path, struct orch_errinfo *reterr);

/*
 * cfg_set - set one key as the file would ("server", "listen", "0.0.0.0:80");
 * for a model section, @section is its name. Used by flags and the admin API.
 */
orch_err cfg_set(struct orchd_config *c, const char *section, const char *key, const char *value,
                 struct orch_errinfo *reterr);

/* cfg_model_find - the model named @name, or NULL. */
struct cfg_model *cfg_model_find(const struct orchd_config *c, const char *name);

/*
 * cfg_model_add - add a model with defaults, named @name; *@ret points at it
 * (valid until the next add). ORCH_EINVAL for a bad or duplicate name.
 */
orch_err cfg_model_add(struct orchd_config *c, const char *name, struct cfg_model **ret,
                       struct orch_errinfo *reterr);

/* cfg_model_check - one model's checks (a path or a model reference, not both; one way to
 * size the KV pool). */
orch_err cfg_model_check(const struct cfg_model *m, struct orch_errinfo *reterr);

/* cfg_check - whole-config checks (a model without a path, ...). */
orch_err cfg_check(const struct orchd_config *c, struct orch_errinfo *reterr);

/* cfg_free - free the models. */
void cfg_free(struct orchd_config *c);
