#pragma once
/* tok_internal.h - what the tokenizer's files share. Not for use outside worker/tok*. */
#include "base/strmap.h"
#include "tokenizer.h"

enum tok_pre {
	TOK_PRE_NONE,
	TOK_PRE_GPT2,
	TOK_PRE_QWEN2,
	TOK_PRE_LLAMA3,
	TOK_PRE_GPT4O,
	TOK_PRE_TEKKEN
};

/* What a special token swallows when matched (llama.cpp's LSTRIP / RSTRIP attributes). */
enum { TOK_STRIP_LEFT = 1, TOK_STRIP_RIGHT = 2 };

struct tok {
	enum tok_kind kind;
	enum tok_pre pre;
	uint32_t n_vocab;
	char *blob;            /* every token string, back to back */
	uint32_t *off, *len;   /* [n_vocab] into blob */
	float *scores;         /* [n_vocab] */
	uint8_t *types;        /* [n_vocab] enum tok_type */
	uint8_t *strip;        /* [n_vocab] TOK_STRIP_*: whitespace beside a matched special */
	struct strmap *map;    /* token string → id */
	struct u64map *merges; /* BPE: (left id << 32 | right id) → (rank << 32 | merged id) */
	int32_t bos, eos, eot, eom, unk;
	bool add_bos, add_eos, add_space_prefix, ignore_merges;
	int32_t *special; /* control / user-defined / unknown ids, longest text first */
	size_t n_special;
	int32_t eog[8]; /* end-of-generation ids */
	size_t n_eog;
	int32_t byte_tok[256]; /* SPM: <0xNN>; BPE: the token of byte NN's code point; -1 */
	uint16_t byte_cp[256]; /* BPE: byte → printable code point (GPT-2's table) */
	int16_t cp_byte[324];  /* BPE: code point → byte, -1 */
	void *re;              /* pcre2_code_8 * of the pre-tokenizer (BPE) */
};

/* A bigram candidate of the merge loops: smaller prio first, then smaller left. */
struct tok_bigram {
	double prio;
	uint32_t left, right;
	int32_t lid, rid; /* BPE: the ids merged, to spot stale entries */
	uint32_t size;    /* SPM: merged length, to spot stale entries */
};

struct tok_heap {
	struct tok_bigram *v;
	size_t n, cap;
};

orch_err tok_heap_push(struct tok_heap *h, const struct tok_bigram *b);
void tok_heap_pop(struct tok_heap *h, struct tok_bigram *out); /* h->n > 0 */
void tok_heap_fini(struct tok_heap *h);

/* tok_push - append one id. */
orch_err tok_push(struct tok_ids *out, int32_t id);

/* tok_spm_encode - SentencePiece merges over @len bytes of already-escaped text. */
orch_err tok_spm_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out);

/* tok_bpe_encode - pre-tokenize and merge @len bytes of raw text. */
orch_err tok_bpe_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out);

/*
 * tok_bpe_init - byte tables, merges and the pre-tokenizer of a BPE
 * tokenizer: @regex when given (tokenizer.json), else the one named @pre.
 */
orch_err tok_bpe_init(struct tok *t, const char *const *merges, const size_t *merge_lens,
                      size_t n_merges, const char *pre, const char *regex,
                      struct orch_errinfo *reterr);

/* tok_bpe_fini - free what tok_bpe_init made. */
void tok_bpe_fini(struct tok *t);

/* tok_finish_load - special list, EOG set and SPM byte tokens once vocab and flags are set. */
orch_err tok_finish_load(struct tok *t, struct orch_errinfo *reterr);

/* tok_alloc_vocab - arrays for @n tokens whose strings total @bytes. */
orch_err tok_alloc_vocab(struct tok *t, uint32_t n, size_t bytes);
