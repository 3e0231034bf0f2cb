#pragma once
/*
 * hf.h - models named by Hugging Face reference (issue 21), pulled into the
 * model store (store.h).
 *
 * A reference is one of
 *   hf:ORG/REPO[:QUANT][@REV]     the GGUF of that quant kind in the repository (default
 *                                 Q4_K_M, as llama.cpp's -hf); a split GGUF, every part
 *   hf:ORG/REPO/PATH.gguf[@REV]   that file
 * REV is a branch, tag or commit (default "main"). Its canonical spelling
 * (the store's key): the quant upper-cased, "@REV" only when not "main".
 *
 * The puller lists the repository (GET ENDPOINT/api/models/ORG/REPO/tree/REV?recursive=true),
 * picks the files, and fetches each one the store lacks from ENDPOINT/ORG/REPO/resolve/REV/PATH
 * (following the redirect to the content host) with libcurl into the store's partial file,
 * resuming with a Range request after an interruption, and moves it into place only when its
 * size and SHA-256 are the listing's (the LFS oid). A token goes to the hub as a bearer token,
 * never to the content host. Library code: nothing here prints; progress goes to a callback.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "store.h"

struct cJSON;

#define HF_DEFAULT_ENDPOINT "https://huggingface.co"
#define HF_DEFAULT_QUANT    "Q4_K_M"

struct hf_ref {
	char repo[200];  /* "ORG/REPO" */
	char quant[32];  /* upper case; "" with a path */
	char path[512];  /* a file in the repository; "" with a quant */
	char rev[128];   /* "main" unless given */
	char canon[900]; /* the canonical reference */
};

/*
 * hf_ref_parse - @s (starting "hf:") into *@ret. ORCH_EINVAL with what is wrong: not hf:,
 * no ORG/REPO, a name with characters Hugging Face does not allow, a path that is not a
 * .gguf or leaves the repository, a bad quant or revision.
 */
orch_err hf_ref_parse(const char *s, struct hf_ref *ret, struct orch_errinfo *reterr);

/* A file of a repository, from its listing. */
struct hf_file {
	char path[512];
	char sha256[65];
	uint64_t size;
};

/*
 * hf_pick - the files @r names in @tree (the tree API's array): the file of its path, or the
 * GGUF files of its quant (all parts of a split one, part 1 first; never an mmproj file).
 * ORCH_ENOTFOUND saying what the repository has instead; ORCH_EINVAL when several files match
 * (their names in the message) or a file has no LFS SHA-256 to check; *@ret has room for
 * @cap files.
 */
orch_err hf_pick(const struct hf_ref *r, const struct cJSON *tree, struct hf_file *ret,
                 uint32_t cap, uint32_t *ret_n, struct orch_errinfo *reterr);

/* What a pull is doing, for progress: file @index of @n_files, @done of @total bytes. */
struct hf_progress {
	const char *path;
	uint32_t index, n_files;
	uint64_t done, total;
	uint64_t resumed_from; /* bytes already there when this file's transfer started */
	bool finished;         /* this file is in place (or was already) */
};

typedef void (*hf_progress_fn)(void *ctx, const struct hf_progress *p);

struct hf_opts {
	const char *endpoint; /* NULL: $HF_ENDPOINT, else HF_DEFAULT_ENDPOINT */
	const char *token;    /* NULL: none (the caller reads $HF_TOKEN or a file) */
	bool offline;         /* never touch the network: the store has it or it is an error */
	hf_progress_fn progress;
	void *progress_ctx;
	uint32_t retries; /* transfers of one file after an interruption (0: 5) */
	/* when it turns true (another thread), the pull stops: ORCH_ECANCELLED, the partial
	 * file kept for the next pull (NULL: never) */
	const atomic_bool *stop;
};

/*
 * hf_pull - make @r's files present in @s and its reference in the index; *@ret (store_entry_fini
 * it) is the entry. Errors say what to do: ORCH_EUNAUTHORIZED (gated or private: a token is
 * needed, or the one given is not allowed), ORCH_ENOTFOUND (the repository, revision or file
 * does not exist, or offline and not in the store), ORCH_EIO (network, disk full, the
 * checksum: the partial file is removed), ORCH_ERANGE (not enough disk space: needed and free
 * bytes).
 */
orch_err hf_pull(struct store *s, const struct hf_ref *r, const struct hf_opts *o,
                 struct store_entry *ret, struct orch_errinfo *reterr);
