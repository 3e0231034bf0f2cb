/*
 * serve_grammar.c - a job's grammar (Submit.grammar) started in the worker,
 * and on a harmony model (gpt-oss) put where it belongs.
 *
 * A harmony chat's output is messages, not one text: "<|channel|>analysis
 * <|message|>…<|end|><|start|>assistant<|channel|>final<|message|>…". The
 * grammar orchd sends is the answer (the final channel's content) or, for a
 * forced tool call, the call's message from its channel name on. The worker
 * wraps it in a grammar of the messages around it, whose control tokens are
 * token terminals (grammar.h): an analysis message may come first, free
 * text (the model reasons as it would), then the message the grammar
 * shapes. Where the prompt ends decides how the wrapper starts: a chat's
 * turn ends "<|start|>assistant", a conversation may end between messages,
 * and a prompt that opened the final channel itself gets the answer's
 * grammar and its end. docs/grammar.md, "Harmony models".
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "serve_int.h"
#include "text/harmony.h"

/* The wrapper's start rule; the names it adds all begin so (reserved in a harmony grammar). */
#define WRAP_ROOT "orch-harmony-root"

/*
 * The harmony wrapper, then @m's grammar text, for a prompt that ends at
 * @at, into *@ret (malloc'd); *@root the rule to start at. The wrapper comes
 * first: a grammar whose last rule continues past its end (a trailing '|')
 * would otherwise swallow the wrapper's first line. The answer ends with
 * <|return|>, a call with <|call|>: the only end tokens the grammar allows,
 * and the job ends when nothing else can follow (grammars_done).
 */
static orch_err
wrap(const Orch__Submit *m, enum harmony_at at, char **ret, const char **root,
     struct orch_errinfo *e)
{
	struct sbuf b = {0};

	*ret = NULL;
	*root = "root";
	if (at == HARMONY_AT_FINAL && !m->grammar_call) /* the prompt opened the answer */
		sbuf_printf(&b, "%s ::= root <|return|>\n", WRAP_ROOT);
	else if (at != HARMONY_AT_ASSISTANT && at != HARMONY_AT_BETWEEN)
		return orch_errf(e, ORCH_EINVAL,
		                 "constrained output on a harmony model needs the prompt to end "
		                 "between messages or with \"<|start|>assistant\" (a chat's turn)");
	else
		sbuf_printf(&b, "%s ::= %s orch-harmony-think? <|channel|> %s\n", WRAP_ROOT,
		            at == HARMONY_AT_BETWEEN ? "<|start|> \"assistant\"" : "",
		            m->grammar_call ? "root <|call|>"
		                            : "\"final\" <|message|> root <|return|>");
	sbuf_puts(&b, "orch-harmony-think ::= <|channel|> \"analysis\" <|message|> "
	              "orch-harmony-text <|end|> <|start|> \"assistant\"\n"
	              "orch-harmony-text ::= .*\n");
	sbuf_puts(&b, m->grammar);
	if (sbuf_err(&b) != ORCH_OK) {
		sbuf_fini(&b);
		return orch_errf(e, ORCH_EVRAM, "out of memory admitting the job");
	}
	*ret = sbuf_take(&b, NULL);
	*root = WRAP_ROOT;
	return ORCH_OK;
}

/* Where @j's prompt leaves a harmony parser. */
static enum harmony_at
prompt_end(struct serve *sv, const struct serve_job *j)
{
	struct harmony h;

	harmony_init(&h, sv->eng->mt.tok, &sv->eng->mt.hv);
	harmony_prime(&h, j->ids.v, j->ids.n);
	return harmony_where(&h);
}

orch_err
serve_grammar(struct serve *sv, struct serve_job *j, const Orch__Submit *m, struct orch_errinfo *e)
{
	const char *text = m->grammar, *root = "root";
	char *wrapped = NULL;
	orch_err rv;

	if (m->grammar == NULL || m->grammar[0] == '\0')
		return ORCH_OK;
	if (m->grammar_call && !(sv->eng->mt.harmony && (m->chat || m->n_messages > 0)))
		return orch_errf(e, ORCH_EINVAL, "grammar_call is for a chat on a harmony model");
	if (sv->eng->mt.harmony && (m->chat || m->n_messages > 0)) {
		if ((rv = wrap(m, prompt_end(sv, j), &wrapped, &root, e)) != ORCH_OK)
			return rv;
		text = wrapped;
	}
	rv = grammars_start(sv->eng->grammars, text, strlen(text), root, &j->gj, e);
	free(wrapped);
	if (rv == ORCH_ENOMEM)
		return orch_errf(e, ORCH_EVRAM, "%s", e->msg);
	if (rv == ORCH_OK)
		j->sj.gj = &j->gj;
	return rv;
}
