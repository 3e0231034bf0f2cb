/*
 * request_grammar.c - constrained output in a request (request.h): the
 * "grammar" field (GBNF, docs/grammar.md) and OpenAI's "response_format"
 * json_object and json_schema, each made a grammar here, checked by
 * compiling it, and sent to the worker as GBNF text. A schema keyword the
 * grammar cannot honour is refused naming it: the output must validate.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

/*
 * The line of @text (1-based) that defines a rule whose name begins
 * "orch-harmony-" (the harmony wrapper's, text/harmony_grammar.h); 0: none.
 */
static uint32_t
reserved_rule(const char *text)
{
	uint32_t line = 1;

	for (const char *p = text; *p; line++) { /* a bare '\r' counts as a line too */
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "orch-harmony-", 13) == 0) {
			const char *q = p + 13;
			while (*q && (isalnum((unsigned char)*q) || *q == '-' || *q == '_'))
				q++;
			while (*q == ' ' || *q == '\t')
				q++;
			if (strncmp(q, "::=", 3) == 0)
				return line;
		}
		p += strcspn(p, "\r\n"); /* the parser ends a rule at either */
		if (*p == '\0')
			break;
		if (*p == '\r' && p[1] == '\n')
			p++;
		p++;
	}
	return 0;
}

/* What a grammar a client wrote may not have beyond compiling: too many terminals, our names. */
static bool
client_limits(const struct gram *g, const char *text, const char *param, struct params_err *pe)
{
	uint32_t line = reserved_rule(text);

	if (gram_n_tokens(g) > GRAM_TOKENS_MAX)
		return params_fail(pe, ORCH_EINVAL, param,
		                   "'%s' has more than %d distinct token terminals", param,
		                   GRAM_TOKENS_MAX);
	if (line > 0)
		return params_fail(pe, ORCH_EINVAL, param,
		                   "'%s' line %u: rule names beginning with 'orch-harmony-' are "
		                   "reserved (a harmony model's wrapper uses them)",
		                   param, line);
	return true;
}

/* @text as the request's grammar if it compiles (@mine: a grammar orchd made of a schema). */
static bool
take(struct job_request *r, char *text, bool mine, const char *param, struct params_err *pe)
{
	struct gram *g = NULL;
	struct gram_err ge;
	orch_err rv = gram_compile(text, strlen(text), NULL, &g, &ge);
	bool ok = rv != ORCH_OK || mine || client_limits(g, text, param, pe);

	gram_free(g);
	if (!ok) {
		free(text);
		return false;
	}
	if (rv == ORCH_ENOMEM) {
		free(text);
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	}
	if (rv != ORCH_OK) {
		free(text);
		if (mine) /* a schema orch took but made a bad grammar of: orch's fault */
			return params_fail(pe, ORCH_EINTERNAL, param,
			                   "the grammar made of this schema does not compile "
			                   "(%u:%u: %s); please report it",
			                   ge.line, ge.col, ge.msg);
		return params_fail(pe, ORCH_EINVAL, param,
		                   "'%s' does not compile: line %u, column %u: %s", param, ge.line,
		                   ge.col, ge.msg);
	}
	if (r->grammar != NULL) {
		free(text);
		return params_fail(pe, ORCH_EINVAL, param,
		                   "give one of 'grammar' and a JSON 'response_format', not both");
	}
	r->grammar = text;
	r->grammar_param = strcmp(param, "grammar") == 0        ? "grammar"
	                   : strcmp(param, "guided_regex") == 0 ? "guided_regex"
	                   : strcmp(param, "regex") == 0        ? "regex"
	                                                        : "response_format";
	return true;
}

/* The output must match @pattern whole (@param names the field): its grammar. */
static bool
regex(const char *pattern, struct job_request *r, const char *param, struct params_err *pe)
{
	char msg[1800], *text = NULL;

	if (pattern == NULL || pattern[0] == '\0' || strlen(pattern) > REQUEST_GRAMMAR_MAX)
		return params_fail(pe, ORCH_EINVAL, param, "the regex must be 1-%d bytes",
		                   REQUEST_GRAMMAR_MAX);
	orch_err rv = json_regex_gbnf(pattern, &text, msg, sizeof(msg));
	if (rv == ORCH_ENOMEM)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	if (rv != ORCH_OK)
		return params_fail(pe, ORCH_EINVAL, param, "the regex cannot be enforced: %s", msg);
	/* not "mine": a client's regex can reach the grammar compiler's limits (a{10000}...),
	 * which is the client's 400, not orch's fault */
	return take(r, text, false, param, pe);
}

static bool
copy_take(struct job_request *r, const char *text, bool mine, const char *param,
          struct params_err *pe)
{
	char *p = orch_strndup(text, strlen(text));

	if (p == NULL)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	return take(r, p, mine, param, pe);
}

/* {"name", "schema", "strict", "description"}: the schema as a grammar. */
static bool
json_schema(const cJSON *js, struct job_request *r, struct params_err *pe)
{
	static const char *const keys[] = {"name", "schema", "strict", "description", NULL};
	const cJSON *schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
	const char *name = NULL, *desc = NULL;
	char msg[1800], *text = NULL;
	bool strict = false;

	if (!cJSON_IsObject(js))
		return params_fail(
		        pe, ORCH_EINVAL, "response_format",
		        "'response_format' of type json_schema needs a 'json_schema' object");
	if (!params_known(js, keys, pe) || !params_string(js, "name", true, &name, pe) ||
	    !params_string(js, "description", false, &desc, pe) ||
	    !params_bool(js, "strict", &strict, pe))
		return false;
	if (name[0] == '\0' || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
	                 "KLMNOPQRSTUVWXYZ0123456789_-") != strlen(name))
		return params_fail(pe, ORCH_EINVAL, "response_format",
		                   "'json_schema.name' must be 1-64 of a-z, A-Z, 0-9, _ and -");
	if (!cJSON_IsObject(schema) && !cJSON_IsBool(schema))
		return params_fail(pe, ORCH_EINVAL, "response_format",
		                   "'json_schema.schema' must be a JSON Schema (an object)");
	orch_err rv = json_schema_gbnf(schema, &text, msg, sizeof(msg));
	if (rv == ORCH_ENOMEM)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	if (rv != ORCH_OK)
		return params_fail(pe, ORCH_EINVAL, "response_format",
		                   "'json_schema.schema' cannot be enforced: %s", msg);
	return take(r, text, true, "response_format", pe);
}

bool
request_response_format(const cJSON *v, struct job_request *r, struct params_err *pe)
{
	static const char *const keys[] = {"type", "json_schema", "pattern", NULL};
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(v, "type");

	if (!cJSON_IsObject(v) || !cJSON_IsString(type))
		return params_fail(pe, ORCH_EINVAL, "response_format",
		                   "'response_format' must be an object with a 'type'");
	if (cJSON_GetObjectItemCaseSensitive(v, "schema") != NULL) /* a common slip */
		return params_fail(
		        pe, ORCH_EINVAL, "response_format",
		        "'response_format' has no 'schema': send {\"type\": \"json_schema\", "
		        "\"json_schema\": {\"name\": ..., \"schema\": ...}}");
	if (!params_known(v, keys, pe))
		return false;
	if (strcmp(type->valuestring, "text") == 0)
		return true;
	if (strcmp(type->valuestring, "json_object") == 0)
		return copy_take(r, json_object_gbnf(), true, "response_format", pe);
	if (strcmp(type->valuestring, "json_schema") == 0)
		return json_schema(cJSON_GetObjectItemCaseSensitive(v, "json_schema"), r, pe);
	if (strcmp(type->valuestring, "regex") == 0) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "pattern");
		if (!cJSON_IsString(p))
			return params_fail(
			        pe, ORCH_EINVAL, "response_format",
			        "'response_format' of type regex needs a 'pattern' string");
		return regex(p->valuestring, r, "response_format", pe);
	}
	return params_fail(pe, ORCH_EINVAL, "response_format",
	                   "'response_format' type '%.64s' is unknown (text, json_object, "
	                   "json_schema or regex)",
	                   type->valuestring);
}

bool
request_grammar(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	const char *text = NULL;

	/* vLLM's guided_regex and SGLang's regex: response_format {"type": "regex"} */
	static const char *const aliases[] = {"guided_regex", "regex"};
	for (size_t i = 0; i < 2; i++) {
		const char *pattern = NULL;
		if (!params_string(root, aliases[i], false, &pattern, pe))
			return false;
		if (pattern != NULL && !regex(pattern, r, aliases[i], pe))
			return false;
	}
	if (!params_string(root, "grammar", false, &text, pe))
		return false;
	if (text == NULL)
		return true;
	if (text[0] == '\0' || strlen(text) > REQUEST_GRAMMAR_MAX)
		return params_fail(pe, ORCH_EINVAL, "grammar",
		                   "'grammar' must be 1-%d bytes of GBNF", REQUEST_GRAMMAR_MAX);
	return copy_take(r, text, false, "grammar", pe);
}
