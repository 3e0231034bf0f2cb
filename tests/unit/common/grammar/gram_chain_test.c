/*
 * gram_chain_test.c - token masks inside bounded repetitions (gram_chain.c):
 * the masks a repetition's counts share equal the brute force at every step
 * of random walks, through strings with escapes and UTF-8, nested
 * repetitions, two repetitions side by side, and the repetitions that must
 * not be shared (an x matching nothing, an x reaching its own repetition,
 * an x read two ways).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "gram_brute.h"
#include "grammar/gram_mask.h"
#include "grammar/grammar.h"
#include "t.h"

#define N_TOK   900
#define TOK_MAX 12

static uint8_t tok[N_TOK][TOK_MAX];
static uint32_t len[N_TOK];

/* Every byte, pieces that end strings and escapes and split characters, random runs. */
static void
make_vocab(struct rng *rng)
{
	static const char *const pieces[] = {
	        "\"", "\"]", "\",\"", "\\n", "\\u00", "e9\"", "\\\"", "\xc3\xa9", "\xc3", "\xa9",
	        "ab\"", "abc.", "aaaa", "\xe2\x82", "\xac", "\xe2\x82\xac\"",
	        /* out of one string and into the next: its copies are not the first one's */
	        "a\",\"bc", "\",\"abc", "\",\"ab\\n", "\",\"abcdef", "z\",\"", "\",\"a\"]",
	        "c\",\"abcd", "c\",\"abcdef", "cd\",\"ab\\\"c", "bcdef\",\"abc"};
	static const char alpha[] = "abcz \"\\u0123456789[],.!xy\xc3\xa9";
	uint32_t n = 0;

	for (uint32_t b = 0; b < 256; b++, n++) {
		tok[n][0] = (uint8_t)b;
		len[n] = 1;
	}
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++, n++) {
		len[n] = (uint32_t)strlen(pieces[i]);
		memcpy(tok[n], pieces[i], len[n]);
	}
	for (; n < N_TOK; n++) {
		len[n] = 1 + (uint32_t)(rng_next(rng) % 8);
		for (uint32_t i = 0; i < len[n]; i++)
			tok[n][i] = (uint8_t)alpha[rng_next(rng) % (sizeof(alpha) - 1)];
	}
}

/*
 * @walks random walks of up to @steps tokens through @text: each mask
 * equal to the brute force; the masks made from shared walks into *@st.
 */
static void
walks(const char *text, int walks, int steps, struct gram_masks_stats *st)
{
	struct gram *g;
	struct gram_err e;
	struct gram_vocab *v;
	struct gram_masks *c;
	struct rng rng;
	const uint8_t *ptr[N_TOK];

	rng_seed(&rng, 11);
	for (uint32_t i = 0; i < N_TOK; i++)
		ptr[i] = tok[i];
	if (gram_compile(text, strlen(text), NULL, &g, &e) != ORCH_OK)
		fprintf(stderr, "%s: %s\n", text, e.msg);
	T_OK(gram_vocab_new(ptr, len, N_TOK, &v));
	T_OK(gram_masks_new(g, v, 1 << 20, &c));
	for (int w = 0; w < walks; w++) {
		char out[1024];
		size_t k = 0;
		struct gram_match *m;
		T_OK(gram_match_new(g, &m));
		for (int step = 0; step < steps && !gram_match_done(m); step++) {
			const uint32_t *bits;
			uint32_t allowed[N_TOK], n_allowed = 0, inner[N_TOK], n_inner = 0;
			int bad = 0;
			T_OK(gram_match_mask(m, c, &bits));
			for (uint32_t i = 0; i < N_TOK; i++) {
				bool bit = (bits[i >> 5] >> (i & 31)) & 1;
				bool want = gram_brute(g, out, k, tok[i], len[i]);
				if (bit != want && bad++ == 0)
					fprintf(stderr,
					        "%s: walk %d step %d token %u '%.*s': mask %d\n",
					        text, w, step, i, (int)len[i], tok[i], bit);
				if (bit && k + len[i] < sizeof(out))
					allowed[n_allowed++] = i;
				if (bit && k + len[i] < sizeof(out) &&
				    !memchr(tok[i], '"', len[i]) && !memchr(tok[i], ']', len[i]))
					inner[n_inner++] = i;
			}
			T_EQ(bad, 0);
			if (n_allowed == 0)
				break;
			/* mostly a token that stays inside, so strings run into their bounds */
			uint32_t pick = n_inner > 0 && rng_next(&rng) % 8 != 0
			                        ? inner[rng_next(&rng) % n_inner]
			                        : allowed[rng_next(&rng) % n_allowed];
			T_TRUE(gram_match_feed(m, tok[pick], len[pick], NULL));
			memcpy(out + k, tok[pick], len[pick]);
			k += len[pick];
		}
		gram_match_free(m);
	}
	gram_masks_stats(c, st);
	gram_masks_free(c);
	gram_vocab_free(v);
	gram_free(g);
}

#define CHAR \
	"char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"

/* JSON strings with a maxLength, alone and as an array's items with a maxItems. */
static void
test_strings(void)
{
	struct gram_masks_stats st;

	walks("root ::= \"\\\"\" char{0,12} \"\\\"\" | \"[\" item ( \",\" item ){0,4} \"]\"\n"
	      "item ::= \"\\\"\" char{1,6} \"\\\"\"\n" CHAR,
	      16, 40, &st);
	T_TRUE(st.derived > 0 && st.shared_walks > 0 && st.shared_walks < st.derived);
	walks("root ::= \"\\\"\" [a-z .]{0,300} \"\\\"\"\n", 4, 120,
	      &st); /* longer than any token */
	T_TRUE(st.derived > 0 && st.shared_walks < st.derived);
}

/*
 * Tokens that leave one string and run on into the next of the same kind:
 * the next string's characters are not counted against the first's.
 */
static void
test_next_instance(void)
{
	static const char gr[] = "root ::= \"[\" item ( \",\" item ){0,4} \"]\"\n"
	                         "item ::= \"\\\"\" char{1,6} \"\\\"\"\n" CHAR;
	static const char *const prefix[] = {"[\"a", "[\"ab", "[\"abc", "[\"abcd", "[\"abcde"};
	struct gram *g;
	struct gram_err e;
	struct gram_vocab *v;
	struct gram_masks *c;
	struct gram_masks_stats st;
	const uint8_t *ptr[N_TOK];

	for (uint32_t i = 0; i < N_TOK; i++)
		ptr[i] = tok[i];
	T_OK(gram_compile(gr, sizeof(gr) - 1, NULL, &g, &e));
	T_OK(gram_vocab_new(ptr, len, N_TOK, &v));
	T_OK(gram_masks_new(g, v, 1 << 20, &c));
	for (size_t p = 0; p < sizeof(prefix) / sizeof(prefix[0]); p++) {
		struct gram_match *m;
		const uint32_t *bits;
		T_OK(gram_match_new(g, &m));
		T_TRUE(gram_match_feed(m, prefix[p], strlen(prefix[p]), NULL));
		T_OK(gram_match_mask(m, c, &bits));
		for (uint32_t i = 0; i < N_TOK; i++) {
			bool bit = (bits[i >> 5] >> (i & 31)) & 1;
			bool want = gram_brute(g, prefix[p], strlen(prefix[p]), tok[i], len[i]);
			if (bit != want)
				fprintf(stderr, "after '%s': token '%.*s': mask %d\n", prefix[p],
				        (int)len[i], tok[i], bit);
			T_EQ(bit, want);
		}
		gram_match_free(m);
	}
	gram_masks_stats(c, &st);
	T_TRUE(st.derived >= 3);
	gram_masks_free(c);
	gram_vocab_free(v);
	gram_free(g);
}

/* Two repetitions side by side (one is shared, the other stays as it is), and minima. */
static void
test_side_by_side(void)
{
	struct gram_masks_stats st;

	walks("root ::= \"\\\"\" [a-z]{0,7} \"\\\"\" | \"\\\"\" [a-c]{2,5} \"!\\\"\" | [0-9]{1,9}\n",
	      16, 20, &st);
	T_TRUE(st.derived > 0);
}

/* Repetitions whose counts cannot be shared: masks still right, none derived. */
static void
test_not_shared(void)
{
	struct gram_masks_stats st;

	walks("root ::= ( \"a\"? ){0,6} \"y\"\n", 8, 12, &st); /* x matches nothing */
	T_EQ(st.derived, 0);
	walks("root ::= item\nitem ::= \"(\" item{0,5} \")\" | \"z\"\n", 12, 30,
	      &st); /* x reaches it */
	T_EQ(st.derived, 0);
}

/* An x read two ways ("ab" is one copy or two): states whose stacks disagree are walked. */
static void
test_ambiguous(void)
{
	struct gram_masks_stats st;

	walks("root ::= ( \"a\" | \"ab\" | \"b\" ){0,9} \".\"\n", 16, 20, &st);
	T_TRUE(st.misses > st.derived);
}

/*
 * Parses that leave a repetition after different counts meet on one stack:
 * kept as one (the fewer copies), or a grammar the plain walk handles would
 * pass GRAM_STACKS_MAX with the count taken out (found by review: 2,000
 * alternatives after [a]{0,50} [a]* and a token of 24 a's).
 */
static void
test_many_counts(void)
{
	static uint8_t toks[3][24];
	static const uint32_t lens[3] = {1, 1, 24};
	const uint8_t *ptr[3] = {toks[0], toks[1], toks[2]};
	size_t k = 0, cap = 64 + 2000 * 12;
	char *text = malloc(cap);
	struct gram *g;
	struct gram_err e;
	struct gram_vocab *v;
	struct gram_masks *shared, *plain;
	struct gram_match *m;

	T_TRUE(text != NULL);
	k += (size_t)snprintf(text, cap, "root ::= [a]{0,50} [a]* s\ns ::= ");
	for (int i = 0; i < 2000; i++)
		k += (size_t)snprintf(text + k, cap - k, "%s\"a%04d\"", i ? " | " : "", i);
	toks[0][0] = 'a';
	toks[1][0] = '0';
	memset(toks[2], 'a', 24);
	T_OK(gram_compile(text, k, NULL, &g, &e));
	T_OK(gram_vocab_new(ptr, lens, 3, &v));
	T_OK(gram_masks_new(g, v, 1 << 20, &shared));
	T_OK(gram_masks_new(g, v, 1 << 20, &plain));
	gram_masks_share(plain, false);
	T_OK(gram_match_new(g, &m));
	for (int step = 0; step < 3; step++) {
		const uint32_t *a, *b;
		T_OK(gram_match_mask(m, plain, &b));
		uint32_t want = b[0];
		T_OK(gram_match_mask(m, shared, &a));
		T_EQ(a[0], want);
		T_TRUE(gram_match_feed(m, toks[step == 1 ? 2 : 0], lens[step == 1 ? 2 : 0], NULL));
	}
	struct gram_masks_stats st;
	gram_masks_stats(shared, &st);
	T_TRUE(st.derived == 3); /* shared each step, never given up for too many stacks */
	gram_match_free(m);
	gram_masks_free(shared);
	gram_masks_free(plain);
	gram_vocab_free(v);
	gram_free(g);
	free(text);
}

int
main(void)
{
	struct rng rng;

	rng_seed(&rng, 5);
	make_vocab(&rng);
	T_RUN(test_strings);
	T_RUN(test_next_instance);
	T_RUN(test_side_by_side);
	T_RUN(test_not_shared);
	T_RUN(test_ambiguous);
	T_RUN(test_many_counts);
	return t_done();
}
