/*
 * ipc_check.c - what a valid envelope is: a body set, and each message's
 * fields in range. Both sides run it on every message they send and
 * receive, so neither ever acts on a value it would have to re-check.
 */
#include <math.h>
#include <string.h>

#include "base/finish.h"
#include "ipc.h"

static const char *const body_names[] = {
        [ORCH__ENVELOPE__BODY__NOT_SET] = "none",
        [ORCH__ENVELOPE__BODY_HELLO] = "hello",
        [ORCH__ENVELOPE__BODY_LOAD_PROGRESS] = "load_progress",
        [ORCH__ENVELOPE__BODY_READY] = "ready",
        [ORCH__ENVELOPE__BODY_HEARTBEAT] = "heartbeat",
        [ORCH__ENVELOPE__BODY_SUBMIT] = "submit",
        [ORCH__ENVELOPE__BODY_STARTED] = "started",
        [ORCH__ENVELOPE__BODY_TOKEN_BATCH] = "token_batch",
        [ORCH__ENVELOPE__BODY_END] = "end",
        [ORCH__ENVELOPE__BODY_ERROR] = "error",
        [ORCH__ENVELOPE__BODY_CANCEL] = "cancel",
        [ORCH__ENVELOPE__BODY_DRAIN] = "drain",
        [ORCH__ENVELOPE__BODY_SHUTDOWN] = "shutdown",
        [ORCH__ENVELOPE__BODY_TOKENIZE] = "tokenize",
        [ORCH__ENVELOPE__BODY_TOKENIZE_RESULT] = "tokenize_result",
};

const char *
ipc_body_name(Orch__Envelope__BodyCase body)
{
	if ((unsigned)body >= sizeof(body_names) / sizeof(body_names[0]) ||
	    body_names[body] == NULL)
		return "unknown";
	return body_names[body];
}

static orch_err
bad(struct orch_errinfo *reterr, const char *body, const char *why)
{
	return orch_errf(reterr, ORCH_EPROTO, "ipc: invalid %s: %s", body, why);
}

static bool
in_range(float x, float lo, float hi)
{
	return isfinite(x) && x >= lo && x <= hi;
}

static orch_err
check_sampling(const Orch__SamplingParams *p, struct orch_errinfo *reterr)
{
	if (p == NULL)
		return ORCH_OK; /* the worker's defaults */
	if (!in_range(p->temperature, 0.0f, 2.0f))
		return bad(reterr, "submit", "temperature must be in [0, 2]");
	if (!in_range(p->top_p, 0.0f, 1.0f))
		return bad(reterr, "submit", "top_p must be in [0, 1]");
	if (!in_range(p->min_p, 0.0f, 1.0f))
		return bad(reterr, "submit", "min_p must be in [0, 1]");
	if (!in_range(p->repeat_penalty, 0.0f, 10.0f))
		return bad(reterr, "submit", "repeat_penalty must be in [0, 10]");
	if (!in_range(p->presence_penalty, -2.0f, 2.0f) ||
	    !in_range(p->frequency_penalty, -2.0f, 2.0f))
		return bad(reterr, "submit", "presence and frequency penalties must be in [-2, 2]");
	if (p->n_bias_tokens != p->n_bias_values || p->n_bias_tokens > ORCH_MAX_LOGIT_BIAS)
		return bad(reterr, "submit", "logit_bias: unpaired or over 1024 entries");
	for (size_t i = 0; i < p->n_bias_values; i++)
		if (!in_range(p->bias_values[i], -100.0f, 100.0f) || p->bias_tokens[i] < 0)
			return bad(reterr, "submit",
			           "logit_bias: a negative token or a bias outside [-100, 100]");
	return ORCH_OK;
}

static orch_err
check_submit(const Orch__Submit *s, struct orch_errinfo *reterr)
{
	if (s->job_id == 0)
		return bad(reterr, "submit", "job_id is 0");
	if (s->chat && s->n_messages == 0)
		return bad(reterr, "submit", "a chat job without messages");
	if (!s->chat && s->n_messages != 0)
		return bad(reterr, "submit", "messages in a job that is not chat");
	if (s->n_messages > ORCH_MAX_MESSAGES)
		return bad(reterr, "submit", "too many messages");
	for (size_t i = 0; i < s->n_messages; i++)
		if (s->messages[i] == NULL || s->messages[i]->role == NULL ||
		    s->messages[i]->role[0] == '\0')
			return bad(reterr, "submit", "a message without a role");
	if (s->n_stop > ORCH_MAX_STOPS)
		return bad(reterr, "submit", "more than 16 stop strings");
	for (size_t i = 0; i < s->n_stop; i++) {
		size_t n = s->stop[i] ? strlen(s->stop[i]) : 0;
		if (n == 0 || n > ORCH_MAX_STOP_BYTES)
			return bad(reterr, "submit", "a stop string is empty or over 256 bytes");
	}
	if (s->n_prompt_tokens > 0 && (s->chat || (s->prompt && s->prompt[0])))
		return bad(reterr, "submit", "prompt_tokens beside a prompt or messages");
	if (s->top_logprobs > ORCH_MAX_TOP_LOGPROBS)
		return bad(reterr, "submit", "top_logprobs over 20");
	return check_sampling(s->sampling, reterr);
}

/* A logprob of token @id: a token, a finite value <= 0, at most IPC_MAX_PIECE bytes. */
static bool
logprob_ok(int32_t id, float lp, const ProtobufCBinaryData *piece)
{
	return id >= 0 && isfinite(lp) && lp <= 0.0f && piece->len <= IPC_MAX_PIECE;
}

static orch_err
check_batch(const Orch__TokenBatch *b, struct orch_errinfo *reterr)
{
	if (b->n_tokens > IPC_MAX_BATCH)
		return bad(reterr, "token_batch", "too many entries");
	for (size_t i = 0; i < b->n_tokens; i++) {
		const Orch__TokenEntry *t = b->tokens[i];
		if (t == NULL || t->job_id == 0 || t->token_id < -1)
			return bad(reterr, "token_batch",
			           "an entry with job_id 0 or a bad token id");
		if (strlen(t->channel) > IPC_MAX_CHANNEL ||
		    strlen(t->recipient) > IPC_MAX_RECIPIENT)
			return bad(reterr, "token_batch", "a channel or recipient is too long");
		if (t->piece.len > IPC_MAX_PIECE || (t->prompt && t->token_id < 0))
			return bad(reterr, "token_batch",
			           "a piece over 1024 bytes, or a bad prompt token");
		if (t->has_logprob && !logprob_ok(t->token_id, t->logprob, &t->piece))
			return bad(reterr, "token_batch", "a bad logprob (token, value or bytes)");
		if (t->n_top_logprobs > (t->has_logprob ? ORCH_MAX_TOP_LOGPROBS : 0))
			return bad(reterr, "token_batch",
			           "top_logprobs without a logprob, or over 20");
		for (size_t k = 0; k < t->n_top_logprobs; k++) {
			const Orch__TopLogprob *a = t->top_logprobs[k];
			if (!logprob_ok(a->token_id, a->logprob, &a->piece))
				return bad(reterr, "token_batch", "a bad top_logprobs entry");
		}
	}
	return ORCH_OK;
}

static bool
error_code_known(long code)
{
	return code > ORCH__ERROR_CODE__ERROR_CODE_UNSPECIFIED &&
	       code <= ORCH__ERROR_CODE__INTERNAL;
}

static orch_err
check_tokenize(const Orch__Tokenize *t, struct orch_errinfo *reterr)
{
	if (t->request_id == 0)
		return bad(reterr, "tokenize", "request_id is 0");
	if (t->n_messages > ORCH_MAX_MESSAGES)
		return bad(reterr, "tokenize", "too many messages");
	for (size_t i = 0; i < t->n_messages; i++)
		if (t->messages[i] == NULL || t->messages[i]->role == NULL ||
		    t->messages[i]->role[0] == '\0')
			return bad(reterr, "tokenize", "a message without a role");
	if (t->detokenize ? t->n_messages > 0 || (t->text && t->text[0]) : t->n_tokens > 0)
		return bad(reterr, "tokenize", "tokens to tokenize, or text to detokenize");
	if (t->n_parts > 0 && (t->detokenize || t->n_messages > 0 || (t->text && t->text[0])))
		return bad(reterr, "tokenize",
		           "parts beside a text, messages or tokens to detokenize");
	for (size_t i = 0; i < t->n_parts; i++)
		if (t->parts[i] == NULL || (!t->parts[i]->is_token && t->parts[i]->text == NULL))
			return bad(reterr, "tokenize", "a part without text");
	return ORCH_OK;
}

static orch_err
check_tokenize_result(const Orch__TokenizeResult *t, struct orch_errinfo *reterr)
{
	if (t->request_id == 0)
		return bad(reterr, "tokenize_result", "request_id is 0");
	if (t->code != ORCH__ERROR_CODE__ERROR_CODE_UNSPECIFIED && !error_code_known((long)t->code))
		return bad(reterr, "tokenize_result", "unknown error code");
	if ((t->n_pieces != 0 && t->n_pieces != t->n_tokens) ||
	    (t->n_strings != 0 && t->n_strings != t->n_tokens))
		return bad(reterr, "tokenize_result", "pieces or strings not one per token");
	for (size_t i = 0; i < t->n_tokens; i++)
		if (t->tokens[i] < 0 || (t->n_pieces && t->pieces[i].len > IPC_MAX_PIECE) ||
		    (t->n_strings && strlen(t->strings[i]) > IPC_MAX_PIECE))
			return bad(reterr, "tokenize_result",
			           "a negative token, or a piece or string over 1 KiB");
	return ORCH_OK;
}

orch_err
ipc_check(const Orch__Envelope *env, struct orch_errinfo *reterr)
{
	const char *name = ipc_body_name(env->body_case);

	/* the oneof's members share one pointer; NULL only from a caller's bug */
	if (env->body_case != ORCH__ENVELOPE__BODY__NOT_SET && env->hello == NULL)
		return bad(reterr, name, "body case set without a body");
	switch (env->body_case) {
	case ORCH__ENVELOPE__BODY_HELLO:
		if (env->hello->protocol_version == 0)
			return bad(reterr, name, "protocol_version is 0");
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_LOAD_PROGRESS:
		if (env->load_progress->percent > 100 ||
		    env->load_progress->bytes_done > env->load_progress->bytes_total)
			return bad(reterr, name, "percent over 100 or bytes_done over bytes_total");
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_READY:
		if (env->ready->slots == 0 || env->ready->context_length == 0 ||
		    env->ready->vocab_size == 0)
			return bad(reterr, name, "slots, context_length or vocab_size is 0");
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_HEARTBEAT:
		if (env->heartbeat->slots_busy > env->heartbeat->slots_total ||
		    env->heartbeat->kv_cells_used > env->heartbeat->kv_cells_total)
			return bad(reterr, name, "more slots or KV cells in use than exist");
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_SUBMIT:
		return check_submit(env->submit, reterr);
	case ORCH__ENVELOPE__BODY_STARTED:
		return env->started->job_id ? ORCH_OK : bad(reterr, name, "job_id is 0");
	case ORCH__ENVELOPE__BODY_TOKEN_BATCH:
		return check_batch(env->token_batch, reterr);
	case ORCH__ENVELOPE__BODY_END:
		if (env->end->job_id == 0)
			return bad(reterr, name, "job_id is 0");
		enum orch_finish f;
		if (!orch_finish_from_proto((uint32_t)env->end->finish_reason, &f))
			return bad(reterr, name, "unknown finish_reason");
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_ERROR:
		if (!error_code_known((long)env->error->code))
			return bad(reterr, name, "unknown error code");
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_CANCEL:
		return env->cancel->job_id ? ORCH_OK : bad(reterr, name, "job_id is 0");
	case ORCH__ENVELOPE__BODY_DRAIN:
	case ORCH__ENVELOPE__BODY_SHUTDOWN:
		return ORCH_OK;
	case ORCH__ENVELOPE__BODY_TOKENIZE:
		return check_tokenize(env->tokenize, reterr);
	case ORCH__ENVELOPE__BODY_TOKENIZE_RESULT:
		return check_tokenize_result(env->tokenize_result, reterr);
	default:
		return orch_errf(reterr, ORCH_EPROTO, "ipc: envelope without a known body");
	}
}

orch_err
ipc_check_hello(const Orch__Hello *h, const char *build_id, struct orch_errinfo *reterr)
{
	const char *peer = h->worker_id && h->worker_id[0] ? h->worker_id : "?";

	if (h->protocol_version != IPC_PROTOCOL_VERSION)
		return orch_errf(reterr, ORCH_EPROTO,
		                 "ipc: peer %s speaks protocol version %u, this build speaks %u",
		                 peer, h->protocol_version, IPC_PROTOCOL_VERSION);
	if (build_id != NULL && strcmp(h->build_id ? h->build_id : "", build_id) != 0)
		return orch_errf(reterr, ORCH_EPROTO,
		                 "ipc: peer %s is build '%.100s', this is build '%.100s' (after an "
		                 "upgrade, restart orchd so that its workers are of its build)",
		                 peer, h->build_id ? h->build_id : "", build_id);
	return ORCH_OK;
}
