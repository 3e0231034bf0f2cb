/*
 * tool_call.c - tool-call syntaxes: names, detection in a chat template,
 * and the grammar that forces a call (tool_call.h).
 */
#include "tool_call.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/sbuf.h"
#include "json_schema.h"

#define TOOLS_MAX 128 /* as many as orchd takes in a request */

static const char *const names[] = {"", "hermes", "llama3_json", "harmony"};

const char *
tool_syntax_name(enum tool_syntax s)
{
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "";
}

enum tool_syntax
tool_syntax_from_name(const char *name)
{
	for (unsigned i = 1; name != NULL && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return (enum tool_syntax)i;
	return TOOL_SYNTAX_NONE;
}

/* Whether the @n bytes at @src hold @lit. */
static bool
has(const char *src, size_t n, const char *lit)
{
	return memmem(src, n, lit, strlen(lit)) != NULL;
}

enum tool_syntax
tool_syntax_detect(const char *src, size_t n)
{
	if (src == NULL)
		return TOOL_SYNTAX_NONE;
	/* JSON in the tag; not the XML calls of Qwen3-Coder or GLM (<function=...>) */
	if (has(src, n, "<tool_call>") && has(src, n, "arguments") && !has(src, n, "<function="))
		return TOOL_SYNTAX_HERMES;
	if (has(src, n, "\"parameters\": dictionary of argument name"))
		return TOOL_SYNTAX_LLAMA3;
	return TOOL_SYNTAX_NONE;
}

bool
tool_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n >= 1 && n <= 64 &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
	               n;
}

/* The rules that write one call of function @name with arguments rule "schema-@i". */
static void
put_call(struct sbuf *b, enum tool_syntax s, size_t i, const char *name)
{
	if (s == TOOL_SYNTAX_HERMES)
		sbuf_printf(b,
		            "call-%zu ::= \"<tool_call>\\n{\\\"name\\\": \\\"%s\\\", "
		            "\\\"arguments\\\": \" schema-%zu \"}\\n</tool_call>\"\n",
		            i, name, i);
	else if (s == TOOL_SYNTAX_HARMONY) /* from the channel name on: the worker wraps it */
		sbuf_printf(b,
		            "call-%zu ::= \"commentary to=functions.%s \" <|constrain|> \"json\" "
		            "<|message|> schema-%zu\n",
		            i, name, i);
	else
		sbuf_printf(b,
		            "call-%zu ::= \"{\\\"name\\\": \\\"%s\\\", \\\"parameters\\\": \" "
		            "schema-%zu \"}\"\n",
		            i, name, i);
}

/* The function object of tools[@k]: its name in *@ret_name, its parameters (NULL: none). */
static const cJSON *
function_of(const cJSON *tool, const char **ret_name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(tool, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");

	*ret_name = cJSON_IsString(name) ? name->valuestring : NULL;
	return cJSON_GetObjectItemCaseSensitive(f, "parameters");
}

/* The functions a grammar is made of, and the schemas of their arguments. */
struct picked {
	const cJSON *schema[TOOLS_MAX];
	const char *name[TOOLS_MAX];
	int tool[TOOLS_MAX]; /* its place in tools */
	size_t n;
	cJSON *none, *any; /* no parameters: only {}; parameters {}: any object */
};

/*
 * The schema a forced call's arguments follow: an object always (arguments
 * are a JSON object, as OpenAI's are), so a schema of another type is refused.
 */
static orch_err
arguments_schema(struct picked *p, const cJSON *params, int k, char *msg, size_t msg_n)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(params, "type");

	if (params == NULL)
		p->schema[p->n] = p->none;
	else if (cJSON_IsObject(params) && params->child == NULL)
		p->schema[p->n] = p->any;
	else if (cJSON_IsString(type) && strcmp(type->valuestring, "object") == 0)
		p->schema[p->n] = params;
	else {
		snprintf(msg, msg_n,
		         "tools[%d].function.parameters: a forced call needs an object schema "
		         "(\"type\": \"object\")",
		         k);
		return ORCH_EINVAL;
	}
	return ORCH_OK;
}

/* The functions of @tools a call may name (all, or @only), each checked. */
static orch_err
pick(struct picked *p, const cJSON *tools, const char *only, char *msg, size_t msg_n)
{
	const cJSON *t;
	int k = -1;
	orch_err rv;

	cJSON_ArrayForEach(t, tools)
	{
		const char *name;
		const cJSON *params = function_of(t, &name);
		k++;
		if (only != NULL && (name == NULL || strcmp(name, only) != 0))
			continue;
		if (p->n == TOOLS_MAX) {
			snprintf(msg, msg_n, "more than %d tools", TOOLS_MAX);
			return ORCH_EINVAL;
		}
		if (!tool_name_ok(name)) {
			snprintf(
			        msg, msg_n,
			        "tools[%d]: a function name must be 1-64 of a-z, A-Z, 0-9, _ and -",
			        k);
			return ORCH_EINVAL;
		}
		if ((rv = arguments_schema(p, params, k, msg, msg_n)) != ORCH_OK)
			return rv;
		p->name[p->n] = name;
		p->tool[p->n++] = k;
	}
	if (p->n > 0)
		return ORCH_OK;
	if (only != NULL)
		snprintf(msg, msg_n, "no function named '%.64s' in tools", only);
	else
		snprintf(msg, msg_n, "no tools");
	return ORCH_EINVAL;
}

orch_err
tool_grammar(enum tool_syntax s, const cJSON *tools, const char *only, bool parallel, char **ret,
             char *msg, size_t msg_n)
{
	struct picked p = {.n = 0};
	struct sbuf top = {0};
	size_t failed = SIZE_MAX;
	char why[400];
	orch_err rv;

	if (s == TOOL_SYNTAX_NONE) {
		snprintf(msg, msg_n, "no grammar for tool-call syntax '%s'", tool_syntax_name(s));
		return ORCH_EUNSUPPORTED;
	}
	p.none = cJSON_Parse("{\"type\": \"object\", \"properties\": {}}");
	p.any = cJSON_Parse("{\"type\": \"object\", \"additionalProperties\": true}");
	if (p.none == NULL || p.any == NULL)
		rv = ORCH_ENOMEM;
	else
		rv = pick(&p, tools, only, msg, msg_n);
	if (rv == ORCH_OK) {
		sbuf_printf(&top, "root ::= call%s\ncall ::= ",
		            parallel && s == TOOL_SYNTAX_HERMES ? " ( \"\\n\" call )*" : "");
		for (size_t i = 0; i < p.n; i++)
			sbuf_printf(&top, "%scall-%zu", i ? " | " : "", i);
		sbuf_putc(&top, '\n');
		for (size_t i = 0; i < p.n; i++)
			put_call(&top, s, i, p.name[i]);
		if ((rv = sbuf_err(&top)) == ORCH_OK)
			rv = json_schema_gbnf_set(p.schema, p.n, top.p, ret, &failed, why,
			                          sizeof(why));
		if (rv == ORCH_EINVAL && failed < p.n)
			snprintf(msg, msg_n, "tools[%d].function.parameters: %s", p.tool[failed],
			         why);
		else if (rv == ORCH_EINVAL)
			snprintf(msg, msg_n, "%s", why);
		else if (rv == ORCH_ENOMEM)
			snprintf(msg, msg_n, "out of memory");
	}
	sbuf_fini(&top);
	cJSON_Delete(p.none);
	cJSON_Delete(p.any);
	return rv;
}
