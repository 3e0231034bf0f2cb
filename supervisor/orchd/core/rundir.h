#pragma once
/*
 * rundir.h - orchd's runtime directory (runtime_dir): one orchd per
 * directory, and what a dead orchd left there (issue 16, item 7).
 *
 * orchd holds an exclusive lock on DIR/orchd.lock while it runs; a second
 * orchd on the same directory stops at start with a message instead of
 * taking the first one's sockets. Each worker orchd starts has a pidfile,
 * DIR/worker-ID.pid ("PID STARTTIME": its process and its start time in
 * clock ticks, /proc/PID/stat field 22, so a recycled pid is never taken
 * for it; mode 0640 whatever the umask), removed when orchd reaps it. At start, once the lock is
 * held, the workers those pidfiles name that still run are killed (the same start time, and a
 * program of worker_bin's file name; SIGKILL through a pidfd; a worker normally dies with its
 * supervisor, PR_SET_PDEATHSIG, but a stopped or hung one does not), and the socket files of the
 * channels (worker-*.sock, worker-*.debug, worker-*.debug.ctl) are removed. Nothing else in the
 * directory is touched. Thread: the loop.
 */
#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"

struct orchd;

/*
 * rundir_claim - lock d->cfg.runtime_dir (made if missing) for this orchd;
 * ORCH_EIO when another orchd holds it or it cannot be made or opened.
 * Then kill the left-over workers and remove the stale sockets (logged).
 */
orch_err rundir_claim(struct orchd *d, struct orch_errinfo *reterr);

/* rundir_release - drop the lock (at exit). */
void rundir_release(struct orchd *d);

/* rundir_worker_started - write @id's pidfile for @pid (a failure is logged, not fatal). */
void rundir_worker_started(struct orchd *d, const char *id, pid_t pid);

/* rundir_worker_reaped - remove @id's pidfile; when orchd stops, its debug sockets too. */
void rundir_worker_reaped(struct orchd *d, const char *id);

/*
 * rundir_starttime - @pid's start time in clock ticks since boot (0 when it
 * is not running or cannot be read); a zombie counts as not running.
 */
unsigned long long rundir_starttime(pid_t pid);
