/*
 * orch-worker - one process per (GPU, model): "serve" speaks the protocol
 * to orchd (docs/protocol.md); "run" is one-shot generation; the rest are
 * the tokenizer and chat-template tools.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
#ifdef ORCH_HAVE_IPC
        {"serve", cli_serve,
         "serve --endpoint URL --model FILE --device cpu|cuda:N --worker-id ID [--slots N] [--context N] [--threads N] [--heartbeat-ms N] [--supervisor-timeout-ms N] [--chunk N]"},
#endif
        {"run", cli_run,
         "run --model FILE [--device cpu] (--prompt T | --prompt-file F) [--chat] [-n N] [--temperature T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S] [--stop S]... [--context N] [--threads N] [--format text|jsonl] [--dump-logits N FILE] [--kv-f32]"},
        {"tokenize", cli_tokenize,
         "tokenize --model FILE [--tokenizer gguf|hf-json] [--add-special] [--parse-special] [--pieces] (--text T | --file F)"},
        {"detokenize", cli_detokenize,
         "detokenize --model FILE [--tokenizer gguf|hf-json] [--special] IDS..."},
        {"chat-template", cli_chat_template,
         "chat-template (--model FILE | --template FILE.jinja) --messages FILE.json [--no-generation-prompt] [--now 2024-07-26T00:00:00]"},
};

static void
usage(FILE *out)
{
	fprintf(out, "usage: orch-worker COMMAND [ARGS]\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  orch-worker %s\n", commands[i].help);
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
	fprintf(stderr, "orch-worker: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
