/*
 * harmony_grammar.c - one harmony message's grammar wrapped in the messages
 * around it (harmony_grammar.h).
 *
 * The analysis is free: the model reasons as it would (vLLM leaves
 * reasoning unconstrained too), and a real gpt-oss ends it itself. The
 * answer and the call end with their end tokens, which the grammar names:
 * no other end token is allowed there, and the worker ends the job as soon
 * as that token is all that can follow (grammars_done), without a step.
 */
#include "harmony_grammar.h"

#include <stddef.h>
#include <string.h>

#include "base/sbuf.h"
#include "grammar/grammar.h"

orch_err
harmony_grammar(const char *grammar, bool call, enum harmony_at at, char **ret,
                struct orch_errinfo *reterr)
{
	struct sbuf b = {0};

	*ret = NULL;
	if (at == HARMONY_AT_FINAL && !call) /* the prompt opened the answer */
		sbuf_printf(&b, "%s ::= root <|return|>\n", HARMONY_GRAMMAR_ROOT);
	else if (at != HARMONY_AT_ASSISTANT && at != HARMONY_AT_BETWEEN)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "constrained output on a harmony model needs the prompt to end "
		                 "between messages or with \"<|start|>assistant\" (a chat's turn)");
	else
		sbuf_printf(&b, "%s ::= %s orch-harmony-think? <|channel|> %s\n",
		            HARMONY_GRAMMAR_ROOT,
		            at == HARMONY_AT_BETWEEN ? "<|start|> \"assistant\"" : "",
		            call ? "root <|call|>" : "\"final\" <|message|> root <|return|>");
	sbuf_puts(&b, "orch-harmony-think ::= <|channel|> \"analysis\" <|message|> "
	              "orch-harmony-text <|end|> <|start|> \"assistant\"\n"
	              "orch-harmony-text ::= .*\n");
	sbuf_puts(&b, grammar);
	if (sbuf_err(&b) != ORCH_OK) {
		sbuf_fini(&b);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	*ret = sbuf_take(&b, NULL);
	return ORCH_OK;
}

orch_err
harmony_answer_check(const char *grammar, const struct harmony_vocab *hv,
                     struct orch_errinfo *reterr)
{
	static const char *const names[] = {"<|start|>",   "<|end|>",       "<|message|>",
	                                    "<|channel|>", "<|constrain|>", "<|return|>",
	                                    "<|call|>"};
	const int32_t ids[] = {hv->start,     hv->end, hv->message, hv->channel,
	                       hv->constrain, hv->ret, hv->call};
	struct gram *g = NULL;
	struct gram_err ge;
	orch_err rv = gram_compile(grammar, strlen(grammar), NULL, &g, &ge);

	if (rv != ORCH_OK)
		return rv == ORCH_ENOMEM ? orch_errf(reterr, rv, "out of memory") : ORCH_OK;
	for (uint32_t i = 0; i < gram_n_tokens(g) && rv == ORCH_OK; i++) {
		const char *text;
		uint32_t len;
		int32_t id = gram_token(g, i, &text, &len);
		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]) && rv == ORCH_OK; k++)
			if (text ? strlen(names[k]) == len && memcmp(text, names[k], len) == 0
			         : id == ids[k] && id >= 0)
				rv = orch_errf(
				        reterr, ORCH_EINVAL,
				        "grammar: on a harmony model a chat's grammar is the "
				        "answer (the final channel's content) and may not name "
				        "%s, which the messages around it are made of",
				        names[k]);
	}
	gram_free(g);
	return rv;
}
