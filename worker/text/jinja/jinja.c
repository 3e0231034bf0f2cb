/*
 * jinja.c - compile and free templates. Rendering is in jinja_eval.c.
 */
#include <string.h>

#include "base/alloc.h"
#include "jinja_internal.h"

/* jinja2: "\r\n" and "\r" become "\n"; one trailing newline is dropped. */
static char *
normalize(struct arena *a, const char *src, size_t len, size_t *ret_n)
{
	char *d = arena_alloc(a, len + 1);
	size_t k = 0;

	if (d == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (src[i] == '\r') {
			d[k++] = '\n';
			if (i + 1 < len && src[i + 1] == '\n')
				i++;
		} else {
			d[k++] = src[i];
		}
	}
	if (k > 0 && d[k - 1] == '\n')
		k--;
	d[k] = '\0';
	*ret_n = k;
	return d;
}

orch_err
jinja_compile(const char *name, const char *src, size_t len, struct jinja_tmpl **ret,
              struct orch_errinfo *reterr)
{
	struct jinja_tmpl *t = orch_calloc(1, sizeof(*t));
	struct jlex lex = {0};
	orch_err rv;

	if (t == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", name);
	t->name = arena_strndup(&t->arena, name, strlen(name));
	t->src = normalize(&t->arena, src, len, &t->src_n);
	if (t->name == NULL || t->src == NULL) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", name);
		goto out;
	}
	rv = jinja_lex(t->name, t->src, t->src_n, &lex, reterr);
	if (rv == ORCH_OK)
		rv = jinja_parse(t, &lex, reterr);
	if (rv != ORCH_OK)
		goto out;
	*ret = t;
	t = NULL;
out:
	orch_free(lex.v);
	jinja_free(t);
	return rv;
}

void
jinja_free(struct jinja_tmpl *t)
{
	if (t == NULL)
		return;
	arena_free(&t->arena);
	orch_free(t);
}
