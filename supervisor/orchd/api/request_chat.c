/*
 * request_chat.c - the chat part of a /v1/chat/completions body (request.h):
 * the messages, and what else the chat template sees — tools, tool_choice,
 * reasoning_effort and chat_template_kwargs.
 *
 * Each message becomes {role, content[, extra]}: content a string (text
 * parts joined; "" for an assistant message that only calls tools), extra
 * the other fields the template reads, serialized: tool_calls (their
 * arguments parsed from the JSON string OpenAI sends into the object
 * templates print), thinking (from reasoning_content), name, tool_call_id.
 * Everything the template will render counts against max_prompt_chars.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "config.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

/* The text of a chat message's content: a string or an array of text parts. */
static char *
content_text(const cJSON *c)
{
	struct sbuf b = {0};
	const cJSON *part;

	if (cJSON_IsString(c))
		return orch_strndup(c->valuestring, strlen(c->valuestring));
	if (!cJSON_IsArray(c))
		return NULL;
	cJSON_ArrayForEach(part, c)
	{
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type"),
		            *text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 ||
		    !cJSON_IsString(text)) {
			sbuf_fini(&b);
			return NULL;
		}
		sbuf_puts(&b, text->valuestring);
	}
	if (b.p == NULL)
		sbuf_puts(&b, "");
	return sbuf_err(&b) == ORCH_OK ? sbuf_take(&b, NULL) : NULL;
}

static bool
role_ok(const cJSON *role)
{
	static const char *const roles[] = {"system", "user", "assistant", "developer", "tool"};

	if (!cJSON_IsString(role))
		return false;
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strcmp(role->valuestring, roles[i]) == 0)
			return true;
	return false;
}

/* The characters of @v as the template will print it (JSON text for a non-string). */
static uint64_t
json_chars(const cJSON *v)
{
	if (cJSON_IsString(v))
		return params_utf8_chars(v->valuestring);
	char *s = cJSON_PrintUnformatted(v);
	uint64_t n = s ? params_utf8_chars(s) : UINT64_MAX / 2;
	free(s);
	return n;
}

/*
 * An assistant message's tool_calls, normalized into @extra: each
 * {id, type: "function", function: {name, arguments}} with arguments parsed
 * when they are a JSON text (kept a string when not).
 */
static bool
tool_calls(const cJSON *calls, cJSON *extra, uint64_t *chars, struct params_err *pe)
{
	const cJSON *it;
	cJSON *out = cJSON_AddArrayToObject(extra, "tool_calls");

	if (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) == 0)
		return params_fail(pe, ORCH_EINVAL, "messages",
		                   "a message's 'tool_calls' must be a non-empty array");
	cJSON_ArrayForEach(it, calls)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"),
		            *fn = cJSON_GetObjectItemCaseSensitive(it, "function");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name"),
		            *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
		if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || name->valuestring[0] == '\0' ||
		    (args != NULL && !cJSON_IsString(args) && !cJSON_IsObject(args)))
			return params_fail(pe, ORCH_EINVAL, "messages",
			                   "each tool call needs a function with a name and "
			                   "arguments (a JSON string)");
		cJSON *c = cJSON_CreateObject(), *f;
		cJSON_AddItemToArray(out, c);
		if (cJSON_IsString(id))
			cJSON_AddStringToObject(c, "id", id->valuestring);
		cJSON_AddStringToObject(c, "type", "function");
		f = cJSON_AddObjectToObject(c, "function");
		cJSON_AddStringToObject(f, "name", name->valuestring);
		cJSON *parsed = cJSON_IsString(args) ? cJSON_Parse(args->valuestring) : NULL;
		if (parsed != NULL)
			cJSON_AddItemToObject(f, "arguments", parsed);
		else if (args != NULL)
			cJSON_AddItemToObject(f, "arguments", cJSON_Duplicate(args, true));
		else
			cJSON_AddObjectToObject(f, "arguments");
		*chars += params_utf8_chars(name->valuestring) + (args ? json_chars(args) : 2);
	}
	return true;
}

/* The fields besides role and content that the template reads, into @extra. */
static bool
message_extra(const cJSON *it, const char *role, cJSON *extra, uint64_t *chars,
              struct params_err *pe)
{
	static const char *const strings[][2] = {{"reasoning_content", "thinking"},
	                                         {"name", "name"},
	                                         {"tool_call_id", "tool_call_id"}};
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(it, "tool_calls");

	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, strings[i][0]);
		if (v == NULL || cJSON_IsNull(v))
			continue;
		if (!cJSON_IsString(v))
			return params_fail(pe, ORCH_EINVAL, "messages",
			                   "a message's '%s' must be a string", strings[i][0]);
		cJSON_AddStringToObject(extra, strings[i][1], v->valuestring);
		*chars += params_utf8_chars(v->valuestring);
	}
	if (calls == NULL || cJSON_IsNull(calls))
		return true;
	if (strcmp(role, "assistant") != 0)
		return params_fail(pe, ORCH_EINVAL, "messages",
		                   "only an assistant message may have 'tool_calls'");
	return tool_calls(calls, extra, chars, pe);
}

/* One message of @it into @r->messages; @chars counts what the template will print. */
static bool
message(const cJSON *it, struct job_request *r, uint64_t *chars, struct params_err *pe)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role"),
	            *content = cJSON_GetObjectItemCaseSensitive(it, "content");
	cJSON *extra = cJSON_CreateObject(), *m = cJSON_CreateObject();
	char *text = NULL;
	bool ok = false;

	if (extra == NULL || m == NULL) {
		params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		goto out;
	}
	cJSON_AddItemToArray(r->messages, m);
	if (!role_ok(role)) {
		params_fail(
		        pe, ORCH_EINVAL, "messages",
		        "each message needs a role of system, developer, user, assistant or tool");
		goto out;
	}
	if (!message_extra(it, role->valuestring, extra, chars, pe))
		goto out;
	bool calls = cJSON_GetObjectItemCaseSensitive(extra, "tool_calls") != NULL;
	if ((content == NULL || cJSON_IsNull(content)) && calls)
		text = orch_strndup("", 0); /* an assistant turn that only calls tools */
	else if (content != NULL)
		text = content_text(content);
	if (text == NULL) {
		params_fail(pe, ORCH_EINVAL, "messages",
		            "each message needs a content string or an array of text parts");
		goto out;
	}
	*chars += params_utf8_chars(text);
	cJSON_AddStringToObject(m, "role", role->valuestring);
	cJSON_AddStringToObject(m, "content", text);
	if (extra->child != NULL) {
		char *s = cJSON_PrintUnformatted(extra);
		if (s == NULL || cJSON_AddStringToObject(m, "extra", s) == NULL) {
			free(s);
			params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
			goto out;
		}
		free(s);
	}
	ok = true;
out:
	orch_free(text);
	cJSON_Delete(extra);
	return ok;
}

/* The tools request_tools kept, into @vars for the template. */
static bool
tools(const cJSON *root, struct job_request *r, cJSON *vars, uint64_t *chars, struct params_err *pe)
{
	if (!request_tools(root, r, pe))
		return false;
	if (r->tools == NULL)
		return true;
	*chars += json_chars(r->tools);
	return cJSON_AddItemToObject(vars, "tools", cJSON_Duplicate(r->tools, true)) ||
	       params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
}

/* reasoning_effort and chat_template_kwargs, into @vars. */
static bool
template_vars(const cJSON *root, cJSON *vars, uint64_t *chars, struct params_err *pe)
{
	static const char *const reserved[] = {"messages", "add_generation_prompt", "bos_token",
	                                       "eos_token", NULL};
	const cJSON *effort = cJSON_GetObjectItemCaseSensitive(root, "reasoning_effort");
	const cJSON *kw = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs"), *it;

	if (effort != NULL && !cJSON_IsNull(effort)) {
		if (!cJSON_IsString(effort) || (strcmp(effort->valuestring, "low") != 0 &&
		                                strcmp(effort->valuestring, "medium") != 0 &&
		                                strcmp(effort->valuestring, "high") != 0))
			return params_fail(
			        pe, ORCH_EINVAL, "reasoning_effort",
			        "'reasoning_effort' must be \"low\", \"medium\" or \"high\"");
		cJSON_AddStringToObject(vars, "reasoning_effort", effort->valuestring);
	}
	if (kw == NULL || cJSON_IsNull(kw))
		return true;
	if (!cJSON_IsObject(kw))
		return params_fail(pe, ORCH_EINVAL, "chat_template_kwargs",
		                   "'chat_template_kwargs' must be an object");
	/* the request's own fields in @vars (tools, reasoning_effort) win over a kwarg of the
	 * same name; only those are looked up: a lookup in the growing @vars would make 300k
	 * kwargs quadratic (the keys of one object are unique: params_body checked) */
	int n_own = cJSON_GetArraySize(vars);
	cJSON_ArrayForEach(it, kw)
	{
		for (const char *const *k = reserved; *k; k++)
			if (strcmp(it->string, *k) == 0)
				return params_fail(pe, ORCH_EINVAL, "chat_template_kwargs",
				                   "'chat_template_kwargs' may not set '%s'", *k);
		bool own = false;
		const cJSON *v = vars->child;
		for (int i = 0; i < n_own && !own; i++, v = v->next)
			own = strcmp(v->string, it->string) == 0;
		if (own)
			continue;
		*chars += json_chars(it);
		cJSON_AddItemToObject(vars, it->string, cJSON_Duplicate(it, true));
	}
	return true;
}

bool
request_chat_parse(const struct orchd_config *cfg, const cJSON *root, struct job_request *r,
                   struct params_err *pe)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages"), *it;
	cJSON *vars = NULL;
	uint64_t chars = 0;
	bool ok = false;

	if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
		return params_fail(pe, ORCH_EINVAL, "messages",
		                   "'messages' must be a non-empty array of messages");
	if (cJSON_GetArraySize(msgs) > (int)cfg->max_chat_messages)
		return params_fail(pe, ORCH_EINVAL, "messages",
		                   "'messages' has %d messages; this server takes at most %u "
		                   "(max_chat_messages in [server])",
		                   cJSON_GetArraySize(msgs), cfg->max_chat_messages);
	if ((r->messages = cJSON_CreateArray()) == NULL || (vars = cJSON_CreateObject()) == NULL) {
		params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(it, msgs)
	{
		if (!message(it, r, &chars, pe))
			goto out;
	}
	if (!tools(root, r, vars, &chars, pe) || !template_vars(root, vars, &chars, pe))
		goto out;
	if (chars > cfg->max_prompt_chars) {
		params_fail(pe, ORCH_EINVAL, "messages",
		            "the messages' contents must be at most %u characters in all "
		            "(max_prompt_chars; tools, tool calls and reasoning count too)",
		            cfg->max_prompt_chars);
		goto out;
	}
	if (vars->child != NULL && (r->template_vars = cJSON_PrintUnformatted(vars)) == NULL) {
		params_fail(pe, ORCH_ENOMEM, NULL, "out of memory");
		goto out;
	}
	ok = true;
out:
	cJSON_Delete(vars);
	return ok;
}
