/*
 * api_logprobs.c - log-probabilities in the APIs' shapes (api_logprobs.h).
 */
#include "api_logprobs.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "job_logprobs.h"
#include "jobs.h"
#include "params.h"

/* {token, logprob, bytes}: one entry of chat's content or top_logprobs. */
static cJSON *
chat_tok(const struct job_lp_tok *t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddItemToObject(o, "token", job_lp_string(t));
	cJSON_AddNumberToObject(o, "logprob", (double)t->logprob);
	cJSON_AddItemToObject(o, "bytes", job_lp_byte_array(t));
	return o;
}

static void
chat_add(cJSON *content, const struct job_lp *lp)
{
	cJSON *o = chat_tok(&lp->tok), *top = cJSON_AddArrayToObject(o, "top_logprobs");

	for (uint32_t k = 0; k < lp->n_top; k++)
		cJSON_AddItemToArray(top, chat_tok(&lp->top[k]));
	cJSON_AddItemToArray(content, o);
}

/* The legacy shape's four parallel arrays. */
struct cmpl {
	cJSON *tokens, *logprobs, *top, *offsets;
};

/* @lp in @c, at @shift characters more than its text_offset; a NaN logprob (the prompt's
 * first token) is null, and so are its alternatives. */
static void
cmpl_add(const struct cmpl *c, const struct job_lp *lp, uint32_t shift)
{
	cJSON *alts = cJSON_CreateObject();

	cJSON_AddItemToArray(c->tokens, job_lp_string(&lp->tok));
	cJSON_AddItemToArray(c->offsets, cJSON_CreateNumber(lp->text_offset + shift));
	if (isnan(lp->tok.logprob)) {
		cJSON_AddItemToArray(c->logprobs, cJSON_CreateNull());
		cJSON_AddItemToArray(c->top, cJSON_CreateNull());
		cJSON_Delete(alts);
		return;
	}
	cJSON_AddItemToArray(c->logprobs, cJSON_CreateNumber((double)lp->tok.logprob));
	for (uint32_t k = 0; k <= lp->n_top; k++) { /* the alternatives and the chosen token */
		const struct job_lp_tok *t = k < lp->n_top ? &lp->top[k] : &lp->tok;
		cJSON *key = job_lp_string(t);
		if (cJSON_GetObjectItemCaseSensitive(alts, key->valuestring) == NULL)
			cJSON_AddNumberToObject(alts, key->valuestring, (double)t->logprob);
		cJSON_Delete(key);
	}
	cJSON_AddItemToArray(c->top, alts);
}

cJSON *
api_lp_openai(const struct job *j, uint32_t from, uint32_t to)
{
	bool chat = j->kind == JOB_OAI_CHAT;
	cJSON *o, *content = NULL;
	struct cmpl c = {0};

	if (!j->req.logprobs)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	if (chat) {
		content = cJSON_AddArrayToObject(o, "content");
		cJSON_AddNullToObject(o, "refusal");
	} else {
		c = (struct cmpl){cJSON_AddArrayToObject(o, "tokens"),
		                  cJSON_AddArrayToObject(o, "token_logprobs"),
		                  cJSON_AddArrayToObject(o, "top_logprobs"),
		                  cJSON_AddArrayToObject(o, "text_offset")};
	}
	/* with echo, generated tokens' offsets count the prompt before them: its tokens'
	 * strings when they are listed (vLLM's count, monotonic with the tokens), else the text */
	uint32_t shift = j->n_plps > 0     ? j->prompt_chars
	                 : j->echo != NULL ? (uint32_t)params_utf8_chars(j->echo)
	                                   : 0;
	for (uint32_t k = from; k < to && k < j->n_events; k++) {
		const struct job_event *ev = &j->events[k];
		if (ev->type == EV_PROMPT && !chat)
			for (uint32_t i = 0; i < j->n_plps; i++)
				cmpl_add(&c, &j->plps[i], 0);
		if (ev->type != EV_TOKEN || ev->lp == 0)
			continue;
		if (chat)
			chat_add(content, &j->lps[ev->lp - 1]);
		else
			cmpl_add(&c, &j->lps[ev->lp - 1], shift);
	}
	return o;
}

void
api_lp_native(cJSON *o, const struct job *j, const struct job_event *ev)
{
	if (ev->lp == 0)
		return;
	const struct job_lp *lp = &j->lps[ev->lp - 1];
	cJSON_AddNumberToObject(o, "token_id", lp->tok.id);
	cJSON_AddItemToObject(o, "token", job_lp_string(&lp->tok));
	cJSON_AddNumberToObject(o, "logprob", (double)lp->tok.logprob);
	cJSON_AddItemToObject(o, "bytes", job_lp_byte_array(&lp->tok));
	if (!j->req.top_logprobs)
		return;
	cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
	for (uint32_t k = 0; k < lp->n_top; k++) {
		cJSON *a = chat_tok(&lp->top[k]);
		cJSON_AddNumberToObject(a, "token_id", lp->top[k].id);
		cJSON_AddItemToArray(top, a);
	}
}
