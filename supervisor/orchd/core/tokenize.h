#pragma once
/*
 * tokenize.h - a model's tokenizer and chat template at orchd's service
 * (POST /tokenize and /detokenize, api_tokenize.c): a request goes to one of
 * the model's ready workers as a Tokenize message, answered between decode
 * steps (it takes no slot); a request for a model not ready yet waits for it
 * as a job would, and starts it when it is stopped. evhttp-free. Thread: the
 * loop.
 */
#include "base/err.h"
#include "proto/orch.pb-c.h"

struct cJSON;
struct model_entry;
struct orchd;
struct tok_req;
struct worker;

/*
 * tok_answer_fn - @t's end: the worker @w's answer @r (@code ORCH_OK), or a
 * failure (@code, @msg; @w and @r NULL). @t is out of orchd's list by then:
 * the callee owns it.
 */
typedef void (*tok_answer_fn)(struct tok_req *t, const struct worker *w,
                              const Orch__TokenizeResult *r, orch_err code, const char *msg);

/* One request: embedded first in its API's own. */
struct tok_req {
	struct orchd *d;
	struct model_entry *m;
	struct worker *w;             /* the worker asked; NULL: waiting for a ready one */
	Orch__Tokenize msg;           /* what to ask (request_id set by tokenize_add) */
	const struct cJSON *messages; /* NULL, or the chat to tokenize (request_chat.c's array) */
	tok_answer_fn answer;
	struct tok_req *next;
};

/*
 * tokenize_add - ask @t of a ready worker of @t->m now, or keep it until
 * one is (a stopped model is started). It may end at once (@t->answer runs,
 * from here): a model that failed, or a worker that cannot take it.
 */
void tokenize_add(struct orchd *d, struct tok_req *t);

/* tokenize_remove - forget @t (its client left, or it timed out); its answer is dropped. */
void tokenize_remove(struct orchd *d, struct tok_req *t);

/* tokenize_on_result - @w's answer: the request it is for, if still there, gets it. */
void tokenize_on_result(struct orchd *d, struct worker *w, const Orch__TokenizeResult *r);

/* tokenize_dispatch - send @m's waiting requests to a ready worker, if it has one. */
void tokenize_dispatch(struct orchd *d, struct model_entry *m);

/*
 * tokenize_fail - end the requests for @m (when not NULL) or sent to @w
 * (when not NULL) with @code and @msg.
 */
void tokenize_fail(struct orchd *d, const struct model_entry *m, const struct worker *w,
                   orch_err code, const char *msg);
