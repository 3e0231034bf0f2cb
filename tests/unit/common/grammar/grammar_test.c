/*
 * grammar_test.c - GBNF compile and match (grammar.h): what each construct
 * accepts and refuses, byte by byte and across feeds split anywhere,
 * character classes over UTF-8, and every refusal with where and why.
 */
#include "base/clock.h"
#include "base/rng.h"
#include "base/sbuf.h"
#include "gram_brute.h"
#include "grammar/gram_mask.h"
#include "grammar/grammar.h"
#include "t.h"

/* @text compiled; each of @yes (NULL-ended) accepted whole, each of @no refused. */
static void
check(const char *text, const char *const *yes, const char *const *no)
{
	struct gram *g;
	struct gram_err e;
	orch_err rv = gram_compile(text, strlen(text), NULL, &g, &e);

	if (rv != ORCH_OK)
		fprintf(stderr, "%s\n  -> %u:%u %s\n", text, e.line, e.col, e.msg);
	T_OK(rv);
	for (; *yes; yes++) {
		if (!gram_accepts(g, *yes, strlen(*yes)))
			fprintf(stderr, "%s\n  does not accept '%s'\n", text, *yes);
		T_TRUE(gram_accepts(g, *yes, strlen(*yes)));
	}
	for (; *no; no++) {
		if (gram_accepts(g, *no, strlen(*no)))
			fprintf(stderr, "%s\n  accepts '%s'\n", text, *no);
		T_TRUE(!gram_accepts(g, *no, strlen(*no)));
	}
	gram_free(g);
}

#define L(...)                    \
	(const char *const[])     \
	{                         \
		__VA_ARGS__, NULL \
	}

static void
test_constructs(void)
{
	check("root ::= \"abc\"", L("abc"), L("", "ab", "abcd", "abd"));
	check("root ::= \"a\" | \"bc\" | ", L("a", "bc", ""), L("b", "abc"));
	check("root ::= x y\nx ::= \"x\"\ny ::= \"y\"+", L("xy", "xyyy"), L("x", "xyx"));
	check("root ::= [a-c]* \"!\"", L("!", "abcabc!"), L("abcd!", "a"));
	check("root ::= [^a-c]", L("d", "!", "\xc3\xa9", "\xf0\x9f\x98\x80"), L("a", "", "dd"));
	check("root ::= \"a\"? \"b\"{2,3} (\"c\" | \"d\"){2}", L("bbcd", "abbbdd"),
	      L("bcd", "abbbbcc", "abbc"));
	check("root ::= \"x\"{3,}", L("xxx", "xxxxxxxx"), L("xx"));
	check("root ::= \"x\"{0,2} \"y\"{0}", L("", "x", "xx"), L("xxx", "y"));
	check("root ::= (\"(\" root \")\")*", L("", "()", "(())()", "((()))"), L("(", "())", ")("));
	check("# a comment\nroot ::= ( \"a\" # inside\n  | \"b\" )\n\n", L("a", "b"), L("ab"));
	check("root ::= \"\\x41\\u00e9\\U0001F600\\n\\\"\\\\\"",
	      L("A\xc3\xa9\xf0\x9f\x98\x80\n\"\\"), L("A"));
	check("root ::= .", L("a", "\xc3\xa9", "\xe2\x82\xac", "\xf4\x8f\xbf\xbf"),
	      L("", "\xc3", "\xed\xa0\x80", "\xc0\x80", "\xf4\x90\x80\x80", "\xff"));
	check("root ::= [\\u00e0-\\u00ff\\u0100-\\u07ff\\u4e00-\\u9fff]+",
	      L("\xc3\xa0", "\xdf\xbf", "\xe4\xb8\x80\xe9\xbf\xbf"),
	      L("\xc3\x9f", "\xe0\xa0\x80", "\xea\x80\x80", "a"));
	check("root ::= [^\\x00-\\x7f]", L("\xc2\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80"),
	      L("\x7f", "\xed\xbf\xbf"));
	check("root ::= \"\" | \"a\"", L("", "a"), L("aa"));
	check("root ::= a-b_c\na-b_c ::= [\\]\\-\\^]", L("]", "-", "^"), L("a"));
	check("root ::= [] | \"a\"", L("a"), L("", "\x01"));
}

static void
test_ambiguous(void)
{
	/* every parse kept alive: a* a* and (a|a)* stay linear, and a | ab both live */
	check("root ::= \"a\"* \"a\"* \"b\"", L("b", "aaaaab"), L("aaaa"));
	check("root ::= (\"a\" | \"a\")* \"b\"", L("aaaaaaaaaaaaaaaaaaaaaaaaaaaab"), L("ba"));
	check("root ::= \"a\" | \"ab\" | \"a\" \"bc\"", L("a", "ab", "abc"), L("b", "abcd"));
	/* empty matches reached many ways: each (position, parent) expanded once, not 2^40 times */
	check("root ::= (\"a\"? | \"b\"?){0,40} \"c\"", L("c", "abc", "bbbbac"), L("", "ca"));
	check("root ::= e e e e e e e e e e e e e e e e e e e e e e e e \"z\"\ne ::= \"\" | \"\"",
	      L("z"), L("", "zz"));
}

/*
 * Parses that stay distinct: after k a's, 2^k stacks (which of b and c each
 * a awaits). 2^13 of them feed at once (a duplicate found by the index, not a
 * scan of them all: 2^26 comparisons a byte before); 2^17 are more than
 * GRAM_STACKS_MAX, refused as too ambiguous (ORCH_ERANGE), not as out of memory.
 */
static void
test_too_ambiguous(void)
{
	static const char gr[] = "root ::= x\nx ::= \"a\" x \"b\" | \"a\" x \"c\" | \"\"";
	struct gram *g;
	struct gram_match *m;
	struct gram_err e;
	orch_err why = ORCH_OK;
	uint64_t t0 = orch_mono_ns();

	T_OK(gram_compile(gr, sizeof(gr) - 1, NULL, &g, &e));
	T_OK(gram_match_new(g, &m));
	T_TRUE(gram_match_feed(m, "aaaaaaaaaaaaa", 13, &why));
	T_TRUE(gram_match_feed(m, "bcbcbcbcbcbcb", 13, &why));
	T_TRUE(gram_match_accepting(m));
	printf("13 nested choices (8192 parses alive) in %.1f ms\n",
	       (double)(orch_mono_ns() - t0) / 1e6);
	gram_match_free(m);
	T_OK(gram_match_new(g, &m));
	T_TRUE(!gram_match_feed(m, "aaaaaaaaaaaaaaaaa", 17, &why));
	T_EQ(why, ORCH_ERANGE);
	T_TRUE(gram_match_feed(m, "a", 1, &why)); /* left as it was: fresh */
	gram_match_free(m);
	gram_free(g);
}

static void
test_feed(void)
{
	static const char gr[] = "root ::= \"{\" [ \\u00e9]* \"}\"";
	struct gram *g;
	struct gram_match *m;
	struct gram_err e;
	orch_err why = ORCH_EIO;

	T_OK(gram_compile(gr, sizeof(gr) - 1, NULL, &g, &e));
	T_OK(gram_match_new(g, &m));
	T_TRUE(!gram_match_accepting(m));
	T_TRUE(gram_match_feed(m, "{ \xc3", 3, &why));
	T_EQ(why, ORCH_OK);
	T_TRUE(!gram_match_feed(m, "\xc3", 1, &why)); /* not a continuation byte */
	T_EQ(why, ORCH_EINVAL);
	T_TRUE(gram_match_feed(m, "\xa9 ", 2, NULL)); /* the refused feed changed nothing */
	T_TRUE(!gram_match_feed(m, " }x", 3, NULL));  /* refused as a whole */
	T_TRUE(!gram_match_accepting(m));
	T_TRUE(gram_match_feed(m, "}", 1, NULL));
	T_TRUE(gram_match_accepting(m));
	T_TRUE(gram_match_done(m));
	T_TRUE(!gram_match_feed(m, " ", 1, NULL));
	T_TRUE(gram_match_feed(m, "", 0, NULL));
	gram_match_free(m);
	gram_free(g);
}

static void
refused(const char *text, uint32_t line, uint32_t col, const char *msg)
{
	struct gram *g = (struct gram *)1;
	struct gram_err e;

	T_ERR(gram_compile(text, strlen(text), NULL, &g, &e), ORCH_EINVAL);
	T_TRUE(g == NULL);
	if (strstr(e.msg, msg) == NULL || e.line != line || e.col != col)
		fprintf(stderr, "%s\n  -> %u:%u %s (want %u:%u %s)\n", text, e.line, e.col, e.msg,
		        line, col, msg);
	T_TRUE(strstr(e.msg, msg) != NULL);
	T_EQ(e.line, line);
	T_EQ(e.col, col);
}

static void
test_refused(void)
{
	refused("root ::= x", 1, 10, "undefined rule 'x'");
	refused("root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined twice");
	refused("root ::= root \"a\" | \"b\"", 1, 1, "left recursion through rule 'root'");
	refused("root ::= x\nx ::= y? root\ny ::= \"y\"", 1, 1, "left recursion");
	refused("root ::= (\"a\"?)*", 1, 17, "left recursion");
	/* found after a child's walk resumes its parent: in a later alternative, past nullables */
	refused("root ::= a\na ::= b \"x\" | c \"y\" | e e a\nb ::= \"b\"\nc ::= b\ne ::= \"\" | \"e\"",
	        1, 10, "left recursion through rule 'a'");
	refused("root ::= n0 \"x\" | \"y\"\nn0 ::= n1 n1 root\nn1 ::= n2\nn2 ::= \"\"", 1, 1,
	        "left recursion through rule 'root'");
	refused("root ::= \"abc", 1, 14, "unterminated string");
	refused("root ::= [a-", 1, 13, "unterminated");
	refused("root ::= [z-a]", 1, 14, "out of order");
	refused("root ::= \"\\q\"", 1, 12, "unknown escape");
	refused("root ::= \"\\ud800\"", 1, 17, "not a Unicode scalar value");
	refused("root ::= \"a\"{3,2}", 1, 18, "upper bound");
	refused("root ::= \"a\"{10001}", 1, 19, "over 10000");
	refused("root ::= ( \"a\" ", 1, 16, "expected ')'");
	refused("root ::= \"a\" )", 1, 14, "unmatched ')'");
	refused("root ::= *", 1, 10, "unexpected '*'");
	refused("root = \"a\"", 1, 6, "expected '::='");
	refused("x ::= \"a\"", 0, 0, "no rule 'root'");
	refused("root ::= \"\xff\"", 1, 11, "ill-formed UTF-8");
}

/* A JSON-like grammar with UTF-8 strings, nesting and bounded numbers. */
static const char json_gr[] = "root ::= value\n"
                              "value ::= obj | arr | str | num | \"true\" | \"null\"\n"
                              "obj ::= \"{\" ( str \":\" value (\",\" str \":\" value)* )? \"}\"\n"
                              "arr ::= \"[\" ( value (\",\" value)* )? \"]\"\n"
                              "str ::= \"\\\"\" [^\"\\\\]{0,6} \"\\\"\"\n"
                              "num ::= \"-\"? [1-9] [0-9]{0,3}\n";

/* @text compiled, expanding to @want (gram_expansion); NULL after a failed check. */
static struct gram *
expands(const char *text, uint64_t want)
{
	struct gram *g = NULL;
	struct gram_err e;
	orch_err rv = gram_compile(text, strlen(text), NULL, &g, &e);

	if (rv != ORCH_OK || gram_expansion(g) != want)
		fprintf(stderr, "%s\n  -> %s %u:%u %s, expands to %" PRIu64 " (want %" PRIu64 ")\n",
		        text, orch_err_name(rv), e.line, e.col, e.msg, g ? gram_expansion(g) : 0,
		        want);
	if (rv == ORCH_OK && gram_expansion(g) == want)
		return g;
	gram_free(g);
	t_failed_checks++;
	return NULL;
}

/*
 * Repetitions nested in repetitions of what can be empty multiply (a
 * matcher enters all their copies at once): ((x{0,100}){0,100}){0,100} once
 * made a worker's matcher grow ~200 MB/s until it was killed. Refused at
 * compile time past GRAM_EXPANSION_MAX, however they are nested (groups,
 * named rules, repetitions of repetitions); 10^5 exactly is taken, and a
 * matcher of it works. A byte between the copies (a string's length inside
 * an array's) does not multiply.
 */
static void
test_expansion(void)
{
	static const char *const many[] = {
	        "root ::= ((\"a\"{0,100}){0,100}){0,100}",
	        "root ::= x{0,100}\nx ::= y{0,100}\ny ::= \"a\"{0,100}",
	        "root ::= \"a\"{0,100}{0,100}{0,100}",
	        "root ::= (\"b\" | ((\"\" | \"a\"){2,100}){0,100}){0,100} \"c\"",
	};
	struct gram *g;
	struct gram_match *m;
	orch_err why;

	refused(many[0], 1, 38,
	        "the grammar's repetitions expand to 1000000 parse positions (x{0,100} inside "
	        "x{0,100} inside x{0,100}); at most 100000");
	refused(many[1], 1, 18, "expand to 1000000 parse positions");
	refused(many[2], 1, 34, "expand to 1000000 parse positions");
	refused(many[3], 1, 51, "expand to 1000000 parse positions");
	refused("root ::= \"a\"{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}"
	        "{0,2}{0,2}{0,2}{0,2}{0,2}{0,2}",
	        1, 113, "expand to 1048576 parse positions (... inside x{0,2} inside");
	refused("root ::= (\"a\"{0,10000}){0,10000}", 1, 33,
	        "expand to 100000000 parse positions (x{0,10000} inside x{0,10000})");
	/* GRAM_EXPANSION_MAX exactly, from the start and from its middle */
	T_TRUE((g = expands("root ::= (\"a\"{0,100}){0,1000}", 100000)) != NULL);
	T_OK(gram_match_new(g, &m));
	T_TRUE(gram_match_feed(m, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 50, &why));
	T_TRUE(gram_match_accepting(m));
	gram_match_free(m);
	gram_free(g);
	T_TRUE((g = expands("root ::= \"x\" (\"a\" | \"\"{0,10}){0,100}{0,100} \"y\"", 100000)) !=
	       NULL);
	T_TRUE(gram_accepts(g, "xaaay", 5));
	gram_free(g);
	/* a byte between the copies: the counts do not multiply */
	T_TRUE((g = expands("root ::= (\"[\" [a-z]{0,10000} \"]\"){0,10000}", 10000)) != NULL);
	T_TRUE(gram_accepts(g, "[ab][][c]", 9));
	gram_free(g);
	T_TRUE((g = expands("root ::= ((\"a\"{1,100}){1,100}){1,100}", 100)) != NULL);
	gram_free(g);
	T_TRUE((g = expands("root ::= \"a\"* \"b\"? (\"c\"{2,})+", 2)) != NULL);
	gram_free(g);
	T_TRUE((g = expands(json_gr, 6)) != NULL);
	gram_free(g);
}

/*
 * The matcher's own bound, under the compiler's: a grammar whose
 * expansion is small but whose sum is not (2,000 nullable {0,1000} in a
 * row: 2 million (position, parent) pairs before the first byte) ends its
 * step at GRAM_WORK_MAX work items or GRAM_NODES_MAX nodes, ORCH_ERANGE
 * as too ambiguous, in bounded memory: starting, feeding and masking.
 */
static void
test_work_bound(void)
{
	struct sbuf b = {0};
	struct gram *g;
	struct gram_err e;
	struct gram_match *m = NULL;
	struct gram_vocab *v;
	struct gram_masks *c;
	const uint8_t *tok[1] = {(const uint8_t *)"x"};
	const uint32_t *bits;
	uint32_t len[1] = {1};
	orch_err why = ORCH_OK;

	for (int head = 0; head < 2; head++) {
		sbuf_puts(&b, head ? "root ::= \"x\"" : "root ::=");
		for (int i = 0; i < 2000; i++)
			sbuf_puts(&b, " e");
		sbuf_puts(&b, " \"z\"\ne ::= \"\"{0,1000}\n");
		T_OK(gram_compile(b.p, b.n, NULL, &g, &e));
		T_EQ(gram_expansion(g), 1000);
		if (!head) {
			T_ERR(gram_match_new(g, &m), ORCH_ERANGE);
			T_TRUE(m == NULL);
			gram_free(g);
			sbuf_clear(&b);
			continue;
		}
		T_OK(gram_match_new(g, &m));
		T_TRUE(!gram_match_feed(m, "x", 1, &why));
		T_EQ(why, ORCH_ERANGE);
		T_OK(gram_vocab_new(tok, len, 1, &v));
		T_OK(gram_masks_new(g, v, 0, &c));
		T_ERR(gram_match_mask(m, c, &bits), ORCH_ERANGE);
		gram_masks_free(c);
		gram_vocab_free(v);
		T_TRUE(!gram_match_feed(m, "z", 1, &why)); /* left as it was: at the start */
		T_EQ(why, ORCH_EINVAL);
		gram_match_free(m);
		gram_free(g);
	}
	sbuf_fini(&b);
}

/*
 * One feed whose bytes leave more dead nodes than GRAM_NODES_MAX (each "x"
 * enters 1,000 rules under a new node, dead at the next byte: 2.5 million
 * in all) is compacted in its middle rather than refused, and a feed
 * refused after such a compaction still leaves the matcher as it was.
 */
static void
test_long_feed(void)
{
	enum { N = 2500 };
	struct sbuf b = {0};
	struct gram *g;
	struct gram_err e;
	struct gram_match *m;
	char *in = malloc(N + 1);
	orch_err why = ORCH_OK;

	T_TRUE(in != NULL);
	sbuf_puts(&b, "root ::= \"x\" f root \"y\" | \"\"\nf ::=");
	for (int i = 0; i < 1000; i++)
		sbuf_puts(&b, " h");
	sbuf_puts(&b, "\nh ::= \"\" | \"z\"\n");
	T_OK(gram_compile(b.p, b.n, NULL, &g, &e));
	sbuf_fini(&b);
	T_OK(gram_match_new(g, &m));
	memset(in, 'x', N);
	T_TRUE(gram_match_feed(m, in, N, &why));
	in[N] = 'q';
	T_TRUE(!gram_match_feed(m, in, N + 1, &why));
	T_EQ(why, ORCH_EINVAL);
	memset(in, 'y', N);
	T_TRUE(gram_match_feed(m, in, N, &why));
	T_TRUE(gram_match_accepting(m));
	gram_match_free(m);
	gram_free(g);
	free(in);
}

static orch_err
compile_once(void *ctx)
{
	struct gram *g = NULL;
	struct gram_err e;
	orch_err rv = gram_compile(ctx, strlen(ctx), NULL, &g, &e);

	gram_free(g);
	return rv;
}

/* Compiling runs out of memory cleanly anywhere: ORCH_ENOMEM, nothing leaked. */
static void
test_compile_oom(void)
{
	static const char gr[] = "root ::= ( x{0,5} | \"b\"+ ){0,5} [\\u00e0-\\u00ff]{2,} <[7]>\n"
	                         "x ::= \"\" | \"a\" (\"c\"? \"d\"){2,3}\n";

	T_TRUE(t_oom_loop(compile_once, (void *)gr, 100000) > 0);
}

/*
 * Compiling stays linear where it once was quadratic: 150,000 alternatives
 * of a non-ASCII class (55 s before, on this machine; 0.07 s now; so many
 * live parses at once the matcher refuses it as too ambiguous), a chain
 * of 60,000 rules that match the empty string only at its end, and 30,000
 * distinct byte sets. A regression shows as a slow test, not a timed failure.
 */
static void
test_large(void)
{
	enum { N = 150000 };
	char *s = malloc(16ull * N + 64), *p = s;
	struct gram *g;
	struct gram_err e;

	T_TRUE(s != NULL);
	p += sprintf(p, "root ::= \"a\"");
	for (int i = 0; i < N; i++)
		p += sprintf(p, " | [\xc3\xa9]");
	T_OK(gram_compile(s, (size_t)(p - s), NULL, &g, &e));
	struct gram_match *m = NULL;
	T_ERR(gram_match_new(g, &m), ORCH_ERANGE); /* 150,001 parses from the start */
	T_TRUE(m == NULL);
	gram_free(g);
	p = s + sprintf(s, "root ::= r0 \"z\"\n");
	for (int i = 0; i < N / 3; i++)
		p += sprintf(p, "r%d ::= r%d\n", i, i + 1);
	p += sprintf(p, "r%d ::= \"\"\n", N / 3);
	T_OK(gram_compile(s, (size_t)(p - s), NULL, &g, &e));
	T_TRUE(gram_accepts(g, "z", 1));
	gram_free(g);
	p = s + sprintf(s, "root ::= \"a\"");
	for (int i = 0; i < N / 5; i++) /* [\x01\xNN-\xMM]: mostly distinct sets */
		p += sprintf(p, " | [\\x01\\x%02x-\\x%02x]", 2 + i % 120,
		             2 + i % 120 + (i / 120) % 100);
	T_OK(gram_compile(s, (size_t)(p - s), NULL, &g, &e));
	T_TRUE(gram_accepts(g, "\x01", 1));
	gram_free(g);
	free(s);
}

/* Tokens: every byte, pieces of JSON, random strings of JSON bytes and UTF-8, duplicates. */
static uint32_t
make_vocab(uint8_t (*tok)[8], uint32_t *len, struct rng *rng)
{
	static const char *const pieces[] = {"{\"",  "\":",      "\",\"", "[1",     "]}",  "true",
	                                     "null", "\xc3\xa9", "\xc3",  "\xa9\"", "-12", "\"\""};
	static const char alpha[] = "{}[],:\"-0123456789tnul\\a\xc3\xa9\xe2\x82\xac";
	uint32_t n = 0;

	for (uint32_t b = 0; b < 256; b++, n++) {
		tok[n][0] = (uint8_t)b;
		len[n] = 1;
	}
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++, n++) {
		len[n] = (uint32_t)strlen(pieces[i]);
		memcpy(tok[n], pieces[i], len[n]);
	}
	len[n++] = 0; /* a control token */
	memcpy(tok[n], "true", 4);
	len[n++] = 4; /* the same bytes twice */
	for (; n < 700; n++) {
		len[n] = 1 + (uint32_t)(rng_next(rng) % 5);
		for (uint32_t i = 0; i < len[n]; i++)
			tok[n][i] = (uint8_t)alpha[rng_next(rng) % (sizeof(alpha) - 1)];
	}
	return n;
}

/* Random walks through the grammar: at every step each token's bit equals the brute force. */
static void
test_mask(void)
{
	static uint8_t tok[700][8];
	static uint32_t len[700];
	const uint8_t *ptr[700];
	struct rng rng;
	struct gram *g;
	struct gram_err e;
	struct gram_vocab *v;
	struct gram_masks *c;
	struct gram_masks_stats st;

	rng_seed(&rng, 7);
	uint32_t n = make_vocab(tok, len, &rng);
	for (uint32_t i = 0; i < n; i++)
		ptr[i] = tok[i];
	T_OK(gram_compile(json_gr, sizeof(json_gr) - 1, NULL, &g, &e));
	T_OK(gram_vocab_new(ptr, len, n, &v));
	T_EQ(gram_vocab_size(v), n);
	T_OK(gram_masks_new(g, v, 1 << 20, &c));
	for (int walk = 0; walk < 12; walk++) {
		char out[256];
		size_t k = 0;
		struct gram_match *m;
		T_OK(gram_match_new(g, &m));
		for (int step = 0; step < 40 && !gram_match_done(m); step++) {
			const uint32_t *bits;
			uint32_t allowed[700], n_allowed = 0;
			T_OK(gram_match_mask(m, c, &bits));
			for (uint32_t i = 0; i < n; i++) {
				bool bit = (bits[i >> 5] >> (i & 31)) & 1;
				if (bit != gram_brute(g, out, k, tok[i], len[i]))
					fprintf(stderr, "walk %d step %d token %u: mask %d\n", walk,
					        step, i, bit);
				T_EQ(bit, gram_brute(g, out, k, tok[i], len[i]));
				if (bit && k + len[i] < sizeof(out))
					allowed[n_allowed++] = i;
			}
			if (n_allowed == 0)
				break;
			uint32_t pick = allowed[rng_next(&rng) % n_allowed];
			T_TRUE(gram_match_feed(m, tok[pick], len[pick], NULL));
			memcpy(out + k, tok[pick], len[pick]);
			k += len[pick];
		}
		gram_match_free(m);
	}
	gram_masks_stats(c, &st);
	T_TRUE(st.hits > 0 && st.misses > 0); /* states repeat: the cache answers some */
	gram_masks_free(c);
	gram_vocab_free(v);
	gram_free(g);
}

int
main(void)
{
	T_RUN(test_constructs);
	T_RUN(test_ambiguous);
	T_RUN(test_too_ambiguous);
	T_RUN(test_large);
	T_RUN(test_feed);
	T_RUN(test_refused);
	T_RUN(test_expansion);
	T_RUN(test_work_bound);
	T_RUN(test_long_feed);
	T_RUN(test_compile_oom);
	T_RUN(test_mask);
	return t_done();
}
