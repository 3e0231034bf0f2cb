#pragma once
/* orchctl.h - subcommands of orchctl; each returns the process exit code. */

/* orchctl_inspect - "orchctl inspect [--json] [--tensors] [--context N] [--slots S] FILE.gguf...".
 */
int orchctl_inspect(int argc, char **argv);

/* orchctl_status - "orchctl status [--json] [--socket PATH]": models, devices, jobs, uptime. */
int orchctl_status(int argc, char **argv);

/* orchctl_ps - "orchctl ps [--json] [--socket PATH]": one line per worker. */
int orchctl_ps(int argc, char **argv);

/* orchctl_load - "orchctl load NAME [PATH] [--device D] [--slots N] [--context N] [--wait]". */
int orchctl_load(int argc, char **argv);

/* orchctl_unload - "orchctl unload NAME": drain, then stop its workers. */
int orchctl_unload(int argc, char **argv);

/* orchctl_socket - the admin socket: @flag, else $ORCHD_SOCKET, else the default. */
const char *orchctl_socket(const char *flag);

/*
 * orchctl_request - one admin request; the status and the body (free it) in
 * *@status and *@ret. -1 (message printed) when orchd cannot be reached.
 */
int orchctl_request(const char *sock, const char *method, const char *path, const char *body,
                    int *status, char **ret);
