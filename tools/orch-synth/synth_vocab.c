/*
 * synth_vocab.c - the tokenizer metadata of a synthesized model.
 *
 * With --vocab, every tokenizer.* key of that GGUF is copied unchanged
 * (tokens, scores or merges, types, special ids, pre-tokenizer, chat
 * template), so the model tokenizes exactly like the real one.
 * Without it, a small valid SentencePiece ("llama") vocabulary is made:
 * <unk> <s> </s>, the 256 byte-fallback tokens <0x00>..<0xFF>, "▁", the
 * printable ASCII characters with and without "▁", lowercase letter pairs
 * with and without "▁", then <unused_N> tokens up to the preset's size.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "synth.h"

#define SPM_SPACE "\xe2\x96\x81" /* U+2581 "▁" */

enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_UNUSED = 5, TOK_BYTE = 6 };

static orch_err
copy_vocab(struct gguf_writer *w, const char *path, uint32_t *ret_n, struct orch_errinfo *reterr)
{
	struct gguf_file *v = NULL;
	const struct gguf_arr *tokens;
	orch_err rv;

	rv = gguf_open(path, &v, reterr);
	if (rv != ORCH_OK)
		return rv;
	if (gguf_get_arr(v, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &tokens) != ORCH_OK ||
	    tokens->n == 0 || tokens->n > UINT32_MAX) {
		rv = orch_errf(reterr, ORCH_EINVAL, "%s: no tokenizer.ggml.tokens string array",
		               path);
		goto out;
	}
	for (size_t i = 0; i < gguf_kv_count(v) && rv == ORCH_OK; i++) {
		const struct gguf_kv *kv = gguf_kv_at(v, i);
		if (strncmp(kv->key, "tokenizer.", 10) == 0)
			rv = gguf_writer_set_value(w, kv->key, &kv->value);
	}
	if (rv != ORCH_OK) {
		rv = orch_errf(reterr, rv, "%s: copying the tokenizer failed", path);
		goto out;
	}
	*ret_n = (uint32_t)tokens->n;
out:
	gguf_close(v);
	return rv;
}

/* Piece @i of the synthetic vocabulary into @buf (16 bytes), with its type. */
static int
synthetic_piece(uint32_t i, char *buf, size_t len)
{
	static const char *const specials[3] = {"<unk>", "<s>", "</s>"};
	uint32_t k;

	if (i < 3) {
		snprintf(buf, len, "%s", specials[i]);
		return i == 0 ? TOK_UNKNOWN : TOK_CONTROL;
	}
	if ((k = i - 3) < 256) {
		snprintf(buf, len, "<0x%02X>", k);
		return TOK_BYTE;
	}
	if ((k -= 256) == 0) {
		snprintf(buf, len, SPM_SPACE);
		return TOK_NORMAL;
	}
	if ((k -= 1) < 2 * 94) { /* '!'..'~', bare then with ▁ */
		snprintf(buf, len, "%s%c", k < 94 ? "" : SPM_SPACE, (char)('!' + k % 94));
		return TOK_NORMAL;
	}
	if ((k -= 2 * 94) < 2 * 676) { /* "aa".."zz", bare then with ▁ */
		uint32_t p = k % 676;
		snprintf(buf, len, "%s%c%c", k < 676 ? "" : SPM_SPACE, (char)('a' + p / 26),
		         (char)('a' + p % 26));
		return TOK_NORMAL;
	}
	snprintf(buf, len, "<unused_%u>", k - 2 * 676);
	return TOK_UNUSED;
}

static orch_err
synthetic_vocab(struct gguf_writer *w, uint32_t n)
{
	char **pieces = orch_calloc(n, sizeof(*pieces));
	float *scores = orch_calloc(n, sizeof(*scores));
	int32_t *types = orch_calloc(n, sizeof(*types));
	orch_err rv = ORCH_ENOMEM;

	if (pieces == NULL || scores == NULL || types == NULL)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		char buf[32];
		types[i] = synthetic_piece(i, buf, sizeof(buf));
		scores[i] = types[i] == TOK_NORMAL ? -(float)i / 1000.0f : 0.0f;
		if ((pieces[i] = orch_strndup(buf, strlen(buf))) == NULL)
			goto out;
	}
	if ((rv = gguf_writer_set_str(w, "tokenizer.ggml.model", "llama")) != ORCH_OK ||
	    (rv = gguf_writer_set_str(w, "tokenizer.ggml.pre", "default")) != ORCH_OK ||
	    (rv = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)pieces,
	                                  n)) != ORCH_OK ||
	    (rv = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_VTYPE_FLOAT32, scores, n)) !=
	            ORCH_OK ||
	    (rv = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_VTYPE_INT32, types,
	                              n)) != ORCH_OK ||
	    (rv = gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0)) != ORCH_OK ||
	    (rv = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1)) != ORCH_OK ||
	    (rv = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2)) != ORCH_OK ||
	    (rv = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true)) != ORCH_OK)
		goto out;
	rv = gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
out:
	for (uint32_t i = 0; pieces != NULL && i < n; i++)
		orch_free(pieces[i]);
	orch_free(pieces);
	orch_free(scores);
	orch_free(types);
	return rv;
}

orch_err
synth_vocab_write(struct gguf_writer *w, const char *vocab_path, uint32_t n_vocab,
                  uint32_t *ret_n_vocab, struct orch_errinfo *reterr)
{
	orch_err rv;

	if (vocab_path != NULL)
		return copy_vocab(w, vocab_path, ret_n_vocab, reterr);
	if (n_vocab < 3 + 256 + 1)
		return orch_errf(reterr, ORCH_EINVAL, "vocabulary of %u is too small", n_vocab);
	rv = synthetic_vocab(w, n_vocab);
	if (rv != ORCH_OK)
		return orch_errf(reterr, rv, "building the synthetic vocabulary failed");
	*ret_n_vocab = n_vocab;
	return ORCH_OK;
}
