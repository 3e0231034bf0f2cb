/*
 * wire_send.c - the envelopes orchd sends a worker about its work (wire_send.h):
 * built here, queued on the worker by workers_send_env.
 */
#include "wire_send.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "jobs.h"
#include "orchd.h"
#include "workers.h"

/*
 * @messages (request_chat.c's) as Submit's: *@ret_ptrs, one allocation
 * (orch_free it), pointing into @messages.
 */
static orch_err
chat_messages(const cJSON *messages, Orch__ChatMessage ***ret_ptrs, size_t *ret_n)
{
	size_t n = (size_t)cJSON_GetArraySize(messages), k = 0;
	Orch__ChatMessage **mp;
	const cJSON *it;

	/* one block: the pointers, then the messages */
	mp = orch_calloc(n ? n : 1, sizeof(*mp) + sizeof(Orch__ChatMessage));
	if (mp == NULL)
		return ORCH_ENOMEM;
	Orch__ChatMessage *msgs = (Orch__ChatMessage *)(void *)(mp + n);
	cJSON_ArrayForEach(it, messages)
	{
		orch__chat_message__init(&msgs[k]);
		msgs[k].role = cJSON_GetObjectItem(it, "role")->valuestring;
		msgs[k].content = cJSON_GetObjectItem(it, "content")->valuestring;
		const cJSON *extra = cJSON_GetObjectItem(it, "extra");
		if (extra != NULL)
			msgs[k].extra_json = extra->valuestring;
		mp[k] = &msgs[k];
		k++;
	}
	*ret_ptrs = mp;
	*ret_n = k;
	return ORCH_OK;
}

orch_err
wire_send_submit(struct orchd *d, struct worker *w, const struct job *j)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Submit s = ORCH__SUBMIT__INIT;
	Orch__ChatMessage **mp = NULL;
	Orch__SamplingParams sp = j->req.sp;
	char empty[] = "";
	orch_err rv;

	s.job_id = j->id;
	s.prompt = j->req.prompt ? j->req.prompt : empty;
	s.sampling = &sp;
	s.max_tokens = j->req.max_tokens;
	s.max_tokens_strict = j->req.max_tokens_given;
	s.stop = (char **)(uintptr_t)j->req.stops;
	s.n_stop = j->req.n_stops;
	s.correlation_id = (char *)(uintptr_t)j->correlation;
	s.deadline_unix_ms = j->created_unix + d->cfg.request_timeout_s * 1000ull;
	if (j->req.deadline_unix_ms != 0 && j->req.deadline_unix_ms < s.deadline_unix_ms)
		s.deadline_unix_ms = j->req.deadline_unix_ms; /* the client's, when sooner */
	s.literal_prompt = j->req.literal_prompt;
	s.cache_salt = j->req.cache_salt ? j->req.cache_salt : empty;
	s.grammar = j->req.grammar ? j->req.grammar : empty;
	s.grammar_call = j->req.grammar_call;
	s.prompt_tokens = j->req.prompt_ids;
	s.n_prompt_tokens = j->req.n_prompt_ids;
	s.logprobs = j->req.logprobs;
	s.top_logprobs = j->req.top_logprobs;
	/* the prompt back: its log-probabilities, or the text of token ids (a text prompt's
	 * echo is the text as sent) */
	s.echo = j->req.echo && (j->req.logprobs || j->req.prompt_ids != NULL);
	s.prompt_only = j->req.prompt_only;
	if (j->req.messages != NULL) {
		if ((rv = chat_messages(j->req.messages, &mp, &s.n_messages)) != ORCH_OK)
			return rv;
		s.messages = mp;
		s.chat = true;
		if (j->req.template_vars != NULL)
			s.template_vars_json = j->req.template_vars;
	}
	env.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
	env.submit = &s;
	rv = workers_send_env(w, &env, j->id);
	orch_free(mp);
	return rv;
}

orch_err
wire_send_tokenize(struct worker *w, Orch__Tokenize *t, const cJSON *messages)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__ChatMessage **mp = NULL;
	orch_err rv;

	if (messages != NULL) {
		if ((rv = chat_messages(messages, &mp, &t->n_messages)) != ORCH_OK)
			return rv;
		t->messages = mp;
	}
	env.body_case = ORCH__ENVELOPE__BODY_TOKENIZE;
	env.tokenize = t;
	rv = workers_send_env(w, &env, 0);
	t->messages = NULL;
	t->n_messages = 0;
	orch_free(mp);
	return rv;
}

orch_err
wire_send_cancel(struct worker *w, uint64_t job_id)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;
	Orch__Cancel c = ORCH__CANCEL__INIT;

	c.job_id = job_id;
	env.body_case = ORCH__ENVELOPE__BODY_CANCEL;
	env.cancel = &c;
	return workers_send_env(w, &env, 0);
}
