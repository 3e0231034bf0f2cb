/*
 * json_schema_not.c - complements, for 'not' and for the else side of
 * if/then/else, for json_schema.c, which #includes this file; it is not
 * built on its own.
 *
 * complement() gives, for the schemas it knows, a schema that no value of
 * the given one matches: every value it makes fails the given schema, while
 * some values that fail it may not be made (stricter, never looser). A
 * schema is all its keywords at once, so a value failing any one keyword
 * fails the schema: the complement of one keyword is a complement of the
 * whole. Known: 'required' (those keys absent), 'enum'/'const' of values
 * (the other types, and the other strings, booleans), 'type' (the other
 * types), 'not' (its schema), 'anyOf' (the complements of every branch).
 *
 * if/then/else in a merge: each part's if branch ('if' and 'then') is taken
 * when it can be merged with the other parts, else its else branch (the
 * complement of 'if', and 'else'), in the order of the parts.
 */

#define JS_EXCL_MAX  64 /* strings an exclusion is made for */
#define JS_EXCL_LEN  64 /* and their length */
#define JS_COMP_ALTS 4  /* alternatives of a complement, at most */

static orch_err complement_d(struct js *js, const cJSON *s, int depth, const cJSON **ret);

/* comp_obj - a new schema object in js->owned into *@ret. */
static orch_err
comp_obj(struct js *js, cJSON **ret)
{
	if ((*ret = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(js->owned, *ret)) {
		cJSON_Delete(*ret);
		*ret = NULL;
		return ORCH_ENOMEM;
	}
	return ORCH_OK;
}

/*
 * comp_put_types - the types of @m as "type" of @o. Numbers that are not integers
 * have no grammar of their own: without T_INT, T_FRAC is left out (stricter).
 */
static orch_err
comp_put_types(cJSON *o, unsigned m)
{
	static const char *const names[] = {"null", "boolean", "object", "array", "string"};
	cJSON *t = cJSON_AddArrayToObject(o, "type");

	if (t == NULL)
		return ORCH_ENOMEM;
	for (unsigned i = 0; i < 5; i++)
		if ((m & (1u << i)) && !cJSON_AddItemToArray(t, cJSON_CreateString(names[i])))
			return ORCH_ENOMEM;
	if ((m & T_INT) &&
	    !cJSON_AddItemToArray(t, cJSON_CreateString(m & T_FRAC ? "number" : "integer")))
		return ORCH_ENOMEM;
	return ORCH_OK;
}

/* comp_types - the types @s's 'type' leaves out; *@ret NULL when none is left. */
static orch_err
comp_types(struct js *js, const cJSON *s, const cJSON **ret)
{
	cJSON *o;
	unsigned m;
	orch_err rv;

	if ((rv = type_kw(js, s, &m)) != ORCH_OK)
		return rv;
	m = T_ALL & ~m;
	if (!(m & T_INT))
		m &= ~(unsigned)T_FRAC;
	if (m == 0)
		return ORCH_OK;
	if ((rv = comp_obj(js, &o)) == ORCH_OK && (rv = comp_put_types(o, m)) == ORCH_OK)
		*ret = o;
	return rv;
}

/* comp_required - objects without the keys @req names (any other keys allowed). */
static orch_err
comp_required(struct js *js, const cJSON *req, const cJSON **ret)
{
	cJSON *o, *p;
	const cJSON *r;
	orch_err rv;

	if ((rv = comp_obj(js, &o)) != ORCH_OK)
		return rv;
	if (!cJSON_AddStringToObject(o, "type", "object") ||
	    (p = cJSON_AddObjectToObject(o, "properties")) == NULL ||
	    !cJSON_AddTrueToObject(o, "additionalProperties"))
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(r,
	                   req) if (!kw(p, r->valuestring) &&
	                            !cJSON_AddFalseToObject(p, r->valuestring)) return ORCH_ENOMEM;
	*ret = o;
	return ORCH_OK;
}

/* A byte outside a class ('[^...]') or inside one, escaped if the regex syntax needs it. */
static void
excl_char(struct sbuf *b, char c, bool in_class)
{
	if (strchr(in_class ? "\\]^-[" : "^$\\.*+?()[]{}|/", c) != NULL)
		sbuf_putc(b, '\\');
	sbuf_putc(b, c);
}

/*
 * excl_rx - the regex of the strings that are none of @w[0..n) (sorted, distinct,
 * sharing their first @d bytes), after those @d bytes: one of the words' next
 * bytes and the rest, another byte and anything, or the end where no word ends.
 */
static void
excl_rx(struct sbuf *b, const char **w, size_t n, size_t d)
{
	struct sbuf cls = {0};
	size_t i = 0, j;
	bool ends = w[0][d] == '\0';

	sbuf_puts(b, "(?:");
	i = ends ? 1 : 0;
	for (; i < n; i = j) {
		for (j = i; j < n && w[j][d] == w[i][d]; j++)
			;
		excl_char(b, w[i][d], false);
		excl_char(&cls, w[i][d], true);
		excl_rx(b, w + i, j - i, d + 1);
		sbuf_putc(b, '|');
	}
	if (cls.n > 0)
		sbuf_printf(b, "[^%s][\\s\\S]*)", cls.p);
	else
		sbuf_puts(b, "[\\s\\S]+)");
	if (!ends)
		sbuf_putc(b, '?');
	sbuf_fini(&cls);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * comp_strings - the strings that are none of @vals' strings (printable ASCII,
 * at most JS_EXCL_MAX of up to JS_EXCL_LEN bytes), as a pattern into @alts;
 * other strings give nothing (stricter: no string).
 */
static orch_err
comp_strings(struct js *js, const cJSON *vals, cJSON *alts)
{
	const char *w[JS_EXCL_MAX];
	const cJSON *v;
	struct sbuf b = {0};
	size_t n = 0, m = 0;
	cJSON *o;
	orch_err rv;

	cJSON_ArrayForEach(v, vals)
	{
		if (!cJSON_IsString(v))
			continue;
		if (n == JS_EXCL_MAX || strlen(v->valuestring) > JS_EXCL_LEN)
			return ORCH_OK;
		for (const char *p = v->valuestring; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				return ORCH_OK;
		w[n++] = v->valuestring;
	}
	qsort(w, n, sizeof(w[0]), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (m == 0 || strcmp(w[m - 1], w[i]) != 0)
			w[m++] = w[i];
	sbuf_putc(&b, '^');
	excl_rx(&b, w, m, 0);
	sbuf_putc(&b, '$');
	if ((rv = sbuf_err(&b)) == ORCH_OK && (rv = comp_obj(js, &o)) == ORCH_OK &&
	    (!cJSON_AddStringToObject(o, "type", "string") ||
	     !cJSON_AddStringToObject(o, "pattern", b.p) ||
	     !cJSON_AddItemReferenceToArray(alts, o)))
		rv = ORCH_ENOMEM;
	sbuf_fini(&b);
	return rv;
}

/*
 * comp_values - the values that are none of @vals (an enum, or a const as a
 * list of one): the types none of them has, other strings, the other boolean.
 * A number, object or array among them leaves its type out (stricter).
 */
static orch_err
comp_values(struct js *js, const cJSON *vals, const cJSON **ret)
{
	unsigned seen = 0, free_m;
	int bools = 3; /* bit 0 false, bit 1 true: those left */
	const cJSON *v;
	cJSON *alts, *o;
	orch_err rv;

	cJSON_ArrayForEach(v, vals)
	{
		seen |= value_bits(v);
		if (cJSON_IsBool(v))
			bools &= cJSON_IsTrue(v) ? 1 : 2;
	}
	free_m = T_ALL & ~seen;
	if (seen & (T_INT | T_FRAC))
		free_m &= ~(unsigned)(T_INT | T_FRAC);
	if ((rv = comp_obj(js, &o)) != ORCH_OK ||
	    (alts = cJSON_AddArrayToObject(o, "anyOf")) == NULL)
		return rv != ORCH_OK ? rv : ORCH_ENOMEM;
	if (free_m & ~(unsigned)T_FRAC) {
		cJSON *t;
		if ((rv = comp_obj(js, &t)) != ORCH_OK ||
		    (rv = comp_put_types(t, free_m)) != ORCH_OK)
			return rv;
		if (!cJSON_AddItemReferenceToArray(alts, t))
			return ORCH_ENOMEM;
	}
	if ((seen & T_STR) && (rv = comp_strings(js, vals, alts)) != ORCH_OK)
		return rv;
	if ((seen & T_BOOL) && bools != 0) {
		cJSON *e, *c;
		if ((rv = comp_obj(js, &c)) != ORCH_OK ||
		    (e = cJSON_AddArrayToObject(c, "enum")) == NULL ||
		    !cJSON_AddItemToArray(e, cJSON_CreateBool(bools == 2)) ||
		    !cJSON_AddItemReferenceToArray(alts, c))
			return rv != ORCH_OK ? rv : ORCH_ENOMEM;
	}
	if (cJSON_GetArraySize(alts) > 1)
		*ret = o;
	else if (cJSON_GetArraySize(alts) == 1)
		*ret = alts->child;
	return ORCH_OK;
}

/* comp_anyof - the complement of every branch of @br, all at once (allOf); NULL if one has none. */
static orch_err
comp_anyof(struct js *js, const cJSON *br, int depth, const cJSON **ret)
{
	const cJSON *it, *c;
	cJSON *o, *all;
	orch_err rv = ORCH_OK;

	if (!cJSON_IsArray(br) || br->child == NULL || (rv = comp_obj(js, &o)) != ORCH_OK)
		return cJSON_IsArray(br) && br->child ? rv : ORCH_OK;
	if ((all = cJSON_AddArrayToObject(o, "allOf")) == NULL)
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(it, br)
	{
		if ((rv = complement_d(js, it, depth + 1, &c)) != ORCH_OK || c == NULL)
			return rv;
		if (!cJSON_AddItemReferenceToArray(all, (cJSON *)c))
			return ORCH_ENOMEM;
	}
	*ret = o;
	return ORCH_OK;
}

/*
 * comp_props - for each property @props names whose schema has a complement,
 * objects with that property valued by the complement (any other keys), into
 * @alts while it has fewer than JS_COMP_ALTS.
 */
static orch_err
comp_props(struct js *js, const cJSON *props, int depth, cJSON *alts)
{
	const cJSON *it, *c;
	cJSON *o, *p, *r;
	orch_err rv;

	cJSON_ArrayForEach(it, props)
	{
		if (cJSON_GetArraySize(alts) >= JS_COMP_ALTS)
			break;
		if ((rv = complement_d(js, it, depth + 1, &c)) != ORCH_OK)
			return rv;
		if (c == NULL)
			continue;
		if ((rv = comp_obj(js, &o)) != ORCH_OK)
			return rv;
		if (!cJSON_AddStringToObject(o, "type", "object") ||
		    (r = cJSON_AddArrayToObject(o, "required")) == NULL ||
		    !cJSON_AddItemToArray(r, cJSON_CreateString(it->string)) ||
		    (p = cJSON_AddObjectToObject(o, "properties")) == NULL ||
		    !cJSON_AddItemReferenceToObject(p, it->string, (cJSON *)c) ||
		    !cJSON_AddTrueToObject(o, "additionalProperties") ||
		    !cJSON_AddItemReferenceToArray(alts, o))
			return ORCH_ENOMEM;
	}
	return ORCH_OK;
}

/* comp_add - @c (when not NULL) one more alternative of @alts. */
static orch_err
comp_add(cJSON *alts, const cJSON *c)
{
	return c == NULL || cJSON_AddItemReferenceToArray(alts, (cJSON *)c) ? ORCH_OK : ORCH_ENOMEM;
}

/*
 * comp_kws - the complement of each keyword of @s orch has one for, into @alts:
 * a value failing any one fails @s, so their union is a complement of @s.
 */
static orch_err
comp_kws(struct js *js, const cJSON *s, int depth, cJSON *alts)
{
	const cJSON *r, *it, *c = NULL;
	orch_err rv = ORCH_OK;
	bool names = true;

	if (!ignorable(js, "required") && cJSON_IsArray(r = kw(s, "required")) && r->child) {
		cJSON_ArrayForEach(it, r) names = names && cJSON_IsString(it);
		if (names &&
		    ((rv = comp_required(js, r, &c)) != ORCH_OK || (rv = comp_add(alts, c))))
			return rv;
	}
	c = NULL;
	if (kw(s, "enum") && cJSON_IsArray(kw(s, "enum")) && !ignorable(js, "enum")) {
		rv = comp_values(js, kw(s, "enum"), &c);
	} else if (kw(s, "const") && !ignorable(js, "const")) {
		cJSON *l = cJSON_CreateArray();
		if (l == NULL || !cJSON_AddItemToArray(js->owned, l) ||
		    !cJSON_AddItemReferenceToArray(l, (cJSON *)kw(s, "const")))
			return ORCH_ENOMEM;
		rv = comp_values(js, l, &c);
	}
	if (rv != ORCH_OK || (rv = comp_add(alts, c)) != ORCH_OK)
		return rv;
	c = NULL;
	if (kw(s, "type") &&
	    ((rv = comp_types(js, s, &c)) != ORCH_OK || (rv = comp_add(alts, c)) != ORCH_OK))
		return rv;
	if (kw(s, "not") && !ignorable(js, "not") && (rv = comp_add(alts, kw(s, "not"))) != ORCH_OK)
		return rv;
	c = NULL;
	if (kw(s, "anyOf") && ((rv = comp_anyof(js, kw(s, "anyOf"), depth, &c)) != ORCH_OK ||
	                       (rv = comp_add(alts, c)) != ORCH_OK))
		return rv;
	if (cJSON_IsObject(kw(s, "properties")) && !ignorable(js, "properties"))
		return comp_props(js, kw(s, "properties"), depth, alts);
	return ORCH_OK;
}

/* complement_d - complement() at nesting @depth (bounded: 'not' inside 'not'...). */
static orch_err
complement_d(struct js *js, const cJSON *s, int depth, const cJSON **ret)
{
	cJSON *o, *alts;
	orch_err rv = ORCH_OK;

	*ret = NULL;
	if (js_late(js))
		return js_over(js);
	if (depth > JS_MERGE_DEPTH || (s = deref(js, s)) == NULL || cJSON_IsTrue(s))
		return ORCH_OK;
	if (cJSON_IsFalse(s)) {
		if ((rv = comp_obj(js, &o)) == ORCH_OK)
			*ret = o; /* {}: any value */
		return rv;
	}
	if (!cJSON_IsObject(s))
		return ORCH_OK;
	if ((rv = comp_obj(js, &o)) != ORCH_OK)
		return rv;
	if ((alts = cJSON_AddArrayToObject(o, "anyOf")) == NULL)
		return ORCH_ENOMEM;
	if ((rv = comp_kws(js, s, depth, alts)) != ORCH_OK)
		return rv;
	if (cJSON_GetArraySize(alts) > 1)
		*ret = o;
	else if (cJSON_GetArraySize(alts) == 1)
		*ret = alts->child;
	return ORCH_OK;
}

/*
 * complement - a schema no value of @s matches into *@ret (js->owned or the
 * document's), stricter than 'not': @s; NULL when orch knows none.
 */
static orch_err
complement(struct js *js, const cJSON *s, const cJSON **ret)
{
	return complement_d(js, s, 0, ret);
}

/*
 * resolve_if - part @i's if/then/else as parts of @parts (*@n, growing): the if
 * branch if the parts merge with it, else the complement of 'if' and 'else'
 * (the if branch again when there is no complement: its merge says why).
 */
static orch_err
resolve_if(struct js *js, const cJSON *s, struct part *parts, size_t *n)
{
	size_t n0 = *n, fails_n = js->fails.n;
	unsigned nfail = js->nfail;
	const cJSON *m = NULL, *c = NULL;
	orch_err rv;

	rv = collect(js, kw(s, "if"), NULL, parts, n, 1);
	if (rv == ORCH_OK && kw(s, "then"))
		rv = collect(js, kw(s, "then"), NULL, parts, n, 1);
	if (rv == ORCH_OK)
		rv = merge_parts(js, parts, *n, true, &m);
	if ((rv == ORCH_OK && m != NULL) || js->fatal)
		return rv;
	*n = n0; /* the if branch cannot be: undone, and the else branch tried */
	js->nfail = nfail;
	js->fails.n = fails_n;
	if (js->fails.p)
		js->fails.p[fails_n] = '\0';
	if ((rv = complement(js, kw(s, "if"), &c)) != ORCH_OK)
		return rv;
	if (c == NULL) {
		rv = collect(js, kw(s, "if"), NULL, parts, n, 1);
		if (rv == ORCH_OK && kw(s, "then"))
			rv = collect(js, kw(s, "then"), NULL, parts, n, 1);
		return rv;
	}
	rv = collect(js, c, NULL, parts, n, 1);
	if (rv == ORCH_OK && kw(s, "else"))
		rv = collect(js, kw(s, "else"), NULL, parts, n, 1);
	return rv;
}

/*
 * resolve_ifs - every part's if/then/else (a part met while doing so too) made
 * parts, in order: first each marked LOW_IF, so that the merges tried leave
 * the undecided ones out.
 */
static orch_err
resolve_ifs(struct js *js, struct part *parts, size_t *n)
{
	size_t old;
	orch_err rv;

	for (size_t i = 0; i < *n; i++)
		if (kw(parts[i].s, "if") && !ignorable(js, "if"))
			parts[i].low |= LOW_IF;
	for (size_t i = 0; i < *n; i++) {
		if (!(parts[i].low & LOW_IF))
			continue;
		old = *n;
		if ((rv = resolve_if(js, parts[i].s, parts, n)) != ORCH_OK)
			return rv;
		for (size_t j = old; j < *n; j++)
			if (kw(parts[j].s, "if") && !ignorable(js, "if"))
				parts[j].low |= LOW_IF;
	}
	return ORCH_OK;
}
