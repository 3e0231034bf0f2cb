/*
 * keys.c - the public API's keys (keys.h): the keys file, the bearer
 * token of a request, constant-time checks by digest, allow-lists.
 */
#include "keys.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/readfile.h"
#include "config.h"

/* ---- the file ---- */

static bool
blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A model name as the config spells them: 1-63 of letters, digits and ._-: */
static bool
model_name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= CFG_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') &&
		    !strchr("._-:", c))
			return false;
	}
	return true;
}

/* "models=a,b" into @k; the message of a refusal into @why. */
static orch_err
parse_models(struct api_key *k, const char *v, size_t n, const char **why)
{
	size_t i = 0;

	if (k->models != NULL) {
		*why = "models= is given twice";
		return ORCH_EINVAL;
	}
	while (i <= n) {
		size_t len = 0;
		while (i + len < n && v[i + len] != ',')
			len++;
		if (!model_name_ok(v + i, len)) {
			*why = "models= wants model names (letters, digits and ._-:) separated by commas";
			return ORCH_EINVAL;
		}
		char **m = orch_reallocarray(k->models, k->n_models + 1, sizeof(*m));
		if (m == NULL || (m[k->n_models] = orch_strndup(v + i, len)) == NULL) {
			if (m != NULL)
				k->models = m;
			*why = "out of memory";
			return ORCH_ENOMEM;
		}
		k->models = m;
		k->n_models++;
		i += len + 1;
	}
	return ORCH_OK;
}

static void
key_fini(struct api_key *k)
{
	for (uint32_t i = 0; i < k->n_models; i++)
		orch_free(k->models[i]);
	orch_free(k->models);
	k->models = NULL;
	k->n_models = 0;
}

/* One line's words (@s, @n bytes, trimmed) into @k; why a bad line is bad into @why. */
static orch_err
parse_line(struct api_key *k, const char *s, size_t n, const char **why)
{
	size_t i = 0, len = 0;
	orch_err rv;

	while (len < n && !blank(s[len]))
		len++;
	for (size_t j = 0; j < len; j++)
		if ((unsigned char)s[j] < 0x21 || (unsigned char)s[j] > 0x7e) {
			*why = "a key is visible ASCII characters only";
			return ORCH_EINVAL;
		}
	if (len < KEYS_KEY_MIN || len > KEYS_KEY_MAX) {
		*why = "a key is 16-512 characters";
		return ORCH_EINVAL;
	}
	sha256_buf(s, len, k->digest);
	for (i = len; i < n;) {
		while (i < n && blank(s[i]))
			i++;
		size_t w = 0;
		while (i + w < n && !blank(s[i + w]))
			w++;
		if (w == 0)
			break;
		if (w < 7 || memcmp(s + i, "models=", 7) != 0) {
			*why = "after the key, only models=NAME,NAME,... (or a # comment line)";
			return ORCH_EINVAL;
		}
		if ((rv = parse_models(k, s + i + 7, w - 7, why)) != ORCH_OK)
			return rv;
		i += w;
	}
	return ORCH_OK;
}

/* Add the key of @line (@s, @n bytes, trimmed, not a comment) to @ks. */
static orch_err
add_line(struct api_keys *ks, const char *name, uint32_t line, const char *s, size_t n,
         struct orch_errinfo *e)
{
	struct api_key k = {.line = line}, *v = NULL;
	const char *why = NULL;
	orch_err rv = parse_line(&k, s, n, &why);

	for (uint32_t i = 0; rv == ORCH_OK && i < ks->n; i++)
		if (memcmp(ks->v[i].digest, k.digest, sizeof(k.digest)) == 0) {
			rv = orch_errf(e, ORCH_EINVAL, "%s:%u: the key of line %u again", name,
			               line, ks->v[i].line);
			key_fini(&k);
			return rv;
		}
	if (rv == ORCH_OK && (v = orch_reallocarray(ks->v, ks->n + 1, sizeof(*v))) == NULL) {
		rv = ORCH_ENOMEM;
		why = "out of memory";
	}
	if (rv != ORCH_OK) {
		key_fini(&k);
		return orch_errf(e, rv, "%s:%u: %s", name, line, why);
	}
	ks->v = v;
	ks->v[ks->n++] = k;
	return ORCH_OK;
}

orch_err
keys_parse(const char *name, const char *text, size_t n, struct api_keys *ret,
           struct orch_errinfo *e)
{
	struct api_keys ks = {0};
	uint32_t line = 0;
	orch_err rv = ORCH_OK;

	*ret = (struct api_keys){0};
	for (size_t i = 0; i < n && rv == ORCH_OK;) {
		size_t end = i;
		while (end < n && text[end] != '\n')
			end++;
		size_t a = i, b = end;
		line++;
		i = end + 1;
		while (a < b && (blank(text[a]) || text[a] == '\r'))
			a++;
		while (b > a && (blank(text[b - 1]) || text[b - 1] == '\r'))
			b--;
		if (a < b && text[a] != '#')
			rv = add_line(&ks, name, line, text + a, b - a, e);
	}
	if (rv == ORCH_OK && ks.n == 0)
		rv = orch_errf(e, ORCH_EINVAL,
		               "%s: no key in it (an empty keys file would leave the API open; "
		               "remove api_keys_file to run without keys)",
		               name);
	if (rv != ORCH_OK) {
		keys_free(&ks);
		return rv;
	}
	*ret = ks;
	return ORCH_OK;
}

orch_err
keys_load(const char *path, struct api_keys *ret, struct orch_errinfo *e)
{
	char *text = NULL;
	size_t n = 0;
	struct stat st;
	orch_err rv;

	*ret = (struct api_keys){0};
	if ((rv = orch_read_regular(path, KEYS_FILE_MAX, &text, &n, e)) != ORCH_OK)
		return rv;
	rv = keys_parse(path, text, n, ret, e);
	orch_free(text);
	if (rv == ORCH_OK && stat(path, &st) == 0 && (st.st_mode & S_IROTH))
		orch_log(
		        ORCH_LOG_WARNING, "api_keys_readable",
		        "file=%s mode=%04o note=\"others may read the keys; chmod o-r\" continuing",
		        path, (unsigned)(st.st_mode & 07777));
	return rv;
}

orch_err
keys_apply(struct api_keys *k, const char *path, orch_err rv, struct api_keys *fresh,
           const struct orch_errinfo *e)
{
	if (rv != ORCH_OK)
		return orch_log_fail(rv, e, "api_keys_reload_failed",
		                     "file=%s kept=%u note=\"the keys in force stay\"", path, k->n);
	keys_free(k);
	*k = *fresh;
	*fresh = (struct api_keys){0};
	orch_log(ORCH_LOG_INFO, "api_keys_reloaded", "file=%s keys=%u", path, k->n);
	return ORCH_OK;
}

orch_err
keys_reload(struct api_keys *k, const char *path)
{
	struct orch_errinfo e = {0};
	struct api_keys fresh;
	orch_err rv = keys_load(path, &fresh, &e);

	return keys_apply(k, path, rv, &fresh, &e);
}

void
keys_free(struct api_keys *k)
{
	for (uint32_t i = 0; i < k->n; i++)
		key_fini(&k->v[i]);
	orch_free(k->v);
	k->v = NULL;
	k->n = 0;
}

/* ---- requests ---- */

bool
keys_bearer(const char *h, const char **ret_tok, size_t *ret_n)
{
	size_t n;

	if (h == NULL)
		return false;
	while (blank(*h))
		h++;
	if (strncasecmp(h, "bearer", 6) != 0 || !blank(h[6]))
		return false;
	h += 6;
	while (blank(*h))
		h++;
	n = strlen(h);
	while (n > 0 && blank(h[n - 1]))
		n--;
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (blank(h[i]))
			return false;
	*ret_tok = h;
	*ret_n = n;
	return true;
}

/* Whether two digests are equal, in time that does not depend on where they differ. */
static bool
same_digest(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	for (size_t i = 0; i < SHA256_BYTES; i++)
		diff |= (uint8_t)(a[i] ^ b[i]);
	return diff == 0;
}

const struct api_key *
keys_check(const struct api_keys *k, const char *h)
{
	uint8_t d[SHA256_BYTES];
	const struct api_key *hit = NULL;
	const char *tok;
	size_t n;

	if (!keys_bearer(h, &tok, &n))
		return NULL;
	sha256_buf(tok, n, d);
	for (uint32_t i = 0; i < k->n; i++) /* no early exit */
		if (same_digest(d, k->v[i].digest))
			hit = &k->v[i];
	return hit;
}

bool
keys_token_equal(const char *h, const char *want)
{
	uint8_t a[SHA256_BYTES], b[SHA256_BYTES];
	const char *tok;
	size_t n;

	if (!keys_bearer(h, &tok, &n) || want[0] == '\0')
		return false;
	sha256_buf(tok, n, a);
	sha256_buf(want, strlen(want), b);
	return same_digest(a, b);
}

bool
keys_model_ok(const struct api_key *key, const char *model)
{
	if (key == NULL || key->models == NULL)
		return true;
	for (uint32_t i = 0; i < key->n_models; i++)
		if (strcmp(key->models[i], model) == 0)
			return true;
	return false;
}
