#pragma once
/*
 * health.h - GET /health's document (docs/http-api.md): per model and per
 * worker, whether it is healthy, what it loaded (dominant type, tokenizer,
 * vocabulary, context), what it holds (memory, residency) and for how long;
 * every value is one orchd already keeps from the workers' Hello, Ready and
 * Heartbeat messages, so building it reads nothing and waits on nothing.
 * evhttp-free. Thread: the loop.
 */
#include <stdbool.h>

struct cJSON;
struct model_entry;
struct orchd;
struct worker;

/* health_json - the whole document: {status, build_id, uptime_seconds, models: {NAME: ...}}. */
struct cJSON *health_json(struct orchd *d);

/* health_model_healthy - @m has not failed and none of its workers is unhealthy. */
bool health_model_healthy(const struct model_entry *m);

/*
 * health_worker_facts - add to @o what @w said it is and loaded: status,
 * resident, quant_kind, vram_bytes_used, tokenizer_kind, vocab_size,
 * context_length, uptime_seconds, model_sha256, tokenizer_hash, build_id,
 * on a GPU sm, cuda_runtime_version and driver_version, and the reason of
 * an unhealthy state or of its last restart. The admin API uses it too.
 */
void health_worker_facts(struct cJSON *o, const struct worker *w);
