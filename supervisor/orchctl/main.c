/*
 * orchctl - the orch admin CLI. Subcommands are one table; those that talk
 * to orchd arrive with the supervisor, inspect works on files alone.
 */
#include <stdio.h>
#include <string.h>

#include "orchctl.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
        {"inspect", orchctl_inspect,
         "inspect [--json] [--tensors] [--context N] [--slots S] FILE.gguf...  describe a model file"},
};

static void
usage(FILE *out)
{
	fprintf(out, "usage: orchctl COMMAND [ARGS]\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  orchctl %s\n", commands[i].help);
}

int
main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "orchctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
