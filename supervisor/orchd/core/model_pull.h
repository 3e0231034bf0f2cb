#pragma once
/*
 * model_pull.h - models named by reference (`model = hf:ORG/REPO:QUANT`,
 * issue 21): the reference's file in the model store (store.h), or, for a
 * model with `pull = yes`, pulled into it first on a helper thread (hf.h)
 * while the model is loading; the loop learns the end through a pipe. The
 * store is [server] model_dir, else $STATE_DIRECTORY/models (systemd's
 * StateDirectory=orchd: /var/lib/orchd/models), else the user's default
 * (store_default_dir). A token for gated repositories comes from
 * [server] hf_token_file or $HF_TOKEN; the endpoint from $HF_ENDPOINT;
 * HF_HUB_OFFLINE=1 never pulls. Thread: the loop, except where said.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct orchd;
struct model_pull;

/* model_pull_fn - on the loop, once: @rv ORCH_OK and the file to serve in @path, or why not. */
typedef void (*model_pull_fn)(struct orchd *d, void *arg, orch_err rv, const char *path,
                              const char *msg);

/* model_pull_dir - the model store's directory into @buf (see above). */
orch_err model_pull_dir(const struct orchd *d, char *buf, size_t n, struct orch_errinfo *reterr);

/*
 * model_pull_find - @ref's file in the store now, into @path (no network). ORCH_ENOTFOUND
 * when the store lacks it (the message says how to get it), ORCH_EIO for a store it cannot
 * open.
 */
orch_err model_pull_find(const struct orchd *d, const char *ref, char *path, size_t n,
                         struct orch_errinfo *reterr);

/*
 * model_pull_start - pull @ref into the store on a helper thread, then @fn(@arg) on the loop;
 * *@ret is the pull (model_pull_progress, model_pull_cancel). @token: the one to use (an
 * admin client's), NULL: orchd's own. ORCH_ENOMEM, ORCH_EIO.
 */
orch_err model_pull_start(struct orchd *d, const char *ref, const char *token, model_pull_fn fn,
                          void *arg, struct model_pull **ret, struct orch_errinfo *reterr);

/* What a pull has done so far (any thread may be writing it: a snapshot). */
struct model_pull_state {
	char file[256];
	uint32_t index, n_files;
	uint64_t done, total;
};

/* model_pull_progress - @p's progress now. */
void model_pull_progress(struct model_pull *p, struct model_pull_state *ret);

/* model_pull_cancel - stop @p (the partial file stays for the next pull); @fn will not run. */
void model_pull_cancel(struct model_pull *p);
