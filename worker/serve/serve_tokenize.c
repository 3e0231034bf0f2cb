/*
 * serve_tokenize.c - Tokenize: text or a chat to token ids, or token ids to
 * text, with the model's tokenizer and chat template (POST /tokenize and
 * /detokenize). Answered at once, between decode steps: it takes no slot
 * and touches no job.
 */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "serve_int.h"
#include "text/prompt.h"

struct prompt_msg *
serve_prompt_msgs(Orch__ChatMessage *const *m, size_t n)
{
	struct prompt_msg *msgs = orch_calloc(n ? n : 1, sizeof(*msgs));

	if (msgs == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		msgs[i] = (struct prompt_msg){m[i]->role, m[i]->content, m[i]->extra_json};
	return msgs;
}

/*
 * @m's parts (llama.cpp's mixed content) as ids into @ids: each text
 * tokenized (the specials added to a first part only, as llama.cpp does),
 * each token id checked against the vocabulary and kept.
 */
static orch_err
encode_parts(const struct tok *t, const Orch__Tokenize *m, struct tok_ids *ids,
             struct orch_errinfo *e)
{
	uint32_t n_vocab = tok_n_vocab(t);

	for (size_t i = 0; i < m->n_parts; i++) {
		const Orch__TokenizePart *p = m->parts[i];
		unsigned flags = (m->add_special && i == 0 ? TOK_ADD_SPECIAL : 0) |
		                 (m->parse_special ? TOK_PARSE_SPECIAL : 0);
		if (p->is_token && (p->token < 0 || (uint32_t)p->token >= n_vocab))
			return orch_errf(
			        e, ORCH_EINVAL,
			        "the token id at [%zu] (%d) is not in the model's vocabulary "
			        "(ids 0 to %u)",
			        i, p->token, n_vocab - 1);
		orch_err rv = p->is_token ? tok_ids_push(ids, p->token)
		                          : tok_encode(t, p->text, strlen(p->text), flags, ids);
		if (rv != ORCH_OK)
			return orch_errf(e, rv, "out of memory");
	}
	return ORCH_OK;
}

/* @m's text, parts or chat (rendered by the template) as ids into @ids. */
static orch_err
encode(struct serve *sv, const Orch__Tokenize *m, struct tok_ids *ids, struct orch_errinfo *e)
{
	const struct model_text *mt = &sv->eng->mt;
	orch_err rv;

	if (m->n_parts > 0)
		return encode_parts(mt->tok, m, ids, e);
	if (m->n_messages == 0) {
		unsigned flags = (m->add_special ? TOK_ADD_SPECIAL : 0) |
		                 (m->parse_special ? TOK_PARSE_SPECIAL : 0);
		rv = tok_encode(mt->tok, m->text, strlen(m->text), flags, ids);
		return rv == ORCH_OK ? rv : orch_errf(e, rv, "out of memory");
	}
	struct prompt_msg *msgs = serve_prompt_msgs(m->messages, m->n_messages);
	if (msgs == NULL)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	struct prompt_chat chat = {msgs, m->n_messages, m->template_vars_json};
	rv = prompt_encode(mt, "", 0, false, &chat, ids, e);
	orch_free(msgs);
	return rv;
}

/*
 * Each of @r's tokens' bytes (with_pieces) and vocabulary strings
 * (with_strings) into @r, pointing into @buf (NUL-separated; filled first,
 * pointed into after, as it moves while it grows).
 */
static orch_err
describe(struct serve *sv, const Orch__Tokenize *m, Orch__TokenizeResult *r, struct sbuf *buf,
         size_t *offs, struct orch_errinfo *e)
{
	const struct tok *t = sv->eng->mt.tok;
	char piece[IPC_MAX_PIECE];

	for (size_t i = 0; i < r->n_tokens; i++) {
		offs[2 * i] = buf->n;
		if (m->with_pieces) {
			size_t n = tok_piece(t, r->tokens[i], TOK_RENDER_SPECIAL, piece,
			                     sizeof(piece));
			sbuf_put(buf, piece, n < sizeof(piece) ? n : sizeof(piece));
		}
		offs[2 * i + 1] = buf->n;
		if (m->with_strings) {
			size_t n = 0;
			const char *s = tok_text(t, r->tokens[i], &n);
			sbuf_put(buf, s ? s : "", n < IPC_MAX_PIECE ? n : IPC_MAX_PIECE);
		}
		sbuf_put(buf, "", 1);
	}
	if (buf->oom)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	for (size_t i = 0; i < r->n_tokens; i++) {
		if (m->with_pieces)
			r->pieces[i] = (ProtobufCBinaryData){offs[2 * i + 1] - offs[2 * i],
			                                     (uint8_t *)buf->p + offs[2 * i]};
		if (m->with_strings)
			r->strings[i] = buf->p + offs[2 * i + 1];
	}
	r->n_pieces = m->with_pieces ? r->n_tokens : 0;
	r->n_strings = m->with_strings ? r->n_tokens : 0;
	return ORCH_OK;
}

/* @m's tokens into @r, and what it asked of each (the arrays owned by @mem, @buf). */
static orch_err
tokenize(struct serve *sv, const Orch__Tokenize *m, Orch__TokenizeResult *r, struct tok_ids *ids,
         void **mem, struct sbuf *buf, struct orch_errinfo *e)
{
	orch_err rv = encode(sv, m, ids, e);

	if (rv != ORCH_OK)
		return rv;
	r->tokens = ids->v;
	r->n_tokens = ids->n;
	if (!m->with_pieces && !m->with_strings)
		return ORCH_OK;
	size_t n = ids->n ? ids->n : 1;
	/* one block: the pieces, the strings' pointers, then two offsets per token */
	*mem = orch_malloc(n * (sizeof(ProtobufCBinaryData) + sizeof(char *) + 2 * sizeof(size_t)));
	if (*mem == NULL)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	r->pieces = *mem;
	r->strings = (char **)(void *)(r->pieces + n);
	return describe(sv, m, r, buf, (size_t *)(void *)(r->strings + n), e);
}

/* @m's tokens' text, control tokens as their text, into @buf and @r->text. */
static orch_err
detokenize(struct serve *sv, const Orch__Tokenize *m, Orch__TokenizeResult *r, struct sbuf *buf,
           struct orch_errinfo *e)
{
	const struct tok *t = sv->eng->mt.tok;
	uint32_t n_vocab = tok_n_vocab(t);
	char *text = NULL;
	size_t len = 0;

	for (size_t i = 0; i < m->n_tokens; i++)
		if (m->tokens[i] < 0 || (uint32_t)m->tokens[i] >= n_vocab)
			return orch_errf(e, ORCH_EINVAL,
			                 "tokens[%zu]: token %d is not in the model's vocabulary "
			                 "(ids 0 to %u)",
			                 i, m->tokens[i], n_vocab - 1);
	if (tok_decode(t, m->tokens, m->n_tokens, TOK_RENDER_SPECIAL, &text, &len) != ORCH_OK) {
		orch_free(text);
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	}
	sbuf_put(buf, text ? text : "", len);
	orch_free(text);
	if (buf->oom)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	r->text = (ProtobufCBinaryData){buf->n, (uint8_t *)buf->p};
	return ORCH_OK;
}

/* Answer @r, or, when it cannot be sent as it is, its failure. */
static void
answer(struct serve *sv, Orch__TokenizeResult *r, orch_err rv, const struct orch_errinfo *e)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	char msg[sizeof(e->msg)];

	env.body_case = ORCH__ENVELOPE__BODY_TOKENIZE_RESULT;
	env.tokenize_result = r;
	if (rv == ORCH_OK && orch__envelope__get_packed_size(&env) > IPC_MAX_MSG) {
		snprintf(msg, sizeof(msg),
		         "the answer (%zu tokens) is over the %u MiB a worker's message may be; "
		         "send less text, or ask without pieces",
		         r->n_tokens, IPC_MAX_MSG >> 20);
		rv = ORCH_EINVAL;
	} else if (rv != ORCH_OK) {
		snprintf(msg, sizeof(msg), "%s", e->msg);
	}
	if (rv != ORCH_OK) {
		Orch__TokenizeResult failed = ORCH__TOKENIZE_RESULT__INIT;
		failed.request_id = r->request_id;
		failed.code = (Orch__ErrorCode)orch_err_proto(rv);
		failed.message = msg;
		env.tokenize_result = &failed;
		serve_send(sv, &env);
		return;
	}
	serve_send(sv, &env);
}

void
serve_tokenize(struct serve *sv, const Orch__Tokenize *m)
{
	Orch__TokenizeResult r = ORCH__TOKENIZE_RESULT__INIT;
	struct orch_errinfo e = {0};
	struct tok_ids ids = {0};
	struct sbuf buf = {0};
	void *mem = NULL;
	uint64_t t0 = orch_mono_ns();
	orch_err rv;

	r.request_id = m->request_id;
	if (m->detokenize)
		rv = detokenize(sv, m, &r, &buf, &e);
	else
		rv = tokenize(sv, m, &r, &ids, &mem, &buf, &e);
	answer(sv, &r, rv, &e);
	orch_log(rv == ORCH_OK ? ORCH_LOG_DEBUG : ORCH_LOG_INFO, "tokenize",
	         "request=%llu detokenize=%d tokens=%zu us=%llu err=%s",
	         (unsigned long long)m->request_id, m->detokenize,
	         m->detokenize ? m->n_tokens : ids.n,
	         (unsigned long long)((orch_mono_ns() - t0) / 1000), orch_err_wire(rv));
	tok_ids_fini(&ids);
	orch_free(mem);
	sbuf_fini(&buf);
}
