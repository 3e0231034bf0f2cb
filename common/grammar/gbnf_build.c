/*
 * gbnf_build.c - what the GBNF parser (gbnf.c), the lowering of classes and
 * repetitions (gbnf_lower.c) and token terminals (gram_tok.c) build rules
 * with: the first failure, new rules, elements appended (gbnf_int.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "gbnf_int.h"

bool
gbnf_fail(struct gbnf *p, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return false;
	p->failed = true;
	p->err->line = p->line;
	p->err->col = (uint32_t)(p->s - p->line_start) + 1;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return false;
}

bool
gbnf_oom(struct gbnf *p)
{
	gbnf_fail(p, "out of memory");
	p->err->line = p->err->col = 0;
	return false;
}

bool
gbnf_add_rule(struct gbnf *p, const char *name, uint32_t len, const char *at, uint32_t *ret)
{
	if (!gram_grow((void **)&p->rules, &p->cap_rules, p->n_rules, sizeof(*p->rules), 64))
		return gbnf_oom(p);
	p->rules[p->n_rules] = (struct gbnf_rule){
	        .name = name,
	        .name_len = len,
	        .line = p->line,
	        .col = (uint32_t)(at - p->line_start) + 1,
	};
	*ret = p->n_rules++;
	return true;
}

bool
gbnf_new_rule(struct gbnf *p, uint32_t *ret)
{
	if (!gbnf_add_rule(p, NULL, 0, p->s, ret))
		return false;
	p->rules[*ret].defined = true;
	return true;
}

bool
gbnf_push(struct gbnf *p, uint32_t r, uint32_t kind, uint32_t arg)
{
	struct gbnf_elems *e = &p->rules[r].body;

	if (++p->n_el > GRAM_ELEMS_MAX)
		return gbnf_fail(p, "the grammar is too large (over %u elements)", GRAM_ELEMS_MAX);
	if (!gram_grow((void **)&e->v, &e->cap, e->n, sizeof(*e->v), 8))
		return gbnf_oom(p);
	e->v[e->n++] = (struct gram_elem){kind, arg};
	return true;
}
