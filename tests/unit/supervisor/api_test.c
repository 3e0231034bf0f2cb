/*
 * api_test.c - the API handlers on a plain request (reply.h), without an HTTP
 * server or libevent (issue 53): route tables, query numbers, and the
 * answers of the native, OpenAI, tokenizer and admin handlers to requests
 * they refuse, recorded by a reply_ops of the test's own.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "api.h"
#include "base/sbuf.h"
#include "core.h"
#include "keys.h"
#include "loop.h"
#include "offload.h"
#include "orchd.h"
#include "reply.h"
#include "route.h"
#include "t.h"

static struct orchd d;

/* One request and what was answered to it. */
struct rec {
	struct api_req r; /* first: the api_req is the record */
	int status;       /* 0: not answered */
	char type[64];
	struct sbuf body;
	struct sbuf headers; /* "Name: value\n" each */
	bool stream, ended, held;
};

static void
rec_header(struct api_req *r, const char *name, const char *value)
{
	sbuf_printf(&((struct rec *)r)->headers, "%s: %s\n", name, value);
}

static void
rec_send(struct api_req *r, int status, const char *type, const char *a, size_t na, const char *b,
         size_t nb)
{
	struct rec *x = (struct rec *)r;

	x->status = status;
	snprintf(x->type, sizeof(x->type), "%s", type ? type : "");
	sbuf_put(&x->body, a, na);
	sbuf_put(&x->body, b, nb);
	x->held = false;
}

static void
rec_stream_head(struct api_req *r)
{
	((struct rec *)r)->status = 200;
}

static orch_err
rec_stream_start(struct api_req *r, api_gone_fn gone, void *arg)
{
	(void)gone;
	(void)arg;
	((struct rec *)r)->stream = true;
	return ORCH_OK;
}

static void
rec_stream_cut(struct api_req *r, const char *text)
{
	(void)r;
	(void)text;
}

static void
rec_stream_write(struct api_req *r, const char *data, size_t n)
{
	sbuf_put(&((struct rec *)r)->body, data, n);
}

static void
rec_stream_end(struct api_req *r)
{
	((struct rec *)r)->ended = true;
}

static void
rec_hold(struct api_req *r, api_gone_fn gone, void *arg, bool read)
{
	(void)arg;
	(void)read;
	((struct rec *)r)->held = gone != NULL;
}

static void
rec_release(struct api_req *r)
{
	(void)r;
}

static void
rec_note(struct api_req *r, const char *path, const char *job)
{
	(void)r;
	(void)path;
	(void)job;
}

static const struct reply_ops rec_ops = {
        .header = rec_header,
        .send = rec_send,
        .stream_head = rec_stream_head,
        .stream_start = rec_stream_start,
        .stream_cut = rec_stream_cut,
        .stream_write = rec_stream_write,
        .stream_end = rec_stream_end,
        .hold = rec_hold,
        .release = rec_release,
        .note = rec_note,
};

/* A request of @method to @path (with its query after '?') with @body. */
static void
rec_init(struct rec *x, int method, const char *path, const char *body)
{
	const char *q = strchr(path, '?');
	static char p[256];

	snprintf(p, sizeof(p), "%.*s", (int)(q ? (size_t)(q - path) : strlen(path)), path);
	*x = (struct rec){.r = {.ops = &rec_ops,
	                        .method = method,
	                        .path = p,
	                        .query = q ? q + 1 : "",
	                        .body = body ? body : "",
	                        .n_body = body ? strlen(body) : 0}};
}

static void
rec_fini(struct rec *x)
{
	sbuf_fini(&x->body);
	sbuf_fini(&x->headers);
}

/* Whether @x's body holds @s. */
static bool
body_has(const struct rec *x, const char *s)
{
	return x->body.p != NULL && strstr(x->body.p, s) != NULL;
}

static const char *handled;

static void
h_exact(struct orchd *dd, struct api_req *r, const char *arg)
{
	(void)dd;
	handled = "exact";
	reply_send(r, 200, "text/plain", arg, strlen(arg));
}

static void
h_prefix(struct orchd *dd, struct api_req *r, const char *arg)
{
	(void)dd;
	handled = "prefix";
	reply_send(r, 200, "text/plain", arg, strlen(arg));
}

static const struct api_route table[] = {
        {API_GET, "/a", false, NULL, h_exact},
        {API_POST, "/jobs/", true, "/events", h_prefix},
};

static void
test_routes(void)
{
	struct rec x;
	char allow[96];

	rec_init(&x, API_HEAD, "/a", NULL); /* HEAD runs the GET row */
	T_TRUE(api_route_run(&d, &x.r, table, 2) && strcmp(handled, "exact") == 0);
	rec_fini(&x);
	rec_init(&x, API_POST, "/jobs/a%2Fb%zz/events", NULL); /* decoded; a bad escape stays */
	T_TRUE(api_route_run(&d, &x.r, table, 2) && strcmp(handled, "prefix") == 0);
	T_STREQ(x.body.p, "a/b%zz");
	rec_fini(&x);
	rec_init(&x, API_POST, "/jobs/a/b/events", NULL); /* the argument is one segment */
	T_TRUE(!api_route_run(&d, &x.r, table, 2) && x.status == 0);
	rec_init(&x, API_GET, "/jobs/x/events", NULL); /* the path, not the method */
	T_TRUE(!api_route_run(&d, &x.r, table, 2));
	T_EQ(api_route_methods(table, 2, "/jobs/x/events"), (unsigned)(API_POST | API_OPTIONS));
	api_allow_value(api_route_methods(table, 2, "/a"), allow, sizeof(allow));
	T_STREQ(allow, "GET, HEAD, OPTIONS");
	T_EQ(api_route_methods(table, 2, "/b"), 0u);
	T_STREQ(api_method_name(API_PATCH), "PATCH");
}

static void
test_query(void)
{
	T_EQ(api_query_u64("since=5&lines=7", "lines", 100, 1000), 7ull);
	T_EQ(api_query_u64("since=5&LINES=%31%32", "lines", 100, 1000), 12ull);
	T_EQ(api_query_u64("lines=x", "lines", 100, 1000), 100ull);
	T_EQ(api_query_u64("lines=-1", "lines", 100, 1000), 100ull);
	T_EQ(api_query_u64("lines=99999", "lines", 100, 1000), 1000ull);
	T_EQ(api_query_u64("xlines=3&lines", "lines", 100, 1000), 100ull);
	T_EQ(api_query_u64("", "lines", 100, 1000), 100ull);
}

/* The error answers: their status, code, and the headers each code carries. */
static void
test_errors(void)
{
	struct rec x;

	rec_init(&x, API_GET, "/", NULL);
	reply_retry_after(&x.r, 5);
	reply_error(&x.r, ORCH_EOVERLOADED, NULL, "busy %d", 1);
	T_EQ(x.status, 503);
	T_STREQ(x.headers.p, "Retry-After: 5\n"); /* the first one says it */
	T_TRUE(body_has(&x, "\"code\":\"OVERLOADED\"") && body_has(&x, "busy 1"));
	rec_fini(&x);
	rec_init(&x, API_GET, "/", NULL);
	reply_error(&x.r, ORCH_EUNAUTHORIZED, NULL, "no");
	T_TRUE(x.status == 401 && strcmp(x.headers.p, "WWW-Authenticate: Bearer\n") == 0);
	rec_fini(&x);
}

/* The OpenAI APIs with no model served: a list, and refusals naming what is wrong. */
static void
test_openai(void)
{
	struct rec x;

	rec_init(&x, API_GET, "/v1/models", NULL);
	api_openai_models(&d, &x.r, "");
	T_TRUE(x.status == 200 && strcmp(x.type, "application/json") == 0);
	T_STREQ(x.body.p, "{\"object\":\"list\",\"data\":[]}\n");
	rec_fini(&x);
	rec_init(&x, API_GET, "/v1/models/nope", NULL);
	api_openai_model(&d, &x.r, "nope");
	T_TRUE(x.status == 404 && body_has(&x, "MODEL_NOT_FOUND") && body_has(&x, "(none is)"));
	rec_fini(&x);
	rec_init(&x, API_POST, "/v1/chat/completions", "{");
	api_openai_chat(&d, &x.r, "");
	T_TRUE(x.status == 400 && body_has(&x, "INVALID_REQUEST"));
	rec_fini(&x);
	rec_init(&x, API_POST, "/v1/chat/completions",
	         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
	api_openai_chat(&d, &x.r, "");
	T_TRUE(x.status == 404 && body_has(&x, "model 'm' is not configured"));
	rec_fini(&x);
	rec_init(&x, API_POST, "/v1/completions", "{\"prompt\":\"hi\"}");
	api_openai_completions(&d, &x.r, "");
	T_TRUE(x.status == 400 && body_has(&x, "'model' is required"));
	rec_fini(&x);
}

static void
test_native(void)
{
	struct rec x;

	rec_init(&x, API_POST, "/cancel", "{\"job_id\":\"j1\"}");
	api_native_cancel(&d, &x.r, "");
	T_TRUE(x.status == 404 && body_has(&x, "JOB_NOT_FOUND"));
	rec_fini(&x);
	rec_init(&x, API_POST, "/cancel", "{\"job\":\"j1\"}");
	api_native_cancel(&d, &x.r, "");
	T_TRUE(x.status == 400 && body_has(&x, "\"param\":\"job\""));
	rec_fini(&x);
	rec_init(&x, API_HEAD, "/jobs/j1/events", NULL);
	x.r.last_event_id = "3";
	api_native_events(&d, &x.r, "j1");
	T_EQ(x.status, 404);
	rec_fini(&x);
	rec_init(&x, API_POST, "/tokenize", "{\"model\":\"m\",\"content\":\"hi\"}");
	api_tokenize(&d, &x.r, "");
	T_TRUE(x.status == 404 && body_has(&x, "MODEL_NOT_FOUND"));
	rec_fini(&x);
}

static void
test_admin(void)
{
	struct rec x;

	rec_init(&x, API_GET, "/admin/nothing", NULL);
	admin_route(&d, &x.r);
	T_TRUE(x.status == 404 && body_has(&x, "no such admin route"));
	rec_fini(&x);
	rec_init(&x, API_GET, "/admin/workers", NULL);
	admin_route(&d, &x.r);
	T_TRUE(x.status == 200 && strcmp(x.body.p, "[]\n") == 0);
	rec_fini(&x);
	rec_init(&x, API_GET, "/admin/workers/w9/logs?lines=3", NULL);
	admin_route(&d, &x.r);
	T_TRUE(x.status == 404 && body_has(&x, "no worker 'w9'"));
	rec_fini(&x);
	rec_init(&x, API_DELETE, "/admin/models/m", NULL);
	admin_route(&d, &x.r);
	T_TRUE(x.status == 404 && body_has(&x, "no model 'm'"));
	rec_fini(&x);
}

/*
 * A body that may compile a grammar is parsed off the loop while the request is held; a
 * SIGHUP meanwhile frees the keys and reads them anew: the answer looks the caller's key
 * up then, not the freed one (AddressSanitizer sees a read of the old set).
 */
static void
test_keys_reload_mid_parse(void)
{
	static const char keys[] = "k1-0123456789abcdef\n";
	struct orch_errinfo e = {0};
	struct rec x;

	T_OK(keys_parse("keys", keys, strlen(keys), &d.keys, &e));
	rec_init(&x, API_POST, "/v1/chat/completions",
	         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	         "\"response_format\":{\"type\":\"json_object\"}}");
	x.r.authorization = "Bearer k1-0123456789abcdef";
	api_openai_chat(&d, &x.r, "");
	T_TRUE(x.status == 0 && x.held); /* parsing on a helper thread */
	keys_free(&d.keys);
	T_OK(keys_parse("keys", keys, strlen(keys), &d.keys, &e));
	for (int i = 0; i < 5000 && x.status == 0; i++)
		loop_turn(d.base, true), usleep(1000);
	T_TRUE(x.status == 404 && body_has(&x, "model 'm' is not configured"));
	keys_free(&d.keys);
	rec_fini(&x);
}

int
main(void)
{
	cfg_defaults(&d.cfg);
	core_init(&d);
	d.base = loop_base_new();
	T_RUN(test_routes);
	T_RUN(test_query);
	T_RUN(test_errors);
	T_RUN(test_openai);
	T_RUN(test_native);
	T_RUN(test_admin);
	T_RUN(test_keys_reload_mid_parse);
	offload_stop(&d);
	loop_base_free(d.base);
	return t_done();
}
