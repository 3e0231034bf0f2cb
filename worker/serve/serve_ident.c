/*
 * serve_ident.c - what the worker tells orchd it is (docs/protocol.md):
 * its build id, the SHA-256 of the model file and the hash of the
 * tokenizer's data, and the test-only faults that make it say otherwise.
 *
 * The model's digest comes from its cache (base/filehash.h) when the file's
 * size and mtime match it, so Hello carries it at once on every start but
 * the first. Otherwise a thread hashes the file while the model loads (both
 * read the same pages), Hello goes without it, the digest is cached and
 * Ready carries it. Hashing never fails the start: a file that cannot be
 * hashed or a digest that cannot be cached is logged, "continuing".
 *
 * The tokenizer hash is the SHA-256 of what the tokenizer is built from:
 * the GGUF encoding of every tokenizer.ggml.* metadata pair, in file order
 * (gguf_kv_sha256); with --tokenizer hf-json, the bytes of tokenizer.json
 * followed by those of tokenizer_config.json when it exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/build_id.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/readfile.h"
#include "gguf/ident.h"
#include "serve_int.h"
#include "text/model_text.h"

#define TOKENIZER_JSON_MAX (256u << 20)

static void *
hash_thread(void *arg)
{
	struct serve_ident *id = arg;

	id->hash_rv = filehash_compute(id->path, id->hashed, &id->stamp, &id->stop, &id->hash_err);
	return NULL;
}

/* The digest of @path's directory's @name into @s; false when it cannot be read. */
static bool
add_sibling(struct sha256 *s, const char *model, const char *name, bool required,
            struct orch_errinfo *e)
{
	char path[4096];
	char *text = NULL;
	size_t n = 0;

	model_text_beside(model, name, path, sizeof(path));
	if (!required && access(path, F_OK) != 0)
		return true;
	if (orch_read_file(path, TOKENIZER_JSON_MAX, &text, &n, e) != ORCH_OK)
		return false;
	sha256_update(s, text, n);
	orch_free(text);
	return true;
}

/* The tokenizer hash into @sv->id.tokenizer_hash ("" when its data cannot be read). */
static void
tokenizer_hash(struct serve *sv)
{
	struct orch_errinfo e = {0};
	uint8_t d[SHA256_BYTES];
	struct sha256 s;

	if (sv->o->tokenizer == TEXT_HF_JSON) {
		sha256_init(&s);
		if (!add_sibling(&s, sv->o->model, "tokenizer.json", true, &e) ||
		    !add_sibling(&s, sv->o->model, "tokenizer_config.json", false, &e))
			goto fail;
		sha256_final(&s, d);
	} else {
		struct gguf_file *f = NULL;
		if (gguf_open(sv->o->model, &f, &e) != ORCH_OK)
			goto fail;
		gguf_kv_sha256(f, "tokenizer.ggml.", d);
		gguf_close(f);
	}
	sha256_hex(d, sv->id.tokenizer_hash);
	return;
fail: /* the load fails the same way and says so */
	orch_log(ORCH_LOG_INFO, "tokenizer_hash_unavailable", "msg=\"%s\" continuing", e.msg);
}

void
serve_ident_start(struct serve *sv)
{
	struct serve_ident *id = &sv->id;
	struct orch_errinfo e = {0};
	enum filehash_where where;

	id->build_id = orch_build_id();
	id->path = sv->o->model;
#ifdef ORCH_FAULT_INJECTION
	const char *fake = getenv("ORCH_FAULT_BUILD_ID"); /* test builds: version skew */
	if (fake != NULL)
		id->build_id = fake;
#endif
	tokenizer_hash(sv);
	id->hash_started_ms = orch_mono_ms();
	if (filehash_cached(id->path, sv->o->hash_cache_dir, id->model_sha256, &where, &e) ==
	    ORCH_OK) {
		orch_log(ORCH_LOG_INFO, "model_sha256", "sha256=%s from=cache_%s", id->model_sha256,
		         filehash_where_name(where));
		return;
	}
	if (e.code == ORCH_EIO) /* no such file: the load says so */
		return;
	if (pthread_create(&id->thread, NULL, hash_thread, id) != 0) {
		orch_log(ORCH_LOG_WARNING, "model_sha256_failed",
		         "msg=\"cannot start the hashing thread\" continuing");
		return;
	}
	id->hashing = true;
}

void
serve_ident_stop(struct serve *sv)
{
	if (!sv->id.hashing)
		return;
	atomic_store(&sv->id.stop, true);
	pthread_join(sv->id.thread, NULL);
	sv->id.hashing = false;
}

void
serve_ident_finish(struct serve *sv)
{
	struct serve_ident *id = &sv->id;
	struct orch_errinfo e = {0};
	enum filehash_where where;

	if (!id->hashing)
		return;
	pthread_join(id->thread, NULL);
	id->hashing = false;
	if (id->hash_rv != ORCH_OK) {
		orch_log(ORCH_LOG_WARNING, "model_sha256_failed", "msg=\"%s\" continuing",
		         id->hash_err.msg);
		return;
	}
	memcpy(id->model_sha256, id->hashed, sizeof(id->model_sha256));
	if (sv->o->no_hash_beside && sv->o->hash_cache_dir == NULL) { /* asked not to cache */
		orch_log(ORCH_LOG_INFO, "model_sha256",
		         "sha256=%s from=computed ms=%llu cached=off", id->model_sha256,
		         (unsigned long long)(orch_mono_ms() - id->hash_started_ms));
		return;
	}
	orch_err rv = filehash_store(id->path, sv->o->hash_cache_dir, !sv->o->no_hash_beside,
	                             &id->stamp, id->hashed, &where, &e);
	unsigned long long ms = orch_mono_ms() - id->hash_started_ms;
	if (rv == ORCH_OK)
		orch_log(ORCH_LOG_INFO, "model_sha256", "sha256=%s from=computed ms=%llu cached=%s",
		         id->model_sha256, ms, filehash_where_name(where));
	else
		orch_log(ORCH_LOG_WARNING, "model_sha256",
		         "sha256=%s from=computed ms=%llu cached=%s msg=\"%s\" continuing",
		         id->model_sha256, ms, filehash_where_name(where), e.msg);
}

bool
serve_fault_residency(void)
{
#ifdef ORCH_FAULT_INJECTION
	const char *path = getenv("ORCH_FAULT_RESIDENCY"); /* test builds: fail while it exists */
	return path != NULL && access(path, F_OK) == 0;
#else
	return false;
#endif
}

bool
serve_fault_residency_armed(void)
{
#ifdef ORCH_FAULT_INJECTION
	return getenv("ORCH_FAULT_RESIDENCY") != NULL;
#else
	return false;
#endif
}
