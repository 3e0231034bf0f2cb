/*
 * json_schema_keys.c - which keys an object may have, for json_schema.c, which
 * #includes this file (after json_schema_compound.c); not built on its own.
 *
 * Declared properties are checked against propertyNames (a name it refuses may
 * not appear: dropped, or the schema refused when required) and against
 * patternProperties (a declared name a pattern finds gets that pattern's schema
 * too: allOf). Extra keys are one rule (id-x) of alternatives, each sound alone:
 * a key a pattern matches, valued by all the pattern schemas at once (whatever
 * other patterns it matches, it satisfies them), never a key a declared name
 * could be; and any undeclared key valued by additionalProperties and all the
 * pattern schemas (so it validates whether or not a pattern matches it). An
 * alternative that cannot be made sound is left out: stricter, never looser.
 */

/* Code points of a UTF-8 string. */
static uint64_t
key_cps(const char *s)
{
	uint64_t n = 0;

	for (; *s; s++)
		n += ((uint8_t)*s & 0xc0) != 0x80;
	return n;
}

/* key_ok - whether the name @k validates against propertyNames @pn (*@ok). */
static orch_err
key_ok(struct js *js, const cJSON *pn, const char *k, bool *ok)
{
	static const char *const taken[] = {"type", "minLength", "maxLength", "pattern",
	                                    "enum", "const",     "format",    NULL};
	const cJSON *it, *e;
	uint64_t lo = 0, hi = JS_INF, n = key_cps(k);
	unsigned m;
	bool in = false;
	orch_err rv;

	*ok = !cJSON_IsFalse(pn = deref(js, pn));
	if (!cJSON_IsObject(pn))
		return ORCH_OK;
	cJSON_ArrayForEach(it, pn)
	{
		if (!in_list(taken, it->string) && !ignorable(js, it->string))
			return js_fail(js, "unsupported keyword 'propertyNames' (taken with type, "
			                   "lengths, pattern, format, enum and const only)");
	}
	if ((rv = type_kw(js, pn, &m)) || (rv = get_count(js, pn, "minLength", &lo)) ||
	    (rv = get_count(js, pn, "maxLength", &hi)))
		return rv;
	*ok = (m & T_STR) && n >= lo && n <= hi;
	if (*ok && cJSON_IsString(it = kw(pn, "pattern")) &&
	    (rv = pattern_matches(js, it->valuestring, k, ok)) != ORCH_OK)
		return rv;
	if (*ok && cJSON_IsString(it = kw(pn, "format")) && str_format(it) &&
	    (rv = fmt_value_ok(it->valuestring, k, ok)) != ORCH_OK)
		return rv;
	if (*ok && (e = kw(pn, "const")) != NULL)
		*ok = cJSON_IsString(e) && strcmp(e->valuestring, k) == 0;
	if (*ok && cJSON_IsArray(e = kw(pn, "enum"))) {
		cJSON_ArrayForEach(it, e) in =
		        in || (cJSON_IsString(it) && strcmp(it->valuestring, k) == 0);
		*ok = in;
	}
	return ORCH_OK;
}

/* owned_allof - a new schema {"allOf": [@a, the values of @obj...]} in js->owned (refs). */
static orch_err
owned_allof(struct js *js, const cJSON *a, const cJSON *obj, const cJSON **ret)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	const cJSON *it;

	if (o == NULL || !cJSON_AddItemToArray(js->owned, o)) {
		cJSON_Delete(o);
		return ORCH_ENOMEM;
	}
	if ((arr = cJSON_AddArrayToObject(o, "allOf")) == NULL ||
	    (a && !cJSON_AddItemReferenceToArray(arr, (cJSON *)a)))
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(
	        it, obj) if (!cJSON_AddItemReferenceToArray(arr, (cJSON *)it)) return ORCH_ENOMEM;
	*ret = cJSON_GetArraySize(arr) == 1 ? arr->child : o;
	return ORCH_OK;
}

/* key_patterns - @p's schema joined (allOf) with those of the patterns that find its name. */
static orch_err
key_patterns(struct js *js, const cJSON *pp, struct prop *p)
{
	cJSON *o = NULL, *arr = NULL;
	const cJSON *it;
	bool hit;
	orch_err rv;

	cJSON_ArrayForEach(it, pp)
	{
		if ((rv = pattern_matches(js, it->string, p->key, &hit)) != ORCH_OK)
			return rv;
		if (!hit)
			continue;
		if (o == NULL) {
			if ((o = cJSON_CreateObject()) == NULL ||
			    !cJSON_AddItemToArray(js->owned, o)) {
				cJSON_Delete(o);
				return ORCH_ENOMEM;
			}
			if ((arr = cJSON_AddArrayToObject(o, "allOf")) == NULL ||
			    (p->schema && !cJSON_AddItemReferenceToArray(arr, (cJSON *)p->schema)))
				return ORCH_ENOMEM;
		}
		if (!cJSON_AddItemReferenceToArray(arr, (cJSON *)it))
			return ORCH_ENOMEM;
	}
	if (o != NULL)
		p->schema = o;
	return ORCH_OK;
}

/*
 * obj_keys - the declared properties that may appear first (*@n_live of @n), then
 * those that may not (propertyNames refuses the name, or the schema is false):
 * the latter stay in @p only so that no extra key takes their names.
 */
static orch_err
obj_keys(struct js *js, const cJSON *s, struct prop *p, size_t n, size_t *n_live)
{
	const cJSON *pp = kw(s, "patternProperties"), *pn = kw(s, "propertyNames");
	size_t live = 0;
	bool ok;
	orch_err rv;

	if (pp && !cJSON_IsObject(pp))
		return js_fail(js, "'patternProperties' must be an object");
	for (size_t i = 0; i < n; i++) {
		ok = !cJSON_IsFalse(p[i].schema);
		if (ok && pn && (rv = key_ok(js, pn, p[i].key, &ok)) != ORCH_OK)
			return rv;
		if (!ok && p[i].required)
			return js_fail(
			        js,
			        "required property '%s' may not appear (its schema is false, "
			        "or 'propertyNames' refuses it): no object can match",
			        p[i].key);
		if (ok && pp && (rv = key_patterns(js, pp, &p[i])) != ORCH_OK)
			return rv;
		if (ok) { /* keep the order: live ones first */
			struct prop t = p[i];
			memmove(&p[live + 1], &p[live], (i - live) * sizeof(*p));
			p[live++] = t;
		}
	}
	*n_live = live;
	return ORCH_OK;
}

/* The schema extra keys take: additionalProperties, else (2019-09 on) unevaluatedProperties. */
static const cJSON *
extra_schema(const struct js *js, const cJSON *s)
{
	const cJSON *addl = kw(s, "additionalProperties");
	const cJSON *uneval =
	        ignorable(js, "unevaluatedProperties") ? NULL : kw(s, "unevaluatedProperties");

	if (uneval && !cJSON_IsObject(addl))
		return uneval; /* extra keys of ours are never evaluated by another keyword */
	return addl;
}

/* extra_pattern_keys - one alternative per pattern no declared name could be. */
static orch_err
extra_pattern_keys(struct js *js, const cJSON *pp, const char **names, size_t n, struct sbuf *alt)
{
	char val[JS_NAME_MAX];
	const cJSON *all, *it;
	bool clash;
	size_t old = path_push(js, "patternProperties");
	orch_err rv;

	if ((rv = owned_allof(js, NULL, pp, &all)) != ORCH_OK ||
	    (rv = gen(js, all, val)) != ORCH_OK)
		goto out;
	cJSON_ArrayForEach(it, pp)
	{
		size_t at = path_push(js, it->string); /* a refusal names the pattern */
		clash = false;
		for (size_t i = 0; i < n && !clash && rv == ORCH_OK; i++)
			rv = pattern_matches(js, it->string, names[i], &clash);
		if (rv == ORCH_OK && !clash) { /* a clash: its keys could repeat a declared one */
			sbuf_puts(alt, alt->n ? " | " : "");
			if ((rv = gen_pattern(js, it->string, 0, JS_INF, alt)) == ORCH_OK) {
				sbuf_printf(alt, " ws \":\" ws %s", val);
				js->used |= U_WS;
			}
		}
		path_pop(js, at);
		if (rv != ORCH_OK)
			break;
	}
out:
	path_pop(js, old);
	return rv;
}

/* extra_other_keys - the alternative of keys no declared name is, valued by @addl (+ patterns). */
static orch_err
extra_other_keys(struct js *js, const cJSON *s, const cJSON *addl, const char **names, size_t n,
                 struct sbuf *alt)
{
	const cJSON *pp = kw(s, "patternProperties"), *pn = kw(s, "propertyNames"), *v = addl;
	char val[JS_NAME_MAX];
	size_t old = path_push(js, "additionalProperties"), at = alt->n;
	orch_err rv = ORCH_OK;

	if (pp && cJSON_GetArraySize(pp) > 0)
		rv = owned_allof(js, cJSON_IsObject(addl) ? addl : NULL, pp, &v);
	if (rv == ORCH_OK)
		rv = gen(js, v, val);
	if (rv != ORCH_OK)
		goto out;
	sbuf_puts(alt, alt->n ? " | " : "");
	if (pn) { /* keys as propertyNames makes them, when no declared name can clash */
		pn = deref(js, pn);
		if (n > 0 || !cJSON_IsObject(pn) || kw(pn, "enum") || kw(pn, "const")) {
			cut(alt, at);
			goto out;
		}
		if ((rv = key_ok(js, pn, "", &(bool){false})) == ORCH_OK)
			rv = gen_str(js, pn, alt);
	} else {
		sbuf_puts(alt, "\"\\\"\" ");
		rv = put_notin(js, alt, names, n, 0);
		sbuf_puts(alt, " \"\\\"\"");
	}
	sbuf_printf(alt, " ws \":\" ws %s", val);
	js->used |= U_WS;
out:
	path_pop(js, old);
	return rv;
}

/*
 * obj_extra - rule @id-x (an extra key and its value) from patternProperties and
 * additionalProperties; *@extras false when no alternative is left.
 */
static orch_err
obj_extra(struct js *js, const cJSON *s, const char *id, const struct prop *p, size_t n,
          bool *extras)
{
	const cJSON *pp = kw(s, "patternProperties"), *addl = extra_schema(js, s), *it;
	const char **names = orch_calloc(n + 1, sizeof(*names));
	struct sbuf alt = {0};
	char rule[JS_NAME_MAX + 4];
	bool no = false;
	orch_err rv = names ? ORCH_OK : ORCH_ENOMEM;

	for (size_t i = 0; i < n && rv == ORCH_OK; i++) {
		names[i] = p[i].key;
		if (strlen(p[i].key) > JS_KEY_MAX)
			rv = js_limit(js,
			              "a property name over %d bytes beside extra keys (limit: "
			              "key length)",
			              JS_KEY_MAX);
	}
	cJSON_ArrayForEach(it, pp) no = no || cJSON_IsFalse(it);
	if (rv == ORCH_OK) {
		qsort(names, n, sizeof(*names), str_cmp);
		if (pp && !no && !kw(s, "propertyNames") && cJSON_GetArraySize(pp) > 0)
			rv = extra_pattern_keys(js, pp, names, n, &alt);
	}
	if (rv == ORCH_OK && !no && (cJSON_IsTrue(addl) || cJSON_IsObject(addl)))
		rv = extra_other_keys(js, s, addl, names, n, &alt);
	if (rv == ORCH_OK)
		rv = sbuf_err(&alt);
	*extras = rv == ORCH_OK && alt.n > 0;
	snprintf(rule, sizeof(rule), "%s-x", id);
	if (*extras)
		rv = put_rule(js, rule, &alt);
	orch_free(names);
	sbuf_fini(&alt);
	return rv;
}
