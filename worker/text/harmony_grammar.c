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

#include "base/sbuf.h"

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
