#pragma once
/*
 * reload.h - SIGHUP: the config file and the API keys file read again, off
 * the loop (issue 52, A5).
 *
 * A file on a hung mount, or a FIFO named as the config, must not stall
 * every client: both files are read on a short-lived thread (regular files
 * only, opened without blocking), and what was read is applied on the loop:
 * the keys (a file that cannot be read or holds no key keeps the keys in
 * force), then the models (added ones start when preloaded, removed or
 * changed ones drain; models added with orchctl load are not the file's). A
 * SIGHUP that comes while a reload is read is done once that one is applied.
 * Thread: the loop.
 */
#include "base/err.h"

struct orchd;

/* reload_start - read and apply the files again (RELOADING=1 now, READY=1 when applied). */
void reload_start(struct orchd *d);
