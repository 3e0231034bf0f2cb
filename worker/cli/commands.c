/*
 * commands.c - the orch-worker commands and their usage lines: the one
 * table main() dispatches on, `orch-worker COMMAND --help` prints, and every
 * command prints through cli_usage() when its arguments are wrong.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

const struct subcmd cli_commands[] = {
#ifdef ORCH_HAVE_IPC
        {"serve", cli_serve,
         "serve --endpoint URL --model FILE --device cpu|cuda:N --worker-id ID [--slots N] [--context N] [--threads N] [--heartbeat-ms N] [--supervisor-timeout-ms N] [--chunk N] [--scheduler decode_first|prefill_first] [--debug-endpoint URL] [--residency-check-s N] [--no-graphs] [--tokenizer gguf|hf-json] [--hash-cache-dir DIR] [--no-hash-beside] [--kv-cache-mib N | --kv-cache-fraction F] [--kv-block-tokens N] [--no-prefix-cache]"},
        {"attach", cli_attach,
         "attach URL [--dump] [--topic log|step]... [--count N] [--timeout-ms N]"},
#endif
        {"run", cli_run,
         "run --model FILE [--device cpu|cuda:N] (--prompt TEXT | --prompt-file F) [--chat] [-n N] [--temperature T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S] [--stop S]... [--context N] [--threads N] [--format text|jsonl] [--dump-logits N FILE] [--kv-f32] [--no-graphs] [--tokenizer gguf|hf-json] [--no-parse-special] [--ignore-eos]"},
        {"tokenize", cli_tokenize,
         "tokenize --model FILE [--tokenizer gguf|hf-json] [--add-special] [--parse-special] [--pieces] (--text T | --file F)"},
        {"detokenize", cli_detokenize,
         "detokenize --model FILE [--tokenizer gguf|hf-json] [--special] IDS..."},
        {"chat-template", cli_chat_template,
         "chat-template (--model FILE [--tokenizer gguf|hf-json] | --template FILE.jinja) --messages FILE.json [--no-generation-prompt] [--now 2024-07-26T00:00:00]"},
};

const size_t cli_n_commands = sizeof(cli_commands) / sizeof(cli_commands[0]);

void
cli_usage(const char *name)
{
	for (size_t i = 0; i < cli_n_commands; i++) {
		if (strcmp(cli_commands[i].name, name) == 0) {
			fprintf(stderr, "usage: orch-worker %s\n", cli_commands[i].help);
			return;
		}
	}
	fprintf(stderr, "usage: orch-worker %s ...\n", name);
}
