/*
 * loop.c - the core's timers and watches on libevent (loop.h).
 */
#include "loop.h"

#include <event2/event.h>

_Static_assert(LOOP_TIMEOUT == EV_TIMEOUT && LOOP_READ == EV_READ && LOOP_WRITE == EV_WRITE &&
                       LOOP_PERSIST == EV_PERSIST,
               "loop.h's flags are libevent's");
_Static_assert(_Generic((evutil_socket_t)0, int : 1, default : 0),
               "loop_fn takes the descriptor as libevent's callbacks do");

struct event *
loop_timer(struct event_base *base, loop_fn fn, void *arg)
{
	return event_new(base, -1, 0, fn, arg);
}

struct event *
loop_every(struct event_base *base, loop_fn fn, void *arg)
{
	return event_new(base, -1, EV_PERSIST, fn, arg);
}

struct event *
loop_watch(struct event_base *base, int fd, short what, loop_fn fn, void *arg)
{
	return event_new(base, fd, what, fn, arg);
}

void
loop_after(struct event *ev, uint64_t ms)
{
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

	event_add(ev, &tv);
}

void
loop_start(struct event *ev)
{
	event_add(ev, NULL);
}

void
loop_stop(struct event *ev)
{
	if (ev != NULL)
		event_del(ev);
}

void
loop_free(struct event *ev)
{
	if (ev != NULL)
		event_free(ev);
}

bool
loop_armed(const struct event *ev)
{
	return event_pending(ev, EV_TIMEOUT, NULL) != 0;
}

void
loop_exit(struct event_base *base)
{
	event_base_loopexit(base, NULL);
}

struct event_base *
loop_base_new(void)
{
	return event_base_new();
}

void
loop_base_free(struct event_base *base)
{
	if (base != NULL)
		event_base_free(base);
}

void
loop_turn(struct event_base *base, bool once)
{
	event_base_loop(base, EVLOOP_NONBLOCK | (once ? EVLOOP_ONCE : 0));
}
