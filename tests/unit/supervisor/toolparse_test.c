/*
 * toolparse_test.c - tool calls read back from streamed answers
 * (toolparse.h), for both syntaxes: each answer fed whole, a byte at a
 * time, and split at every byte, must give the same content, calls and
 * arguments; calls written out of the expected order, arguments given as a
 * string, text that only looks like a call, answers cut short.
 */
#include "t.h"

#include "base/sbuf.h"
#include "toolparse.h"

/* The pieces as "C[text]", "N[name]", "A[args]", a kind's consecutive pieces joined. */
struct seen {
	struct sbuf s;
	int last;
	uint32_t names; /* TP_CALL pieces so far */
	struct toolparse *tp;
};

static void
on_piece(void *ctx, enum tp_kind k, const char *s, size_t n)
{
	struct seen *v = ctx;
	static const char tag[] = {'C', 'N', 'A'};

	if (strlen(s) != n || n == 0)
		sbuf_puts(&v->s, "<BAD PIECE>");
	v->names += k == TP_CALL;
	if (k != TP_CONTENT && toolparse_calls(v->tp) != v->names) /* the call a piece is for */
		sbuf_puts(&v->s, "<WRONG CALL>");
	if (v->last != (int)k || k == TP_CALL) {
		if (v->last >= 0)
			sbuf_putc(&v->s, ']');
		sbuf_printf(&v->s, "%c[", tag[k]);
	}
	sbuf_put(&v->s, s, n);
	v->last = (int)k;
}

/* @in fed @step bytes at a time, as a transcript. */
static char *
run(enum tool_syntax syn, const char *in, size_t step)
{
	struct seen v = {.last = -1};
	struct toolparse *tp = v.tp = toolparse_new(syn, on_piece, &v);
	size_t n = strlen(in);

	for (size_t i = 0; i < n; i += step)
		toolparse_feed(tp, in + i, n - i < step ? n - i : step);
	toolparse_finish(tp);
	if (v.last >= 0)
		sbuf_putc(&v.s, ']');
	toolparse_free(tp);
	return sbuf_take(&v.s, NULL);
}

/* A split at @at: the two halves fed one after the other. */
static char *
run_split(enum tool_syntax syn, const char *in, size_t at)
{
	struct seen v = {.last = -1};
	struct toolparse *tp = v.tp = toolparse_new(syn, on_piece, &v);

	toolparse_feed(tp, in, at);
	toolparse_feed(tp, in + at, strlen(in) - at);
	toolparse_finish(tp);
	if (v.last >= 0)
		sbuf_putc(&v.s, ']');
	toolparse_free(tp);
	return sbuf_take(&v.s, NULL);
}

/* @got (freed here) is @want; @how says how @in was fed. */
static bool
is(const char *in, const char *how, size_t at, char *got, const char *want)
{
	bool ok = got != NULL && strcmp(got, want) == 0;

	if (!ok)
		fprintf(stderr, "%s, %s %zu:\n  got  %s\n  want %s\n", in, how, at,
		        got ? got : "(null)", want);
	free(got);
	return ok;
}

static void
same(enum tool_syntax syn, const char *in, const char *want)
{
	size_t n = strlen(in);

	T_TRUE(is(in, "whole", n, run(syn, in, n ? n : 1), want));
	T_TRUE(is(in, "a byte at a time", 1, run(syn, in, 1), want));
	for (size_t at = 1; at < n; at++)
		T_TRUE(is(in, "split at", at, run_split(syn, in, at), want));
}

#define H          TOOL_SYNTAX_HERMES
#define L          TOOL_SYNTAX_LLAMA3
#define CALL(json) "<tool_call>\n" json "\n</tool_call>"
#define W          "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"

static void
test_hermes(void)
{
	same(H, "", "");
	same(H, "Hello", "C[Hello]");
	same(H, "Hi  \n", "C[Hi  \n]");
	same(H, CALL(W), "N[get_weather]A[{\"city\": \"Paris\"}]");
	same(H,
	     "Let me check.\n" CALL(
	             W) "\n<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>\n",
	     "C[Let me check.]N[get_weather]A[{\"city\": \"Paris\"}]N[now]A[{}]");
	same(H, CALL(W) " Done.", "N[get_weather]A[{\"city\": \"Paris\"}]C[ Done.]");
	/* braces and quotes inside strings do not end the arguments */
	same(H,
	     CALL("{\"name\": \"f\", \"arguments\": {\"s\": \"}\\\"{]\", \"t\": [1, {\"u\": null}]}}"),
	     "N[f]A[{\"s\": \"}\\\"{]\", \"t\": [1, {\"u\": null}]}]");
	/* out of order, or arguments as a string: parsed whole */
	same(H, CALL("{\"arguments\": {\"a\": 1}, \"name\": \"f\"}"), "N[f]A[{\"a\":1}]");
	same(H, CALL("{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}"), "N[f]A[{\"a\": 1}]");
	same(H, CALL("{\"name\": \"f\", \"arguments\": 5}"), "N[f]A[5]");
	/* not a call after all: the text as it was */
	same(H, "<tool_call>oops</tool_call> ok", "C[<tool_call>oops</tool_call> ok]");
	same(H, "x<tool_callx", "C[x<tool_callx]");
	same(H, "Use \n<tool_call>tags</tool_call> ok", "C[Use \n<tool_call>tags</tool_call> ok]");
	same(H, "a \n<tool_call>{\"n", "C[a \n<tool_call>{\"n]");
	same(H, "a <tool_ca", "C[a <tool_ca]");
	same(H, "<tool_call>\n{\"na", "C[<tool_call>\n{\"na]");
	same(H, "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>",
	     "C[<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>]");
	/* held whole: what follows the JSON must be spaces; empty arguments are {} */
	same(H, CALL("{\"arguments\": {}, \"name\": \"f\"} junk"),
	     "C[" CALL("{\"arguments\": {}, \"name\": \"f\"} junk") "]");
	same(H, CALL("{\"name\": \"f\", \"arguments\": \"\"}"), "N[f]A[{}]");
	/* a close tag left out: the next call, or the text after, is not lost */
	same(H,
	     "<tool_call>{\"name\":\"a\",\"arguments\":{}}\n<tool_call>{\"name\":\"b\",\"arguments\":[1]}</tool_call>",
	     "N[a]A[{}]N[b]A[[1]]");
	same(H, "<tool_call>{\"name\":\"a\",\"arguments\":{}} after", "N[a]A[{}]C[after]");
	/* a tag in prose, then a real call */
	same(H, "I use <tool_call> tags. <tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>",
	     "C[I use <tool_call> tags. ]N[a]A[{}]");
	/* cut by max_tokens inside the arguments: what came is the call's */
	same(H, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x", "N[f]A[{\"a\": \"x]");
}

static void
test_llama3(void)
{
	same(L, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
	     "N[get_weather]A[{\"city\": \"Paris\"}]");
	same(L,
	     "  {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"x\": [1, {\"y\": 2}]}}",
	     "N[a]A[{}]N[b]A[{\"x\": [1, {\"y\": 2}]}]");
	same(L, "Hello {x}", "C[Hello {x}]");
	same(L, "{\"foo\": 1}", "C[{\"foo\": 1}]");
	same(L, "{\"parameters\": {}, \"name\": \"f\"}", "N[f]A[{}]");
	/* held whole, then more: the next call, text */
	same(L,
	     "{\"name\": \"a\\u0062\", \"parameters\": {}}; {\"parameters\": {\"x\": 1}, \"name\": \"c\"}",
	     "N[ab]A[{}]N[c]A[{\"x\":1}]");
	same(L, "{\"parameters\": {}, \"name\": \"f\"} then text", "N[f]A[{}]C[then text]");
	same(L, " \n", "C[ \n]");
	same(L, "{\"name\": \"f\", \"parameters\": {\"n\": 1}} and more",
	     "N[f]A[{\"n\": 1}]C[and more]");
}

/* Long runs of spaces are released or held whole, never rescanned per byte without bound. */
static void
test_spaces(void)
{
	char in[1024], want[1100];
	size_t n;

	memset(in, ' ', sizeof(in));
	in[0] = 'a';
	in[600] = 'b';
	in[601] = '\0';
	snprintf(want, sizeof(want), "C[%s]", in);
	same(H, in, want);
	n = (size_t)snprintf(in, sizeof(in), "<tool_call>");
	memset(in + n, ' ', 600);
	snprintf(in + n + 600, sizeof(in) - n - 600,
	         "{\"name\": \"f\", \"arguments\": {}}</tool_call>");
	same(H, in, "N[f]A[{}]");
}

static void
test_other_syntaxes(void)
{
	struct seen v = {.last = -1};

	T_TRUE(toolparse_new(TOOL_SYNTAX_NONE, on_piece, &v) == NULL);
	T_TRUE(toolparse_new(TOOL_SYNTAX_HARMONY, on_piece, &v) == NULL);
}

static void
ignore(void *ctx, enum tp_kind kind, const char *s, size_t n)
{
	(void)ctx, (void)kind, (void)s, (void)n;
}

/* One answer with every kind of hold, through a parser whose allocations may fail. */
static orch_err
oom_once(void *ctx)
{
	static const char *const answers[] = {
	        "Sure. " CALL(W) "\n" CALL("{\"arguments\": {\"a\": 1}, \"name\": \"f\"}") " ok",
	        "{\"parameters\": {}, \"name\": \"f\"}; {\"name\": \"g\", \"parameters\": {}} end"};
	struct toolparse *tp = toolparse_new(*(const enum tool_syntax *)ctx, ignore, NULL);
	orch_err rv = ORCH_OK, e;

	if (tp == NULL)
		return ORCH_ENOMEM;
	const char *a = answers[*(const enum tool_syntax *)ctx == L];
	size_t n = strlen(a);
	for (size_t i = 0; i < n; i += 7) /* in pieces of 7 bytes, the last shorter */
		if ((e = toolparse_feed(tp, a + i, n - i < 7 ? n - i : 7)) != ORCH_OK)
			rv = e;
	if ((e = toolparse_finish(tp)) != ORCH_OK)
		rv = e;
	toolparse_free(tp);
	return rv;
}

static void
test_oom(void)
{
	enum tool_syntax h = H, l = L;

	T_TRUE(t_oom_loop(oom_once, &h, 10000) > 0);
	T_TRUE(t_oom_loop(oom_once, &l, 10000) > 0);
}

int
main(void)
{
	T_RUN(test_hermes);
	T_RUN(test_llama3);
	T_RUN(test_spaces);
	T_RUN(test_other_syntaxes);
	T_RUN(test_oom);
	return t_done();
}
