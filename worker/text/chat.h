#pragma once
/*
 * chat.h - the chat template of a model: tokenizer.chat_template from its
 * GGUF, or, when it has none, orch's fallback format (docs/chat-templates.md):
 *
 *     System: ...\n\nUser: ...\n\nAssistant: ...\n\nAssistant:
 *
 * (role names capitalized, each message followed by a blank line, and
 * "Assistant:" when a generation prompt is asked for). BOS is not part of
 * it: tokenizing the prompt with TOK_ADD_SPECIAL adds what the model wants.
 */
#include <stdbool.h>

#include "base/err.h"

struct gguf_file;
struct jinja_tmpl;

extern const char chat_fallback_template[];

/*
 * chat_template_from_gguf - compile @f's template, or the fallback when the
 * model has none (*@ret_fallback says which). ORCH_ETEMPLATE when the
 * model's template does not compile (the message names it), ORCH_ENOMEM.
 */
orch_err chat_template_from_gguf(const struct gguf_file *f, struct jinja_tmpl **ret,
                                 bool *ret_fallback, struct orch_errinfo *reterr);
