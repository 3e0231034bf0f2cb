#pragma once
/*
 * toolparse.h - a chat answer's tool calls, read back from the text of a
 * model whose template teaches the hermes or llama3_json syntax
 * (grammar/tool_call.h) as the text streams in: the text is split into
 * content, the start of a call (its function's name) and the call's
 * arguments, the arguments streamed as they come.
 *
 * hermes: every <tool_call>...</tool_call> is a call; text around the calls
 * is content (spaces before a call, and after the last one at the end, are
 * dropped). llama3_json: an answer that begins with {"name": ...,
 * "parameters": ...} is a call (several joined by ";"); any other answer is
 * content. A call whose text does not start as {"name": "...",
 * "arguments": (or "parameters" for llama3_json) is held whole and parsed
 * as JSON at its end (llama3_json: at the end of the answer); text that is
 * not a call after all is released as content, as written. What a call
 * drops is its syntax: the tags, the braces around the arguments, ";".
 * Thread: the loop (one parser per job).
 */
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/tool_call.h"

/* What a piece of the answer is. */
enum tp_kind {
	TP_CONTENT, /* text of the answer */
	TP_CALL,    /* a new call begins: the text is its function's name */
	TP_ARGS,    /* the current call's arguments (JSON text), a piece at a time */
};

/* Receives the pieces, in order; @s is NUL-terminated (@n bytes, never 0). */
typedef void (*tp_emit_fn)(void *ctx, enum tp_kind kind, const char *s, size_t n);

struct toolparse;

/* toolparse_new - a parser for syntax @s (hermes or llama3_json); NULL otherwise or on ENOMEM. */
struct toolparse *toolparse_new(enum tool_syntax s, tp_emit_fn emit, void *ctx);

/* toolparse_feed - the next @n bytes of the answer; ORCH_ENOMEM (pieces may be lost). */
orch_err toolparse_feed(struct toolparse *tp, const char *s, size_t n);

/* toolparse_finish - the answer ended: release what is held (a call never closed is parsed whole).
 */
orch_err toolparse_finish(struct toolparse *tp);

/* toolparse_calls - calls begun so far. */
uint32_t toolparse_calls(const struct toolparse *tp);

/* toolparse_set_ctx - emit to @ctx from now on (the caller's context changes per feed). */
void toolparse_set_ctx(struct toolparse *tp, void *ctx);

/* toolparse_free - free @tp (NULL-safe). */
void toolparse_free(struct toolparse *tp);
