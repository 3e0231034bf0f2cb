/*
 * notify.c - sd_notify for orchd (notify.h): the only caller of sd_notify.
 */
#include "notify.h"

#include <time.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "base/log.h"
#include "models.h"
#include "orchd.h"
#include "workers.h"

void
notify_state(struct orchd *d)
{
	uint32_t ready = 0, total = 0, running = 0, queued = 0;

	for (struct model_entry *m = d->models; m; m = m->next) {
		total++;
		ready += m->state == MODEL_READY;
		queued += m->queued;
		for (uint32_t i = 0; i < m->n_workers; i++)
			running += m->workers[i]->jobs;
	}
	if (!d->ready_sent && !d->stopping && d->http && models_all_ready(d)) {
		d->ready_sent = true;
		orch_log(ORCH_LOG_INFO, "ready", "models=%u", total);
		sd_notify(0, "READY=1");
	}
	sd_notifyf(0, "STATUS=%u/%u models ready, %u jobs running, %u queued%s", ready, total,
	           running, queued, d->stopping ? ", stopping" : "");
}

static void
on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

void
notify_watchdog_start(struct orchd *d)
{
	uint64_t usec = 0;

	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return;
	struct timeval half = {(time_t)(usec / 2000000), (suseconds_t)(usec / 2 % 1000000)};
	d->ev_watchdog = event_new(d->base, -1, EV_PERSIST, on_watchdog, d);
	if (d->ev_watchdog)
		event_add(d->ev_watchdog, &half);
	sd_notify(0, "WATCHDOG=1");
}

void
notify_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
	           (unsigned long long)ts.tv_sec * 1000000ull +
	                   (unsigned long long)ts.tv_nsec / 1000ull);
}

void
notify_reloaded(struct orchd *d)
{
	if (d->ready_sent)
		sd_notify(0, "READY=1");
	notify_state(d);
}

void
notify_stopping(struct orchd *d)
{
	sd_notify(0, "STOPPING=1");
	notify_state(d);
}

void
notify_stop(struct orchd *d)
{
	if (d->ev_watchdog)
		event_free(d->ev_watchdog);
	d->ev_watchdog = NULL;
}
