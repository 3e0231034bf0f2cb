#pragma once
/*
 * model_text.h - the text side of a model a worker serves: its tokenizer
 * and its chat template, taken either from the GGUF file ("gguf", the
 * default) or from the Hugging Face files in the model's directory when the
 * operator asks for them ("hf-json", `--tokenizer hf-json`):
 *
 *   gguf     tokenizer.* metadata; tokenizer.chat_template, else orch's
 *            fallback format (chat.h)
 *   hf-json  DIR/tokenizer.json (+ BOS/EOS from DIR/tokenizer_config.json);
 *            the chat_template of DIR/tokenizer_config.json when it has
 *            one, else the GGUF's, else the fallback
 *
 * where DIR is the directory of the model file. Both are immutable once
 * loaded, so any number of jobs may use them at once.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/tool_call.h"
#include "harmony.h"
#include "think.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gguf_file;
struct jinja_tmpl;
struct tok;

enum text_source { TEXT_GGUF, TEXT_HF_JSON };

/* Where the chat template came from; its name is what Ready and /v1/models say. */
enum chat_origin { CHAT_FROM_MODEL, CHAT_FROM_TOKENIZER_CONFIG, CHAT_FALLBACK };

struct model_text {
	struct tok *tok;
	struct jinja_tmpl *tmpl;      /* NULL when the template does not compile: */
	struct orch_errinfo tmpl_err; /* why (ORCH_ETEMPLATE), for every chat request */
	enum text_source source;
	enum chat_origin origin;
	bool harmony; /* the model speaks harmony (gpt-oss): its output is split by message */
	struct harmony_vocab hv;
	bool think; /* the template has the model think between <think> and </think> */
	struct think_vocab tv;
	enum tool_syntax tools; /* how the template has the model call tools (harmony: always) */
};

/* text_source_parse - "gguf" or "hf-json" (NULL: gguf). ORCH_EINVAL for anything else. */
orch_err text_source_parse(const char *s, enum text_source *out);

/* "gguf", "hf-json". */
const char *text_source_name(enum text_source s);

/* "model", "tokenizer_config", "fallback". */
const char *chat_origin_name(enum chat_origin o);

/*
 * model_text_load - load @mt (zeroed by the caller) for the model at
 * @model_path, opened as @f, from @src. @n_vocab is the model's vocabulary
 * (its output rows); a GGUF tokenizer must have exactly that many tokens, a
 * tokenizer.json at most that many (Hugging Face vocabularies are often
 * smaller than the padded embedding); 0 skips the check. A template that
 * does not compile is no load failure (raw prompts still work): @mt->tmpl
 * stays NULL and @mt->tmpl_err says why. Errors name the file: what
 * tok_load_gguf returns; ORCH_EMODEL_LOAD for a missing, unreadable or
 * malformed tokenizer.json or tokenizer_config.json and for vocabulary
 * sizes; ORCH_ENOMEM. On failure @mt holds nothing.
 */
orch_err model_text_load(const char *model_path, const struct gguf_file *f, enum text_source src,
                         uint32_t n_vocab, struct model_text *mt, struct orch_errinfo *reterr);

/* model_text_fini - free what @mt holds; a zeroed @mt is fine. */
void model_text_fini(struct model_text *mt);

/* model_text_beside - DIR/@name into @out (@cap bytes), DIR being @model_path's directory. */
void model_text_beside(const char *model_path, const char *name, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
