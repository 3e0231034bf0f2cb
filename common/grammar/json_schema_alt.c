/*
 * json_schema_alt.c - anyOf and oneOf for json_schema.c, which #includes this
 * file (after json_schema_combine.c); it is not built on its own.
 *
 * Each branch is merged with the keywords beside anyOf/oneOf; a branch that no
 * value can match (its merge shares no type or value with them) is left out, as
 * it never matches. anyOf is the alternatives.
 *
 * oneOf must never give a value that two branches match. A branch is kept when,
 * against every other branch, what its grammar makes is known to fail the other:
 * - the two are apart (no value matches both): their types differ, their
 *   const/enum values differ, a required const/enum property differs, their
 *   string lengths do not overlap, their arrays' items are apart and one needs
 *   an item, or one requires a property the other forbids (additionalProperties
 *   false, or a false property schema);
 * - the other is a const/enum none of whose values this grammar can make (a
 *   value of another type or length; the format grammars have a least length),
 *   or one of the two is a const/enum whose every value fails the other
 *   (json_schema_value.c, with 'format' taken as holding);
 * - the other is about objects only and requires a property this one does not:
 *   this branch is made with that property forbidden (a false property schema),
 *   stricter than the schema; a branch whose enum values all need a key so
 *   forbidden is left out;
 * - on objects one requires a property the other forbids: this branch is made
 *   an object (stricter: a branch without 'type' matches every other type too).
 * A oneOf branch that is an allOf is merged first, so that it can be compared.
 * A branch that cannot be told apart from some other this way is left out
 * (stricter: its values are never made); the oneOf is refused only when no
 * branch is left.
 */

/* The types of "type" alone (T_ALL when absent or malformed). */
static unsigned
type_quiet(const cJSON *s)
{
	const cJSON *t = kw(s, "type"), *it;
	unsigned m = 0;

	if (cJSON_IsString(t))
		return type_bits(t->valuestring) ? type_bits(t->valuestring) : T_ALL;
	if (!cJSON_IsArray(t))
		return T_ALL;
	cJSON_ArrayForEach(it, t)
	{
		if (!cJSON_IsString(it) || type_bits(it->valuestring) == 0)
			return T_ALL;
		m |= type_bits(it->valuestring);
	}
	return m;
}

/* vmask - the types of all values @s validates (a superset). */
static unsigned
vmask(const struct js *js, const cJSON *s, int depth)
{
	static const char *const alts[] = {"anyOf", "oneOf"};
	const cJSON *e, *it;
	unsigned m, u;

	if (js_late(js)) /* a superset; the compile is refused at its end */
		return T_ALL;
	if ((s = deref(js, s)) == NULL || depth > 8 || !cJSON_IsObject(s))
		return cJSON_IsFalse(s) ? 0 : T_ALL;
	m = type_quiet(s);
	if ((e = const_kw(js, s)) != NULL)
		m &= value_bits(e);
	if (cJSON_IsArray(e = kw(s, "enum"))) {
		u = 0;
		cJSON_ArrayForEach(it, e) u |= value_bits(it);
		m &= u;
	}
	for (size_t i = 0; i < 2; i++) {
		if (!cJSON_IsArray(e = kw(s, alts[i])))
			continue;
		u = 0;
		cJSON_ArrayForEach(it, e) u |= vmask(js, it, depth + 1);
		m &= u;
	}
	if (cJSON_IsArray(e = kw(s, "allOf")))
		cJSON_ArrayForEach(it, e) m &= vmask(js, it, depth + 1);
	return m;
}

/* values_apart - @a and @b both have const/enum, and no value in common. */
static bool
values_apart(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *ca = const_kw(js, a), *ea = kw(a, "enum"), *cb = const_kw(js, b),
	            *eb = kw(b, "enum");

	if ((!ca && !cJSON_IsArray(ea)) || (!cb && !cJSON_IsArray(eb)))
		return false;
	for (const cJSON *x = ca ? ca : ea->child; x; x = ca ? NULL : x->next)
		for (const cJSON *y = cb ? cb : eb->child; y; y = cb ? NULL : y->next)
			if (cJSON_Compare(x, y, true))
				return false;
	return true;
}

/* tagged_apart - objects only, with a property required by both whose values differ. */
static bool
tagged_apart(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *it, *x, *y;

	if (vmask(js, a, 0) != T_OBJ || vmask(js, b, 0) != T_OBJ)
		return false;
	cJSON_ArrayForEach(it, kw(a, "properties"))
	{
		if (!is_required(kw(a, "required"), it->string) ||
		    !is_required(kw(b, "required"), it->string))
			continue;
		x = deref(js, it);
		y = deref(js, kw(kw(b, "properties"), it->string));
		if (cJSON_IsObject(x) && cJSON_IsObject(y) && values_apart(js, x, y))
			return true;
	}
	return false;
}

/* A keyword's non-negative integer value, or @dflt when absent or malformed. */
static uint64_t
count_quiet(const cJSON *s, const char *k, uint64_t dflt)
{
	const cJSON *it = kw(s, k);

	if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) || it->valuedouble >= 1e18)
		return dflt;
	return (uint64_t)it->valuedouble;
}

/* lengths_apart - strings are all either value shares, and their lengths cannot be equal. */
static bool
lengths_apart(const struct js *js, const cJSON *a, const cJSON *b)
{
	uint64_t alo = count_quiet(a, "minLength", 0), ahi = count_quiet(a, "maxLength", JS_INF);
	uint64_t blo = count_quiet(b, "minLength", 0), bhi = count_quiet(b, "maxLength", JS_INF);

	return (vmask(js, a, 0) & vmask(js, b, 0)) == T_STR && (ahi < blo || bhi < alo);
}

/* items_apart - arrays are all they share, no item fits both, and one needs an item. */
static bool
items_apart(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *ia = deref(js, kw(a, "items")), *ib = deref(js, kw(b, "items"));

	if ((vmask(js, a, 0) & vmask(js, b, 0)) != T_ARR || kw(a, "prefixItems") ||
	    kw(b, "prefixItems") || !cJSON_IsObject(ia) || !cJSON_IsObject(ib))
		return false;
	if (count_quiet(a, "minItems", 0) == 0 && count_quiet(b, "minItems", 0) == 0)
		return false;
	return (vmask(js, ia, 0) & vmask(js, ib, 0)) == 0 || values_apart(js, ia, ib);
}

/* forbids - an object that @s validates can never have key @k. */
static bool
forbids(struct js *js, const cJSON *s, const char *k)
{
	const cJSON *props = kw(s, "properties"), *pp = kw(s, "patternProperties"), *it;
	bool hit = false;

	if (js_late(js))
		return false; /* the safe answer; the compile is refused at its end */
	if (cJSON_IsFalse(kw(props, k)))
		return true;
	if (!cJSON_IsFalse(kw(s, "additionalProperties")) || kw(props, k) != NULL)
		return false;
	cJSON_ArrayForEach(it, pp)
	{
		struct js sub = {.draft = js->draft}; /* a pattern it cannot read: not known */
		if (pattern_matches(&sub, it->string, k, &hit) != ORCH_OK || hit) {
			sbuf_fini(&sub.fails);
			return false;
		}
		sbuf_fini(&sub.fails);
	}
	return true;
}

/* req_forbid_obj - every object value of @a has a key @b forbids. */
static bool
req_forbid_obj(struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, kw(a, "required"))
	{
		if (cJSON_IsString(it) && forbids(js, b, it->valuestring))
			return true;
	}
	return false;
}

/* req_forbid - every value of @a is an object with a key @b forbids. */
static bool
req_forbid(struct js *js, const cJSON *a, const cJSON *b)
{
	return vmask(js, a, 0) == T_OBJ && req_forbid_obj(js, a, b);
}

/* The least code points of a string @s's grammar makes (its format's, or minLength). */
static uint64_t
least_len(const cJSON *s)
{
	const cJSON *fmt = kw(s, "format");
	uint64_t lo = count_quiet(s, "minLength", 0);

	for (size_t i = 0; str_format(fmt) && i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i].name, fmt->valuestring) == 0 && formats[i].lo > lo)
			lo = formats[i].lo;
	return lo;
}

/* unmakeable - @b is a const/enum and @a's grammar makes none of its values. */
static bool
unmakeable(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *c = const_kw(js, b), *e = kw(b, "enum");
	unsigned m = vmask(js, a, 0);

	if (c == NULL && !cJSON_IsArray(e))
		return false;
	for (const cJSON *v = c ? c : e->child; v; v = c ? NULL : v->next) {
		if ((value_bits(v) & m) == 0)
			continue;
		if (!cJSON_IsString(v) || kw(a, "enum") || const_kw(js, a) || kw(a, "anyOf") ||
		    kw(a, "oneOf") || kw(a, "allOf") || kw(a, "$ref"))
			return false;
		if (cp_count(v->valuestring) >= least_len(a) &&
		    cp_count(v->valuestring) <= count_quiet(a, "maxLength", JS_INF))
			return false;
	}
	return true;
}

/* A key @b requires (object values only) that @a does not, or NULL. */
static const char *
excl_key(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *it;

	if (vmask(js, b, 0) != T_OBJ)
		return NULL;
	cJSON_ArrayForEach(it, kw(b, "required"))
	{
		if (cJSON_IsString(it) && !is_required(kw(a, "required"), it->valuestring))
			return it->valuestring;
	}
	return NULL;
}

/*
 * tag_key - a property both declare with const/enum values apart, when @a is about
 * objects only: @a made with it required is apart from @b; NULL when none.
 */
static const char *
tag_key(const struct js *js, const cJSON *a, const cJSON *b)
{
	const cJSON *it, *x, *y;

	if (vmask(js, a, 0) != T_OBJ)
		return NULL;
	cJSON_ArrayForEach(it, kw(a, "properties"))
	{
		x = deref(js, it);
		y = deref(js, kw(kw(b, "properties"), it->string));
		if (cJSON_IsObject(x) && cJSON_IsObject(y) && values_apart(js, x, y))
			return it->string;
	}
	return NULL;
}

/*
 * alts_of - @s's anyOf or oneOf (not both): every value of @s matches one of
 * its branches (the other keywords only take values away).
 */
static const cJSON *
alts_of(const cJSON *s)
{
	const cJSON *x = kw(s, "anyOf"), *y = kw(s, "oneOf");

	if ((x != NULL) == (y != NULL))
		return NULL;
	x = x ? x : y;
	return cJSON_IsArray(x) && x->child ? x : NULL;
}

/*
 * told_apart_d - what branch @a's grammar makes fails branch @b (both
 * dereferenced); a branch with an anyOf/oneOf is apart from the other when
 * each of its branches is (to @depth 4).
 */
static bool
told_apart_d(struct js *js, const cJSON *a, const cJSON *b, int depth)
{
	const cJSON *alts, *it, *x;

	if (js_late(js))
		return false; /* the safe answer; the compile is refused at its end */
	if (!cJSON_IsObject(a) || !cJSON_IsObject(b))
		return !cJSON_IsObject(b) && cJSON_IsFalse(b);
	if (depth < 4 && ((alts = alts_of(a)) != NULL || (alts = alts_of(b)) != NULL)) {
		bool in_a = alts == alts_of(a);
		cJSON_ArrayForEach(it, alts)
		{
			if ((x = deref(js, it)) == NULL ||
			    !(in_a ? told_apart_d(js, x, b, depth + 1)
			           : told_apart_d(js, a, x, depth + 1)))
				return false;
		}
		return true;
	}
	return (vmask(js, a, 0) & vmask(js, b, 0)) == 0 || values_apart(js, a, b) ||
	       tagged_apart(js, a, b) || lengths_apart(js, a, b) || items_apart(js, a, b) ||
	       req_forbid(js, a, b) || req_forbid(js, b, a) || unmakeable(js, a, b) ||
	       enum_apart(js, a, b) || enum_apart(js, b, a);
}

/* told_apart - told_apart_d from the top. */
static bool
told_apart(struct js *js, const cJSON *a, const cJSON *b)
{
	return told_apart_d(js, a, b, 0);
}

/*
 * forbid_keys - branch @br with the properties named in @keys (a JSON array)
 * forbidden and those in @tags required: merged with {"properties": {k: false...},
 * "required": [tags]} (owned), into *@ret; NULL when that leaves nothing.
 */
static orch_err
forbid_keys(struct js *js, const cJSON *br, const cJSON *keys, const cJSON *tags, bool obj,
            const cJSON **ret)
{
	struct part parts[JS_PARTS_MAX];
	cJSON *o = cJSON_CreateObject(), *props;
	const cJSON *it;
	size_t n = 0;
	orch_err rv;

	if (o == NULL || !cJSON_AddItemToArray(js->owned, o)) {
		cJSON_Delete(o);
		return ORCH_ENOMEM;
	}
	if ((props = cJSON_AddObjectToObject(o, "properties")) == NULL ||
	    !cJSON_AddTrueToObject(o, "additionalProperties") ||
	    !cJSON_AddItemReferenceToObject(o, "required", (cJSON *)tags) ||
	    (obj && !cJSON_AddStringToObject(o, "type", "object")))
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(it, keys)
	{
		if (!kw(props, it->valuestring) && !cJSON_AddFalseToObject(props, it->valuestring))
			return ORCH_ENOMEM;
	}
	if ((rv = collect(js, br, NULL, parts, &n, 0)) != ORCH_OK)
		return rv;
	if (n == JS_PARTS_MAX)
		return js_limit(js, "'allOf' over %d schemas or %d deep (limit: merge)",
		                JS_PARTS_MAX, JS_MERGE_DEPTH);
	parts[n++] = (struct part){o, NULL, 0};
	if ((rv = merge(js, parts, n, ret)) != ORCH_OK)
		return rv;
	cJSON_ArrayForEach(it, keys)
	{
		if (*ret && is_required(kw(*ret, "required"), it->valuestring))
			*ret = NULL; /* it needs a key it must not have: left out */
	}
	if (*ret && enum_dead(js, *ret))
		*ret = NULL; /* no enum value has none of the keys: left out */
	return ORCH_OK;
}

/*
 * one_of - the oneOf branches @br (@n, NULL: left out) each kept only when what it
 * makes matches no other branch (see the design notes); a kept branch may get
 * properties forbidden. Refused when no branch is left.
 */
static orch_err
one_of(struct js *js, const cJSON **br, size_t n)
{
	const cJSON *a, *b, *out[JS_ALT_MAX];
	const char *k;
	cJSON *keys = NULL, *tags = NULL;
	size_t kept = 0;
	orch_err rv = ORCH_OK;
	bool obj = false;

	if (n > JS_ALT_MAX)
		return js_fail(js, "'oneOf' of over %d branches is not supported", JS_ALT_MAX);
	for (size_t i = 0; i < n; i++) /* a branch not followed would count as apart: looser */
		if (br[i] != NULL && deref(js, br[i]) == NULL)
			return js_fail(js, "a 'oneOf' branch whose $ref cannot be followed (a bad "
			                   "$ref, a loop of $refs, or over 32 of them in a row)");
	for (size_t i = 0; i < n && rv == ORCH_OK; i++) {
		out[i] = NULL;
		if (br[i] == NULL || (a = deref(js, br[i])) == NULL)
			continue;
		cJSON_Delete(keys);
		cJSON_Delete(tags);
		obj = false;
		if ((keys = cJSON_CreateArray()) == NULL || (tags = cJSON_CreateArray()) == NULL)
			return cJSON_Delete(keys), ORCH_ENOMEM;
		for (size_t j = 0; j < n && a != NULL; j++) {
			if (j == i || br[j] == NULL || (b = deref(js, br[j])) == NULL ||
			    told_apart(js, a, b))
				continue;
			if ((k = excl_key(js, a, b)) != NULL) {
				if (!cJSON_AddItemToArray(keys, cJSON_CreateString(k)))
					rv = ORCH_ENOMEM;
			} else if ((k = tag_key(js, a, b)) != NULL) {
				if (!cJSON_AddItemToArray(tags, cJSON_CreateString(k)))
					rv = ORCH_ENOMEM;
			} else if (req_forbid_obj(js, a, b) || req_forbid_obj(js, b, a)) {
				obj = true; /* apart on objects: made an object */
			} else {
				a = NULL; /* left out: it may make a value branch j matches */
			}
		}
		if (a == NULL || rv != ORCH_OK)
			continue;
		if (cJSON_GetArraySize(keys) == 0 && cJSON_GetArraySize(tags) == 0 && !obj)
			out[i] = br[i];
		else
			rv = forbid_keys(js, br[i], keys, tags, obj, &out[i]);
		kept += out[i] != NULL;
	}
	cJSON_Delete(keys);
	cJSON_Delete(tags);
	for (size_t i = 0; i < n && rv == ORCH_OK; i++)
		br[i] = out[i];
	if (rv == ORCH_OK && kept == 0)
		return js_fail(js, "unsupported keyword 'oneOf': no branch can be told apart from "
		                   "the others (orch takes a oneOf branch when its values differ "
		                   "from the others' by type, const/enum values, lengths, or a "
		                   "required property the others forbid or lack)");
	return rv;
}

/*
 * anyof_branches - the branches into @br, each merged with the siblings of
 * anyOf/oneOf if any (a oneOf branch's allOf merged, so that it can be told
 * apart); one that no value can match is NULL.
 */
static orch_err
anyof_branches(struct js *js, const cJSON *s, const char *k, const cJSON **br)
{
	struct part parts[JS_PARTS_MAX];
	const cJSON *it;
	bool sib = false;
	size_t i = 0, n, old, live = 0;
	orch_err rv = ORCH_OK;

	cJSON_ArrayForEach(it, s) sib =
	        sib || (!ignorable(js, it->string) && strcmp(it->string, k) != 0);
	cJSON_ArrayForEach(it, kw(s, k))
	{
		old = path_push2(js, k, NULL, (int)i);
		n = 0;
		if (!sib && (k[0] == 'a' || !kw(deref(js, it), "allOf")))
			br[i] = cJSON_IsFalse(it) ? NULL : it;
		else if ((rv = collect(js, s, k, parts, &n, 0)) == ORCH_OK &&
		         (rv = collect(js, it, NULL, parts, &n, 0)) == ORCH_OK)
			rv = merge_q(js, parts, n, true, &br[i]);
		path_pop(js, old);
		if (rv != ORCH_OK)
			return rv;
		live += br[i] != NULL;
		i++;
	}
	if (live == 0)
		return js_fail(js, "no branch of '%s' can match beside the keywords next to it", k);
	return ORCH_OK;
}

static orch_err
gen_anyof(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	const char *k = kw(s, "anyOf") ? "anyOf" : "oneOf";
	const cJSON **br = NULL;
	char nm[JS_NAME_MAX];
	struct sbuf b = {0};
	size_t n, old;
	orch_err rv;

	if (kw(s, "anyOf") && kw(s, "oneOf"))
		return js_fail(js, "'anyOf' beside 'oneOf' is not supported");
	if (!cJSON_IsArray(kw(s, k)) || (n = (size_t)cJSON_GetArraySize(kw(s, k))) == 0)
		return js_fail(js, "'%s' must be a non-empty array of schemas", k);
	if ((br = orch_calloc(n, sizeof(*br))) == NULL)
		return ORCH_ENOMEM;
	rv = anyof_branches(js, s, k, br);
	if (rv == ORCH_OK && k[0] == 'o')
		rv = one_of(js, br, n);
	for (size_t i = 0; i < n && rv == ORCH_OK; i++) {
		if (br[i] == NULL)
			continue;
		old = path_push2(js, k, NULL, (int)i);
		if ((rv = gen(js, br[i], nm)) == ORCH_OK)
			sbuf_printf(&b, "%s%s", b.n ? " | " : "", nm);
		path_pop(js, old);
	}
	if (rv == ORCH_OK) {
		new_name(js, name);
		rv = put_rule(js, name, &b);
	}
	sbuf_fini(&b);
	orch_free(br);
	return rv;
}
