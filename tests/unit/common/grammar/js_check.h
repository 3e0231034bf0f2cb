#pragma once
/*
 * js_check.h - helpers of the JSON Schema tests (json_schema_test.c,
 * json_schema_alt_test.c): a schema's grammar made and compiled, texts it must
 * and must not accept, and a refusal's code, keyword and pointer.
 */
#include <cjson/cJSON.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "t.h"

#define L(...)                    \
	(const char *const[])     \
	{                         \
		__VA_ARGS__, NULL \
	}
#define NONE                  \
	(const char *const[]) \
	{                     \
		NULL          \
	}

/* The largest expansion (gram_expansion) of a grammar compiled here, and its schema. */
static uint64_t max_expansion __attribute__((unused));
static char max_expansion_schema[96] __attribute__((unused));

/* Note @g's expansion, made of @schema, when the largest yet. */
static inline void
note_expansion(const struct gram *g, const char *schema)
{
	if (g == NULL || gram_expansion(g) <= max_expansion)
		return;
	max_expansion = gram_expansion(g);
	snprintf(max_expansion_schema, sizeof(max_expansion_schema), "%s", schema);
}

/* compile - the grammar of @schema (JSON text), compiled; NULL after a failed check. */
static inline struct gram *
compile(const char *schema)
{
	cJSON *s = cJSON_Parse(schema);
	char *text = NULL, msg[256];
	struct gram *g = NULL;
	struct gram_err e;
	orch_err rv;

	if (s == NULL) {
		fprintf(stderr, "bad test schema: %s\n", schema);
		t_failed_checks++;
		return NULL;
	}
	rv = json_schema_gbnf(s, &text, msg, sizeof(msg));
	cJSON_Delete(s);
	if (rv != ORCH_OK) {
		fprintf(stderr, "%s\n  -> %s: %s\n", schema, orch_err_name(rv), msg);
		t_failed_checks++;
		return NULL;
	}
	if (gram_compile(text, strlen(text), NULL, &g, &e) != ORCH_OK) {
		fprintf(stderr, "%s\n%s  -> does not compile: %u:%u %s\n", schema, text, e.line,
		        e.col, e.msg);
		t_failed_checks++;
	}
	note_expansion(g, schema);
	free(text);
	return g;
}

/* check - each of @yes a sentence of @schema's grammar, none of @no. */
static inline void
check(const char *schema, const char *const *yes, const char *const *no)
{
	struct gram *g = compile(schema);

	T_TRUE(g != NULL);
	for (; *yes; yes++) {
		if (!gram_accepts(g, *yes, strlen(*yes)))
			fprintf(stderr, "%s\n  does not accept %s\n", schema, *yes);
		T_TRUE(gram_accepts(g, *yes, strlen(*yes)) || (gram_free(g), false));
	}
	for (; *no; no++) {
		if (gram_accepts(g, *no, strlen(*no)))
			fprintf(stderr, "%s\n  accepts %s\n", schema, *no);
		T_TRUE(!gram_accepts(g, *no, strlen(*no)) || (gram_free(g), false));
	}
	gram_free(g);
}

/* refused - @schema gives ORCH_EINVAL with @what and @where in its message. */
static inline void
refused(const char *schema, const char *what, const char *where)
{
	cJSON *s = cJSON_Parse(schema);
	char *text = (char *)1, msg[256];
	orch_err rv;

	T_TRUE(s != NULL);
	rv = json_schema_gbnf(s, &text, msg, sizeof(msg));
	cJSON_Delete(s);
	if (rv != ORCH_EINVAL || !strstr(msg, what) || !strstr(msg, where))
		fprintf(stderr, "%s\n  -> %s '%s' (want '%s' at '%s')\n", schema, orch_err_name(rv),
		        msg, what, where);
	T_ERR(rv, ORCH_EINVAL);
	T_TRUE(text == (char *)1);
	T_TRUE(strstr(msg, what) != NULL);
	T_TRUE(strstr(msg, where) != NULL);
}

/* json_regex_gbnf: the output itself matches the whole pattern (issue 62, item 4). */
static inline void
regex_check(const char *pattern, const char *const *yes, const char *const *no)
{
	char *text = NULL, msg[256];
	struct gram *g = NULL;
	struct gram_err e;

	T_OK(json_regex_gbnf(pattern, &text, msg, sizeof(msg)));
	T_OK(gram_compile(text, strlen(text), NULL, &g, &e));
	note_expansion(g, pattern);
	free(text);
	for (; *yes; yes++) {
		if (!gram_accepts(g, *yes, strlen(*yes)))
			fprintf(stderr, "/%s/ does not accept %s\n", pattern, *yes);
		T_TRUE(gram_accepts(g, *yes, strlen(*yes)) || (gram_free(g), false));
	}
	for (; *no; no++) {
		if (gram_accepts(g, *no, strlen(*no)))
			fprintf(stderr, "/%s/ accepts %s\n", pattern, *no);
		T_TRUE(!gram_accepts(g, *no, strlen(*no)) || (gram_free(g), false));
	}
	gram_free(g);
}
