/*
 * store.c - the model store's directory and index (store.h).
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/filehash.h"
#include "base/readfile.h"

#define INDEX_MAX (64u << 20)

struct store {
	char dir[PATH_MAX];
};

orch_err
store_default_dir(char *buf, size_t n, struct orch_errinfo *reterr)
{
	const char *env = getenv("ORCH_MODEL_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int w;

	if (env != NULL && env[0])
		w = snprintf(buf, n, "%s", env);
	else if (geteuid() == 0)
		w = snprintf(buf, n, "/var/lib/orchd/models");
	else if (xdg != NULL && xdg[0] == '/')
		w = snprintf(buf, n, "%s/orch/models", xdg);
	else if (home != NULL && home[0])
		w = snprintf(buf, n, "%s/.cache/orch/models", home);
	else
		return orch_errf(reterr, ORCH_ENOTFOUND,
		                 "no model directory: set ORCH_MODEL_DIR (or HOME)");
	if (w < 0 || (size_t)w >= n)
		return orch_errf(reterr, ORCH_ERANGE, "the model directory's path is too long");
	return ORCH_OK;
}

/* mkdir -p @path (mode 0755). */
static orch_err
make_dirs(const char *path, struct orch_errinfo *reterr)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return orch_errf(reterr, ORCH_ERANGE, "%s: path too long", path);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return orch_errf(reterr, ORCH_EIO, "%s: cannot create: %s", p,
			                 strerror(errno));
		*s = c;
		if (c == '\0')
			return ORCH_OK;
	}
}

/* @s's @rel into @buf. */
static orch_err
join(const struct store *s, const char *rel, char *buf, size_t n, struct orch_errinfo *reterr)
{
	int w = snprintf(buf, n, "%s/%s", s->dir, rel);

	if (w < 0 || (size_t)w >= n)
		return orch_errf(reterr, ORCH_ERANGE, "%s/%s: path too long", s->dir, rel);
	return ORCH_OK;
}

orch_err
store_open(const char *dir, bool create, struct store **ret, struct orch_errinfo *reterr)
{
	struct store *s;
	char p[PATH_MAX];
	orch_err rv;

	if (!create && access(dir, F_OK) != 0)
		return orch_errf(reterr, ORCH_ENOTFOUND, "there is no model store at %s", dir);
	if ((s = orch_calloc(1, sizeof(*s))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if (snprintf(s->dir, sizeof(s->dir), "%s", dir) >= (int)sizeof(s->dir)) {
		orch_free(s);
		return orch_errf(reterr, ORCH_ERANGE, "%s: path too long", dir);
	}
	if ((rv = make_dirs(dir, reterr)) != ORCH_OK ||
	    (rv = join(s, "blobs", p, sizeof(p), reterr)) != ORCH_OK ||
	    (rv = make_dirs(p, reterr)) != ORCH_OK ||
	    (rv = join(s, "snapshots", p, sizeof(p), reterr)) != ORCH_OK ||
	    (rv = make_dirs(p, reterr)) != ORCH_OK) {
		orch_free(s);
		return rv;
	}
	*ret = s;
	return ORCH_OK;
}

void
store_close(struct store *s)
{
	orch_free(s);
}

const char *
store_dir(const struct store *s)
{
	return s->dir;
}

/* Whether @hex is 64 lowercase hex digits. */
static bool
sha_ok(const char *hex)
{
	size_t n = strspn(hex, "0123456789abcdef");

	return n == SHA256_HEX - 1 && hex[n] == '\0';
}

orch_err
store_blob_path(const struct store *s, const char *sha256, const char *suffix, char *buf, size_t n,
                struct orch_errinfo *reterr)
{
	int w;

	if (!sha_ok(sha256))
		return orch_errf(reterr, ORCH_EINVAL, "'%.80s' is not a SHA-256", sha256);
	w = snprintf(buf, n, "%s/blobs/sha256-%s%s", s->dir, sha256, suffix);
	if (w < 0 || (size_t)w >= n)
		return orch_errf(reterr, ORCH_ERANGE, "%s: path too long", s->dir);
	return ORCH_OK;
}

bool
store_has_blob(const struct store *s, const char *sha256, uint64_t size)
{
	char p[PATH_MAX];
	struct stat st;

	return store_blob_path(s, sha256, "", p, sizeof(p), NULL) == ORCH_OK && stat(p, &st) == 0 &&
	       S_ISREG(st.st_mode) && (uint64_t)st.st_size == size;
}

/* A repository path that stays inside its snapshot: no "..", no absolute path, no empty part. */
static bool
rel_ok(const char *p)
{
	if (p[0] == '\0' || p[0] == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t k = strcspn(s, "/");
		if (k == 0 || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += k + (s[k] == '/');
		if (s[-1] == '/' && *s == '\0')
			return false;
	}
	return true;
}

/* The snapshot link of @en's file @f into @buf. */
static orch_err
snapshot_path(const struct store *s, const struct store_entry *en, const struct store_file *f,
              char *buf, size_t n, struct orch_errinfo *reterr)
{
	const char *commit = en->commit && en->commit[0] ? en->commit : en->revision;
	int w;

	if (!rel_ok(en->repo) || !rel_ok(commit) || strchr(commit, '/') || !rel_ok(f->path))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "a bad repository, revision or path: %s@%s/%s", en->repo, commit,
		                 f->path);
	w = snprintf(buf, n, "%s/snapshots/%s/%s/%s", s->dir, en->repo, commit, f->path);
	if (w < 0 || (size_t)w >= n)
		return orch_errf(reterr, ORCH_ERANGE, "%s: path too long", s->dir);
	return ORCH_OK;
}

orch_err
store_model_path(const struct store *s, const struct store_entry *en, char *buf, size_t n,
                 struct orch_errinfo *reterr)
{
	if (en->n_files == 0)
		return orch_errf(reterr, ORCH_ENOTFOUND, "%s has no files", en->ref);
	return snapshot_path(s, en, &en->files[0], buf, n, reterr);
}

/* ---- locks ---- */

/* Open and flock @path (LOCK_EX, waiting); the descriptor in *@ret_fd. */
static orch_err
lock_path(const char *path, int *ret_fd, struct orch_errinfo *reterr)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0)
		return orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		return orch_errf(reterr, ORCH_EIO, "%s: cannot lock: %s", path, strerror(e));
	}
	*ret_fd = fd;
	return ORCH_OK;
}

orch_err
store_lock_blob(const struct store *s, const char *sha256, int *ret_fd, struct orch_errinfo *reterr)
{
	char p[PATH_MAX];
	orch_err rv = store_blob_path(s, sha256, ".lock", p, sizeof(p), reterr);

	return rv != ORCH_OK ? rv : lock_path(p, ret_fd, reterr);
}

void
store_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* the lock goes with the descriptor */
}

/* ---- entries ---- */

void
store_entry_fini(struct store_entry *en)
{
	for (uint32_t i = 0; i < en->n_files; i++)
		orch_free(en->files[i].path);
	orch_free(en->files);
	orch_free(en->ref);
	orch_free(en->repo);
	orch_free(en->revision);
	orch_free(en->commit);
	memset(en, 0, sizeof(*en));
}

void
store_entries_free(struct store_entry *v, uint32_t n)
{
	for (uint32_t i = 0; v != NULL && i < n; i++)
		store_entry_fini(&v[i]);
	orch_free(v);
}

static char *
dup_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	const char *s = cJSON_IsString(v) ? v->valuestring : "";

	return orch_strndup(s, strlen(s));
}

/* @o (an index entry named @ref) into *@en; false when malformed or out of memory. */
static bool
entry_from_json(const char *ref, const cJSON *o, struct store_entry *en)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(o, "files"), *f;
	const cJSON *when = cJSON_GetObjectItemCaseSensitive(o, "pulled_unix");
	int n = cJSON_GetArraySize(files);

	memset(en, 0, sizeof(*en));
	en->ref = orch_strndup(ref, strlen(ref));
	en->repo = dup_str(o, "repo");
	en->revision = dup_str(o, "revision");
	en->commit = dup_str(o, "commit");
	en->pulled_unix = cJSON_IsNumber(when) ? (int64_t)when->valuedouble : 0;
	if (!en->ref || !en->repo || !en->revision || !en->commit || !cJSON_IsArray(files) ||
	    n <= 0 || (en->files = orch_calloc((size_t)n, sizeof(*en->files))) == NULL)
		return false;
	cJSON_ArrayForEach(f, files)
	{
		const cJSON *sha = cJSON_GetObjectItemCaseSensitive(f, "sha256");
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "size");
		struct store_file *sf = &en->files[en->n_files];
		if (!cJSON_IsString(sha) || !sha_ok(sha->valuestring) || !cJSON_IsNumber(size) ||
		    !(size->valuedouble >= 0 && size->valuedouble < 0x1p62 &&
		      size->valuedouble == (double)(uint64_t)size->valuedouble) ||
		    (sf->path = dup_str(f, "path")) == NULL)
			return false;
		memcpy(sf->sha256, sha->valuestring, SHA256_HEX);
		sf->size = (uint64_t)size->valuedouble;
		en->n_files++;
	}
	return true;
}

cJSON *
store_entry_json(const struct store_entry *en)
{
	cJSON *o = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(o, "files");

	cJSON_AddStringToObject(o, "repo", en->repo);
	cJSON_AddStringToObject(o, "revision", en->revision);
	cJSON_AddStringToObject(o, "commit", en->commit ? en->commit : "");
	cJSON_AddNumberToObject(o, "pulled_unix", (double)en->pulled_unix);
	for (uint32_t i = 0; i < en->n_files; i++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "path", en->files[i].path);
		cJSON_AddStringToObject(f, "sha256", en->files[i].sha256);
		cJSON_AddNumberToObject(f, "size", (double)en->files[i].size);
		cJSON_AddItemToArray(files, f);
	}
	return o;
}

/* ---- the index ---- */

/* The index's "refs" object into *@ret (cJSON_Delete the root *@ret_root); empty when absent. */
static orch_err
index_read(const struct store *s, cJSON **ret_root, cJSON **ret, struct orch_errinfo *reterr)
{
	char p[PATH_MAX], *text = NULL;
	size_t n = 0;
	struct orch_errinfo e = {0};
	orch_err rv = join(s, "index.json", p, sizeof(p), reterr);

	if (rv != ORCH_OK)
		return rv;
	if (access(p, F_OK) != 0) {
		*ret_root = cJSON_CreateObject();
		cJSON_AddNumberToObject(*ret_root, "version", 1);
		*ret = cJSON_AddObjectToObject(*ret_root, "refs");
		return *ret ? ORCH_OK : orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	if ((rv = orch_read_file(p, INDEX_MAX, &text, &n, &e)) != ORCH_OK)
		return orch_errf(reterr, rv, "%s", e.msg);
	*ret_root = cJSON_ParseWithLength(text, n);
	orch_free(text);
	*ret = cJSON_GetObjectItemCaseSensitive(*ret_root, "refs");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(*ret_root, "version");
	if (!cJSON_IsObject(*ret) || !cJSON_IsNumber(v) || v->valuedouble != 1) {
		cJSON_Delete(*ret_root);
		return orch_errf(reterr, ORCH_EINVAL, "%s is not a version 1 model store index", p);
	}
	return ORCH_OK;
}

/* @root as the index: written beside it, synced, renamed over it. */
static orch_err
index_write(const struct store *s, const cJSON *root, struct orch_errinfo *reterr)
{
	char p[PATH_MAX], tmp[PATH_MAX + 8];
	char *text = cJSON_Print(root);
	orch_err rv = join(s, "index.json", p, sizeof(p), reterr);
	FILE *f = NULL;
	bool ok;

	if (text == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if (rv != ORCH_OK) {
		free(text);
		return rv;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", p); /* under index.lock: one writer */
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	ok = fd >= 0 && (f = fdopen(fd, "w")) != NULL;
	if (fd >= 0 && f == NULL)
		close(fd);
	if (ok) {
		ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
		ok = fclose(f) == 0 && ok;
	}
	ok = ok && rename(tmp, p) == 0;
	if (!ok) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: cannot write: %s", p, strerror(errno));
		unlink(tmp);
	}
	free(text);
	return rv;
}

orch_err
store_list(struct store *s, struct store_entry **ret, uint32_t *ret_n, struct orch_errinfo *reterr)
{
	cJSON *root, *refs, *it;
	orch_err rv = index_read(s, &root, &refs, reterr);
	uint32_t n = 0;

	if (rv != ORCH_OK)
		return rv;
	struct store_entry *v = orch_calloc((size_t)cJSON_GetArraySize(refs) + 1, sizeof(*v));
	if (v == NULL)
		rv = orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	for (it = refs ? refs->child : NULL; rv == ORCH_OK && it != NULL; it = it->next)
		if (!entry_from_json(it->string, it, &v[n++]))
			rv = orch_errf(reterr, ORCH_EINVAL, "%s/index.json: a bad entry for %s",
			               s->dir, it->string);
	cJSON_Delete(root);
	if (rv != ORCH_OK) {
		store_entries_free(v, n);
		return rv;
	}
	*ret = v;
	*ret_n = n;
	return ORCH_OK;
}

orch_err
store_find(struct store *s, const char *ref, struct store_entry *ret, struct orch_errinfo *reterr)
{
	cJSON *root, *refs;
	orch_err rv = index_read(s, &root, &refs, reterr);

	if (rv != ORCH_OK)
		return rv;
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(refs, ref);
	if (o == NULL)
		rv = orch_errf(reterr, ORCH_ENOTFOUND, "%s is not in the store (%s)", ref, s->dir);
	else if (!entry_from_json(ref, o, ret))
		rv = orch_errf(reterr, ORCH_EINVAL, "%s/index.json: a bad entry for %s", s->dir,
		               ref);
	if (rv != ORCH_OK && o != NULL)
		store_entry_fini(ret);
	cJSON_Delete(root);
	return rv;
}

/* The snapshot link of @f, made (its directories too) to point at the blob. */
static orch_err
link_file(const struct store *s, const struct store_entry *en, const struct store_file *f,
          struct orch_errinfo *reterr)
{
	char link[PATH_MAX], blob[PATH_MAX], dir[PATH_MAX];
	orch_err rv;

	if ((rv = snapshot_path(s, en, f, link, sizeof(link), reterr)) != ORCH_OK ||
	    (rv = store_blob_path(s, f->sha256, "", blob, sizeof(blob), reterr)) != ORCH_OK)
		return rv;
	snprintf(dir, sizeof(dir), "%s", link);
	*strrchr(dir, '/') = '\0';
	if ((rv = make_dirs(dir, reterr)) != ORCH_OK)
		return rv;
	/* made beside it and renamed over it: pulls of the same file at once do not collide */
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.%ld.new", link, (long)getpid());
	unlink(tmp);
	if (symlink(blob, tmp) != 0 || rename(tmp, link) != 0) {
		int err = errno;
		unlink(tmp);
		return orch_errf(reterr, ORCH_EIO, "%s: cannot link: %s", link, strerror(err));
	}
	/* the digest cache beside the link too: a worker loads the link and looks there */
	struct filehash_stamp st;
	enum filehash_where where;
	if (filehash_stat(link, &st, NULL) == ORCH_OK)
		filehash_store(link, NULL, true, &st, f->sha256, &where, NULL);
	return ORCH_OK;
}

orch_err
store_put(struct store *s, const struct store_entry *en, struct orch_errinfo *reterr)
{
	char p[PATH_MAX];
	cJSON *root, *refs;
	int fd = -1;
	orch_err rv;

	for (uint32_t i = 0; i < en->n_files; i++)
		if (!store_has_blob(s, en->files[i].sha256, en->files[i].size))
			return orch_errf(reterr, ORCH_ENOTFOUND, "%s: %s is not in the store",
			                 en->ref, en->files[i].path);
	for (uint32_t i = 0; i < en->n_files; i++)
		if ((rv = link_file(s, en, &en->files[i], reterr)) != ORCH_OK)
			return rv;
	if ((rv = join(s, "index.lock", p, sizeof(p), reterr)) != ORCH_OK ||
	    (rv = lock_path(p, &fd, reterr)) != ORCH_OK)
		return rv;
	if ((rv = index_read(s, &root, &refs, reterr)) == ORCH_OK) {
		cJSON_DeleteItemFromObjectCaseSensitive(refs, en->ref);
		cJSON_AddItemToObject(refs, en->ref, store_entry_json(en));
		rv = index_write(s, root, reterr);
		cJSON_Delete(root);
	}
	store_unlock(fd);
	return rv;
}

/* Whether any entry in @refs but @en's has the snapshot link @link. */
static bool
link_used(const struct store *s, const cJSON *refs, const struct store_entry *en, const char *link)
{
	char p[PATH_MAX];

	for (const cJSON *it = refs->child; it != NULL; it = it->next) {
		struct store_entry o = {0};
		bool same = false;
		if (strcmp(it->string, en->ref) != 0 && entry_from_json(it->string, it, &o))
			for (uint32_t i = 0; i < o.n_files && !same; i++)
				same = snapshot_path(s, &o, &o.files[i], p, sizeof(p), NULL) ==
				               ORCH_OK &&
				       strcmp(p, link) == 0;
		store_entry_fini(&o);
		if (same)
			return true;
	}
	return false;
}

/* Whether any entry in @refs but @ref names blob @sha256. */
static bool
blob_used(const cJSON *refs, const char *ref, const char *sha256)
{
	const cJSON *it, *f;

	for (it = refs->child; it != NULL; it = it->next) {
		if (strcmp(it->string, ref) == 0)
			continue;
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(it, "files"))
		{
			const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, "sha256");
			if (cJSON_IsString(h) && strcmp(h->valuestring, sha256) == 0)
				return true;
		}
	}
	return false;
}

/* Remove the directories of @path up to DIR/snapshots that are empty now. */
static void
prune_dirs(const struct store *s, char *path)
{
	char top[PATH_MAX + 16];
	char *slash;

	snprintf(top, sizeof(top), "%s/snapshots", s->dir);
	while ((slash = strrchr(path, '/')) != NULL) {
		*slash = '\0';
		if (strlen(path) <= strlen(top) || rmdir(path) != 0)
			return;
	}
}

/*
 * Delete @en's links, and its blobs (with their digest caches) that @refs' others do not
 * use. A blob's lock file stays: a pull waiting on it must lock the file the next one opens.
 */
static void
remove_files(const struct store *s, const cJSON *refs, const struct store_entry *en)
{
	static const char *const sfx[] = {"", ".sha256"};
	char p[PATH_MAX];

	for (uint32_t i = 0; i < en->n_files; i++) {
		const struct store_file *f = &en->files[i];
		if (snapshot_path(s, en, f, p, sizeof(p), NULL) == ORCH_OK &&
		    !link_used(s, refs, en, p)) {
			char cache[PATH_MAX + 8];
			snprintf(cache, sizeof(cache), "%s.sha256", p);
			unlink(cache);
			unlink(p);
			prune_dirs(s, p);
		}
		if (blob_used(refs, en->ref, f->sha256))
			continue;
		for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++)
			if (store_blob_path(s, f->sha256, sfx[k], p, sizeof(p), NULL) == ORCH_OK)
				unlink(p);
	}
}

orch_err
store_remove(struct store *s, const char *ref, struct orch_errinfo *reterr)
{
	char p[PATH_MAX];
	cJSON *root, *refs;
	struct store_entry en = {0};
	int fd = -1;
	orch_err rv;

	if ((rv = join(s, "index.lock", p, sizeof(p), reterr)) != ORCH_OK ||
	    (rv = lock_path(p, &fd, reterr)) != ORCH_OK)
		return rv;
	if ((rv = index_read(s, &root, &refs, reterr)) != ORCH_OK) {
		store_unlock(fd);
		return rv;
	}
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(refs, ref);
	if (o == NULL)
		rv = orch_errf(reterr, ORCH_ENOTFOUND, "%s is not in the store (%s)", ref, s->dir);
	else if (!entry_from_json(ref, o, &en))
		rv = orch_errf(reterr, ORCH_EINVAL, "%s/index.json: a bad entry for %s", s->dir,
		               ref);
	if (rv == ORCH_OK) {
		remove_files(s, refs, &en);
		cJSON_DeleteItemFromObjectCaseSensitive(refs, ref);
		rv = index_write(s, root, reterr);
	}
	store_entry_fini(&en);
	cJSON_Delete(root);
	store_unlock(fd);
	return rv;
}
