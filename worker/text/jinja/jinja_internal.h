#pragma once
/*
 * jinja_internal.h - what the template interpreter's files share:
 * tokens (jinja_lex.c), the syntax tree (jinja_parse.c), values
 * (jinja_value.c), evaluation (jinja_eval.c) and builtins (jinja_builtins.c).
 * Not for use outside worker/jinja*.
 */
#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/sbuf.h"
#include "jinja.h"

/* ---- tokens ---- */

enum jtok {
	JT_EOF,
	JT_TEXT,        /* literal template text (already whitespace-controlled) */
	JT_VAR_BEGIN,   /* {{ */
	JT_VAR_END,     /* }} */
	JT_BLOCK_BEGIN, /* {% */
	JT_BLOCK_END,   /* %} */
	JT_NAME,
	JT_STRING, /* raw, with quotes */
	JT_INT,
	JT_FLOAT,
	JT_OP, /* punctuation and operators: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
	        */
};

struct jtoken {
	enum jtok type;
	const char *s;
	size_t n;
	size_t pos; /* offset in the normalized source, for line:col */
};

struct jlex {
	struct jtoken *v;
	size_t n, cap;
};

/* jinja_lex - tokens of @src (newlines normalized, one trailing newline dropped). */
orch_err jinja_lex(const char *name, const char *src, size_t len, struct jlex *out,
                   struct orch_errinfo *reterr);

/* jinja_where - "NAME:LINE:COL" of offset @pos in @src. */
void jinja_where(const char *name, const char *src, size_t pos, char *buf, size_t n);

/* ---- values ---- */

enum jv_type {
	JV_UNDEF,
	JV_NONE,
	JV_BOOL,
	JV_INT,
	JV_FLOAT,
	JV_STR,
	JV_LIST,
	JV_DICT,
	JV_FUNC, /* builtin global or bound method */
	JV_MACRO,
};

struct jstr {
	size_t n;
	char s[]; /* NUL-terminated */
};

struct jv;

struct jlist {
	size_t n, cap;
	struct jv *v;
};

struct jdict {
	size_t n, cap;
	struct jv *k, *v;
	bool ns; /* a namespace(): attributes may be set */
};

struct jfunc;
struct jmacro;

struct jv {
	enum jv_type t;
	union {
		bool b;
		int64_t i;
		double f;
		struct jstr *s;
		struct jlist *l;
		struct jdict *d;
		struct jfunc *fn;
		struct jmacro *m;
		const char *undef_name; /* JV_UNDEF: what was missing, for messages */
	} u;
};

/* ---- syntax tree ---- */

enum jx_kind {
	JX_LIT,
	JX_NAME,
	JX_ATTR,
	JX_ITEM,
	JX_SLICE,
	JX_CALL,
	JX_FILTER,
	JX_TEST,
	JX_NOT,
	JX_NEG,
	JX_POS,
	JX_BIN,
	JX_AND,
	JX_OR,
	JX_COND,
	JX_LIST,
	JX_DICT,
	JX_TUPLE,
};

struct jexpr {
	enum jx_kind kind;
	size_t pos;
	struct jv lit;           /* JX_LIT */
	const char *name;        /* NAME, ATTR, FILTER, TEST; BIN: the operator */
	struct jexpr *a, *b, *c; /* operands; SLICE: start, stop, step in b, c and d */
	struct jexpr *d;
	struct jexpr **args;  /* CALL/FILTER/TEST args; LIST/TUPLE items; DICT keys */
	struct jexpr **vals;  /* DICT values; keyword argument values */
	const char **kwnames; /* keyword argument names */
	size_t n_args, n_kw;
	bool negate; /* TEST: is not */
};

enum jn_kind {
	JN_TEXT,
	JN_OUTPUT,
	JN_IF,
	JN_FOR,
	JN_SET,
	JN_SET_BLOCK,
	JN_MACRO,
	JN_BREAK,
	JN_CONTINUE,
	JN_GENERATION,
	JN_CALL_BLOCK,
};

struct jbody {
	struct jnode **v;
	size_t n, cap;
};

struct jnode {
	enum jn_kind kind;
	size_t pos;
	const char *text; /* TEXT */
	size_t text_n;
	struct jexpr *expr;   /* OUTPUT, SET value, FOR iterable, CALL_BLOCK call */
	struct jexpr *cond;   /* FOR filter */
	const char **targets; /* FOR/SET names (tuple unpacking) */
	size_t n_targets;
	const char *attr; /* SET ns.attr: the attribute */
	struct jbody body, else_body;
	struct jexpr **conds; /* IF: if + elifs */
	struct jbody *bodies; /* IF: one per cond */
	size_t n_conds;
	const char *name;        /* MACRO, SET_BLOCK */
	const char **params;     /* MACRO */
	struct jexpr **defaults; /* MACRO: per param, may be NULL */
	size_t n_params;
};

struct jinja_tmpl {
	char *name;
	char *src; /* normalized source; tokens point into it */
	size_t src_n;
	struct arena arena;
	struct jbody root;
};

/* ---- the parser's shared state and helpers (jinja_parse.c, jinja_stmt.c) ---- */

#define MAX_ITEMS 256

struct parser {
	struct jinja_tmpl *t;
	const struct jtoken *tok;
	size_t i, n;
	struct orch_errinfo *err;
	orch_err failed;
	unsigned depth;
};

const struct jtoken *jp_peek(struct parser *p);
const struct jtoken *jp_next(struct parser *p);
bool jp_tok_is(const struct jtoken *t, enum jtok type, const char *s);
bool jp_at_op(struct parser *p, const char *s);
bool jp_at_name(struct parser *p, const char *s);
/* jp_err - record the first syntax error at @at (NAME:LINE:COL: what); returns NULL. */
void *jp_err(struct parser *p, const struct jtoken *at, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void *jp_alloc(struct parser *p, size_t n);
bool jp_expect_op(struct parser *p, const char *s);
const char *jp_expect_name(struct parser *p);
struct jexpr **jp_copy_list(struct parser *p, struct jexpr **v, size_t n);
/* jp_expr - an expression; @allow_cond admits "a if c else b". */
struct jexpr *jp_expr(struct parser *p, bool allow_cond);
/* jp_tuple_expr - an expression that may be a bare tuple "a, b". */
struct jexpr *jp_tuple_expr(struct parser *p, bool allow_cond);

/* jinja_parse - the syntax tree of @lex into @t->root. */
orch_err jinja_parse(struct jinja_tmpl *t, const struct jlex *lex, struct orch_errinfo *reterr);

/* ---- rendering ---- */

struct jscope {
	struct jscope *parent;
	struct jdict vars;
};

struct jmacro {
	const struct jnode *def;
};

struct jfunc {
	const char *name;
	struct jv self; /* bound methods: the receiver */
};

struct jrender {
	const struct jinja_tmpl *t;
	const struct jinja_opts *opts;
	struct arena *a;
	struct orch_errinfo *err;
	struct jscope *scope; /* innermost */
	struct jscope *root;
	uint64_t steps;
	unsigned depth;
	int loop_ctl;    /* 1: break, 2: continue pending */
	orch_err failed; /* first error; evaluation unwinds when set */
};

#define JINJA_MAX_STEPS  50000000ull
#define JINJA_MAX_DEPTH  64u
#define JINJA_MAX_OUTPUT (64u << 20)
#define JINJA_MAX_MEMORY (256u << 20) /* values allocated by one render */

/* jr_fail - record the first error at @pos (NAME:LINE:COL: message) and return it. */
orch_err jr_fail(struct jrender *r, size_t pos, orch_err code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/*
 * jr_alloc - @n zeroed bytes from the render arena; past JINJA_MAX_MEMORY the
 * render fails (ORCH_ETEMPLATE), on allocation failure too (ORCH_ENOMEM).
 */
void *jr_alloc(struct jrender *r, size_t n);

/*
 * jr_room - whether a string of @n bytes still fits the render's memory (the
 * check jr_alloc makes); false (the render failed) when not. A filter that builds
 * its result outside the arena (join, replace) asks as it grows: a chain of joins
 * grows a string exponentially.
 */
bool jr_room(struct jrender *r, size_t n);

/* Values (jinja_value.c). */
struct jv jv_undef(const char *name);
struct jv jv_none(void);
struct jv jv_bool(bool b);
struct jv jv_int(int64_t i);
struct jv jv_float(double f);
struct jv jv_str(struct jrender *r, const char *s, size_t n);
/* jv_from_sbuf - a string value of @b's text, then @b freed; an OOM in @b fails the render. */
struct jv jv_from_sbuf(struct jrender *r, struct sbuf *b);
struct jv jv_list(struct jrender *r, size_t cap);
struct jv jv_dict(struct jrender *r, size_t cap);
bool jv_list_push(struct jrender *r, struct jv list, struct jv item);
bool jv_dict_set(struct jrender *r, struct jdict *d, struct jv key, struct jv val);
struct jv *jv_dict_get(const struct jdict *d, const char *key, size_t n);
bool jv_truthy(struct jv v);
bool jv_equal(struct jv a, struct jv b);
const char *jv_type_name(struct jv v);
/* jv_to_string - str(v) as Python/jinja2 prints it, appended to @out. */
void jv_to_string(struct jv v, struct sbuf *out);
/* jv_tojson - transformers' tojson; false on values JSON cannot hold. */
bool jv_tojson(struct jv v, int indent, bool sort_keys, int level, struct sbuf *out);
/* jv_from_json - a deep copy of @j. */
struct jv jv_from_json(struct jrender *r, const void *j);
/* jv_len_chars - code points of a string. */
size_t jv_len_chars(const struct jstr *s);

/* Evaluation (jinja_eval.c). */
struct jv jr_eval(struct jrender *r, const struct jexpr *e);
void jr_exec_body(struct jrender *r, const struct jbody *b, struct sbuf *out);
struct jv jr_lookup(struct jrender *r, const char *name);
bool jr_set(struct jrender *r, const char *name, struct jv v);
struct jv jr_call_macro(struct jrender *r, const struct jmacro *m, size_t pos, struct jv *args,
                        size_t n, const char **kwn, struct jv *kwv, size_t nkw);
/* jr_iterate - the items a for loop over @v sees (dict: keys, string: chars); false on error. */
bool jr_iterate(struct jrender *r, struct jv v, size_t pos, struct jv **items, size_t *n);

/* Builtins (jinja_builtins.c). */
struct jv jr_filter(struct jrender *r, const struct jexpr *e, struct jv v, struct jv *args,
                    size_t n, const char **kwn, struct jv *kwv, size_t nkw);
bool jr_test(struct jrender *r, const struct jexpr *e, const char *name, struct jv v,
             struct jv *args, size_t n);
struct jv jr_call_func(struct jrender *r, const struct jfunc *f, size_t pos, struct jv *args,
                       size_t n, const char **kwn, struct jv *kwv, size_t nkw);
/* jr_method - the bound method @name of @self, or undefined. */
struct jv jr_method(struct jrender *r, struct jv self, const char *name);
/* jr_strip - str.strip (@how 3), lstrip (1), rstrip (2); @chars NULL: Unicode whitespace. */
struct jv jr_strip(struct jrender *r, struct jv v, const struct jstr *chars, int how);
/* jr_case - ASCII lower ('l'), upper ('u'), capitalize ('c'), title ('t') of a string. */
struct jv jr_case(struct jrender *r, struct jv v, int mode);
/* jr_global - a builtin global function by name, or undefined. */
struct jv jr_global(struct jrender *r, const char *name);
