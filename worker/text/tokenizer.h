#pragma once
/*
 * tokenizer.h - text ↔ token ids for the model families orch serves.
 *
 * Two kinds, both built from GGUF metadata ("gguf") or from a Hugging
 * Face tokenizer.json ("hf-json", tok_load_hf_json() below):
 *   - SentencePiece-style (tokenizer.ggml.model = "llama"): score-driven
 *     merges over characters, dummy prefix space, "▁" for spaces, byte
 *     fallback to <0xNN> tokens.
 *   - byte-level BPE (tokenizer.ggml.model = "gpt2"): the model's
 *     pre-tokenizer regex (tokenizer.ggml.pre: default/gpt-2, qwen2,
 *     llama-bpe, gpt-4o) splits the text, bytes map to printable code points,
 *     and ranked merges from tokenizer.ggml.merges join them.
 * Special tokens (control and user-defined types) are matched in the text
 * before either runs. A struct tok is immutable once loaded: any number of
 * threads may encode and decode with it at once.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct gguf_file;
struct tok;

enum tok_kind { TOK_SPM, TOK_BPE };

/* Token types as GGUF stores them (tokenizer.ggml.token_type). */
enum tok_type {
	TOK_TYPE_UNDEFINED = 0,
	TOK_TYPE_NORMAL = 1,
	TOK_TYPE_UNKNOWN = 2,
	TOK_TYPE_CONTROL = 3,
	TOK_TYPE_USER_DEFINED = 4,
	TOK_TYPE_UNUSED = 5,
	TOK_TYPE_BYTE = 6,
};

/* A growable id list; zero-initialize, free with tok_ids_fini(). */
struct tok_ids {
	int32_t *v;
	size_t n, cap;
};

void tok_ids_fini(struct tok_ids *ids);

/* tok_ids_push - append @id. ORCH_ENOMEM. */
orch_err tok_ids_push(struct tok_ids *ids, int32_t id);

/* Encode flags. */
#define TOK_ADD_SPECIAL   0x1u /* add BOS/EOS as the model's add_bos/add_eos say */
#define TOK_PARSE_SPECIAL 0x2u /* control-token text becomes the control token */

/* Decode flags. */
#define TOK_RENDER_SPECIAL 0x1u /* control tokens decode to their text (else nothing) */
#define TOK_STRIP_PREFIX   0x2u /* drop the dummy-prefix space at the start (SPM) */

/*
 * tok_load_gguf - build the tokenizer described by @f's tokenizer.* keys
 * (copied: @f may be closed afterwards). Errors: ORCH_EUNSUPPORTED for an
 * unknown tokenizer.ggml.model or .pre (the message names it),
 * ORCH_ENOTFOUND/ORCH_ETYPE for a missing or mistyped key (named),
 * ORCH_EINVAL for inconsistent arrays, ORCH_ENOMEM.
 */
orch_err tok_load_gguf(const struct gguf_file *f, struct tok **ret, struct orch_errinfo *reterr);

/*
 * tok_load_hf_json - build a byte-level BPE tokenizer from a Hugging Face
 * tokenizer.json ("hf-json" kind): model BPE (vocab, merges, ignore_merges),
 * pre_tokenizer ByteLevel (GPT-2 regex) or Split with a regex (alone or in a
 * Sequence with ByteLevel), added_tokens (special → control, else
 * user-defined). BOS/EOS come from tokenizer_config.json beside it when
 * present. ORCH_EIO, ORCH_EINVAL (malformed JSON, named), ORCH_EUNSUPPORTED
 * (another model or pre-tokenizer type, named), ORCH_ENOMEM.
 */
orch_err tok_load_hf_json(const char *path, struct tok **ret, struct orch_errinfo *reterr);

/*
 * tok_load_hf_json_config - tok_load_hf_json() with tokenizer_config.json
 * already parsed by the caller: @config is its cJSON object, or NULL for none.
 */
orch_err tok_load_hf_json_config(const char *path, const void *config, struct tok **ret,
                                 struct orch_errinfo *reterr);

/* tok_pre_regex - the regex of GGUF pre-tokenizer name @pre, or NULL when unknown. */
const char *tok_pre_regex(const char *pre);

/* tok_free - NULL is fine. */
void tok_free(struct tok *t);

/*
 * tok_encode - append the ids of @len bytes of @text to @out. Any bytes are
 * accepted (invalid UTF-8 included). ORCH_ENOMEM only; @out keeps what it held.
 */
orch_err tok_encode(const struct tok *t, const char *text, size_t len, unsigned flags,
                    struct tok_ids *out);

/*
 * tok_piece - the bytes token @id stands for in decoded text: "▁" is a
 * space (SPM), <0xNN> is byte NN, byte-level BPE code points map back to
 * bytes, control tokens are empty unless TOK_RENDER_SPECIAL. Writes at most
 * @cap bytes to @buf and returns the full length (call again with more room
 * when it is larger). Unknown ids give 0.
 */
size_t tok_piece(const struct tok *t, int32_t id, unsigned flags, char *buf, size_t cap);

/*
 * tok_decode - the text of @n ids, appended to *@buf (realloc'd; *@len
 * updated). Bytes are joined as they are: the result may hold invalid UTF-8
 * where the ids do (use struct detok for text that must be valid). ORCH_ENOMEM.
 */
orch_err tok_decode(const struct tok *t, const int32_t *ids, size_t n, unsigned flags, char **buf,
                    size_t *len);

/* Facts. */
enum tok_kind tok_kind(const struct tok *t);
uint32_t tok_n_vocab(const struct tok *t);
int32_t tok_bos(const struct tok *t); /* -1 when the model has none */
int32_t tok_eos(const struct tok *t);
bool tok_is_eog(const struct tok *t, int32_t id);         /* eos, eot, eom */
size_t tok_eog(const struct tok *t, const int32_t **ids); /* all of them: their count */
bool tok_adds_space_prefix(const struct tok *t);          /* SPM dummy prefix */

/* tok_text - the raw vocabulary string of @id (not decoded), *@len bytes; NULL for bad ids. */
const char *tok_text(const struct tok *t, int32_t id, size_t *len);

/* tok_find - the id whose raw vocabulary string is @s, or -1. */
int32_t tok_find(const struct tok *t, const char *s, size_t len);
