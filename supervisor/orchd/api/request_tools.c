/*
 * request_tools.c - a chat request's tools (request.h): "tools", checked
 * and kept for the template and the parser; "tool_choice" ("auto",
 * "none", "required" or {"type": "function", "function": {"name"}}) and
 * "parallel_tool_calls". A forced call's functions must have names and
 * parameter schemas a grammar can be made of (grammar/tool_call.h): what
 * cannot is a 400 here, naming the tool, not a surprise at dispatch.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "grammar/tool_call.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

/* tool_choice into @r (the function's name, when one is named, still to be checked). */
static bool
choice(const cJSON *c, struct job_request *r, bool *none, struct params_err *pe)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");

	*none = false;
	if (c == NULL || cJSON_IsNull(c))
		return true;
	if (cJSON_IsString(c) && strcmp(c->valuestring, "auto") == 0)
		return true;
	if (cJSON_IsString(c) && strcmp(c->valuestring, "none") == 0)
		return *none = true;
	if (cJSON_IsString(c) && strcmp(c->valuestring, "required") == 0) {
		r->tool_force = TOOL_FORCE_ANY;
		return true;
	}
	if (cJSON_IsObject(c) && cJSON_IsString(type) &&
	    strcmp(type->valuestring, "function") == 0 && cJSON_IsString(name)) {
		r->tool_force = TOOL_FORCE_NAMED;
		r->tool_fn = orch_strndup(name->valuestring, strlen(name->valuestring));
		return r->tool_fn != NULL || params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	}
	return params_fail(pe, ORCH_EINVAL, "tool_choice",
	                   "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": "
	                   "\"function\", \"function\": {\"name\": ...}}");
}

/* Each tool {type: "function", function: {name, description?, parameters?, strict?}}. */
static bool
check_tools(const cJSON *t, struct params_err *pe)
{
	const cJSON *it;
	int k = 0;

	if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) > REQUEST_TOOLS_MAX)
		return params_fail(pe, ORCH_EINVAL, "tools",
		                   "'tools' must be an array of at most %d", REQUEST_TOOLS_MAX);
	cJSON_ArrayForEach(it, t)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type"),
		            *fn = cJSON_GetObjectItemCaseSensitive(it, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 ||
		    !cJSON_IsObject(fn) || !cJSON_IsString(name) || name->valuestring[0] == '\0')
			return params_fail(
			        pe, ORCH_EINVAL, "tools",
			        "each tool must be {\"type\": \"function\", \"function\": "
			        "{\"name\": ...}}");
		if (params != NULL && !cJSON_IsObject(params))
			return params_fail(
			        pe, ORCH_EINVAL, "tools",
			        "tools[%d].function.parameters must be a JSON Schema object", k);
		k++;
	}
	return true;
}

/*
 * A forced call: the functions it may call can be made a grammar (made here
 * for hermes and thrown away: the checks do not depend on the syntax, and
 * the grammar of the worker's syntax is made at dispatch); no other
 * constraint beside it.
 */
static bool
check_forced(const struct job_request *r, struct params_err *pe)
{
	char msg[480], *text = NULL;

	if (r->tools == NULL) /* none given, or tool_choice "none" */
		return params_fail(pe, ORCH_EINVAL, "tool_choice",
		                   "'tool_choice' \"required\" or a function needs 'tools'");
	if (r->grammar != NULL || r->n_stops > 0)
		return params_fail(pe, ORCH_EINVAL, "tool_choice",
		                   "a forced tool call is itself a grammar: it cannot be combined "
		                   "with 'grammar', a JSON 'response_format' or 'stop'");
	orch_err rv = tool_grammar(TOOL_SYNTAX_HERMES, r->tools, r->tool_fn, !r->single_tool, &text,
	                           msg, sizeof(msg));
	free(text);
	if (rv == ORCH_OK)
		return true;
	if (rv == ORCH_ENOMEM)
		return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	if (r->tool_fn != NULL && strncmp(msg, "no function named", 17) == 0)
		return params_fail(pe, ORCH_EINVAL, "tool_choice",
		                   "'tool_choice' names function '%.64s', which is not in 'tools'",
		                   r->tool_fn);
	if (strcmp(msg, "no tools") == 0)
		return params_fail(pe, ORCH_EINVAL, "tool_choice",
		                   "'tool_choice' \"required\" needs at least one tool in 'tools'");
	return params_fail(pe, ORCH_EINVAL, "tools", "cannot force a call (tool_choice): %s", msg);
}

bool
request_tools(const cJSON *root, struct job_request *r, struct params_err *pe)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tools");
	bool none = false, parallel = true;

	if (!choice(cJSON_GetObjectItemCaseSensitive(root, "tool_choice"), r, &none, pe) ||
	    !params_bool(root, "parallel_tool_calls", &parallel, pe))
		return false;
	r->single_tool = !parallel;
	if (t != NULL && !cJSON_IsNull(t)) {
		if (!check_tools(t, pe))
			return false;
		if (!none && (r->tools = cJSON_Duplicate(t, true)) == NULL)
			return params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
	}
	return r->tool_force == TOOL_FORCE_NO || check_forced(r, pe);
}
