/*
 * jobs_keep.c - finished jobs kept for resuming (jobs.h).
 *
 * Only native jobs are kept: the one API whose jobs a client can follow
 * again. When one ends, what a resume cannot need goes (the request went in
 * finish()), its event texts are packed into one block and its event array
 * shrunk; then it joins the kept list, oldest first, with its bytes counted.
 * It stays events_keep_s, while the kept jobs number at most
 * events_keep_jobs and take at most events_keep_bytes: past either cap the
 * oldest go first. A job someone follows is never evicted (its stream would
 * be cut), nor the one ending right now (its followers have not read its
 * end yet), so the caps may be passed until they let go; the job's timer
 * then runs the eviction again.
 */
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "job_logprobs.h"
#include "jobs.h"
#include "loop.h"
#include "orchd.h"

/* What malloc adds to each block, roughly (glibc: 8-16 bytes and 16-byte rounding). */
#define MALLOC_OVERHEAD 16

/* The event texts of @j in one block; the event array no larger than its events. */
static void
pack(struct job *j)
{
	size_t total = 0;
	char *block, *p;

	for (uint32_t k = 0; k < j->n_events; k++)
		if (j->events[k].text != NULL)
			total += strlen(j->events[k].text) + 1;
	if (total > 0 && (block = orch_malloc(total)) != NULL) { /* else they stay apart */
		p = block;
		for (uint32_t k = 0; k < j->n_events; k++) {
			char *t = j->events[k].text;
			if (t == NULL)
				continue;
			size_t n = strlen(t) + 1;
			memcpy(p, t, n);
			orch_free(t);
			j->events[k].text = p;
			p += n;
		}
		j->packed = block;
		j->packed_bytes = total;
	}
	struct job_event *e =
	        j->n_events ? orch_reallocarray(j->events, j->n_events, sizeof(*e)) : NULL;
	if (e != NULL) {
		j->events = e;
		j->cap_events = j->n_events;
	}
}

uint64_t
jobs_bytes(const struct job *j)
{
	uint64_t n = sizeof(*j) + MALLOC_OVERHEAD;

	n += (uint64_t)j->cap_events * sizeof(*j->events) + MALLOC_OVERHEAD;
	n += job_lp_bytes(j);
	if (j->echo != NULL)
		n += strlen(j->echo) + 1 + MALLOC_OVERHEAD;
	if (j->text.p != NULL)
		n += j->text.cap + MALLOC_OVERHEAD;
	for (uint32_t k = 0; k < j->n_msgs; k++)
		n += sizeof(*j->msgs) + strlen(j->msgs[k].channel) + strlen(j->msgs[k].recipient) +
		     2 + 2 * MALLOC_OVERHEAD;
	if (j->packed != NULL)
		return n + j->packed_bytes + MALLOC_OVERHEAD;
	for (uint32_t k = 0; k < j->n_events; k++)
		if (j->events[k].text != NULL)
			n += strlen(j->events[k].text) + 1 + MALLOC_OVERHEAD;
	return n;
}

/* Whether the kept jobs are over a cap. */
static bool
over(const struct orchd *d)
{
	return d->n_kept > d->cfg.events_keep_jobs || d->kept_bytes > d->cfg.events_keep_bytes;
}

void
jobs_keep_evict(struct orchd *d, const struct job *spare)
{
	for (struct job *j = d->kept_head, *next; j != NULL && over(d); j = next) {
		next = j->kept_next;
		if (j == spare || j->watches != NULL)
			continue;
		d->metrics.jobs_evicted++;
		jobs_free(d, j); /* out of the kept list and its counts */
	}
}

bool
jobs_keep(struct orchd *d, struct job *j)
{
	if (j->kind != JOB_NATIVE || d->cfg.events_keep_s == 0 || d->cfg.events_keep_jobs == 0 ||
	    d->cfg.events_keep_bytes == 0)
		return false;
	pack(j);
	j->kept = true;
	j->kept_bytes = jobs_bytes(j);
	j->kept_prev = d->kept_tail;
	if (d->kept_tail)
		d->kept_tail->kept_next = j;
	else
		d->kept_head = j;
	d->kept_tail = j;
	d->n_kept++;
	d->kept_bytes += j->kept_bytes;
	jobs_keep_evict(d, j);
	return true;
}

void
jobs_keep_drop(struct orchd *d, struct job *j)
{
	if (!j->kept)
		return;
	if (j->kept_prev)
		j->kept_prev->kept_next = j->kept_next;
	else
		d->kept_head = j->kept_next;
	if (j->kept_next)
		j->kept_next->kept_prev = j->kept_prev;
	else
		d->kept_tail = j->kept_prev;
	j->kept_prev = j->kept_next = NULL;
	d->n_kept--;
	d->kept_bytes -= j->kept_bytes;
	j->kept = false;
}

bool
jobs_keep_tick(struct orchd *d, struct job *j)
{
	uint64_t until = j->ended_ms + d->cfg.events_keep_s * 1000ull, now = orch_mono_ms();

	if (!j->kept || now >= until)
		return false;
	loop_after(j->ev_timer, until - now);
	jobs_keep_evict(d, NULL); /* may free @j */
	return true;
}
