/*
 * tok_vocab.c - the vocabulary tables of a tokenizer: allocation, the
 * special-token list, the end-of-generation set, SPM byte tokens, accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "tok_internal.h"

orch_err
tok_alloc_vocab(struct tok *t, uint32_t n, size_t bytes)
{
	t->n_vocab = n;
	t->blob = orch_malloc(bytes ? bytes : 1);
	t->off = orch_calloc(n, sizeof(*t->off));
	t->len = orch_calloc(n, sizeof(*t->len));
	t->scores = orch_calloc(n, sizeof(*t->scores));
	t->types = orch_calloc(n, sizeof(*t->types));
	t->strip = orch_calloc(n, sizeof(*t->strip));
	if (t->blob == NULL || t->off == NULL || t->len == NULL || t->scores == NULL ||
	    t->types == NULL || t->strip == NULL || strmap_new(n, &t->map) != ORCH_OK)
		return ORCH_ENOMEM;
	return ORCH_OK;
}

void
tok_free(struct tok *t)
{
	if (t == NULL)
		return;
	tok_bpe_fini(t);
	strmap_free(t->map);
	orch_free(t->blob);
	orch_free(t->off);
	orch_free(t->len);
	orch_free(t->scores);
	orch_free(t->types);
	orch_free(t->strip);
	orch_free(t->special);
	orch_free(t);
}

static int
longer_first(const void *a, const void *b, void *ctx)
{
	const struct tok *t = ctx;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	if (t->len[x] != t->len[y])
		return t->len[x] > t->len[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void
add_eog(struct tok *t, int32_t id)
{
	if (id < 0 || (uint32_t)id >= t->n_vocab || t->n_eog == 8)
		return;
	for (size_t i = 0; i < t->n_eog; i++)
		if (t->eog[i] == id)
			return;
	t->eog[t->n_eog++] = id;
}

static int32_t
control_id(const struct tok *t, const char *s)
{
	int32_t id = strmap_get(t->map, s, strlen(s));

	return id >= 0 && t->types[id] == TOK_TYPE_CONTROL ? id : -1;
}

/* End of generation: eos, eot, eom, and the control tokens chat models end turns with. */
static void
find_eog(struct tok *t)
{
	static const char *const names[] = {"<|eot_id|>",    "<|im_end|>",    "<|end|>",
	                                    "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
	                                    "<|return|>",    "<|call|>"};

	add_eog(t, t->eos);
	add_eog(t, t->eot);
	add_eog(t, t->eom);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		add_eog(t, control_id(t, names[i]));
	/* harmony (gpt-oss): <|end|> closes one message of a turn (the analysis before the
	 * answer); the turn ends at <|return|> or <|call|>. llama.cpp drops it the same way. */
	int32_t ret = control_id(t, "<|return|>"), call = control_id(t, "<|call|>"),
	        end = control_id(t, "<|end|>");
	if (ret >= 0 && call >= 0 && end >= 0)
		for (size_t i = 0; i < t->n_eog; i++)
			if (t->eog[i] == end) {
				memmove(&t->eog[i], &t->eog[i + 1],
				        (t->n_eog - i - 1) * sizeof(t->eog[0]));
				t->n_eog--;
				break;
			}
}

orch_err
tok_finish_load(struct tok *t, struct orch_errinfo *reterr)
{
	size_t n = 0;

	t->special = orch_calloc(t->n_vocab, sizeof(*t->special));
	if (t->special == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
	for (uint32_t i = 0; i < t->n_vocab; i++) {
		uint8_t ty = t->types[i];
		if ((ty == TOK_TYPE_CONTROL || ty == TOK_TYPE_USER_DEFINED ||
		     ty == TOK_TYPE_UNKNOWN) &&
		    t->len[i] > 0)
			t->special[n++] = (int32_t)i;
	}
	t->n_special = n;
	qsort_r(t->special, n, sizeof(*t->special), longer_first, t);
	if (t->kind == TOK_SPM) {
		for (int b = 0; b < 256; b++) {
			char name[8];
			snprintf(name, sizeof(name), "<0x%02X>", b);
			t->byte_tok[b] = strmap_get(t->map, name, 6);
		}
	}
	find_eog(t);
	return ORCH_OK;
}

enum tok_kind
tok_kind(const struct tok *t)
{
	return t->kind;
}

uint32_t
tok_n_vocab(const struct tok *t)
{
	return t->n_vocab;
}

int32_t
tok_bos(const struct tok *t)
{
	return t->bos;
}

int32_t
tok_eos(const struct tok *t)
{
	return t->eos;
}

bool
tok_is_eog(const struct tok *t, int32_t id)
{
	for (size_t i = 0; i < t->n_eog; i++)
		if (t->eog[i] == id)
			return true;
	return false;
}

size_t
tok_eog(const struct tok *t, const int32_t **ids)
{
	*ids = t->eog;
	return t->n_eog;
}

const char *
tok_text(const struct tok *t, int32_t id, size_t *len)
{
	if (id < 0 || (uint32_t)id >= t->n_vocab)
		return NULL;
	*len = t->len[id];
	return t->blob + t->off[id];
}

int32_t
tok_find(const struct tok *t, const char *s, size_t len)
{
	return strmap_get(t->map, s, len);
}

bool
tok_adds_space_prefix(const struct tok *t)
{
	return t->add_space_prefix;
}
