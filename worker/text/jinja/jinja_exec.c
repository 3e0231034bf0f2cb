/*
 * jinja_exec.c - statements: output, if, for (with loop.*, filters, else,
 * break/continue), set (names, tuples, namespace attributes, blocks),
 * macros and their calls, call blocks, generation.
 */
#include <stdio.h>
#include <string.h>

#include "jinja_internal.h"

bool
jr_iterate(struct jrender *r, struct jv v, size_t pos, struct jv **items, size_t *n)
{
	struct jv *out;

	switch (v.t) {
	case JV_UNDEF: /* an undefined value iterates as empty */
		*items = NULL;
		*n = 0;
		return true;
	case JV_LIST:
		*items = v.u.l->v;
		*n = v.u.l->n;
		return true;
	case JV_DICT:
		*items = v.u.d->k;
		*n = v.u.d->n;
		return true;
	case JV_STR: {
		size_t k = 0;
		out = jr_alloc(r, (v.u.s->n + 1) * sizeof(*out));
		if (out == NULL)
			return jr_fail(r, pos, ORCH_ENOMEM, "out of memory"), false;
		for (size_t i = 0; i < v.u.s->n;) {
			size_t j = i + 1;
			while (j < v.u.s->n && ((unsigned char)v.u.s->s[j] & 0xc0) == 0x80)
				j++;
			out[k++] = jv_str(r, v.u.s->s + i, j - i);
			i = j;
		}
		*items = out;
		*n = k;
		return true;
	}
	case JV_NONE:
	case JV_BOOL:
	case JV_INT:
	case JV_FLOAT:
	case JV_FUNC:
	case JV_MACRO:
		break;
	}
	jr_fail(r, pos, ORCH_ETEMPLATE, "'%s' object is not iterable", jv_type_name(v));
	return false;
}

/* Bind @v to the targets of @n (one name, or a tuple to unpack). */
static bool
bind_targets(struct jrender *r, const struct jnode *n, struct jv v)
{
	if (n->n_targets == 1)
		return jr_set(r, n->targets[0], v);
	if (v.t != JV_LIST || v.u.l->n != n->n_targets)
		return jr_fail(r, n->pos, ORCH_ETEMPLATE, "cannot unpack %s into %zu names",
		               jv_type_name(v), n->n_targets),
		       false;
	for (size_t i = 0; i < n->n_targets; i++)
		if (!jr_set(r, n->targets[i], v.u.l->v[i]))
			return false;
	return true;
}

static struct jv
loop_object(struct jrender *r, struct jv *items, size_t n, size_t i)
{
	struct jv d = jv_dict(r, 10);
	static const char *const keys[] = {"index", "index0", "revindex", "revindex0", "first",
	                                   "last",  "length", "previtem", "nextitem"};
	struct jv vals[9] = {jv_int((int64_t)i + 1),
	                     jv_int((int64_t)i),
	                     jv_int((int64_t)(n - i)),
	                     jv_int((int64_t)(n - i - 1)),
	                     jv_bool(i == 0),
	                     jv_bool(i + 1 == n),
	                     jv_int((int64_t)n),
	                     i > 0 ? items[i - 1] : jv_undef("previtem"),
	                     i + 1 < n ? items[i + 1] : jv_undef("nextitem")};

	for (size_t k = 0; k < 9 && d.t == JV_DICT; k++)
		jv_dict_set(r, d.u.d, jv_str(r, keys[k], strlen(keys[k])), vals[k]);
	return d;
}

/* The items that pass the loop's "if" filter, evaluated with the targets bound. */
static bool
filter_items(struct jrender *r, const struct jnode *n, struct jv **items, size_t *count)
{
	struct jv *kept = jr_alloc(r, (*count + 1) * sizeof(*kept));
	size_t k = 0;

	if (kept == NULL)
		return jr_fail(r, n->pos, ORCH_ENOMEM, "out of memory"), false;
	for (size_t i = 0; i < *count && !r->failed; i++) {
		struct jscope s = {.parent = r->scope};
		r->scope = &s;
		if (bind_targets(r, n, (*items)[i]) && jv_truthy(jr_eval(r, n->cond)))
			kept[k++] = (*items)[i];
		r->scope = s.parent;
	}
	*items = kept;
	*count = k;
	return !r->failed;
}

static void
exec_for(struct jrender *r, const struct jnode *n, struct sbuf *out)
{
	struct jv *items;
	size_t count;

	if (!jr_iterate(r, jr_eval(r, n->expr), n->pos, &items, &count))
		return;
	if (n->cond != NULL && !filter_items(r, n, &items, &count))
		return;
	for (size_t i = 0; i < count && !r->failed; i++) {
		struct jscope s = {.parent = r->scope};
		r->scope = &s;
		if (bind_targets(r, n, items[i]) &&
		    jr_set(r, "loop", loop_object(r, items, count, i)))
			jr_exec_body(r, &n->body, out);
		r->scope = s.parent;
		if (r->loop_ctl == 1) {
			r->loop_ctl = 0;
			break;
		}
		r->loop_ctl = 0;
	}
	if (count == 0)
		jr_exec_body(r, &n->else_body, out);
}

static void
exec_set(struct jrender *r, const struct jnode *n)
{
	struct jv v = jr_eval(r, n->expr);

	if (r->failed)
		return;
	if (n->attr == NULL) {
		bind_targets(r, n, v);
		return;
	}
	struct jv ns = jr_lookup(r, n->targets[0]);
	if (ns.t != JV_DICT || !ns.u.d->ns) {
		jr_fail(r, n->pos, ORCH_ETEMPLATE,
		        "cannot assign attribute on non-namespace object");
		return;
	}
	jv_dict_set(r, ns.u.d, jv_str(r, n->attr, strlen(n->attr)), v);
}

static void
exec_if(struct jrender *r, const struct jnode *n, struct sbuf *out)
{
	for (size_t i = 0; i < n->n_conds && !r->failed; i++) {
		if (jv_truthy(jr_eval(r, n->conds[i]))) {
			jr_exec_body(r, &n->bodies[i], out);
			return;
		}
	}
	jr_exec_body(r, &n->else_body, out);
}

static struct jv
macro_value(struct jrender *r, const struct jnode *n)
{
	struct jmacro *m = jr_alloc(r, sizeof(*m));

	if (m == NULL) {
		jr_fail(r, n->pos, ORCH_ENOMEM, "out of memory");
		return jv_undef(NULL);
	}
	m->def = n;
	return (struct jv){.t = JV_MACRO, .u.m = m};
}

struct jv
jr_call_macro(struct jrender *r, const struct jmacro *m, size_t pos, struct jv *args, size_t n,
              const char **kwn, struct jv *kwv, size_t nkw)
{
	const struct jnode *d = m->def;
	struct jscope s = {.parent = r->root}, *saved = r->scope;
	struct sbuf body = {0};
	struct jv ret;

	if (n > d->n_params)
		return jr_fail(r, pos, ORCH_ETEMPLATE, "macro '%s' takes %zu arguments, %zu given",
		               d->name ? d->name : "caller", d->n_params, n),
		       jv_undef(NULL);
	if (r->depth >= JINJA_MAX_DEPTH)
		return jr_fail(r, pos, ORCH_ETEMPLATE, "macros nested too deeply"), jv_undef(NULL);
	r->depth++;
	r->scope = &s;
	for (size_t i = 0; i < d->n_params && !r->failed; i++) {
		struct jv v = i < n            ? args[i]
		              : d->defaults[i] ? jr_eval(r, d->defaults[i])
		                               : jv_undef(d->params[i]);
		for (size_t k = 0; k < nkw; k++)
			if (strcmp(kwn[k], d->params[i]) == 0)
				v = kwv[k];
		jr_set(r, d->params[i], v);
	}
	jr_exec_body(r, &d->body, &body);
	r->scope = saved;
	r->depth--;
	ret = jv_from_sbuf(r, &body);
	return r->failed ? jv_undef(NULL) : ret;
}

/*
 * {% call m(args) %}body{% endcall %}: m runs with caller() rendering body.
 * Macros see the top-level scope, so caller is bound there for the call.
 */
static void
exec_call_block(struct jrender *r, const struct jnode *n, struct sbuf *out)
{
	struct jv *slot = jv_dict_get(&r->root->vars, "caller", 6);
	struct jv saved = slot != NULL ? *slot : jv_undef("caller"), v;

	jv_dict_set(r, &r->root->vars, jv_str(r, "caller", 6), macro_value(r, n));
	v = jr_eval(r, n->expr);
	jv_dict_set(r, &r->root->vars, jv_str(r, "caller", 6), saved);
	if (!r->failed)
		jv_to_string(v, out);
}

static void
exec_node(struct jrender *r, const struct jnode *n, struct sbuf *out)
{
	struct sbuf block = {0};

	switch (n->kind) {
	case JN_TEXT:
		sbuf_put(out, n->text, n->text_n);
		break;
	case JN_OUTPUT:
		jv_to_string(jr_eval(r, n->expr), out);
		break;
	case JN_IF:
		exec_if(r, n, out);
		break;
	case JN_FOR:
		exec_for(r, n, out);
		break;
	case JN_SET:
		exec_set(r, n);
		break;
	case JN_SET_BLOCK:
		jr_exec_body(r, &n->body, &block);
		jr_set(r, n->targets[0], jv_from_sbuf(r, &block));
		break;
	case JN_MACRO:
		jr_set(r, n->name, macro_value(r, n));
		break;
	case JN_CALL_BLOCK:
		exec_call_block(r, n, out);
		break;
	case JN_BREAK:
		r->loop_ctl = 1;
		break;
	case JN_CONTINUE:
		r->loop_ctl = 2;
		break;
	case JN_GENERATION:
		jr_exec_body(r, &n->body, out);
		break;
	}
}

void
jr_exec_body(struct jrender *r, const struct jbody *b, struct sbuf *out)
{
	for (size_t i = 0; i < b->n && !r->failed && r->loop_ctl == 0; i++) {
		exec_node(r, b->v[i], out);
		if (out->n > JINJA_MAX_OUTPUT)
			jr_fail(r, b->v[i]->pos, ORCH_ETEMPLATE, "output exceeds %u bytes",
			        JINJA_MAX_OUTPUT);
	}
}
