#pragma once
/*
 * orchctl.h - subcommands of orchctl; each returns the process exit code:
 * 0 done, 1 failed (orchd unreachable, not found, refused), 2 bad usage.
 */
#include <cjson/cJSON.h>

/* orchctl_inspect - "orchctl inspect [--json] [--tensors] [--context N] [--slots S] FILE.gguf...".
 */
int orchctl_inspect(int argc, char **argv);

/* orchctl_status - "orchctl status [--json] [--socket PATH]": models, devices, jobs, uptime. */
int orchctl_status(int argc, char **argv);

/* orchctl_ps - "orchctl ps [--json] [--socket PATH]": one line per worker. */
int orchctl_ps(int argc, char **argv);

/* orchctl_load - "orchctl load NAME [PATH] [--device D] [--slots N] [--context N] [--tokenizer T]
 * [--wait]". */
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

/* orchctl_attach - "orchctl attach WORKER [--dump|--gdb] [--topic T]... [--json]": debug stream. */
int orchctl_attach(int argc, char **argv);

/* orchctl_logs - "orchctl logs WORKER [--lines N] [--follow] [--json]": its output lines. */
int orchctl_logs(int argc, char **argv);

/*
 * orchctl_get_json - GET @path from orchd and parse it; the body's text in
 * *@raw (free it). Prints the problem and returns NULL unless HTTP 200.
 */
cJSON *orchctl_get_json(const char *sock, const char *path, char **raw);

/* orchctl_str, orchctl_num - member @k of @o, or "-" / 0 when absent. */
const char *orchctl_str(const cJSON *o, const char *k);
double orchctl_num(const cJSON *o, const char *k);

/*
 * orchctl_find_worker - the worker @name names in GET /admin/workers: its id,
 * or its model's name when that model has one worker. A copy (cJSON_Delete
 * it), or NULL with the reason printed.
 */
cJSON *orchctl_find_worker(const char *sock, const char *name);

/* orchctl_print_json - @o on one line of stdout, then freed. */
void orchctl_print_json(cJSON *o);
