/*
 * json_schema_value.c - whether a given JSON value validates against a schema,
 * for enum/const values beside other keywords; json_schema.c #includes this
 * file (after json_schema_keys.c); it is not built on its own.
 *
 * An enum/const beside other keywords is the enum values that pass them: an
 * object value beside 'properties' keeps only the values whose properties
 * validate. The validator knows the keywords the compiler enforces on values:
 * type, enum, const, numeric bounds, lengths, format (json_schema_fmtval.c),
 * item counts and 'items', and for objects 'properties', 'required',
 * 'additionalProperties', minProperties/maxProperties, the dependency keywords;
 * a subschema by '$ref'.
 * Any other keyword about the value's type is refused (js_fail), never guessed.
 */

#define JS_VALUE_DEPTH 32 /* subschemas followed into an enum value */

static orch_err value_valid(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok);

/* Code points in a string (what JSON Schema's lengths count). */
static uint64_t
cp_count(const char *s)
{
	uint64_t n = 0;

	for (; *s; s++)
		n += ((uint8_t)*s & 0xc0) != 0x80;
	return n;
}

/* deps_value_ok - object @v against the dependency keywords of @s (*@ok). */
static orch_err
deps_value_ok(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok)
{
	static const char *const ks[] = {"dependencies", "dependentRequired", "dependentSchemas"};
	const cJSON *d, *it, *r;
	orch_err rv;

	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]) && *ok; i++) {
		if (ignorable(js, ks[i]) || (d = kw(s, ks[i])) == NULL)
			continue;
		if (!cJSON_IsObject(d))
			return js_fail(js, "'%s' must be an object", ks[i]);
		cJSON_ArrayForEach(it, d)
		{
			if (!*ok || kw(v, it->string) == NULL)
				continue;
			if (!cJSON_IsArray(it)) {
				if ((rv = value_valid(js, it, v, depth + 1, ok)) != ORCH_OK)
					return rv;
				continue;
			}
			cJSON_ArrayForEach(r, it) *ok =
			        *ok && cJSON_IsString(r) && kw(v, r->valuestring) != NULL;
		}
	}
	return ORCH_OK;
}

/* obj_value_ok - object @v against the object keywords of @s (*@ok). */
static orch_err
obj_value_ok(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok)
{
	const cJSON *props = kw(s, "properties"), *addl = kw(s, "additionalProperties"), *it, *sub;
	uint64_t lo = 0, hi = JS_INF, n = (uint64_t)cJSON_GetArraySize(v);
	orch_err rv;

	if ((rv = get_count(js, s, "minProperties", &lo)) != ORCH_OK ||
	    (rv = get_count(js, s, "maxProperties", &hi)) != ORCH_OK)
		return rv;
	if ((props && !cJSON_IsObject(props)) ||
	    (kw(s, "required") && !cJSON_IsArray(kw(s, "required"))))
		return js_fail(js, "'properties' must be an object and 'required' an array");
	*ok = n >= lo && n <= hi;
	cJSON_ArrayForEach(it, kw(s, "required")) *ok =
	        *ok && cJSON_IsString(it) && kw(v, it->valuestring) != NULL;
	if ((rv = deps_value_ok(js, s, v, depth, ok)) != ORCH_OK)
		return rv;
	cJSON_ArrayForEach(it, v)
	{
		if (!*ok)
			break;
		sub = kw(props, it->string) ? kw(props, it->string) : addl; /* NULL: any value */
		if (sub && (rv = value_valid(js, sub, it, depth + 1, ok)) != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/* arr_value_ok - array @v against 'items' of @s (*@ok). */
static orch_err
arr_value_ok(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok)
{
	const cJSON *items = kw(s, "items"), *it;
	orch_err rv;

	if (items == NULL)
		return ORCH_OK;
	if (cJSON_IsArray(items))
		return js_fail(js, "'items' as an array beside 'enum' or 'const' is not supported");
	cJSON_ArrayForEach(it, v)
	{
		if (!*ok)
			break;
		if ((rv = value_valid(js, items, it, depth + 1, ok)) != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/*
 * value_ok - whether @v validates against the keywords of @s besides its enum/const
 * (*@ok); a keyword about @v's type that this check does not know is refused.
 */
static orch_err
value_ok(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok)
{
	static const char *const sib[] = {
	        "type",
	        "enum",
	        "const",
	        "minimum",
	        "maximum",
	        "exclusiveMinimum",
	        "exclusiveMaximum",
	        "minLength",
	        "maxLength",
	        "minItems",
	        "maxItems",
	        "format",
	        "items",
	        "properties",
	        "required",
	        "additionalProperties",
	        "minProperties",
	        "maxProperties",
	        NULL,
	};
	const cJSON *it, *e = kw(s, "enum");
	uint64_t lo = 0, hi = JS_INF, ilo = 0, ihi = JS_INF, n;
	struct bound l, h;
	double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
	unsigned m;
	orch_err rv;

	cJSON_ArrayForEach(it, s)
	{
		if (in_list(sib, it->string) || ignorable(js, it->string) ||
		    (kw_family(it->string) & value_bits(v)) == 0)
			continue; /* about another type than @v's: it holds */
		return js_fail(js, "'%s' beside 'enum' or 'const' is not supported", it->string);
	}
	if ((rv = type_kw(js, s, &m)) || (rv = get_count(js, s, "minLength", &lo)) ||
	    (rv = get_count(js, s, "maxLength", &hi)) ||
	    (rv = get_count(js, s, "minItems", &ilo)) ||
	    (rv = get_count(js, s, "maxItems", &ihi)) ||
	    (rv = num_bound(js, s, "minimum", "exclusiveMinimum", false, &l)) ||
	    (rv = num_bound(js, s, "maximum", "exclusiveMaximum", true, &h)))
		return rv;
	if (e && !cJSON_IsArray(e))
		return js_fail(js, "'enum' must be a non-empty array");
	if (!js->fmt_holds && ((rv = value_format_ok(s, v, ok)) != ORCH_OK || !*ok))
		return rv;
	*ok = (value_bits(v) & m) != 0;
	if (cJSON_IsNumber(v) &&
	    ((l.set && (l.x ? x <= l.v : x < l.v)) || (h.set && (h.x ? x >= h.v : x > h.v))))
		*ok = false;
	n = cJSON_IsString(v) ? cp_count(v->valuestring) : lo;
	*ok = *ok && n >= lo && n <= hi;
	n = cJSON_IsArray(v) ? (uint64_t)cJSON_GetArraySize(v) : ilo;
	*ok = *ok && n >= ilo && n <= ihi;
	if (const_kw(js, s) && e) {
		bool found = false;
		cJSON_ArrayForEach(it, e) found = found || cJSON_Compare(it, v, true);
		*ok = *ok && found;
	}
	if (*ok && cJSON_IsObject(v))
		return obj_value_ok(js, s, v, depth, ok);
	if (*ok && cJSON_IsArray(v))
		return arr_value_ok(js, s, v, depth, ok);
	return ORCH_OK;
}

/* value_valid - whether @v validates against subschema @s (*@ok), its enum/const too. */
static orch_err
value_valid(struct js *js, const cJSON *s, const cJSON *v, int depth, bool *ok)
{
	const cJSON *c, *e, *it;
	bool found = false;

	if (js_late(js))
		return js_over(js);
	if (depth > JS_VALUE_DEPTH)
		return js_fail(js, "an enum value is checked at most %d schemas deep",
		               JS_VALUE_DEPTH);
	if ((s = deref(js, s)) == NULL)
		return js_fail(js, "'$ref' points at nothing in the schema");
	*ok = !cJSON_IsFalse(s);
	if (cJSON_IsBool(s))
		return ORCH_OK;
	if (!cJSON_IsObject(s))
		return js_fail(js, "a schema must be an object or a boolean");
	if ((c = const_kw(js, s)) != NULL && !cJSON_Compare(c, v, true)) {
		*ok = false;
		return ORCH_OK;
	}
	if (cJSON_IsArray(e = kw(s, "enum"))) {
		cJSON_ArrayForEach(it, e) found = found || cJSON_Compare(it, v, true);
		if (!found) {
			*ok = false;
			return ORCH_OK;
		}
	}
	return value_ok(js, s, v, depth, ok);
}

/*
 * value_quiet - value_valid (value_ok for @s's own enum values) checked quietly:
 * 1 valid, 0 not, -1 not known (a keyword the check cannot read; a refusal it
 * notes goes nowhere). Against another schema, 'format' is taken as holding.
 */
static int
value_quiet(const struct js *js, const cJSON *s, const cJSON *v, bool own_enum)
{
	struct js sub = *js; /* deref reads it */
	bool ok = false;
	orch_err rv;

	sub.fmt_holds = !own_enum; /* apartness never rests on format (docs/DECISIONS.md) */
	sub.fails = (struct sbuf){0};
	sub.nfail = 0;
	sub.fatal = false;
	rv = own_enum ? value_ok(&sub, s, v, 0, &ok) : value_valid(&sub, s, v, 0, &ok);
	sbuf_fini(&sub.fails);
	return rv != ORCH_OK ? -1 : ok;
}

/*
 * enum_dead - @s has enum/const and none of its values validates against the
 * keywords beside it (a value the check cannot read counts as live, and is
 * refused where the enum is made): a merged branch that never matches.
 */
static bool
enum_dead(const struct js *js, const cJSON *s)
{
	const cJSON *c = const_kw(js, s), *e = kw(s, "enum"), *v;

	if (c == NULL && !cJSON_IsArray(e))
		return false;
	for (v = c ? c : e->child; v; v = c ? NULL : v->next)
		if (value_quiet(js, s, v, true) != 0)
			return false;
	return true;
}

/* enum_apart - @b is an enum/const and each of its values is known to fail @a. */
static bool
enum_apart(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *c = const_kw(js, b), *e = kw(b, "enum"), *v;

	if (c == NULL && !cJSON_IsArray(e))
		return false;
	for (v = c ? c : e->child; v; v = c ? NULL : v->next)
		if (value_quiet(js, a, v, false) != 0)
			return false;
	return true;
}
