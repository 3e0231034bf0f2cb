/*
 * json_schema.c - a JSON Schema as GBNF (json_schema.h, docs/json-schema.md).
 *
 * Design notes. The promise is one-sided: every sentence of the grammar
 * validates against the schema; the grammar may be stricter (compact
 * numbers, bounded whitespace and digit counts, declared properties in
 * schema order, no extra keys unless additionalProperties allows them). A
 * keyword that cannot be honoured is refused naming it and its JSON
 * pointer, never ignored.
 *
 * Every subschema becomes one rule (rN). A $ref target becomes one rule
 * (def-N-name) made once, so recursion is a rule that names itself; a
 * $ref that reaches its own target again before any input is consumed
 * (left recursion) is refused here, where the message can name it.
 * allOf, and anyOf/oneOf with sibling keywords, are merged into new
 * schemas (js->owned) that generate as any other.
 *
 * The work is split over five files built as one unit, Redis ae.c style:
 * this one (context, output, dispatch, $ref, the public API) #includes at
 * its end json_schema_pattern.c (string patterns), json_schema_scalar.c
 * (strings, formats, numbers), json_schema_compound.c (objects, arrays) and
 * json_schema_combine.c (enum/const, allOf, anyOf, oneOf).
 */
#include "json_schema.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/sbuf.h"
#include "base/utf8.h"
#include "grammar.h"

#define JS_DEPTH_MAX  64
#define JS_OUT_MAX    ((size_t)1 << 20)
#define JS_NAME_MAX   48
#define JS_PATH_MAX   256
#define JS_REPEAT_MAX 10000      /* GRAM_REPEAT_MAX */
#define JS_INF        UINT64_MAX /* an unbounded count */
/* the bound: this much of its thread's CPU; 10x as much under ASan (as much slower) */
#ifdef __SANITIZE_ADDRESS__
#define JS_TIME_MAX_MS 500
#else
#define JS_TIME_MAX_MS 50
#endif

/* JSON types as a bit set; "number" is T_INT | T_FRAC. */
enum {
	T_NULL = 1 << 0,
	T_BOOL = 1 << 1,
	T_OBJ = 1 << 2,
	T_ARR = 1 << 3,
	T_STR = 1 << 4,
	T_INT = 1 << 5,  /* integral numbers */
	T_FRAC = 1 << 6, /* other numbers */
	T_ALL = (1 << 7) - 1,
};

/* The drafts told apart by $schema. */
enum {
	D4 = 4,
	D6 = 6,
	D7 = 7,
	D2019 = 2019,
	D2020 = 2020,
};

/* Shared rules, emitted once at the end when some rule uses them. */
enum {
	U_WS = 1 << 0,
	U_VALUE = 1 << 1,
	U_OBJECT = 1 << 2,
	U_ARRAY = 1 << 3,
	U_STRING = 1 << 4,
	U_CHAR = 1 << 5,
	U_CHAR1 = 1 << 6,
	U_HEX = 1 << 7,
	U_NUMBER = 1 << 8,
	U_INTEGER = 1 << 9,
};

/* GBNF text of the shared rules (see docs/json-schema.md for the bounds). */
#define G_WS    "ws ::= ( \" \" | \"\\n\" [ \\t]{0,20} )?\n"
#define G_VALUE "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n"
#define G_OBJECT                                                                                    \
	"object ::= \"{\" ws ( string ws \":\" ws value ( ws \",\" ws string ws \":\" ws value )* " \
	"ws )? \"}\"\n"
#define G_ARRAY  "array ::= \"[\" ws ( value ( ws \",\" ws value )* ws )? \"]\"\n"
#define G_STRING "string ::= \"\\\"\" char* \"\\\"\"\n"
#define G_CHAR                                                                                      \
	"char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-CefEF] " \
	"hex{3} | [dD] [0-7] hex{2} | [dD] [89abAB] hex{2} \"\\\\u\" [dD] [c-fC-F] hex{2} ) )\n"
#define G_CHAR1                                                                                      \
	"char1 ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-CefEF] " \
	"hex{3} | [dD] [0-7] hex{2} ) )\n"
#define G_HEX "hex ::= [0-9a-fA-F]\n"
#define G_NUMBER                                                                                   \
	"number ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,14} ) ( \".\" [0-9]{1,15} )? ( [eE] ( \"-\" | " \
	"\"+\" )? [0-9]{1,2} )?\n"
#define G_INTEGER "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,14} )\n"

static const struct {
	const char *text;
	unsigned needs;
} shared_rules[] = {
        {G_WS, 0},
        {G_VALUE, U_OBJECT | U_ARRAY | U_STRING | U_NUMBER},
        {G_OBJECT, U_WS | U_STRING | U_VALUE},
        {G_ARRAY, U_WS | U_VALUE},
        {G_STRING, U_CHAR},
        {G_CHAR, U_HEX},
        {G_CHAR1, U_HEX},
        {G_HEX, 0},
        {G_NUMBER, 0},
        {G_INTEGER, 0},
};

/* One $ref target: its rule, and the epoch it started in (left recursion). */
struct js_def {
	const cJSON *target;
	unsigned epoch;
	bool busy;
	char name[JS_NAME_MAX];
};

/* One allOf merge made into a rule: the schemas merged (sorted), the resource. */
struct js_mrg {
	const cJSON **key;
	size_t n;
	const cJSON *res;
	unsigned epoch;
	bool busy;
	char name[JS_NAME_MAX];
};

/* The conversion's state. */
struct js {
	struct sbuf out; /* the rules so far */
	const cJSON *root;
	cJSON *owned; /* merged schemas, freed at the end */
	char *msg;
	size_t msg_n;
	struct sbuf fails; /* each place that cannot be enforced, "<what> at <pointer>\n" */
	unsigned nfail;
	bool fatal;           /* a limit was hit: stop at once, list nothing more */
	int draft;            /* 4, 6, 7, 2019 or 2020: what $schema names (2020 when absent) */
	const cJSON *res;     /* the schema resource '#' refs resolve in ($id, draft-4 id) */
	uint64_t deadline_ns; /* the bounded compile: JS_TIME_MAX_NS after the start */
	unsigned ticks;       /* js_late's calls: the clock is read one in JS_LATE_EVERY */
	bool late;            /* the clock was seen past deadline_ns */
	unsigned next_rule, used;
	unsigned epoch, epochs; /* input consumed since a def started? */
	int depth;
	struct js_def *defs;
	size_t ndefs;
	struct js_mrg *mrgs; /* allOf merges made (merge_memo) */
	size_t nmrgs;
	char path[JS_PATH_MAX]; /* JSON pointer of the schema being made */
	size_t path_n;
	bool raw; /* a pattern is the whole output, as it is (json_regex_gbnf), not a JSON string */
	bool search; /* a pattern without ^ may have anything before its match (pattern_matches) */
	bool fmt_holds; /* value_ok takes every 'format' as holding (oneOf apartness, enum_apart) */
};

static orch_err gen(struct js *js, const cJSON *s, char name[JS_NAME_MAX]);
static bool ignorable(const struct js *js, const char *k);
static orch_err check_keywords(struct js *js, const cJSON *s);
static orch_err gen_ref(struct js *js, const cJSON *s, char name[JS_NAME_MAX]);
static const cJSON *deref(const struct js *js, const cJSON *s);
static bool ref_alone(const struct js *js, const cJSON *s);
static bool is_resource(const struct js *js, const cJSON *s);
static int draft_of(const cJSON *root);
static orch_err lower(struct js *js, const cJSON *s, const cJSON **ret);
static orch_err gen_str(struct js *js, const cJSON *s, struct sbuf *b);
static orch_err gen_num(struct js *js, const cJSON *s, struct sbuf *b, bool integer);
static orch_err gen_obj(struct js *js, const cJSON *s, struct sbuf *b);
static orch_err gen_arr(struct js *js, const cJSON *s, struct sbuf *b);
static void json_quote(struct sbuf *b, const char *s);
static bool str_format(const cJSON *fmt);
static int int_format(const cJSON *fmt);
static orch_err gen_pattern(struct js *js, const char *pat, uint64_t lo, uint64_t hi,
                            struct sbuf *b);
static orch_err pattern_matches(struct js *js, const char *pat, const char *name, bool *ret);
static orch_err rx_bounded(struct js *js, const char *pat, uint64_t lo, uint64_t hi,
                           struct sbuf *b);
static orch_err gen_enum(struct js *js, const cJSON *s, char name[JS_NAME_MAX]);
static orch_err value_ok(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok);
static unsigned kw_family(const char *k);
static unsigned families(const cJSON *s);
static orch_err gen_allof(struct js *js, const cJSON *s, char name[JS_NAME_MAX]);
static orch_err gen_anyof(struct js *js, const cJSON *s, char name[JS_NAME_MAX]);
struct part;
static orch_err complement(struct js *js, const cJSON *s, const cJSON **ret);
static orch_err resolve_ifs(struct js *js, struct part *parts, size_t *n);

static bool
in_list(const char *const *list, const char *k)
{
	for (; *list; list++)
		if (strcmp(*list, k) == 0)
			return true;
	return false;
}

/* How many js_late calls read the thread's CPU clock once (a system call, not the vDSO's:
 * reading it each time took a tenth of a large schema's compile). */
#define JS_LATE_EVERY 32

/*
 * js_late - the bound is spent: wide helpers answer safely at once, the compile is
 * refused. The clock is read every JS_LATE_EVERY calls; once past, late stays set (the
 * struct is the caller's own: the cast writes no const object).
 */
static bool
js_late(const struct js *js)
{
	struct js *w = (struct js *)js;

	if (w->fatal || w->late)
		return true;
	if (++w->ticks % JS_LATE_EVERY != 0)
		return false;
	w->late = orch_thread_cpu_ns() > w->deadline_ns;
	return w->late;
}

static const cJSON *
kw(const cJSON *s, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(s, k);
}

/* js_vfail - note "<what> at <pointer>" once (a place may be reached twice); ORCH_EINVAL. */
__attribute__((format(printf, 2, 0))) static orch_err
js_vfail(struct js *js, const char *fmt, va_list ap)
{
	char what[384], line[JS_PATH_MAX + 400];

	vsnprintf(what, sizeof(what), fmt, ap);
	snprintf(line, sizeof(line), "%s at %s\n", what, js->path_n ? js->path : "the root");
	if (js->fatal)
		return ORCH_EINVAL;
	if (js->fails.p == NULL || strstr(js->fails.p, line) == NULL) {
		sbuf_puts(&js->fails, line);
		js->nfail++;
	}
	return ORCH_EINVAL;
}

/*
 * js_fail - a place that cannot be enforced: noted, and the conversion goes on
 * (gen() puts any value in its place) so that one refusal lists every such place.
 */
__attribute__((format(printf, 2, 3))) static orch_err
js_fail(struct js *js, const char *fmt, ...)
{
	va_list ap;
	orch_err rv;

	va_start(ap, fmt);
	rv = js_vfail(js, fmt, ap);
	va_end(ap);
	return rv;
}

/* js_limit - a limit was hit: noted, and the conversion stops at once. */
__attribute__((format(printf, 2, 3))) static orch_err
js_limit(struct js *js, const char *fmt, ...)
{
	va_list ap;
	orch_err rv;

	va_start(ap, fmt);
	rv = js_vfail(js, fmt, ap);
	va_end(ap);
	js->fatal = true;
	return rv;
}

/* js_over - the compile bound is spent: the limit, noted and fatal. */
static orch_err
js_over(struct js *js)
{
	if (js->fatal)
		return ORCH_EINVAL;
	return js_limit(js, "the schema takes over %d ms to compile (limit: compile time)",
	                JS_TIME_MAX_MS);
}

/*
 * js_message - the places noted, "A at /x; B at /y", into msg: as many as fit, then
 * "; and N more".
 */
static void
js_message(struct js *js)
{
	const char *p = js->fails.p ? js->fails.p : "";
	size_t at = 0, len;
	unsigned done = 0;

	if (js->msg_n == 0)
		return;
	js->msg[0] = '\0';
	for (; *p; p += len + 1, done++) {
		char more[48];
		len = strcspn(p, "\n");
		snprintf(more, sizeof(more), "; and %u more", js->nfail - done);
		if (at + len + 2 + (done + 1 < js->nfail ? strlen(more) : 0) >= js->msg_n &&
		    done > 0) {
			snprintf(js->msg + at, js->msg_n - at, "%s", more);
			return;
		}
		at += (size_t)snprintf(js->msg + at, js->msg_n - at, "%s%.*s", done ? "; " : "",
		                       (int)len, p);
		if (at >= js->msg_n)
			return;
	}
}

/* path_push - append "/@seg" (escaped as a JSON pointer token); returns the old length. */
static size_t
path_push(struct js *js, const char *seg)
{
	size_t old = js->path_n, n = old;

	if (n + 2 < JS_PATH_MAX)
		js->path[n++] = '/';
	for (; *seg && n + 3 < JS_PATH_MAX; seg++) {
		if (*seg == '~' || *seg == '/') {
			js->path[n++] = '~';
			js->path[n++] = *seg == '~' ? '0' : '1';
		} else {
			js->path[n++] = *seg;
		}
	}
	js->path[n] = '\0';
	js->path_n = n;
	return old;
}

static size_t
path_push2(struct js *js, const char *kw_name, const char *key, int idx)
{
	char num[16];
	size_t old = path_push(js, kw_name);

	if (key == NULL)
		snprintf(num, sizeof(num), "%d", idx);
	path_push(js, key ? key : num);
	return old;
}

static void
path_pop(struct js *js, size_t n)
{
	js->path_n = n;
	js->path[n] = '\0';
}

/* cut - shorten @b to @n bytes (nothing to do after an allocation failure). */
static void
cut(struct sbuf *b, size_t n)
{
	if (b->p != NULL && n <= b->n) {
		b->n = n;
		b->p[n] = '\0';
	}
}

static void
new_name(struct js *js, char name[JS_NAME_MAX])
{
	snprintf(name, JS_NAME_MAX, "r%u", js->next_rule++);
}

/* put_rule - "@name ::= @body" as a line of the grammar, within its size limit. */
static orch_err
put_rule(struct js *js, const char *name, const struct sbuf *body)
{
	orch_err rv = sbuf_err(body);

	if (rv != ORCH_OK)
		return rv;
	sbuf_printf(&js->out, "%s ::= %s\n", name, body->p ? body->p : "");
	if (js->out.n > JS_OUT_MAX)
		return js_limit(js, "the grammar would be over 1 MiB (limit: grammar size)");
	return sbuf_err(&js->out);
}

/* put_cp - code point @c escaped for a GBNF string literal or (@cls) character class. */
static void
put_cp(struct sbuf *b, uint32_t c, bool cls)
{
	if (c < 0x20 || c == 0x7f)
		sbuf_printf(b, "\\x%02X", (unsigned)c);
	else if (c > 0xffff)
		sbuf_printf(b, "\\U%08X", (unsigned)c);
	else if (c > 0x7e)
		sbuf_printf(b, "\\u%04X", (unsigned)c);
	else if (c == '\\' || (!cls && c == '"') || (cls && strchr("]-^[", (int)c)))
		sbuf_printf(b, "\\%c", (char)c);
	else
		sbuf_putc(b, (char)c);
}

/* put_lit - a GBNF literal matching the @n bytes at @s exactly (well-formed UTF-8). */
static orch_err
put_lit(struct js *js, struct sbuf *b, const char *s, size_t n)
{
	uint32_t c;
	size_t len;

	sbuf_putc(b, '"');
	for (size_t i = 0; i < n; i += len) {
		if (utf8_next((const uint8_t *)s + i, n - i, &c, &len) != UTF8_OK)
			return js_fail(js, "a string that is not well-formed UTF-8");
		put_cp(b, c, false);
	}
	sbuf_putc(b, '"');
	return ORCH_OK;
}

/* put_json_lit - the compact serialization of @v as a GBNF literal. */
static orch_err
put_json_lit(struct js *js, struct sbuf *b, const cJSON *v)
{
	char *text = cJSON_PrintUnformatted(v);
	orch_err rv;

	if (text == NULL)
		return ORCH_ENOMEM;
	rv = put_lit(js, b, text, strlen(text));
	cJSON_free(text);
	return rv;
}

/* The bits of a type name, 0 for an unknown one. */
static unsigned
type_bits(const char *name)
{
	static const char *const names[] = {"null",   "boolean", "object", "array",
	                                    "string", "integer", "number"};
	static const unsigned bits[] = {T_NULL, T_BOOL, T_OBJ, T_ARR, T_STR, T_INT, T_INT | T_FRAC};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return bits[i];
	return 0;
}

/* type_kw - the types "type" allows in *@ret (T_ALL when absent). */
static orch_err
type_kw(struct js *js, const cJSON *s, unsigned *ret)
{
	const cJSON *t = kw(s, "type"), *it;
	unsigned m = 0, b;

	*ret = T_ALL;
	if (t == NULL)
		return ORCH_OK;
	if (cJSON_IsString(t)) {
		if ((*ret = type_bits(t->valuestring)) == 0)
			return js_fail(js, "unknown type '%s'", t->valuestring);
		return ORCH_OK;
	}
	if (!cJSON_IsArray(t))
		return js_fail(js, "'type' must be a string or an array of strings");
	cJSON_ArrayForEach(it, t)
	{
		if (!cJSON_IsString(it) || (b = type_bits(it->valuestring)) == 0)
			return js_fail(js, "'type' holds something that is not a type name");
		m |= b;
	}
	if (m == 0)
		return js_fail(js, "'type' is an empty array: no value can match");
	*ret = m;
	return ORCH_OK;
}

/* The type bits of a JSON value. */
static unsigned
value_bits(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return T_NULL;
	if (cJSON_IsBool(v))
		return T_BOOL;
	if (cJSON_IsObject(v))
		return T_OBJ;
	if (cJSON_IsArray(v))
		return T_ARR;
	if (cJSON_IsString(v))
		return T_STR;
	return floor(v->valuedouble) == v->valuedouble ? T_INT : T_FRAC;
}

/* get_count - the non-negative integer keyword @k into *@v (left as is when absent). */
static orch_err
get_count(struct js *js, const cJSON *s, const char *k, uint64_t *v)
{
	const cJSON *it = kw(s, k);

	if (it == NULL)
		return ORCH_OK;
	if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
	    floor(it->valuedouble) != it->valuedouble)
		return js_fail(js, "'%s' must be a non-negative integer", k);
	*v = it->valuedouble >= 1e18 ? (uint64_t)1e18 : (uint64_t)it->valuedouble;
	return ORCH_OK;
}

/* gen_typed - a schema by its types: one alternative per type it allows. */
static orch_err
gen_typed(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	struct sbuf b = {0};
	unsigned m, f = families(s);
	orch_err rv;

	if ((rv = type_kw(js, s, &m)) != ORCH_OK)
		return rv;
	if (kw(s, "type") == NULL && f != 0)
		m = f; /* stricter than the schema: only the types its keywords are about */
	if (m == T_ALL && f == 0) {
		js->used |= U_VALUE;
		snprintf(name, JS_NAME_MAX, "value");
		return ORCH_OK;
	}
	if (m & T_NULL)
		sbuf_puts(&b, "\"null\" | ");
	if (m & T_BOOL)
		sbuf_puts(&b, "\"true\" | \"false\" | ");
	if ((m & T_OBJ) && (rv = gen_obj(js, s, &b)) == ORCH_OK)
		sbuf_puts(&b, " | ");
	if (rv == ORCH_OK && (m & T_ARR) && (rv = gen_arr(js, s, &b)) == ORCH_OK)
		sbuf_puts(&b, " | ");
	if (rv == ORCH_OK && (m & T_STR) && (rv = gen_str(js, s, &b)) == ORCH_OK)
		sbuf_puts(&b, " | ");
	if (rv == ORCH_OK && (m & T_INT) && (rv = gen_num(js, s, &b, !(m & T_FRAC))) == ORCH_OK)
		sbuf_puts(&b, " | ");
	if (rv == ORCH_OK && (rv = sbuf_err(&b)) == ORCH_OK) {
		cut(&b, b.n - 3); /* the last " | " */
		if (b.n < JS_NAME_MAX &&
		    strspn(b.p, "abcdefghijklmnopqrstuvwxyz0123456789-") == b.n)
			memcpy(name, b.p, b.n + 1); /* one shared rule: no alias */
		else
			new_name(js, name), rv = put_rule(js, name, &b);
	}
	sbuf_fini(&b);
	return rv;
}

/* gen_dispatch - the rule of object schema @s by the keywords that shape it. */
static orch_err
gen_dispatch(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	const cJSON *ref = kw(s, "$ref");

	if (ref && (js->draft <= 7 || ref_alone(js, s)))
		return gen_ref(js, s, name); /* up to draft 7, '$ref' hides its siblings */
	if (ref || kw(s, "allOf"))
		return gen_allof(js, s, name);
	if (kw(s, "anyOf") || kw(s, "oneOf"))
		return gen_anyof(js, s, name);
	if (kw(s, "enum") || kw(s, "const"))
		return gen_enum(js, s, name);
	return gen_typed(js, s, name);
}

/*
 * gen - the rule for schema @s into @name (a new rule, a def or a shared one). A
 * place that cannot be enforced is noted (js_fail) and stands as any value, so
 * that the conversion goes on and the refusal lists every place; a limit
 * (js_limit) stops it.
 */
static orch_err
gen(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	const cJSON *res = js->res, *low = NULL;
	orch_err rv = ORCH_OK, rk;
	bool ref7;

	if (cJSON_IsTrue(s)) {
		js->used |= U_VALUE;
		snprintf(name, JS_NAME_MAX, "value");
		return ORCH_OK;
	}
	if (js->fatal)
		return ORCH_EINVAL;
	if (js_late(js))
		return js_over(js);
	if (cJSON_IsFalse(s)) {
		rv = js_fail(js, "schema false: no value can match");
	} else if (!cJSON_IsObject(s)) {
		rv = js_fail(js, "a schema must be an object or a boolean");
	} else if (js->depth >= JS_DEPTH_MAX) {
		rv = js_limit(js, "schema nested deeper than %d (limit: depth)", JS_DEPTH_MAX);
	} else {
		js->res = is_resource(js, s) ? s : res;
		ref7 = js->draft <= D7 && kw(s, "$ref") != NULL; /* its siblings are ignored */
		rk = ref7 ? ORCH_OK : check_keywords(js, s);
		js->depth++;
		if ((rv = ref7 ? ORCH_OK : lower(js, s, &low)) == ORCH_OK)
			rv = gen_dispatch(js, low ? low : s, name);
		js->depth--;
		js->res = res;
		rv = rv != ORCH_OK ? rv : rk;
	}
	if (rv == ORCH_EINVAL && !js->fatal) {
		js->used |= U_VALUE; /* a stand-in: the schema is refused at the end */
		snprintf(name, JS_NAME_MAX, "value");
		rv = ORCH_OK;
	}
	return rv;
}

/* Append the shared rules used, and those they use, to @b. */
static void
put_shared(struct js *js, struct sbuf *b)
{
	unsigned used = js->used, before;

	do {
		before = used;
		for (size_t i = 0; i < sizeof(shared_rules) / sizeof(shared_rules[0]); i++)
			if (used & (1u << i))
				used |= shared_rules[i].needs;
	} while (used != before);
	for (size_t i = 0; i < sizeof(shared_rules) / sizeof(shared_rules[0]); i++)
		if (used & (1u << i))
			sbuf_puts(b, shared_rules[i].text);
}

/* Make @n schemas one grammar: @top, or "root ::= " the one schema's rule when NULL. */
static orch_err
convert(const cJSON *const *schemas, size_t n, const char *top, char **ret, size_t *ret_failed,
        char *msg, size_t msg_n)
{
	struct js js = {.msg = msg, .msg_n = msg_n};
	struct sbuf all = {0};
	char name[JS_NAME_MAX];
	orch_err rv = ORCH_OK;

	if (msg_n > 0)
		msg[0] = '\0';
	if ((js.owned = cJSON_CreateArray()) == NULL)
		return ORCH_ENOMEM;
	if (top != NULL)
		sbuf_puts(&all, top);
	js.deadline_ns = orch_thread_cpu_ns() + (uint64_t)JS_TIME_MAX_MS * 1000000;
	for (size_t i = 0; i < n && rv == ORCH_OK; i++) {
		js.root = js.res = schemas[i];
		js.draft = draft_of(schemas[i]);
		js.path_n = 0;
		js.path[0] = '\0';
		rv = gen(&js, schemas[i], name);
		if (rv == ORCH_OK && js.nfail > 0)
			rv = ORCH_EINVAL;
		if (rv != ORCH_OK) {
			if (ret_failed != NULL)
				*ret_failed = i;
			break;
		}
		if (top == NULL)
			sbuf_printf(&all, "root ::= %s\n", name);
		else
			sbuf_printf(&all, "schema-%zu ::= %s\n", i, name);
	}
	js.late = js.late || orch_thread_cpu_ns() > js.deadline_ns; /* the clock, at the end */
	if (rv == ORCH_OK && js_late(&js)) /* a helper gave up on a safe answer: not kept */
		rv = js_over(&js);
	if (rv != ORCH_OK)
		goto out;
	if (js.out.p)
		sbuf_puts(&all, js.out.p);
	put_shared(&js, &all);
	if ((rv = sbuf_err(&all)) != ORCH_OK)
		goto out;
	if (all.n > JS_OUT_MAX) {
		rv = js_limit(&js, "the grammar would be over 1 MiB (limit: grammar size)");
		goto out;
	}
	*ret = sbuf_take(&all, NULL);
out:
	if (rv == ORCH_EINVAL)
		js_message(&js);
	if (rv == ORCH_ENOMEM && msg_n > 0)
		snprintf(msg, msg_n, "out of memory");
	sbuf_fini(&all);
	sbuf_fini(&js.fails);
	sbuf_fini(&js.out);
	cJSON_Delete(js.owned);
	orch_free(js.defs);
	for (size_t i = 0; i < js.nmrgs; i++)
		orch_free(js.mrgs[i].key);
	orch_free(js.mrgs);
	return rv;
}

orch_err
json_schema_gbnf(const cJSON *schema, char **ret, char *msg, size_t msg_n)
{
	if (schema == NULL || ret == NULL) {
		if (msg_n > 0)
			snprintf(msg, msg_n, "no schema");
		return ORCH_EINVAL;
	}
	return convert(&schema, 1, NULL, ret, NULL, msg, msg_n);
}

orch_err
json_schema_gbnf_set(const cJSON *const *schemas, size_t n, const char *top, char **ret,
                     size_t *ret_failed, char *msg, size_t msg_n)
{
	for (size_t i = 0; i < n; i++)
		if (schemas[i] == NULL)
			n = 0;
	if (n == 0 || top == NULL || ret == NULL) {
		if (msg_n > 0)
			snprintf(msg, msg_n, "no schema");
		return ORCH_EINVAL;
	}
	return convert(schemas, n, top, ret, ret_failed, msg, msg_n);
}

const char *
json_object_gbnf(void)
{
	return "root ::= object\n" G_WS G_VALUE G_OBJECT G_ARRAY G_STRING G_CHAR G_HEX G_NUMBER;
}

/* clang-format off */
#include "json_schema_kw.c"
#include "json_schema_ref.c"
#include "json_schema_cpset.c"
#include "json_schema_pattern.c"
#include "json_schema_rxlen.c"
#include "json_schema_scalar.c"
#include "json_schema_fmtval.c"
#include "json_schema_compound.c"
#include "json_schema_keys.c"
#include "json_schema_value.c"
#include "json_schema_combine.c"
#include "json_schema_alt.c"
#include "json_schema_not.c"
/* clang-format on */
