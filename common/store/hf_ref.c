/*
 * hf_ref.c - Hugging Face references and the files they name (hf.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"

/* A repository or organisation name: letters, digits, '-', '_', '.'; not starting with '.'. */
static bool
name_ok(const char *s, size_t n)
{
	if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-' || s[n - 1] == '.' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return !(n >= 2 && (memmem(s, n, "..", 2) || memmem(s, n, "--", 2)));
}

/* A path inside the repository: parts of name characters, no "." or ".." part, ends .gguf. */
static bool
path_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 6 || n >= sizeof(((struct hf_ref *)0)->path) || strcasecmp(s + n - 5, ".gguf") != 0)
		return false;
	for (const char *p = s; *p;) {
		size_t k = strcspn(p, "/");
		if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < k; i++)
			if (!isalnum((unsigned char)p[i]) && !strchr("-_.+ ", p[i]))
				return false;
		p += k + (p[k] == '/');
	}
	return true;
}

orch_err
hf_ref_parse(const char *s, struct hf_ref *ret, struct orch_errinfo *reterr)
{
	char buf[900];
	const char *slash, *rest;

	memset(ret, 0, sizeof(*ret));
	if (strncmp(s, "hf:", 3) != 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "'%.200s' is not a reference: it starts 'hf:'", s);
	if (snprintf(buf, sizeof(buf), "%s", s + 3) >= (int)sizeof(buf))
		return orch_errf(reterr, ORCH_EINVAL, "the reference is too long");
	char *at = strrchr(buf, '@');
	snprintf(ret->rev, sizeof(ret->rev), "main");
	if (at != NULL) {
		*at++ = '\0';
		size_t n = strlen(at);
		if (!name_ok(at, n) || n >= sizeof(ret->rev))
			return orch_errf(
			        reterr, ORCH_EINVAL,
			        "'%.128s' is not a revision orch takes (a branch, tag or commit "
			        "of letters, digits, '-', '_' and '.')",
			        at);
		snprintf(ret->rev, sizeof(ret->rev), "%s", at);
	}
	if ((slash = strchr(buf, '/')) == NULL || !name_ok(buf, (size_t)(slash - buf)))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "'%.200s' does not name a repository: hf:ORG/REPO[:QUANT] or "
		                 "hf:ORG/REPO/FILE.gguf",
		                 s);
	rest = slash + 1;
	size_t repo_n = strcspn(rest, "/:");
	if (!name_ok(rest, repo_n))
		return orch_errf(reterr, ORCH_EINVAL, "'%.*s' is not a repository name",
		                 (int)repo_n, rest);
	snprintf(ret->repo, sizeof(ret->repo), "%.*s", (int)((size_t)(rest - buf) + repo_n), buf);
	rest += repo_n;
	if (*rest == '/') {
		if (!path_ok(rest + 1))
			return orch_errf(reterr, ORCH_EINVAL,
			                 "'%.300s' is not a .gguf file inside the repository",
			                 rest + 1);
		snprintf(ret->path, sizeof(ret->path), "%s", rest + 1);
	} else {
		const char *q = *rest == ':' ? rest + 1 : HF_DEFAULT_QUANT;
		size_t n = strlen(q);
		if (n == 0 || n >= sizeof(ret->quant) ||
		    strspn(q, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi"
		              "jklmnopqrstuvwxyz0123456789_") != n)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "'%.64s' is not a quant kind (Q4_K_M, Q8_0, MXFP4, ...)",
			                 q);
		for (size_t i = 0; i < n; i++)
			ret->quant[i] = (char)toupper((unsigned char)q[i]);
	}
	snprintf(ret->canon, sizeof(ret->canon), "hf:%s%s%s%s%s", ret->repo,
	         ret->path[0] ? "/" : ":", ret->path[0] ? ret->path : ret->quant,
	         strcmp(ret->rev, "main") ? "@" : "", strcmp(ret->rev, "main") ? ret->rev : "");
	return ORCH_OK;
}

/* ---- choosing files ---- */

/* @path's base name without ".gguf" and a split suffix; the part number (0: not split). */
static void
stem(const char *path, char *buf, size_t n, unsigned *ret_part, unsigned *ret_of)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = strlen(base) - 5; /* ".gguf" */
	unsigned part = 0, of = 0;
	int used = 0;

	if (len > 15 && sscanf(base + len - 15, "-%5u-of-%5u%n", &part, &of, &used) == 2 &&
	    used == 15 && part >= 1 && part <= of)
		len -= 15;
	else
		part = of = 0;
	snprintf(buf, n, "%.*s", (int)len, base);
	*ret_part = part;
	*ret_of = of;
}

/* @st's quant label: what follows its last '-' or '.' (all of it when there is none). */
static const char *
label(const char *st)
{
	const char *a = strrchr(st, '-'), *b = strrchr(st, '.');
	const char *sep = a > b ? a : b;

	return sep ? sep + 1 : st;
}

/* Whether @st's quant label is @q (case-insensitive): Q4_K is not Q4_K_M, nor K_M. */
static bool
quant_of(const char *st, const char *q)
{
	return strcasecmp(label(st), q) == 0;
}

/* Entry @it of the listing as *@f: a file with an LFS SHA-256; false when it lacks one. */
static bool
lfs_file(const cJSON *it, struct hf_file *f)
{
	const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(it, "lfs");
	const cJSON *oid = cJSON_GetObjectItemCaseSensitive(lfs, "oid");
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(lfs, "size");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(it, "path");

	memset(f, 0, sizeof(*f));
	if (cJSON_IsString(path))
		snprintf(f->path, sizeof(f->path), "%s", path->valuestring);
	if (!cJSON_IsString(oid) || strlen(oid->valuestring) != 64 ||
	    strspn(oid->valuestring, "0123456789abcdef") != 64 || !cJSON_IsNumber(size) ||
	    !(size->valuedouble >= 0 && size->valuedouble < 0x1p62 &&
	      size->valuedouble == (double)(uint64_t)size->valuedouble))
		return false;
	memcpy(f->sha256, oid->valuestring, 65);
	f->size = (uint64_t)size->valuedouble;
	return true;
}

/* Whether listing entry @it is a GGUF file (not a projector), its path in *@ret_path. */
static bool
gguf_entry(const cJSON *it, const char **ret_path)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(it, "path");
	size_t n;

	if (!cJSON_IsString(type) || strcmp(type->valuestring, "file") != 0 ||
	    !cJSON_IsString(path) || (n = strlen(path->valuestring)) < 6 ||
	    strcasecmp(path->valuestring + n - 5, ".gguf") != 0 || !path_ok(path->valuestring))
		return false;
	*ret_path = path->valuestring;
	return strcasestr(path->valuestring, "mmproj") == NULL;
}

/* Whether @k is one of the ", "-separated labels in @buf (case-insensitive). */
static bool
listed(const char *buf, const char *k)
{
	size_t kn = strlen(k);

	for (const char *p = buf; *p;) {
		size_t n = strcspn(p, ",");
		if (n == kn && strncasecmp(p, k, n) == 0)
			return true;
		p += n;
		p += strspn(p, ", ");
	}
	return false;
}

/* The quant kinds of the repository's GGUF files, for a message. */
static void
kinds(const cJSON *tree, char *buf, size_t n)
{
	const cJSON *it;
	size_t at = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(it, tree)
	{
		const char *p;
		char st[512];
		unsigned part, of;
		if (!gguf_entry(it, &p))
			continue;
		stem(p, st, sizeof(st), &part, &of);
		if (part > 1)
			continue;
		const char *k = label(st);
		if (at + strlen(k) + 3 < n && !listed(buf, k))
			at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "", k);
	}
}

static orch_err
pick_path(const struct hf_ref *r, const cJSON *tree, struct hf_file *ret, uint32_t *ret_n,
          struct orch_errinfo *reterr)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, tree)
	{
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(it, "path");
		if (!cJSON_IsString(path) || strcmp(path->valuestring, r->path) != 0)
			continue;
		if (!lfs_file(it, &ret[0]))
			return orch_errf(
			        reterr, ORCH_EINVAL,
			        "%s in %s is not an LFS file: there is no SHA-256 to check it by",
			        r->path, r->repo);
		*ret_n = 1;
		return ORCH_OK;
	}
	return orch_errf(reterr, ORCH_ENOTFOUND, "%s has no file %s at %s", r->repo, r->path,
	                 r->rev);
}

orch_err
hf_pick(const struct hf_ref *r, const cJSON *tree, struct hf_file *ret, uint32_t cap,
        uint32_t *ret_n, struct orch_errinfo *reterr)
{
	const cJSON *it;
	char first[512] = "", st[512], msg[400];
	uint32_t n = 0, want = 0;

	*ret_n = 0;
	if (!cJSON_IsArray(tree))
		return orch_errf(reterr, ORCH_EINVAL, "the repository's listing is not a list");
	if (r->path[0])
		return pick_path(r, tree, ret, ret_n, reterr);
	cJSON_ArrayForEach(it, tree) /* the one file or split set of that quant */
	{
		const char *p;
		unsigned part, of;
		if (!gguf_entry(it, &p))
			continue;
		stem(p, st, sizeof(st), &part, &of);
		if (!quant_of(st, r->quant) || part > 1)
			continue;
		if (first[0])
			return orch_errf(reterr, ORCH_EINVAL,
			                 "%s has more than one %s GGUF (%s, %s): name the file, "
			                 "hf:%s/PATH.gguf",
			                 r->repo, r->quant, first, p, r->repo);
		snprintf(first, sizeof(first), "%s", p);
		want = of ? of : 1;
	}
	if (!first[0]) {
		kinds(tree, msg, sizeof(msg));
		return orch_errf(reterr, ORCH_ENOTFOUND, "%s has no %s GGUF at %s (it has: %s)",
		                 r->repo, r->quant, r->rev, msg[0] ? msg : "no GGUF files");
	}
	if (want > cap)
		return orch_errf(reterr, ORCH_ERANGE, "%s is split in %u parts (at most %u)", first,
		                 want, cap);
	size_t prefix = strlen(first) - (want > 1 ? 20 : 0); /* "-00001-of-0000N.gguf" */
	for (uint32_t k = 1; k <= want; k++) {
		char name[600];
		snprintf(name, sizeof(name), "%.*s%s", (int)prefix, first, "");
		if (want > 1)
			snprintf(name + prefix, sizeof(name) - prefix, "-%05u-of-%05u.gguf", k,
			         want);
		bool found = false;
		cJSON_ArrayForEach(it, tree)
		{
			const cJSON *path = cJSON_GetObjectItemCaseSensitive(it, "path");
			if (!cJSON_IsString(path) || strcmp(path->valuestring, name) != 0)
				continue;
			if (!lfs_file(it, &ret[n]))
				return orch_errf(
				        reterr, ORCH_EINVAL,
				        "%s in %s is not an LFS file: there is no SHA-256 to "
				        "check it by",
				        name, r->repo);
			n++;
			found = true;
			break;
		}
		if (!found)
			return orch_errf(reterr, ORCH_ENOTFOUND, "%s lacks part %u of %u: %s",
			                 r->repo, k, want, name);
	}
	*ret_n = n;
	return ORCH_OK;
}
