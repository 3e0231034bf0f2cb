#pragma once
/*
 * orchctl.h - subcommands of orchctl; each returns the process exit code:
 * 0 done, 1 failed (not found, refused, the load failed), 2 bad usage,
 * 3 orchd cannot be reached. Errors are sentences on stderr; with --json
 * the error's JSON body goes to stdout as well.
 */
#include <stdbool.h>

#include <cjson/cJSON.h>

#define ORCHCTL_EXIT_FAILED      1
#define ORCHCTL_EXIT_USAGE       2
#define ORCHCTL_EXIT_UNREACHABLE 3

/* The global options, taken from anywhere on the command line (main.c). */
extern const char *arg_socket; /* --socket PATH; NULL: $ORCHD_SOCKET, else the default */
extern bool arg_json;          /* --json */

/* orchctl_inspect - "orchctl inspect [--json] [--tensors] [--context N] [--slots S]
 * [--kv-cache-mib N | --kv-cache-fraction F] [--kv-block-tokens N] FILE.gguf...". */
int orchctl_inspect(int argc, char **argv);

/* orchctl_status - "orchctl status [--json] [--socket PATH]": models, devices, jobs, uptime. */
int orchctl_status(int argc, char **argv);

/* orchctl_ps - "orchctl ps [--json] [--socket PATH]": one line per worker. */
int orchctl_ps(int argc, char **argv);

/* orchctl_load - "orchctl load NAME [PATH] [--device D] [--slots N] [--context N] [--tokenizer T]
 * [--kv-cache-mib N | --kv-cache-fraction F] [--kv-block-tokens N] [--no-prefix-cache] [--wait]".
 */
int orchctl_load(int argc, char **argv);

/* orchctl_unload - "orchctl unload NAME": drain, then stop its workers. */
int orchctl_unload(int argc, char **argv);

/* orchctl_rm - "orchctl rm NAME": unload, then forget a model added with load. */
int orchctl_rm(int argc, char **argv);

/* orchctl_pull - "orchctl pull hf:REF [--model-dir DIR] [--token-file F] [--endpoint URL]
 * [--offline]": fetch a Hugging Face reference into the model store (pull_cmd.c). */
int orchctl_pull(int argc, char **argv);

/*
 * orchctl_hf_token - the Hugging Face token: @token_file (NULL: none given), else $HF_TOKEN,
 * else $HF_TOKEN_PATH or ~/.cache/huggingface/token; NULL when there is none, or (*@bad,
 * said) a file that cannot be read. free() it.
 */
char *orchctl_hf_token(const char *token_file, bool *bad);

/* orchctl_models - "orchctl models [--model-dir DIR]": what the model store holds. */
int orchctl_models(int argc, char **argv);

/* orchctl_rm_ref - "orchctl rm hf:REF [--model-dir DIR]": take it out of the store, unless
 * a model orchd serves uses it. */
int orchctl_rm_ref(int argc, char **argv);

/*
 * orchctl_refused - orchd answered @status with @body to @what ("load x"):
 * the error's message as a sentence on stderr ("orchctl: load x: ..."), the
 * body on stdout with --json. Returns ORCHCTL_EXIT_FAILED.
 */
int orchctl_refused(const char *what, int status, const char *body);

/* orchctl_socket - the admin socket: @flag, else --socket, else $ORCHD_SOCKET, else the default. */
const char *orchctl_socket(const char *flag);

/*
 * orchctl_request - one admin request; the status and the body (free it) in
 * *@status and *@ret. -1 (message printed) when orchd cannot be reached
 * (exit with ORCHCTL_EXIT_UNREACHABLE).
 */
int orchctl_request(const char *sock, const char *method, const char *path, const char *body,
                    int *status, char **ret);

/* orchctl_attach - "orchctl attach WORKER [--dump|--gdb] [--topic T]... [--json]": debug stream. */
int orchctl_attach(int argc, char **argv);

/* orchctl_logs - "orchctl logs WORKER [--lines N] [--follow] [--json]": its output lines. */
int orchctl_logs(int argc, char **argv);

/*
 * orchctl_get_json - GET @path from orchd and parse it; the body's text in
 * *@raw (free it). Prints the problem and returns NULL unless HTTP 200, the
 * exit code to use then in *@rc.
 */
cJSON *orchctl_get_json(const char *sock, const char *path, char **raw, int *rc);

/* orchctl_str, orchctl_num - member @k of @o, or "-" / 0 when absent. */
const char *orchctl_str(const cJSON *o, const char *k);
double orchctl_num(const cJSON *o, const char *k);

/*
 * orchctl_find_worker - the worker @name names in GET /admin/workers: its id,
 * or its model's name when that model has one worker. A copy (cJSON_Delete
 * it), or NULL with the reason printed and the exit code in *@rc.
 */
cJSON *orchctl_find_worker(const char *sock, const char *name, int *rc);

/* orchctl_print_json - @o on one line of stdout, then freed. */
void orchctl_print_json(cJSON *o);
