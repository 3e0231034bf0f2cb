#pragma once
/*
 * loop.h - orchd's one event loop as the core sees it: timers and
 * descriptor watches. Each is a libevent event behind an opaque pointer, so
 * that only loop.c, the HTTP edge and main.c include libevent (issue 53).
 * Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

struct event;
struct event_base;

/* A watch's or timer's callback: the descriptor (-1 for a timer), what happened, its arg. */
typedef void (*loop_fn)(int fd, short what, void *arg);

enum {
	LOOP_TIMEOUT = 0x01, /* libevent's EV_TIMEOUT, EV_READ, EV_WRITE, EV_PERSIST */
	LOOP_READ = 0x02,
	LOOP_WRITE = 0x04,
	LOOP_PERSIST = 0x10,
};

/* loop_timer - a one-shot timer on @base calling @fn(-1, LOOP_TIMEOUT, @arg); NULL: no memory. */
struct event *loop_timer(struct event_base *base, loop_fn fn, void *arg);

/*
 * loop_every - a periodic timer on @base calling @fn(-1, LOOP_TIMEOUT, @arg) each
 * period loop_after sets (a later loop_after fires once more, after its own
 * delay, then keeps that period); NULL: no memory.
 */
struct event *loop_every(struct event_base *base, loop_fn fn, void *arg);

/* loop_watch - a watch of @fd for @what (LOOP_READ, LOOP_WRITE, LOOP_PERSIST); NULL: no memory. */
struct event *loop_watch(struct event_base *base, int fd, short what, loop_fn fn, void *arg);

/* loop_after - (re)arm @ev to fire in @ms milliseconds (0: on the loop's next turn). */
void loop_after(struct event *ev, uint64_t ms);

/* loop_start - arm watch @ev with no timeout. */
void loop_start(struct event *ev);

/* loop_stop - disarm @ev (nothing when it is not armed, or NULL). */
void loop_stop(struct event *ev);

/* loop_free - disarm and free @ev (NULL is fine). */
void loop_free(struct event *ev);

/* loop_armed - whether timer @ev is armed. */
bool loop_armed(const struct event *ev);

/* loop_base_new - a loop of its own (the unit tests'; orchd's is main.c's); NULL: no memory. */
struct event_base *loop_base_new(void);

/* loop_base_free - free @base (NULL is fine). */
void loop_base_free(struct event_base *base);

/* loop_turn - run what is ready on @base, without waiting (@once: one round only). */
void loop_turn(struct event_base *base, bool once);

/* loop_exit - make @base's loop return after its current turn. */
void loop_exit(struct event_base *base);
