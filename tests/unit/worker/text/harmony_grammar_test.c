/*
 * harmony_grammar_test.c - the harmony wrapper (harmony_grammar.h) on
 * gpt-oss's real o200k vocabulary: for each place a prompt may leave off and
 * for an answer and a call, the wrapped grammar compiled, its terminals
 * bound as the worker binds them, and whole outputs fed token by token:
 * those the wrapper allows end where only their end token can follow, the
 * others are refused at the first token that leaves it.
 */
#include "grammar/grammar.h"
#include "t.h"
#include "text/harmony_grammar.h"
#include "text/tokenizer.h"
#include "unit/worker/text/tok_load.h"

static struct tok *oss;

/* How @out (generated text, special tokens parsed) fares: 1 complete, 0 refused, -1 short. */
static int
run(const char *grammar, bool call, enum harmony_at at, const char *out)
{
	struct tok_ids ids = {0};
	struct gram *g = NULL;
	struct gram_match *m = NULL;
	struct gram_err ge = {0};
	char *text = NULL, piece[256];
	int verdict = -1;

	if (harmony_grammar(grammar, call, at, &text, NULL) != ORCH_OK ||
	    gram_compile(text, strlen(text), HARMONY_GRAMMAR_ROOT, &g, &ge) != ORCH_OK) {
		if (text != NULL) /* made, and did not compile: the wrapper's fault */
			fprintf(stderr, "%s\n  -> %u:%u %s\n", text, ge.line, ge.col, ge.msg);
		free(text);
		return -2;
	}
	for (uint32_t i = 0; i < gram_n_tokens(g); i++) {
		const char *name;
		uint32_t len;
		gram_token(g, i, &name, &len);
		gram_bind_token(g, i, tok_find(oss, name, len));
	}
	if (gram_match_new(g, &m) == ORCH_OK &&
	    tok_encode(oss, out, strlen(out), TOK_PARSE_SPECIAL, &ids) == ORCH_OK) {
		for (size_t i = 0; i < ids.n && verdict == -1; i++) {
			size_t k = tok_piece(oss, ids.v[i], 0, piece, sizeof(piece));
			int32_t next = gram_match_next_token(m);
			if (next >= 0 && tok_is_eog(oss, next))
				verdict = 2; /* ended before all of @out: too long */
			else if (!gram_match_feed_token(m, ids.v[i], piece, k, NULL))
				verdict = 0;
		}
		int32_t next = gram_match_next_token(m);
		if (verdict == -1 && next >= 0 && tok_is_eog(oss, next))
			verdict = 1;
	}
	tok_ids_fini(&ids);
	gram_match_free(m);
	gram_free(g);
	free(text);
	return verdict;
}

static const char yes_no[] = "root ::= \"yes\" | \"no\" |";
static const char call_f[] =
        "root ::= \"commentary to=functions.f \" <|constrain|> \"json\" <|message|> \"{}\"";

static void
test_answer(void)
{
	const enum harmony_at a = HARMONY_AT_ASSISTANT, b = HARMONY_AT_BETWEEN;

	T_EQ(run(yes_no, false, a, "<|channel|>final<|message|>yes"), 1);
	T_EQ(run(yes_no, false, a, "<|channel|>final<|message|>"), -1); /* "" or more: goes on */
	T_EQ(run(yes_no, false, a,
	         "<|channel|>analysis<|message|>Let me think. <|end|><|start|>assistant"
	         "<|channel|>final<|message|>no"),
	     1);
	T_EQ(run(yes_no, false, a, "<|channel|>final<|message|>maybe"), 0);
	T_EQ(run(yes_no, false, a, "<|channel|>commentary<|message|>yes"), 0);
	T_EQ(run(yes_no, false, a, "<|start|>assistant<|channel|>final<|message|>yes"), 0);
	T_EQ(run(yes_no, false, a,
	         "<|channel|>analysis<|message|>a<|end|><|start|>assistant"
	         "<|channel|>analysis<|message|>"),
	     0); /* one analysis */
	T_EQ(run(yes_no, false, b, "<|start|>assistant<|channel|>final<|message|>yes"), 1);
	T_EQ(run(yes_no, false, b, "<|channel|>final<|message|>yes"), 0);
	T_EQ(run(yes_no, false, HARMONY_AT_FINAL, "no"), 1);
	T_EQ(run(yes_no, false, HARMONY_AT_OTHER, "no"), -2); /* refused before any token */
	T_EQ(run("root ::= \"a\" |", false, a, "<|channel|>final<|message|>a"), 1);
}

static void
test_call(void)
{
	T_EQ(run(call_f, true, HARMONY_AT_ASSISTANT,
	         "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}"),
	     1);
	T_EQ(run(call_f, true, HARMONY_AT_ASSISTANT,
	         "<|channel|>analysis<|message|>Call f.<|end|><|start|>assistant"
	         "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}"),
	     1);
	T_EQ(run(call_f, true, HARMONY_AT_BETWEEN,
	         "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json"
	         "<|message|>{}"),
	     1);
	T_EQ(run(call_f, true, HARMONY_AT_ASSISTANT, "<|channel|>final<|message|>{}"), 0);
	T_EQ(run(call_f, true, HARMONY_AT_FINAL, "{}"), -2); /* a call cannot start in an answer */
}

/* An answer's grammar may not name the tokens its message is made of; text and others may. */
static void
test_answer_check(void)
{
	struct harmony_vocab hv;
	char gr[96];

	T_TRUE(harmony_vocab_find(oss, &hv));
	T_EQ(harmony_answer_check("root ::= \"x\" <|end|> <|start|>", &hv, NULL), ORCH_EINVAL);
	T_EQ(harmony_answer_check("root ::= \"x\" <|call|>", &hv, NULL), ORCH_EINVAL);
	snprintf(gr, sizeof(gr), "root ::= \"x\" <[%d]>", hv.channel);
	T_EQ(harmony_answer_check(gr, &hv, NULL), ORCH_EINVAL);
	T_EQ(harmony_answer_check("root ::= \"<|end|>\" | \"x\"", &hv, NULL), ORCH_OK); /* text */
	T_EQ(harmony_answer_check("root ::= \"x\" <|endoftext|>", &hv, NULL), ORCH_OK);
	T_EQ(harmony_answer_check("root ::= nope", &hv, NULL), ORCH_OK); /* the compile says */
}

int
main(void)
{
	oss = t_tok("vocab/ggml-vocab-gpt-oss.gguf");
	if (oss == NULL)
		return 1;
	T_RUN(test_answer);
	T_RUN(test_call);
	T_RUN(test_answer_check);
	tok_free(oss);
	return t_done();
}
