/*
 * placement.c - whether a worker fits on its device before it is started.
 *
 * A model needs its memory estimate (common/gguf/model_info.h, what `orchctl
 * inspect` prints; read off the loop, inspect.h, before its workers start)
 * for its slots and context; on cpu less the CUDA runtime
 * part. A device has its free memory now (NVML, /proc/meminfo) minus the
 * estimates of our workers still starting or loading there (their memory is
 * not taken yet) minus vram_headroom_mib on a GPU; on cpu, cpu_memory_mib
 * when set also caps the sum of our workers' estimates.
 *
 * Short of memory, with evict = lru, the idle models on that device (READY,
 * nothing running or queued) are unloaded least recently used first, just
 * enough of them (chosen here, unloaded by the registry), and the start
 * waits (up to evict_wait_s) for their memory to come back; while any model
 * there is unloading anyway, the start waits for it rather than evicting
 * more. Otherwise the start is refused with INSUFFICIENT_VRAM naming the
 * bytes needed and free.
 */
#include "placement.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "gguf/model_info.h"
#include "model.h"
#include "orchd.h"
#include "workers.h"

#define MIB (1024.0 * 1024.0)

/* @m's estimate on device @dev ("cpu" or "cuda:N"); false when unknown. */
static bool
need_on(struct model_entry *m, const char *dev, uint64_t *need)
{
	if (!m->need_known)
		return false;
	*need = m->need_bytes;
	if (strcmp(dev, "cpu") != 0)
		*need += MODEL_RUNTIME_OVERHEAD_BYTES;
	return true;
}

/* What our workers on @dev hold or are about to: all of it, and the part not taken yet. */
static void
ours_on(struct orchd *d, const char *dev, uint64_t *all, uint64_t *pending, bool *unloading)
{
	*all = *pending = 0;
	*unloading = false;
	for (struct model_entry *m = d->models; m; m = m->next) {
		for (uint32_t i = 0; i < m->n_workers; i++) {
			struct worker *w = m->workers[i];
			uint64_t need;
			if (strcmp(w->device, dev) != 0)
				continue;
			if (m->state == MODEL_UNLOADING && w->pid > 0)
				*unloading = true;
			if (!need_on(m, dev, &need))
				continue;
			if (w->pid > 0 || w->state == WORKER_BACKOFF)
				*all += need;
			if (w->state == WORKER_STARTING || w->state == WORKER_LOADING)
				*pending += need;
		}
	}
}

/* Whether @v can be evicted to make room on @dev: idle, and there. */
static bool
idle_on(const struct model_entry *v, const char *dev)
{
	bool there = false;

	if (v->state != MODEL_READY || v->queued > 0)
		return false;
	for (uint32_t i = 0; i < v->n_workers; i++) {
		if (v->workers[i]->jobs > 0)
			return false;
		there |= strcmp(v->workers[i]->device, dev) == 0 && v->workers[i]->pid > 0;
	}
	return there;
}

/* Bytes evicting @v frees on @dev. */
static uint64_t
frees_on(struct model_entry *v, const char *dev)
{
	uint64_t sum = 0, need;

	for (uint32_t i = 0; i < v->n_workers; i++)
		if (strcmp(v->workers[i]->device, dev) == 0 && v->workers[i]->pid > 0 &&
		    need_on(v, dev, &need))
			sum += need;
	return sum;
}

/*
 * Chooses the least recently used idle models on @dev, into @ev, until
 * @short_by bytes would be freed; false, choosing none, when all of them would
 * not do.
 */
static bool
evict(struct orchd *d, struct model_entry *m, const char *dev, uint64_t short_by,
      struct place_evict *ev)
{
	struct model_entry *order[PLACE_EVICT_MAX];
	uint32_t n = 0;
	uint64_t can = 0;

	for (struct model_entry *v = d->models; v && n < PLACE_EVICT_MAX; v = v->next)
		if (v != m && idle_on(v, dev))
			order[n++] = v;
	for (uint32_t i = 1; i < n; i++) /* by last use, oldest first; never used first of all */
		for (uint32_t j = i; j > 0 && order[j]->last_used_ms < order[j - 1]->last_used_ms;
		     j--) {
			struct model_entry *t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (uint32_t i = 0; i < n; i++)
		can += frees_on(order[i], dev);
	if (can < short_by)
		return false;
	for (uint32_t i = 0; i < n && short_by > 0; i++) {
		uint64_t f = frees_on(order[i], dev);
		orch_log(ORCH_LOG_NOTICE, "evict", "model=%s device=%s frees=%llu for=%s",
		         order[i]->cfg.name, dev, (unsigned long long)f, m->cfg.name);
		order[i]->met.evictions++;
		ev->v[ev->n++] = order[i];
		short_by = f >= short_by ? 0 : short_by - f;
	}
	return true;
}

enum place_result
placement_check(struct orchd *d, struct worker *w, struct place_evict *ev,
                struct orch_errinfo *reterr)
{
	struct model_entry *m = w->model;
	struct device_info *dev = devices_find(&d->devices, w->device);
	uint64_t need, all, pending, avail, headroom = 0;
	bool unloading;

	if (dev == NULL) {
		/* the note (NVML's library, its error) is for the operator: orchctl status shows it
		 */
		orch_errf(reterr, ORCH_EINSUFFICIENT_VRAM,
		          "device %s is not here (orchctl status lists the devices orchd found)",
		          w->device);
		return PLACE_REFUSE;
	}
	if (!need_on(m, w->device, &need))
		return PLACE_FIT; /* no estimate: the worker's own check decides */
	devices_refresh(&d->devices, false);
	ours_on(d, w->device, &all, &pending, &unloading);
	avail = dev->free > pending ? dev->free - pending : 0;
	if (strcmp(w->device, "cpu") != 0) {
		headroom = d->cfg.vram_headroom_bytes;
	} else if (d->cfg.cpu_memory_bytes) {
		uint64_t cap = d->cfg.cpu_memory_bytes > all ? d->cfg.cpu_memory_bytes - all : 0;
		avail = avail < cap ? avail : cap;
	}
	avail = avail > headroom ? avail - headroom : 0;
	if (need <= avail)
		return PLACE_FIT;
	if (unloading)
		return PLACE_WAIT; /* memory is on its way back */
	if (d->cfg.evict == CFG_EVICT_LRU && evict(d, m, w->device, need - avail, ev))
		return PLACE_WAIT;
	orch_errf(reterr, ORCH_EINSUFFICIENT_VRAM,
	          "model '%s' needs %llu bytes (%.1f MiB) on %s; %llu bytes (%.1f MiB) are free "
	          "there for it (%s)%s",
	          m->cfg.name, (unsigned long long)need, (double)need / MIB, w->device,
	          (unsigned long long)avail, (double)avail / MIB,
	          headroom                  ? "after vram_headroom_mib"
	          : d->cfg.cpu_memory_bytes ? "within cpu_memory_mib"
	                                    : "MemAvailable",
	          d->cfg.evict == CFG_EVICT_LRU ? ", even evicting every idle model"
	                                        : " (evict = none)");
	return PLACE_REFUSE;
}
