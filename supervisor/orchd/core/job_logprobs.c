/*
 * job_logprobs.c - a job's log-probabilities (job_logprobs.h).
 */
#include "job_logprobs.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "jobs.h"
#include "json_add.h"
#include "params.h"

/* Room for one more entry in *@v (of *@n, room for *@cap). */
static bool
room(struct job_lp **v, uint32_t n, uint32_t *cap)
{
	uint32_t c = *cap ? 2 * *cap : 16;

	if (n < *cap)
		return true;
	struct job_lp *p = orch_reallocarray(*v, c, sizeof(*p));
	if (p == NULL)
		return false;
	*v = p;
	*cap = c;
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

/* @t's entry at the end of *@v (at most @n_top alternatives); false when out of memory. */
static bool
add(struct job_lp **v, uint32_t *n, uint32_t *cap, const Orch__TokenEntry *t, size_t n_top,
    float logprob, uint32_t text_offset)
{
	size_t bytes = t->piece.len + 1;

	if (n_top > t->n_top_logprobs)
		n_top = t->n_top_logprobs;
	for (size_t k = 0; k < n_top; k++)
		bytes += t->top_logprobs[k]->piece.len + 1;
	if (!room(v, *n, cap))
		return false;
	void *mem = orch_malloc(n_top * sizeof(struct job_lp_tok) + bytes);
	if (mem == NULL)
		return false;
	struct job_lp *lp = &(*v)[*n];
	char *at = (char *)mem + n_top * sizeof(struct job_lp_tok);
	*lp = (struct job_lp){.top = mem, .n_top = (uint32_t)n_top, .mem = mem};
	lp->text_offset = text_offset;
	put_tok(&lp->tok, t->token_id, logprob, &t->piece, &at);
	for (size_t k = 0; k < n_top; k++) {
		const Orch__TopLogprob *a = t->top_logprobs[k];
		put_tok(&lp->top[k], a->token_id, a->logprob, &a->piece, &at);
	}
	(*n)++;
	return true;
}

uint32_t
job_lp_add(struct job *j, const Orch__TokenEntry *t)
{
	/* no more alternatives than asked, whatever the worker sent */
	if (!add(&j->lps, &j->n_lps, &j->cap_lps, t, j->req.top_logprobs, t->logprob, j->out_chars))
		return 0;
	return j->n_lps;
}

bool
job_lp_prompt(struct job *j, const Orch__TokenEntry *t)
{
	if (t->index != j->prompt_seen || j->prompt_seen >= j->prompt_tokens)
		return false;
	j->prompt_seen++;
	if (j->req.logprobs) /* out of memory: the token is missing from the list */
		add(&j->plps, &j->n_plps, &j->cap_plps, t, t->has_logprob ? j->req.top_logprobs : 0,
		    t->has_logprob ? t->logprob : NAN, j->prompt_chars);
	if (j->echo == NULL) /* token ids: their text is the echo (a text prompt has it already) */
		sbuf_puts(&j->prompt_text, t->text);
	j->prompt_chars += (uint32_t)params_utf8_chars(t->text);
	if (j->prompt_seen < j->prompt_tokens)
		return false;
	if (j->echo == NULL) /* token ids: their text */
		j->echo = orch_strndup(j->prompt_text.p ? j->prompt_text.p : "", j->prompt_text.n);
	return true;
}

void
job_lp_free(struct job *j)
{
	for (uint32_t k = 0; k < j->n_lps; k++)
		orch_free(j->lps[k].mem);
	orch_free(j->lps);
	j->lps = NULL;
	j->n_lps = j->cap_lps = 0;
	for (uint32_t k = 0; k < j->n_plps; k++)
		orch_free(j->plps[k].mem);
	orch_free(j->plps);
	j->plps = NULL;
	j->n_plps = j->cap_plps = 0;
	sbuf_fini(&j->prompt_text);
}

/* The memory @n entries at @v (room for @cap) take. */
static uint64_t
bytes(const struct job_lp *v, uint32_t n, uint32_t cap)
{
	uint64_t b = (uint64_t)cap * sizeof(struct job_lp);

	for (uint32_t k = 0; k < n; k++) {
		const struct job_lp *lp = &v[k];
		b += lp->n_top * sizeof(struct job_lp_tok) + lp->tok.len + 1 + 16;
		for (uint32_t i = 0; i < lp->n_top; i++)
			b += lp->top[i].len + 1;
	}
	return b;
}

uint64_t
job_lp_bytes(const struct job *j)
{
	return bytes(j->lps, j->n_lps, j->cap_lps) + bytes(j->plps, j->n_plps, j->cap_plps) +
	       j->prompt_text.cap;
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
