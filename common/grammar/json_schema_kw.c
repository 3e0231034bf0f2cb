/*
 * json_schema_kw.c - which keywords a schema's draft gives meaning to, for
 * json_schema.c, which #includes this file; it is not built on its own.
 *
 * A validator ignores what it does not know: annotations (title, examples,
 * readOnly, x-* extensions, $comment, misspellings...) never change what
 * validates, so they are never a reason to refuse. The keywords that do
 * constrain values are listed per draft ($schema; 2020-12 when absent): each
 * is either taken (the grammar enforces it, or something stricter) or the
 * schema is refused naming it. lower() turns the ones taken by rewriting
 * (dependencies, not of types, if/then) into keywords the rest already takes.
 */

/* A keyword that constrains values, and the drafts it does so in (lo..hi). */
static const struct {
	const char *k;
	int lo, hi;
	bool taken;
} vocab[] = {
        {"type", D4, D2020, true},
        {"enum", D4, D2020, true},
        {"const", D6, D2020, true},
        {"multipleOf", D4, D2020, true},
        {"maximum", D4, D2020, true},
        {"exclusiveMaximum", D4, D2020, true},
        {"minimum", D4, D2020, true},
        {"exclusiveMinimum", D4, D2020, true},
        {"maxLength", D4, D2020, true},
        {"minLength", D4, D2020, true},
        {"pattern", D4, D2020, true},
        {"format", D4, D2020, true},
        {"maxItems", D4, D2020, true},
        {"minItems", D4, D2020, true},
        {"uniqueItems", D4, D2020, true},
        {"items", D4, D2020, true},
        {"prefixItems", D2020, D2020, true},
        {"additionalItems", D4, D2019, true},
        {"unevaluatedItems", D2019, D2020, true},
        {"contains", D6, D2020, true},
        {"minContains", D2019, D2020, true},
        {"maxContains", D2019, D2020, false},
        {"maxProperties", D4, D2020, true},
        {"minProperties", D4, D2020, true},
        {"required", D4, D2020, true},
        {"properties", D4, D2020, true},
        {"patternProperties", D4, D2020, true},
        {"additionalProperties", D4, D2020, true},
        {"unevaluatedProperties", D2019, D2020, true},
        {"propertyNames", D6, D2020, true},
        {"dependencies", D4, D7, true},
        {"dependentRequired", D2019, D2020, true},
        {"dependentSchemas", D2019, D2020, true},
        {"allOf", D4, D2020, true},
        {"anyOf", D4, D2020, true},
        {"oneOf", D4, D2020, true},
        {"not", D4, D2020, true},
        {"if", D7, D2020, true},
        {"$ref", D4, D2020, true},
        {"$recursiveRef", D2019, D2019, false},
        {"$dynamicRef", D2020, D2020, false},
};

/* The types keyword @k is about (T_ALL: any, or not a type-specific keyword). */
static unsigned
kw_family(const char *k)
{
	static const char *const obj[] = {
	        "properties",        "required",          "additionalProperties",  "minProperties",
	        "maxProperties",     "patternProperties", "propertyNames",         "dependencies",
	        "dependentRequired", "dependentSchemas",  "unevaluatedProperties", NULL};
	static const char *const arr[] = {
	        "items",       "prefixItems", "additionalItems", "minItems",    "maxItems",
	        "uniqueItems", "contains",    "minContains",     "maxContains", "unevaluatedItems",
	        NULL};
	static const char *const str[] = {"minLength", "maxLength", "pattern", "format", NULL};
	static const char *const num[] = {"minimum",          "maximum",    "exclusiveMinimum",
	                                  "exclusiveMaximum", "multipleOf", NULL};

	return in_list(obj, k)   ? T_OBJ
	       : in_list(arr, k) ? T_ARR
	       : in_list(str, k) ? T_STR
	       : in_list(num, k) ? T_INT | T_FRAC
	                         : T_ALL;
}

/* The types a schema's type-specific keywords are about (0: none present). */
static unsigned
families(const cJSON *s)
{
	static const struct {
		const char *k;
		unsigned bits;
	} fam[] = {
	        {"properties", T_OBJ},
	        {"required", T_OBJ},
	        {"additionalProperties", T_OBJ},
	        {"minProperties", T_OBJ},
	        {"maxProperties", T_OBJ},
	        {"items", T_ARR},
	        {"prefixItems", T_ARR},
	        {"minItems", T_ARR},
	        {"maxItems", T_ARR},
	        {"uniqueItems", T_ARR},
	        {"contains", T_ARR},
	        {"minContains", T_ARR},
	        {"minLength", T_STR},
	        {"maxLength", T_STR},
	        {"pattern", T_STR},
	        {"format", T_STR},
	        {"minimum", T_INT | T_FRAC},
	        {"maximum", T_INT | T_FRAC},
	        {"exclusiveMinimum", T_INT | T_FRAC},
	        {"exclusiveMaximum", T_INT | T_FRAC},
	        {"multipleOf", T_INT | T_FRAC},
	};
	unsigned m = 0;

	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		if (kw(s, fam[i].k))
			m |= fam[i].bits;
	if (kw(s, "format") && !str_format(kw(s, "format")))
		m &= ~(unsigned)T_STR, m |= int_format(kw(s, "format")) >= 0 ? T_INT | T_FRAC : 0;
	return m;
}

/* draft_of - the draft @root's $schema names (2020-12 when absent or unknown). */
static int
draft_of(const cJSON *root)
{
	static const struct {
		const char *tag;
		int draft;
	} tags[] = {
	        {"draft-04", D4},         {"draft-06", D6},         {"draft-07", D7},
	        {"draft/2019-09", D2019}, {"draft/2020-12", D2020},
	};
	const cJSON *s = cJSON_IsObject(root) ? kw(root, "$schema") : NULL;

	for (size_t i = 0; cJSON_IsString(s) && i < sizeof(tags) / sizeof(tags[0]); i++)
		if (strstr(s->valuestring, tags[i].tag) != NULL)
			return tags[i].draft;
	return D2020;
}

/* vocab_at - @k's place in vocab if it constrains values in this draft, else -1. */
static int
vocab_at(const struct js *js, const char *k)
{
	for (size_t i = 0; i < sizeof(vocab) / sizeof(vocab[0]); i++)
		if (strcmp(vocab[i].k, k) == 0)
			return js->draft >= vocab[i].lo && js->draft <= vocab[i].hi ? (int)i : -1;
	return -1;
}

/* ignorable - @k changes nothing a validator of this draft accepts. */
static bool
ignorable(const struct js *js, const char *k)
{
	return vocab_at(js, k) < 0;
}

/* const_kw - @s's 'const', or NULL where this draft has none (draft-04: ignored). */
static const cJSON *
const_kw(const struct js *js, const cJSON *s)
{
	return ignorable(js, "const") ? NULL : kw(s, "const");
}

/* check_keywords - note every keyword of @s that constrains values and is not taken. */
static orch_err
check_keywords(struct js *js, const cJSON *s)
{
	const cJSON *it;
	orch_err rv = ORCH_OK;
	int i;

	cJSON_ArrayForEach(it, s)
	{
		if ((i = vocab_at(js, it->string)) >= 0 && !vocab[i].taken)
			rv = js_fail(js, "unsupported keyword '%s'", it->string);
	}
	return rv;
}

/* is_resource - @s (below the root) starts a schema resource: an $id (draft 4: id) URI. */
static bool
is_resource(const struct js *js, const cJSON *s)
{
	const cJSON *id = kw(s, js->draft == D4 ? "id" : "$id");

	return s != js->root && cJSON_IsString(id) && id->valuestring[0] != '#' &&
	       id->valuestring[0] != '\0';
}

/* add_ref - @item added to @obj as @k without copying it (@obj never frees it). */
static orch_err
add_ref(cJSON *obj, const char *k, const cJSON *item)
{
	return cJSON_AddItemReferenceToObject(obj, k, (cJSON *)item) ? ORCH_OK : ORCH_ENOMEM;
}

/*
 * lower_not - 'not' as its complement (json_schema_not.c) into @parts: of types
 * (beside annotations) exactly the other types; else complement()'s schema.
 */
static orch_err
lower_not(struct js *js, const cJSON *n, cJSON *parts)
{
	static const char *const names[] = {"null", "boolean", "object", "array", "string"};
	const cJSON *it, *c;
	cJSON *t, *o;
	unsigned m;
	orch_err rv = ORCH_OK;

	cJSON_ArrayForEach(it, n)
	{
		if (strcmp(it->string, "type") != 0 && !ignorable(js, it->string)) {
			if ((rv = complement(js, n, &c)) != ORCH_OK)
				return rv;
			if (c == NULL)
				return js_fail(js,
				               "unsupported keyword 'not' (taken when orch has its "
				               "complement: of types, required names, "
				               "enum/const values, not, anyOf of these)");
			return cJSON_AddItemReferenceToArray(parts, (cJSON *)c) ? ORCH_OK
			                                                        : ORCH_ENOMEM;
		}
	}
	if (!cJSON_IsObject(n) || (rv = type_kw(js, n, &m)) != ORCH_OK)
		return cJSON_IsObject(n) ? rv
		                         : js_fail(js, "unsupported keyword 'not' (taken when it "
		                                       "names only types)");
	m = T_ALL & ~m;
	if ((m & T_FRAC) && !(m & T_INT))
		m &= ~(unsigned)T_FRAC; /* not integer: no grammar makes only non-integers */
	if (m == 0)
		return js_fail(js, "'not' refuses every type: no value can match");
	if ((o = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(parts, o) ||
	    (t = cJSON_AddArrayToObject(o, "type")) == NULL)
		return ORCH_ENOMEM;
	for (unsigned i = 0; i < 5; i++)
		if ((m & (1u << i)) && !cJSON_AddItemToArray(t, cJSON_CreateString(names[i])))
			return ORCH_ENOMEM;
	if ((m & T_INT) &&
	    !cJSON_AddItemToArray(t, cJSON_CreateString(m & T_FRAC ? "number" : "integer")))
		return ORCH_ENOMEM;
	return ORCH_OK;
}

static bool is_required(const cJSON *req, const char *k);

/* The most dependencies on optional names made exact (each doubles the merge's branches). */
#define JS_DEPS_EXACT_MAX 4

/* The dependencies of @s whose trigger name @s does not require. */
static size_t
optional_deps(struct js *js, const cJSON *s)
{
	static const char *const keys[] = {"dependencies", "dependentRequired", "dependentSchemas"};
	const cJSON *it;
	size_t n = 0;

	for (size_t i = 0; i < 3; i++)
		if (!ignorable(js, keys[i]) && cJSON_IsObject(kw(s, keys[i])))
			cJSON_ArrayForEach(it, kw(s, keys[i])) n +=
			        !is_required(kw(s, "required"), it->string) && !cJSON_IsTrue(it);
	return n;
}

/*
 * dep_exact - a dependency of the optional name @it->string as the part
 * {"anyOf": [{the name absent}, {the name present, and @it: its list required,
 * or its schema}]}: exactly what the keyword says.
 */
static orch_err
dep_exact(cJSON *parts, const cJSON *it)
{
	cJSON *o = cJSON_CreateObject(), *any, *absent, *present, *req;

	if (o == NULL || !cJSON_AddItemToArray(parts, o))
		return cJSON_Delete(o), ORCH_ENOMEM;
	if ((any = cJSON_AddArrayToObject(o, "anyOf")) == NULL ||
	    (absent = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(any, absent) ||
	    (absent = cJSON_AddObjectToObject(absent, "properties")) == NULL ||
	    !cJSON_AddFalseToObject(absent, it->string))
		return ORCH_ENOMEM;
	if (cJSON_IsFalse(it))
		return ORCH_OK; /* present, it never holds: only absent */
	if ((present = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(any, present) ||
	    (req = cJSON_AddArrayToObject(present, "required")) == NULL ||
	    !cJSON_AddItemToArray(req, cJSON_CreateString(it->string)))
		return ORCH_ENOMEM;
	if (cJSON_IsArray(it)) {
		const cJSON *r;
		cJSON_ArrayForEach(r, it) if (!cJSON_AddItemReferenceToArray(
		                                      req, (cJSON *)r)) return ORCH_ENOMEM;
		return ORCH_OK;
	}
	cJSON *all = cJSON_AddArrayToObject(present, "allOf");
	if (all == NULL || !cJSON_AddItemReferenceToArray(all, (cJSON *)it))
		return ORCH_ENOMEM;
	return ORCH_OK;
}

/* dep_schema - a schema dependency the stricter way: merged when its name is @needed,
 * else the name made absent (the schema never applies). */
static orch_err
dep_schema(cJSON *parts, const cJSON *it, bool needed)
{
	cJSON *o;

	if (!needed) {
		if ((o = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(parts, o))
			return cJSON_Delete(o), ORCH_ENOMEM;
		if ((o = cJSON_AddObjectToObject(o, "properties")) == NULL ||
		    !cJSON_AddFalseToObject(o, it->string))
			return ORCH_ENOMEM;
		return ORCH_OK;
	}
	if ((o = cJSON_CreateObjectReference(it->child)) == NULL)
		return ORCH_ENOMEM;
	if (cJSON_IsBool(it))
		cJSON_Delete(o), o = cJSON_Duplicate(it, false);
	if (o == NULL || !cJSON_AddItemToArray(parts, o))
		return ORCH_ENOMEM;
	return ORCH_OK;
}

/* Whether @s's 'type' (if any) lets it be an object: dependencies apply to objects only. */
static bool
may_be_object(const cJSON *s)
{
	const cJSON *t = kw(s, "type"), *x;

	if (cJSON_IsString(t))
		return strcmp(t->valuestring, "object") == 0;
	if (!cJSON_IsArray(t))
		return true;
	cJSON_ArrayForEach(x, t) if (cJSON_IsString(x) &&
	                             strcmp(x->valuestring, "object") == 0) return true;
	return false;
}

/*
 * lower_deps - dependentRequired, dependentSchemas, draft-4..7 dependencies. A
 * dependency of a required name: its list joins 'required', its schema is merged.
 * Of an optional name: exactly, as "absent, or present with the dependency"
 * (dep_exact), when the schema has at most JS_DEPS_EXACT_MAX of those and no
 * anyOf/oneOf of its own (the merge would multiply them), and the dependency's
 * schema has none either; else stricter: a list
 * holds always (its names required), a schema makes its name absent (it never
 * applies; merging it always would make dependencies that contradict each other
 * impossible).
 */
static orch_err
lower_deps(struct js *js, const cJSON *s, cJSON *out, cJSON *parts)
{
	static const char *const keys[] = {"dependencies", "dependentRequired", "dependentSchemas"};
	bool exact =
	        optional_deps(js, s) <= JS_DEPS_EXACT_MAX && !kw(s, "anyOf") && !kw(s, "oneOf");
	const cJSON *d, *it, *r;
	cJSON *req = NULL;
	orch_err rv;

	for (size_t i = 0; i < 3; i++) {
		if ((d = kw(s, keys[i])) == NULL || ignorable(js, keys[i]))
			continue;
		if (!cJSON_IsObject(d))
			return js_fail(js, "'%s' must be an object", keys[i]);
		cJSON_ArrayForEach(it, d)
		{
			bool needed = is_required(kw(s, "required"), it->string);
			bool list = cJSON_IsArray(it) && i != 2;
			bool schema = (cJSON_IsObject(it) || cJSON_IsBool(it)) && i != 1;
			if (!list && !schema)
				return js_fail(
				        js,
				        "'%s' holds something that is no schema or list of names",
				        keys[i]);
			if (cJSON_IsTrue(it) || !may_be_object(s))
				continue; /* holds always; or no object to apply to */
			/* a schema of its own alternatives: taken the stricter way (their branches
			 * beside the name's absence may not be told apart) */
			bool alts = cJSON_IsObject(it) && (kw(it, "oneOf") || kw(it, "anyOf"));
			if (!needed && exact && !alts) {
				if ((rv = dep_exact(parts, it)) != ORCH_OK)
					return rv;
			} else if (list) {
				if (req == NULL &&
				    (req = cJSON_AddArrayToObject(out, "required")) == NULL)
					return ORCH_ENOMEM;
				cJSON_ArrayForEach(r, it) if (
				        !cJSON_AddItemReferenceToArray(
				                req, (cJSON *)r)) return ORCH_ENOMEM;
			} else if ((rv = dep_schema(parts, it, needed)) != ORCH_OK) {
				return rv;
			}
		}
	}
	if (req != NULL)
		cJSON_ArrayForEach(r, kw(s, "required")) if (!cJSON_AddItemReferenceToArray(
		                                                     req,
		                                                     (cJSON *)
		                                                             r)) return ORCH_ENOMEM;
	return ORCH_OK;
}

/*
 * lower - @s rewritten (into js->owned, *@ret) when it has keywords taken by
 * rewriting: dependencies (lower_deps), 'not' of types, if/then (the if branch:
 * every value matches 'if' and 'then', stricter than if/then/else); *@ret NULL
 * when there is nothing to rewrite.
 */
static orch_err
lower(struct js *js, const cJSON *s, const cJSON **ret)
{
	static const char *const low[] = {"dependencies",
	                                  "dependentRequired",
	                                  "dependentSchemas",
	                                  "not",
	                                  "if",
	                                  "then",
	                                  "else",
	                                  "required",
	                                  "allOf",
	                                  NULL};
	const cJSON *it;
	cJSON *out, *parts;
	bool any = false;
	orch_err rv = ORCH_OK;

	*ret = NULL;
	for (size_t i = 0; i < 5; i++)
		any = any || (kw(s, low[i]) && !ignorable(js, low[i]));
	if (!any)
		return ORCH_OK;
	if ((out = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(js->owned, out)) {
		cJSON_Delete(out);
		return ORCH_ENOMEM;
	}
	cJSON_ArrayForEach(it, s)
	{
		if (!in_list(low, it->string) && (rv = add_ref(out, it->string, it)) != ORCH_OK)
			return rv;
	}
	if ((parts = cJSON_AddArrayToObject(out, "allOf")) == NULL)
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(it, kw(s, "allOf")) if (!cJSON_AddItemReferenceToArray(
	                                                   parts, (cJSON *)it)) return ORCH_ENOMEM;
	if ((rv = lower_deps(js, s, out, parts)) != ORCH_OK)
		return rv;
	if (!kw(out, "required") && kw(s, "required") &&
	    (rv = add_ref(out, "required", kw(s, "required"))) != ORCH_OK)
		return rv;
	if (kw(s, "not") && !ignorable(js, "not") &&
	    (rv = lower_not(js, kw(s, "not"), parts)) != ORCH_OK)
		return rv;
	if (kw(s, "if") && !ignorable(js, "if")) {
		if (!cJSON_AddItemReferenceToArray(parts, (cJSON *)kw(s, "if")) ||
		    (kw(s, "then") &&
		     !cJSON_AddItemReferenceToArray(parts, (cJSON *)kw(s, "then"))))
			return ORCH_ENOMEM;
	}
	if (cJSON_GetArraySize(parts) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(out, "allOf");
	*ret = out;
	return ORCH_OK;
}
