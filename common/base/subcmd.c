#include "subcmd.h"

#include <stdio.h>
#include <string.h>

#include "build_id.h"

static void
usage(FILE *out, const char *prog, const struct subcmd *cmds, size_t n)
{
	fprintf(out, "usage: %s COMMAND [ARGS]\n", prog);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %s %s\n", prog, cmds[i].help);
}

/* The command named @name, or NULL. */
static const struct subcmd *
find(const struct subcmd *cmds, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, cmds[i].name) == 0)
			return &cmds[i];
	return NULL;
}

int
subcmd_main(const char *prog, const struct subcmd *cmds, size_t n, int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout, prog, cmds, n);
		return argc < 2 ? 2 : 0;
	}
	/* "help [COMMAND]" and "version" as git and docker take them, unless a command has
	 * the name */
	if (strcmp(argv[1], "help") == 0 && find(cmds, n, "help") == NULL) {
		const struct subcmd *c = argc == 3 ? find(cmds, n, argv[2]) : NULL;
		if (c != NULL)
			printf("usage: %s %s\n", prog, c->help);
		else
			usage(stdout, prog, cmds, n);
		return argc == 3 && c == NULL ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0 ||
	    (strcmp(argv[1], "version") == 0 && find(cmds, n, "version") == NULL)) {
		printf("%s %s\n", prog, orch_build_id());
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[1], cmds[i].name) != 0)
			continue;
		if (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
			printf("usage: %s %s\n", prog, cmds[i].help);
			return 0;
		}
		return cmds[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
	usage(stderr, prog, cmds, n);
	return 2;
}
