/*
 * orchctl - the orch admin CLI. Subcommands are one table; status, ps, load,
 * unload, rm and logs talk to orchd's admin socket, attach to a worker's
 * debug stream as well, inspect works on files alone, pull and models (and
 * rm of an hf: reference) on the model store (pull_cmd.c). The global options
 * (--socket PATH, --json, --version) go anywhere on the line: they are taken
 * out before the subcommand sees its arguments.
 *
 * Exit codes: 0 done; 1 failed (orchd refused or the load failed, not
 * found); 2 bad usage; 3 orchd cannot be reached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/build_id.h"
#include "base/subcmd.h"
#include "orchctl.h"

const char *arg_socket;
bool arg_json;

static int
orchctl_version(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: orchctl version\n");
		return 2;
	}
	printf("orchctl %s\n", orch_build_id()); /* orchd's form: the version and the commit */
	return 0;
}

/* rm NAME (a model orchd serves) or rm hf:REF (the model store). */
static int
rm(int argc, char **argv)
{
#ifdef ORCHCTL_HAVE_STORE
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "hf:", 3) == 0)
			return orchctl_rm_ref(argc, argv);
#endif
	return orchctl_rm(argc, argv);
}

/* orchctl shutdown: POST /admin/shutdown, orchd drains and exits as on SIGTERM. */
static int
orchctl_shutdown(int argc, char **argv)
{
	int status = 0;
	char *resp = NULL;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: orchctl shutdown [--json] [--socket PATH]\n");
		return ORCHCTL_EXIT_USAGE;
	}
	if (orchctl_request(orchctl_socket(NULL), "POST", "/admin/shutdown", "{}", &status,
	                    &resp) != 0)
		return ORCHCTL_EXIT_UNREACHABLE;
	if (status != 202) {
		int rv = orchctl_refused("shutdown", status, resp);
		free(resp);
		return rv;
	}
	if (arg_json)
		printf("%s\n", resp);
	else
		printf("orchd: stopping (running jobs finish within shutdown_timeout_s)\n");
	free(resp);
	return 0;
}

static const struct subcmd commands[] = {
        {"status", orchctl_status,
         "status [--json] [--socket PATH]  models, devices, jobs, uptime"},
        {"ps", orchctl_ps, "ps [--json] [--socket PATH]  one line per worker"},
        {"load", orchctl_load,
         "load NAME [PATH | hf:REF [--pull] [--token-file F]] [--device D] [--slots N] [--context N] [--replicas N] [--tokenizer "
         "gguf|hf-json] [--kv-cache-mib N | --kv-cache-fraction F] [--kv-block-tokens N] "
         "[--no-prefix-cache] [--no-wait] [--json] [--socket PATH]  load and wait until ready"},
        {"unload", orchctl_unload,
         "unload NAME [--json] [--socket PATH]  drain, then stop its workers"},
        {"rm", rm,
         "rm NAME | hf:REF [--model-dir DIR] [--json] [--socket PATH]  unload and forget a "
         "model added with load; or take a reference out of the model store"},
#ifdef ORCHCTL_HAVE_STORE
        {"pull", orchctl_pull,
         "pull hf:ORG/REPO[:QUANT][@REV] | hf:ORG/REPO/FILE.gguf[@REV] [--model-dir DIR] "
         "[--token-file F] [--endpoint URL] [--offline] [--json]  fetch a model into the store"},
        {"models", orchctl_models,
         "models [--model-dir DIR] [--json]  what the model store holds, and which models use "
         "it"},
#endif
#ifdef ORCHCTL_HAVE_ATTACH
        {"attach", orchctl_attach,
         "attach WORKER [--dump | --gdb] [--topic log|step]... [--count N] [--json] [--socket "
         "PATH]  its debug stream"},
#endif
        {"logs", orchctl_logs,
         "logs WORKER|MODEL [-n N] [-f] [--json] [--socket PATH]  why it failed, its output"},
        {"inspect", orchctl_inspect,
         "inspect [--json] [--tensors] [--context N] [--slots S] [--kv-cache-mib N | "
         "--kv-cache-fraction F] [--kv-block-tokens N] FILE.gguf...  describe a model file, "
         "what it needs and what fits"},
        {"shutdown", orchctl_shutdown,
         "shutdown [--json] [--socket PATH]  drain and stop orchd, as SIGTERM does"},
        {"version", orchctl_version, "version  orchctl's version (also --version)"},
};

/*
 * Takes --socket PATH, --socket=PATH and --json out of @argv (anywhere, up
 * to a "--"), into arg_socket and arg_json. -1 for --socket without a path.
 */
static int
take_globals(int argc, char **argv)
{
	int n = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			while (i < argc)
				argv[n++] = argv[i++];
			break;
		}
		if (strcmp(a, "--json") == 0) {
			arg_json = true;
		} else if (strncmp(a, "--socket=", 9) == 0) {
			arg_socket = a + 9;
		} else if (strcmp(a, "--socket") == 0) {
			if (i + 1 >= argc)
				return -1;
			arg_socket = argv[++i];
		} else {
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	return n;
}

int
main(int argc, char **argv)
{
	size_t n = sizeof(commands) / sizeof(commands[0]);

	argc = take_globals(argc, argv);
	if (argc < 0) {
		fprintf(stderr, "orchctl: --socket needs a path\n");
		return 2;
	}
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0)
			return orchctl_version(1, argv);
	return subcmd_main("orchctl", commands, n, argc, argv);
}
