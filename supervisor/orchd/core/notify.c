/*
 * notify.c - sd_notify for orchd (notify.h): the only caller of sd_notify.
 */
#include "notify.h"

#include <time.h>

#include <systemd/sd-daemon.h>

#include "base/log.h"
#include "loop.h"
#include "orchd.h"

void
notify_state(struct orchd *d, const struct notify_status *s)
{
	if (!d->ready_sent && !d->stopping && d->http && s->all_ready) {
		d->ready_sent = true;
		orch_log(ORCH_LOG_INFO, "ready", "models=%u", s->total);
		sd_notify(0, "READY=1");
	}
	sd_notifyf(0, "STATUS=%u/%u models ready, %u jobs running, %u queued%s", s->ready, s->total,
	           s->running, s->queued, d->stopping ? ", stopping" : "");
}

static void
on_watchdog(int fd, short what, void *arg)
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
	uint64_t half_ms = usec / 2000 ? usec / 2000 : 1; /* sd_watchdog_enabled(3): half of it */
	d->ev_watchdog = loop_every(d->base, on_watchdog, d);
	if (d->ev_watchdog)
		loop_after(d->ev_watchdog, half_ms);
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
notify_reloaded(struct orchd *d, const struct notify_status *s)
{
	if (d->ready_sent)
		sd_notify(0, "READY=1");
	notify_state(d, s);
}

void
notify_stopping(struct orchd *d, const struct notify_status *s)
{
	sd_notify(0, "STOPPING=1");
	notify_state(d, s);
}

void
notify_stop(struct orchd *d)
{
	if (d->ev_watchdog)
		loop_free(d->ev_watchdog);
	d->ev_watchdog = NULL;
}
