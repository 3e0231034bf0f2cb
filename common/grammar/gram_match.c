/*
 * gram_match.c - the matcher: where every parse of the bytes fed so far
 * stands, as a set of stacks (gram_int.h), advanced one byte at a time.
 *
 * Design notes:
 * - A stack's top is always a GE_SET or a GE_TOK: expanding a position
 *   (gram_expand) enters rules until each path reaches a byte or a token to
 *   match, or ends the outermost rule (then the input so far is a sentence:
 *   accept). A token feed advances the two kinds apart and joins the results.
 * - A rule entered at the end of an alternative does not push a frame to
 *   return to (there is nothing left to do there): x* as R ::= x R | runs in
 *   constant stack depth however long the repetition.
 * - Nodes are hash-consed through a direct-mapped cache, so paths that meet
 *   again usually share one node and one top; a miss only costs a
 *   duplicate stack, never a wrong answer (stacks are also compared by content).
 * - One step (a byte's advance, the start, a token's take: gram_step_begin)
 *   expands each (position, parent) once: a grammar whose parts match the
 *   empty string in several ways would otherwise expand the same continuation
 *   once per way, exponentially often.
 * - A step's work is bounded whatever the grammar: GRAM_WORK_MAX work items
 *   pushed, GRAM_NODES_MAX nodes held, then ORCH_ERANGE (too ambiguous). The
 *   dedup above is a lossy cache, and nested repetitions of what may be empty
 *   reach more (position, parent) pairs than it holds (("a"{0,100}){0,100}
 *   {0,100}: a million), each then reached many ways: without the bound, one
 *   byte's step grew without end. The compiler refuses such grammars first
 *   (GRAM_EXPANSION_MAX); this bound is the net under it.
 * - The matcher compacts its nodes after each feed: only those its stacks use survive.
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "gram_int.h"

/* Tops a state scans for a duplicate before it indexes them. */
#define GRAM_INDEX_FROM 64

/* The hash-consing and dedup tables' slots: at first, and at most (lossier past it). */
#define CONS_MIN 4096u
#define CONS_MAX (2 * GRAM_NODES_MAX)
#define SEEN_MIN 1024u
#define SEEN_MAX GRAM_WORK_MAX

bool
gram_grow(void **v, uint32_t *cap, uint32_t n, size_t elem, uint32_t first)
{
	if (n < *cap)
		return true;
	if (*cap > UINT32_MAX / 2)
		return false;
	uint32_t c = *cap ? *cap * 2 : first;
	void *p = orch_reallocarray(*v, c, elem);
	if (p == NULL)
		return false;
	*v = p;
	*cap = c;
	return true;
}

/* The least power of two that is @n or more, and @min or more. */
static uint32_t
pow2_at_least(uint32_t n, uint32_t min)
{
	uint32_t p = min;

	while (p < n && p <= UINT32_MAX / 2)
		p *= 2;
	return p;
}

static uint32_t
cons_slot(const struct gram_stacks *s, uint64_t h, uint32_t parent)
{
	return (uint32_t)(h ^ parent) & s->cons_mask;
}

/*
 * s->cons made @size slots (a power of two) and filled with every node, the
 * newest winning a slot; when out of memory, it keeps its size (only lossier).
 */
static void
cons_rebuild(struct gram_stacks *s, uint32_t size)
{
	uint32_t *c;

	if (size != s->cons_mask + 1 && (c = orch_reallocarray(NULL, size, sizeof(*c))) != NULL) {
		free(s->cons);
		s->cons = c;
		s->cons_mask = size - 1;
	}
	memset(s->cons, 0xff, ((size_t)s->cons_mask + 1) * sizeof(*s->cons));
	for (uint32_t i = 0; i < s->n; i++)
		s->cons[cons_slot(s, s->v[i].h, s->v[i].parent)] = i;
}

/* s->seen made @size slots, none current (this step's items are forgotten: only repeated). */
static void
seen_resize(struct gram_stacks *s, uint32_t size)
{
	struct gram_seen *v = orch_calloc(size, sizeof(*v));

	if (v == NULL)
		return; /* as it was: only lossier */
	free(s->seen);
	s->seen = v;
	s->seen_mask = size - 1;
}

orch_err
gram_stacks_init(struct gram_stacks *s)
{
	*s = (struct gram_stacks){0};
	s->cons = orch_reallocarray(NULL, CONS_MIN, sizeof(*s->cons));
	s->seen = orch_calloc(SEEN_MIN, sizeof(*s->seen));
	if (s->cons == NULL || s->seen == NULL) {
		gram_stacks_fini(s);
		return ORCH_ENOMEM;
	}
	memset(s->cons, 0xff, CONS_MIN * sizeof(*s->cons));
	s->cons_mask = CONS_MIN - 1;
	s->seen_mask = SEEN_MIN - 1;
	s->chain = GRAM_NONE;
	s->work_left = GRAM_WORK_MAX;
	return ORCH_OK;
}

void
gram_step_begin(struct gram_stacks *s)
{
	s->work_left = GRAM_WORK_MAX;
	s->seen_n = 0;
	if (++s->gen == 0) { /* wrapped: no stamp may look current */
		for (uint32_t k = 0; k <= s->seen_mask; k++)
			s->seen[k].gen = 0;
		s->gen = 1;
	}
}

/* After a compaction: the tables sized to what the stacks now hold and a step lately did. */
static void
stacks_fit(struct gram_stacks *s)
{
	uint32_t seen = pow2_at_least(2 * s->seen_peak, SEEN_MIN);

	cons_rebuild(s, pow2_at_least(2 * s->n, CONS_MIN));
	if (seen * 8 <= s->seen_mask + 1)
		seen_resize(s, seen);
	s->seen_peak = 0;
}

void
gram_stacks_fini(struct gram_stacks *s)
{
	free(s->v);
	free(s->cons);
	free(s->work);
	free(s->seen);
	*s = (struct gram_stacks){0};
}

void
gram_state_reset(struct gram_state *st)
{
	st->n = 0;
	st->accept = false;
	st->accept_ann = UINT32_MAX;
	st->ix_n = 0;
	if (++st->gen == 0 && st->ix_gen != NULL) { /* wrapped: no stamp may look current */
		memset(st->ix_gen, 0, ((size_t)st->ix_mask + 1) * sizeof(*st->ix_gen));
		st->gen = 1;
	}
}

void
gram_state_fini(struct gram_state *st)
{
	free(st->tops);
	free(st->ix);
	free(st->ix_gen);
	*st = (struct gram_state){0};
}

static uint64_t
mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

uint32_t
gram_node(struct gram_stacks *s, uint32_t pos, uint32_t parent)
{
	uint64_t ph = parent == GRAM_NONE ? 0x9e3779b97f4a7c15ull : s->v[parent].h;
	uint64_t h = mix(ph ^ ((uint64_t)pos * 0x100000001b3ull + 1));

	if (s->n >= (s->cons_mask + 1) / 2 && s->cons_mask + 1 < CONS_MAX)
		cons_rebuild(s, (s->cons_mask + 1) * 2);
	uint32_t *slot = &s->cons[cons_slot(s, h, parent)];
	if (*slot < s->n && s->v[*slot].pos == pos && s->v[*slot].parent == parent)
		return *slot;
	if (!gram_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v), 1024))
		return GRAM_NONE;
	s->v[s->n] = (struct gram_node){pos, parent, h};
	*slot = s->n;
	return s->n++;
}

/* Whether the stacks under nodes @a and @b hold the same positions. */
static bool
same_stack(const struct gram_stacks *s, uint32_t a, uint32_t b)
{
	while (a != b) {
		if (a == GRAM_NONE || b == GRAM_NONE || s->v[a].h != s->v[b].h ||
		    s->v[a].pos != s->v[b].pos)
			return false;
		a = s->v[a].parent;
		b = s->v[b].parent;
	}
	return true;
}

/* A top's index key: its position and the hash of the stack under it. */
static uint32_t
top_hash(const struct gram_stacks *s, uint32_t pos, uint32_t parent)
{
	uint64_t ph = parent == GRAM_NONE ? 0x9e3779b97f4a7c15ull : s->v[parent].h;

	return (uint32_t)mix(ph ^ ((uint64_t)pos << 1 | 1));
}

/* Index top @i of @st: the slot after the last taken one on its probe. */
static void
ix_put(const struct gram_stacks *s, struct gram_state *st, uint32_t i)
{
	uint32_t k = top_hash(s, st->tops[i].pos, st->tops[i].parent) & st->ix_mask;

	while (st->ix_gen[k] == st->gen)
		k = (k + 1) & st->ix_mask;
	st->ix[k] = i;
	st->ix_gen[k] = st->gen;
}

/* Make @st's index cover its tops, grown to a quarter full at most. */
static orch_err
ix_cover(const struct gram_stacks *s, struct gram_state *st)
{
	if (st->ix == NULL || (st->n + 1) * 4 > st->ix_mask + 1) {
		uint32_t size = st->ix ? (st->ix_mask + 1) * 2 : 256;
		while ((st->n + 1) * 4 > size)
			size *= 2;
		uint32_t *ix = orch_reallocarray(st->ix, size, sizeof(*ix));
		if (ix != NULL)
			st->ix = ix;
		uint32_t *gen = orch_reallocarray(st->ix_gen, size, sizeof(*gen));
		if (ix == NULL || gen == NULL)
			return ORCH_ENOMEM;
		st->ix_gen = gen;
		memset(st->ix_gen, 0, (size_t)size * sizeof(*gen));
		st->ix_mask = size - 1;
		st->gen = 1;
		st->ix_n = 0;
	}
	for (; st->ix_n < st->n; st->ix_n++)
		ix_put(s, st, st->ix_n);
	return ORCH_OK;
}

/* Whether tops @t and (@pos, @parent, @ann) are the same stack, in or out of a counted chain. */
static bool
same_top(const struct gram_stacks *s, const struct gram_top *t, uint32_t pos, uint32_t parent,
         uint32_t ann)
{
	return t->pos == pos && (t->ann & GRAM_ANN_OUT) == (ann & GRAM_ANN_OUT) &&
	       same_stack(s, t->parent, parent);
}

/* The top of @out that is the stack (@pos, @parent) as same_top says, into *@ret (NULL: none). */
static orch_err
has_top(const struct gram_stacks *s, struct gram_state *out, uint32_t pos, uint32_t parent,
        uint32_t ann, struct gram_top **ret)
{
	*ret = NULL;
	if (out->n < GRAM_INDEX_FROM) {
		for (uint32_t i = 0; i < out->n && !*ret; i++)
			if (same_top(s, &out->tops[i], pos, parent, ann))
				*ret = &out->tops[i];
		return ORCH_OK;
	}
	orch_err rv = ix_cover(s, out);
	if (rv != ORCH_OK)
		return rv;
	for (uint32_t k = top_hash(s, pos, parent) & out->ix_mask; out->ix_gen[k] == out->gen;
	     k = (k + 1) & out->ix_mask) {
		struct gram_top *t = &out->tops[out->ix[k]];
		if (same_top(s, t, pos, parent, ann)) {
			*ret = t;
			break;
		}
	}
	return ORCH_OK;
}

orch_err
gram_add_top(const struct gram_stacks *s, struct gram_state *out, uint32_t pos, uint32_t parent,
             uint32_t ann)
{
	struct gram_top *dup;
	orch_err rv = has_top(s, out, pos, parent, ann, &dup);

	if (rv != ORCH_OK)
		return rv;
	if (dup != NULL) { /* the same future: the fewer copies counted is the one to keep */
		if (ann < dup->ann)
			dup->ann = ann;
		return ORCH_OK;
	}
	if (out->n == GRAM_STACKS_MAX)
		return ORCH_ERANGE;
	if (!gram_grow((void **)&out->tops, &out->cap, out->n, sizeof(*out->tops), 8))
		return ORCH_ENOMEM;
	out->tops[out->n++] = (struct gram_top){pos, parent, ann};
	return ORCH_OK;
}

/* Push a work item: ORCH_ERANGE past the step's budget (gram_step_begin), ORCH_ENOMEM. */
static orch_err
push_work(struct gram_stacks *s, uint32_t pos, uint32_t parent, uint32_t ann)
{
	if (s->work_left == 0)
		return ORCH_ERANGE;
	s->work_left--;
	if (!gram_grow((void **)&s->work, &s->cap_work, s->n_work, sizeof(*s->work), 64))
		return ORCH_ENOMEM;
	s->work[s->n_work][0] = pos;
	s->work[s->n_work][1] = parent;
	s->work[s->n_work++][2] = ann;
	return ORCH_OK;
}

/* Whether element @pos is in a copy of the chain s->chain counts, on a parse still in it. */
static bool
counting(const struct gram *g, const struct gram_stacks *s, uint32_t pos, uint32_t ann)
{
	return s->chain != GRAM_NONE && !(ann & GRAM_ANN_OUT) &&
	       g->rule_chain[g->el_rule[pos]] == s->chain;
}

/*
 * Rule @r's alternatives to expand under @cont, entered at @pos; counting a
 * chain, entering its next copy from a copy starts one more x (not its empty
 * alternative), and the last copy's x at its tail leaves the chain.
 */
static orch_err
enter(const struct gram *g, struct gram_stacks *s, uint32_t pos, uint32_t r, uint32_t cont,
      uint32_t parent, uint32_t ann)
{
	bool step = false;

	if (counting(g, s, pos, ann)) {
		step = g->rule_chain[r] == s->chain;
		if (!step && cont == parent)
			ann |= GRAM_ANN_OUT;
	}
	for (uint32_t a = g->alt_first[r]; a < g->alt_first[r + 1]; a++) {
		uint32_t more = step && g->el[g->alt[a]].kind >= GE_REF;
		orch_err rv = push_work(s, g->alt[a], cont, ann + more);
		if (rv != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/* One item of gram_expand's work: a top, an accept, or more work. */
static orch_err
expand_one(const struct gram *g, struct gram_stacks *s, uint32_t pos, uint32_t parent, uint32_t ann,
           struct gram_state *out)
{
	const struct gram_elem *e = &g->el[pos];

	switch (e->kind) {
	case GE_SET:
	case GE_TOK:
		return gram_add_top(s, out, pos, parent, ann);
	case GE_REF: {
		uint32_t k = e[1].kind, cont = parent;
		if (k != GE_ALT && k != GE_END && s->n >= GRAM_NODES_MAX)
			return ORCH_ERANGE;
		if (k != GE_ALT && k != GE_END &&
		    (cont = gram_node(s, pos + 1, parent)) == GRAM_NONE)
			return ORCH_ENOMEM;
		return enter(g, s, pos, e->arg, cont, parent, ann);
	}
	default: /* the end of an alternative: go on where its rule was entered */
		if (counting(g, s, pos, ann))
			ann |= GRAM_ANN_OUT;
		if (parent == GRAM_NONE) {
			out->accept = true;
			if ((ann & ~GRAM_ANN_OUT) < out->accept_ann)
				out->accept_ann = ann & ~GRAM_ANN_OUT;
			return ORCH_OK;
		}
		return push_work(s, s->v[parent].pos, s->v[parent].parent, ann);
	}
}

orch_err
gram_expand(const struct gram *g, struct gram_stacks *s, uint32_t pos, uint32_t parent,
            uint32_t ann, struct gram_state *out)
{
	orch_err rv = push_work(s, pos, parent, ann);

	while (rv == ORCH_OK && s->n_work > 0) {
		s->n_work--;
		uint32_t p = s->work[s->n_work][0], up = s->work[s->n_work][1];
		uint32_t a = s->work[s->n_work][2];
		uint64_t key = (uint64_t)p << 32 | up;
		struct gram_seen *e = &s->seen[mix(key ^ (a & GRAM_ANN_OUT)) & s->seen_mask];
		if (e->gen == s->gen && e->key == key &&
		    (e->ann & GRAM_ANN_OUT) == (a & GRAM_ANN_OUT) && e->ann <= a)
			continue; /* expanded already in this step, with as few copies counted */
		*e = (struct gram_seen){key, a, s->gen};
		if (++s->seen_n > s->seen_peak)
			s->seen_peak = s->seen_n;
		if (s->seen_n > (s->seen_mask + 1) / 2 && s->seen_mask + 1 < SEEN_MAX)
			seen_resize(s, (s->seen_mask + 1) * 2);
		rv = expand_one(g, s, p, up, a, out);
	}
	s->n_work = 0;
	return rv;
}

orch_err
gram_advance(const struct gram *g, struct gram_stacks *s, const struct gram_state *in, uint8_t b,
             struct gram_state *out)
{
	gram_state_reset(out);
	gram_step_begin(s);
	for (uint32_t i = 0; i < in->n; i++) {
		struct gram_top t = in->tops[i];
		orch_err rv;
		if (g->el[t.pos].kind != GE_SET || !gram_set_has(&g->sets[g->el[t.pos].arg], b))
			continue;
		if ((rv = gram_expand(g, s, t.pos + 1, t.parent, t.ann, out)) != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

orch_err
gram_state_copy(struct gram_state *dst, const struct gram_state *src)
{
	if (dst->cap < src->n) {
		struct gram_top *v = orch_reallocarray(dst->tops, src->n, sizeof(*v));
		if (v == NULL)
			return ORCH_ENOMEM;
		dst->tops = v;
		dst->cap = src->n;
	}
	gram_state_reset(dst); /* its index holds none of the copies */
	memcpy(dst->tops, src->tops, (size_t)src->n * sizeof(*src->tops));
	dst->n = src->n;
	dst->accept = src->accept;
	dst->accept_ann = src->accept_ann;
	return ORCH_OK;
}

/* Mark in m->map the nodes under @st's tops. */
static void
mark(struct gram_match *m, const struct gram_state *st)
{
	for (uint32_t i = 0; i < st->n; i++)
		for (uint32_t k = st->tops[i].parent; k != GRAM_NONE && !m->map[k];
		     k = m->s.v[k].parent)
			m->map[k] = 1;
}

/* @st's tops' nodes renumbered through m->map. */
static void
remap(struct gram_match *m, struct gram_state *st)
{
	for (uint32_t i = 0; i < st->n; i++)
		if (st->tops[i].parent != GRAM_NONE)
			st->tops[i].parent = m->map[st->tops[i].parent];
}

/*
 * Keep only the nodes @m's stacks use (a parent is always older than its
 * child): m->cur's, and with @feeding, those of m->saved and m->tok as well
 * (in the middle of a feed, which may yet go back to m->saved).
 */
static orch_err
compact(struct gram_match *m, bool feeding)
{
	struct gram_stacks *s = &m->s;
	uint32_t n = 0;

	if (m->cap_map < s->n) {
		uint32_t *v = orch_reallocarray(m->map, s->n, sizeof(*v));
		if (v == NULL)
			return ORCH_ENOMEM;
		m->map = v;
		m->cap_map = s->n;
	}
	if (s->n > 0)
		memset(m->map, 0, (size_t)s->n * sizeof(*m->map));
	mark(m, &m->cur);
	if (feeding) {
		mark(m, &m->saved);
		mark(m, &m->tok);
	}
	for (uint32_t k = 0; k < s->n; k++) {
		if (!m->map[k])
			continue;
		struct gram_node x = s->v[k];
		x.parent = x.parent == GRAM_NONE ? GRAM_NONE : m->map[x.parent];
		s->v[n] = x;
		m->map[k] = n++;
	}
	remap(m, &m->cur);
	if (feeding) {
		remap(m, &m->saved);
		remap(m, &m->tok);
	}
	s->n = n;
	stacks_fit(s);
	return ORCH_OK;
}

orch_err
gram_match_new(const struct gram *g, struct gram_match **ret)
{
	struct gram_match *m = orch_calloc(1, sizeof(*m));
	orch_err rv = ORCH_ENOMEM;

	*ret = NULL;
	if (m == NULL)
		return ORCH_ENOMEM;
	m->g = g;
	if (gram_stacks_init(&m->s) != ORCH_OK)
		goto fail;
	gram_step_begin(&m->s);
	for (uint32_t a = g->alt_first[g->root]; a < g->alt_first[g->root + 1]; a++)
		if ((rv = gram_expand(g, &m->s, g->alt[a], GRAM_NONE, 0, &m->cur)) != ORCH_OK)
			goto fail;
	*ret = m;
	return ORCH_OK;
fail:
	gram_match_free(m);
	return rv;
}

void
gram_match_free(struct gram_match *m)
{
	if (m == NULL)
		return;
	gram_stacks_fini(&m->s);
	gram_state_fini(&m->cur);
	gram_state_fini(&m->tmp);
	gram_state_fini(&m->saved);
	gram_state_fini(&m->tok);
	free(m->map);
	free(m);
}

static void
swap(struct gram_state *a, struct gram_state *b)
{
	struct gram_state t = *a;

	*a = *b;
	*b = t;
}

/* The stacks of m->saved at a terminal bound to @id, past it, into m->tok. */
static orch_err
take_token(struct gram_match *m, int32_t id)
{
	const struct gram *g = m->g;
	orch_err rv = ORCH_OK;

	gram_state_reset(&m->tok);
	gram_step_begin(&m->s);
	for (uint32_t i = 0; i < m->saved.n && rv == ORCH_OK; i++) {
		struct gram_top t = m->saved.tops[i];
		const struct gram_elem *e = &g->el[t.pos];
		if (e->kind == GE_TOK && g->toks[e->arg].id == id)
			rv = gram_expand(g, &m->s, t.pos + 1, t.parent, t.ann, &m->tok);
	}
	return rv;
}

/* m->tok's stacks joined to m->cur's. */
static orch_err
join_token(struct gram_match *m)
{
	orch_err rv = ORCH_OK;

	for (uint32_t i = 0; i < m->tok.n && rv == ORCH_OK; i++)
		rv = gram_add_top(&m->s, &m->cur, m->tok.tops[i].pos, m->tok.tops[i].parent,
		                  m->tok.tops[i].ann);
	m->cur.accept |= m->tok.accept;
	return rv;
}

/*
 * @m advanced by the @n bytes at @p and, when @id is not negative, by token
 * @id whole at the terminals bound to it (gram_match_feed_token).
 */
static bool
feed(struct gram_match *m, int32_t id, const uint8_t *b, size_t n, orch_err *why)
{
	uint32_t n0 = m->s.n;
	bool token = id >= 0 && m->g->n_toks > 0;
	orch_err rv = gram_state_copy(&m->saved, &m->cur);

	gram_state_reset(&m->tok); /* a compaction reads it */
	if (rv == ORCH_OK && token)
		rv = take_token(m, id);
	if (id >= 0 && n == 0) /* a token without text: no byte parse takes it */
		gram_state_reset(&m->cur);
	for (size_t i = 0; i < n && rv == ORCH_OK; i++) {
		rv = gram_advance(m->g, &m->s, &m->cur, b[i], &m->tmp);
		if (rv != ORCH_OK)
			break;
		swap(&m->cur, &m->tmp);
		if (m->cur.n == 0) { /* every byte parse ended: bytes left kill the accept */
			m->cur.accept &= i + 1 == n;
			break;
		}
		if (m->s.n > GRAM_NODES_MAX / 2 && i + 1 < n) { /* the bytes' nodes, let go */
			if ((rv = compact(m, true)) != ORCH_OK)
				break;
			n0 = m->s.n; /* m->saved's are below it still */
		}
	}
	if (rv == ORCH_OK && token)
		rv = join_token(m);
	if (rv == ORCH_OK && m->cur.n == 0 && !m->cur.accept && (n > 0 || id >= 0))
		rv = ORCH_EINVAL;
	if (rv == ORCH_OK && (n > 0 || id >= 0))
		rv = compact(m, false);
	if (why)
		*why = rv;
	if (rv == ORCH_OK)
		return true;
	swap(&m->cur, &m->saved); /* as it was: its nodes are all below n0 */
	m->s.n = n0;
	return false;
}

bool
gram_match_feed(struct gram_match *m, const void *p, size_t n, orch_err *why)
{
	return feed(m, -1, p, n, why);
}

bool
gram_match_feed_token(struct gram_match *m, int32_t id, const void *s, size_t n, orch_err *why)
{
	return feed(m, id < 0 ? INT32_MAX : id, s, n, why);
}

bool
gram_match_accepting(const struct gram_match *m)
{
	return m->cur.accept;
}

bool
gram_match_done(const struct gram_match *m)
{
	return m->cur.accept && m->cur.n == 0;
}

int32_t
gram_match_next_token(const struct gram_match *m)
{
	int32_t id = -1;

	if (m->cur.accept || m->cur.n == 0)
		return -1;
	for (uint32_t i = 0; i < m->cur.n; i++) {
		const struct gram_elem *e = &m->g->el[m->cur.tops[i].pos];
		if (e->kind != GE_TOK || m->g->toks[e->arg].id < 0 ||
		    (id >= 0 && m->g->toks[e->arg].id != id))
			return -1;
		id = m->g->toks[e->arg].id;
	}
	return id;
}

bool
gram_accepts(const struct gram *g, const void *s, size_t n)
{
	struct gram_match *m;
	bool ok;

	if (gram_match_new(g, &m) != ORCH_OK)
		return false;
	ok = gram_match_feed(m, s, n, NULL) && gram_match_accepting(m);
	gram_match_free(m);
	return ok;
}
