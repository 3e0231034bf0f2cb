#pragma once
/*
 * affinity.h - which replica of a model most likely holds a request's
 * prompt prefix in its KV cache (issue 19). orchd does not tokenize, so the
 * key is a hash of the start of the prompt's text: the first
 * AFFINITY_PREFIX_BYTES of a raw prompt, or of a chat's roles and contents
 * in order, with the request's cache_salt mixed in. Requests sharing a
 * system prompt (or a conversation's earlier turns) get the same key; a
 * replica is chosen for a key by rendezvous hashing, so keys stay where they
 * were when replicas come and go.
 */
#include <stdint.h>

struct job_request;

/* The prompt bytes hashed: about the first 16 KV blocks of 16 tokens of English text. */
#define AFFINITY_PREFIX_BYTES 1024

/*
 * AFFINITY_SLACK - how many more running jobs than the least loaded replica
 * the one a prefix prefers may have and still get it: a quarter of its slots
 * (at least 1). Past that, sharing a prefix is worth less than the idle
 * replica (a prefill of the prefix once more, against waiting on a batch).
 */
#define AFFINITY_SLACK(slots) ((slots) / 4 > 1 ? (slots) / 4 : 1)

/* affinity_key - @r's key; 0 when it has no prompt text (no preference). */
uint64_t affinity_key(const struct job_request *r);

/* affinity_score - the weight of the replica named @worker_id for @key: the highest wins. */
uint64_t affinity_score(uint64_t key, const char *worker_id);
