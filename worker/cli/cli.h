#pragma once
/* cli.h - orch-worker subcommands; each returns the process exit code. */

#define CLI_MAX_INPUT (256u << 20) /* text, template and JSON files */

/* cli_tokenize - "tokenize --model FILE [--add-special] [--parse-special] [--pieces] (--text T |
 * --file F)". */
int cli_tokenize(int argc, char **argv);

/* cli_detokenize - "detokenize --model FILE [--special] IDS...". */
int cli_detokenize(int argc, char **argv);

/* cli_chat_template - "chat-template (--model FILE | --template FILE) --messages FILE ...". */
int cli_chat_template(int argc, char **argv);

/* cli_serve - "serve --endpoint URL --model FILE ...": the worker process (serve.h). */
int cli_serve(int argc, char **argv);

/* cli_attach - "attach URL [--dump] [--topic T]... [--count N] [--timeout-ms N]": debug stream. */
int cli_attach(int argc, char **argv);

/* cli_run - "run --model FILE (--prompt T | --prompt-file F) [...]": one-shot generation. */
int cli_run(int argc, char **argv);

#include <stdbool.h>

struct model_text;
struct tok;

/*
 * cli_load_text - the tokenizer and chat template of @model into @mt
 * (zeroed): from its GGUF metadata, or with @kind "hf-json" from the
 * tokenizer.json and tokenizer_config.json in the model's directory
 * (model_text.h). Prints the error and returns false on failure.
 */
bool cli_load_text(const char *model, const char *kind, struct model_text *mt);

/* cli_load_tok - just the tokenizer of cli_load_text(); NULL on failure (printed). */
struct tok *cli_load_tok(const char *model, const char *kind);
