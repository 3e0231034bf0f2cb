#pragma once
/*
 * workers.h - one orch-worker process per (model, replica): spawn, output
 * capture, handshake, heartbeats, timeouts, restart with backoff, drain, and
 * a bounded queue of encoded messages so the loop never waits on a send.
 * Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/sbuf.h"
#include "config.h"
#include "grammar/tool_call.h"
#include "proto/orch.pb-c.h"

struct event;
struct ipc_chan;
struct model_entry;
struct orchd;

enum worker_state {
	WORKER_STARTING, /* spawned, no Hello yet */
	WORKER_LOADING,  /* Hello seen, loading */
	WORKER_READY,
	WORKER_DRAINING,
	WORKER_BACKOFF, /* dead, waiting to restart */
	WORKER_STOPPED,
	WORKER_WAITING,   /* not started: waiting for memory (placement.c) */
	WORKER_UNHEALTHY, /* failed a health check: its jobs finish, then it restarts */
};

#define WORKER_LOG_LINES 256 /* output lines kept for 'orchctl logs' */
#define WORKER_TAIL      16  /* of them, the most in a failure's message */
#define WORKER_SENDQ     256 /* encoded messages waiting for the socket */

/* One line of a worker's output, or orchd's note about the process. */
struct worker_line {
	uint64_t unix_ms;
	bool ours; /* orchd's note ("spawned pid N", "exited with status N") */
	char text[247];
};

/*
 * What a worker said it is (Hello) and what it loaded (Ready), kept for
 * /health, the admin API and the logs. Strings are "" until known.
 */
struct worker_ident {
	char build_id[96];
	char model_sha256[65], tokenizer_hash[65];
	char cuda_version[32], driver_version[32], sm[16]; /* GPU workers only */
	char quant_kind[24];                               /* the file's dominant type, "Q4_K_M" */
	char tokenizer_kind[16];                           /* "gguf-spm", "gguf-bpe", "hf-json" */
	char architecture[32];
	uint32_t vocab_size, context_length;
	int32_t bos_id, eos_id; /* the tokenizer's; -1: none (known once vocab_size is) */
};

#define WORKER_REASON_MAX 320

/* An encoded envelope the socket did not take yet. */
struct worker_msg {
	uint8_t *buf;
	size_t n;
	uint64_t job_id; /* the job it is about (0: none), failed when dropped */
};

struct worker {
	char id[CFG_NAME_MAX + 16];
	struct model_entry *model;
	char device[16];
	uint32_t replica;
	enum worker_state state;
	pid_t pid;             /* 0: none running (reaped) */
	pid_t exit_pid;        /* the last process, for its exit's log lines */
	int exit_status;       /* its wait status, settled EXIT_GRACE_MS after the reap */
	struct event *ev_reap; /* that grace */
	int pidfd, log_fd;
	struct ipc_chan *ch;
	struct event *ev_recv, *ev_pid, *ev_log, *ev_timer, *ev_send;
	char sock_path[CFG_PATH_MAX + 128], debug_url[CFG_PATH_MAX + 160];
	struct sbuf log_partial;                  /* an unfinished stderr line */
	struct worker_line log[WORKER_LOG_LINES]; /* a ring */
	uint64_t log_next;                        /* lines ever kept: the next one's number */
	uint64_t log_spawn;                       /* number of this process's first line */
	struct worker_msg sendq[WORKER_SENDQ];    /* a ring: oldest at sendq_head */
	uint32_t sendq_head, sendq_n;
	uint32_t load_pct;
	uint64_t spawned_ms, last_msg_ms, last_progress_ms;
	uint32_t restarts;
	uint64_t backoff_ms;
	bool restart_now; /* asked through the admin API: no backoff, not a failure */
	bool reap_retry;  /* its pidfd reported an exit waitpid could not take yet */
	/* from the last heartbeat */
	uint32_t slots_busy, slots_total;
	uint64_t kv_used, kv_total, memory_used, decode_steps;
	uint64_t mem_weights, mem_kv, mem_scratch; /* Ready: memory_used's parts */
	/* paged KV (Ready, then the heartbeat); the counters as this process last told */
	uint32_t kv_blocks_total, kv_blocks_used, kv_blocks_cached, kv_block_tokens;
	bool prefix_cache;
	enum tool_syntax tool_syntax; /* Ready: how its model writes a tool call */
	uint64_t prefix_query_tokens, prefix_hit_tokens, preemptions;
	bool residency_ok, degraded;
	char residency_error[256];
	/* Hello and Ready */
	struct worker_ident ident;
	uint64_t ready_ms; /* when it last became READY; 0: not since its spawn */
	/* health */
	uint64_t unhealthy_ms;                       /* when it went UNHEALTHY */
	char unhealthy_reason[WORKER_REASON_MAX];    /* why ("" while healthy) */
	char last_restart_reason[WORKER_REASON_MAX]; /* why it was last restarted */
	uint64_t unhealthy_total;                    /* orch_worker_unhealthy_total */
	char kill_why[160]; /* why orchd killed this process ("" when it did not) */
	/* jobs placed here */
	uint32_t jobs;
	uint64_t outstanding; /* tokens still to generate, estimated from max_tokens */
	int last_exit;
};

/*
 * What a worker's life tells the modules above it; core.c installs them as
 * orchd.worker_hooks (every member set). Each runs on the loop, inside the
 * worker's own handler. `changed` may free @w and its model (an unloaded
 * model's last worker stopped): its caller touches neither after it.
 */
struct worker_hooks {
	/* one envelope @w sent (wire_dispatch); @env stays the caller's */
	void (*message)(struct orchd *d, struct worker *w, const Orch__Envelope *env);
	/* @w's state changed: its model's state follows from its workers' */
	void (*changed)(struct orchd *d, struct worker *w);
	/* @w's process is gone (@why): what it held ends or goes back to a queue */
	void (*lost)(struct orchd *d, struct worker *w, const char *why);
};

/* workers_new - a stopped worker for replica @replica of @m; NULL when out of memory. */
struct worker *workers_new(struct orchd *d, struct model_entry *m, uint32_t replica);

/* workers_spawn - start @w's process and its channel; ORCH_EIO, ORCH_ENOMEM. */
orch_err workers_spawn(struct orchd *d, struct worker *w, struct orch_errinfo *reterr);

/*
 * workers_send - queue @buf (@n encoded bytes, taken over) for @w and send
 * what the socket takes now; never waits. ORCH_ECLOSED without a channel,
 * ORCH_EQUEUE_FULL when WORKER_SENDQ messages wait already (@buf is freed).
 */
orch_err workers_send(struct worker *w, uint8_t *buf, size_t n, uint64_t job_id);

/*
 * workers_send_env - encode @env and workers_send it to @w (about job
 * @job_id, 0: none); a failure is logged here. Errors as workers_send, and
 * ORCH_EPROTO when it does not encode.
 */
orch_err workers_send_env(struct worker *w, const Orch__Envelope *env, uint64_t job_id);

/* workers_drain - send Drain: finish its active jobs, then exit. */
void workers_drain(struct orchd *d, struct worker *w);

/*
 * workers_unhealthy - @w failed a health check (@why): no new jobs go to it,
 * it is told to drain, its running jobs get unhealthy_drain_s to finish
 * (then it is killed: WORKER_LOST), and when it has exited it restarts
 * with backoff, counting as a failure. Logged, counted and kept as its
 * unhealthy_reason. Nothing when it is not READY.
 */
void workers_unhealthy(struct orchd *d, struct worker *w, const char *why);

/* workers_healthy - @w is not unhealthy (or dead waiting to restart). */
bool workers_healthy(const struct worker *w);

/* workers_restart - kill and start again at once (no backoff, not a failure). */
void workers_restart(struct orchd *d, struct worker *w);

/* workers_free - kill the process if any and free @w (NULL is fine). */
void workers_free(struct worker *w);

/* workers_state_name - "starting", "loading", "ready", ... */
const char *workers_state_name(enum worker_state s);

/* workers_find - the worker with id @id, or NULL. */
struct worker *workers_find(struct orchd *d, const char *id);

/* ---- shared by workers.c and workers_io.c only ---- */

/* workers_keep_line - keep one output line (or our note when @ours) in @w's ring. */
void workers_keep_line(struct worker *w, bool ours, const char *line, size_t n);

/*
 * workers_tail - the last lines of this process's output, joined by " | ": its warnings,
 * errors and unprefixed lines (a crash's), without their "<N>" prefixes; "(none: ...)".
 */
void workers_tail(const struct worker *w, char *out, size_t n);

/* workers_on_log - the loop's handler of @arg's output pipe. */
void workers_on_log(int fd, short what, void *arg);

/* workers_on_message - the loop's handler of @arg's receive fd: each envelope to its hook. */
void workers_on_message(int fd, short what, void *arg);

/*
 * workers_settling - whether @w's process was reaped and its exit is not
 * settled yet (EXIT_GRACE_MS): its jobs still point to it, so it is not
 * stopped, freed or spawned again before then.
 */
bool workers_settling(const struct worker *w);

/* workers_read_pending - hand what @w's channel holds now (at most 256) to its hook; how many. */
unsigned workers_read_pending(struct worker *w);

/* workers_flush - send what the socket takes of @w's queue now. */
void workers_flush(struct worker *w);

/* workers_sendq_clear - drop @w's queued messages (its process is gone). */
void workers_sendq_clear(struct worker *w);
