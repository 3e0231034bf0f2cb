#pragma once
/* cli.h - orch-worker subcommands; each returns the process exit code. */
#include <stddef.h>

#include "base/subcmd.h"

#define CLI_MAX_INPUT (256u << 20) /* text, template and JSON files */

/* The commands with their usage lines (commands.c): the one table of them. */
extern const struct subcmd cli_commands[];
extern const size_t cli_n_commands;

/* cli_usage - "usage: orch-worker LINE" on stderr, the line from cli_commands. */
void cli_usage(const char *name);

/* Each command takes argv[0] = its name and returns the exit code (2: usage). */
int cli_tokenize(int argc, char **argv);
int cli_detokenize(int argc, char **argv);
int cli_chat_template(int argc, char **argv);
int cli_serve(int argc, char **argv); /* the worker process (serve/serve.h) */
int cli_attach(int argc, char **argv);
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
