/*
 * tokenize.c - the requests waiting for a worker's TokenizeResult: each
 * waits for a ready worker of its model, goes to it as one Tokenize
 * message, and ends with its answer, or with its model's failure or its
 * worker's exit (WORKER_LOST: a retry can help).
 */
#include "tokenize.h"

#include "models.h"
#include "orchd.h"
#include "wire_send.h"
#include "workers.h"

static void
unlink_req(struct orchd *d, struct tok_req *t)
{
	for (struct tok_req **p = &d->tok_reqs; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	t->next = NULL;
}

static void
end(struct tok_req *t, orch_err code, const char *msg)
{
	unlink_req(t->d, t);
	t->answer(t, NULL, NULL, code, msg);
}

/* A ready worker of @m: the one with the fewest jobs; NULL: none. */
static struct worker *
pick(struct model_entry *m)
{
	struct worker *best = NULL;

	for (uint32_t i = 0; i < m->n_workers; i++) {
		struct worker *w = m->workers[i];
		/* a dead one is READY until it is reaped */
		if (w->state == WORKER_READY && w->ch != NULL && w->pid > 0 && workers_healthy(w) &&
		    (best == NULL || w->jobs < best->jobs))
			best = w;
	}
	return best;
}

/*
 * Send @t to @w. Sending may fail jobs and so dispatch again (re-entering
 * tokenize_dispatch): @t is marked sent first, so that pass leaves it alone.
 */
static void
send_to(struct tok_req *t, struct worker *w)
{
	t->w = w;
	if (wire_send_tokenize(w, &t->msg, t->messages) != ORCH_OK) {
		t->w = NULL;
		end(t, ORCH_EOVERLOADED,
		    "the model's worker cannot take the request now; try again");
	}
}

void
tokenize_add(struct orchd *d, struct tok_req *t)
{
	struct orch_errinfo e = {0};
	struct worker *w;

	t->d = d;
	t->w = NULL;
	t->msg.request_id = ++d->next_tok_id;
	/* not in the list yet: a model started again here may fail at once, failing the list */
	if (models_usable(d, t->m, &e) != ORCH_OK)
		return t->answer(t, NULL, NULL, e.code, e.msg);
	t->next = d->tok_reqs;
	d->tok_reqs = t;
	if ((w = pick(t->m)) != NULL)
		return send_to(t, w);
	if (t->m->state == MODEL_STOPPED)
		models_start(d, t->m); /* may fail it, and @t with it */
}

void
tokenize_remove(struct orchd *d, struct tok_req *t)
{
	unlink_req(d, t);
}

void
tokenize_dispatch(struct orchd *d, struct model_entry *m)
{
	struct worker *w;

	/* from the head each time: a send may end requests, this one or others */
	while ((w = pick(m)) != NULL) {
		struct tok_req *t = d->tok_reqs;
		while (t && (t->m != m || t->w != NULL))
			t = t->next;
		if (t == NULL)
			return;
		send_to(t, w);
	}
}

void
tokenize_fail(struct orchd *d, const struct model_entry *m, const struct worker *w, orch_err code,
              const char *msg)
{
	struct tok_req *t = d->tok_reqs, *next;

	for (; t; t = next) {
		next = t->next;
		if ((m != NULL && t->m == m) || (w != NULL && t->w == w))
			end(t, code, msg);
	}
}

void
tokenize_on_result(struct orchd *d, struct worker *w, const Orch__TokenizeResult *r)
{
	struct tok_req *t = d->tok_reqs;

	while (t && t->msg.request_id != r->request_id)
		t = t->next;
	if (t == NULL || t->w != w)
		return; /* its client left, or it timed out */
	unlink_req(d, t);
	if (r->code != ORCH__ERROR_CODE__ERROR_CODE_UNSPECIFIED)
		t->answer(t, NULL, NULL, orch_err_of_proto((int)r->code), r->message);
	else
		t->answer(t, w, r, ORCH_OK, NULL);
}
