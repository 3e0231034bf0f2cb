/*
 * json_schema_combine.c - enum/const, allOf, anyOf and oneOf for
 * json_schema.c, which #includes this file; it is not built on its own.
 *
 * enum/const emit the compact serialization of each value that validates
 * against the keywords beside it (json_schema_value.c). allOf is merged into one schema (types
 * intersected, properties joined, the tighter of each bound, enum/const
 * intersected, any other keyword only if the schemas agree); anyOf/oneOf
 * with sibling keywords merge each branch with the siblings. oneOf is taken
 * only when no value can match two branches: types, const/enum values, or
 * a required const/enum property tell them apart.
 */

#define JS_PARTS_MAX   64 /* schemas merged into one */
#define JS_MERGE_DEPTH 16 /* allOf inside allOf */
#define JS_ALT_MAX     64 /* oneOf branches told apart pairwise; anyOf pairs made by a merge */

#define LOW_NOT 1u /* the part's 'not' is merged as its complement, a part of its own */
#define LOW_IF  2u /* its if/then/else as the parts of a branch (resolve_ifs) */

/* One schema being merged, a keyword of it left out (besides allOf), LOW_* bits. */
struct part {
	const cJSON *s;
	const char *skip;
	unsigned low;
};

/* gen_enum - the values of enum/const that validate against their siblings. */
static orch_err
gen_enum(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	const cJSON *c = kw(s, "const"), *e = kw(s, "enum"), *v;
	struct sbuf b = {0};
	orch_err rv = ORCH_OK;
	bool ok = false;
	int n = 0;

	if (c == NULL && (!cJSON_IsArray(e) || cJSON_GetArraySize(e) == 0))
		return js_fail(js, "'enum' must be a non-empty array");
	for (v = c ? c : e->child; v; v = c ? NULL : v->next) {
		if ((rv = value_ok(js, s, v, 0, &ok)) != ORCH_OK)
			goto out;
		if (!ok)
			continue;
		if (n++ > 0)
			sbuf_puts(&b, " | ");
		if ((rv = put_json_lit(js, &b, v)) != ORCH_OK)
			goto out;
	}
	if (n == 0) {
		rv = js_fail(js, "no value of '%s' validates against the keywords beside it",
		             c ? "const" : "enum");
		goto out;
	}
	new_name(js, name);
	rv = put_rule(js, name, &b);
out:
	sbuf_fini(&b);
	return rv;
}

/* collect - @s (a $ref followed) and the schemas of its allOf, recursively, into @parts. */
static orch_err
collect(struct js *js, const cJSON *s, const char *skip, struct part *parts, size_t *n, int depth)
{
	const cJSON *all, *it, *ref, *c;
	size_t at;
	orch_err rv;

	if ((s = deref(js, s)) == NULL)
		return js_fail(js, "a '$ref' inside 'allOf' points at nothing");
	if (cJSON_IsTrue(s))
		return ORCH_OK;
	if (cJSON_IsFalse(s))
		return js_fail(js, "schema false inside 'allOf': no value can match");
	if (!cJSON_IsObject(s))
		return js_fail(js, "a schema must be an object or a boolean");
	if (depth > JS_MERGE_DEPTH || *n == JS_PARTS_MAX)
		return js_limit(js, "'allOf' over %d schemas or %d deep (limit: merge)",
		                JS_PARTS_MAX, JS_MERGE_DEPTH);
	if ((rv = check_keywords(js, s)) != ORCH_OK)
		return rv;
	for (size_t i = 0; i < *n; i++)
		if (parts[i].s == s && parts[i].skip == skip)
			return ORCH_OK; /* met again through a $ref: allOf of it twice is it */
	at = (*n)++;
	parts[at] = (struct part){s, skip, 0};
	if (kw(s, "not") && !ignorable(js, "not")) { /* as its complement, when there is one */
		if ((rv = complement(js, kw(s, "not"), &c)) != ORCH_OK)
			return rv;
		if (c != NULL) {
			parts[at].low |= LOW_NOT;
			if ((rv = collect(js, c, NULL, parts, n, depth + 1)) != ORCH_OK)
				return rv;
		}
	}
	if (kw(s, "$ref")) { /* 2019-09 on: the target and the siblings, both */
		if (!cJSON_IsString(kw(s, "$ref")) ||
		    (ref = resolve(js, kw(s, "$ref")->valuestring)) == NULL)
			return js_fail(js, "'$ref' points at nothing in the schema");
		if ((rv = collect(js, ref, NULL, parts, n, depth + 1)) != ORCH_OK)
			return rv;
	}
	if ((all = kw(s, "allOf")) != NULL && !cJSON_IsArray(all))
		return js_fail(js, "'allOf' must be an array of schemas");
	cJSON_ArrayForEach(it, all)
	{
		if ((rv = collect(js, it, NULL, parts, n, depth + 1)) != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/*
 * join_ref - @out's subschema @ex (by reference, or an allOf of ours) joined with
 * @it into an allOf, into @out as @k: references only, so that the schemas merged
 * later are the document's own (merge_memo knows them again).
 */
static orch_err
join_ref(cJSON *out, const char *k, cJSON *ex, const cJSON *it)
{
	cJSON *w, *a;

	if (!(ex->type & cJSON_IsReference) && (a = cJSON_GetObjectItemCaseSensitive(ex, "allOf")))
		return cJSON_AddItemReferenceToArray(a, (cJSON *)it) ? ORCH_OK : ORCH_ENOMEM;
	if ((w = cJSON_CreateObject()) == NULL ||
	    (a = cJSON_AddArrayToObject(w, "allOf")) == NULL ||
	    !cJSON_AddItemReferenceToArray(a, ex) ||
	    !cJSON_AddItemReferenceToArray(a, (cJSON *)it) ||
	    !cJSON_ReplaceItemInObjectCaseSensitive(out, k, w)) {
		cJSON_Delete(w);
		return ORCH_ENOMEM;
	}
	return ORCH_OK;
}

/* merge_props - the properties of @props into @out's, allOf-joined where both name one. */
static orch_err
merge_props(struct js *js, cJSON *out, const cJSON *props)
{
	cJSON *op = cJSON_GetObjectItemCaseSensitive(out, "properties"), *ex;
	const cJSON *it;
	orch_err rv;

	if (!cJSON_IsObject(props))
		return js_fail(js, "'properties' must be an object");
	if (op == NULL && (op = cJSON_AddObjectToObject(out, "properties")) == NULL)
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(it, props)
	{
		if (cJSON_IsFalse(ex = cJSON_GetObjectItemCaseSensitive(op, it->string)))
			continue; /* allOf of false and anything is false */
		if (ex != NULL && cJSON_IsFalse(it)) {
			if (!cJSON_ReplaceItemInObjectCaseSensitive(op, it->string,
			                                            cJSON_CreateFalse()))
				return ORCH_ENOMEM;
			continue;
		}
		if (ex == NULL) {
			if (!cJSON_AddItemReferenceToObject(op, it->string, (cJSON *)it))
				return ORCH_ENOMEM;
			continue;
		}
		if ((rv = join_ref(op, it->string, ex, it)) != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/* merge_values - @out's "enum" cut to the values @it (enum or const) allows. */
static orch_err
merge_values(struct js *js, cJSON *out, const cJSON *it)
{
	cJSON *e = cJSON_GetObjectItemCaseSensitive(out, "enum"), *v, *next;
	const cJSON *set = strcmp(it->string, "const") == 0 ? NULL : it, *x;
	bool found;

	if (set && !cJSON_IsArray(set))
		return js_fail(js, "'enum' must be an array");
	if (e == NULL) {
		e = set ? cJSON_Duplicate(set, true) : cJSON_CreateArray();
		if (e == NULL || !cJSON_AddItemToObject(out, "enum", e) ||
		    (!set && !cJSON_AddItemToArray(e, cJSON_Duplicate(it, true))))
			return ORCH_ENOMEM;
		return ORCH_OK;
	}
	for (v = e->child; v; v = next) {
		next = v->next;
		found = false;
		if (set == NULL)
			found = cJSON_Compare(v, it, true);
		cJSON_ArrayForEach(x, set) found = found || cJSON_Compare(v, x, true);
		if (!found)
			cJSON_Delete(cJSON_DetachItemViaPointer(e, v));
	}
	return ORCH_OK;
}

/* merge_bound - the tighter of @out's and @it's value of a min- or max- keyword. */
static orch_err
merge_bound(struct js *js, cJSON *out, const cJSON *it, bool is_min)
{
	cJSON *ex = cJSON_GetObjectItemCaseSensitive(out, it->string);

	if (!cJSON_IsNumber(it))
		return js_fail(js, "'%s' must be a number (inside 'allOf')", it->string);
	if (ex == NULL)
		return cJSON_AddItemToObject(out, it->string, cJSON_Duplicate(it, true))
		               ? ORCH_OK
		               : ORCH_ENOMEM;
	if (is_min ? it->valuedouble > ex->valuedouble : it->valuedouble < ex->valuedouble)
		cJSON_SetNumberValue(ex, it->valuedouble);
	return ORCH_OK;
}

/*
 * merge_alts - @out's anyOf (or oneOf) @ex and another part's @it as one: every
 * pair of a branch of each (allOf of the two). A value matches (exactly) one of
 * each list when it matches (exactly) one pair.
 */
static orch_err
merge_alts(struct js *js, cJSON *out, const char *k, const cJSON *ex, const cJSON *it)
{
	const cJSON *x, *y;
	cJSON *arr, *o, *a;

	if (!cJSON_IsArray(ex) || !cJSON_IsArray(it))
		return js_fail(js, "'%s' must be a non-empty array of schemas", k);
	if ((size_t)cJSON_GetArraySize(ex) * (size_t)cJSON_GetArraySize(it) > JS_ALT_MAX)
		return js_fail(js, "'%s' in schemas that must be merged makes over %d combinations",
		               k, JS_ALT_MAX);
	if ((arr = cJSON_CreateArray()) == NULL)
		return ORCH_ENOMEM;
	cJSON_ArrayForEach(x, ex) cJSON_ArrayForEach(y, it)
	{
		if ((o = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(arr, o) ||
		    (a = cJSON_AddArrayToObject(o, "allOf")) == NULL ||
		    !cJSON_AddItemToArray(a, cJSON_Duplicate(x, true)) ||
		    !cJSON_AddItemReferenceToArray(a, (cJSON *)y)) {
			cJSON_Delete(arr);
			return ORCH_ENOMEM;
		}
	}
	if (!cJSON_ReplaceItemInObjectCaseSensitive(out, k, arr)) {
		cJSON_Delete(arr);
		return ORCH_ENOMEM;
	}
	return ORCH_OK;
}

/* merge_one - the keywords of one part into @out; its types cut *@types. */
static orch_err
merge_one(struct js *js, cJSON *out, const struct part *pt, unsigned *types)
{
	static const char *const mins[] = {"minimum",  "exclusiveMinimum", "minLength",
	                                   "minItems", "minProperties",    NULL};
	static const char *const maxs[] = {"maximum",  "exclusiveMaximum", "maxLength",
	                                   "maxItems", "maxProperties",    NULL};
	static const char *const subs[] = {"items",         "additionalItems",  "contains",
	                                   "propertyNames", "unevaluatedItems", NULL};
	const cJSON *it, *ex, *r;
	orch_err rv = ORCH_OK;
	unsigned m;

	cJSON_ArrayForEach(it, pt->s)
	{
		const char *k = it->string;
		cJSON *req;

		if (ignorable(js, k) || strcmp(k, "allOf") == 0 || strcmp(k, "$ref") == 0 ||
		    strcmp(k, "additionalProperties") == 0 ||
		    (pt->skip && strcmp(k, pt->skip) == 0) ||
		    ((pt->low & LOW_NOT) && strcmp(k, "not") == 0) ||
		    ((pt->low & LOW_IF) &&
		     (strcmp(k, "if") == 0 || strcmp(k, "then") == 0 || strcmp(k, "else") == 0)))
			continue;
		if (strcmp(k, "type") == 0) {
			rv = type_kw(js, pt->s, &m);
			*types &= m;
		} else if (strcmp(k, "properties") == 0) {
			rv = merge_props(js, out, it);
		} else if (strcmp(k, "required") == 0) {
			if (!cJSON_IsArray(it))
				return js_fail(js, "'required' must be an array of strings");
			if ((req = cJSON_GetObjectItemCaseSensitive(out, "required")) == NULL &&
			    (req = cJSON_AddArrayToObject(out, "required")) == NULL)
				return ORCH_ENOMEM;
			cJSON_ArrayForEach(
			        r,
			        it) if (cJSON_IsString(r) && !is_required(req, r->valuestring) &&
			                !cJSON_AddItemToArray(
			                        req, cJSON_CreateString(
			                                     r->valuestring))) return ORCH_ENOMEM;
		} else if (in_list(mins, k) || in_list(maxs, k)) {
			rv = merge_bound(js, out, it, in_list(mins, k));
		} else if (strcmp(k, "enum") == 0 || strcmp(k, "const") == 0) {
			rv = merge_values(js, out, it);
		} else if (in_list(subs, k) && (ex = kw(out, k)) != NULL &&
		           !cJSON_Compare(ex, it, true) && !cJSON_IsArray(ex) &&
		           !cJSON_IsArray(it)) {
			rv = join_ref(out, k, (cJSON *)ex, it);
		} else if ((strcmp(k, "anyOf") == 0 || strcmp(k, "oneOf") == 0) &&
		           (ex = kw(out, k)) != NULL && !cJSON_Compare(ex, it, true)) {
			rv = merge_alts(js, out, k, ex, it);
		} else if ((ex = kw(out, k)) != NULL && !cJSON_Compare(ex, it, true)) {
			return js_fail(js,
			               "'%s' differs between schemas that must be merged ('allOf', "
			               "or a branch of 'anyOf'/'oneOf' and its siblings)",
			               k);
		} else if (ex == NULL && !cJSON_AddItemReferenceToObject(out, k, (cJSON *)it)) {
			return ORCH_ENOMEM;
		}
		if (rv != ORCH_OK)
			return rv;
	}
	return ORCH_OK;
}

/* merge_addl_parts - merge_addl's look at each part: schemas into @addl, counts. */
static orch_err
merge_addl_parts(struct js *js, cJSON *out, const struct part *parts, size_t n, cJSON *addl,
                 size_t *ret_open, bool *ret_closed)
{
	cJSON *props = cJSON_GetObjectItemCaseSensitive(out, "properties"), *it, *next;
	const cJSON *a;

	for (size_t i = 0; i < n; i++) {
		a = kw(parts[i].s, "additionalProperties");
		*ret_open += cJSON_IsTrue(a) || (a == NULL && kw(parts[i].s, "properties") == NULL);
		if (a == NULL || cJSON_IsTrue(a))
			continue;
		if (cJSON_IsObject(a) && props == NULL && !kw(out, "patternProperties")) {
			if (!cJSON_AddItemReferenceToArray(addl, (cJSON *)a))
				return ORCH_ENOMEM;
			continue; /* every key is extra to every part: all their schemas at once */
		}
		if (!cJSON_IsFalse(a))
			return js_fail(js,
			               "'additionalProperties' a schema in schemas that must be "
			               "merged is taken only when none declares properties");
		*ret_closed = true;
		for (it = props ? props->child : NULL; it; it = next) {
			next = it->next;
			if (cJSON_IsFalse(it) || kw(kw(parts[i].s, "properties"), it->string))
				continue;
			if (kw(parts[i].s, "patternProperties") ||
			    is_required(kw(out, "required"), it->string))
				return js_fail(js,
				               "'additionalProperties' false in one merged schema "
				               "refuses property '%s' of another",
				               it->string);
			/* absent in every value the merge validates: exactly false */
			if (!cJSON_ReplaceItemInObjectCaseSensitive(props, it->string,
			                                            cJSON_CreateFalse()))
				return ORCH_ENOMEM;
		}
	}
	return ORCH_OK;
}

/*
 * merge_addl - additionalProperties of the merge: false if a part says so
 * (and declares every merged property), the allOf of the parts' schemas when
 * no part declares properties, true if every part that declares properties
 * allows others, else absent (no others: stricter).
 */
static orch_err
merge_addl(struct js *js, cJSON *out, const struct part *parts, size_t n)
{
	cJSON *w = cJSON_CreateObject(), *addl = w ? cJSON_AddArrayToObject(w, "allOf") : NULL;
	size_t open = 0;
	bool closed = false;
	orch_err rv;

	if (addl == NULL || !cJSON_AddItemToArray(js->owned, w)) {
		cJSON_Delete(w);
		return ORCH_ENOMEM;
	}
	if ((rv = merge_addl_parts(js, out, parts, n, addl, &open, &closed)) != ORCH_OK)
		return rv;
	if (!closed && cJSON_GetArraySize(addl) > 0)
		return cJSON_AddItemReferenceToObject(out, "additionalProperties", w) ? ORCH_OK
		                                                                      : ORCH_ENOMEM;
	if ((closed || open == n) && !cJSON_AddBoolToObject(out, "additionalProperties", !closed))
		return ORCH_ENOMEM;
	return ORCH_OK;
}

/* Whether some value of @e has one of @types. */
static bool
enum_fits(const cJSON *e, unsigned types)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, e)
	{
		if (value_bits(v) & types)
			return true;
	}
	return false;
}

/* Whether @out requires a property its 'properties' makes false. */
static bool
req_false(const cJSON *out)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, kw(out, "required"))
	{
		if (cJSON_IsString(r) && cJSON_IsFalse(kw(kw(out, "properties"), r->valuestring)))
			return true;
	}
	return false;
}

/*
 * merge_parts - @parts as one schema (owned by js->owned); when @quiet, parts
 * that no value can match together (no type or enum value in common, a required
 * property made false, no enum value passing the rest) give *@ret NULL instead
 * of a refusal (an anyOf/oneOf branch that can never match, an if branch that
 * cannot be taken).
 */
static orch_err
merge_parts(struct js *js, const struct part *parts, size_t n, bool quiet, const cJSON **ret)
{
	static const char *const names[] = {"null", "boolean", "object", "array", "string"};
	cJSON *out = cJSON_CreateObject(), *t;
	const cJSON *e;
	unsigned types = T_ALL;
	orch_err rv = ORCH_OK;

	if (out == NULL || !cJSON_AddItemToArray(js->owned, out)) {
		cJSON_Delete(out);
		return ORCH_ENOMEM;
	}
	for (size_t i = 0; i < n && rv == ORCH_OK; i++)
		rv = merge_one(js, out, &parts[i], &types);
	if (rv == ORCH_OK)
		rv = merge_addl(js, out, parts, n);
	if (rv != ORCH_OK)
		return rv;
	*ret = NULL;
	if (quiet && (types == 0 || ((e = kw(out, "enum")) && !enum_fits(e, types)) ||
	              ((types & T_OBJ) == types && req_false(out)) || enum_dead(js, out)))
		return ORCH_OK;
	if (types == 0)
		return js_fail(js, "merged schemas share no type: no value can match");
	if (types != T_ALL) {
		if ((t = cJSON_AddArrayToObject(out, "type")) == NULL)
			return ORCH_ENOMEM;
		for (unsigned i = 0; i < 5; i++)
			if ((types & (1u << i)) &&
			    !cJSON_AddItemToArray(t, cJSON_CreateString(names[i])))
				return ORCH_ENOMEM;
		if ((types & T_INT) &&
		    !cJSON_AddItemToArray(
		            t, cJSON_CreateString(types & T_FRAC ? "number" : "integer")))
			return ORCH_ENOMEM;
	}
	if ((e = kw(out, "enum")) && cJSON_GetArraySize(e) == 0)
		return js_fail(js, "merged 'enum'/'const' share no value: no value can match");
	*ret = out;
	return ORCH_OK;
}

/* merge_q - merge_parts after each part's if/then/else is made parts (resolve_ifs). */
static orch_err
merge_q(struct js *js, const struct part *parts, size_t n, bool quiet, const cJSON **ret)
{
	struct part all[JS_PARTS_MAX];
	orch_err rv;

	memcpy(all, parts, n * sizeof(parts[0]));
	if ((rv = resolve_ifs(js, all, &n)) != ORCH_OK)
		return rv;
	return merge_parts(js, all, n, quiet, ret);
}

static orch_err
merge(struct js *js, const struct part *parts, size_t n, const cJSON **ret)
{
	return merge_q(js, parts, n, false, ret);
}

/* Whether part @pt gives the merge anything (a keyword besides allOf, $ref, annotations). */
static bool
contentful(const struct js *js, const struct part *pt)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, pt->s)
	{
		if (!ignorable(js, it->string) && strcmp(it->string, "allOf") != 0 &&
		    strcmp(it->string, "$ref") != 0 && (!pt->skip || strcmp(it->string, pt->skip)))
			return true;
	}
	return false;
}

static int
cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (const cJSON *const *)a,
	          y = (uintptr_t) * (const cJSON *const *)b;

	return (x > y) - (x < y);
}

/*
 * merge_memo - the merge of @parts as a rule made once per set of schemas with
 * content (in the resource being made), like a $ref target, so that an allOf met
 * again inside its own merge (a property of the merge that is the same allOf)
 * is a rule naming itself, not an unrolling until the depth limit. *@ret the
 * entry, *@made whether it was there already.
 */
static orch_err
merge_memo(struct js *js, const struct part *parts, size_t n, struct js_mrg **ret, bool *made)
{
	const cJSON *key[JS_PARTS_MAX];
	struct js_mrg *m;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (contentful(js, &parts[i]))
			key[k++] = parts[i].s->child; /* the same for a reference to it */
	qsort(key, k, sizeof(key[0]), cmp_ptr);
	for (size_t i = 0; i < js->nmrgs; i++) {
		m = &js->mrgs[i];
		if (m->n == k && m->res == js->res &&
		    memcmp(m->key, key, k * sizeof(key[0])) == 0) {
			*ret = m;
			*made = true;
			return ORCH_OK;
		}
	}
	if ((m = orch_reallocarray(js->mrgs, js->nmrgs + 1, sizeof(*m))) == NULL)
		return ORCH_ENOMEM;
	js->mrgs = m;
	m = &js->mrgs[js->nmrgs];
	if ((m->key = orch_calloc(k ? k : 1, sizeof(key[0]))) == NULL)
		return ORCH_ENOMEM;
	js->nmrgs++;
	memcpy(m->key, key, k * sizeof(key[0]));
	m->n = k;
	m->res = js->res;
	m->epoch = js->epoch;
	m->busy = true;
	snprintf(m->name, JS_NAME_MAX, "all-%zu", js->nmrgs - 1);
	*ret = m;
	*made = false;
	return ORCH_OK;
}

static orch_err
gen_allof(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	const cJSON *all = kw(s, "allOf"), *m;
	struct part parts[JS_PARTS_MAX];
	char inner[JS_NAME_MAX];
	struct sbuf b = {0};
	struct js_mrg *mr;
	size_t n = 0, at;
	bool made;
	orch_err rv;

	if (all && (!cJSON_IsArray(all) || cJSON_GetArraySize(all) == 0))
		return js_fail(js, "'allOf' must be a non-empty array of schemas");
	if ((rv = collect(js, s, NULL, parts, &n, 0)) != ORCH_OK ||
	    (rv = merge_memo(js, parts, n, &mr, &made)) != ORCH_OK)
		return rv;
	if (made && mr->busy && mr->epoch == js->epoch)
		return js_fail(js, "'allOf' recurses into itself before any input is consumed");
	memcpy(name, mr->name, JS_NAME_MAX);
	if (made)
		return ORCH_OK;
	at = (size_t)(mr - js->mrgs);
	if ((rv = merge(js, parts, n, &m)) == ORCH_OK)
		rv = gen(js, m, inner);
	js->mrgs[at].busy = false; /* gen may have moved js->mrgs */
	if (rv != ORCH_OK)
		return rv;
	sbuf_puts(&b, inner);
	rv = put_rule(js, name, &b);
	sbuf_fini(&b);
	return rv;
}
