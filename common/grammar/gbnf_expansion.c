/*
 * gbnf_expansion.c - the compiler's expansion check (GRAM_EXPANSION_MAX in
 * grammar.h): what a grammar's nested repetitions make a matcher visit at
 * once, refused past the limit with the nesting that makes it.
 *
 * Design notes:
 * - The lowering never copies x for x{m,n}: its copies are rules that refer
 *   to x (gbnf_lower.c), so nesting costs the compiler nothing. It costs the
 *   matcher: when x can match the empty string, one step (gram_match.c)
 *   enters every copy of x, and inside each every copy of what x repeats,
 *   each a distinct stack, without a byte between them.
 *   ((x{0,100}){0,100}){0,100} is 10^6 stacks before the first byte.
 * - E(r), what rule r expands to, is the largest of E of every rule r refers
 *   to and, for each repetition the parser noted in r (gbnf_int.h), count ·
 *   E(x) when x can match the empty string, else its count alone (a byte
 *   separates its copies, so a matcher is in one of them at a time).
 * - One depth-first walk over the references from the start rule settles
 *   each rule after its children: linear in the elements. A rule met while
 *   still open (recursion) counts 1 so far; recursion goes through a byte
 *   (left recursion is refused first). Products saturate at EXP_SAT, so
 *   nothing overflows however deep the nesting.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "gbnf_int.h"

#define EXP_SAT ((uint64_t)1 << 62)

/* The repetitions a message names, innermost first; deeper ones are "...". */
#define EXP_NAMED 5

struct exp_walk {
	const struct gbnf *p;
	const bool *nullable; /* [n_rules] */
	uint64_t *e;          /* [n_rules]: E(r); 1 until settled */
	/* [n_rules]: what makes e: a rule (< n_rules), n_rules + a repetition, or GRAM_NONE */
	uint32_t *wit;
	uint32_t *rep_first;  /* [n_rules + 1]: rule r's repetitions: rep_ix[rep_first[r] ..] */
	uint32_t *rep_ix;     /* [n_reps] */
	uint32_t *stack, *at; /* [n_rules] each: the walk's open rules, and each one's next child */
	uint8_t *color;       /* [n_rules]: 0 not met, 1 open, 2 settled */
};

static uint64_t
sat_mul(uint64_t a, uint64_t b)
{
	return a != 0 && b > EXP_SAT / a ? EXP_SAT : a * b;
}

/* Whether repetition @rp multiplies by what its x expands to: x can match the empty string. */
static bool
multiplies(const struct exp_walk *w, const struct gbnf_rep *rp)
{
	return rp->x.kind == GE_REF && w->nullable[rp->x.arg];
}

static uint64_t
rep_value(const struct exp_walk *w, const struct gbnf_rep *rp)
{
	return multiplies(w, rp) ? sat_mul(rp->count, w->e[rp->x.arg]) : rp->count;
}

/* Child @i of rule @r: its elements, then its repetitions' x; GRAM_NONE when no rule. */
static uint32_t
child(const struct exp_walk *w, uint32_t r, uint32_t i)
{
	const struct gbnf_elems *b = &w->p->rules[r].body;
	struct gram_elem x;

	if (i < b->n)
		x = b->v[i];
	else
		x = w->p->reps[w->rep_ix[w->rep_first[r] + i - b->n]].x;
	return x.kind == GE_REF ? x.arg : GRAM_NONE;
}

/* E(@r) from its children's (settled, or open and counting 1). */
static void
settle(struct exp_walk *w, uint32_t r)
{
	const struct gbnf_elems *b = &w->p->rules[r].body;
	uint64_t e = 1;
	uint32_t wit = GRAM_NONE;

	for (uint32_t i = 0; i < b->n; i++)
		if (b->v[i].kind == GE_REF && w->e[b->v[i].arg] > e) {
			e = w->e[b->v[i].arg];
			wit = b->v[i].arg;
		}
	for (uint32_t k = w->rep_first[r]; k < w->rep_first[r + 1]; k++) {
		uint64_t v = rep_value(w, &w->p->reps[w->rep_ix[k]]);
		if (v > e) {
			e = v;
			wit = w->p->n_rules + w->rep_ix[k];
		}
	}
	w->e[r] = e;
	w->wit[r] = wit;
}

/* Settle every rule @root reaches, children first. */
static void
walk(struct exp_walk *w, uint32_t root)
{
	uint32_t sp = 0;

	w->color[root] = 1;
	w->stack[sp] = root;
	w->at[sp++] = 0;
	while (sp > 0) {
		uint32_t r = w->stack[sp - 1], *i = &w->at[sp - 1], next = GRAM_NONE;
		uint32_t n = w->p->rules[r].body.n + w->rep_first[r + 1] - w->rep_first[r];
		for (; *i < n && next == GRAM_NONE; (*i)++) {
			uint32_t s = child(w, r, *i);
			if (s != GRAM_NONE && w->color[s] == 0)
				next = s;
		}
		if (next == GRAM_NONE) {
			settle(w, r);
			w->color[r] = 2;
			sp--;
			continue;
		}
		w->color[next] = 1;
		w->stack[sp] = next;
		w->at[sp++] = 0;
	}
}

/* Append to @buf (@size bytes, holding *@len) as snprintf would, cut to fit. */
static void
put(char *buf, size_t size, size_t *len, const struct gbnf_rep *rp, bool last)
{
	int k;

	if (rp == NULL)
		k = snprintf(buf + *len, size - *len, "... inside ");
	else if (rp->min == rp->max)
		k = snprintf(buf + *len, size - *len, "x{%u}%s", rp->min, last ? "" : " inside ");
	else if (rp->max == UINT32_MAX)
		k = snprintf(buf + *len, size - *len, "x{%u,}%s", rp->min, last ? "" : " inside ");
	else
		k = snprintf(buf + *len, size - *len, "x{%u,%u}%s", rp->min, rp->max,
		             last ? "" : " inside ");
	if (k > 0)
		*len += (size_t)k < size - *len ? (size_t)k : size - *len - 1;
}

/*
 * The nesting of repetitions that makes E(@r), innermost first, into @buf
 * (@size bytes); the outermost of them into *@outer (NULL: none).
 */
static void
describe(const struct exp_walk *w, uint32_t r, char *buf, size_t size,
         const struct gbnf_rep **outer)
{
	const struct gbnf_rep *named[EXP_NAMED];
	uint32_t n = 0, n_rules = w->p->n_rules;
	size_t len = 0;
	bool more = false;

	*outer = NULL;
	buf[0] = '\0';
	for (uint32_t steps = 0; steps < n_rules && w->wit[r] != GRAM_NONE; steps++) {
		if (w->wit[r] < n_rules) {
			r = w->wit[r];
			continue;
		}
		const struct gbnf_rep *rp = &w->p->reps[w->wit[r] - n_rules];
		if (*outer == NULL)
			*outer = rp;
		more |= n == EXP_NAMED;
		if (n < EXP_NAMED)
			named[n++] = rp;
		if (!multiplies(w, rp) || w->e[rp->x.arg] <= 1)
			break;
		r = rp->x.arg;
	}
	if (more)
		put(buf, size, &len, NULL, false);
	for (uint32_t i = n; i-- > 0;)
		put(buf, size, &len, named[i], i == 0);
}

/* Rule r's repetitions, by rule: w->rep_first and w->rep_ix. */
static void
index_reps(struct exp_walk *w)
{
	const struct gbnf *p = w->p;

	for (uint32_t i = 0; i < p->n_reps; i++)
		w->rep_first[p->reps[i].rule + 1]++;
	for (uint32_t r = 0; r < p->n_rules; r++)
		w->rep_first[r + 1] += w->rep_first[r];
	for (uint32_t i = 0; i < p->n_reps; i++) /* rep_first[r] walks to r's end, then back */
		w->rep_ix[w->rep_first[p->reps[i].rule]++] = i;
	for (uint32_t r = p->n_rules; r > 0; r--)
		w->rep_first[r] = w->rep_first[r - 1];
	w->rep_first[0] = 0;
}

/* Refuse @p's grammar when E(@root) is over GRAM_EXPANSION_MAX (where and why in p->err). */
static orch_err
check(struct gbnf *p, struct exp_walk *w, uint32_t root, uint64_t *ret)
{
	const struct gbnf_rep *outer;
	char chain[112];

	index_reps(w);
	for (uint32_t r = 0; r < p->n_rules; r++)
		w->e[r] = 1;
	walk(w, root);
	*ret = w->e[root];
	if (w->e[root] <= GRAM_EXPANSION_MAX)
		return ORCH_OK;
	describe(w, root, chain, sizeof(chain), &outer);
	p->err->line = outer ? outer->line : 0;
	p->err->col = outer ? outer->col : 0;
	snprintf(p->err->msg, sizeof(p->err->msg),
	         "the grammar's repetitions expand to %" PRIu64 " parse positions (%s); at most "
	         "%u (a repetition of what can match the empty string multiplies)",
	         w->e[root], chain, GRAM_EXPANSION_MAX);
	return ORCH_EINVAL;
}

orch_err
gbnf_expansion(struct gbnf *p, const bool *nullable, uint32_t root, uint64_t *ret)
{
	uint32_t n = p->n_rules;
	struct exp_walk w = {
	        .p = p,
	        .nullable = nullable,
	        .e = orch_calloc(n, sizeof(*w.e)),
	        .wit = orch_calloc(n, sizeof(*w.wit)),
	        .rep_first = orch_calloc((size_t)n + 1, sizeof(*w.rep_first)),
	        .rep_ix = orch_calloc(p->n_reps ? p->n_reps : 1, sizeof(*w.rep_ix)),
	        .stack = orch_calloc(n, 2 * sizeof(*w.stack)),
	        .color = orch_calloc(n, sizeof(*w.color)),
	};
	orch_err rv = ORCH_ENOMEM;

	if (w.e != NULL && w.wit != NULL && w.rep_first != NULL && w.rep_ix != NULL &&
	    w.stack != NULL && w.color != NULL) {
		w.at = w.stack + n;
		rv = check(p, &w, root, ret);
	}
	free(w.e);
	free(w.wit);
	free(w.rep_first);
	free(w.rep_ix);
	free(w.stack);
	free(w.color);
	return rv;
}
