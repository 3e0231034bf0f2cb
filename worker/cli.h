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

struct tok;

/*
 * cli_load_tok - the tokenizer of @model: its GGUF metadata, or with
 * @kind "hf-json" the tokenizer.json in the model's directory. Prints the
 * error and returns NULL on failure.
 */
struct tok *cli_load_tok(const char *model, const char *kind);
