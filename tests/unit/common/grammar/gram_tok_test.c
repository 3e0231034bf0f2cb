/*
 * gram_tok_test.c - token terminals (grammar.h): <[ID]> and <TEXT> compiled,
 * each distinct one kept once, refused where malformed; bound, fed whole
 * beside bytes, and in the masks (gram_mask.h). A harmony-shaped grammar
 * walks a small vocabulary of control and text tokens.
 */
#include "grammar/gram_mask.h"
#include "grammar/grammar.h"
#include "t.h"

static struct gram *
compile(const char *text)
{
	struct gram *g = NULL;
	struct gram_err e;
	orch_err rv = gram_compile(text, strlen(text), NULL, &g, &e);

	if (rv != ORCH_OK)
		fprintf(stderr, "%s\n  -> %u:%u %s\n", text, e.line, e.col, e.msg);
	return g;
}

static void
refused(const char *text, const char *why)
{
	struct gram *g = NULL;
	struct gram_err e;

	T_EQ(gram_compile(text, strlen(text), NULL, &g, &e), ORCH_EINVAL);
	if (strstr(e.msg, why) == NULL)
		fprintf(stderr, "%s\n  -> '%s', wanted '%s'\n", text, e.msg, why);
	T_TRUE(strstr(e.msg, why) != NULL);
	T_TRUE(g == NULL);
}

static void
test_compile(void)
{
	struct gram *g =
	        compile("root ::= <|start|> \"a\" <[7]> x <|start|>\nx ::= <[7]>* <think>");
	const char *text;
	uint32_t len;

	T_TRUE(g != NULL);
	T_EQ(gram_n_tokens(g), 3); /* <|start|>, <[7]>, <think>: each once */
	T_EQ(gram_token(g, 0, &text, &len), -1);
	T_TRUE(len == 9 && memcmp(text, "<|start|>", 9) == 0);
	T_EQ(gram_token(g, 1, &text, &len), 7);
	T_TRUE(text == NULL);
	T_EQ(gram_token(g, 2, &text, &len), -1);
	T_TRUE(len == 7 && memcmp(text, "<think>", 7) == 0);
	gram_bind_token(g, 0, 42);
	T_EQ(gram_token(g, 0, &text, &len), 42);
	/* bytes alone never reach past a terminal */
	T_TRUE(!gram_accepts(g, "a", 1));
	T_TRUE(!gram_accepts(g, "<|start|>a", 10));
	gram_free(g);

	refused("root ::= !<[3]>", "any token but one");
	refused("root ::= <a\tb>", "a token terminal is");
	char big[400] = "root ::= <";
	memset(big + 10, 'x', 254); /* 256 bytes with the brackets: taken; 257: refused */
	strcpy(big + 264, ">");
	g = compile(big);
	T_TRUE(g != NULL && gram_n_tokens(g) == 1);
	gram_free(g);
	strcpy(big + 264, "x>");
	refused(big, "at most 256 bytes");
	char many[16384];
	size_t k = (size_t)snprintf(many, sizeof(many), "root ::=");
	for (int i = 0; i <= GRAM_TOKENS_MAX + GRAM_TOKENS_SPARE; i++)
		k += (size_t)snprintf(many + k, sizeof(many) - k, " <[%d]>", i);
	refused(many, "more than 1024 distinct token terminals");
	refused("root ::= <>", "empty token terminal");
	refused("root ::= <a b>", "a token terminal is");
	refused("root ::= <abc", "a token terminal is");
	refused("root ::= <[x]>", "expected a token id");
	refused("root ::= <[12]", "expected ']>'");
	refused("root ::= <[99999999999]>", "token id over");
	g = compile(
	        "root ::= <[1]> root | \"a\""); /* a terminal is never empty: no left recursion */
	T_TRUE(g != NULL);
	gram_free(g);
}

/* The tokens of the walk: control ones (no text) and text ones. */
enum { T_START, T_CHANNEL, T_MESSAGE, T_END, T_A, T_FINAL, T_ANALYSIS, T_BRACE, T_FIN, T_N };

static const char *const tok_text[T_N] = {[T_A] = "a",
                                          [T_FINAL] = "final",
                                          [T_ANALYSIS] = "analysis",
                                          [T_BRACE] = "{}",
                                          [T_FIN] = "fin"};

static bool
feed(struct gram_match *m, int tok)
{
	const char *s = tok_text[tok] ? tok_text[tok] : "";

	return gram_match_feed_token(m, tok, s, strlen(s), NULL);
}

static uint32_t
mask_of(struct gram_match *m, struct gram_masks *c)
{
	const uint32_t *bits;

	return gram_match_mask(m, c, &bits) == ORCH_OK ? bits[0] : UINT32_MAX;
}

#define BIT(t) (1u << (t))

static void
test_walk(void)
{
	static const char text[] =
	        "root ::= think? <|channel|> \"final\" <|message|> \"{}\"\n"
	        "think ::= <|channel|> \"analysis\" <|message|> \"a\"* <|end|> <|start|>\n";
	struct gram *g = compile(text);
	const uint8_t *bytes[T_N];
	uint32_t lens[T_N];
	struct gram_vocab *v;
	struct gram_masks *c;
	struct gram_match *m;
	const char *name;
	uint32_t len;

	T_TRUE(g != NULL);
	for (uint32_t i = 0; i < gram_n_tokens(g); i++) { /* bind by text, as the worker does */
		static const char *const names[] = {"<|channel|>", "<|message|>", "<|end|>",
		                                    "<|start|>"};
		static const int ids[] = {T_CHANNEL, T_MESSAGE, T_END, T_START};
		T_EQ(gram_token(g, i, &name, &len), -1);
		for (int k = 0; k < 4; k++)
			if (strlen(names[k]) == len && memcmp(names[k], name, len) == 0)
				gram_bind_token(g, i, ids[k]);
		T_TRUE(gram_token(g, i, &name, &len) >= 0);
	}
	for (int i = 0; i < T_N; i++) {
		bytes[i] = (const uint8_t *)(tok_text[i] ? tok_text[i] : "");
		lens[i] = tok_text[i] ? (uint32_t)strlen(tok_text[i]) : 0;
	}
	T_OK(gram_vocab_new(bytes, lens, T_N, &v));
	T_OK(gram_masks_new(g, v, 1 << 16, &c));
	T_OK(gram_match_new(g, &m));
	T_EQ(mask_of(m, c), BIT(T_CHANNEL));
	T_TRUE(!feed(m, T_A)); /* refused: left as it was */
	T_TRUE(!feed(m, T_START));
	T_TRUE(feed(m, T_CHANNEL));
	T_EQ(mask_of(m, c), BIT(T_A) | BIT(T_FINAL) | BIT(T_ANALYSIS) | BIT(T_FIN));
	T_TRUE(feed(m, T_ANALYSIS));
	T_EQ(mask_of(m, c), BIT(T_MESSAGE));
	T_EQ(gram_match_next_token(m), T_MESSAGE); /* only a terminal can follow */
	T_TRUE(feed(m, T_MESSAGE));
	T_EQ(mask_of(m, c), BIT(T_A) | BIT(T_END));
	T_EQ(gram_match_next_token(m), -1); /* bytes may follow */
	T_TRUE(feed(m, T_A) && feed(m, T_A));
	T_EQ(mask_of(m, c), BIT(T_A) | BIT(T_END)); /* the same state: from the cache */
	T_TRUE(feed(m, T_END) && feed(m, T_START) && feed(m, T_CHANNEL));
	T_TRUE(!feed(m, T_ANALYSIS)); /* one analysis only */
	T_TRUE(feed(m, T_FIN));       /* "final" as two tokens */
	T_TRUE(!gram_match_accepting(m));
	T_TRUE(!feed(m, T_MESSAGE)); /* "fin" is not "final" */
	T_TRUE(gram_match_feed_token(m, T_N, "al", 2, NULL));
	T_EQ(gram_match_next_token(m), T_MESSAGE);
	T_TRUE(feed(m, T_MESSAGE) && feed(m, T_BRACE));
	T_TRUE(gram_match_done(m));
	T_EQ(gram_match_next_token(m), -1); /* accepting */
	gram_match_free(m);
	gram_masks_free(c);
	gram_vocab_free(v);
	gram_free(g);
}

/* A text token matched by bytes and by its own terminal at once: both parses go on. */
static void
test_both(void)
{
	struct gram *g = compile("root ::= \"a\" \"b\" | <[4]> \"c\"");
	struct gram_match *m;

	T_TRUE(g != NULL);
	T_OK(gram_match_new(g, &m));
	T_TRUE(gram_match_feed_token(m, 4, "a", 1, NULL));
	T_TRUE(gram_match_feed(m, "c", 1, NULL));
	T_TRUE(gram_match_done(m));
	gram_match_free(m);
	T_OK(gram_match_new(g, &m));
	T_TRUE(gram_match_feed_token(m, 4, "a", 1, NULL));
	T_TRUE(gram_match_feed(m, "b", 1, NULL));
	T_TRUE(gram_match_done(m));
	gram_match_free(m);
	T_OK(gram_match_new(g, &m)); /* another token with the same text: bytes only */
	T_TRUE(gram_match_feed_token(m, 5, "a", 1, NULL));
	T_TRUE(!gram_match_feed(m, "c", 1, NULL));
	gram_match_free(m);
	T_OK(gram_match_new(g, &m)); /* a control token no terminal names is refused */
	T_TRUE(!gram_match_feed_token(m, 9, "", 0, NULL));
	gram_match_free(m);
	gram_free(g);
}

int
main(void)
{
	T_RUN(test_compile);
	T_RUN(test_walk);
	T_RUN(test_both);
	return t_done();
}
