/*
 * job_tools.c - a chat job's tool calls: the forcing grammar and the
 * parser at dispatch, the parser's pieces as events (job_tools.h).
 */
#include "job_tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "grammar/tool_call.h"
#include "jobs.h"
#include "toolparse.h"

/* A call's wire index, apart from any harmony message's (the worker's small numbers). */
#define CALL_WIRE 0x40000000u

/* Where the parser's pieces go: the job and the token they came with. */
struct sink {
	struct orchd *d;
	struct job *j;
	uint32_t index;
};

static void
on_piece(void *ctx, enum tp_kind kind, const char *s, size_t n)
{
	struct sink *k = ctx;
	struct job *j = k->j;
	uint32_t call = CALL_WIRE + toolparse_calls(j->tp) - 1;
	struct job_event ev = {.type = EV_TOKEN, .index = k->index, .text = (char *)(uintptr_t)s};

	/* parallel_tool_calls false: the first call is the answer's; later ones are dropped */
	if (j->req.single_tool && kind != TP_CONTENT && toolparse_calls(j->tp) > 1)
		return;
	if (kind == TP_CALL) { /* its job_msg now; its first event comes with its arguments */
		char *rcpt = orch_malloc(n + sizeof("functions."));
		if (rcpt != NULL) {
			memcpy(rcpt, "functions.", 10);
			memcpy(rcpt + 10, s, n + 1);
			jobs_msg(j, call, "", rcpt);
		}
		orch_free(rcpt);
		return;
	}
	/* a call's job_msg was made above (out of memory: "functions." names nobody) */
	if (kind == TP_ARGS && (ev.msg = jobs_msg(j, call, "", "functions.")) == 0)
		return; /* out of memory: these arguments are lost, as a lost token's text is */
	jobs_event(k->d, j, &ev);
}

__attribute__((format(printf, 4, 5))) static bool
fail(struct orchd *d, struct job *j, orch_err code, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jobs_fail(d, j, code, msg);
	return false;
}

const char *
job_tools_refusal(const char *model, enum tool_syntax s, char *buf, size_t n)
{
	if (s != TOOL_SYNTAX_NONE)
		return NULL;
	snprintf(buf, n,
	         "model '%s' cannot be made to call a tool: tool_choice \"required\" or a named "
	         "function needs a model that writes calls in a syntax orch knows (a chat "
	         "template that teaches hermes or llama3_json, or harmony); this one has none",
	         model);
	return buf;
}

bool
job_tools_dispatch(struct orchd *d, enum tool_syntax s, struct job *j)
{
	char msg[400], *g = NULL;

	toolparse_free(j->tp); /* a job sent again after its worker was lost starts afresh */
	j->tp = NULL;
	j->req.grammar_call = false;
	if (j->kind != JOB_OAI_CHAT || j->req.tools == NULL)
		return true;
	if (j->req.tool_force != TOOL_FORCE_NO) {
		orch_err rv = tool_grammar(s, j->req.tools, j->req.tool_fn, !j->req.single_tool, &g,
		                           msg, sizeof(msg));
		if (rv == ORCH_EUNSUPPORTED)
			return fail(d, j, ORCH_EINVAL, "%s",
			            job_tools_refusal(j->model_name, s, msg, sizeof(msg)));
		if (rv == ORCH_ENOMEM)
			return fail(d, j, ORCH_ENOMEM, "out of memory");
		if (rv != ORCH_OK)
			return fail(d, j, ORCH_EINVAL, "tool_choice: %s", msg);
		free(j->req.grammar);
		j->req.grammar = g;
		j->req.grammar_call = s == TOOL_SYNTAX_HARMONY; /* the worker wraps it */
		j->req.grammar_param = "tool_choice";
	}
	if (s != TOOL_SYNTAX_HERMES && s != TOOL_SYNTAX_LLAMA3)
		return true; /* harmony: the worker splits it; none: all is content */
	if ((j->tp = toolparse_new(s, on_piece, NULL)) == NULL)
		return fail(d, j, ORCH_ENOMEM, "out of memory");
	return true;
}

void
job_tools_text(struct orchd *d, struct job *j, uint32_t index, const char *text)
{
	struct sink k = {d, j, index};

	toolparse_set_ctx(j->tp, &k);
	if (toolparse_feed(j->tp, text, strlen(text)) != ORCH_OK) /* reported once */
		orch_log(ORCH_LOG_WARNING, "tool_parse", "job=%s err=ENOMEM", j->correlation);
}

void
job_tools_end(struct orchd *d, struct job *j, uint32_t tokens_out, enum orch_finish *f)
{
	struct sink k = {d, j, tokens_out ? tokens_out - 1 : 0};

	if (j->tp == NULL && j->req.grammar_call && *f == ORCH_FINISH_TOOL_CALLS &&
	    j->req.tool_force == TOOL_FORCE_NAMED)
		*f = ORCH_FINISH_STOP; /* harmony: OpenAI ends a named function's call with "stop"
		                        */
	if (j->tp == NULL || j->state == JOB_DONE)
		return;
	toolparse_set_ctx(j->tp, &k);
	if (toolparse_finish(j->tp) != ORCH_OK)
		orch_log(ORCH_LOG_WARNING, "tool_parse", "job=%s err=ENOMEM", j->correlation);
	toolparse_free(j->tp); /* what it held is out: free it now, not when the job goes */
	j->tp = NULL;
	/* OpenAI (and vLLM) end a named function's forced call with "stop" */
	if (j->n_tools > 0 && (*f == ORCH_FINISH_EOS || *f == ORCH_FINISH_STOP) &&
	    j->req.tool_force != TOOL_FORCE_NAMED)
		*f = ORCH_FINISH_TOOL_CALLS;
}
