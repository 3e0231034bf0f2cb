/*
 * json_schema_rxlen.c - a 'pattern' and string lengths at once (issue 56):
 * the intersection of the pattern's language with the strings of
 * [minLength, maxLength] code points, for json_schema.c, which #includes this
 * file after json_schema_pattern.c (whose parsing of escapes, classes and
 * quantifiers it shares); it is not built on its own.
 *
 * The pattern is parsed into a tree, built into a Thompson NFA over sets of
 * code points, made deterministic (one DFA state per set of NFA states, over
 * the intervals every class boundary cuts the code points into), and crossed
 * with a count of code points: a grammar rule per (DFA state, count) pair that
 * is reachable and can still end accepted. A count past minLength with no
 * maxLength is one state ("at least minLength"). Anchors are as
 * json_schema_pattern.c reads them (a '^' and '$' per top-level alternative;
 * without '^' up to RX_PREFIX_MAX characters before the match, without '$'
 * any after it). What it cannot keep small is refused as a limit.
 */

#define RL_NFA_MAX   4096   /* NFA states */
#define RL_DFA_MAX   256    /* DFA states */
#define RL_PAIRS_MAX 262144 /* (DFA state, count) pairs looked at */
#define RL_RULES_MAX 4096   /* rules written */

enum rn_kind { RN_SET, RN_CAT, RN_ALT, RN_REP, RN_BOL, RN_EOL };

/* A pattern's tree: a set of code points, a sequence, alternatives, a repeat, or an
 * anchor (the start or the end of the string) inside it. */
struct rn {
	enum rn_kind k;
	struct cpset set; /* RN_SET */
	struct rn **kid;  /* RN_CAT, RN_ALT; RN_REP: kid[0] */
	size_t n;
	uint64_t lo, hi; /* RN_REP: {lo, hi}, hi JS_INF when unbounded */
};

static void
rn_free(struct rn *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		rn_free(r->kid[i]);
	orch_free(r->kid);
	orch_free(r->set.r);
	orch_free(r);
}

static struct rn *
rn_new(enum rn_kind k)
{
	struct rn *r = orch_calloc(1, sizeof(*r));

	if (r != NULL)
		r->k = k;
	return r;
}

/* rn_add - @kid as @r's next child (freed on failure); false when out of memory. */
static bool
rn_add(struct rn *r, struct rn *kid)
{
	struct rn **v = kid ? orch_reallocarray(r->kid, r->n + 1, sizeof(*v)) : NULL;

	if (v == NULL) {
		rn_free(kid);
		return false;
	}
	r->kid = v;
	r->kid[r->n++] = kid;
	return true;
}

/* Every code point a JSON string holds (the grammar's char), as a set. */
static struct rn *
rn_any(void)
{
	struct rn *r = rn_new(RN_SET);

	if (r != NULL) {
		set_add(&r->set, 0, 0xd7ff);
		set_add(&r->set, 0xe000, 0x10ffff);
	}
	return r;
}

/* rn_rep - @kid repeated @lo to @hi times (@kid taken). */
static struct rn *
rn_rep(struct rn *kid, uint64_t lo, uint64_t hi)
{
	struct rn *r = kid ? rn_new(RN_REP) : NULL;

	if (r == NULL || !rn_add(r, kid)) {
		orch_free(r);
		if (r == NULL)
			rn_free(kid);
		return NULL;
	}
	r->lo = lo;
	r->hi = hi;
	return r;
}

static orch_err rl_alts(struct rx *rx, struct rn **ret);

/* rl_atom - one character, class or group (json_schema_pattern.c's syntax). */
static orch_err
rl_atom(struct rx *rx, struct rn **ret)
{
	struct rn *r;
	bool is_set = false;
	uint32_t c = 0;
	size_t len;
	orch_err rv = ORCH_OK;

	if (*rx->p == '(') { /* the group forms rx_group takes */
		if ((rv = rx_group_open(rx)) != ORCH_OK || (rv = rl_alts(rx, ret)) != ORCH_OK)
			return rv;
		return rx_group_close(rx);
	}
	if ((r = *ret = rn_new(RN_SET)) == NULL)
		return ORCH_ENOMEM;
	switch (*rx->p) {
	case '[':
		return rx_class(rx, &r->set);
	case '.':
		rx->p++;
		set_add(&r->set, '\n', '\n');
		set_add(&r->set, '\r', '\r');
		set_add(&r->set, 0x2028, 0x2029);
		set_invert(&r->set);
		return ORCH_OK;
	case '\\':
		rx->p++;
		rv = rx_escape(rx, false, &c, &r->set, &is_set);
		break;
	case '^':
	case '$':
		r->k = *rx->p++ == '^' ? RN_BOL : RN_EOL;
		return ORCH_OK;
	case '*':
	case '+':
	case '?':
	case '{':
	case '}':
	case ']':
		return rx_bad(rx, "a '%c' with nothing to repeat or open", *rx->p);
	default:
		if (utf8_next((const uint8_t *)rx->p, (size_t)(rx->end - rx->p), &c, &len) !=
		    UTF8_OK)
			return rx_bad(rx, "not well-formed UTF-8");
		rx->p += len;
	}
	if (rv == ORCH_OK && !is_set)
		set_add(&r->set, c, c);
	return rv;
}

/* rl_seq - terms up to '|', ')' or the end (@top: a final '$' sets *@dollar). */
static orch_err
rl_seq(struct rx *rx, bool top, bool *dollar, struct rn **ret)
{
	struct rn *seq = *ret = rn_new(RN_CAT), *a = NULL;
	uint64_t m, n;
	orch_err rv;

	if (seq == NULL)
		return ORCH_ENOMEM;
	while (rx->p < rx->end && *rx->p != '|' && *rx->p != ')') {
		if (top && *rx->p == '$' && (rx->p + 1 == rx->end || rx->p[1] == '|')) {
			rx->p++;
			*dollar = true;
			break;
		}
		a = NULL;
		if ((rv = rl_atom(rx, &a)) != ORCH_OK || (rv = rx_quant(rx, &m, &n)) != ORCH_OK) {
			rn_free(a);
			return rv;
		}
		if ((m != 1 || n != 1) && (a->k == RN_BOL || a->k == RN_EOL)) {
			rn_free(a); /* a SyntaxError in ECMAScript too */
			return rx_bad(rx, "a quantifier on '^' or '$'");
		}
		if ((m != 1 || n != 1) && (a = rn_rep(a, m, n)) == NULL)
			return ORCH_ENOMEM;
		if (!rn_add(seq, a))
			return ORCH_ENOMEM;
	}
	return ORCH_OK;
}

/* rl_alts - alternatives inside a group. */
static orch_err
rl_alts(struct rx *rx, struct rn **ret)
{
	struct rn *alt = *ret = rn_new(RN_ALT), *s;
	bool dollar;
	orch_err rv;

	if (alt == NULL)
		return ORCH_ENOMEM;
	for (;;) {
		s = NULL;
		if ((rv = rl_seq(rx, false, &dollar, &s)) != ORCH_OK) {
			rn_free(s);
			return rv;
		}
		if (!rn_add(alt, s))
			return ORCH_ENOMEM;
		if (rx->p >= rx->end || *rx->p != '|')
			return ORCH_OK;
		rx->p++;
	}
}

/* must_bol - whether every match of @r starts with a '^' (a prefix before it is dead). */
static bool
must_bol(const struct rn *r)
{
	switch (r->k) {
	case RN_BOL:
		return true;
	case RN_CAT:
		return r->n > 0 && must_bol(r->kid[0]);
	case RN_ALT:
		for (size_t i = 0; i < r->n; i++)
			if (!must_bol(r->kid[i]))
				return false;
		return r->n > 0;
	case RN_REP:
		return r->lo > 0 && must_bol(r->kid[0]);
	default:
		return false;
	}
}

/* rl_parse - @pat as a tree of the whole string (each alternative's anchors applied). */
static orch_err
rl_parse(struct js *js, const char *pat, struct rn **ret)
{
	struct rx rx = {js, pat, pat + strlen(pat), NULL, 0};
	struct rn *top = *ret = rn_new(RN_ALT), *seq, *s;
	orch_err rv;

	if (top == NULL)
		return ORCH_ENOMEM;
	for (;;) {
		bool a0 = rx.p < rx.end && *rx.p == '^', a1 = false;
		rx.p += a0;
		s = NULL;
		if ((rv = rl_seq(&rx, true, &a1, &s)) != ORCH_OK) {
			rn_free(s);
			return rv;
		}
		a0 |= js->raw || must_bol(s);
		if ((seq = rn_new(RN_CAT)) == NULL || !rn_add(top, seq)) {
			rn_free(s);
			return ORCH_ENOMEM;
		}
		if (!a0 && !rn_add(seq, rn_rep(rn_any(), 0, (uint64_t)atoi(RX_PREFIX_MAX)))) {
			rn_free(s);
			return ORCH_ENOMEM;
		}
		if (!rn_add(seq, s))
			return ORCH_ENOMEM;
		if (!(a1 | js->raw) && !rn_add(seq, rn_rep(rn_any(), 0, JS_INF)))
			return ORCH_ENOMEM;
		if (rx.p >= rx.end)
			return ORCH_OK;
		if (*rx.p != '|')
			return rx_bad(&rx, "an unmatched ')'");
		rx.p++;
	}
}

/* ---- the NFA ---- */

/* An NFA state: a class edge (@set) to to[0], an anchor's edge (@anchor: RN_BOL or
 * RN_EOL) to to[0], or up to two empty edges. */
struct nst {
	const struct cpset *set;
	int anchor;
	int to[2];
};

struct nfa {
	struct nst *v;
	int n;
	bool full;
};

static int
nfa_state(struct nfa *a)
{
	if (a->n == RL_NFA_MAX) {
		a->full = true;
		return -1;
	}
	a->v[a->n] = (struct nst){NULL, 0, {-1, -1}};
	return a->n++;
}

/* nfa_eps - an empty edge @from -> @to (a third one through a new state). */
static void
nfa_eps(struct nfa *a, int from, int to)
{
	if (from < 0 || to < 0)
		return;
	if (a->v[from].to[0] < 0) {
		a->v[from].to[0] = to;
	} else if (a->v[from].to[1] < 0) {
		a->v[from].to[1] = to;
	} else {
		int k = nfa_state(a);
		if (k < 0)
			return;
		a->v[k].to[0] = a->v[from].to[1];
		a->v[k].to[1] = to;
		a->v[from].to[1] = k;
	}
}

/* nfa_build - @r from state @s; its end state in *@e. */
static void
nfa_build(struct nfa *a, const struct rn *r, int s, int *e)
{
	int x;

	*e = -1;
	if (a->full || s < 0)
		return;
	switch (r->k) {
	case RN_SET:
	case RN_BOL:
	case RN_EOL:
		if ((*e = nfa_state(a)) >= 0) {
			a->v[s].set = r->k == RN_SET ? &r->set : NULL;
			a->v[s].anchor = r->k == RN_SET ? 0 : (int)r->k;
			a->v[s].to[0] = *e;
		}
		return;
	case RN_CAT:
		for (size_t i = 0; i < r->n && s >= 0; i++) {
			x = nfa_state(a);
			nfa_eps(a, s, x);
			nfa_build(a, r->kid[i], x, &s);
		}
		*e = s;
		return;
	case RN_ALT:
		*e = nfa_state(a);
		for (size_t i = 0; i < r->n && *e >= 0; i++) {
			int k = nfa_state(a), end;
			nfa_eps(a, s, k);
			nfa_build(a, r->kid[i], k, &end);
			nfa_eps(a, end, *e);
		}
		return;
	case RN_REP:
		for (uint64_t i = 0; i < r->lo && s >= 0; i++) {
			x = nfa_state(a);
			nfa_eps(a, s, x);
			nfa_build(a, r->kid[0], x, &s);
		}
		if (r->hi == JS_INF) { /* loop -> kid -> loop, and loop -> out */
			int loop = nfa_state(a), k = nfa_state(a), end;
			nfa_eps(a, s, loop);
			nfa_eps(a, loop, k);
			nfa_build(a, r->kid[0], k, &end);
			nfa_eps(a, end, loop);
			*e = nfa_state(a);
			nfa_eps(a, loop, *e);
			return;
		}
		*e = nfa_state(a);
		for (uint64_t i = r->lo; i < r->hi && s >= 0 && *e >= 0; i++) {
			x = nfa_state(a);
			nfa_eps(a, s, *e); /* stop here */
			nfa_eps(a, s, x);
			nfa_build(a, r->kid[0], x, &s);
		}
		nfa_eps(a, s, *e);
		return;
	}
}

/* ---- the DFA ---- */

/* A set of NFA states as bits. */
typedef uint64_t rl_bits[RL_NFA_MAX / 64];

/* closure - @b and what empty edges reach from it; an anchor's edge taken when it is
 * @holds (RN_BOL at the string's start, RN_EOL at its end). */
static void
closure(const struct nfa *a, rl_bits b, int holds)
{
	int stack[RL_NFA_MAX], n = 0;

	for (int w = 0; w * 64 < a->n; w++)
		for (uint64_t bits = b[w]; bits != 0; bits &= bits - 1)
			stack[n++] = w * 64 + __builtin_ctzll(bits);
	while (n > 0) {
		const struct nst *st = &a->v[stack[--n]];
		for (int k = 0; k < 2 && st->set == NULL && (!st->anchor || k == 0); k++) {
			int t = st->anchor && st->anchor != holds ? -1 : st->to[k];
			if (t >= 0 && !(b[t / 64] >> (t % 64) & 1)) {
				b[t / 64] |= (uint64_t)1 << (t % 64);
				stack[n++] = t;
			}
		}
	}
}

struct dfa {
	rl_bits *set; /* each state's NFA states */
	int *next;    /* [state * n_iv + interval]: the next state, -1 none */
	bool *accept;
	int n;
	uint32_t *iv; /* the intervals' first code points, ascending */
	int n_iv;
};

static int
iv_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/* The intervals every class's boundary cuts the code points into. */
static orch_err
intervals(const struct nfa *a, struct dfa *d)
{
	size_t n = 3, cap = 64;
	uint32_t *v = orch_calloc(cap, sizeof(*v));

	if (v != NULL) /* the surrogates are an interval of their own, never taken */
		v[1] = 0xd800, v[2] = 0xe000;

	for (int i = 0; v != NULL && i < a->n; i++)
		for (size_t k = 0; a->v[i].set && v != NULL && k < a->v[i].set->n; k++) {
			if (n + 2 > cap) {
				uint32_t *w = orch_reallocarray(v, cap * 2, sizeof(*v));
				if (w == NULL)
					orch_free(v);
				v = w, cap *= 2;
				if (v == NULL)
					break;
			}
			v[n++] = a->v[i].set->r[k].lo;
			if (a->v[i].set->r[k].hi < 0x10ffff)
				v[n++] = a->v[i].set->r[k].hi + 1;
		}
	if (v == NULL)
		return ORCH_ENOMEM;
	qsort(v, n, sizeof(*v), iv_cmp);
	size_t k = 0;
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[k])
			v[++k] = v[i];
	d->iv = v;
	d->n_iv = (int)k + 1;
	return ORCH_OK;
}

/* The DFA state of @b: an old one, or a new one (-1: over RL_DFA_MAX); it accepts when
 * the NFA's end is reached, through the end anchors too. */
static int
dfa_state(struct dfa *d, const struct nfa *a, const rl_bits b, int accept_nfa)
{
	rl_bits end;

	for (int i = 0; i < d->n; i++)
		if (memcmp(d->set[i], b, sizeof(rl_bits)) == 0)
			return i;
	if (d->n == RL_DFA_MAX)
		return -1;
	memcpy(d->set[d->n], b, sizeof(rl_bits));
	memcpy(end, b, sizeof(rl_bits));
	closure(a, end, RN_EOL);
	d->accept[d->n] = end[accept_nfa / 64] >> (accept_nfa % 64) & 1;
	return d->n++;
}

/* dfa_make - the subset construction from @start; -1 in d->n when past the limit. */
static orch_err
dfa_make(struct js *js, const struct nfa *a, int start, int accept, struct dfa *d)
{
	rl_bits b;
	orch_err rv;

	if ((rv = intervals(a, d)) != ORCH_OK)
		return rv;
	d->set = orch_calloc(RL_DFA_MAX, sizeof(rl_bits));
	d->next = orch_calloc((size_t)RL_DFA_MAX * (size_t)d->n_iv, sizeof(int));
	d->accept = orch_calloc(RL_DFA_MAX, sizeof(bool));
	if (d->set == NULL || d->next == NULL || d->accept == NULL)
		return ORCH_ENOMEM;
	memset(b, 0, sizeof(b));
	b[start / 64] |= (uint64_t)1 << (start % 64);
	closure(a, b, RN_BOL);
	dfa_state(d, a, b, accept);
	int *edge = orch_calloc(RL_NFA_MAX, sizeof(int)), n_edge;
	if (edge == NULL)
		return ORCH_ENOMEM;
	for (int s = 0; s < d->n; s++) {
		if (js_late(js)) {
			orch_free(edge);
			return js_over(js);
		}
		n_edge = 0; /* the NFA states of @s with a class edge */
		for (int w = 0; w * 64 < a->n; w++)
			for (uint64_t bits = d->set[s][w]; bits != 0; bits &= bits - 1) {
				int q = w * 64 + __builtin_ctzll(bits);
				if (a->v[q].set)
					edge[n_edge++] = q;
			}
		for (int i = 0; i < d->n_iv; i++) {
			bool any = false;
			memset(b, 0, sizeof(b));
			for (int k = 0; k < n_edge && d->iv[i] != 0xd800; k++)
				if (set_has(a->v[edge[k]].set, d->iv[i])) {
					int t = a->v[edge[k]].to[0];
					b[t / 64] |= (uint64_t)1 << (t % 64);
					any = true;
				}
			int t = -1;
			if (any) {
				closure(a, b, 0);
				if ((t = dfa_state(d, a, b, accept)) < 0) {
					orch_free(edge);
					return js_limit(js,
					                "'pattern' beside 'minLength'/'maxLength' "
					                "needs over %d automaton states (limit: "
					                "pattern and lengths)",
					                RL_DFA_MAX);
				}
			}
			d->next[(size_t)s * (size_t)d->n_iv + (size_t)i] = t;
		}
	}
	orch_free(edge);
	return ORCH_OK;
}

static void
dfa_free(struct dfa *d)
{
	orch_free(d->set);
	orch_free(d->next);
	orch_free(d->accept);
	orch_free(d->iv);
}

/* ---- crossed with a count of code points, as rules ---- */

/* The product: pair (state, count) as state * (top + 1) + count. */
struct prod {
	const struct dfa *d;
	uint64_t lo, hi, top; /* counts 0..top: top = hi, or lo when unbounded */
	size_t n;
	uint8_t *live; /* reached from the start, and can end accepted */
	int *rule;     /* each live pair's rule, in js's names */
};

static size_t
next_pair(const struct prod *p, size_t at, int iv)
{
	int s = (int)(at / (p->top + 1));
	uint64_t c = at % (p->top + 1);
	int t = p->d->next[(size_t)s * (size_t)p->d->n_iv + (size_t)iv];

	if (t < 0 || (p->hi != JS_INF && c == p->hi))
		return SIZE_MAX;
	c = p->hi == JS_INF && c == p->top ? c : c + 1;
	return (size_t)t * (p->top + 1) + c;
}

static bool
pair_accepts(const struct prod *p, size_t at)
{
	return p->d->accept[at / (p->top + 1)] && at % (p->top + 1) >= p->lo;
}

/* prod_live - the pairs reached from (0, 0) that reach an accepting one. */
static orch_err
prod_live(struct prod *p)
{
	uint8_t *seen = orch_calloc(p->n, 1);
	size_t *stack = orch_calloc(p->n, sizeof(size_t)), sp = 0;
	bool changed = true;

	if ((p->live = orch_calloc(p->n, 1)) == NULL || seen == NULL || stack == NULL) {
		orch_free(seen);
		orch_free(stack);
		return ORCH_ENOMEM;
	}
	seen[0] = 1;
	stack[sp++] = 0;
	while (sp > 0) {
		size_t at = stack[--sp];
		for (int i = 0; i < p->d->n_iv; i++) {
			size_t t = next_pair(p, at, i);
			if (t != SIZE_MAX && !seen[t])
				seen[t] = 1, stack[sp++] = t;
		}
	}
	for (size_t at = 0; at < p->n; at++)
		p->live[at] = seen[at] && pair_accepts(p, at);
	while (changed) { /* backwards to a fixed point: the counts only grow, so few rounds */
		changed = false;
		for (size_t at = p->n; at-- > 0;) {
			if (!seen[at] || p->live[at])
				continue;
			for (int i = 0; i < p->d->n_iv && !p->live[at]; i++) {
				size_t t = next_pair(p, at, i);
				if (t != SIZE_MAX && p->live[t])
					p->live[at] = 1, changed = true;
			}
		}
	}
	orch_free(seen);
	orch_free(stack);
	return ORCH_OK;
}

/* put_pair - the rule of pair @at: for each next live pair, the code points going there. */
static orch_err
put_pair(struct js *js, const struct prod *p, size_t at, char (*names)[JS_NAME_MAX],
         struct sbuf *body)
{
	bool alt = false, *done = orch_calloc((size_t)p->d->n_iv, sizeof(bool));
	orch_err rv = ORCH_OK;

	if (done == NULL)
		return ORCH_ENOMEM;
	for (int i = 0; i < p->d->n_iv && rv == ORCH_OK; i++) {
		size_t t = next_pair(p, at, i);
		if (done[i] || t == SIZE_MAX || !p->live[t])
			continue;
		struct cpset set = {0}; /* every interval going to @t */
		for (int k = i; k < p->d->n_iv; k++)
			if (!done[k] && next_pair(p, at, k) == t) {
				uint32_t hi = k + 1 < p->d->n_iv ? p->d->iv[k + 1] - 1 : 0x10ffff;
				set_add(&set, p->d->iv[k], hi);
				done[k] = true;
			}
		sbuf_puts(body, alt ? " | " : "");
		rv = js->raw ? put_raw_set(js, body, &set) : put_set(js, body, &set);
		sbuf_printf(body, " %s", names[p->rule[t]]);
		orch_free(set.r);
		alt = true;
	}
	if (rv == ORCH_OK && pair_accepts(p, at))
		sbuf_puts(body, alt ? " | \"\"" : "\"\"");
	orch_free(done);
	return rv;
}

/* rl_dfa - @pat's DFA into @d (its tree and NFA freed here). */
static orch_err
rl_dfa(struct js *js, const char *pat, struct dfa *d)
{
	struct rn *tree = NULL;
	struct nfa a = {0};
	int start, end;
	orch_err rv;

	if ((rv = rl_parse(js, pat, &tree)) != ORCH_OK)
		goto out;
	if ((a.v = orch_calloc(RL_NFA_MAX, sizeof(*a.v))) == NULL) {
		rv = ORCH_ENOMEM;
		goto out;
	}
	start = nfa_state(&a);
	nfa_build(&a, tree, start, &end);
	if (a.full || end < 0)
		rv = js_limit(js,
		              "'pattern' beside 'minLength'/'maxLength' needs over %d automaton "
		              "states (limit: pattern and lengths)",
		              RL_NFA_MAX);
	else
		rv = dfa_make(js, &a, start, end, d);
out:
	orch_free(a.v);
	rn_free(tree);
	return rv;
}

/* prod_rules - a rule for each live pair of @p, the start's name into @b. */
static orch_err
prod_rules(struct js *js, struct prod *p, struct sbuf *b)
{
	char(*names)[JS_NAME_MAX] = NULL;
	struct sbuf body = {0};
	orch_err rv = ORCH_OK;
	int n_rules = 0;

	if ((p->rule = orch_calloc(p->n, sizeof(int))) == NULL)
		return ORCH_ENOMEM;
	for (size_t at = 0; at < p->n; at++)
		if (p->live[at])
			p->rule[at] = n_rules++;
	if (n_rules > RL_RULES_MAX)
		return js_limit(
		        js,
		        "'pattern' beside 'minLength'/'maxLength' makes %d rules, at most %d "
		        "(limit: pattern and lengths)",
		        n_rules, RL_RULES_MAX);
	if ((names = orch_calloc((size_t)n_rules, sizeof(*names))) == NULL)
		return ORCH_ENOMEM;
	for (int i = 0; i < n_rules; i++)
		new_name(js, names[i]);
	for (size_t at = 0; at < p->n && rv == ORCH_OK; at++) {
		if (!p->live[at])
			continue;
		sbuf_clear(&body);
		if ((rv = put_pair(js, p, at, names, &body)) == ORCH_OK)
			rv = put_rule(js, names[p->rule[at]], &body);
	}
	if (rv == ORCH_OK)
		sbuf_puts(b, names[p->rule[0]]);
	sbuf_fini(&body);
	orch_free(names);
	return rv;
}

/* rx_bounded - a string matching @pat with [lo, hi] code points, exactly, into @b. */
static orch_err
rx_bounded(struct js *js, const char *pat, uint64_t lo, uint64_t hi, struct sbuf *b)
{
	struct dfa d = {0};
	struct prod p = {.d = &d, .lo = lo, .hi = hi, .top = hi == JS_INF ? lo : hi};
	orch_err rv;

	if ((rv = rl_dfa(js, pat, &d)) != ORCH_OK)
		goto out;
	if (p.top + 1 > RL_PAIRS_MAX / (uint64_t)d.n) {
		rv = js_limit(js,
		              "'pattern' with 'maxLength' %" PRIu64 " crosses %d states with each "
		              "count (limit: pattern and lengths)",
		              p.top, d.n);
		goto out;
	}
	p.n = (size_t)d.n * (size_t)(p.top + 1);
	if ((rv = prod_live(&p)) != ORCH_OK)
		goto out;
	if (!p.live[0])
		rv = js_fail(js, "no string matches the 'pattern' (within 'minLength'/'maxLength' "
		                 "where given)");
	else
		rv = prod_rules(js, &p, b);
out:
	orch_free(p.live);
	orch_free(p.rule);
	dfa_free(&d);
	return rv;
}
