/*
 * json_schema_cpset.c - sets of code points for json_schema_pattern.c, and
 * how the grammar writes one inside a JSON string (escaped where JSON wants
 * it). json_schema.c #includes this file before the pattern's; it is not
 * built on its own.
 */

struct range {
	uint32_t lo, hi;
};

/* A set of code points as ranges (sorted and merged by set_norm). */
struct cpset {
	struct range *r;
	size_t n, cap;
	bool oom;
};

/* The code points a JSON string holds unescaped, as this grammar writes it. */
static const struct range raw_ranges[] = {
        {0x20, 0x21}, {0x23, 0x5b}, {0x5d, 0x7e}, {0x80, 0xd7ff}, {0xe000, 0x10ffff},
};

static void
set_add(struct cpset *s, uint32_t lo, uint32_t hi)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct range *r = orch_reallocarray(s->r, cap, sizeof(*r));
		if (r == NULL) {
			s->oom = true;
			return;
		}
		s->r = r;
		s->cap = cap;
	}
	s->r[s->n++] = (struct range){lo, hi};
}

static int
range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void
set_norm(struct cpset *s)
{
	size_t k = 0;

	if (s->n == 0)
		return;
	qsort(s->r, s->n, sizeof(s->r[0]), range_cmp);
	for (size_t i = 1; i < s->n; i++) {
		if (s->r[i].lo <= s->r[k].hi + 1) {
			if (s->r[i].hi > s->r[k].hi)
				s->r[k].hi = s->r[i].hi;
		} else {
			s->r[++k] = s->r[i];
		}
	}
	s->n = k + 1;
}

/* set_invert - the complement of @s over all code points. */
static void
set_invert(struct cpset *s)
{
	struct cpset t = {0};
	uint32_t next = 0;

	set_norm(s);
	for (size_t i = 0; i < s->n; i++) {
		if (s->r[i].lo > next)
			set_add(&t, next, s->r[i].lo - 1);
		next = s->r[i].hi + 1;
	}
	if (next <= 0x10ffff)
		set_add(&t, next, 0x10ffff);
	t.oom = t.oom || s->oom;
	orch_free(s->r);
	*s = t;
}

static bool
set_has(const struct cpset *s, uint32_t c)
{
	for (size_t i = 0; i < s->n; i++)
		if (c >= s->r[i].lo && c <= s->r[i].hi)
			return true;
	return false;
}

/* set_class - add \d \w \s (or, upper case, their complements) to @s. */
static void
set_class(struct cpset *s, char c)
{
	static const struct range space[] = {
	        {0x09, 0x0d},     {0x20, 0x20},     {0xa0, 0xa0},     {0x1680, 0x1680},
	        {0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f},
	        {0x3000, 0x3000}, {0xfeff, 0xfeff},
	};
	struct cpset t = {0};

	if (c == 'd' || c == 'D') {
		set_add(&t, '0', '9');
	} else if (c == 'w' || c == 'W') {
		set_add(&t, '0', '9');
		set_add(&t, 'A', 'Z');
		set_add(&t, '_', '_');
		set_add(&t, 'a', 'z');
	} else {
		for (size_t i = 0; i < sizeof(space) / sizeof(space[0]); i++)
			set_add(&t, space[i].lo, space[i].hi);
	}
	if (c >= 'A' && c <= 'Z')
		set_invert(&t);
	for (size_t i = 0; i < t.n; i++)
		set_add(s, t.r[i].lo, t.r[i].hi);
	s->oom = s->oom || t.oom;
	orch_free(t.r);
}

/* put_escape - a GBNF literal of the JSON escape of @c ('"', '\\', a control, DEL). */
static void
put_escape(struct sbuf *b, uint32_t c)
{
	static const char letters[] = "\bb\ff\nn\rr\tt\"\"\\\\";
	const char *l = c ? strchr(letters, (int)c) : NULL;

	sbuf_puts(b, "\"\\\\");
	if (l != NULL && (l - letters) % 2 == 0)
		sbuf_printf(b, "%s%c\"", l[1] == '"' || l[1] == '\\' ? "\\" : "", l[1]);
	else
		sbuf_printf(b, "u%04x\"", (unsigned)c);
}

/* put_char - the JSON encoding of code point @c as one GBNF primary (@raw: @c itself). */
static void
put_char(struct sbuf *b, uint32_t c, bool raw)
{
	if (!raw && (c < 0x20 || c == '"' || c == '\\' || c == 0x7f)) {
		sbuf_puts(b, "( ");
		put_escape(b, c);
		sbuf_puts(b, " )");
		return;
	}
	sbuf_putc(b, '"');
	put_cp(b, c, false);
	sbuf_putc(b, '"');
}

/* put_set - the JSON encodings of the code points of @s as one GBNF primary. */
static orch_err
put_set(struct js *js, struct sbuf *b, struct cpset *s)
{
	struct sbuf alt = {0};
	unsigned nalt = 0, nctl = 0;

	set_norm(s);
	if (s->oom)
		return ORCH_ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t j = 0; j < sizeof(raw_ranges) / sizeof(raw_ranges[0]); j++) {
			uint32_t lo = s->r[i].lo > raw_ranges[j].lo ? s->r[i].lo : raw_ranges[j].lo;
			uint32_t hi = s->r[i].hi < raw_ranges[j].hi ? s->r[i].hi : raw_ranges[j].hi;
			if (lo > hi)
				continue;
			sbuf_puts(&alt, alt.n ? "" : "[");
			put_cp(&alt, lo, true);
			if (hi > lo)
				sbuf_putc(&alt, '-'), put_cp(&alt, hi, true);
		}
	}
	nalt += alt.n > 0;
	sbuf_puts(&alt, alt.n ? "]" : "");
	for (uint32_t c = 0; c < 0x20; c++)
		nctl += set_has(s, c);
	for (uint32_t c = 0; c < 0x80; c++) {
		if (!set_has(s, c) || (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) ||
		    (c < 0x20 && nctl == 0x20))
			continue;
		sbuf_puts(&alt, nalt++ ? " | " : "");
		put_escape(&alt, c);
	}
	if (nctl == 0x20) {
		sbuf_puts(&alt, nalt++ ? " | " : "");
		sbuf_puts(&alt, "\"\\\\\" ( [bfnrt] | \"u00\" [01] hex )");
		js->used |= U_HEX;
	}
	if (alt.oom || nalt == 0) {
		nalt = alt.oom;
		sbuf_fini(&alt);
		return nalt ? ORCH_ENOMEM
		            : js_fail(js,
		                      "unsupported 'pattern': a character class that matches nothing");
	}
	sbuf_printf(b, nalt > 1 ? "( %s )" : "%s", alt.p);
	sbuf_fini(&alt);
	return ORCH_OK;
}

/* put_raw_set - the code points of @s as one GBNF class, as they are (json_regex_gbnf). */
static orch_err
put_raw_set(struct js *js, struct sbuf *b, struct cpset *s)
{
	size_t start = b->n;

	set_norm(s);
	if (s->oom)
		return ORCH_ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		/* no surrogates: the output is UTF-8 */
		struct range parts[2] = {{s->r[i].lo, s->r[i].hi}, {1, 0}};
		if (parts[0].lo <= 0xdfff && parts[0].hi >= 0xd800) {
			parts[1] = (struct range){0xe000, parts[0].hi};
			parts[0].hi = 0xd7ff;
		}
		for (int k = 0; k < 2; k++) {
			if (parts[k].lo > parts[k].hi)
				continue;
			sbuf_puts(b, b->n > start ? "" : "[");
			put_cp(b, parts[k].lo, true);
			if (parts[k].hi > parts[k].lo)
				sbuf_putc(b, '-'), put_cp(b, parts[k].hi, true);
		}
	}
	if (b->n == start)
		return js_fail(js, "unsupported 'pattern': a character class that matches nothing");
	sbuf_putc(b, ']');
	return sbuf_err(b);
}
