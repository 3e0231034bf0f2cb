/*
 * serve_grammar.c - a job's grammar (Submit.grammar) started in the worker:
 * on a harmony chat (gpt-oss) wrapped in the messages around the answer or
 * the call it shapes (text/harmony_grammar.h), from where the prompt leaves
 * off.
 */
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"
#include "text/harmony.h"
#include "text/harmony_grammar.h"

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
		rv = harmony_grammar(m->grammar, m->grammar_call, prompt_end(sv, j), &wrapped, e);
		/* an answer's grammar stays in its message: checked once (the wrapped is kept),
		 * and only where a terminal may be (a '<') */
		if (rv == ORCH_OK && !m->grammar_call && strchr(m->grammar, '<') != NULL &&
		    !grammars_cached(sv->eng->grammars, wrapped, strlen(wrapped),
		                     HARMONY_GRAMMAR_ROOT))
			rv = harmony_answer_check(m->grammar, &sv->eng->mt.hv, e);
		if (rv != ORCH_OK) {
			free(wrapped);
			return rv == ORCH_ENOMEM
			               ? orch_errf(e, ORCH_EVRAM, "out of memory admitting the job")
			               : rv;
		}
		text = wrapped;
		root = HARMONY_GRAMMAR_ROOT;
	}
	rv = grammars_start(sv->eng->grammars, text, strlen(text), root, &j->gj, e);
	free(wrapped);
	if (rv == ORCH_ENOMEM)
		return orch_errf(e, ORCH_EVRAM, "%s", e->msg);
	if (rv == ORCH_OK)
		j->sj.gj = &j->gj;
	return rv;
}
