#pragma once
/*
 * job_tools.h - a chat job's tool calls on a model whose template teaches
 * the hermes or llama3_json syntax (grammar/tool_call.h): when the job goes
 * to a worker, the grammar that forces a call (tool_choice "required" or a
 * function) made for that worker's syntax, and the parser (toolparse.h)
 * that reads calls back from the text; the parser's pieces become the
 * job's events as harmony's messages do (a call is a job_msg whose
 * recipient is "functions.NAME"), so both APIs show calls one way.
 * Harmony models (gpt-oss) are split by the worker instead. Thread: the loop.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/finish.h"
#include "grammar/tool_call.h"

struct job;
struct orchd;

/*
 * job_tools_refusal - why a call cannot be forced on model @model whose
 * syntax is @s (in @buf, @n bytes), or NULL when it can.
 */
const char *job_tools_refusal(const char *model, enum tool_syntax s, char *buf, size_t n);

/*
 * job_tools_dispatch - @j is being handed to a worker whose model writes calls in
 * syntax @s: set its forcing grammar
 * and its parser (none on harmony, whose calls the worker reports as
 * messages). False when the job cannot run there and was failed (a forced
 * call on a model with no call syntax orch knows; out of memory).
 */
bool job_tools_dispatch(struct orchd *d, enum tool_syntax s, struct job *j);

/* job_tools_text - token @index's @text (not harmony's) through @j's parser into events. */
void job_tools_text(struct orchd *d, struct job *j, uint32_t index, const char *text);

/*
 * job_tools_end - @j ended after @tokens_out tokens with *@f: the parser's
 * held text into events first; a turn that called tools and ended on its
 * own (eos, stop) ends with tool_calls, as OpenAI's does, but a named
 * function's forced call (any syntax) with stop, as OpenAI's does too.
 */
void job_tools_end(struct orchd *d, struct job *j, uint32_t tokens_out, enum orch_finish *f);
