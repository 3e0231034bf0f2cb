/* params_test.c - request-body checks: types, limits, exact codes and parameter names. */
#include <stdio.h>

#include <cjson/cJSON.h>

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
	T_ERR(parse(REQUEST_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"n\":2}", &r, &pe),
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

/* A body is one JSON object: whitespace may follow it, nothing else (issue 16). */
static void
test_body(void)
{
	static const char *const bad[] = {"{} x", "{}{}", "{}\n{\"a\":1}", "{} ,", "[1]", "", "{"};
	struct params_err pe = {0};
	cJSON *o;
	char nul[] = "{}\0";

	T_TRUE((o = params_body("{\"a\":1} \r\n\t", 11, &pe)) != NULL);
	cJSON_Delete(o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pe = (struct params_err){0};
		T_TRUE(params_body(bad[i], strlen(bad[i]), &pe) == NULL);
		T_EQ(pe.code, ORCH_EINVAL);
	}
	T_TRUE(params_body(nul, 3, &pe) == NULL);
	T_TRUE(strstr(pe.msg, "1 bytes after") != NULL);
	struct job_request r;
	T_ERR(parse(REQUEST_EXECUTE, "{\"job_id\":\"j\",\"model\":\"m\",\"prompt\":\"hi\"} {}", &r,
	            &pe),
	      ORCH_EINVAL);
	T_TRUE(strstr(pe.msg, "after its JSON object") != NULL);
}

int
main(void)
{
	T_RUN(test_values);
	T_RUN(test_limits);
	T_RUN(test_metrics_every);
	T_RUN(test_body);
	return t_done();
}
