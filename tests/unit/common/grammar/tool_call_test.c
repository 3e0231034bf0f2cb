/*
 * tool_call_test.c - tool-call syntaxes (tool_call.h): which syntax each
 * real chat template of the test data teaches, and the grammars that force
 * a call: what they accept (a call of each function, several with
 * parallel, only the named one), what they refuse (other names, arguments
 * that do not validate, text around the call), and the refusals.
 */
#include "t.h"

#include <cjson/cJSON.h>

#include "grammar/grammar.h"
#include "grammar/tool_call.h"

static void
test_detect(void)
{
	static const struct {
		const char *file;
		enum tool_syntax want;
	} cases[] = {
	        {"templates/Qwen-Qwen2.5-7B-Instruct.jinja", TOOL_SYNTAX_HERMES},
	        {"templates/meta-llama-Llama-3.1-8B-Instruct.jinja", TOOL_SYNTAX_LLAMA3},
	        {"templates/meta-llama-Llama-3.2-3B-Instruct.jinja", TOOL_SYNTAX_LLAMA3},
	        {"templates/microsoft-Phi-3-mini-4k-instruct.jinja", TOOL_SYNTAX_NONE},
	        {"templates/ggml-vocab-qwen2.chat_template.jinja", TOOL_SYNTAX_NONE},
	        {"templates/google-gemma-2-2b-it.jinja", TOOL_SYNTAX_NONE},
	        /* harmony is the vocabulary's, and Mistral's [TOOL_CALLS] is a control token */
	        {"templates/openai-gpt-oss-120b.jinja", TOOL_SYNTAX_NONE},
	        {"templates/mistralai-Mistral-Nemo-Instruct-2407.jinja", TOOL_SYNTAX_NONE},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = 0;
		const char *path = t_path_opt(cases[i].file); /* Phi-3-mini's: the shared data's */
		if (path == NULL)
			continue;
		char *src = t_read_file(path, &n);
		T_TRUE(src != NULL);
		enum tool_syntax got = tool_syntax_detect(src, n);
		if (got != cases[i].want)
			fprintf(stderr, "%s: '%s', want '%s'\n", cases[i].file,
			        tool_syntax_name(got), tool_syntax_name(cases[i].want));
		T_TRUE(got == cases[i].want);
		free(src);
	}
	T_TRUE(tool_syntax_detect(NULL, 0) == TOOL_SYNTAX_NONE);
	/* XML calls in the tag (Qwen3-Coder): not hermes */
	static const char coder[] = "<tool_call>\n<function=NAME>\n<parameter=arguments>";
	T_TRUE(tool_syntax_detect(coder, sizeof(coder) - 1) == TOOL_SYNTAX_NONE);
	for (int s = TOOL_SYNTAX_NONE; s <= TOOL_SYNTAX_HARMONY; s++)
		T_TRUE((int)tool_syntax_from_name(tool_syntax_name((enum tool_syntax)s)) == s);
	T_TRUE(tool_syntax_from_name("xml") == TOOL_SYNTAX_NONE);
}

static const char tools_json[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"unit\": "
        "{\"enum\": [\"c\", \"f\"]}}, \"required\": [\"city\", \"unit\"], "
        "\"additionalProperties\": false}}},"
        " {\"type\": \"function\", \"function\": {\"name\": \"now\"}},"
        " {\"type\": \"function\", \"function\": {\"name\": \"add\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"$ref\": "
        "\"#/$defs/n\"}}, \"required\": [\"a\", \"b\"], \"$defs\": {\"n\": {\"type\": "
        "\"integer\", \"minimum\": 0}}}}}]";

/* The grammar of @s over tools_json, compiled; NULL after a failed check. */
static struct gram *
grammar(enum tool_syntax s, const char *only, bool parallel)
{
	cJSON *tools = cJSON_Parse(tools_json);
	char *text = NULL, msg[256];
	struct gram *g = NULL;
	struct gram_err e;

	if (tools == NULL) {
		t_failed_checks++;
		return NULL;
	}
	orch_err rv = tool_grammar(s, tools, only, parallel, &text, msg, sizeof(msg));
	if (rv != ORCH_OK)
		fprintf(stderr, "tool_grammar: %s: %s\n", orch_err_name(rv), msg);
	if (rv == ORCH_OK && gram_compile(text, strlen(text), NULL, &g, &e) != ORCH_OK)
		fprintf(stderr, "%s -> %u:%u %s\n", text, e.line, e.col, e.msg);
	cJSON_Delete(tools);
	free(text);
	if (g == NULL)
		t_failed_checks++;
	return g;
}

static void
accepts(const struct gram *g, const char *s, bool want)
{
	bool got = g != NULL && gram_accepts(g, s, strlen(s));

	if (got != want)
		fprintf(stderr, "%s: %s, want %s\n", s, got ? "accepted" : "refused",
		        want ? "accepted" : "refused");
	T_TRUE(got == want);
}

#define W1 \
	"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>"
#define N1 "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"
#define A1 "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": -3, \"b\": 4}}\n</tool_call>"

static void
test_hermes(void)
{
	struct gram *g = grammar(TOOL_SYNTAX_HERMES, NULL, true);

	accepts(g, W1, true);
	accepts(g, N1, true);
	accepts(g, A1, true);
	accepts(g, W1 "\n" N1 "\n" A1, true);
	accepts(g, "", false);
	accepts(g, "Sure. " W1, false);
	accepts(g, W1 "\n", false);
	accepts(g,
	        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
	        false);
	accepts(g,
	        "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -4}}\n</tool_call>",
	        false);
	accepts(g, "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>", false);
	gram_free(g);

	g = grammar(TOOL_SYNTAX_HERMES, NULL, false);
	accepts(g, A1, true);
	accepts(g, W1 "\n" N1, false);
	gram_free(g);

	g = grammar(TOOL_SYNTAX_HERMES, "now", true);
	accepts(g, N1, true);
	accepts(g, N1 "\n" N1, true);
	accepts(g, W1, false);
	gram_free(g);
}

static void
test_llama3(void)
{
	struct gram *g = grammar(TOOL_SYNTAX_LLAMA3, NULL, true);

	accepts(g,
	        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"unit\": \"f\"}}",
	        true);
	accepts(g, "{\"name\": \"now\", \"parameters\": {}}", true);
	/* one call a turn, whatever parallel says: the templates take no more */
	accepts(g,
	        "{\"name\": \"now\", \"parameters\": {}}; {\"name\": \"now\", \"parameters\": {}}",
	        false);
	accepts(g, "{\"name\": \"now\", \"arguments\": {}}", false);
	gram_free(g);
	/* parameters {} (a function that takes anything): any object, never another value */
	cJSON *any = cJSON_Parse("[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
	                         "\"parameters\": {}}}]");
	char *text = NULL, msg[128];
	struct gram_err e;
	T_TRUE(tool_grammar(TOOL_SYNTAX_LLAMA3, any, NULL, true, &text, msg, sizeof(msg)) ==
	       ORCH_OK);
	cJSON_Delete(any);
	g = NULL;
	T_TRUE(gram_compile(text, strlen(text), NULL, &g, &e) == ORCH_OK || (free(text), false));
	free(text);
	accepts(g, "{\"name\": \"f\", \"parameters\": {\"a\": [1, {\"b\": null}]}}", true);
	accepts(g, "{\"name\": \"f\", \"parameters\": \"x\"}", false);
	accepts(g, "{\"name\": \"f\", \"parameters\": [1]}", false);
	gram_free(g);
	g = grammar(TOOL_SYNTAX_LLAMA3, "add", false);
	accepts(g, "{\"name\": \"add\", \"parameters\": {\"a\": 0, \"b\": 0}}", true);
	accepts(g, "{\"name\": \"now\", \"parameters\": {}}", false);
	gram_free(g);
}

/* Whether @g takes a harmony call: @head, <|constrain|>, "json", <|message|>, @args. */
static bool
harmony_call(struct gram *g, const char *head, const char *args)
{
	struct gram_match *m;
	bool ok;

	for (uint32_t i = 0; i < gram_n_tokens(g); i++) { /* ids 1 and 2, as a worker binds */
		const char *text;
		uint32_t len;
		gram_token(g, i, &text, &len);
		gram_bind_token(g, i, len == 13 && memcmp(text, "<|constrain|>", 13) == 0 ? 1 : 2);
	}
	if (gram_match_new(g, &m) != ORCH_OK)
		return false;
	ok = gram_match_feed(m, head, strlen(head), NULL) &&
	     gram_match_feed_token(m, 1, "", 0, NULL) && gram_match_feed(m, "json", 4, NULL) &&
	     gram_match_feed_token(m, 2, "", 0, NULL) &&
	     gram_match_feed(m, args, strlen(args), NULL) && gram_match_done(m);
	gram_match_free(m);
	return ok;
}

/* harmony: the call's message from its channel name on, one call; control tokens by name */
static void
test_harmony(void)
{
	struct gram *g = grammar(TOOL_SYNTAX_HARMONY, NULL, true);

	T_TRUE(g != NULL && gram_n_tokens(g) == 2);
	T_TRUE(harmony_call(g, "commentary to=functions.add ", "{\"a\": -3, \"b\": 4}"));
	T_TRUE(harmony_call(g, "commentary to=functions.now ", "{}"));
	T_TRUE(!harmony_call(g, "commentary to=functions.add ", "{\"a\": 1, \"b\": -4}"));
	T_TRUE(!harmony_call(g, "commentary to=functions.nope ", "{}"));
	T_TRUE(!harmony_call(g, "commentary to=functions.now", "{}"));
	gram_free(g);
	g = grammar(TOOL_SYNTAX_HARMONY, "now", true);
	T_TRUE(g != NULL && harmony_call(g, "commentary to=functions.now ", "{}"));
	T_TRUE(!harmony_call(g, "commentary to=functions.add ", "{\"a\": 0, \"b\": 0}"));
	gram_free(g);
}

/* tool_grammar on @json refuses with @code and a message holding @word. */
static void
refused(enum tool_syntax s, const char *json, const char *only, orch_err code, const char *word)
{
	cJSON *tools = cJSON_Parse(json);
	char *text = NULL, msg[256] = "";
	orch_err rv = tool_grammar(s, tools, only, true, &text, msg, sizeof(msg));

	if (rv != code || strstr(msg, word) == NULL)
		fprintf(stderr, "%s: %s '%s', want %s '%s'\n", json, orch_err_name(rv), msg,
		        orch_err_name(code), word);
	T_TRUE(rv == code && strstr(msg, word) != NULL);
	T_TRUE(text == NULL);
	cJSON_Delete(tools);
}

static void
test_refused(void)
{
	refused(TOOL_SYNTAX_NONE, tools_json, NULL, ORCH_EUNSUPPORTED, "no grammar");
	refused(TOOL_SYNTAX_HERMES, tools_json, "get_time", ORCH_EINVAL,
	        "no function named 'get_time'");
	refused(TOOL_SYNTAX_HERMES, "[]", NULL, ORCH_EINVAL, "no tools");
	refused(TOOL_SYNTAX_HERMES,
	        "[{\"type\": \"function\", \"function\": {\"name\": \"a\\\"b\"}}]", NULL,
	        ORCH_EINVAL, "tools[0]: a function name");
	refused(TOOL_SYNTAX_HERMES,
	        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
	        "{\"type\": \"object\", \"properties\": {\"a\": {\"contains\": {}, \"maxContains\": 1}}}}}]",
	        NULL, ORCH_EINVAL,
	        "tools[0].function.parameters: unsupported keyword 'maxContains'");
	/* arguments are an object: a schema of another type cannot be forced */
	refused(TOOL_SYNTAX_HERMES,
	        "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, {\"type\": "
	        "\"function\", \"function\": {\"name\": \"g\", \"parameters\": {\"type\": "
	        "\"string\"}}}]",
	        NULL, ORCH_EINVAL, "tools[1].function.parameters: a forced call needs an object");
	/* the failing schema is named by its place in tools, also when only one is picked */
	refused(TOOL_SYNTAX_LLAMA3,
	        "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, {\"type\": "
	        "\"function\", \"function\": {\"name\": \"g\", \"parameters\": {\"type\": "
	        "\"object\", \"properties\": {\"a\": {\"$ref\": \"#/$defs/none\"}}}}}]",
	        "g", ORCH_EINVAL, "tools[1].function.parameters:");
	T_TRUE(tool_name_ok("get_weather-2"));
	T_TRUE(!tool_name_ok(""));
	T_TRUE(!tool_name_ok("a.b"));
	T_TRUE(!tool_name_ok("x123456789x123456789x123456789x123456789x123456789x123456789x1234"));
}

static orch_err
oom_grammar(void *ctx)
{
	char *text = NULL, msg[128];
	orch_err rv = tool_grammar(TOOL_SYNTAX_HERMES, ctx, NULL, true, &text, msg, sizeof(msg));

	free(text);
	return rv;
}

static void
test_oom(void)
{
	cJSON *tools = cJSON_Parse(tools_json);

	T_TRUE(tools != NULL);
	long runs = t_oom_loop(oom_grammar, tools, 100000);
	cJSON_Delete(tools);
	T_TRUE(runs > 0);
}

int
main(void)
{
	T_RUN(test_detect);
	T_RUN(test_hermes);
	T_RUN(test_llama3);
	T_RUN(test_harmony);
	T_RUN(test_refused);
	T_RUN(test_oom);
	return t_done();
}
