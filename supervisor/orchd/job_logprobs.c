/*
 * job_logprobs.c - a job's log-probabilities (job_logprobs.h).
 */
#include "job_logprobs.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "jobs.h"
#include "json_add.h"

/* Room for one more entry in @j->lps. */
static bool
room(struct job *j)
{
	uint32_t cap = j->cap_lps ? 2 * j->cap_lps : 16;

	if (j->n_lps < j->cap_lps)
		return true;
	struct job_lp *p = orch_reallocarray(j->lps, cap, sizeof(*p));
	if (p == NULL)
		return false;
	j->lps = p;
	j->cap_lps = cap;
	return true;
}

/* Copy @len bytes at @src to *@at (NUL-terminated), into @dst; *@at moves past them. */
static void
put_tok(struct job_lp_tok *dst, int32_t id, float lp, const ProtobufCBinaryData *src, char **at)
{
	dst->id = id;
	dst->logprob = lp;
	dst->len = (uint32_t)src->len;
	dst->bytes = *at;
	if (src->len > 0)
		memcpy(*at, src->data, src->len);
	(*at)[src->len] = '\0';
	*at += src->len + 1;
}

uint32_t
job_lp_add(struct job *j, const Orch__TokenEntry *t)
{
	size_t n_top = t->n_top_logprobs, bytes = t->piece.len + 1;

	if (n_top > j->req.top_logprobs) /* no more than asked, whatever the worker sent */
		n_top = j->req.top_logprobs;

	for (size_t k = 0; k < n_top; k++)
		bytes += t->top_logprobs[k]->piece.len + 1;
	if (!room(j))
		return 0;
	void *mem = orch_malloc(n_top * sizeof(struct job_lp_tok) + bytes);
	if (mem == NULL)
		return 0;
	struct job_lp *lp = &j->lps[j->n_lps];
	char *at = (char *)mem + n_top * sizeof(struct job_lp_tok);
	*lp = (struct job_lp){.top = mem, .n_top = (uint32_t)n_top, .mem = mem};
	lp->text_offset = j->out_chars;
	put_tok(&lp->tok, t->token_id, t->logprob, &t->piece, &at);
	for (size_t k = 0; k < n_top; k++) {
		const Orch__TopLogprob *a = t->top_logprobs[k];
		put_tok(&lp->top[k], a->token_id, a->logprob, &a->piece, &at);
	}
	return ++j->n_lps;
}

void
job_lp_free(struct job *j)
{
	for (uint32_t k = 0; k < j->n_lps; k++)
		orch_free(j->lps[k].mem);
	orch_free(j->lps);
	j->lps = NULL;
	j->n_lps = j->cap_lps = 0;
}

uint64_t
job_lp_bytes(const struct job *j)
{
	uint64_t n = (uint64_t)j->cap_lps * sizeof(struct job_lp);

	for (uint32_t k = 0; k < j->n_lps; k++) {
		const struct job_lp *lp = &j->lps[k];
		n += lp->n_top * sizeof(struct job_lp_tok) + lp->tok.len + 1 + 16;
		for (uint32_t i = 0; i < lp->n_top; i++)
			n += lp->top[i].len + 1;
	}
	return n;
}

cJSON *
job_lp_string(const struct job_lp_tok *tok)
{
	if (utf8_valid(tok->bytes, tok->len))
		return cJSON_CreateString(tok->bytes);
	return json_text(tok->bytes, tok->len);
}

cJSON *
job_lp_byte_array(const struct job_lp_tok *tok)
{
	return json_bytes(tok->bytes, tok->len);
}
