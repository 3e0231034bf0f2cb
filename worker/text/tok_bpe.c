/*
 * tok_bpe.c - byte-level BPE (GPT-2 family): pre-tokenizer regex, the
 * byte ↔ code point table, and ranked merges.
 *
 * Design notes
 * - Pre-tokenizers are the models' own regexes as their tokenizer.json
 *   writes them, compiled by PCRE2 with UTF + UCP (Unicode properties for
 *   all of Unicode) and JIT. PCRE2_MATCH_INVALID_UTF lets any bytes through:
 *   text between matches (invalid UTF-8 included) becomes a word of its own,
 *   so no byte is ever dropped.
 * - Each byte of a word becomes one symbol carrying the id of its printable
 *   code point's token. Merges are keyed by the pair of ids (left << 32 |
 *   right) and give (rank << 32 | merged id): no string building in the loop.
 *   A merge whose parts or result are not in the vocabulary is never applied.
 * - llama-bpe (Llama 3) and tekken (Mistral's Tekken, Mistral Nemo / Small 3 /
 *   Ministral 3) set ignore_merges: a word that is itself a token is emitted
 *   whole, as Hugging Face's tokenizer does for those models. Tekken's regex is
 *   its tokenizer.json's (llama.cpp rewrites the letter classes for its own
 *   regex engine; both split ASCII text alike).
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "tok_internal.h"

#define LLAMA3_RE                                                                                                \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
	"\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* llama.cpp's names for each pre-tokenizer; every Llama 3 name also defaults add_bos_token on. */
static const struct {
	const char *name;
	enum tok_pre pre;
	const char *re;
} pretoks[] = {
        {"default", TOK_PRE_GPT2,
         "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
        {"gpt-2", TOK_PRE_GPT2,
         "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
        {"qwen2", TOK_PRE_QWEN2,
         "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
        {"llama-bpe", TOK_PRE_LLAMA3, LLAMA3_RE},
        {"llama3", TOK_PRE_LLAMA3, LLAMA3_RE},
        {"llama-v3", TOK_PRE_LLAMA3, LLAMA3_RE},
        {"tekken", TOK_PRE_TEKKEN,
         "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
        {"gpt-4o", TOK_PRE_GPT4O,
         "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
};

/* GPT-2's bytes_to_unicode: printable bytes stay, the others take 256, 257, ... in order. */
static void
byte_table(struct tok *t)
{
	uint16_t next = 256;

	memset(t->cp_byte, 0xff, sizeof(t->cp_byte));
	for (int b = 0; b < 256; b++) {
		bool keep = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
		t->byte_cp[b] = keep ? (uint16_t)b : next++;
		t->cp_byte[t->byte_cp[b]] = (int16_t)b;
	}
	for (int b = 0; b < 256; b++) {
		char s[4];
		size_t n = utf8_encode(t->byte_cp[b], s);
		t->byte_tok[b] = strmap_get(t->map, s, n);
	}
}

const char *
tok_pre_regex(const char *pre)
{
	for (size_t i = 0; i < sizeof(pretoks) / sizeof(pretoks[0]); i++)
		if (strcmp(pretoks[i].name, pre) == 0)
			return pretoks[i].re;
	return NULL;
}

static orch_err
compile_regex(struct tok *t, const char *re_src, struct orch_errinfo *reterr)
{
	int errcode;
	PCRE2_SIZE erroff;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)re_src, PCRE2_ZERO_TERMINATED,
	                               PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &errcode,
	                               &erroff, NULL);

	if (re == NULL) {
		PCRE2_UCHAR msg[128];
		pcre2_get_error_message(errcode, msg, sizeof(msg));
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "pre-tokenizer regex does not compile at offset %zu: %s",
		                 (size_t)erroff, (const char *)msg);
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter is the fallback */
	t->re = re;
	return ORCH_OK;
}

static orch_err
compile_pretok(struct tok *t, const char *pre, struct orch_errinfo *reterr)
{
	size_t i;

	for (i = 0; i < sizeof(pretoks) / sizeof(pretoks[0]); i++)
		if (strcmp(pretoks[i].name, pre) == 0)
			break;
	if (i == sizeof(pretoks) / sizeof(pretoks[0]))
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "tokenizer pre-tokenizer '%s' is not supported (supported: default, gpt-2, qwen2, llama-bpe, llama3, llama-v3, gpt-4o, tekken)",
		        pre);
	t->pre = pretoks[i].pre;
	t->ignore_merges = t->pre == TOK_PRE_LLAMA3 || t->pre == TOK_PRE_TEKKEN;
	return compile_regex(t, pretoks[i].re, reterr);
}

static orch_err
build_merges(struct tok *t, const char *const *m, const size_t *lens, size_t n)
{
	char buf[512];

	if (u64map_new(n, &t->merges) != ORCH_OK)
		return ORCH_ENOMEM;
	for (size_t rank = 0; rank < n; rank++) {
		const char *sp = lens[rank] > 1 ? memchr(m[rank] + 1, ' ', lens[rank] - 1) : NULL;
		if (sp == NULL || lens[rank] > sizeof(buf))
			continue;
		size_t ll = (size_t)(sp - m[rank]), rl = lens[rank] - ll - 1;
		int32_t l = strmap_get(t->map, m[rank], ll), r = strmap_get(t->map, sp + 1, rl);
		memcpy(buf, m[rank], ll);
		memcpy(buf + ll, sp + 1, rl);
		int32_t merged = strmap_get(t->map, buf, ll + rl);
		if (l < 0 || r < 0 || merged < 0)
			continue;
		u64map_put(t->merges, (uint64_t)l << 32 | (uint32_t)r,
		           (uint64_t)rank << 32 | (uint32_t)merged);
	}
	return ORCH_OK;
}

orch_err
tok_bpe_init(struct tok *t, const char *const *merges, const size_t *merge_lens, size_t n_merges,
             const char *pre, const char *regex, struct orch_errinfo *reterr)
{
	orch_err rv = regex ? compile_regex(t, regex, reterr) : compile_pretok(t, pre, reterr);

	if (rv != ORCH_OK)
		return rv;
	byte_table(t);
	if (build_merges(t, merges, merge_lens, n_merges) != ORCH_OK)
		return orch_errf(reterr, ORCH_ENOMEM, "tokenizer: out of memory");
	return ORCH_OK;
}

void
tok_bpe_fini(struct tok *t)
{
	pcre2_code_free(t->re);
	t->re = NULL;
	u64map_free(t->merges);
	t->merges = NULL;
}

struct bsym {
	int32_t prev, next, id;
	uint32_t n; /* bytes of the word; 0 once merged away */
};

static orch_err
try_pair(const struct tok *t, const struct bsym *s, int32_t l, int32_t r, struct tok_heap *h)
{
	struct tok_bigram b = {0};
	uint64_t v;

	if (l < 0 || r < 0 || s[l].id < 0 || s[r].id < 0 ||
	    !u64map_get(t->merges, (uint64_t)s[l].id << 32 | (uint32_t)s[r].id, &v))
		return ORCH_OK;
	b.prio = (double)(v >> 32);
	b.left = (uint32_t)l;
	b.right = (uint32_t)r;
	b.lid = s[l].id;
	b.rid = s[r].id;
	return tok_heap_push(h, &b);
}

static orch_err
merge_loop(const struct tok *t, struct bsym *s, struct tok_heap *h)
{
	orch_err rv = ORCH_OK;

	while (rv == ORCH_OK && h->n > 0) {
		struct tok_bigram b;
		uint64_t v;
		tok_heap_pop(h, &b);
		struct bsym *l = &s[b.left], *r = &s[b.right];
		if (l->n == 0 || r->n == 0 || l->id != b.lid || r->id != b.rid ||
		    l->next != (int32_t)b.right)
			continue; /* stale */
		u64map_get(t->merges, (uint64_t)b.lid << 32 | (uint32_t)b.rid, &v);
		l->id = (int32_t)(uint32_t)v;
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			s[r->next].prev = (int32_t)b.left;
		rv = try_pair(t, s, l->prev, (int32_t)b.left, h);
		if (rv == ORCH_OK)
			rv = try_pair(t, s, (int32_t)b.left, l->next, h);
	}
	return rv;
}

/* One pre-tokenized word of @n raw bytes. @scratch holds ≥ 2n bytes. */
static orch_err
encode_word(const struct tok *t, const uint8_t *w, size_t n, char *scratch, struct bsym *s,
            struct tok_heap *h, struct tok_ids *out)
{
	orch_err rv = ORCH_OK;

	if (t->ignore_merges) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			k += utf8_encode(t->byte_cp[w[i]], scratch + k);
		int32_t id = strmap_get(t->map, scratch, k);
		if (id >= 0)
			return tok_push(out, id);
	}
	for (size_t i = 0; i < n; i++)
		s[i] = (struct bsym){(int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1,
		                     t->byte_tok[w[i]], 1};
	h->n = 0;
	for (size_t i = 1; i < n && rv == ORCH_OK; i++)
		rv = try_pair(t, s, (int32_t)i - 1, (int32_t)i, h);
	if (rv == ORCH_OK)
		rv = merge_loop(t, s, h);
	for (int32_t i = 0; rv == ORCH_OK && i >= 0; i = s[i].next)
		rv = tok_push(out, s[i].id >= 0 ? s[i].id : t->unk >= 0 ? t->unk : 0);
	return rv;
}

orch_err
tok_bpe_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->re, NULL);
	struct bsym *s = orch_calloc(len ? len : 1, sizeof(*s));
	char *scratch = orch_malloc(2 * len + 1);
	struct tok_heap h = {0};
	size_t off = 0;
	orch_err rv = ORCH_OK;

	if (md == NULL || s == NULL || scratch == NULL)
		rv = ORCH_ENOMEM;
	while (rv == ORCH_OK && off < len) {
		int rc = pcre2_match(t->re, (PCRE2_SPTR)text, len, off, 0, md, NULL);
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		size_t ms = rc > 0 ? ov[0] : len, me = rc > 0 ? ov[1] : len;
		if (ms > off) /* a gap the regex did not match (invalid UTF-8) is a word too */
			rv = encode_word(t, (const uint8_t *)text + off, ms - off, scratch, s, &h,
			                 out);
		if (rv == ORCH_OK && me > ms)
			rv = encode_word(t, (const uint8_t *)text + ms, me - ms, scratch, s, &h,
			                 out);
		if (me == ms && ms < len) { /* an empty match: step over one byte */
			if (rv == ORCH_OK)
				rv = encode_word(t, (const uint8_t *)text + ms, 1, scratch, s, &h,
				                 out);
			me = ms + 1;
		}
		off = me;
	}
	tok_heap_fini(&h);
	orch_free(scratch);
	orch_free(s);
	pcre2_match_data_free(md);
	return rv;
}
