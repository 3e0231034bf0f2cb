/*
 * orchctl - the orch admin CLI. Subcommands are one table; those that talk
 * to orchd arrive with the supervisor, inspect works on files alone.
 */
#include "orchctl.h"
#include "subcmd.h"

static const struct subcmd commands[] = {
        {"inspect", orchctl_inspect,
         "inspect [--json] [--tensors] [--context N] [--slots S] FILE.gguf...  describe a model file"},
};

int
main(int argc, char **argv)
{
	return subcmd_main("orchctl", commands, sizeof(commands) / sizeof(commands[0]), argc, argv);
}
