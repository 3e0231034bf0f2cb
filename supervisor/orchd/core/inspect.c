/*
 * inspect.c - model files read on helper threads (inspect.h): each read is
 * a work of offload.h; its thread touches only its own request (path,
 * sizes in; facts out).
 */
#include "inspect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "gguf/gguf.h"
#include "gguf/ident.h"
#include "gguf/model_info.h"
#include "offload.h"
#include "orchd.h"

struct inspect {
	inspect_fn fn;
	void *arg;
	bool cancelled;             /* the loop's: the thread never reads it */
	struct inspect_shape shape; /* slots 0: no estimate */
	struct inspect_facts facts;
	char path[]; /* NUL-terminated */
};

/* ---- the helper thread ---- */

/* The memory estimate of @s's workers of @mi (inspect_shape). */
static orch_err
estimate(const struct inspect_shape *s, const struct model_info *mi, struct mem_estimate *ret)
{
	uint32_t ctx = s->context, bt = s->kv_block_tokens;
	struct mem_kv kv = {.pool_bytes = (uint64_t)s->kv_cache_mib << 20, .block_tokens = bt};

	if (ctx == 0)
		ctx = model_default_ctx(mi);
	if (!s->paged)
		return model_mem_estimate(mi, ctx, s->slots, 2, ret);
	if (s->kv_fraction > 0 && /* the worker's sum (engine.c); it refuses a pool of 1 byte */
	    model_kv_fraction_pool(mi, ctx, s->slots, 2, bt, s->kv_fraction, s->mem_total,
	                           &kv.pool_bytes) != ORCH_OK)
		kv.pool_bytes = 1;
	return model_mem_estimate_kv(mi, ctx, s->slots, 2, &kv, ret);
}

static void
read_facts(struct inspect *q)
{
	struct inspect_facts *f = &q->facts;
	struct orch_errinfo e = {0};
	struct gguf_file *g = NULL;
	struct model_info mi;
	struct mem_estimate est;
	struct stat st;
	/* O_NONBLOCK: a FIFO's open does not wait for a writer; only a regular file is read */
	int fd = open(q->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		f->rv = ORCH_EIO;
		snprintf(f->msg, sizeof(f->msg), "%s: %s", q->path,
		         fd < 0 ? strerror(errno) : "not a regular file");
		if (fd >= 0)
			close(fd);
		return;
	}
	/* the file just checked, not whatever the path names by now (a FIFO swapped in) */
	char self[64];
	int k = snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	f->rv = gguf_open(self, &g, &e);
	close(fd);
	if (f->rv != ORCH_OK) { /* its messages name @self: say the path instead */
		bool named = strncmp(e.msg, self, (size_t)k) == 0;
		snprintf(f->msg, sizeof(f->msg), "%s%s", named ? q->path : "",
		         e.msg + (named ? k : 0));
		return;
	}
	if ((f->rv = model_info_get(g, &mi, &e)) != ORCH_OK) {
		snprintf(f->msg, sizeof(f->msg), "%s", e.msg);
		gguf_close(g);
		return;
	}
	f->has_chat_template = mi.chat_template_bytes > 0;
	const char *dominant = gguf_dominant_type(g);
	f->model = (struct inspect_model){
	        .known = true, .file_bytes = (uint64_t)st.st_size, .n_ctx_train = mi.n_ctx_train};
	snprintf(f->model.arch, sizeof(f->model.arch), "%s", mi.arch);
	snprintf(f->model.quant_kind, sizeof(f->model.quant_kind), "%s", dominant ? dominant : "");
	if (q->shape.slots > 0 && estimate(&q->shape, &mi, &est) == ORCH_OK) {
		f->need_bytes = est.total - MODEL_RUNTIME_OVERHEAD_BYTES;
		f->has_estimate = true;
	} else if (q->shape.slots > 0) {
		snprintf(f->missing, sizeof(f->missing), "%s", mi.missing ? mi.missing : "?");
	}
	gguf_close(g); /* mi's strings point into it: nothing of them is kept */
}

/* The work of a read (offload.h): on its thread, touching only @arg. */
static void
work(void *arg)
{
	read_facts(arg);
}

/* ---- the loop ---- */

static void
done(struct orchd *d, void *arg, bool live)
{
	struct inspect *q = arg;

	d->insp_pending--;
	if (live && !q->cancelled)
		q->fn(d, q->arg, &q->facts);
	orch_free(q);
}

orch_err
inspect_start(struct orchd *d, const char *path, const struct inspect_shape *shape, inspect_fn fn,
              void *arg, struct inspect **ret, struct orch_errinfo *reterr)
{
	size_t n = strlen(path);
	struct inspect *q;
	orch_err rv;

	if (ret)
		*ret = NULL;
	if ((q = orch_calloc(1, sizeof(*q) + n + 1)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	*q = (struct inspect){.fn = fn, .arg = arg};
	if (shape != NULL)
		q->shape = *shape;
	memcpy(q->path, path, n + 1);
	if ((rv = offload_start(d, work, done, q, reterr)) != ORCH_OK) {
		orch_free(q);
		return rv;
	}
	d->insp_pending++;
	if (ret)
		*ret = q;
	return ORCH_OK;
}

void
inspect_cancel(struct inspect *q)
{
	if (q != NULL)
		q->cancelled = true;
}

uint32_t
inspect_pending(const struct orchd *d)
{
	return d->insp_pending;
}
