/*
 * toolparse.c - tool calls read back from a streaming answer (toolparse.h).
 *
 * Design notes. The parser runs a byte at a time (answers are short; the
 * states stay simple) and collects what it releases in @out, handed to the
 * caller when the kind changes and at the end of each feed, so one token's
 * text gives at most a few pieces. @buf holds what is not released yet:
 * in text (hermes), trailing whitespace and a possible start of
 * "<tool_call>"; before a llama3 answer's first byte, its spaces; in a
 * call's head and a call held whole, everything from the spaces before its
 * start on, so that what turns out to be no call is released as it was;
 * after the arguments (hermes), the text up to </tool_call>. Every hold is
 * bounded or linear: spaces beyond SPACES_MAX are released, a head longer
 * than HEAD_MAX is held whole instead, and a byte never rescans more than
 * those, so a client cannot make the loop's thread spin on a long run of
 * spaces.
 */
#include "toolparse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/sbuf.h"

#define TAG_OPEN   "<tool_call>"
#define TAG_CLOSE  "</tool_call>"
#define NAME_MAX_  64
#define SPACES_MAX 256 /* trailing spaces held in text */
#define HEAD_MAX   512 /* bytes of a call's head, past its tag and spaces */

enum state {
	S_START, /* llama3_json: before the answer's first non-space byte */
	S_TEXT,  /* content */
	S_HEAD,  /* a call's start, up to its arguments' first byte */
	S_ARGS,  /* the arguments' JSON value */
	S_TAIL,  /* after the arguments: to </tool_call> (hermes), or "}" and ";" (llama3) */
	S_SEP,   /* llama3_json: after ";", before the next call's "{" */
	S_RAW,   /* a call not written as expected: held whole, parsed at its end */
};

struct toolparse {
	enum tool_syntax syn;
	enum state st;
	tp_emit_fn emit;
	void *ctx;
	struct sbuf buf, out;
	enum tp_kind out_kind;
	size_t lead; /* hermes S_HEAD, S_RAW: spaces before the tag in @buf */
	int depth;   /* S_ARGS: brackets open */
	bool in_str, esc, primitive;
	uint32_t calls;
	orch_err err;
};

static bool
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Hand over the pieces collected. */
static void
flush(struct toolparse *tp)
{
	if (tp->out.oom)
		tp->err = ORCH_ENOMEM;
	if (tp->out.n > 0 && !tp->out.oom)
		tp->emit(tp->ctx, tp->out_kind, tp->out.p, tp->out.n);
	sbuf_clear(&tp->out);
}

static void
put(struct toolparse *tp, enum tp_kind k, const char *s, size_t n)
{
	if (n == 0)
		return;
	if (k != tp->out_kind || k == TP_CALL)
		flush(tp);
	tp->out_kind = k;
	sbuf_put(&tp->out, s, n);
	if (k == TP_CALL)
		flush(tp);
}

static void
begin_call(struct toolparse *tp, const char *name, size_t n)
{
	flush(tp); /* the last call's arguments go out as its own */
	tp->calls++;
	put(tp, TP_CALL, name, n);
	tp->depth = 0;
	tp->in_str = tp->esc = tp->primitive = false;
}

/* Whether @n bytes at @s end with @lit. */
static bool
ends_with(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	return n >= k && memcmp(s + n - k, lit, k) == 0;
}

/* ---- a call's head: {"name": "NAME", "arguments": ---- */

enum match { M_NO = -1, M_MORE = 0, M_YES = 1 };

static void step(struct toolparse *tp, char c);
static void args_byte(struct toolparse *tp, char c);

/* @lit at @s[*i..n): M_YES (advanced), M_MORE (a prefix of it ends the text) or M_NO. */
static enum match
expect(const char *s, size_t n, size_t *i, const char *lit)
{
	size_t k = strlen(lit), have = n - *i < k ? n - *i : k;

	if (memcmp(s + *i, lit, have) != 0)
		return M_NO;
	if (have < k)
		return M_MORE;
	*i += k;
	return M_YES;
}

static void
skip_ws(const char *s, size_t n, size_t *i)
{
	while (*i < n && is_ws(s[*i]))
		(*i)++;
}

/*
 * Whether @s (@n bytes, from the call's "{" or the spaces before it) is a
 * head whose arguments begin at its last byte; the name into @name.
 */
static enum match
match_head(const struct toolparse *tp, const char *s, size_t n, char *name, size_t *ret_len)
{
	const char *keys[2] = {"\"arguments\"",
	                       tp->syn == TOOL_SYNTAX_LLAMA3 ? "\"parameters\"" : NULL};
	size_t i = 0, start;
	enum match m;

	skip_ws(s, n, &i);
	if ((m = expect(s, n, &i, "{")) != M_YES)
		return m;
	skip_ws(s, n, &i);
	if ((m = expect(s, n, &i, "\"name\"")) != M_YES)
		return m;
	skip_ws(s, n, &i);
	if ((m = expect(s, n, &i, ":")) != M_YES)
		return m;
	skip_ws(s, n, &i);
	if ((m = expect(s, n, &i, "\"")) != M_YES)
		return m;
	for (start = i; i < n && s[i] != '"'; i++)
		if (s[i] == '\\' || (unsigned char)s[i] < 0x20 || i - start >= NAME_MAX_)
			return M_NO; /* a name to decode: leave it to the JSON parser */
	if (i == n)
		return M_MORE;
	if (i == start)
		return M_NO;
	memcpy(name, s + start, i - start);
	*ret_len = i - start;
	i++;
	skip_ws(s, n, &i);
	if ((m = expect(s, n, &i, ",")) != M_YES)
		return m;
	skip_ws(s, n, &i);
	size_t at = i;
	m = expect(s, n, &at, keys[0]);
	if (m == M_NO && keys[1] != NULL)
		m = expect(s, n, &at, keys[1]);
	if (m != M_YES)
		return m;
	i = at;
	skip_ws(s, n, &i);
	if ((m = expect(s, n, &i, ":")) != M_YES)
		return m;
	skip_ws(s, n, &i);
	return i + 1 == n ? M_YES : i == n ? M_MORE : M_NO;
}

/* ---- a call held whole ---- */

/*
 * Parse a held call (@s, @n: its JSON, tags stripped) and emit it; false
 * when it is none. *@ret_used: the bytes its JSON took (what follows must be
 * spaces, or for llama3_json the rest of the answer).
 */
static bool
emit_whole(struct toolparse *tp, const char *s, size_t n, size_t *ret_used)
{
	const char *end = s;
	cJSON *o = cJSON_ParseWithLengthOpts(s, n, &end, false);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
	bool ok = false;

	*ret_used = o ? (size_t)(end - s) : 0;
	if (args == NULL && tp->syn == TOOL_SYNTAX_LLAMA3)
		args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
	for (size_t i = *ret_used; o && i < n && tp->syn == TOOL_SYNTAX_HERMES; i++)
		if (!is_ws(s[i]))
			args = NULL; /* more after the JSON: not a call */
	if (cJSON_IsObject(o) && cJSON_IsString(name) && name->valuestring[0] && args != NULL) {
		char *text = cJSON_IsString(args) ? NULL : cJSON_PrintUnformatted(args);
		const char *a = cJSON_IsString(args) ? args->valuestring : text;
		if (a == NULL) {
			tp->err = ORCH_ENOMEM;
		} else {
			begin_call(tp, name->valuestring, strlen(name->valuestring));
			put(tp, TP_ARGS, a[0] ? a : "{}", a[0] ? strlen(a) : 2);
			ok = true;
		}
		cJSON_free(text);
	}
	cJSON_Delete(o);
	return ok;
}

/* The held call in @buf is complete (or the answer ended): a call, or its text as content. */
static void
settle_raw(struct toolparse *tp)
{
	const char *s = tp->buf.p ? tp->buf.p : "";
	size_t n = tp->buf.n, skip = 0, used = 0;
	char *rest = NULL;

	if (tp->syn == TOOL_SYNTAX_HERMES) {
		skip = tp->lead + strlen(TAG_OPEN);
		if (ends_with(s, n, TAG_CLOSE))
			n -= strlen(TAG_CLOSE);
	}
	if (n < skip || !emit_whole(tp, s + skip, n - skip, &used))
		put(tp, TP_CONTENT, tp->buf.p, tp->buf.n);
	else if (tp->syn == TOOL_SYNTAX_LLAMA3 && skip + used < n &&
	         (rest = orch_strndup(s + skip + used, n - skip - used)) == NULL)
		tp->err = ORCH_ENOMEM;
	sbuf_clear(&tp->buf);
	tp->st = S_TEXT;
	if (rest != NULL) { /* llama3_json: "; {next call}" or text after the call */
		tp->st = S_TAIL;
		for (size_t i = 0; rest[i]; i++)
			step(tp, rest[i]);
		orch_free(rest);
	}
}

/* Hermes, a call held whole: a new start tag means the held text was none (prose). */
static void
raw_byte(struct toolparse *tp, char c)
{
	sbuf_putc(&tp->buf, c);
	if (tp->syn != TOOL_SYNTAX_HERMES || tp->buf.oom)
		return;
	if (ends_with(tp->buf.p, tp->buf.n, TAG_CLOSE)) {
		settle_raw(tp);
	} else if (tp->buf.n > tp->lead + strlen(TAG_OPEN) &&
	           ends_with(tp->buf.p, tp->buf.n, TAG_OPEN)) {
		put(tp, TP_CONTENT, tp->buf.p, tp->buf.n - strlen(TAG_OPEN));
		sbuf_clear(&tp->buf);
		sbuf_puts(&tp->buf, TAG_OPEN);
		tp->lead = 0;
		tp->st = S_HEAD;
	}
}

/* ---- the states ---- */

/* Hermes content: release all but trailing spaces and a possible start of the tag. */
static void
text_byte(struct toolparse *tp, char c)
{
	sbuf_putc(&tp->buf, c);
	if (tp->buf.oom)
		return;
	const char *s = tp->buf.p;
	size_t n = tp->buf.n, hold = 0, k;
	if (ends_with(s, n, TAG_OPEN)) { /* keep the spaces before it, in case it is no call */
		n -= strlen(TAG_OPEN);
		for (k = n; k > 0 && is_ws(s[k - 1]) && n - k < SPACES_MAX; k--)
			;
		put(tp, TP_CONTENT, s, k);
		memmove(tp->buf.p, s + k, tp->buf.n - k);
		tp->buf.n -= k;
		tp->buf.p[tp->buf.n] = '\0';
		tp->lead = n - k;
		tp->st = S_HEAD;
		return;
	}
	for (k = strlen(TAG_OPEN) - 1; k > 0 && hold == 0; k--)
		if (n >= k && memcmp(s + n - k, TAG_OPEN, k) == 0)
			hold = k;
	k = n - hold;
	while (k > 0 && is_ws(s[k - 1]) && n - hold - k < SPACES_MAX)
		k--;
	put(tp, TP_CONTENT, s, k);
	memmove(tp->buf.p, s + k, n - k);
	tp->buf.n = n - k;
	tp->buf.p[tp->buf.n] = '\0';
}

static void
head_byte(struct toolparse *tp, char c)
{
	size_t skip = tp->syn == TOOL_SYNTAX_HERMES ? tp->lead + strlen(TAG_OPEN) : 0, len = 0;
	char name[NAME_MAX_];

	sbuf_putc(&tp->buf, c);
	if (tp->buf.oom)
		return;
	enum match m = match_head(tp, tp->buf.p + skip, tp->buf.n - skip, name, &len);
	if (m == M_MORE && tp->buf.n - skip > HEAD_MAX)
		m = M_NO; /* spaces without end: hold it whole, parse it at its end */
	if (m == M_NO) {
		tp->st = S_RAW;
		if (tp->syn == TOOL_SYNTAX_HERMES && ends_with(tp->buf.p, tp->buf.n, TAG_CLOSE))
			settle_raw(tp);
	} else if (m == M_YES && c == '"') { /* arguments as a string of JSON: decode it whole */
		tp->st = S_RAW;
	} else if (m == M_YES) { /* @c is the arguments' first byte */
		sbuf_clear(&tp->buf);
		begin_call(tp, name, len);
		tp->st = S_ARGS;
		args_byte(tp, c);
	}
}

/* The arguments' value: whether @c ends it (it is part of it unless a primitive ended before). */
static bool
value_byte(struct toolparse *tp, char c, bool *ret_part)
{
	*ret_part = true;
	if (tp->in_str) {
		if (tp->esc)
			tp->esc = false;
		else if (c == '\\')
			tp->esc = true;
		else if (c == '"')
			tp->in_str = false;
		return !tp->in_str && tp->depth == 0;
	}
	if (tp->primitive && (c == ',' || c == '}' || c == ']' || is_ws(c))) {
		*ret_part = false; /* a number, true, false or null ended before @c */
		return true;
	}
	if (c == '"')
		tp->in_str = true;
	else if (c == '{' || c == '[')
		tp->depth++;
	else if (c == '}' || c == ']')
		tp->depth--;
	else if (tp->depth == 0)
		tp->primitive = true;
	return tp->depth <= 0 && !tp->primitive && !tp->in_str;
}

static void
args_byte(struct toolparse *tp, char c)
{
	bool part;
	bool done = value_byte(tp, c, &part);

	if (part)
		put(tp, TP_ARGS, &c, 1);
	if (!done)
		return;
	tp->st = S_TAIL;
	if (!part)
		step(tp, c);
}

/*
 * After the arguments: hermes drops "}" and spaces to </tool_call> (a new
 * <tool_call> first: the model left the close out); llama3 takes "}" and ";".
 */
static void
tail_byte(struct toolparse *tp, char c)
{
	if (tp->syn == TOOL_SYNTAX_HERMES) {
		sbuf_putc(&tp->buf, c);
		if (tp->buf.oom)
			return;
		if (ends_with(tp->buf.p, tp->buf.n, TAG_CLOSE)) {
			sbuf_clear(&tp->buf);
			tp->st = S_TEXT;
		} else if (ends_with(tp->buf.p, tp->buf.n, TAG_OPEN)) {
			sbuf_clear(&tp->buf);
			sbuf_puts(&tp->buf, TAG_OPEN);
			tp->lead = 0;
			tp->st = S_HEAD;
		}
		return;
	}
	if (is_ws(c) || c == '}')
		return;
	if (c == ';') {
		tp->st = S_SEP;
		return;
	}
	tp->st = S_TEXT;
	put(tp, TP_CONTENT, &c, 1);
}

/* Hermes, the answer ended after a call's arguments: what is not "}" or spaces is content. */
static void
tail_finish(struct toolparse *tp)
{
	const char *s = tp->buf.p;
	size_t i = 0, n = tp->buf.n;

	while (i < n && is_ws(s[i]))
		i++;
	if (i < n && s[i] == '}')
		i++;
	while (i < n && is_ws(s[i]))
		i++;
	while (n > i && is_ws(s[n - 1]))
		n--;
	if (n > i)
		put(tp, TP_CONTENT, s + i, n - i);
}

static void
step(struct toolparse *tp, char c)
{
	switch (tp->st) {
	case S_START:
	case S_SEP:
		if (is_ws(c)) {
			if (tp->st == S_START)
				sbuf_putc(&tp->buf, c);
			return;
		}
		if (c == '{') {
			sbuf_clear(&tp->buf);
			tp->st = S_HEAD;
			head_byte(tp, c);
			return;
		}
		put(tp, TP_CONTENT, tp->buf.p, tp->buf.n);
		sbuf_clear(&tp->buf);
		tp->st = S_TEXT;
		put(tp, TP_CONTENT, &c, 1);
		return;
	case S_TEXT:
		if (tp->syn == TOOL_SYNTAX_HERMES)
			text_byte(tp, c);
		else
			put(tp, TP_CONTENT, &c, 1);
		return;
	case S_HEAD:
		head_byte(tp, c);
		return;
	case S_ARGS:
		args_byte(tp, c);
		return;
	case S_TAIL:
		tail_byte(tp, c);
		return;
	case S_RAW:
		raw_byte(tp, c);
		return;
	}
}

struct toolparse *
toolparse_new(enum tool_syntax s, tp_emit_fn emit, void *ctx)
{
	struct toolparse *tp;

	if (s != TOOL_SYNTAX_HERMES && s != TOOL_SYNTAX_LLAMA3)
		return NULL;
	if ((tp = orch_calloc(1, sizeof(*tp))) == NULL)
		return NULL;
	tp->syn = s;
	tp->st = s == TOOL_SYNTAX_LLAMA3 ? S_START : S_TEXT;
	tp->emit = emit;
	tp->ctx = ctx;
	return tp;
}

/* The first error since the last report (then cleared: a caller hears of it once). */
static orch_err
report(struct toolparse *tp)
{
	orch_err rv = tp->err;

	if (tp->buf.oom) {
		rv = ORCH_ENOMEM;
		sbuf_clear(&tp->buf);
	}
	tp->err = ORCH_OK;
	return rv;
}

orch_err
toolparse_feed(struct toolparse *tp, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		step(tp, s[i]);
	flush(tp);
	return report(tp);
}

orch_err
toolparse_finish(struct toolparse *tp)
{
	/* a held call settles (llama3_json: what follows it may hold another) */
	while (tp->st == S_HEAD || tp->st == S_RAW)
		settle_raw(tp);
	if (tp->st == S_START || tp->st == S_TEXT) {
		/* trailing spaces are the answer's, unless they only follow a call */
		for (size_t i = 0; i < tp->buf.n; i++)
			if (tp->calls == 0 || !is_ws(tp->buf.p[i])) {
				put(tp, TP_CONTENT, tp->buf.p, tp->buf.n);
				break;
			}
	} else if (tp->st == S_TAIL && tp->syn == TOOL_SYNTAX_HERMES) {
		tail_finish(tp); /* no </tool_call>: what came after the call */
	} /* S_ARGS: cut by max_tokens, the arguments so far are out already */
	sbuf_clear(&tp->buf);
	tp->st = S_TEXT;
	flush(tp);
	return report(tp);
}

uint32_t
toolparse_calls(const struct toolparse *tp)
{
	return tp->calls;
}

void
toolparse_set_ctx(struct toolparse *tp, void *ctx)
{
	tp->ctx = ctx;
}

void
toolparse_free(struct toolparse *tp)
{
	if (tp == NULL)
		return;
	sbuf_fini(&tp->buf);
	sbuf_fini(&tp->out);
	orch_free(tp);
}
