/*
 * gram_mask.c - token masks (gram_mask.h): the vocabulary's trie walked
 * from a matcher's state, and a cache of masks keyed by that state.
 *
 * The trie is laid out in preorder: node i has its byte, its depth and the
 * index just past its subtree, so the walk is a scan that jumps over a
 * subtree as soon as its first byte kills every parse. The states along the
 * current path are kept per depth, and the stack nodes each made are
 * dropped when the walk leaves it (the matcher's node pool is used as a
 * stack: gram_stacks.n is set back).
 *
 * A state inside a bounded repetition (gram_chain.c) has its count taken
 * out first: one walk from the repetition's fullest copy gives each token
 * the copies of x it starts (its need), kept in a few shared entries, and
 * the state's mask is the tokens whose need fits its count: a scan of the
 * needs instead of a walk, for every count of every string with a
 * maxLength.
 */
#include "gram_mask.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/alloc.h"
#include "base/clock.h"
#include "gram_int.h"

struct gram_vocab {
	uint32_t n_tok, n_nodes, max_depth;
	uint8_t *byte;     /* [n_nodes] */
	uint16_t *depth;   /* [n_nodes], from 1 */
	uint32_t *skip;    /* [n_nodes]: the next node not under this one */
	int32_t *tok;      /* [n_nodes]: a token whose bytes end here, or -1 */
	int32_t *tok_next; /* [n_tok]: the next token with the same bytes, or -1 */
};

struct tok_ref {
	const uint8_t *p;
	uint32_t len;
	int32_t id;
};

static int
cmp_tok(const void *a, const void *b)
{
	const struct tok_ref *x = a, *y = b;
	int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static orch_err
vocab_alloc(struct gram_vocab *v, uint32_t nodes)
{
	v->byte = orch_malloc(nodes ? nodes : 1);
	v->depth = orch_calloc(nodes ? nodes : 1, sizeof(*v->depth));
	v->skip = orch_calloc(nodes ? nodes : 1, sizeof(*v->skip));
	v->tok = orch_calloc(nodes ? nodes : 1, sizeof(*v->tok));
	v->tok_next = orch_calloc(v->n_tok ? v->n_tok : 1, sizeof(*v->tok_next));
	if (!v->byte || !v->depth || !v->skip || !v->tok || !v->tok_next)
		return ORCH_ENOMEM;
	memset(v->tok_next, 0xff, (size_t)v->n_tok * sizeof(*v->tok_next));
	return ORCH_OK;
}

/* Nodes for the sorted tokens @t (@n): the bytes past each one's common prefix with the last. */
static void
vocab_fill(struct gram_vocab *v, const struct tok_ref *t, uint32_t n, uint32_t *path)
{
	uint32_t k = 0, stack_n = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t lcp = 0;
		if (i > 0)
			while (lcp < t[i].len && lcp < t[i - 1].len &&
			       t[i].p[lcp] == t[i - 1].p[lcp])
				lcp++;
		for (uint32_t d = lcp + 1; d <= t[i].len; d++) {
			v->byte[k] = t[i].p[d - 1];
			v->depth[k] = (uint16_t)d;
			v->tok[k] = -1;
			path[d] = k++;
		}
		uint32_t end = path[t[i].len];
		v->tok_next[t[i].id] = v->tok[end];
		v->tok[end] = t[i].id;
		if (t[i].len > v->max_depth)
			v->max_depth = t[i].len;
	}
	v->n_nodes = k;
	/* skip: a node's subtree ends at the next node no deeper than it (path is the stack) */
	for (uint32_t i = 0; i < k; i++) {
		while (stack_n > 0 && v->depth[path[stack_n - 1]] >= v->depth[i])
			v->skip[path[--stack_n]] = i;
		path[stack_n++] = i;
	}
	while (stack_n > 0)
		v->skip[path[--stack_n]] = k;
}

orch_err
gram_vocab_new(const uint8_t *const *bytes, const uint32_t *lens, uint32_t n,
               struct gram_vocab **ret)
{
	struct gram_vocab *v = orch_calloc(1, sizeof(*v));
	struct tok_ref *t = orch_calloc(n ? n : 1, sizeof(*t));
	uint32_t m = 0, nodes = 0, *path = NULL;
	orch_err rv = ORCH_ENOMEM;

	*ret = NULL;
	if (v == NULL || t == NULL)
		goto out;
	v->n_tok = n;
	for (uint32_t i = 0; i < n; i++) {
		if (lens[i] > GRAM_TOKEN_MAX) {
			rv = ORCH_EINVAL;
			goto out;
		}
		if (lens[i] > 0) {
			t[m++] = (struct tok_ref){bytes[i], lens[i], (int32_t)i};
			nodes += lens[i];
		}
	}
	qsort(t, m, sizeof(*t), cmp_tok);
	/* path: a node per depth while filling, then the open nodes while finding skips */
	if ((path = orch_calloc((size_t)(nodes > GRAM_TOKEN_MAX ? nodes : GRAM_TOKEN_MAX) + 1,
	                        sizeof(*path))) == NULL ||
	    (rv = vocab_alloc(v, nodes)) != ORCH_OK)
		goto out;
	vocab_fill(v, t, m, path);
	*ret = v;
	v = NULL;
	rv = ORCH_OK;
out:
	gram_vocab_free(v);
	free(t);
	free(path);
	return rv;
}

void
gram_vocab_free(struct gram_vocab *v)
{
	if (v == NULL)
		return;
	free(v->byte);
	free(v->depth);
	free(v->skip);
	free(v->tok);
	free(v->tok_next);
	free(v);
}

uint32_t
gram_vocab_size(const struct gram_vocab *v)
{
	return v->n_tok;
}

struct entry {
	uint64_t h;
	uint32_t *key; /* the state, as made by make_key; NULL: an empty slot */
	uint32_t key_n;
	uint32_t *bits;
};

/* A state's key being made. */
struct keybuf {
	uint32_t *v, n, cap;
};

/* Needs, as walked from a state with a chain's count taken out (gram_chain_canon). */
#define NEED_NO    255 /* no parse takes the token */
#define NEED_CAP   254 /* 254 copies or more */
#define SHARED_MAX 64  /* entries kept, each a byte per token, in a quarter of the cache */

struct shared {
	uint64_t h;
	uint32_t *key; /* NULL: an empty slot */
	uint32_t key_n;
	uint8_t *need;     /* [words * 32]: min(need, NEED_CAP), or NEED_NO */
	uint32_t max_need; /* the largest need, uncapped */
};

struct gram_masks {
	const struct gram *g;
	const struct gram_vocab *v;
	uint32_t words;
	uint32_t *out;         /* the mask when it is not cached */
	struct gram_state *st; /* [max_depth + 1]: the states along the walk's path */
	uint32_t *end;         /* [max_depth + 1]: the node pool's size after each */
	struct entry *tab;     /* open addressing */
	uint32_t tab_mask, n_cached, max_cached;
	struct keybuf key, ckey;        /* the state's, and with its count taken out */
	uint64_t key_bytes, key_budget; /* the cached keys' bytes, and their most (cache_bytes) */
	struct gram_state canon;        /* the state with its count taken out */
	struct shared shared[SHARED_MAX];
	uint32_t n_shared, shared_next; /* slots used (0: counts are not taken out), the next */
	bool over_budget;               /* a walk passed GRAM_MASK_WORK_MAX */
	struct gram_masks_stats stats;
};

orch_err
gram_masks_new(const struct gram *g, const struct gram_vocab *v, size_t cache_bytes,
               struct gram_masks **ret)
{
	struct gram_masks *c = orch_calloc(1, sizeof(*c));
	uint32_t tab = 16;

	*ret = NULL;
	if (c == NULL)
		return ORCH_ENOMEM;
	c->g = g;
	c->v = v;
	c->words = (v->n_tok + 31) / 32;
	if (g->n_chains > 0) { /* the shared needs take up to a quarter of the cache */
		size_t fit = cache_bytes / 4 / ((size_t)c->words * 32 + 1);
		c->n_shared = fit > SHARED_MAX ? SHARED_MAX : (uint32_t)fit;
		cache_bytes -= (size_t)c->n_shared * c->words * 32;
	}
	c->max_cached = (uint32_t)(cache_bytes / ((size_t)c->words * 4 + 256));
	c->key_budget = cache_bytes;
	while (tab < 2 * (uint64_t)c->max_cached)
		tab *= 2;
	c->tab_mask = tab - 1;
	c->out = orch_calloc(c->words ? c->words : 1, sizeof(*c->out));
	c->st = orch_calloc((size_t)v->max_depth + 1, sizeof(*c->st));
	c->end = orch_calloc((size_t)v->max_depth + 1, sizeof(*c->end));
	c->tab = orch_calloc(tab, sizeof(*c->tab));
	if (!c->out || !c->st || !c->end || !c->tab) {
		gram_masks_free(c);
		return ORCH_ENOMEM;
	}
	*ret = c;
	return ORCH_OK;
}

static void
cache_clear(struct gram_masks *c)
{
	for (uint32_t i = 0; i <= c->tab_mask; i++) {
		free(c->tab[i].key);
		free(c->tab[i].bits);
		c->tab[i] = (struct entry){0};
	}
	c->n_cached = 0;
	c->key_bytes = 0;
}

void
gram_masks_free(struct gram_masks *c)
{
	if (c == NULL)
		return;
	if (c->tab)
		cache_clear(c);
	for (uint32_t d = 0; c->st && d <= c->v->max_depth; d++)
		gram_state_fini(&c->st[d]);
	free(c->st);
	free(c->end);
	free(c->tab);
	free(c->out);
	free(c->key.v);
	free(c->ckey.v);
	gram_state_fini(&c->canon);
	for (uint32_t i = 0; i < SHARED_MAX; i++) {
		free(c->shared[i].key);
		free(c->shared[i].need);
	}
	free(c);
}

void
gram_masks_share(struct gram_masks *c, bool on)
{
	if (!on)
		c->n_shared = 0;
}

bool
gram_masks_over_budget(const struct gram_masks *c)
{
	return c->over_budget;
}

void
gram_masks_stats(const struct gram_masks *c, struct gram_masks_stats *ret)
{
	*ret = c->stats;
	ret->cached = c->n_cached;
}

static bool
key_put(struct keybuf *k, uint32_t x)
{
	if (!gram_grow((void **)&k->v, &k->cap, k->n, sizeof(*k->v), 256))
		return false;
	k->v[k->n++] = x;
	return true;
}

static int
cmp_h(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/*
 * State @st as @k: @salt, accepting, the number of stacks, then each
 * stack's ann, depth and positions, top first, the stacks in the order of
 * their hashes (equal states usually make equal keys; one that does not is
 * a miss, not a wrong mask). Its hash in *@h.
 */
static orch_err
make_key(struct keybuf *k, const struct gram_stacks *s, const struct gram_state *st, uint32_t salt,
         uint64_t *h)
{
	uint64_t(*order)[2] = orch_calloc(st->n ? st->n : 1, sizeof(*order));

	if (order == NULL)
		return ORCH_ENOMEM;
	for (uint32_t i = 0; i < st->n; i++) {
		struct gram_top t = st->tops[i];
		uint64_t ph = t.parent == GRAM_NONE ? 0 : s->v[t.parent].h;
		order[i][0] = (ph ^ t.pos ^ (uint64_t)t.ann << 32) * 0x9e3779b97f4a7c15ull;
		order[i][1] = i;
	}
	qsort(order, st->n, sizeof(*order), cmp_h);
	k->n = 0;
	bool ok = key_put(k, salt) && key_put(k, st->accept) && key_put(k, st->n);
	*h = (0x9e3779b97f4a7c15ull ^ salt) * 0x100000001b3ull ^ st->accept ^
	     ((uint64_t)st->n << 1);
	for (uint32_t i = 0; i < st->n && ok; i++) {
		struct gram_top t = st->tops[order[i][1]];
		uint32_t at = k->n + 1, depth = 1;
		ok = key_put(k, t.ann) && key_put(k, 0) && key_put(k, t.pos);
		for (uint32_t p = t.parent; p != GRAM_NONE && ok; p = s->v[p].parent) {
			ok = key_put(k, s->v[p].pos);
			depth++;
		}
		if (ok)
			k->v[at] = depth;
		*h = (*h ^ order[i][0]) * 0x100000001b3ull;
	}
	free(order);
	return ok ? ORCH_OK : ORCH_ENOMEM;
}

static struct entry *
lookup(struct gram_masks *c, uint64_t h)
{
	uint32_t i = (uint32_t)h & c->tab_mask;

	for (; c->tab[i].key != NULL; i = (i + 1) & c->tab_mask)
		if (c->tab[i].h == h && c->tab[i].key_n == c->key.n &&
		    memcmp(c->tab[i].key, c->key.v, (size_t)c->key.n * sizeof(*c->key.v)) == 0)
			return &c->tab[i];
	return &c->tab[i];
}

/* Remember c->out as the mask of the state in c->key (a full cache starts over). */
static void
remember(struct gram_masks *c, uint64_t h)
{
	struct entry *e;

	if (c->max_cached == 0)
		return;
	if (c->n_cached >= c->max_cached || c->key_bytes + (uint64_t)c->key.n * 4 > c->key_budget)
		cache_clear(c); /* keys grow with the stacks' depth: counted too */
	e = lookup(c, h);
	e->key = orch_reallocarray(NULL, c->key.n ? c->key.n : 1, sizeof(*e->key));
	e->bits = orch_reallocarray(NULL, c->words ? c->words : 1, sizeof(*e->bits));
	if (e->key == NULL || e->bits == NULL) { /* not cached: no harm */
		free(e->key);
		free(e->bits);
		*e = (struct entry){0};
		return;
	}
	memcpy(e->key, c->key.v, (size_t)c->key.n * sizeof(*c->key.v));
	memcpy(e->bits, c->out, (size_t)c->words * sizeof(*c->out));
	e->key_n = c->key.n;
	e->h = h;
	c->n_cached++;
	c->key_bytes += (uint64_t)c->key.n * 4;
}

/* The least ann of a parse @st holds: the copies the cheapest of them started. */
static uint32_t
state_need(const struct gram_state *st)
{
	uint32_t n = st->accept ? st->accept_ann : UINT32_MAX;

	for (uint32_t i = 0; i < st->n; i++)
		if ((st->tops[i].ann & ~GRAM_ANN_OUT) < n)
			n = st->tops[i].ann & ~GRAM_ANN_OUT;
	return n;
}

/* Token @t taken with @need copies: into @e's needs, or c->out when @e is NULL. */
static void
take(struct gram_masks *c, struct shared *e, int32_t t, uint32_t need)
{
	if (e == NULL) {
		c->out[t >> 5] |= 1u << (t & 31);
		return;
	}
	uint8_t v = need < NEED_CAP ? (uint8_t)need : NEED_CAP;
	if (v < e->need[t])
		e->need[t] = v;
	if (need > e->max_need)
		e->max_need = need;
}

/*
 * The trie walked from state @from (of stacks @s) into c->out, and the
 * tokens its terminals take; with @e, counting chain @chain's copies into
 * @e's needs instead.
 */
static orch_err
walk(struct gram_masks *c, struct gram_stacks *s, const struct gram_state *from, uint32_t chain,
     struct shared *e)
{
	const struct gram_vocab *v = c->v;
	uint32_t i = 0, visited = 0;
	uint64_t spent = 0; /* GRAM_MASK_WORK_MAX's count */
	orch_err rv = gram_state_copy(&c->st[0], from);

	if (e != NULL) {
		memset(e->need, NEED_NO, (size_t)c->words * 32);
		e->max_need = 0;
		s->chain = chain;
	} else {
		memset(c->out, 0, (size_t)c->words * sizeof(*c->out));
	}
	c->end[0] = s->n;
	while (i < v->n_nodes && rv == ORCH_OK) {
		uint32_t d = v->depth[i];
		struct gram_state *st = &c->st[d];
		s->n = c->end[d - 1];
		visited++;
		if ((rv = gram_advance(c->g, s, &c->st[d - 1], v->byte[i], st)) != ORCH_OK)
			break;
		spent += c->st[d - 1].n + (GRAM_WORK_MAX - s->work_left);
		if (spent > GRAM_MASK_WORK_MAX) {
			c->over_budget = true;
			rv = ORCH_ERANGE;
			break;
		}
		if (st->n == 0 && !st->accept) {
			i = v->skip[i];
			continue;
		}
		c->end[d] = s->n;
		uint32_t need = e != NULL && v->tok[i] >= 0 ? state_need(st) : 0;
		for (int32_t t = v->tok[i]; t >= 0; t = v->tok_next[t])
			take(c, e, t, need);
		i++;
	}
	s->n = c->end[0];
	s->chain = GRAM_NONE;
	c->stats.nodes += visited;
	if (spent > c->stats.work_max)
		c->stats.work_max = spent;
	for (uint32_t k = 0; k < from->n; k++) { /* the tokens terminals take whole */
		const struct gram_elem *el = &c->g->el[from->tops[k].pos];
		int32_t t = el->kind == GE_TOK ? c->g->toks[el->arg].id : -1;
		if (t >= 0 && (uint32_t)t < v->n_tok)
			take(c, e, t, from->tops[k].ann & ~GRAM_ANN_OUT);
	}
	return rv;
}

/* The shared entry keyed c->ckey (hash @h), walked from c->canon when new; NULL: none. */
static struct shared *
shared_get(struct gram_masks *c, struct gram_stacks *s, uint32_t chain, uint64_t h, orch_err *rv)
{
	struct shared *e;
	size_t bytes = (size_t)c->ckey.n * sizeof(*c->ckey.v);

	for (uint32_t i = 0; i < c->n_shared; i++) {
		e = &c->shared[i];
		if (e->key != NULL && e->h == h && e->key_n == c->ckey.n &&
		    memcmp(e->key, c->ckey.v, bytes) == 0)
			return e;
	}
	e = &c->shared[c->shared_next++ % c->n_shared];
	free(e->key);
	e->key = NULL;
	if (e->need == NULL && (e->need = orch_malloc((size_t)c->words * 32)) == NULL)
		return NULL; /* not shared: the state is walked itself */
	if ((*rv = walk(c, s, &c->canon, chain, e)) != ORCH_OK)
		return NULL;
	if ((e->key = orch_malloc(bytes ? bytes : 1)) == NULL)
		return NULL;
	memcpy(e->key, c->ckey.v, bytes);
	e->key_n = c->ckey.n;
	e->h = h;
	c->stats.shared_walks++;
	return e;
}

/* Into @out (@words words) the tokens whose @need is @lim or less: 16 at a time where SSE2 is. */
static void
needs_within(const uint8_t *need, uint32_t words, uint8_t lim, uint32_t *out)
{
	for (uint32_t w = 0; w < words; w++) {
		const uint8_t *p = need + (size_t)w * 32;
#ifdef __SSE2__
		__m128i l = _mm_set1_epi8((char)lim);
		__m128i a = _mm_loadu_si128((const void *)p);
		__m128i b = _mm_loadu_si128((const void *)(p + 16));
		uint32_t lo = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(a, l), a));
		uint32_t hi = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(b, l), b));
		out[w] = lo | hi << 16;
#else
		uint32_t bits = 0;
		for (uint32_t b = 0; b < 32; b++)
			bits |= (uint32_t)(p[b] <= lim) << b;
		out[w] = bits;
#endif
	}
}

/*
 * @m's mask into c->out from the walk its chain's counts share, *@done
 * set; left unset when @m's state is in no chain (gram_chain_canon), or its
 * count is past what the needs tell apart.
 */
static orch_err
from_shared(struct gram_masks *c, struct gram_match *m, bool *done)
{
	struct gram_stacks *s = &m->s;
	uint32_t n0 = s->n, chain, left;
	uint64_t h;
	orch_err rv = ORCH_OK;
	const struct shared *e = NULL;

	*done = false;
	if (gram_chain_canon(c->g, s, &m->cur, &c->canon, &chain, &left, &rv) &&
	    (rv = make_key(&c->ckey, s, &c->canon, chain, &h)) == ORCH_OK)
		e = shared_get(c, s, chain, h, &rv);
	s->n = n0;
	if (rv == ORCH_ERANGE && c->over_budget) /* too costly: not a reason to stop sharing */
		return rv;
	if (rv == ORCH_ERANGE) { /* too many stacks with the count out: this grammar walks */
		c->n_shared = 0;
		return ORCH_OK;
	}
	if (e == NULL || (left >= NEED_CAP && e->max_need > left))
		return rv;
	needs_within(e->need, c->words, left < NEED_CAP ? (uint8_t)left : NEED_CAP, c->out);
	c->stats.derived++;
	*done = true;
	return ORCH_OK;
}

orch_err
gram_match_mask(struct gram_match *m, struct gram_masks *c, const uint32_t **ret)
{
	uint64_t h, t0;
	bool done = false;
	orch_err rv;

	if ((rv = make_key(&c->key, &m->s, &m->cur, GRAM_NONE, &h)) != ORCH_OK)
		return rv;
	if (c->max_cached > 0) {
		struct entry *e = lookup(c, h);
		if (e->key != NULL) {
			c->stats.hits++;
			*ret = e->bits;
			return ORCH_OK;
		}
	}
	t0 = orch_mono_ns();
	if (c->n_shared > 0 && (rv = from_shared(c, m, &done)) != ORCH_OK)
		return rv;
	if (!done && (rv = walk(c, &m->s, &m->cur, GRAM_NONE, NULL)) != ORCH_OK)
		return rv;
	c->stats.misses++;
	c->stats.walk_ns += orch_mono_ns() - t0;
	remember(c, h);
	*ret = c->out;
	return ORCH_OK;
}
