#pragma once
/*
 * counters.h - what orchd counts for its Prometheus metrics (DESIGN.md §8):
 * counters and histograms kept per model and for the whole daemon. The core
 * writes them; metrics.c renders them, with gauges read from the registry
 * when scraped.
 */
#include <stdint.h>

#include "base/err.h"
#include "base/finish.h"

#define MET_BUCKETS 16

struct histo {
	uint64_t counts[MET_BUCKETS]; /* cumulative at render time, per bucket here */
	uint64_t count;
	double sum;
};

/* Per model. Outcomes: the finish reasons STOP, LENGTH, EOS (base/finish.h), then every
 * orch_err code. */
/* orch_requests_total's outcomes: the finish reasons an End carries, then the error codes */
#define MET_FINISHES (ORCH_FINISH_TOOL_CALLS + 1)
#define MET_OUTCOMES (MET_FINISHES + ORCH_ERR_COUNT)

struct model_metrics {
	uint64_t requests[MET_OUTCOMES];
	uint64_t prompt_tokens, generation_tokens;
	uint64_t loads, load_failures, evictions;
	uint64_t cancelled_by_client;
	/* the workers' paged KV counters, summed over their lives (heartbeat deltas) */
	uint64_t prefix_query_tokens, prefix_hit_tokens, preemptions;
	uint64_t affinity_routed; /* jobs placed by prompt affinity, not on the least loaded */
	struct histo ttft, itl, e2e, load;
	struct histo queue_wait; /* from the request to its job's first placement on a worker */
};

/* Why a connection was refused, and where a deadline closed one (http_conn.h). */
enum { MET_REFUSED_MAX, MET_REFUSED_CLIENT, MET_REFUSED_FDS, MET_REFUSED_COUNT };
enum { MET_DEADLINE_HEAD, MET_DEADLINE_BODY, MET_DEADLINE_IDLE, MET_DEADLINE_COUNT };

/* Whole daemon. */
struct metrics {
	uint64_t http_responses[6]; /* by status class: [1]=1xx ... [5]=5xx */
	uint64_t rejected_queue_full, rejected_connections;
	uint64_t sse_slow_clients; /* streams cut: the client read too slowly */
	/* the public listener's connections (issue 16) */
	uint64_t http_connections; /* open now (a gauge) */
	uint64_t http_refused[MET_REFUSED_COUNT];
	uint64_t http_deadlines[MET_DEADLINE_COUNT];
	uint64_t jobs_evicted;  /* finished jobs dropped before events_keep_s (the caps) */
	uint64_t jobs_requeued; /* jobs a lost worker had no token of, queued again */
};

/* The buckets' upper bounds in seconds, 1 ms to 600 s. */
extern const double histo_bounds[MET_BUCKETS];

/* histo_observe - add @seconds to @h. */
void histo_observe(struct histo *h, double seconds);
