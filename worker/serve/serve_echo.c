/*
 * serve_echo.c - a job's prompt sent back (Submit.echo, for completions'
 * echo): one TokenEntry with prompt set for each prompt token, in order,
 * all before the job's first generated token. Each carries its share of the
 * prompt's text (with logprobs, the token's bytes too), detokenized with control tokens
 * rendered (so the texts join into the prompt as the model read it: what a
 * client that sent token ids gets back); with Submit.logprobs, every one
 * but the first also carries its log-probability under the logits of the
 * position before it and the likeliest alternatives there, the model's
 * own distribution as for generated tokens (serve_logprobs.c).
 */
#include "serve_int.h"

/* Prompt token @pos's entry, with its log-probability under @logits (NULL: none). */
static bool
entry(struct serve *sv, struct serve_job *j, uint32_t pos, const float *logits, uint32_t n_vocab)
{
	struct serve_mark mark = serve_entries_mark(sv);
	int32_t id = j->sj.prompt[pos];
	struct entry_text *o;
	Orch__TokenEntry *e;
	bool ok;

	j->echo_text.n = 0;
	ok = detok_push(&j->echo_dt, id, &j->echo_text) == ORCH_OK &&
	     (pos + 1 < j->sj.n_prompt || detok_finish(&j->echo_dt, &j->echo_text) == ORCH_OK) &&
	     !j->echo_text.oom;
	e = ok ? serve_entry(sv, j->sj.id, j->echo_text.p ? j->echo_text.p : "", j->echo_text.n, &o)
	       : NULL;
	if (e != NULL) {
		o->prompt = true;
		e->prompt = true;
		e->index = pos;
		e->token_id = id;
		if (logits != NULL) {
			serve_lp_logits(j, &j->sj, pos, logits, n_vocab);
			ok = serve_lp_entry(sv, j, e, o, pos, id);
		} else if (j->logprobs) { /* the first token's string, for the list */
			ok = serve_lp_piece(sv, o, id, TOK_RENDER_SPECIAL);
		}
	}
	if (e == NULL || !ok || sv->text.oom) {
		serve_entries_undo(sv, mark);
		return false;
	}
	return true;
}

bool
serve_echo_start(struct serve *sv, struct serve_job *j)
{
	struct serve_mark mark = serve_entries_mark(sv);
	uint32_t n = j->sj.prompt_logits ? 1 : j->sj.n_prompt;

	detok_init(&j->echo_dt, sv->eng->mt.tok, TOK_STRIP_PREFIX | TOK_RENDER_SPECIAL);
	for (uint32_t pos = 0; pos < n; pos++)
		if (!entry(sv, j, pos, NULL, 0)) {
			serve_entries_undo(sv, mark);
			return false;
		}
	return true;
}

void
serve_echo_logits(void *ctx, struct sched_job *sj, uint32_t pos, const float *logits,
                  uint32_t n_vocab)
{
	struct serve_job *j = ctx;

	if (!entry(j->sv, j, pos, logits, n_vocab)) /* a prompt with a hole cannot be answered */
		sched_cancel(j->sv->eng->s, sj->id);
}
