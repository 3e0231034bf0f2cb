/*
 * json_schema_pattern.c - string 'pattern's for json_schema.c, which
 * #includes this file; it is not built on its own.
 *
 * A pattern is translated from a regular subset of ECMA-262 with the u flag
 * (what ajv uses): literals, escapes, '.', classes with \d \w \s, groups,
 * '|', * + ? {m,n}. It constrains the decoded string while the grammar
 * produces the JSON-encoded one, so a '"', '\\' or control character it
 * allows is emitted escaped (one form each: \" \\ \b \f \n \r \t, else
 * \u00xx). An unanchored start (no ^) allows up to 32 characters before the
 * match, an unanchored end (no $) any after it.
 * Backreferences, lookarounds, \b and \p{} are refused, and so are repeats
 * nested past GRAM_EXPANSION_MAX, counted as the grammar compiler counts them
 * (grammar.h), so that a pattern orch takes always compiles: a repeat counts
 * n (m when unbounded), times what the repeated item's repeats count when
 * the item can match nothing ((a{0,100}){0,100}: 10^4).
 */

/*
 * The most characters before the match of a pattern without '^' (stricter,
 * but a random model would otherwise wander until it met the match by chance).
 */
#define RX_PREFIX_MAX "32"

/*
 * A length range in code points (hi == JS_INF: unbounded), and what the
 * repeats inside expand to (GRAM_EXPANSION_MAX; 1: none).
 */
struct lr {
	uint64_t lo, hi;
	uint64_t x;
};

/* A pattern being translated. */
struct rx {
	struct js *js;
	const char *p, *end;
	struct sbuf *o;
	int depth;
};

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > JS_INF - b ? JS_INF : a + b;
}

static uint64_t
sat_mul(uint64_t a, uint64_t b)
{
	if (a == 0 || b == 0)
		return 0;
	return a > JS_INF / b ? JS_INF : a * b;
}

__attribute__((format(printf, 2, 3))) static orch_err
rx_fail(struct rx *rx, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return js_fail(rx->js, "unsupported 'pattern': %s", what);
}

/* rx_bad - @rx is no regular expression at all (ECMAScript refuses it too): invalid. */
__attribute__((format(printf, 2, 3))) static orch_err
rx_bad(struct rx *rx, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return js_fail(rx->js, "invalid 'pattern' (not an ECMAScript regular expression): %s",
	               what);
}

/* rx_hex - @n hex digits (n == 0: up to '}') into *@v. */
static orch_err
rx_hex(struct rx *rx, int n, uint32_t *v)
{
	int k = 0;

	for (*v = 0; rx->p < rx->end && (n == 0 ? *rx->p != '}' : k < n); rx->p++, k++) {
		char c = *rx->p;
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0 || *v > 0x10ffff)
			return rx_bad(rx, "a bad hex escape");
		*v = *v * 16 + (uint32_t)d;
	}
	if (k == 0 || (n > 0 && k < n) || *v > 0x10ffff)
		return rx_bad(rx, "a bad hex escape");
	return ORCH_OK;
}

/* rx_unicode - the rest of a \u escape: HHHH, a surrogate pair, or {H...}. */
static orch_err
rx_unicode(struct rx *rx, uint32_t *cp)
{
	uint32_t lo;
	orch_err rv;

	if (rx->p < rx->end && *rx->p == '{') {
		rx->p++;
		if ((rv = rx_hex(rx, 0, cp)) != ORCH_OK)
			return rv;
		if (rx->p >= rx->end)
			return rx_bad(rx, "an unterminated \\u{");
		rx->p++;
	} else if ((rv = rx_hex(rx, 4, cp)) != ORCH_OK) {
		return rv;
	}
	if (*cp >= 0xd800 && *cp <= 0xdbff && rx->end - rx->p >= 6 && rx->p[0] == '\\' &&
	    rx->p[1] == 'u') {
		rx->p += 2;
		if ((rv = rx_hex(rx, 4, &lo)) != ORCH_OK)
			return rv;
		if (lo < 0xdc00 || lo > 0xdfff)
			return rx_fail(rx, "a lone surrogate escape");
		*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (*cp >= 0xd800 && *cp <= 0xdfff)
		return rx_fail(rx, "a lone surrogate escape");
	return ORCH_OK;
}

/* rx_escape - after '\\': one code point (*@cp) or a class added to @set (*@is_set). */
static orch_err
rx_escape(struct rx *rx, bool in_class, uint32_t *cp, struct cpset *set, bool *is_set)
{
	static const char ctl[] = "f\fn\nr\rt\tv\v";
	char c;

	*is_set = false;
	if (rx->p >= rx->end)
		return rx_bad(rx, "a '\\' at the end");
	c = *rx->p++;
	if (strchr("dDwWsS", c)) {
		set_class(set, c);
		*is_set = true;
	} else if (strchr("fnrtv", c)) {
		*cp = (uint8_t)strchr(ctl, c)[1];
	} else if (c == '0' && (rx->p >= rx->end || *rx->p < '0' || *rx->p > '9')) {
		*cp = 0;
	} else if ((c >= '0' && c <= '9') || c == 'k') {
		return rx_fail(rx, "backreferences cannot be expressed in a grammar");
	} else if (c == 'b' && in_class) {
		*cp = '\b';
	} else if (c == 'b' || c == 'B') {
		return rx_fail(rx, "word boundaries (\\%c) are not supported", c);
	} else if (c == 'p' || c == 'P') {
		return rx_fail(rx, "Unicode property escapes (\\%c) are not supported", c);
	} else if (c == 'x') {
		return rx_hex(rx, 2, cp);
	} else if (c == 'u') {
		return rx_unicode(rx, cp);
	} else if (c == 'c' && rx->p < rx->end &&
	           ((*rx->p | 0x20) >= 'a' && (*rx->p | 0x20) <= 'z')) {
		*cp = (uint32_t)(*rx->p++ & 0x1f);
	} else if ((c != '\0' && strchr("^$\\.*+?()[]{}|/", c)) || (c == '-' && in_class)) {
		*cp = (uint8_t)c;
	} else {
		return rx_bad(rx, "an unknown escape");
	}
	return ORCH_OK;
}

/* rx_class_atom - one member of a [...] class. */
static orch_err
rx_class_atom(struct rx *rx, struct cpset *set, uint32_t *cp, bool *is_set)
{
	size_t len;

	*is_set = false;
	if (*rx->p == '\\') {
		rx->p++;
		return rx_escape(rx, true, cp, set, is_set);
	}
	if (utf8_next((const uint8_t *)rx->p, (size_t)(rx->end - rx->p), cp, &len) != UTF8_OK)
		return rx_bad(rx, "not well-formed UTF-8");
	rx->p += len;
	return ORCH_OK;
}

/* rx_class - a [...] class into @set. */
static orch_err
rx_class(struct rx *rx, struct cpset *set)
{
	uint32_t a, z;
	bool aset, zset, neg;
	orch_err rv;

	rx->p++;
	neg = rx->p < rx->end && *rx->p == '^';
	rx->p += neg;
	while (rx->p < rx->end && *rx->p != ']') {
		if ((rv = rx_class_atom(rx, set, &a, &aset)) != ORCH_OK)
			return rv;
		if (rx->end - rx->p < 2 || rx->p[0] != '-' || rx->p[1] == ']') {
			if (!aset)
				set_add(set, a, a);
			continue;
		}
		rx->p++;
		if ((rv = rx_class_atom(rx, set, &z, &zset)) != ORCH_OK)
			return rv;
		if (aset || zset)
			return rx_bad(rx, "a class escape as the end of a range");
		if (a > z)
			return rx_bad(rx, "a range out of order");
		set_add(set, a, z);
	}
	if (rx->p >= rx->end)
		return rx_bad(rx, "an unterminated '['");
	rx->p++;
	if (neg)
		set_invert(set);
	return ORCH_OK;
}

static orch_err rx_alts(struct rx *rx, struct lr *l);

/* rx_group_open - past a group's '(' and its head: capturing, (?:...) or (?<name>...). */
static orch_err
rx_group_open(struct rx *rx)
{
	rx->p++;
	if (rx->p < rx->end && *rx->p == '?') {
		const char *gt = memchr(rx->p, '>', (size_t)(rx->end - rx->p));
		if (rx->end - rx->p >= 2 && rx->p[1] == ':')
			rx->p += 2;
		else if (rx->end - rx->p >= 3 && rx->p[1] == '<' && rx->p[2] != '=' &&
		         rx->p[2] != '!' && gt != NULL)
			rx->p = gt + 1;
		else
			return rx_fail(rx,
			               "lookarounds and other (?...) groups cannot be expressed");
	}
	if (++rx->depth > JS_DEPTH_MAX)
		return rx_fail(rx, "groups nested deeper than %d", JS_DEPTH_MAX);
	return ORCH_OK;
}

/* rx_group_close - past a group's ')'. */
static orch_err
rx_group_close(struct rx *rx)
{
	if (rx->p >= rx->end || *rx->p != ')')
		return rx_bad(rx, "an unterminated '('");
	rx->p++;
	rx->depth--;
	return ORCH_OK;
}

/* rx_group - a (...) group as a GBNF group. */
static orch_err
rx_group(struct rx *rx, struct lr *l)
{
	orch_err rv;

	if ((rv = rx_group_open(rx)) != ORCH_OK)
		return rv;
	sbuf_puts(rx->o, "( ");
	if ((rv = rx_alts(rx, l)) != ORCH_OK || (rv = rx_group_close(rx)) != ORCH_OK)
		return rv;
	sbuf_puts(rx->o, ")");
	return ORCH_OK;
}

/* rx_atom - one character, class or group as one GBNF primary; its length in *@l. */
static orch_err
rx_atom(struct rx *rx, struct lr *l)
{
	struct cpset set = {0};
	bool is_set = false;
	orch_err rv = ORCH_OK;
	uint32_t c = 0;
	size_t len;

	*l = (struct lr){1, 1, 1};
	switch (*rx->p) {
	case '(':
		return rx_group(rx, l);
	case '[':
		rv = rx_class(rx, &set);
		is_set = true;
		break;
	case '.':
		rx->p++;
		set_add(&set, '\n', '\n');
		set_add(&set, '\r', '\r');
		set_add(&set, 0x2028, 0x2029);
		set_invert(&set);
		is_set = true;
		break;
	case '\\':
		rx->p++;
		rv = rx_escape(rx, false, &c, &set, &is_set);
		break;
	case '^':
	case '$':
		return rx_fail(rx, "'^' and '$' are taken only at the start and the end");
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
	if (rv == ORCH_OK && is_set)
		rv = rx->js->raw ? put_raw_set(rx->js, rx->o, &set) : put_set(rx->js, rx->o, &set);
	else if (rv == ORCH_OK)
		put_char(rx->o, c, rx->js->raw);
	orch_free(set.r);
	return rv;
}

/* rx_count - a decimal repeat count (saturating). */
static uint64_t
rx_count(struct rx *rx)
{
	uint64_t v = 0;

	for (; rx->p < rx->end && *rx->p >= '0' && *rx->p <= '9'; rx->p++)
		v = v > 1000000000 ? v : v * 10 + (uint64_t)(*rx->p - '0');
	return v;
}

/* rx_quant - a quantifier (if any) into [*@m, *@n]. */
static orch_err
rx_quant(struct rx *rx, uint64_t *m, uint64_t *n)
{
	char c = rx->p < rx->end ? *rx->p : '\0';
	const char *at;

	*m = c == '*' || c == '?' ? 0 : 1;
	*n = c == '*' || c == '+' ? JS_INF : 1;
	if (c == '*' || c == '+' || c == '?') {
		rx->p++;
	} else if (c == '{') {
		at = ++rx->p;
		*m = *n = rx_count(rx);
		if (rx->p == at)
			return rx_bad(rx, "a '{' that is no repeat count");
		if (rx->p < rx->end && *rx->p == ',') {
			at = ++rx->p;
			*n = rx_count(rx);
			*n = rx->p == at ? JS_INF : *n;
		}
		if (rx->p >= rx->end || *rx->p != '}')
			return rx_bad(rx, "a '{' that is no repeat count");
		rx->p++;
		if (*n < *m)
			return rx_bad(rx, "a repeat count {m,n} with n < m");
	} else {
		return ORCH_OK;
	}
	if (rx->p < rx->end && *rx->p == '?')
		rx->p++; /* lazy: the same strings */
	return ORCH_OK;
}

/*
 * rx_expansion - what @a repeated @count times expands to, as the grammar
 * compiler counts it (gbnf_expansion.c): its own expansion, and the count
 * (2 or more), times its own when @a can match nothing.
 */
static uint64_t
rx_expansion(const struct lr *a, uint64_t count)
{
	uint64_t x = count < 2 ? 1 : a->lo == 0 ? sat_mul(count, a->x) : count;

	return x > a->x ? x : a->x;
}

/*
 * rx_term - an atom and its quantifier. With @clamp, a one-character atom's
 * count is cut to [clamp->lo, clamp->hi] (minLength/maxLength); clamp->lo
 * is set to JS_INF when it could not be.
 */
static orch_err
rx_term(struct rx *rx, struct lr *l, struct lr *clamp)
{
	size_t start = rx->o->n;
	uint64_t m, n;
	struct lr a;
	orch_err rv;

	if ((rv = rx_atom(rx, &a)) != ORCH_OK || (rv = rx_quant(rx, &m, &n)) != ORCH_OK)
		return rv;
	if (clamp && (a.lo != 1 || a.hi != 1)) {
		clamp->lo = JS_INF;
	} else if (clamp) {
		uint64_t cm = m > clamp->lo ? m : clamp->lo, cn = n < clamp->hi ? n : clamp->hi;
		if (cn < n && cn > JS_REPEAT_MAX)
			cn = JS_REPEAT_MAX; /* maxLength cut: stricter */
		if (cm > cn)
			clamp->lo = JS_INF; /* the general path tells why */
		else
			m = cm, n = cn;
	}
	if (n == JS_INF && a.lo == 0)
		return rx_fail(rx, "an unbounded repeat of something that can match nothing");
	if (m > JS_REPEAT_MAX || (n != JS_INF && n > JS_REPEAT_MAX))
		return rx_fail(rx, "a repeat count over %d", JS_REPEAT_MAX);
	uint64_t x = rx_expansion(&a, n == JS_INF ? m : n);
	if (x > GRAM_EXPANSION_MAX)
		return rx_fail(rx,
		               "its repeats expand to %" PRIu64 " parse positions, at most %d (a "
		               "repeat of what can match nothing multiplies what it repeats)",
		               x, GRAM_EXPANSION_MAX);
	*l = (struct lr){sat_mul(a.lo, m), sat_mul(a.hi, n), x};
	if (n == 0) {
		cut(rx->o, start); /* x{0}: nothing */
	} else if (n == JS_INF) {
		sbuf_printf(rx->o, m == 0 ? "*" : m == 1 ? "+" : "{%" PRIu64 ",}", m);
	} else if (m != 1 || n != 1) {
		sbuf_printf(rx->o, m == n ? "{%" PRIu64 "}" : "{%" PRIu64 ",%" PRIu64 "}", m, n);
	}
	return ORCH_OK;
}

/* rx_seq - terms up to '|', ')' or the end (@top: a final '$' sets *@dollar). */
static orch_err
rx_seq(struct rx *rx, struct lr *l, bool top, bool *dollar)
{
	struct lr t = {0, 0, 1};
	orch_err rv;

	*l = (struct lr){0, 0, 1};
	while (rx->p < rx->end && *rx->p != '|' && *rx->p != ')') {
		if (top && *rx->p == '$' && (rx->p + 1 == rx->end || rx->p[1] == '|')) {
			rx->p++;
			*dollar = true;
			break;
		}
		if ((rv = rx_term(rx, &t, NULL)) != ORCH_OK)
			return rv;
		*l = (struct lr){sat_add(l->lo, t.lo), sat_add(l->hi, t.hi),
		                 t.x > l->x ? t.x : l->x};
		sbuf_putc(rx->o, ' ');
	}
	return ORCH_OK;
}

/* rx_alts - alternatives inside a group. */
static orch_err
rx_alts(struct rx *rx, struct lr *l)
{
	struct lr a;
	orch_err rv;

	for (bool first = true;; first = false) {
		if ((rv = rx_seq(rx, &a, false, NULL)) != ORCH_OK)
			return rv;
		l->lo = first || a.lo < l->lo ? a.lo : l->lo;
		l->hi = first || a.hi > l->hi ? a.hi : l->hi;
		l->x = first || a.x > l->x ? a.x : l->x;
		if (rx->p >= rx->end || *rx->p != '|')
			return ORCH_OK;
		rx->p++;
		sbuf_puts(rx->o, "| ");
	}
}

/* rx_pattern - @pat as the inside of a JSON string (js->raw: as the whole output); its length
 * range in *@l. */
static orch_err
rx_pattern(struct js *js, const char *pat, struct sbuf *o, struct lr *l)
{
	struct rx rx = {js, pat, pat + strlen(pat), o, 0};
	struct lr a;
	orch_err rv;

	sbuf_puts(o, "( ");
	for (bool first = true;; first = false) {
		bool a0 = rx.p < rx.end && *rx.p == '^', a1 = false;

		rx.p += a0;
		/* raw (json_regex_gbnf): the output is matched whole, anchored or not */
		a0 |= js->raw;
		sbuf_puts(o, a0 ? "" : js->search ? "char* " : "char{0," RX_PREFIX_MAX "} ");
		if ((rv = rx_seq(&rx, &a, true, &a1)) != ORCH_OK)
			return rv;
		a1 |= js->raw;
		sbuf_puts(o, a1 ? "" : "char* ");
		js->used |= a0 && a1 ? 0 : U_CHAR;
		a.hi = a0 && a1 ? a.hi : JS_INF;
		l->lo = first || a.lo < l->lo ? a.lo : l->lo;
		l->hi = first || a.hi > l->hi ? a.hi : l->hi;
		l->x = first || a.x > l->x ? a.x : l->x;
		if (rx.p >= rx.end)
			break;
		if (*rx.p != '|')
			return rx_bad(&rx, "an unmatched ')'");
		rx.p++;
		sbuf_puts(o, "| ");
	}
	sbuf_puts(o, ")");
	return ORCH_OK;
}

/*
 * rx_clamped - a pattern ^X$ with X one character (class) and a quantifier,
 * its count cut to the lengths [lo, hi]; *@done false when it is not one.
 */
static orch_err
rx_clamped(struct js *js, const char *pat, uint64_t lo, uint64_t hi, struct sbuf *o, bool *done)
{
	size_t n = strlen(pat), bs = 0, start = o->n;
	struct lr clamp = {lo, hi, 1}, l;
	struct rx rx = {js, pat + 1, pat + n - 1, o, 0};
	orch_err rv;

	*done = false;
	while (bs + 2 < n && pat[n - 2 - bs] == '\\')
		bs++;
	if (n < 3 || pat[0] != '^' || pat[n - 1] != '$' || bs % 2 == 1 || pat[1] == '$')
		return ORCH_OK;
	if ((rv = rx_term(&rx, &l, &clamp)) != ORCH_OK)
		return rv;
	*done = rx.p == rx.end && clamp.lo != JS_INF;
	if (!*done) {
		cut(o, start);
	}
	return ORCH_OK;
}

/* rx_inner_anchor - whether @pat has a '^' or '$' other than a top-level alternative's
 * first or last character (json_schema_rxlen.c takes those). */
static bool
rx_inner_anchor(const char *pat)
{
	size_t n = strlen(pat);
	bool cls = false;
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		char c = pat[i];
		if (c == '\\') {
			i++;
		} else if (cls) {
			cls = c != ']';
		} else if (c == '[') {
			cls = true;
		} else if (c == '(' || c == ')') {
			depth += c == '(' ? 1 : -1;
		} else if (c == '^' && (depth > 0 || (i > 0 && pat[i - 1] != '|'))) {
			return true;
		} else if (c == '$' && (depth > 0 || (i + 1 < n && pat[i + 1] != '|'))) {
			return true;
		}
	}
	return false;
}

/* gen_pattern - a string matching @pat with [lo, hi] code points. */
static orch_err
gen_pattern(struct js *js, const char *pat, uint64_t lo, uint64_t hi, struct sbuf *b)
{
	struct lr l;
	bool done;
	orch_err rv;

	sbuf_puts(b, "\"\\\"\" ");
	size_t start = b->n;
	if (rx_inner_anchor(pat)) { /* anchors inside: through the automaton */
		if ((rv = rx_bounded(js, pat, lo, hi, b)) != ORCH_OK)
			return rv;
		sbuf_puts(b, " \"\\\"\"");
		return ORCH_OK;
	}
	if ((rv = rx_clamped(js, pat, lo, hi, b, &done)) != ORCH_OK)
		return rv;
	if (!done && (rv = rx_pattern(js, pat, b, &l)) != ORCH_OK)
		return rv;
	if (!done && (lo > l.lo || (hi != JS_INF && l.hi > hi))) {
		/* lengths the pattern does not imply: the exact intersection (json_schema_rxlen.c)
		 */
		cut(b, start);
		if ((rv = rx_bounded(js, pat, lo, hi, b)) != ORCH_OK)
			return rv;
	}
	sbuf_puts(b, " \"\\\"\"");
	return ORCH_OK;
}

/*
 * pattern_matches - whether @pat finds a match in the string @name (*@ret), as a
 * validator reads 'pattern' (a search, anchored only by ^ and $): the pattern as
 * an exact grammar of JSON strings, compiled, given @name JSON-quoted.
 */
static orch_err
pattern_matches(struct js *js, const char *pat, const char *name, bool *ret)
{
	struct js sub = {.msg = NULL, .msg_n = 0, .search = true, .draft = js->draft};
	struct sbuf g = {0}, q = {0};
	struct gram *gr = NULL;
	struct gram_err ge;
	struct lr l;
	orch_err rv;

	*ret = false;
	if (js_late(js))
		return js_over(js);
	sbuf_puts(&g, "root ::= \"\\\"\" ");
	if ((rv = rx_pattern(&sub, pat, &g, &l)) != ORCH_OK) {
		rv = sub.fatal ? js_limit(js, "%s", sub.fails.p ? sub.fails.p : "a pattern")
		               : js_fail(js, "unsupported 'pattern' '%s' in 'patternProperties'",
		                         pat);
		goto out;
	}
	sbuf_puts(&g, " \"\\\"\"\n");
	put_shared(&sub, &g);
	json_quote(&q, name);
	if ((rv = sbuf_err(&g)) == ORCH_OK && (rv = sbuf_err(&q)) == ORCH_OK &&
	    (rv = gram_compile(g.p, g.n, NULL, &gr, &ge)) == ORCH_OK)
		*ret = gram_accepts(gr, q.p, q.n);
	else if (rv == ORCH_EINVAL)
		rv = js_fail(js, "pattern '%s' does not compile: %s", pat, ge.msg);
out:
	gram_free(gr);
	sbuf_fini(&g);
	sbuf_fini(&q);
	sbuf_fini(&sub.fails);
	sbuf_fini(&sub.out);
	return rv;
}

orch_err
json_regex_gbnf(const char *pattern, char **ret, char *msg, size_t msg_n)
{
	struct js js = {.msg = msg, .msg_n = msg_n, .raw = true};
	struct sbuf all = {0};
	struct lr l;
	orch_err rv;

	if (msg_n > 0)
		msg[0] = '\0';
	if (pattern == NULL || ret == NULL) {
		if (msg_n > 0)
			snprintf(msg, msg_n, "no pattern");
		return ORCH_EINVAL;
	}
	sbuf_puts(&all, "root ::= ");
	if ((rv = rx_pattern(&js, pattern, &all, &l)) == ORCH_OK) {
		sbuf_putc(&all, '\n');
		put_shared(&js, &all);
		rv = sbuf_err(&all);
	}
	if (rv == ORCH_OK && all.n > JS_OUT_MAX)
		rv = js_limit(&js, "the grammar would be over 1 MiB (limit: grammar size)");
	if (rv == ORCH_OK)
		*ret = sbuf_take(&all, NULL);
	if (rv == ORCH_EINVAL)
		js_message(&js);
	if (rv == ORCH_ENOMEM && msg_n > 0)
		snprintf(msg, msg_n, "out of memory");
	sbuf_fini(&all);
	sbuf_fini(&js.fails);
	sbuf_fini(&js.out);
	return rv;
}
