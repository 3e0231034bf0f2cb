#pragma once
/*
 * offload.h - work that may take milliseconds or block, done off the loop
 * (issue 16 item 2, issue 52 A1 and A5).
 *
 * A model file's header (inspect.h), SIGHUP's files (reload.h) and a large
 * request body's parse and grammar compilation (api_parse.c) each run on a
 * short-lived thread of their own; what the thread made is handed back to
 * the loop, which applies it. The thread touches only its work's argument:
 * everything the loop owns stays on the loop. Thread: the loop, except
 * where said.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

struct orchd;

/* The most pieces of work started and not yet handed back; more are refused. */
#define OFFLOAD_MAX 64
/* Their threads' nice value: the loop, at its own, keeps about ten times their share of a
 * busy core (issue 52's attack: 30 clients' schemas froze /health for 3.5 s on 2 cores). */
#define OFFLOAD_NICE 10

/* offload_work_fn - on the work's own thread: reads and writes only @arg. */
typedef void (*offload_work_fn)(void *arg);

/*
 * offload_done_fn - on the loop, once per started work, after its thread
 * ran it: @live, apply it; !@live (orchd is stopping), only free @arg.
 */
typedef void (*offload_done_fn)(struct orchd *d, void *arg, bool live);

/*
 * offload_start - run @work(@arg) on a new thread (process signals blocked
 * there), then @done(@arg) on the loop. ORCH_EOVERLOADED at OFFLOAD_MAX,
 * ORCH_ENOMEM, ORCH_EIO (no pipe or thread): nothing runs then, @arg is
 * still the caller's.
 */
orch_err offload_start(struct orchd *d, offload_work_fn work, offload_done_fn done, void *arg,
                       struct orch_errinfo *reterr);

/* offload_pending - work started and not handed back yet (tests wait for 0). */
uint32_t offload_pending(const struct orchd *d);

/*
 * offload_stop - at exit: work still running gets 100 ms to finish; work
 * handed back but not applied gets its done (!live); work whose thread still
 * runs then (stuck in a read?) is left to the process's exit, with its pipe.
 */
void offload_stop(struct orchd *d);
