/*
 * gbnf_lower.c - the compiler's lowering to bytes (gbnf_int.h) and its end:
 *
 * - A class of code points becomes one byte set when it is all ASCII, else a
 *   rule with an alternative per UTF-8 shape of its ranges ([\u0080-\u07FF]
 *   is [\xC2-\xDF][\x80-\xBF]), split so that every byte of a shape is a
 *   range: then a run of bytes matches iff it is one well-formed character
 *   of the class.
 * - x* is a rule R ::= x R | (empty); x{m,n} is m copies of x then a chain
 *   of n - m optional ones. The recursion is at the tail, where the matcher
 *   does not grow its stacks (gram_match.c).
 * - gbnf_finish refuses an undefined rule and left recursion (which would
 *   expand forever), and repetitions nested past GRAM_EXPANSION_MAX
 *   (gbnf_expansion.c), then lays every rule out in one array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "gbnf_int.h"

static uint32_t
set_hash(const struct gram_set *set)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 4; i++) {
		h = (h ^ set->w[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

/* Grow the sets' index (open addressing: a set or GRAM_NONE) to twice the sets, at least. */
static bool
sets_index_grow(struct gbnf *p)
{
	uint32_t size = p->set_ix ? (p->set_mask + 1) * 2 : 256;
	uint32_t *ix = orch_reallocarray(NULL, size, sizeof(*ix));

	if (ix == NULL)
		return gbnf_oom(p);
	memset(ix, 0xff, (size_t)size * sizeof(*ix));
	free(p->set_ix);
	p->set_ix = ix;
	p->set_mask = size - 1;
	for (uint32_t i = 0; i < p->n_sets; i++) {
		uint32_t k = set_hash(&p->sets[i]) & p->set_mask;
		while (ix[k] != GRAM_NONE)
			k = (k + 1) & p->set_mask;
		ix[k] = i;
	}
	return true;
}

bool
gbnf_set(struct gbnf *p, const struct gram_set *set, uint32_t *ret)
{
	uint32_t k;

	if ((p->set_ix == NULL || 2 * (p->n_sets + 1) > p->set_mask + 1) && !sets_index_grow(p))
		return false;
	for (k = set_hash(set) & p->set_mask; p->set_ix[k] != GRAM_NONE; k = (k + 1) & p->set_mask)
		if (memcmp(&p->sets[p->set_ix[k]], set, sizeof(*set)) == 0) {
			*ret = p->set_ix[k];
			return true;
		}
	if (!gram_grow((void **)&p->sets, &p->cap_sets, p->n_sets, sizeof(*p->sets), 64))
		return gbnf_oom(p);
	p->sets[p->n_sets] = *set;
	p->set_ix[k] = p->n_sets;
	*ret = p->n_sets++;
	return true;
}

static void
set_range(struct gram_set *s, uint32_t lo, uint32_t hi)
{
	for (uint32_t b = lo; b <= hi; b++)
		s->w[b >> 6] |= 1ull << (b & 63);
}

static bool
push_range(struct gbnf *p, uint32_t r, uint32_t lo, uint32_t hi)
{
	struct gram_set s = {0};
	uint32_t k;

	set_range(&s, lo, hi);
	return gbnf_set(p, &s, &k) && gbnf_push(p, r, GE_SET, k);
}

static size_t
encode(uint32_t cp, uint8_t *out)
{
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xc0 | cp >> 6);
		out[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xe0 | cp >> 12);
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (uint8_t)(0xf0 | cp >> 18);
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * The alternatives of rule @r for code points @lo..@hi (none ASCII, no
 * surrogates): split until both ends have one length and every byte between
 * their encodings may take any value of its range (Russ Cox's construction).
 */
static bool
utf8_alts(struct gbnf *p, uint32_t r, uint32_t lo, uint32_t hi, bool *first)
{
	static const uint32_t len_max[] = {0x7ff, 0xffff};
	uint8_t a[4], b[4];

	for (int i = 0; i < 2; i++)
		if (lo <= len_max[i] && len_max[i] < hi)
			return utf8_alts(p, r, lo, len_max[i], first) &&
			       utf8_alts(p, r, len_max[i] + 1, hi, first);
	for (int i = 1; i < 4; i++) {
		uint32_t m = (1u << (6 * i)) - 1;
		if ((lo & ~m) == (hi & ~m))
			continue;
		if ((lo & m) != 0)
			return utf8_alts(p, r, lo, lo | m, first) &&
			       utf8_alts(p, r, (lo | m) + 1, hi, first);
		if ((hi & m) != m)
			return utf8_alts(p, r, lo, (hi & ~m) - 1, first) &&
			       utf8_alts(p, r, hi & ~m, hi, first);
	}
	if (!*first && !gbnf_push(p, r, GE_ALT, 0))
		return false;
	*first = false;
	size_t n = encode(lo, a);
	encode(hi, b);
	for (size_t i = 0; i < n; i++)
		if (!push_range(p, r, a[i], b[i]))
			return false;
	return true;
}

/* @lo..@hi less the surrogates, into the alternatives of @r. */
static bool
non_ascii(struct gbnf *p, uint32_t r, uint32_t lo, uint32_t hi, bool *first)
{
	if (lo < 0x80)
		lo = 0x80;
	if (lo > hi)
		return true;
	if (hi < 0xd800 || lo > 0xdfff)
		return utf8_alts(p, r, lo, hi, first);
	return (lo >= 0xd800 || utf8_alts(p, r, lo, 0xd7ff, first)) &&
	       (hi <= 0xdfff || utf8_alts(p, r, 0xe000, hi, first));
}

bool
gbnf_class(struct gbnf *p, uint32_t r, const uint32_t *lo, const uint32_t *hi, uint32_t n)
{
	struct gram_set ascii = {0};
	uint32_t c, k;
	bool first = true, any_ascii = false;

	for (uint32_t i = 0; i < n && lo[i] < 0x80; i++) {
		set_range(&ascii, lo[i], hi[i] < 0x80 ? hi[i] : 0x7f);
		any_ascii = true;
	}
	if (n == 0 || hi[n - 1] < 0x80) /* all ASCII (or nothing: a set that matches no byte) */
		return gbnf_set(p, &ascii, &k) && gbnf_push(p, r, GE_SET, k);
	if (!gbnf_new_rule(p, &c))
		return false;
	if (any_ascii) {
		if (!gbnf_set(p, &ascii, &k) || !gbnf_push(p, c, GE_SET, k))
			return false;
		first = false;
	}
	for (uint32_t i = 0; i < n; i++)
		if (hi[i] >= 0x80 && !non_ascii(p, c, lo[i], hi[i], &first))
			return false;
	if (first) /* only surrogates: nothing matches */
		return gbnf_push(p, c, GE_SET, 0) && gbnf_push(p, c, GE_END, 0) &&
		       gbnf_push(p, r, GE_REF, c);
	return gbnf_push(p, c, GE_END, 0) && gbnf_push(p, r, GE_REF, c);
}

/*
 * The repetitions noted in rule @r from element @start on (the last noted)
 * moved to rule @to, whose elements from @at on they now are.
 */
static void
move_reps(struct gbnf *p, uint32_t r, uint32_t start, uint32_t to, uint32_t at)
{
	for (uint32_t i = p->n_reps;
	     i > 0 && p->reps[i - 1].rule == r && p->reps[i - 1].at >= start; i--) {
		p->reps[i - 1].rule = to;
		p->reps[i - 1].at = p->reps[i - 1].at - start + at;
	}
}

/*
 * The item at @start of @r's body as one element: moved into a rule of its
 * own when longer. Its repetitions noted go with it: into that rule, or the
 * one its element refers to (a repetition's chain, its rule R ::= x R |).
 */
static bool
one_element(struct gbnf *p, uint32_t r, uint32_t start, struct gram_elem *ret)
{
	uint32_t n = p->rules[r].body.n - start, sub;

	if (n == 1) {
		*ret = p->rules[r].body.v[start];
		p->rules[r].body.n = start;
		if (ret->kind == GE_REF)
			move_reps(p, r, start, ret->arg, 0);
		return true;
	}
	if (!gbnf_new_rule(p, &sub))
		return false;
	move_reps(p, r, start, sub, 0);
	for (uint32_t i = 0; i < n; i++) {
		struct gram_elem e = p->rules[r].body.v[start + i];
		if (!gbnf_push(p, sub, e.kind, e.arg))
			return false;
	}
	p->rules[r].body.n = start;
	*ret = (struct gram_elem){GE_REF, sub};
	return gbnf_push(p, sub, GE_END, 0);
}

/* Note x{@min,@max} at element @at of rule @r for the expansion check, when it counts 2 or more. */
static bool
note_rep(struct gbnf *p, uint32_t r, uint32_t at, struct gram_elem x, uint32_t min, uint32_t max)
{
	uint32_t count = max == UINT32_MAX ? min : max;

	if (count < 2)
		return true;
	if (!gram_grow((void **)&p->reps, &p->cap_reps, p->n_reps, sizeof(*p->reps), 16))
		return gbnf_oom(p);
	p->reps[p->n_reps++] = (struct gbnf_rep){
	        .x = x,
	        .rule = r,
	        .at = at,
	        .min = min,
	        .max = max,
	        .count = count,
	        .line = p->line,
	        .col = (uint32_t)(p->s - p->line_start) + 1,
	};
	return true;
}

bool
gbnf_repeat(struct gbnf *p, uint32_t r, uint32_t start, uint32_t min, uint32_t max)
{
	struct gram_elem x;
	uint32_t rep;

	if (p->rules[r].body.n == start)
		return gbnf_fail(p, "a repetition with nothing to repeat");
	if (!one_element(p, r, start, &x) || !note_rep(p, r, start, x, min, max))
		return false;
	for (uint32_t i = 0; i < min; i++)
		if (!gbnf_push(p, r, x.kind, x.arg))
			return false;
	if (max == UINT32_MAX) { /* R ::= x R | */
		if (!gbnf_new_rule(p, &rep))
			return false;
		return gbnf_push(p, rep, x.kind, x.arg) && gbnf_push(p, rep, GE_REF, rep) &&
		       gbnf_push(p, rep, GE_ALT, 0) && gbnf_push(p, rep, GE_END, 0) &&
		       gbnf_push(p, r, GE_REF, rep);
	}
	uint32_t prev = GRAM_NONE, first = GRAM_NONE;
	for (uint32_t i = min; i < max; i++) { /* opt ::= x prev | */
		if (!gbnf_new_rule(p, &rep) || !gbnf_push(p, rep, x.kind, x.arg) ||
		    (prev != GRAM_NONE && !gbnf_push(p, rep, GE_REF, prev)) ||
		    !gbnf_push(p, rep, GE_ALT, 0) || !gbnf_push(p, rep, GE_END, 0))
			return false;
		if (prev == GRAM_NONE)
			first = rep;
		prev = rep;
	}
	if (first != GRAM_NONE) /* the copies' rules are consecutive: a chain (gram_chain.c) */
		p->rules[first].chain_len = max - min;
	return prev == GRAM_NONE || gbnf_push(p, r, GE_REF, prev);
}

static orch_err
fail_at(struct gbnf *p, const struct gbnf_rule *r, const char *what)
{
	p->err->line = r->line;
	p->err->col = r->col;
	if (r->name)
		snprintf(p->err->msg, sizeof(p->err->msg), "%s '%.*s'", what, (int)r->name_len,
		         r->name);
	else
		snprintf(p->err->msg, sizeof(p->err->msg), "%s (a group or repetition)", what);
	return ORCH_EINVAL;
}

/* Lay the rules out in @g: elements, and each rule's alternatives. */
static orch_err
layout(struct gbnf *p, struct gram *g)
{
	uint32_t *off = orch_calloc(p->n_rules + 1, sizeof(*off)), n_alt = 0;

	g->el = orch_calloc(p->n_el ? p->n_el : 1, sizeof(*g->el));
	g->alt_first = orch_calloc(p->n_rules + 1, sizeof(*g->alt_first));
	g->alt = orch_calloc(p->n_el ? p->n_el : 1, sizeof(*g->alt));
	if (off == NULL || g->el == NULL || g->alt_first == NULL || g->alt == NULL) {
		free(off);
		return ORCH_ENOMEM;
	}
	for (uint32_t r = 0; r < p->n_rules; r++) {
		const struct gbnf_elems *b = &p->rules[r].body;
		off[r + 1] = off[r] + b->n;
		memcpy(g->el + off[r], b->v, (size_t)b->n * sizeof(*b->v));
		g->alt_first[r] = n_alt;
		g->alt[n_alt++] = off[r];
		for (uint32_t i = 0; i + 1 < b->n; i++)
			if (b->v[i].kind == GE_ALT)
				g->alt[n_alt++] = off[r] + i + 1;
	}
	g->alt_first[p->n_rules] = n_alt;
	g->n_el = off[p->n_rules];
	g->n_rules = p->n_rules;
	free(off);
	return ORCH_OK;
}

/* Whether @e is an element of an alternative (not the GE_ALT or GE_END after its last). */
static bool
is_elem(const struct gram_elem *e)
{
	return e->kind == GE_REF || e->kind == GE_SET || e->kind == GE_TOK;
}

/*
 * Which rules can match the empty string, into @nullable, in time linear
 * in the grammar: each alternative counts its elements not yet known to be
 * nullable (a set or a token never is); when a rule becomes nullable, every
 * alternative that refers to it counts down, and one that reaches zero
 * makes its rule nullable in turn. ORCH_ENOMEM.
 */
static orch_err
nullables(const struct gram *g, bool *nullable)
{
	uint32_t n_alt = g->alt_first[g->n_rules], n_ref = 0, top = 0;
	uint32_t *left = orch_calloc(n_alt ? n_alt : 1, sizeof(*left));
	uint32_t *owner = orch_calloc(n_alt ? n_alt : 1, sizeof(*owner));
	uint32_t *first = orch_calloc(g->n_rules + 1, sizeof(*first));
	uint32_t *work = orch_calloc(g->n_rules ? g->n_rules : 1, sizeof(*work));
	uint32_t *by = NULL;
	orch_err rv = ORCH_ENOMEM;

	if (left == NULL || owner == NULL || first == NULL || work == NULL)
		goto out;
	/* the alternatives that refer to rule s: by[first[s] .. first[s + 1]), once per reference
	 */
	for (uint32_t r = 0; r < g->n_rules; r++)
		for (uint32_t a = g->alt_first[r]; a < g->alt_first[r + 1]; a++) {
			owner[a] = r;
			for (uint32_t i = g->alt[a]; is_elem(&g->el[i]); i++) {
				left[a]++;
				if (g->el[i].kind == GE_REF) {
					first[g->el[i].arg + 1]++;
					n_ref++;
				}
			}
		}
	for (uint32_t r = 0; r < g->n_rules; r++)
		first[r + 1] += first[r];
	if ((by = orch_calloc(n_ref ? n_ref : 1, sizeof(*by))) == NULL)
		goto out;
	for (uint32_t a = 0; a < n_alt; a++) /* first[s] walks to s's end, then shifts back */
		for (uint32_t i = g->alt[a]; is_elem(&g->el[i]); i++)
			if (g->el[i].kind == GE_REF)
				by[first[g->el[i].arg]++] = a;
	for (uint32_t r = g->n_rules; r > 0; r--)
		first[r] = first[r - 1];
	first[0] = 0;
	for (uint32_t a = 0; a < n_alt; a++)
		if (left[a] == 0 && !nullable[owner[a]]) {
			nullable[owner[a]] = true;
			work[top++] = owner[a];
		}
	while (top > 0) {
		uint32_t r = work[--top];
		for (uint32_t k = first[r]; k < first[r + 1]; k++) {
			uint32_t a = by[k];
			if (--left[a] == 0 && !nullable[owner[a]]) {
				nullable[owner[a]] = true;
				work[top++] = owner[a];
			}
		}
	}
	rv = ORCH_OK;
out:
	free(left);
	free(owner);
	free(first);
	free(work);
	free(by);
	return rv;
}

/*
 * The rule a left recursion goes through, or GRAM_NONE: a depth-first walk
 * over "r can start with s" (past nullable rules), looking for a back edge.
 * Each frame keeps its place (@alt_at: the alternative, @el_at: the element),
 * so a rule's alternatives are read once however many children it has.
 */
static uint32_t
left_recursion(const struct gram *g, const bool *nullable, uint8_t *color, uint32_t *stack,
               uint32_t *alt_at, uint32_t *el_at)
{
	for (uint32_t start = 0; start < g->n_rules; start++) {
		uint32_t sp = 0;
		if (color[start])
			continue;
		color[start] = 1;
		stack[sp] = start;
		alt_at[sp] = g->alt_first[start];
		el_at[sp++] = GRAM_NONE;
		while (sp > 0) {
			uint32_t r = stack[sp - 1], next = GRAM_NONE;
			uint32_t *a = &alt_at[sp - 1], *i = &el_at[sp - 1];
			for (; *a < g->alt_first[r + 1] && next == GRAM_NONE;
			     (*a)++, *i = GRAM_NONE) {
				if (*i == GRAM_NONE)
					*i = g->alt[*a];
				for (; g->el[*i].kind == GE_REF; (*i)++) {
					uint32_t s = g->el[*i].arg;
					if (color[s] == 1)
						return s;
					if (color[s] == 0) {
						next = s;
						break; /* resumed here when s is done */
					}
					if (!nullable[s])
						break;
				}
				if (next != GRAM_NONE)
					break;
			}
			if (next == GRAM_NONE) {
				color[r] = 2;
				sp--;
				continue;
			}
			color[next] = 1;
			stack[sp] = next;
			alt_at[sp] = g->alt_first[next];
			el_at[sp++] = GRAM_NONE;
		}
	}
	return GRAM_NONE;
}

orch_err
gbnf_finish(struct gbnf *p, uint32_t root, struct gram **ret)
{
	struct gram *g = orch_calloc(1, sizeof(*g));
	bool *nullable = orch_calloc(p->n_rules, sizeof(*nullable));
	uint8_t *color = orch_calloc(p->n_rules, 1);
	uint32_t *stack = orch_calloc(p->n_rules, 3 * sizeof(*stack));
	orch_err rv = ORCH_ENOMEM;

	if (g == NULL || nullable == NULL || color == NULL || stack == NULL)
		goto out;
	for (uint32_t r = 0; r < p->n_rules; r++)
		if (!p->rules[r].defined) {
			rv = fail_at(p, &p->rules[r], "undefined rule");
			goto out;
		}
	if ((rv = layout(p, g)) != ORCH_OK)
		goto out;
	if ((rv = nullables(g, nullable)) != ORCH_OK)
		goto out;
	uint32_t lr = left_recursion(g, nullable, color, stack, stack + p->n_rules,
	                             stack + 2 * (size_t)p->n_rules);
	if (lr != GRAM_NONE) {
		rv = fail_at(p, &p->rules[lr], "left recursion through rule");
		goto out;
	}
	if ((rv = gbnf_expansion(p, nullable, root, &g->expansion)) != ORCH_OK)
		goto out;
	for (uint32_t r = 0; r < p->n_rules; r++) /* stack's room, done with: the chains */
		stack[r] = p->rules[r].chain_len;
	if ((rv = gram_chains_init(g, stack, nullable)) != ORCH_OK)
		goto out;
	g->sets = p->sets;
	g->n_sets = p->n_sets;
	p->sets = NULL;
	g->toks = p->toks;
	g->n_toks = p->n_toks;
	p->toks = NULL;
	p->n_toks = 0;
	g->root = root;
	*ret = g;
	g = NULL;
out:
	gram_free(g);
	free(nullable);
	free(color);
	free(stack);
	return rv;
}

uint64_t
gram_expansion(const struct gram *g)
{
	return g->expansion;
}

void
gram_free(struct gram *g)
{
	if (g == NULL)
		return;
	free(g->el);
	free(g->sets);
	free(g->alt);
	free(g->alt_first);
	free(g->chains);
	free(g->rule_chain);
	free(g->el_rule);
	gram_toks_free(g->toks, g->n_toks);
	free(g);
}
