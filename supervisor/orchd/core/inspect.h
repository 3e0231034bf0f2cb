#pragma once
/*
 * inspect.h - a model file's facts, read off the loop (issue 16, item 2).
 *
 * orchd reads a GGUF's header for a model's memory estimate, where its chat
 * template comes from, and whether the admin API was given a model file at
 * all. A file's metadata is megabytes for a large vocabulary, a network
 * file system can hang, and a path can name a FIFO or a device: none of
 * that may stall the loop. Each read runs on its own short-lived thread,
 * which opens the path without blocking, takes only a regular file, parses
 * the header (common/gguf) and hands its result back through a pipe; the
 * callback runs on the loop. A request can be cancelled (its callback then
 * never runs); a thread stuck in the kernel holds only itself. Thread: the
 * loop, except where said.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct orchd;
struct inspect;

/* What a model file is (GET /v1/models/ID): from its header, and its size. */
struct inspect_model {
	bool known;           /* a read of the file succeeded */
	uint64_t file_bytes;  /* its size */
	uint32_t n_ctx_train; /* <arch>.context_length: the context it was trained for; 0: absent */
	char arch[32];        /* general.architecture; "" when absent */
	char quant_kind[24];  /* its dominant type (gguf_dominant_type), "Q4_K_M"; "" for none */
};

/* What a read found. */
struct inspect_facts {
	orch_err rv;   /* ORCH_OK, or why the file cannot be a model (msg says) */
	char msg[512]; /* for the log and the admin API's operator; names the path */
	bool has_chat_template;
	bool has_estimate;          /* need_bytes is known (the request gave slots) */
	uint64_t need_bytes;        /* the estimate less the CUDA runtime's part (placement.h) */
	char missing[64];           /* rv ORCH_OK, no estimate: the first shape key not found */
	struct inspect_model model; /* rv ORCH_OK: what the file is */
};

/*
 * The workers a memory estimate is for: @slots sequences (0: no estimate) of
 * @context tokens (0: the model's default, its trained context up to
 * MODEL_DEFAULT_CTX). Paged (the worker's backend pages its KV: cpu), the
 * full-attention layers' KV is a pool of @kv_block_tokens-token blocks of
 * @kv_cache_mib MiB, or @kv_fraction of (@mem_total − the rest of the
 * estimate), as the worker computes it (engine.c), or slots × context.
 */
struct inspect_shape {
	uint32_t context, slots;
	bool paged;
	uint32_t kv_cache_mib, kv_block_tokens;
	double kv_fraction;
	uint64_t mem_total; /* the device's memory (cpu: MemTotal), for kv_fraction */
};

/* inspect_fn - on the loop, once, with what the read of @arg's file found. */
typedef void (*inspect_fn)(struct orchd *d, void *arg, const struct inspect_facts *f);

/*
 * inspect_start - read @path on a helper thread, with a memory estimate for
 * @shape (NULL: none), then @fn(@arg) on the loop; *@ret (may be NULL) is the
 * request, for inspect_cancel. ORCH_ENOMEM, ORCH_EIO (no thread or pipe),
 * ORCH_EOVERLOADED (offload.h): @fn will not run.
 */
orch_err inspect_start(struct orchd *d, const char *path, const struct inspect_shape *shape,
                       inspect_fn fn, void *arg, struct inspect **ret, struct orch_errinfo *reterr);

/* inspect_cancel - @q's callback will not run (its thread finishes on its own). */
void inspect_cancel(struct inspect *q);

/* inspect_pending - reads not delivered yet (tests wait for 0). */
uint32_t inspect_pending(const struct orchd *d);
