/*
 * api_parse.c - a request's body checked on the loop when small, off it
 * when large or when it may compile a grammar (api.h, issue 52 A1).
 *
 * A large body's parse is a work of offload.h on its own thread: it reads
 * a copy of the body and of the limits, so that nothing it reads goes with
 * the request (a client that closes, orchd's listener freed as it stops). A
 * client that closes meanwhile is let go (reply_release) once the parse is
 * back.
 */
#include <string.h> /* memmem: _GNU_SOURCE, the build's */

#include "api.h"
#include "base/alloc.h"
#include "config.h"
#include "offload.h"
#include "orchd.h"
#include "reply.h"

struct off {
	struct api_req *req;
	bool gone;  /* the client closed while its body was parsed */
	char *body; /* the body's copy (@n bytes) */
	size_t n;
	struct orchd_config cfg; /* the limits the parse checks (no models: the loop's move) */
	api_parse_fn parse;
	api_cont_fn cont;
	api_drop_fn drop;
	void *arg;
};

static void
work(void *arg)
{
	struct off *o = arg;

	o->parse(&o->cfg, o->body, o->n, o->arg);
}

static void
on_gone(struct api_req *req, void *arg, const char *why)
{
	struct off *o = arg;

	(void)req;
	(void)why;
	o->gone = true; /* its body is being read: the request is let go when the parse is back */
}

static void
done(struct orchd *d, void *arg, bool live)
{
	struct off *o = arg;

	if (live && !o->gone) {
		reply_hold(o->req, NULL, NULL, false);
		o->cont(d, o->req, o->arg);
	} else { /* gone, or orchd stops: the edge let go of its connection */
		reply_release(o->req);
		o->drop(o->arg);
	}
	orch_free(o->body);
	orch_free(o);
}

/*
 * Whether @req's body (@n bytes) may compile a grammar: its cost is not its size's (a
 * 1.8 KB schema of nested $refs expands past 1 MiB; issue 52's attack). A name in a
 * string matches too: such a body is only parsed off the loop for nothing.
 */
static bool
may_compile(struct api_req *req, size_t n)
{
	static const char *const keys[] = {"\"response_format\"", "\"grammar\"", "\"guided_",
	                                   "\"regex\"",           "\"tools\"",   "\"json_schema\""};
	const char *body = n > 0 ? req->body : NULL;

	for (size_t k = 0; body != NULL && k < sizeof(keys) / sizeof(keys[0]); k++)
		if (memmem(body, n, keys[k], strlen(keys[k])) != NULL)
			return true;
	/* a key may be escaped ("tool\u0073" is "tools" to the parser): any \u goes too */
	return body != NULL && memmem(body, n, "\\u", 2) != NULL;
}

void
api_parse_then(struct orchd *d, struct api_req *req, api_parse_fn parse, api_cont_fn cont,
               api_drop_fn drop, void *arg)
{
	struct orch_errinfo e = {0};
	size_t n = req->n_body;
	struct off *o;

	if (n < API_PARSE_OFF_LOOP_BYTES && !may_compile(req, n)) {
		parse(&d->cfg, req->body, n, arg);
		return cont(d, req, arg);
	}
	if ((o = orch_calloc(1, sizeof(*o))) == NULL ||
	    (o->body = orch_malloc(n ? n : 1)) == NULL) {
		orch_free(o);
		drop(arg);
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	}
	memcpy(o->body, req->body, n);
	o->n = n;
	o->req = req;
	o->cfg = d->cfg;
	o->cfg.models = NULL;
	o->cfg.n_models = 0;
	o->parse = parse;
	o->cont = cont;
	o->drop = drop;
	o->arg = arg;
	if (offload_start(d, work, done, o, &e) != ORCH_OK) {
		orch_free(o->body);
		orch_free(o);
		drop(arg);
		return reply_error(req, e.code, NULL, "%s", e.msg);
	}
	reply_hold(req, on_gone, o, true);
}
