/*
 * json_schema_compound.c - objects and arrays for json_schema.c, which
 * #includes this file; it is not built on its own.
 *
 * Objects: declared properties in schema order, required ones always,
 * optional ones optionally; "first present" alternatives and one tail rule
 * per position place the commas. Extra keys (additionalProperties true or
 * a schema) come after the declared ones, unescaped, and never equal to a
 * declared name (the complement of a trie of the names). Arrays: the
 * prefix items nested optionally as far as minItems allows, then the rest
 * repeated within minItems..maxItems.
 */

#define JS_KEY_MAX 1024 /* the longest property name beside extra keys */

struct prop;
static orch_err obj_keys(struct js *js, const cJSON *s, struct prop *p, size_t n, size_t *n_live);
static orch_err obj_extra(struct js *js, const cJSON *s, const char *id, const struct prop *p,
                          size_t n, bool *extras);
static const cJSON *extra_schema(const struct js *js, const cJSON *s);

/* One property of an object rule; schema NULL: any value. */
struct prop {
	const char *key;
	const cJSON *schema;
	bool required;
};

static bool
is_required(const cJSON *req, const char *k)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, req)
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, k) == 0)
			return true;
	}
	return false;
}

/* json_quote - @s as a JSON string (the form the grammar emits). */
static void
json_quote(struct sbuf *b, const char *s)
{
	sbuf_putc(b, '"');
	for (; *s; s++) {
		uint8_t c = (uint8_t)*s;
		const char *l = strchr("\bb\ff\nn\rr\tt", c);

		if (c == '"' || c == '\\')
			sbuf_printf(b, "\\%c", c);
		else if (c < 0x20 && l && (l - "\bb\ff\nn\rr\tt") % 2 == 0)
			sbuf_printf(b, "\\%c", l[1]);
		else if (c < 0x20 || c == 0x7f)
			sbuf_printf(b, "\\u%04x", c);
		else
			sbuf_putc(b, (char)c);
	}
	sbuf_putc(b, '"');
}

/* put_kv - "key" ws ":" ws value. */
static orch_err
put_kv(struct js *js, struct sbuf *b, const char *key, const char *val)
{
	struct sbuf q = {0};
	orch_err rv;

	json_quote(&q, key);
	if ((rv = sbuf_err(&q)) == ORCH_OK)
		rv = put_lit(js, b, q.p, q.n);
	sbuf_printf(b, " ws \":\" ws %s", val);
	js->used |= U_WS;
	sbuf_fini(&q);
	return rv;
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* put_notin - unescaped key text never equal to @names (sorted, sharing @d bytes). */
static orch_err
put_notin(struct js *js, struct sbuf *b, const char **names, size_t n, size_t d)
{
	struct sbuf excl = {0};
	size_t i = 0, j, len;
	bool term = false;
	orch_err rv = ORCH_OK;
	uint32_t c;

	sbuf_puts(b, "( ");
	for (; i < n && names[i][d] == '\0'; i++)
		term = true;
	for (; i < n && rv == ORCH_OK; i = j) {
		if (utf8_next((const uint8_t *)names[i] + d, strlen(names[i] + d), &c, &len) !=
		    UTF8_OK)
			rv = js_fail(js, "a property name that is not well-formed UTF-8");
		for (j = i + 1; j < n && strncmp(names[j] + d, names[i] + d, len) == 0; j++)
			;
		if (rv != ORCH_OK || c < 0x20 || c == '"' || c == '\\' || c == 0x7f)
			continue; /* never written unescaped: no key of ours can be it */
		sbuf_putc(b, '"');
		put_cp(b, c, false);
		sbuf_puts(b, "\" ");
		rv = put_notin(js, b, names + i, j - i, d + len);
		sbuf_puts(b, " | ");
		put_cp(&excl, c, true);
	}
	sbuf_printf(b, "[^\"\\\\\\x7F\\x00-\\x1F%s] [^\"\\\\\\x7F\\x00-\\x1F]*%s )",
	            excl.p ? excl.p : "", term ? "" : " |");
	if (rv == ORCH_OK)
		rv = sbuf_err(&excl);
	sbuf_fini(&excl);
	return rv;
}

/* A name and where it came from, sorted by name then place: duplicates side by side. */
struct named {
	const char *name;
	size_t at;
};

static int
cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->at > y->at) - (x->at < y->at);
}

/* Whether the sorted @v (@n) has @name. */
static bool
named_has(const struct named *v, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v[mid].name, name);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * obj_props - the properties of an object rule: declared, then required-only
 * ones. Names are looked up in sorted copies, so that a schema of many
 * properties costs n log n, not n² (40,000 of them took orchd 43 s).
 */
static orch_err
obj_props(struct js *js, const cJSON *s, struct prop **ret, size_t *ret_n)
{
	const cJSON *props = kw(s, "properties"), *req = kw(s, "required");
	const cJSON *addl = kw(s, "additionalProperties"), *it;
	size_t np = (size_t)cJSON_GetArraySize(props), nr = (size_t)cJSON_GetArraySize(req);
	size_t n = 0, k = 0;
	orch_err rv = ORCH_OK;

	if (props && !cJSON_IsObject(props))
		return js_fail(js, "'properties' must be an object");
	if (req && !cJSON_IsArray(req))
		return js_fail(js, "'required' must be an array of strings");
	if (addl && !cJSON_IsBool(addl) && !cJSON_IsObject(addl))
		return js_fail(js, "'additionalProperties' must be a schema");
	cJSON_ArrayForEach(it, req)
	{
		if (!cJSON_IsString(it))
			return js_fail(js, "'required' must be an array of strings");
	}
	struct prop *p = orch_calloc(np + nr + 1, sizeof(*p));
	struct named *pn = orch_calloc(np + 1, sizeof(*pn)), *rn = orch_calloc(nr + 1, sizeof(*rn));
	bool *first = orch_calloc(nr + 1, sizeof(*first));
	if (p == NULL || pn == NULL || rn == NULL || first == NULL) {
		orch_free(p);
		rv = ORCH_ENOMEM;
		goto out;
	}
	*ret = p;
	cJSON_ArrayForEach(it, props)
	{
		pn[k] = (struct named){it->string, k};
		k++;
	}
	qsort(pn, np, sizeof(*pn), cmp_named);
	for (k = 1; k < np; k++)
		if (strcmp(pn[k - 1].name, pn[k].name) == 0) {
			rv = js_fail(js, "property '%s' is declared twice", pn[k].name);
			goto out;
		}
	k = 0;
	cJSON_ArrayForEach(it, req)
	{
		rn[k] = (struct named){it->valuestring, k};
		k++;
	}
	qsort(rn, nr, sizeof(*rn), cmp_named);
	for (k = 0; k < nr; k++) /* a name's first place in 'required' */
		first[rn[k].at] = k == 0 || strcmp(rn[k - 1].name, rn[k].name) != 0;
	cJSON_ArrayForEach(it, props)
	{
		p[n++] = (struct prop){it->string, it, named_has(rn, nr, it->string)};
	}
	k = 0;
	cJSON_ArrayForEach(it, req)
	{
		if (!first[k++] || named_has(pn, np, it->valuestring))
			continue;
		if (cJSON_IsFalse(addl)) {
			rv = js_fail(js,
			             "required property '%s' is not in 'properties' and "
			             "'additionalProperties' is false: no object can match",
			             it->valuestring);
			goto out;
		}
		p[n++] = (struct prop){it->valuestring, cJSON_IsObject(addl) ? addl : NULL, true};
	}
	*ret_n = n;
out:
	orch_free(pn);
	orch_free(rn);
	orch_free(first);
	return rv;
}

/*
 * obj_counts - minProperties met by making optional properties required, in schema
 * order; maxProperties by no extra keys and the optional properties past it left out.
 */
static orch_err
obj_counts(struct js *js, const cJSON *s, struct prop *p, size_t *n, bool *extras)
{
	uint64_t lo = 0, hi = JS_INF, nreq = 0, kept = 0;
	size_t k = 0;
	orch_err rv;

	if ((rv = get_count(js, s, "minProperties", &lo)) != ORCH_OK ||
	    (rv = get_count(js, s, "maxProperties", &hi)) != ORCH_OK)
		return rv;
	for (size_t i = 0; i < *n; i++)
		nreq += p[i].required;
	for (size_t i = 0; i < *n && nreq < lo; i++)
		if (!p[i].required)
			p[i].required = true, nreq++;
	if (lo > nreq)
		return js_fail(js, "unsupported keyword 'minProperties' (taken when the declared "
		                   "properties can meet it)");
	if (hi == JS_INF)
		return ORCH_OK;
	if (nreq > hi)
		return js_fail(js, "'maxProperties' is under the required properties: no object "
		                   "can match");
	*extras = false;
	for (size_t i = 0; i < *n; i++) {
		if (!p[i].required && nreq + kept >= hi)
			continue;
		kept += !p[i].required;
		p[k++] = p[i];
	}
	*n = k;
	return ORCH_OK;
}

/* obj_tails - rule @id-tJ: what may follow property J-1 (J = 1..n; n: extra keys). */
static orch_err
obj_tails(struct js *js, const char *id, const struct prop *p, char (*val)[JS_NAME_MAX], size_t n,
          bool extras)
{
	char rule[JS_NAME_MAX + 24];
	struct sbuf b = {0};
	orch_err rv = ORCH_OK;

	for (size_t j = n + 1; j-- > 0 && rv == ORCH_OK;) {
		sbuf_clear(&b);
		if ((j == n && !extras) || (j == 0 && n > 0))
			continue;
		if (j == n) {
			sbuf_printf(&b, "( ws \",\" ws %s-x )*", id);
		} else {
			sbuf_puts(&b, "( ws \",\" ws ");
			rv = put_kv(js, &b, p[j].key, val[j]);
			sbuf_puts(&b, p[j].required ? " )" : " )?");
			if (j + 1 < n || extras)
				sbuf_printf(&b, " %s-t%zu", id, j + 1);
		}
		snprintf(rule, sizeof(rule), "%s-t%zu", id, j);
		if (rv == ORCH_OK)
			rv = put_rule(js, rule, &b);
	}
	sbuf_fini(&b);
	return rv;
}

/* obj_body - "{" ws ( first present property and its tail | ... ) ws "}". */
static orch_err
obj_body(struct js *js, struct sbuf *b, const char *id, const struct prop *p,
         char (*val)[JS_NAME_MAX], size_t n, bool extras)
{
	bool all_optional = true;
	orch_err rv = ORCH_OK;
	size_t k;

	js->used |= U_WS;
	if (n == 0 && !extras) {
		sbuf_puts(b, "\"{\" ws \"}\"");
		return ORCH_OK;
	}
	for (k = 0; k < n && all_optional; k++)
		all_optional = !p[k].required;
	sbuf_puts(b, all_optional ? "\"{\" ws ( ( " : "\"{\" ws ( ");
	for (k = 0; k < n && rv == ORCH_OK; k++) {
		sbuf_puts(b, k ? " | " : "");
		rv = put_kv(js, b, p[k].key, val[k]);
		if (k + 1 < n || extras)
			sbuf_printf(b, " %s-t%zu", id, k + 1);
		if (p[k].required)
			break;
	}
	if (all_optional && extras)
		sbuf_printf(b, "%s%s-x %s-t%zu", n ? " | " : "", id, id, n);
	sbuf_puts(b, all_optional ? " ) ws )? \"}\"" : " ) ws \"}\"");
	return rv;
}

static orch_err
gen_obj(struct js *js, const cJSON *s, struct sbuf *b)
{
	const cJSON *addl = extra_schema(js, s), *pp = kw(s, "patternProperties");
	bool plain = !pp && !kw(s, "propertyNames");
	bool extras = cJSON_IsTrue(addl) || cJSON_IsObject(addl) || cJSON_GetArraySize(pp) > 0;
	char(*val)[JS_NAME_MAX] = NULL, id[JS_NAME_MAX];
	unsigned epoch = js->epoch;
	struct prop *p = NULL;
	size_t n = 0, nall = 0, old;
	orch_err rv;

	if (!kw(s, "properties") && !kw(s, "required") && !addl && plain)
		extras = true; /* any object */
	if ((rv = obj_props(js, s, &p, &nall)) != ORCH_OK ||
	    (rv = obj_keys(js, s, p, nall, &n)) != ORCH_OK ||
	    (rv = obj_counts(js, s, p, &n, &extras)) != ORCH_OK)
		goto out;
	if (nall == 0 && extras && plain && !cJSON_IsObject(addl)) {
		js->used |= U_OBJECT;
		sbuf_puts(b, "object");
		goto out;
	}
	if ((val = orch_calloc(n + 1, sizeof(*val))) == NULL) {
		rv = ORCH_ENOMEM;
		goto out;
	}
	js->epoch = ++js->epochs; /* "{" consumed: recursion below is not left recursion */
	new_name(js, id);
	for (size_t i = 0; i < n && rv == ORCH_OK; i++) {
		old = p[i].schema == addl ? path_push(js, "additionalProperties")
		                          : path_push2(js, "properties", p[i].key, 0);
		if (p[i].schema)
			rv = gen(js, p[i].schema, val[i]);
		else
			snprintf(val[i], JS_NAME_MAX, "value"), js->used |= U_VALUE;
		path_pop(js, old);
	}
	if (rv == ORCH_OK && extras)
		rv = obj_extra(js, s, id, p, nall, &extras);
	if (rv == ORCH_OK)
		rv = obj_tails(js, id, p, val, n, extras);
	if (rv == ORCH_OK)
		rv = obj_body(js, b, id, p, val, n, extras);
out:
	js->epoch = epoch;
	orch_free(val);
	orch_free(p);
	return rv;
}

/* put_rep - ( ws "," ws @item ) repeated @m to @n times (n capped at JS_REPEAT_MAX). */
static void
put_rep(struct sbuf *b, const char *item, uint64_t m, uint64_t n)
{
	n = n != JS_INF && n > JS_REPEAT_MAX ? JS_REPEAT_MAX : n;
	if (n == 0)
		return;
	sbuf_printf(b, "( ws \",\" ws %s )", item);
	if (n == JS_INF)
		sbuf_printf(b, m == 0 ? "*" : m == 1 ? "+" : "{%" PRIu64 ",}", m);
	else if (m == 0 && n == 1)
		sbuf_puts(b, "?");
	else if (m != 1 || n != 1)
		sbuf_printf(b, m == n ? "{%" PRIu64 "}" : "{%" PRIu64 ",%" PRIu64 "}", m, n);
	sbuf_putc(b, ' ');
}

/* arr_items - the rules of the first @k prefix items and of the rest (@rest: any if NULL). */
static orch_err
arr_items(struct js *js, const cJSON *prefix, const char *pkw, size_t k, const cJSON *rest,
          char (*val)[JS_NAME_MAX])
{
	orch_err rv = ORCH_OK;
	size_t old;

	for (size_t i = 0; i < k && rv == ORCH_OK; i++) {
		old = path_push2(js, pkw, NULL, (int)i);
		rv = gen(js, cJSON_GetArrayItem(prefix, (int)i), val[i]);
		path_pop(js, old);
	}
	if (rv != ORCH_OK || cJSON_IsFalse(rest))
		return rv;
	if (rest == NULL) {
		js->used |= U_VALUE;
		snprintf(val[k], JS_NAME_MAX, "value");
		return ORCH_OK;
	}
	old = path_push(js, "items");
	rv = gen(js, rest, val[k]);
	path_pop(js, old);
	return rv;
}

/* arr_body - "[" ws P0 ( ws "," ws P1 ( ... rest )? )? ws "]" with lo..hi items. */
static void
arr_body(struct sbuf *b, char (*val)[JS_NAME_MAX], size_t k, bool rest, uint64_t lo, uint64_t hi)
{
	uint64_t rhi = hi == JS_INF ? JS_INF : hi - k;

	sbuf_puts(b, "\"[\" ws ");
	if (hi == 0) {
		sbuf_puts(b, "\"]\"");
		return;
	}
	sbuf_puts(b, lo == 0 ? "( " : "");
	if (k == 0) {
		sbuf_printf(b, "%s ", val[0]);
		put_rep(b, val[0], lo > 0 ? lo - 1 : 0, hi == JS_INF ? JS_INF : hi - 1);
	} else {
		sbuf_printf(b, "%s ", val[0]);
		for (size_t i = 1; i < k; i++)
			sbuf_printf(b, "( ws \",\" ws %s ", val[i]);
		if (rest)
			put_rep(b, val[k], lo > k ? lo - k : 0, rhi);
		for (size_t i = k - 1; i >= 1; i--)
			sbuf_puts(b, i >= lo ? ")? " : ") ");
	}
	sbuf_puts(b, lo == 0 ? "ws )? \"]\"" : "ws \"]\"");
}

/* The most distinct values uniqueItems is enforced exactly over: a rule per subset used. */
#define JS_UNIQ_MAX 8

/*
 * uniq_domain - the values an item of @items can take when they are few (enum or const
 * values that hold against their siblings, or a type of boolean and null only),
 * distinct as JSON compares them, into @v; 0 when the domain is not such a set.
 */
static orch_err
uniq_domain(struct js *js, const cJSON *items, cJSON *v[JS_UNIQ_MAX + 1], size_t *n)
{
	static cJSON t = {.type = cJSON_True}, f = {.type = cJSON_False},
	             nul = {.type = cJSON_NULL};
	const cJSON *s = deref(js, items), *e, *c, *type;
	bool ok;
	orch_err rv;

	*n = 0;
	if (!cJSON_IsObject(s))
		return ORCH_OK;
	c = kw(s, "const"), e = kw(s, "enum"), type = kw(s, "type");
	if (c == NULL && e == NULL && cJSON_GetArraySize(s) == 1 && cJSON_IsString(type) &&
	    (strcmp(type->valuestring, "boolean") == 0 || strcmp(type->valuestring, "null") == 0)) {
		if (type->valuestring[0] == 'n')
			v[(*n)++] = &nul;
		else
			v[(*n)++] = &t, v[(*n)++] = &f;
		return ORCH_OK;
	}
	if (c == NULL && !cJSON_IsArray(e))
		return ORCH_OK;
	for (cJSON *x = c ? (cJSON *)c : e->child; x; x = c ? NULL : x->next) {
		if ((rv = value_ok(js, s, x, 0, &ok)) != ORCH_OK)
			return rv;
		bool seen = false;
		for (size_t i = 0; i < *n && !seen; i++)
			seen = cJSON_Compare(v[i], x, true);
		if (!ok || seen)
			continue;
		if (*n == JS_UNIQ_MAX) { /* too many: not enforced exactly here */
			*n = 0;
			return ORCH_OK;
		}
		v[(*n)++] = x;
	}
	return ORCH_OK;
}

/*
 * uniq_body - an array of distinct items from @v (@n values), @lo..@hi of them: a rule
 * per set of values used so far ("[" ws, then each step names one value not yet in it).
 */
static orch_err
uniq_body(struct js *js, struct sbuf *b, cJSON *v[], size_t n, uint64_t lo, uint64_t hi)
{
	char(*name)[JS_NAME_MAX] = orch_calloc((size_t)1 << n, sizeof(*name));
	struct sbuf lit[JS_UNIQ_MAX] = {{0}}, r = {0};
	orch_err rv = ORCH_OK;

	if (name == NULL)
		return ORCH_ENOMEM;
	for (size_t i = 0; i < n && rv == ORCH_OK; i++)
		rv = put_json_lit(js, &lit[i], v[i]);
	for (unsigned m = 0; m < 1u << n && rv == ORCH_OK; m++)
		if ((uint64_t)__builtin_popcount(m) <= hi)
			new_name(js, name[m]);
	/* from the fullest sets down: a rule names only rules of larger sets */
	for (unsigned m = (1u << n) - 1; m > 0 && rv == ORCH_OK; m--) {
		uint64_t c = (uint64_t)__builtin_popcount(m);
		bool alt = false;
		if (c > hi)
			continue;
		sbuf_clear(&r);
		if (c >= lo)
			sbuf_puts(&r, "ws \"]\""), alt = true;
		for (size_t i = 0; i < n && c < hi; i++)
			if (!(m & 1u << i)) {
				sbuf_printf(&r, "%sws \",\" ws %s %s", alt ? " | " : "", lit[i].p,
				            name[m | 1u << i]);
				alt = true;
			}
		rv = put_rule(js, name[m], &r);
	}
	if (rv == ORCH_OK) { /* the array: "[" ws, then "]" or a first value */
		sbuf_puts(b, "\"[\" ws ( ");
		bool alt = false;
		if (lo == 0)
			sbuf_puts(b, "\"]\""), alt = true;
		for (size_t i = 0; i < n && hi > 0; i++, alt = true)
			sbuf_printf(b, "%s%s %s", alt ? " | " : "", lit[i].p, name[1u << i]);
		sbuf_puts(b, " )");
	}
	for (size_t i = 0; i < n; i++)
		sbuf_fini(&lit[i]);
	sbuf_fini(&r);
	orch_free(name);
	return rv;
}

/*
 * gen_contains - an array of items @items (any value when NULL) of which at least
 * @k match @c (each of those an item of both, their allOf): "[" the others, then k
 * times one of both, each followed by the others "]". Exact: a match may stand
 * anywhere. Item counts beside it are refused (their sum is no repeat of one part).
 */
static orch_err
gen_contains(struct js *js, const cJSON *s, const cJSON *items, const cJSON *c, uint64_t k,
             struct sbuf *b)
{
	char x[JS_NAME_MAX], both[JS_NAME_MAX];
	cJSON *o, *all;
	size_t old;
	orch_err rv;

	if (kw(s, "minItems") || kw(s, "maxItems") || kw(s, "uniqueItems") ||
	    kw(s, "prefixItems") || cJSON_IsArray(items) || cJSON_IsFalse(items))
		return js_fail(js,
		               "'contains' beside item counts, 'uniqueItems' or leading items is "
		               "not supported");
	if (k > JS_REPEAT_MAX)
		return js_fail(js, "'minContains' over %d is not supported", JS_REPEAT_MAX);
	if (items == NULL) {
		js->used |= U_VALUE;
		snprintf(x, sizeof(x), "value");
	} else {
		old = path_push(js, "items");
		rv = gen(js, items, x);
		path_pop(js, old);
		if (rv != ORCH_OK)
			return rv;
	}
	/* an item of both: the allOf of the two, made as any allOf */
	if ((o = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(js->owned, o) ||
	    (all = cJSON_AddArrayToObject(o, "allOf")) == NULL ||
	    !cJSON_AddItemReferenceToArray(all, (cJSON *)c) ||
	    (items && !cJSON_AddItemReferenceToArray(all, (cJSON *)items)))
		return ORCH_ENOMEM;
	old = path_push(js, "contains");
	rv = gen(js, o, both);
	path_pop(js, old);
	if (rv != ORCH_OK)
		return rv;
	js->used |= U_WS;
	sbuf_printf(b, "\"[\" ws ( %s ws \",\" ws )* %s", x, both);
	if (k > 1)
		sbuf_printf(b, " ( ws \",\" ws ( %s ws \",\" ws )* %s ){%" PRIu64 "}", x, both,
		            k - 1);
	sbuf_printf(b, " ( ws \",\" ws %s )* ws \"]\"", x);
	return ORCH_OK;
}

/*
 * arr_exact - the arrays a kind of its own makes, into @b (*@done): contains with
 * minContains (gen_contains), and uniqueItems over a few values (uniq_body).
 */
static orch_err
arr_exact(struct js *js, const cJSON *s, const cJSON *items, const cJSON *prefix, uint64_t lo,
          uint64_t hi, struct sbuf *b, bool *done)
{
	const cJSON *c = ignorable(js, "contains") ? NULL : kw(s, "contains");
	unsigned epoch = js->epoch;
	cJSON *v[JS_UNIQ_MAX + 1];
	uint64_t need = 1;
	size_t n = 0, old;
	orch_err rv = ORCH_OK;

	*done = false;
	if (c != NULL && !ignorable(js, "minContains") &&
	    (rv = get_count(js, s, "minContains", &need)) != ORCH_OK)
		return rv;
	if (c != NULL && need > 0) { /* at least minContains (1 unless given; 0 asks nothing) */
		js->epoch = ++js->epochs; /* "[" consumed */
		rv = gen_contains(js, s, items, c, need, b);
		js->epoch = epoch;
		*done = true;
		return rv;
	}
	if (!cJSON_IsTrue(kw(s, "uniqueItems")) || prefix || cJSON_IsArray(items) || !items)
		return ORCH_OK;
	old = path_push(js, "items");
	rv = uniq_domain(js, items, v, &n);
	path_pop(js, old);
	if (rv != ORCH_OK || n == 0)
		return rv;
	if (lo > n)
		return js_fail(js,
		               "'minItems' %" PRIu64 " cannot be met: 'uniqueItems' over %zu "
		               "distinct values",
		               lo, n);
	js->used |= U_WS; /* exact: each value at most once */
	*done = true;
	return uniq_body(js, b, v, n, lo, hi < n ? hi : n);
}

static orch_err
gen_arr(struct js *js, const cJSON *s, struct sbuf *b)
{
	const cJSON *items = kw(s, "items"), *prefix = kw(s, "prefixItems"), *uniq;
	const char *pkw = "prefixItems";
	char(*val)[JS_NAME_MAX];
	unsigned epoch = js->epoch;
	uint64_t lo = 0, hi = JS_INF;
	bool done;
	size_t k;
	orch_err rv;

	if ((rv = get_count(js, s, "minItems", &lo)) != ORCH_OK ||
	    (rv = get_count(js, s, "maxItems", &hi)) != ORCH_OK)
		return rv;
	if (lo > hi)
		return js_fail(js, "'minItems' is over 'maxItems': no array can match");
	if ((uniq = kw(s, "uniqueItems")) && !cJSON_IsBool(uniq))
		return js_fail(js, "'uniqueItems' must be a boolean");
	if ((rv = arr_exact(js, s, items, prefix, lo, hi, b, &done)) != ORCH_OK || done)
		return rv;
	if (cJSON_IsTrue(uniq) && lo > 1)
		return js_fail(js, "unsupported keyword 'uniqueItems' (true is taken with "
		                   "'minItems' up to 1)");
	if (cJSON_IsTrue(uniq))
		hi = hi < 1 ? hi : 1; /* stricter: at most one item, always unique */
	if (cJSON_IsArray(items)) {   /* draft 7 tuple: any items after it */
		if (prefix)
			return js_fail(js, "'items' as an array beside 'prefixItems'");
		prefix = items, pkw = "items", items = NULL;
	}
	if (prefix && !cJSON_IsArray(prefix))
		return js_fail(js, "'prefixItems' must be an array of schemas");
	if (!prefix && !items && lo == 0 && hi == JS_INF) {
		js->used |= U_ARRAY;
		sbuf_puts(b, "array");
		return ORCH_OK;
	}
	k = (size_t)cJSON_GetArraySize(prefix);
	k = k < hi ? k : (size_t)hi;
	hi = cJSON_IsFalse(items) && hi > k ? k : hi;
	if ((cJSON_IsFalse(items) && lo > k) || lo > JS_REPEAT_MAX)
		return js_fail(js,
		               "'minItems' %" PRIu64 " cannot be met (at most %zu items, and "
		               "orch takes up to %d)",
		               lo, cJSON_IsFalse(items) ? k : (size_t)JS_REPEAT_MAX, JS_REPEAT_MAX);
	if ((val = orch_calloc(k + 1, sizeof(*val))) == NULL)
		return ORCH_ENOMEM;
	js->epoch = ++js->epochs; /* "[" consumed */
	js->used |= U_WS;
	rv = arr_items(js, prefix, pkw, k, items, val);
	js->epoch = epoch;
	if (rv == ORCH_OK)
		arr_body(b, val, k, !cJSON_IsFalse(items), lo, hi);
	orch_free(val);
	return rv;
}
