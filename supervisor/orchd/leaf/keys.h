#pragma once
/*
 * keys.h - the public API's keys (docs/security.md, docs/configuration.md):
 * the keys file, read at start and again on SIGHUP; a request's
 * "Authorization: Bearer KEY" checked against it in constant time; each
 * key's optional model allow-list. Only SHA-256 digests of the keys are
 * kept in memory, and no message or log line names a key. Thread: the loop.
 *
 * The file: one key per line, then optionally "models=NAME,NAME,..." (the
 * models that key may use; without it, every model). Blank lines and lines
 * whose first non-blank character is '#' are comments. A key is 16-512
 * visible ASCII characters (no spaces). A file without a key is an error:
 * keys never fail open.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/sha256.h"

/* The most bytes a keys file may hold. */
#define KEYS_FILE_MAX (1u << 20)

/* A key's length bounds, in bytes. */
#define KEYS_KEY_MIN 16
#define KEYS_KEY_MAX 512

/* One key: its digest and its allow-list. */
struct api_key {
	uint8_t digest[SHA256_BYTES];
	char **models; /* NULL: every model */
	uint32_t n_models;
	uint32_t line; /* where the file has it (for log lines; never the key) */
};

/* The keys in force; n == 0 (no api_keys_file) leaves the public API open. */
struct api_keys {
	struct api_key *v;
	uint32_t n;
};

/*
 * keys_parse - the keys file's text (@n bytes; @name for messages) into
 * *@ret (zeroed first; keys_free it). ORCH_EINVAL "NAME:LINE: what" for a
 * bad line, a key twice, or no key at all; ORCH_ENOMEM.
 */
orch_err keys_parse(const char *name, const char *text, size_t n, struct api_keys *ret,
                    struct orch_errinfo *reterr);

/* keys_load - keys_parse of the file @path; ORCH_EIO when it cannot be read, ORCH_ERANGE. */
orch_err keys_load(const char *path, struct api_keys *ret, struct orch_errinfo *reterr);

/*
 * keys_reload - SIGHUP: read @path again into @k. On any failure (unreadable,
 * a bad line, no key left) @k keeps its keys and the error is logged
 * (api_keys_reload_failed); on success the new set replaces it, logged.
 */
orch_err keys_reload(struct api_keys *k, const char *path);

/*
 * keys_apply - keys_reload's second half, for a file read elsewhere (reload.c, off the
 * loop): keys_load's result (@rv, @fresh, @e) for @path applied to @k; @fresh is taken.
 */
orch_err keys_apply(struct api_keys *k, const char *path, orch_err rv, struct api_keys *fresh,
                    const struct orch_errinfo *e);

/* keys_free - free @k's keys (NULL-safe fields); @k is empty after. */
void keys_free(struct api_keys *k);

/*
 * keys_bearer - the token of an Authorization header value @h: the scheme
 * "Bearer" in any case, one or more spaces or tabs, then the token (blanks
 * around it ignored). False for another scheme, no token, or a blank inside.
 */
bool keys_bearer(const char *h, const char **ret_tok, size_t *ret_n);

/*
 * keys_check - the key the Authorization header value @h (NULL: none)
 * presents, or NULL. Every key is compared, by digest, without an early
 * exit: the time taken says nothing about how close a guess came.
 */
const struct api_key *keys_check(const struct api_keys *k, const char *h);

/* keys_token_equal - whether the token of @h equals @want, compared as keys_check does. */
bool keys_token_equal(const char *h, const char *want);

/* keys_model_ok - whether @key (NULL: no keys in force) may use the model @model. */
bool keys_model_ok(const struct api_key *key, const char *model);
