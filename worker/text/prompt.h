#pragma once
/*
 * prompt.h - a job's prompt as token ids: raw text, or chat messages
 * rendered by the model's chat template (or the fallback format), then
 * tokenized with BOS per the model's metadata and special text parsed. BOS
 * is not added again when the rendered text already starts with it.
 */
#include <stddef.h>

#include "base/err.h"
#include "model_text.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct prompt_msg {
	const char *role, *content;
	const char *extra_json; /* NULL, "" or a JSON object: the message's other fields
	                           (tool_calls, thinking, name, tool_call_id) */
};

/* A chat: its messages and more template variables (tools, reasoning_effort). */
struct prompt_chat {
	const struct prompt_msg *msgs;
	size_t n_msgs;
	const char *vars_json; /* NULL, "" or a JSON object of variables */
};

/*
 * prompt_encode - the ids, by @mt's tokenizer, of @text (@n bytes) when
 * @chat is NULL, else of @chat rendered by @mt's chat template with
 * add_generation_prompt (true unless @chat's variables set it). Special-token
 * text in @text (a harmony turn written by hand, "<s>") becomes those
 * tokens, as llama.cpp does, unless @literal. A prompt of no tokens (empty)
 * is the model's BOS, or its EOS when it has no BOS.
 * ORCH_ETEMPLATE or ORCH_ETEMPLATE_RAISE with the template's message,
 * ORCH_EINVAL for extra fields or variables that are not a JSON object,
 * ORCH_ENOMEM.
 */
orch_err prompt_encode(const struct model_text *mt, const char *text, size_t n, bool literal,
                       const struct prompt_chat *chat, struct tok_ids *ids,
                       struct orch_errinfo *reterr);

#ifdef __cplusplus
}
#endif
