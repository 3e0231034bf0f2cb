#pragma once
/*
 * subcmd.h - "PROG COMMAND [ARGS]" dispatch shared by orchctl and
 * orch-worker: a table of commands, usage on stderr (exit 2) or with --help
 * on stdout (exit 0), "PROG COMMAND --help" prints that command's usage line
 * (exit 0), "PROG --version" the build id as orchd prints it ("PROG orch-0.1.0+
 * COMMIT"), and "unknown command" for anything else.
 */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct subcmd {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the command's name */
	const char *help;                  /* one usage line, without PROG */
};

/* subcmd_main - run the command argv[1] names from @cmds (@n of them); its exit status. */
int subcmd_main(const char *prog, const struct subcmd *cmds, size_t n, int argc, char **argv);

#ifdef __cplusplus
}
#endif
