/*
 * gram_chain.c - bounded repetitions seen by the token masks as one state.
 *
 * x{m,n} is lowered to a chain of n - m optional copies (gbnf_lower.c), so
 * a JSON string with maxLength 80 is 80 states, and a mask cache keyed by
 * the state walks the vocabulary's trie 80 times, once per count, though
 * the walks differ only in how many more x each token may start. Here a
 * state has its count taken out: its stacks inside the chain move to the
 * copy with the most left, one walk from there counts for each token the
 * copies its parse starts (gram_match.c, struct gram_top's ann), and every
 * count's mask is those tokens whose count fits (gram_mask.c).
 *
 * A chain is kept only when x cannot match the empty string (a parse could
 * then pass copies without bytes, and a count would say nothing) and cannot
 * reach the chain (a stack is then inside at most one of its copies).
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "gram_int.h"

/* Rules a reachability check may visit before it gives the chain up. */
#define CHAIN_REACH_MAX 4096

/*
 * Whether rule @x reaches a rule of @c, or the check gave up: a depth-first
 * walk over references, @seen[r] == @gen marking the rules pushed.
 */
static bool
reaches(const struct gram *g, uint32_t x, const struct gram_chain *c, uint32_t *seen, uint32_t gen,
        uint32_t *stack)
{
	uint32_t sp = 0, visited = 0;

	stack[sp++] = x;
	seen[x] = gen;
	while (sp > 0) {
		uint32_t r = stack[--sp];
		if (r - c->first < c->len || ++visited > CHAIN_REACH_MAX)
			return true;
		for (uint32_t i = g->alt[g->alt_first[r]]; i < g->n_el && g->el_rule[i] == r; i++)
			if (g->el[i].kind == GE_REF && seen[g->el[i].arg] != gen) {
				seen[g->el[i].arg] = gen;
				stack[sp++] = g->el[i].arg;
			}
	}
	return false;
}

/* Whether chain @c qualifies (struct gram_chain); its x is its first copy's first element. */
static bool
chain_ok(const struct gram *g, const struct gram_chain *c, const bool *nullable, uint32_t *seen,
         uint32_t gen, uint32_t *stack)
{
	const struct gram_elem *x = &g->el[g->alt[g->alt_first[c->first]]];

	if (c->len < 2)
		return false;
	if (x->kind != GE_REF)
		return true; /* a byte set or a token: never empty, never a rule */
	return !nullable[x->arg] && !reaches(g, x->arg, c, seen, gen, stack);
}

orch_err
gram_chains_init(struct gram *g, const uint32_t *chain_len, const bool *nullable)
{
	uint32_t n = 0, *seen, *stack;

	g->rule_chain = orch_reallocarray(NULL, g->n_rules ? g->n_rules : 1, sizeof(uint32_t));
	g->el_rule = orch_reallocarray(NULL, g->n_el ? g->n_el : 1, sizeof(uint32_t));
	if (g->rule_chain == NULL || g->el_rule == NULL)
		return ORCH_ENOMEM;
	memset(g->rule_chain, 0xff, (size_t)g->n_rules * sizeof(uint32_t));
	for (uint32_t r = 0; r < g->n_rules; r++) {
		uint32_t end = r + 1 < g->n_rules ? g->alt[g->alt_first[r + 1]] : g->n_el;
		for (uint32_t i = g->alt[g->alt_first[r]]; i < end; i++)
			g->el_rule[i] = r;
		n += chain_len[r] > 0;
	}
	if (n == 0)
		return ORCH_OK;
	g->chains = orch_calloc(n, sizeof(*g->chains));
	seen = orch_calloc(g->n_rules, sizeof(*seen));
	stack = orch_calloc(g->n_rules, sizeof(*stack));
	if (g->chains == NULL || seen == NULL || stack == NULL) {
		free(seen);
		free(stack);
		return ORCH_ENOMEM;
	}
	for (uint32_t r = 0; r < g->n_rules; r++) {
		struct gram_chain c = {r, chain_len[r]};
		if (chain_len[r] == 0 || !chain_ok(g, &c, nullable, seen, r + 1, stack))
			continue;
		for (uint32_t k = 0; k < c.len; k++)
			g->rule_chain[r + k] = g->n_chains;
		g->chains[g->n_chains++] = c;
	}
	free(seen);
	free(stack);
	return ORCH_OK;
}

/* Positions a stack is searched to for its chain's copy, past which the state is not canonized. */
#define CANON_DEPTH 64

/* Rule @r's first element. */
static uint32_t
rule_start(const struct gram *g, uint32_t r)
{
	return g->alt[g->alt_first[r]];
}

/*
 * The longest chain a stack of @in is in (the one whose counts tell the
 * most states apart: a string's characters rather than its array's
 * items), or GRAM_NONE.
 */
static uint32_t
pick_chain(const struct gram *g, const struct gram_stacks *s, const struct gram_state *in)
{
	uint32_t best = GRAM_NONE;

	for (uint32_t i = 0; i < in->n; i++) {
		uint32_t pos = in->tops[i].pos, node = in->tops[i].parent;
		for (;;) {
			uint32_t rc = g->rule_chain[g->el_rule[pos]];
			if (rc != GRAM_NONE &&
			    (best == GRAM_NONE || g->chains[rc].len > g->chains[best].len))
				best = rc;
			if (node == GRAM_NONE)
				break;
			pos = s->v[node].pos;
			node = s->v[node].parent;
		}
	}
	return best;
}

/*
 * The depth (0: the top) of @t's first position in a copy of chain @c, the
 * nodes above it in @nodes (node at depth k + 1 in nodes[k]); GRAM_NONE
 * when the stack has none; CANON_DEPTH when it is too deep to say.
 */
static uint32_t
chain_at(const struct gram *g, const struct gram_stacks *s, struct gram_top t, uint32_t c,
         uint32_t *nodes)
{
	uint32_t pos = t.pos, node = t.parent;

	for (uint32_t k = 0;; k++) {
		if (g->rule_chain[g->el_rule[pos]] == c)
			return k < CANON_DEPTH ? k : CANON_DEPTH;
		if (node == GRAM_NONE)
			return GRAM_NONE;
		if (k < CANON_DEPTH)
			nodes[k] = node;
		pos = s->v[node].pos;
		node = s->v[node].parent;
	}
}

/* @t with its position at depth @k (in copy @j of chain @c) moved to the chain's last copy. */
static orch_err
canon_top(const struct gram *g, struct gram_stacks *s, struct gram_top t, uint32_t k,
          const uint32_t *nodes, const struct gram_chain *c, uint32_t j, struct gram_state *out)
{
	uint32_t at = k == 0 ? t.pos : s->v[nodes[k - 1]].pos;
	uint32_t moved =
	        at - rule_start(g, c->first + j - 1) + rule_start(g, c->first + c->len - 1);
	uint32_t nb;

	if (k == 0)
		return gram_add_top(s, out, moved, t.parent, 0);
	if ((nb = gram_node(s, moved, s->v[nodes[k - 1]].parent)) == GRAM_NONE)
		return ORCH_ENOMEM;
	for (uint32_t i = k - 1; i-- > 0;)
		if ((nb = gram_node(s, s->v[nodes[i]].pos, nb)) == GRAM_NONE)
			return ORCH_ENOMEM;
	return gram_add_top(s, out, t.pos, nb, 0);
}

bool
gram_chain_canon(const struct gram *g, struct gram_stacks *s, const struct gram_state *in,
                 struct gram_state *out, uint32_t *chain, uint32_t *left, orch_err *rv)
{
	uint32_t c, j = 0, nodes[CANON_DEPTH];

	*rv = ORCH_OK;
	if (g->n_chains == 0 || (c = pick_chain(g, s, in)) == GRAM_NONE)
		return false;
	for (uint32_t i = 0; i < in->n; i++) { /* the copy, and whether all stacks agree */
		uint32_t k = chain_at(g, s, in->tops[i], c, nodes), at, jj;
		if (k == GRAM_NONE)
			continue;
		if (k == CANON_DEPTH)
			return false;
		at = k == 0 ? in->tops[i].pos : s->v[nodes[k - 1]].pos;
		jj = g->el_rule[at] - g->chains[c].first + 1;
		if (j != 0 && jj != j)
			return false;
		j = jj;
	}
	if (j == 0)
		return false;
	gram_state_reset(out);
	for (uint32_t i = 0; i < in->n && *rv == ORCH_OK; i++) {
		struct gram_top t = in->tops[i];
		uint32_t k = chain_at(g, s, t, c, nodes);
		*rv = k == GRAM_NONE ? gram_add_top(s, out, t.pos, t.parent, GRAM_ANN_OUT)
		                     : canon_top(g, s, t, k, nodes, &g->chains[c], j, out);
	}
	out->accept = in->accept;
	out->accept_ann = 0;
	*chain = c;
	*left = j - 1;
	return *rv == ORCH_OK;
}
