/*
 * jinja_stmt.c - statements: the template body, if/elif/else, for, set
 * (name, tuple, ns.attr, block), macro, call block, break, continue,
 * generation. Expressions are parsed in jinja_parse.c.
 */
#include <string.h>

#include "jinja_internal.h"

static bool parse_body(struct parser *p, struct jbody *b, const char *const *ends);

static bool
body_push(struct parser *p, struct jbody *b, struct jnode *n)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct jnode **v = jp_alloc(p, cap * sizeof(*v));
		if (v == NULL)
			return false;
		if (b->n)
			memcpy(v, b->v, b->n * sizeof(*v));
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = n;
	return true;
}

static struct jnode *
mkn(struct parser *p, enum jn_kind kind, size_t pos)
{
	struct jnode *n = jp_alloc(p, sizeof(*n));

	if (n != NULL) {
		n->kind = kind;
		n->pos = pos;
	}
	return n;
}

static bool
end_block(struct parser *p)
{
	if (jp_peek(p)->type == JT_BLOCK_END) {
		jp_next(p);
		return true;
	}
	jp_err(p, jp_peek(p), "expected '%%}', found '%.*s'", (int)jp_peek(p)->n, jp_peek(p)->s);
	return false;
}

/* "{% NAME" is jp_next: consume "{%" and the name. */
static void
eat_tag(struct parser *p)
{
	jp_next(p);
	jp_next(p);
}

static bool
at_tag(struct parser *p, const char *name)
{
	return jp_peek(p)->type == JT_BLOCK_BEGIN && jp_tok_is(&p->tok[p->i + 1], JT_NAME, name);
}

static struct jnode *
parse_if(struct parser *p, size_t pos)
{
	static const char *const ends[] = {"elif", "else", "endif", NULL};
	struct jexpr *conds[MAX_ITEMS];
	struct jbody bodies[MAX_ITEMS];
	struct jnode *n = mkn(p, JN_IF, pos);
	size_t k = 0;

	do {
		if (k == MAX_ITEMS)
			return jp_err(p, jp_peek(p), "too many elif branches");
		conds[k] = jp_expr(p, true);
		bodies[k] = (struct jbody){0};
		if (!end_block(p) || !parse_body(p, &bodies[k++], ends))
			return NULL;
	} while (at_tag(p, "elif") && (eat_tag(p), true));
	if (at_tag(p, "else")) {
		eat_tag(p);
		if (n == NULL || !end_block(p) || !parse_body(p, &n->else_body, ends + 2))
			return NULL;
	}
	if (n == NULL || !at_tag(p, "endif"))
		return jp_err(p, jp_peek(p), "expected {%% endif %%}");
	eat_tag(p);
	n->conds = jp_copy_list(p, conds, k);
	n->bodies = jp_alloc(p, k * sizeof(*n->bodies));
	if (n->bodies != NULL)
		memcpy(n->bodies, bodies, k * sizeof(*bodies));
	n->n_conds = k;
	return end_block(p) ? n : NULL;
}

static bool
parse_targets(struct parser *p, struct jnode *n)
{
	const char *names[16];
	size_t k = 0;

	do {
		if (k == 16)
			return jp_err(p, jp_peek(p), "too many loop targets") != NULL;
		if ((names[k++] = jp_expect_name(p)) == NULL)
			return false;
	} while (jp_at_op(p, ",") && (jp_next(p), true));
	n->targets = jp_alloc(p, k * sizeof(*n->targets));
	if (n->targets == NULL)
		return false;
	memcpy(n->targets, names, k * sizeof(*names));
	n->n_targets = k;
	return true;
}

static struct jnode *
parse_for(struct parser *p, size_t pos)
{
	static const char *const ends[] = {"else", "endfor", NULL};
	struct jnode *n = mkn(p, JN_FOR, pos);

	if (n == NULL || !parse_targets(p, n))
		return NULL;
	if (!jp_at_name(p, "in"))
		return jp_err(p, jp_peek(p), "expected 'in' in for loop");
	jp_next(p);
	n->expr = jp_tuple_expr(p, false);
	if (jp_at_name(p, "if")) {
		jp_next(p);
		n->cond = jp_expr(p, false);
	}
	if (jp_at_name(p, "recursive"))
		return jp_err(p, jp_peek(p), "recursive loops are not supported");
	if (!end_block(p) || !parse_body(p, &n->body, ends))
		return NULL;
	if (at_tag(p, "else")) {
		eat_tag(p);
		if (!end_block(p) || !parse_body(p, &n->else_body, ends + 1))
			return NULL;
	}
	if (!at_tag(p, "endfor"))
		return jp_err(p, jp_peek(p), "expected {%% endfor %%}");
	eat_tag(p);
	return end_block(p) ? n : NULL;
}

static struct jnode *
parse_set(struct parser *p, size_t pos)
{
	static const char *const ends[] = {"endset", NULL};
	struct jnode *n = mkn(p, JN_SET, pos);

	if (n == NULL || !parse_targets(p, n))
		return NULL;
	if (n->n_targets == 1 && jp_at_op(p, ".")) {
		jp_next(p);
		n->attr = jp_expect_name(p);
	}
	if (jp_peek(p)->type == JT_BLOCK_END && n->n_targets == 1 && n->attr == NULL) {
		jp_next(p);
		n->kind = JN_SET_BLOCK;
		if (!parse_body(p, &n->body, ends) || !at_tag(p, "endset"))
			return jp_err(p, jp_peek(p), "expected {%% endset %%}");
		eat_tag(p);
		return end_block(p) ? n : NULL;
	}
	if (!jp_expect_op(p, "="))
		return NULL;
	n->expr = jp_tuple_expr(p, true);
	return end_block(p) ? n : NULL;
}

static bool
parse_params(struct parser *p, struct jnode *n)
{
	const char *names[64];
	struct jexpr *defs[64];
	size_t k = 0;

	if (!jp_expect_op(p, "("))
		return false;
	while (!jp_at_op(p, ")") && !p->failed && k < 64) {
		names[k] = jp_expect_name(p);
		defs[k] = NULL;
		if (jp_at_op(p, "=")) {
			jp_next(p);
			defs[k] = jp_expr(p, true);
		}
		k++;
		if (!jp_at_op(p, ","))
			break;
		jp_next(p);
	}
	if (!jp_expect_op(p, ")"))
		return false;
	n->params = jp_alloc(p, (k ? k : 1) * sizeof(*n->params));
	n->defaults = jp_copy_list(p, defs, k);
	if (n->params != NULL)
		memcpy(n->params, names, k * sizeof(*names));
	n->n_params = k;
	return !p->failed;
}

static struct jnode *
parse_macro(struct parser *p, size_t pos, bool call_block)
{
	static const char *const macro_end[] = {"endmacro", NULL}, *const call_end[] = {"endcall",
	                                                                                NULL};
	struct jnode *n = mkn(p, call_block ? JN_CALL_BLOCK : JN_MACRO, pos);

	if (n == NULL)
		return NULL;
	if (call_block) {
		if (jp_at_op(p, "(") && !parse_params(p, n))
			return NULL;
		n->expr = jp_expr(p, true);
		if (n->expr == NULL || n->expr->kind != JX_CALL)
			return jp_err(p, jp_peek(p), "{%% call %%} needs a macro call");
	} else if ((n->name = jp_expect_name(p)) == NULL || !parse_params(p, n)) {
		return NULL;
	}
	if (!end_block(p) || !parse_body(p, &n->body, call_block ? call_end : macro_end))
		return NULL;
	if (!at_tag(p, call_block ? "endcall" : "endmacro"))
		return jp_err(p, jp_peek(p), "expected {%% %s %%}",
		              call_block ? "endcall" : "endmacro");
	eat_tag(p);
	return end_block(p) ? n : NULL;
}

static struct jnode *
parse_statement(struct parser *p)
{
	static const char *const gen_end[] = {"endgeneration", NULL};
	const struct jtoken *kw = &p->tok[p->i + 1];
	size_t pos = kw->pos;
	struct jnode *n;

	if (kw->type != JT_NAME)
		return jp_err(p, kw, "expected a statement name");
	eat_tag(p);
	if (jp_tok_is(kw, JT_NAME, "if"))
		return parse_if(p, pos);
	if (jp_tok_is(kw, JT_NAME, "for"))
		return parse_for(p, pos);
	if (jp_tok_is(kw, JT_NAME, "set"))
		return parse_set(p, pos);
	if (jp_tok_is(kw, JT_NAME, "macro") || jp_tok_is(kw, JT_NAME, "call"))
		return parse_macro(p, pos, jp_tok_is(kw, JT_NAME, "call"));
	if (jp_tok_is(kw, JT_NAME, "break") || jp_tok_is(kw, JT_NAME, "continue")) {
		n = mkn(p, jp_tok_is(kw, JT_NAME, "break") ? JN_BREAK : JN_CONTINUE, pos);
		return end_block(p) ? n : NULL;
	}
	if (jp_tok_is(kw, JT_NAME, "generation")) {
		if ((n = mkn(p, JN_GENERATION, pos)) == NULL || !end_block(p) ||
		    !parse_body(p, &n->body, gen_end) || !at_tag(p, "endgeneration"))
			return jp_err(p, jp_peek(p), "expected {%% endgeneration %%}");
		eat_tag(p);
		return end_block(p) ? n : NULL;
	}
	return jp_err(p, kw, "unknown statement '%.*s'", (int)kw->n, kw->s);
}

/* Nodes until EOF (@ends NULL) or a "{% NAME" with NAME in @ends, left unconsumed. */
static bool
parse_body(struct parser *p, struct jbody *b, const char *const *ends)
{
	while (!p->failed) {
		const struct jtoken *t = jp_peek(p);
		struct jnode *n = NULL;
		if (t->type == JT_EOF) {
			if (ends != NULL) {
				const char *const *last = ends;
				while (last[1] != NULL)
					last++;
				jp_err(p, t, "unexpected end of template, expected {%% %s %%}",
				       *last);
			}
			break;
		}
		if (t->type == JT_BLOCK_BEGIN && ends != NULL) {
			bool stop = false;
			for (const char *const *e = ends; *e != NULL; e++)
				stop |= jp_tok_is(&p->tok[p->i + 1], JT_NAME, *e);
			if (stop)
				return true;
		}
		if (t->type == JT_TEXT) {
			jp_next(p);
			if ((n = mkn(p, JN_TEXT, t->pos)) != NULL) {
				n->text = t->s;
				n->text_n = t->n;
			}
		} else if (t->type == JT_VAR_BEGIN) {
			jp_next(p);
			if ((n = mkn(p, JN_OUTPUT, t->pos)) != NULL)
				n->expr = jp_tuple_expr(p, true);
			if (jp_peek(p)->type != JT_VAR_END)
				return jp_err(p, jp_peek(p), "expected '}}', found '%.*s'",
				              (int)jp_peek(p)->n, jp_peek(p)->s) != NULL;
			jp_next(p);
		} else if (t->type == JT_BLOCK_BEGIN) {
			n = parse_statement(p);
		} else {
			return jp_err(p, t, "unexpected '%.*s'", (int)t->n, t->s) != NULL;
		}
		if (n == NULL || !body_push(p, b, n))
			break;
	}
	return !p->failed;
}

orch_err
jinja_parse(struct jinja_tmpl *t, const struct jlex *lex, struct orch_errinfo *reterr)
{
	struct parser p = {t, lex->v, 0, lex->n, reterr, ORCH_OK, 0};

	parse_body(&p, &t->root, NULL);
	return p.failed;
}
