#pragma once
/*
 * notify.h - systemd notifications (STYLE.md rule 10): the only module
 * that calls sd_notify. READY=1 once every preloaded model is READY,
 * STATUS= on each change, WATCHDOG=1 from a loop timer at half of
 * sd_watchdog_enabled(), RELOADING=1 + MONOTONIC_USEC around a SIGHUP
 * reload, STOPPING=1 on shutdown. Return values are ignored.
 */
#include <stdbool.h>
#include <stdint.h>

struct orchd;

/* What the status line says, as the registry counts it (models_status). */
struct notify_status {
	uint32_t ready, total;    /* models */
	uint32_t running, queued; /* jobs */
	bool all_ready;           /* every model wanted is READY */
};

/* notify_state - readiness or the status line may have changed. Thread: the loop. */
void notify_state(struct orchd *d, const struct notify_status *s);

/* notify_watchdog_start - arm the WATCHDOG=1 timer when systemd asks for one. */
void notify_watchdog_start(struct orchd *d);

/* notify_reloading - RELOADING=1 with MONOTONIC_USEC, before a reload. */
void notify_reloading(void);

/* notify_reloaded - READY=1 after a reload (and a new STATUS=). */
void notify_reloaded(struct orchd *d, const struct notify_status *s);

/* notify_stopping - STOPPING=1 and the status line. */
void notify_stopping(struct orchd *d, const struct notify_status *s);

/* notify_stop - free the watchdog timer. */
void notify_stop(struct orchd *d);
