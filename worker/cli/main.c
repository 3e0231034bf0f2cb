/*
 * orch-worker - one process per (GPU, model): "serve" speaks the protocol
 * to orchd (docs/protocol.md); "run" is one-shot generation; the rest are
 * the tokenizer and chat-template tools. The commands are in commands.c.
 */
#include "cli.h"

int
main(int argc, char **argv)
{
	return subcmd_main("orch-worker", cli_commands, cli_n_commands, argc, argv);
}
