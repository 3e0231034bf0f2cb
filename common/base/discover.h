#pragma once
/*
 * discover.h - how orchctl finds the orchds its user runs (issue 52, B4).
 *
 * An orchd whose admin socket is bound records it in its user's discovery
 * directory as a symbolic link orchd-PID.sock to the socket, and removes it
 * when it stops: root's is /run/orch, a user's $XDG_RUNTIME_DIR/orch, else
 * /tmp/orch-UID (made 0700; a directory that is not the user's own, or that
 * others can write, is not used). orchctl, given no --socket or
 * $ORCHD_SOCKET and finding no socket at the default place, takes the live
 * orchds listed there (their pid runs, their socket answers): so `make run`'s
 * orchd, whose socket is in the build tree, is found with no setting.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/err.h"

#define ORCH_DISCOVER_PATH_MAX 512 /* a socket path's room (sockaddr_un holds 108) */

/* orch_discover_dir - this user's discovery directory into @out (@n bytes). */
void orch_discover_dir(char *out, size_t n);

/*
 * orch_discover_add - list @socket as the admin socket of orchd @pid. ORCH_EIO
 * when the directory cannot be made or is not the user's own (a failure costs
 * only discovery: the caller logs it and goes on).
 */
orch_err orch_discover_add(const char *socket, pid_t pid, struct orch_errinfo *reterr);

/* orch_discover_remove - take orchd @pid's entry out. */
void orch_discover_remove(pid_t pid);

/* orch_discover_answers - whether something listens on the unix socket @path (a connect). */
bool orch_discover_answers(const char *path);

/*
 * orch_discover_list - the admin sockets of this user's orchds that run and answer
 * a connect, newest first, at most @max into @out; their count. Entries of orchds
 * that are gone are removed.
 */
size_t orch_discover_list(char (*out)[ORCH_DISCOVER_PATH_MAX], size_t max);
