/* params_test.c - request-body checks: types, limits, exact codes and parameter names. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "affinity.h"
#include "base/limits.h"
#include "config.h"
#include "jobs.h"
#include "params.h"
#include "request.h"
#include "t.h"

static void
test_values(void)
{
	cJSON *o = cJSON_Parse("{\"a\":1.5,\"b\":\"x\",\"c\":true,\"d\":3}");
	struct params_err pe = {0};
	double x = 0;
	int64_t i = 0;
	const char *s = NULL;
	bool b = false;

	T_TRUE(params_number(o, "a", 0, 2, &x, &pe) && x == 1.5);
	T_TRUE(!params_number(o, "a", 0, 1, &x, &pe));
	T_EQ(pe.code, ORCH_EINVAL);
	T_STREQ(pe.param, "a");
	T_TRUE(!params_int(o, "a", 0, 10, &i, &pe)); /* not an integer */
	T_TRUE(params_int(o, "d", 0, 10, &i, &pe) && i == 3);
	T_TRUE(params_string(o, "b", true, &s, &pe) && strcmp(s, "x") == 0);
	T_TRUE(!params_string(o, "zz", true, &s, &pe));
	T_STREQ(pe.param, "zz");
	T_TRUE(params_bool(o, "c", &b, &pe) && b);
	T_TRUE(!params_bool(o, "a", &b, &pe));
	static const char *const keys[] = {"a", "b", "c", NULL};
	T_TRUE(!params_known(o, keys, &pe));
	T_STREQ(pe.param, "d");
	T_EQ(params_utf8_chars("h\xc3\xa9llo"), 5);
	cJSON_Delete(o);
}

static orch_err
parse(enum request_api api, const char *body, struct job_request *r, struct params_err *pe)
{
	struct orchd_config c;

	cfg_defaults(&c);
	c.max_tokens = 100;
	c.max_prompt_chars = 10;
	return request_parse(api, &c, body, strlen(body), r, pe);
}

static void
test_limits(void)
{
	struct job_request r;
	struct params_err pe = {0};

	T_OK(parse(REQUEST_EXECUTE,
	           "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"hi\",\"stop\":[\"a\",\"b\"]}",
	           &r, &pe));
	T_EQ(r.n_stops, 2);
	T_EQ(r.max_tokens, 256); /* the native default */
	job_request_fini(&r);
	T_ERR(parse(REQUEST_EXECUTE,
	            "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"01234567890\"}", &r, &pe),
	      ORCH_EINVAL);
	T_STREQ(pe.param, "prompt");
	job_request_fini(&r);
	T_ERR(parse(REQUEST_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":101}", &r,
	            &pe),
	      ORCH_EINVAL);
	T_STREQ(pe.param, "max_tokens");
	job_request_fini(&r);
	T_ERR(parse(REQUEST_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"n\":65}", &r, &pe),
	      ORCH_EINVAL);
	T_STREQ(pe.param, "n");
	job_request_fini(&r);
	char big[4096] = "{\"model\":\"m\",\"prompt\":\"x\",\"stop\":[";
	for (unsigned i = 0; i <= ORCH_API_MAX_STOPS; i++)
		strcat(big, i ? ",\"s\"" : "\"s\"");
	strcat(big, "]}");
	T_ERR(parse(REQUEST_COMPLETION, big, &r, &pe), ORCH_EINVAL);
	T_STREQ(pe.param, "stop");
	job_request_fini(&r);
	T_OK(parse(REQUEST_CHAT,
	           "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
	           "\"text\",\"text\":\"hi\"}]}],\"stream\":true}",
	           &r, &pe));
	T_TRUE(r.stream && r.messages != NULL);
	job_request_fini(&r);
	T_ERR(parse(REQUEST_CHAT,
	            "{\"model\":\"m\",\"messages\":[{\"role\":\"bot\",\"content\":\"x\"}]}", &r,
	            &pe),
	      ORCH_EINVAL);
	T_STREQ(pe.param, "messages");
	job_request_fini(&r);
	T_ERR(parse(REQUEST_CHAT, "[1]", &r, &pe), ORCH_EINVAL);
	T_ERR(parse(REQUEST_CHAT, "", &r, &pe), ORCH_EINVAL);
}

/* /execute's prompt: text or token ids (their bytes make its affinity key); user taken */
static void
test_execute_prompt(void)
{
	struct job_request r, r2;
	struct params_err pe = {0};

	T_OK(parse(REQUEST_EXECUTE,
	           "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":[1,2,3],\"user\":\"u-1\"}", &r,
	           &pe));
	T_TRUE(r.prompt == NULL && r.n_prompt_ids == 3 && r.prompt_ids[2] == 3);
	T_OK(parse(REQUEST_EXECUTE, "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":[1,2,4]}", &r2,
	           &pe));
	T_TRUE(affinity_key(&r) != 0 && affinity_key(&r) != affinity_key(&r2));
	job_request_fini(&r);
	job_request_fini(&r2);
	static const char *const bad[] = {"[]", "[-1]", "[1.5]", "[\"a\"]", "[[1]]", "7", "null"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char body[128];
		snprintf(body, sizeof(body), "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":%s}",
		         bad[i]);
		T_ERR(parse(REQUEST_EXECUTE, body, &r, &pe), ORCH_EINVAL);
		T_STREQ(pe.param, "prompt");
		job_request_fini(&r);
	}
	T_ERR(parse(REQUEST_EXECUTE,
	            "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"x\",\"user\":3}", &r, &pe),
	      ORCH_EINVAL);
	T_STREQ(pe.param, "user");
	job_request_fini(&r);
}

/* metrics_every (native only): an integer in [0, 65536], 0 = none; each bad value names it. */
static void
test_metrics_every(void)
{
	static const char *const bad[] = {"-1", "1.5", "\"4\"", "65537", "true"};
	struct job_request r;
	struct params_err pe = {0};
	char body[160];

	T_OK(parse(REQUEST_EXECUTE, "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"hi\"}", &r,
	           &pe));
	T_EQ(r.metrics_every, 0);
	job_request_fini(&r);
	T_OK(parse(REQUEST_EXECUTE,
	           "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"hi\",\"metrics_every\":8}", &r,
	           &pe));
	T_EQ(r.metrics_every, 8);
	job_request_fini(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(
		        body, sizeof(body),
		        "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"hi\",\"metrics_every\":%s}",
		        bad[i]);
		T_ERR(parse(REQUEST_EXECUTE, body, &r, &pe), ORCH_EINVAL);
		T_STREQ(pe.param, "metrics_every");
		job_request_fini(&r);
	}
	T_ERR(parse(REQUEST_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"metrics_every\":1}",
	            &r, &pe),
	      ORCH_EINVAL); /* not an OpenAI parameter */
	T_STREQ(pe.param, "metrics_every");
	job_request_fini(&r);
}

/*
 * A body is one JSON object: whitespace may follow it, nothing else (issue 16;
 * i16-http's trailing-bytes cases, now through the one strict params_body).
 */
static void
test_body(void)
{
	static const char *const bad[] = {"{} x", "{}{}", "{}\n{\"a\":1}", "{} ,", "[1]", "", "{"};
	struct params_err pe = {0};
	cJSON *o = NULL;
	char nul[] = "{}\0";

	T_OK(params_body("{\"a\":1} \r\n\t", 11, &o, &pe));
	T_TRUE(cJSON_IsObject(o));
	cJSON_Delete(o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pe = (struct params_err){0};
		T_ERR(params_body(bad[i], strlen(bad[i]), &o, &pe), ORCH_EINVAL);
		T_TRUE(o == NULL);
		T_EQ(pe.code, ORCH_EINVAL);
	}
	T_ERR(params_body(nul, 3, &o, &pe), ORCH_EINVAL);
	T_TRUE(strstr(pe.msg, "NUL byte") != NULL);
	struct job_request r;
	T_ERR(parse(REQUEST_EXECUTE, "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"hi\"} {}", &r,
	            &pe),
	      ORCH_EINVAL);
	T_TRUE(strstr(pe.msg, "not valid JSON") != NULL);
}

/* A parse of @n bytes (NUL bytes allowed) that must fail with ORCH_EINVAL naming @param. */
static void
refused(enum request_api api, const char *body, size_t n, const char *param, const char *msg)
{
	struct orchd_config c;
	struct job_request r;
	struct params_err pe = {0};

	cfg_defaults(&c);
	T_ERR(request_parse(api, &c, body, n == SIZE_MAX ? strlen(body) : n, &r, &pe), ORCH_EINVAL);
	job_request_fini(&r);
	T_STREQ(pe.param, param);
	if (strstr(pe.msg, msg) == NULL)
		T_STREQ(pe.msg, msg);
}

/*
 * Bodies cJSON would take in part (issue 16): "\u0000" cut a string short, the first of two
 * equal keys won, text after the value and raw NUL bytes were ignored, ill-formed UTF-8 was
 * echoed back raw. Each is refused now, naming the parameter where there is one.
 */
static void
test_strict_body(void)
{
	static const char nul[] = "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"a\\u0000b\"}";
	static const char raw_nul[] = "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"a\0b\"}";
	struct job_request r;
	struct params_err pe = {0};

	refused(REQUEST_EXECUTE, nul, strlen(nul), "prompt", "NUL character");
	refused(REQUEST_EXECUTE, raw_nul, sizeof(raw_nul) - 1, "", "NUL byte");
	refused(REQUEST_CHAT,
	        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\\u0000\"}]}",
	        SIZE_MAX, "messages", "NUL character");
	refused(REQUEST_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"stop\":[\"\\u0000\"]}",
	        SIZE_MAX, "stop", "NUL character");
	refused(REQUEST_EXECUTE,
	        "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"x\",\"b\\u0000\":1}", SIZE_MAX, "",
	        "a key holds a NUL");
	refused(REQUEST_EXECUTE,
	        "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"x\",\"model\":\"other\"}", SIZE_MAX,
	        "model", "appears twice");
	refused(REQUEST_CHAT,
	        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\","
	        "\"role\":\"system\"}]}",
	        SIZE_MAX, "role", "appears twice");
	refused(REQUEST_EXECUTE, "{\"job_id\":\"j\xff\",\"model\":\"m\",\"prompt\":\"x\"}",
	        SIZE_MAX, "", "not valid UTF-8");
	refused(REQUEST_EXECUTE, "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"x\"} {}", SIZE_MAX,
	        "", "not valid JSON");
	/* what is fine stays fine: an escaped backslash before "u0000", a key again in another
	 * object, whitespace after the value, a quote in a key */
	T_OK(parse(REQUEST_EXECUTE,
	           "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"a\\\\u0000\"}\r\n", &r, &pe));
	T_STREQ(r.prompt, "a\\u0000");
	job_request_fini(&r);
	T_OK(parse(REQUEST_CHAT,
	           "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
	           "{\"role\":\"assistant\",\"content\":\"y\"}]}",
	           &r, &pe));
	job_request_fini(&r);
	/* one UTF-8 byte order mark is skipped (RFC 8259 8.1; DECISIONS), a second is not JSON */
	T_OK(parse(REQUEST_EXECUTE,
	           "\xef\xbb\xbf{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"x\"}", &r, &pe));
	T_STREQ(r.prompt, "x");
	job_request_fini(&r);
	refused(REQUEST_EXECUTE,
	        "\xef\xbb\xbf\xef\xbb\xbf{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"x\"}",
	        SIZE_MAX, "", "not valid JSON");
}

/* params_body directly: the object comes back; a body of many keys is checked in n log n;
 * the limits on keys in one object and on nesting. */
static void
test_body_many_keys(void)
{
	struct sbuf b = {0};
	struct params_err pe = {0};
	cJSON *root = NULL;

	sbuf_puts(&b, "{");
	for (int i = 0; i < PARAMS_MAX_KEYS - 1; i++)
		sbuf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
	sbuf_puts(&b, ",\"k77\":0}");
	T_ERR(params_body(b.p, b.n, &root, &pe), ORCH_EINVAL);
	T_TRUE(root == NULL);
	T_STREQ(pe.param, "k77");
	T_OK(params_body("{\"a\":{\"a\":1}}", 13, &root, &pe));
	T_TRUE(cJSON_IsObject(root));
	cJSON_Delete(root);
	/* one key over the limit, in an object under "kw": refused, naming "kw" and the limit */
	sbuf_clear(&b);
	sbuf_puts(&b, "{\"kw\":{");
	for (int i = 0; i <= PARAMS_MAX_KEYS; i++)
		sbuf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
	sbuf_puts(&b, "}}");
	T_ERR(params_body(b.p, b.n, &root, &pe), ORCH_EINVAL);
	T_STREQ(pe.param, "kw");
	T_TRUE(strstr(pe.msg, "16384") != NULL);
	/* nesting: PARAMS_MAX_DEPTH levels are taken, one more is not */
	for (int extra = 0; extra < 2; extra++) {
		sbuf_clear(&b);
		sbuf_puts(&b, "{\"x\":");
		for (int i = 1; i < PARAMS_MAX_DEPTH + extra; i++)
			sbuf_puts(&b, "[");
		for (int i = 1; i < PARAMS_MAX_DEPTH + extra; i++)
			sbuf_puts(&b, "]");
		sbuf_puts(&b, "}");
		orch_err rv = params_body(b.p, b.n, &root, &pe);
		T_ERR(rv, extra ? ORCH_EINVAL : ORCH_OK);
		if (extra)
			T_STREQ(pe.param, "x");
		cJSON_Delete(root);
		root = NULL;
	}
	/* past cJSON's own 1000 levels: refused naming the limit, not "not valid JSON" */
	sbuf_clear(&b);
	sbuf_puts(&b, "{\"x\":\"[[[\",\"y\":");
	for (int i = 0; i < 1500; i++)
		sbuf_puts(&b, "[");
	for (int i = 0; i < 1500; i++)
		sbuf_puts(&b, "]");
	sbuf_puts(&b, "}");
	T_ERR(params_body(b.p, b.n, &root, &pe), ORCH_EINVAL);
	T_TRUE(strstr(pe.msg, "deeper than 128 levels") != NULL);
	T_TRUE(root == NULL);
	sbuf_fini(&b);
}

/* X-Deadline (issue 62): RFC 3339 and Unix seconds, to the millisecond; anything else refused. */
static void
test_deadline_header(void)
{
	static const struct {
		const char *v;
		uint64_t ms; /* 0: refused */
	} cases[] = {
	        {"2026-12-03T10:00:00Z", 1796292000000ull},
	        {"2026-12-03t10:00:00z", 1796292000000ull},
	        {"2026-12-03 10:00:00Z", 1796292000000ull},
	        {"2026-12-03T11:30:00+01:30", 1796292000000ull},
	        {"2026-12-03T08:00:00.25-02:00", 1796292000250ull},
	        {"2026-12-03T10:00:00.123456789Z", 1796292000123ull},
	        {"2024-02-29T23:59:59Z", 1709251199000ull},
	        {"2024-02-29T23:59:60Z", 1709251199000ull}, /* a leap second: its second's start */
	        {"1970-01-01T00:00:00Z", 1}, /* 0 is "none" to a job: the epoch is 1 ms */
	        {"0", 1},
	        {"1796292000", 1796292000000ull},
	        {"1796292000.5", 1796292000500ull},
	        {"1796292000.0015", 1796292000001ull},
	        {"2023-02-29T00:00:00Z", 0},
	        {"2026-12-03T10:00:00", 0},
	        {"2026-12-03T24:00:00Z", 0},
	        {"2026-12-03T10:00:00+24:00", 0},
	        {"2026-12-03T10:00:00.Z", 0},
	        {"2026-12-03T10:00:00Zjunk", 0},
	        {"1969-12-31T23:59:59Z", 0},
	        {"1796292000.", 0},
	        {"-1", 0},
	        {"1e9", 0},
	        {"", 0},
	        {"99999999999999999999", 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct params_err pe = {0};
		uint64_t ms = 0;
		bool ok = request_deadline_header(cases[i].v, &ms, &pe);
		if (cases[i].ms == 0) {
			T_TRUE(!ok);
			T_STREQ(pe.param, "X-Deadline");
		} else {
			T_TRUE(ok);
			T_EQ(ms, cases[i].ms);
		}
	}
}

int
main(void)
{
	T_RUN(test_values);
	T_RUN(test_limits);
	T_RUN(test_metrics_every);
	T_RUN(test_execute_prompt);
	T_RUN(test_body);
	T_RUN(test_strict_body);
	T_RUN(test_body_many_keys);
	T_RUN(test_deadline_header);
	return t_done();
}
