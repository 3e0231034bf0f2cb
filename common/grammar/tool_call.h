#pragma once
/*
 * tool_call.h - the syntaxes in which chat models write a tool call, as
 * their chat templates teach them (docs/http-api.md, "Tool calls"):
 *
 *   hermes       <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>
 *                (Qwen2.5, Qwen3, Hermes 2/3; several calls follow each other)
 *   llama3_json  {"name": NAME, "parameters": ARGS} as the whole answer
 *                (Llama 3.1, 3.2, 3.3; one call a turn)
 *   harmony      a message to functions.NAME (gpt-oss; harmony.h)
 *
 * which one a template teaches, and the grammar that forces a call
 * (tool_choice "required" or a named function) with arguments that
 * validate against the function's parameters.
 */
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct cJSON;

enum tool_syntax {
	TOOL_SYNTAX_NONE, /* the template teaches no call syntax orch knows */
	TOOL_SYNTAX_HERMES,
	TOOL_SYNTAX_LLAMA3, /* "llama3_json" */
	TOOL_SYNTAX_HARMONY,
};

/* tool_syntax_name - "", "hermes", "llama3_json", "harmony". */
const char *tool_syntax_name(enum tool_syntax s);

/* tool_syntax_from_name - the syntax called @name (unknown names are TOOL_SYNTAX_NONE). */
enum tool_syntax tool_syntax_from_name(const char *name);

/*
 * tool_syntax_detect - the syntax the chat template @src (@n bytes) teaches:
 * hermes when it writes "<tool_call>" with JSON "arguments" in it (not
 * Qwen3-Coder's and GLM's <function=NAME> XML), llama3_json when it asks for
 * {"name": function name, "parameters": ...}; else NONE (harmony is a
 * property of the vocabulary, not of the template: harmony.h).
 */
enum tool_syntax tool_syntax_detect(const char *src, size_t n);

/* A function name orch can put in a grammar: 1-64 of a-z, A-Z, 0-9, _ and - (OpenAI's rule). */
bool tool_name_ok(const char *name);

/*
 * tool_grammar - GBNF text (start rule "root", free()d by the caller) whose
 * sentences are the calls @s writes of the functions @tools (an OpenAI
 * tools array, already checked: each {"type": "function", "function":
 * {"name", "parameters"?}}): any of them, or only @only when not NULL; one
 * call, or with @parallel several (hermes only). A function without
 * parameters takes {}. Harmony's is the call's message from its channel
 * name on, "commentary to=functions.NAME <|constrain|>json<|message|>ARGS"
 * with the control tokens as token terminals (grammar.h): the worker wraps
 * it in the messages around it. ORCH_EUNSUPPORTED for none, ORCH_EINVAL
 * when a name or a schema cannot be made a grammar (@msg names which),
 * ORCH_ENOMEM.
 */
orch_err tool_grammar(enum tool_syntax s, const struct cJSON *tools, const char *only,
                      bool parallel, char **ret, char *msg, size_t msg_n);
