#pragma once
/*
 * store.h - the model store (issue 21): one directory holding model files by
 * content, and an index from references ("hf:ORG/REPO:QUANT") to them.
 *
 *   DIR/blobs/sha256-HEX            a file, named by its SHA-256; HEX.sha256 beside it is
 *                                   the digest cache the worker reads (filehash.h), so a
 *                                   pulled model is never hashed again
 *   DIR/blobs/sha256-HEX.partial    a download in progress (resumed from its length)
 *   DIR/blobs/sha256-HEX.lock       held (flock) by whoever downloads HEX: a second
 *                                   pull of the same file waits, then finds it done
 *   DIR/snapshots/ORG/REPO/COMMIT/PATH  a link to the blob, by the repository's name
 *                                   for it (a split GGUF's parts stay side by side), the
 *                                   digest cache beside it as well
 *   DIR/index.json                  {"version": 1, "refs": {REF: entry}}, replaced
 *                                   whole (temporary file, rename) under DIR/index.lock
 *
 * A file enters blobs/ only once its size and SHA-256 are those the
 * repository lists. Files shared by several references are stored once;
 * removing a reference deletes the blobs no other reference names.
 * Library code: nothing here prints or logs. Thread: one caller per store.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/sha256.h"

struct cJSON;
struct store;

/* One file of a reference. */
struct store_file {
	char *path; /* in the repository ("Qwen2.5-0.5B-Instruct-Q4_K_M.gguf") */
	char sha256[SHA256_HEX];
	uint64_t size;
};

/* A reference and what it resolved to when it was pulled. */
struct store_entry {
	char *ref;                /* canonical ("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M") */
	char *repo;               /* "Qwen/Qwen2.5-0.5B-Instruct-GGUF" */
	char *revision;           /* as asked ("main") */
	char *commit;             /* the commit it resolved to ("" when the server said none) */
	struct store_file *files; /* the first is the one a worker loads */
	uint32_t n_files;
	int64_t pulled_unix; /* when */
};

/*
 * store_default_dir - where the store is when nothing names it: $ORCH_MODEL_DIR; for root,
 * /var/lib/orchd/models; else $XDG_CACHE_HOME/orch/models or ~/.cache/orch/models.
 * ORCH_ERANGE when it does not fit @n bytes; ORCH_ENOTFOUND with no HOME to go by.
 */
orch_err store_default_dir(char *buf, size_t n, struct orch_errinfo *reterr);

/*
 * store_open - the store in @dir; with @create, made (with blobs/ and snapshots/) when missing,
 * else ORCH_ENOTFOUND when there is none (listing or removing makes nothing).
 */
orch_err store_open(const char *dir, bool create, struct store **ret, struct orch_errinfo *reterr);

/* store_close - release @s; NULL is fine. */
void store_close(struct store *s);

/* store_dir - the directory @s is in. */
const char *store_dir(const struct store *s);

/*
 * store_list - every reference in the index, in the index's order, into *@ret (free with
 * store_entries_free). ORCH_EIO, ORCH_EINVAL for an index that is not the store's.
 */
orch_err store_list(struct store *s, struct store_entry **ret, uint32_t *ret_n,
                    struct orch_errinfo *reterr);

/* store_find - reference @ref into *@ret (store_entry_fini it); ORCH_ENOTFOUND when absent. */
orch_err store_find(struct store *s, const char *ref, struct store_entry *ret,
                    struct orch_errinfo *reterr);

/*
 * store_put - add @en to the index, replacing a reference of the same name; its files must be
 * in blobs/ (ORCH_ENOTFOUND names the one that is not). Makes the snapshot links too.
 */
orch_err store_put(struct store *s, const struct store_entry *en, struct orch_errinfo *reterr);

/*
 * store_remove - take @ref out of the index and delete its snapshot links and the blobs no
 * other reference uses. ORCH_ENOTFOUND when it is not there.
 */
orch_err store_remove(struct store *s, const char *ref, struct orch_errinfo *reterr);

/* store_blob_path - the blob of @sha256 (with @suffix: "", ".partial", ".lock"). */
orch_err store_blob_path(const struct store *s, const char *sha256, const char *suffix, char *buf,
                         size_t n, struct orch_errinfo *reterr);

/* store_has_blob - whether the blob of @sha256 is there, of @size bytes. */
bool store_has_blob(const struct store *s, const char *sha256, uint64_t size);

/*
 * store_model_path - the path a worker loads for @en: its first file's snapshot link (a
 * split GGUF's parts beside it under their own names).
 */
orch_err store_model_path(const struct store *s, const struct store_entry *en, char *buf, size_t n,
                          struct orch_errinfo *reterr);

/*
 * store_lock_blob - wait for and take the lock of @sha256's download (*@ret_fd: give it to
 * store_unlock). ORCH_EIO.
 */
orch_err store_lock_blob(const struct store *s, const char *sha256, int *ret_fd,
                         struct orch_errinfo *reterr);

/* store_unlock - release a lock store_lock_blob took. */
void store_unlock(int fd);

/* store_entry_json - @en as the index has it: repo, revision, commit, pulled_unix, files. */
struct cJSON *store_entry_json(const struct store_entry *en);

/* store_entry_fini - free what @en holds (not @en); a zeroed entry is fine. */
void store_entry_fini(struct store_entry *en);

/* store_entries_free - free @n entries at @v and @v. */
void store_entries_free(struct store_entry *v, uint32_t n);
