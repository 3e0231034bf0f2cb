/*
 * orch-worker - one process per (GPU, model): "serve" speaks the protocol
 * to orchd (docs/protocol.md); "run" is one-shot generation; the rest are
 * the tokenizer and chat-template tools.
 */
#include "base/subcmd.h"
#include "cli.h"

static const struct subcmd commands[] = {
#ifdef ORCH_HAVE_IPC
        {"serve", cli_serve,
         "serve --endpoint URL --model FILE --device cpu|cuda:N --worker-id ID [--slots N] [--context N] [--threads N] [--heartbeat-ms N] [--supervisor-timeout-ms N] [--chunk N] [--debug-endpoint URL] [--residency-check-s N] [--no-graphs] [--tokenizer gguf|hf-json]"},
        {"attach", cli_attach,
         "attach URL [--dump] [--topic log|step]... [--count N] [--timeout-ms N]"},
#endif
        {"run", cli_run,
         "run --model FILE [--device cpu|cuda:N] (--prompt T | --prompt-file F) [--chat] [-n N] [--temperature T] [--top-k K] [--top-p P] [--min-p M] [--repeat-penalty R] [--seed S] [--stop S]... [--context N] [--threads N] [--format text|jsonl] [--dump-logits N FILE] [--kv-f32] [--no-graphs] [--tokenizer gguf|hf-json]"},
        {"tokenize", cli_tokenize,
         "tokenize --model FILE [--tokenizer gguf|hf-json] [--add-special] [--parse-special] [--pieces] (--text T | --file F)"},
        {"detokenize", cli_detokenize,
         "detokenize --model FILE [--tokenizer gguf|hf-json] [--special] IDS..."},
        {"chat-template", cli_chat_template,
         "chat-template (--model FILE [--tokenizer gguf|hf-json] | --template FILE.jinja) --messages FILE.json [--no-generation-prompt] [--now 2024-07-26T00:00:00]"},
};

int
main(int argc, char **argv)
{
	return subcmd_main("orch-worker", commands, sizeof(commands) / sizeof(commands[0]), argc,
	                   argv);
}
