/*
 * json_schema_ref.c - $ref for json_schema.c, which #includes this file; it is
 * not built on its own.
 *
 * A reference resolves within the schema: "#" and JSON pointers ("#/$defs/a",
 * "~0", "~1" and %XX decoded) against the schema resource being made (the root,
 * or the nearest schema above with an $id URI: draft 4's id), anchors ("#name":
 * $anchor, or an $id/id of "#name"), and URIs that name a schema resource of the
 * document by its $id ("other.json#/x", "https://example.com/s.json"). Remote
 * references are refused. Each target becomes one rule, made once
 * (def-N-name), so recursion is a rule that names itself.
 */

#define JS_FIND_DEPTH 128 /* how deep find_id looks for an $id or $anchor */

/* pointer - the schema JSON pointer @ptr (after '#') names below @at, or NULL. */
static const cJSON *
pointer(const cJSON *at, const char *ptr)
{
	char tok[256];
	size_t n;
	unsigned hi, lo;

	while (*ptr == '/' && at) {
		for (ptr++, n = 0; *ptr && *ptr != '/' && n + 1 < sizeof(tok); ptr++) {
			if (*ptr == '~' && (ptr[1] == '0' || ptr[1] == '1'))
				tok[n++] = *++ptr == '0' ? '~' : '/';
			else if (*ptr == '%' && sscanf(ptr + 1, "%1x%1x", &hi, &lo) == 2)
				tok[n++] = (char)(hi * 16 + lo), ptr += 2;
			else
				tok[n++] = *ptr;
		}
		tok[n] = '\0';
		if (cJSON_IsObject(at))
			at = kw(at, tok);
		else if (cJSON_IsArray(at) && n > 0 && n < 9 && strspn(tok, "0123456789") == n)
			at = cJSON_GetArrayItem(at, atoi(tok));
		else
			at = NULL;
	}
	return *ptr == '\0' ? at : NULL;
}

/* Whether $id @id names the @n bytes of @uri (equal, or one a path suffix of the other). */
static bool
id_names(const char *id, const char *uri, size_t n)
{
	size_t k = strcspn(id, "#");

	if (k == 0 || n == 0)
		return false;
	if (k == n)
		return strncmp(id, uri, n) == 0;
	if (k > n)
		return id[k - n - 1] == '/' && strncmp(id + k - n, uri, n) == 0;
	return uri[n - k - 1] == '/' && strncmp(uri + n - k, id, k) == 0;
}

/*
 * find_id - the schema below @at whose $id (draft 4: id) names @uri (@n bytes), or,
 * when @anchor, whose $anchor (or "#"-id) is @uri; NULL when none. enum/const
 * values are data, not schemas, and are not looked into.
 */
static const cJSON *
find_id(const struct js *js, const cJSON *at, const char *uri, size_t n, bool anchor, int depth)
{
	const cJSON *id, *it, *hit;

	if (depth > JS_FIND_DEPTH || (!cJSON_IsObject(at) && !cJSON_IsArray(at)))
		return NULL;
	if (cJSON_IsObject(at)) {
		id = kw(at, js->draft == D4 ? "id" : "$id");
		if (!anchor && cJSON_IsString(id) && id_names(id->valuestring, uri, n))
			return at;
		if (anchor && cJSON_IsString(id) && id->valuestring[0] == '#' &&
		    strlen(id->valuestring + 1) == n && strncmp(id->valuestring + 1, uri, n) == 0)
			return at;
		id = kw(at, "$anchor");
		if (anchor && cJSON_IsString(id) && strlen(id->valuestring) == n &&
		    strncmp(id->valuestring, uri, n) == 0)
			return at;
	}
	cJSON_ArrayForEach(it, at)
	{
		if (it->string &&
		    (strcmp(it->string, "enum") == 0 || strcmp(it->string, "const") == 0))
			continue;
		if ((hit = find_id(js, it, uri, n, anchor, depth + 1)) != NULL)
			return hit;
	}
	return NULL;
}

/* resolve_in - the schema @ref points at, and the resource it is in (*@res), or NULL. */
static const cJSON *
resolve_in(const struct js *js, const char *ref, const cJSON **res)
{
	size_t n = strcspn(ref, "#");
	const char *frag = ref[n] == '#' ? ref + n + 1 : "";
	const cJSON *base = js->res;

	if (n > 0) {
		base = find_id(js, js->root, ref, n, false, 0);
		if (base == NULL) {
			const cJSON *rid = kw(js->root, js->draft == D4 ? "id" : "$id");
			if (!cJSON_IsString(rid) || !id_names(rid->valuestring, ref, n))
				return NULL;
			base = js->root;
		}
	}
	*res = base;
	if (*frag == '\0' || *frag == '/')
		return pointer(base, frag);
	return find_id(js, base, frag, strlen(frag), true, 0);
}

/* resolve - the schema @ref points at from the resource being made, or NULL. */
static const cJSON *
resolve(const struct js *js, const char *ref)
{
	const cJSON *res;

	return resolve_in(js, ref, &res);
}

/* ref_alone - @s is a $ref beside keywords that constrain nothing. */
static bool
ref_alone(const struct js *js, const cJSON *s)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, s)
	{
		if (strcmp(it->string, "$ref") != 0 && !ignorable(js, it->string))
			return false;
	}
	return true;
}

/*
 * deref - @s with any chain of $ref schemas that are only a $ref (or, up to draft 7,
 * whose siblings are ignored) followed; NULL: a bad $ref or a loop.
 */
static const cJSON *
deref(const struct js *js, const cJSON *s)
{
	for (int i = 0; i < 32; i++) {
		if (!cJSON_IsObject(s) || !cJSON_IsString(kw(s, "$ref")) ||
		    (js->draft > D7 && !ref_alone(js, s)))
			return s;
		s = resolve(js, kw(s, "$ref")->valuestring);
	}
	return NULL;
}

/* A readable rule name for a $ref target: def-N-<last pointer token>. */
static void
def_name(struct js *js, const char *ref, char name[JS_NAME_MAX])
{
	const char *last = strrchr(ref, '/');
	size_t n = (size_t)snprintf(name, JS_NAME_MAX, "def-%zu", js->ndefs);

	if (last == NULL || n + 2 >= JS_NAME_MAX)
		return;
	name[n++] = '-';
	for (last++; *last && n + 1 < 32; last++)
		name[n++] = (*last >= 'a' && *last <= 'z') || (*last >= '0' && *last <= '9') ? *last
		            : (*last >= 'A' && *last <= 'Z') ? (char)(*last - 'A' + 'a')
		                                             : '-';
	name[n] = '\0';
}

/* gen_def - the rule of a $ref target, made on first use. */
static orch_err
gen_def(struct js *js, const char *ref, const cJSON *target, const cJSON *res,
        char name[JS_NAME_MAX])
{
	const cJSON *saved_res = js->res;
	char inner[JS_NAME_MAX], saved[JS_PATH_MAX];
	struct sbuf b = {0};
	struct js_def *d;
	size_t i, saved_n = js->path_n;
	orch_err rv = ORCH_OK;

	for (i = 0; i < js->ndefs && js->defs[i].target != target; i++)
		;
	if (i < js->ndefs) {
		if (js->defs[i].busy && js->defs[i].epoch == js->epoch)
			return js_fail(js, "'$ref' '%s' recurses before any input is consumed",
			               ref);
		memcpy(name, js->defs[i].name, JS_NAME_MAX);
		return ORCH_OK;
	}
	d = orch_reallocarray(js->defs, js->ndefs + 1, sizeof(*d));
	if (d == NULL)
		return ORCH_ENOMEM;
	js->defs = d;
	d = &js->defs[js->ndefs++];
	def_name(js, ref, d->name);
	d->target = target;
	d->epoch = js->epoch;
	d->busy = true;
	memcpy(name, d->name, JS_NAME_MAX);
	memcpy(saved, js->path, sizeof(saved));
	snprintf(js->path, JS_PATH_MAX, "%s", ref[0] == '#' ? ref + 1 : ref); /* errors name it */
	js->path_n = strlen(js->path);
	js->res = res;
	rv = gen(js, target, inner);
	js->res = saved_res;
	memcpy(js->path, saved, sizeof(saved));
	js->path_n = saved_n;
	js->defs[i].busy = false;
	if (rv != ORCH_OK)
		return rv;
	sbuf_puts(&b, inner);
	rv = put_rule(js, name, &b);
	sbuf_fini(&b);
	return rv;
}

/* gen_ref - a schema that is a $ref (its siblings ignored, as up to draft 7, or none). */
static orch_err
gen_ref(struct js *js, const cJSON *s, char name[JS_NAME_MAX])
{
	const cJSON *r = kw(s, "$ref"), *target, *res = js->res;

	if (!cJSON_IsString(r))
		return js_fail(js, "'$ref' must be a string");
	if ((target = resolve_in(js, r->valuestring, &res)) == NULL)
		return js_fail(js,
		               "'$ref' '%s' points at nothing in the schema (only references "
		               "within it are taken)",
		               r->valuestring);
	return gen_def(js, r->valuestring, target, res, name);
}
