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
};

/*
 * prompt_encode - the ids, by @mt's tokenizer, of @text (@n bytes) when
 * @n_msgs is 0, else of @msgs rendered by @mt's chat template with
 * add_generation_prompt. Special-token text in @text (a harmony turn written
 * by hand, "<s>") becomes those tokens, as llama.cpp does, unless @literal.
 * ORCH_ETEMPLATE or ORCH_ETEMPLATE_RAISE with the template's message,
 * ORCH_ENOMEM.
 */
orch_err prompt_encode(const struct model_text *mt, const char *text, size_t n, bool literal,
                       const struct prompt_msg *msgs, size_t n_msgs, struct tok_ids *ids,
                       struct orch_errinfo *reterr);

#ifdef __cplusplus
}
#endif
