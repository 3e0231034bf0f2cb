/*
 * filehash.c - a file's SHA-256, cached by size and mtime (filehash.h).
 */
#include "filehash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"

#define CHUNK_BYTES (1u << 20)
#define CACHE_LINE  200 /* "size=... mtime_ns=... ino=... sha256=..." is at most ~145 bytes */

const char *
filehash_where_name(enum filehash_where w)
{
	switch (w) {
	case FILEHASH_NOWHERE:
		return "nowhere";
	case FILEHASH_BESIDE:
		return "beside";
	case FILEHASH_DIR:
		return "dir";
	}
	return "?";
}

static void
stamp_of(const struct stat *st, struct filehash_stamp *ret)
{
	ret->size = (uint64_t)st->st_size;
	ret->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	ret->ino = (uint64_t)st->st_ino;
}

orch_err
filehash_stat(const char *path, struct filehash_stamp *ret, struct orch_errinfo *reterr)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
	stamp_of(&st, ret);
	return ORCH_OK;
}

/* The cache file of @path: beside it (@dir NULL), or in @dir. False when it does not fit. */
static bool
cache_path(const char *path, const char *dir, char *out, size_t n)
{
	char abs[PATH_MAX];
	uint8_t d[SHA256_BYTES];
	char hex[SHA256_HEX];
	int k;

	if (dir == NULL) {
		k = snprintf(out, n, "%s.sha256", path);
		return k > 0 && (size_t)k < n;
	}
	if (realpath(path, abs) == NULL)
		snprintf(abs, sizeof(abs), "%s", path);
	sha256_buf(abs, strlen(abs), d);
	sha256_hex(d, hex);
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	k = snprintf(out, n, "%s/%s.%.16s.sha256", dir, base, hex);
	return k > 0 && (size_t)k < n;
}

/* Whether @s is 64 lowercase hex digits. */
static bool
is_hex64(const char *s)
{
	size_t i = 0;

	for (; s[i] != '\0'; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

/* The digest in cache file @cpath when it is well-formed and matches @st. */
static bool
read_cache(const char *cpath, const struct filehash_stamp *st, char hex[SHA256_HEX])
{
	char line[CACHE_LINE + 1], got[CACHE_LINE + 1];
	uint64_t size, ino;
	int64_t mtime;
	int fd = open(cpath, O_RDONLY | O_CLOEXEC);
	int used = 0;

	if (fd < 0)
		return false;
	ssize_t k = read(fd, line, CACHE_LINE);
	close(fd);
	if (k <= 0 || line[k - 1] != '\n')
		return false;
	line[k] = '\0';
	/* a line without the inode (an older orch's) is stale: the file is hashed once more */
	if (sscanf(line,
	           "size=%" SCNu64 " mtime_ns=%" SCNd64 " ino=%" SCNu64 " sha256=%160[0-9a-f]\n%n",
	           &size, &mtime, &ino, got, &used) != 4 ||
	    used != k || !is_hex64(got) || size != st->size || mtime != st->mtime_ns ||
	    ino != st->ino)
		return false;
	memcpy(hex, got, SHA256_HEX);
	return true;
}

orch_err
filehash_cached(const char *path, const char *dir, char hex[SHA256_HEX],
                enum filehash_where *ret_where, struct orch_errinfo *reterr)
{
	struct filehash_stamp st;
	char cpath[PATH_MAX + 64];
	orch_err rv;

	if ((rv = filehash_stat(path, &st, reterr)) != ORCH_OK)
		return rv;
	if (cache_path(path, NULL, cpath, sizeof(cpath)) && read_cache(cpath, &st, hex)) {
		*ret_where = FILEHASH_BESIDE;
		return ORCH_OK;
	}
	if (dir != NULL && cache_path(path, dir, cpath, sizeof(cpath)) &&
	    read_cache(cpath, &st, hex)) {
		*ret_where = FILEHASH_DIR;
		return ORCH_OK;
	}
	return orch_errf(reterr, ORCH_ENOTFOUND, "%s: no cached digest for its size and mtime",
	                 path);
}

orch_err
filehash_compute(const char *path, char hex[SHA256_HEX], struct filehash_stamp *ret_stamp,
                 const atomic_bool *stop, struct orch_errinfo *reterr)
{
	struct stat before, after;
	struct filehash_stamp a, b;
	struct sha256 s;
	uint8_t d[SHA256_BYTES];
	uint8_t *buf = NULL;
	orch_err rv = ORCH_OK;
	ssize_t k;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &before) != 0) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((buf = orch_malloc(CHUNK_BYTES)) == NULL) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "out of memory");
		goto out;
	}
	sha256_init(&s);
	while ((k = read(fd, buf, CHUNK_BYTES)) > 0) {
		sha256_update(&s, buf, (size_t)k);
		if (stop != NULL && atomic_load(stop)) {
			rv = orch_errf(reterr, ORCH_ECANCELLED, "%s: hashing stopped", path);
			goto out;
		}
	}
	if (k < 0 || fstat(fd, &after) != 0) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	stamp_of(&before, &a);
	stamp_of(&after, &b);
	if (a.size != b.size || a.mtime_ns != b.mtime_ns || a.ino != b.ino || s.n_bytes != a.size) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: changed while it was read", path);
		goto out;
	}
	sha256_final(&s, d);
	sha256_hex(d, hex);
	*ret_stamp = a;
out:
	orch_free(buf);
	close(fd);
	return rv;
}

/* Write @line to @cpath through a temporary file and a rename. */
static orch_err
write_cache(const char *cpath, const char *line, struct orch_errinfo *reterr)
{
	char tmp[PATH_MAX + 96];
	size_t n = strlen(line);
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", cpath, (int)getpid()) >= (int)sizeof(tmp))
		return orch_errf(reterr, ORCH_EIO, "%s: path too long", cpath);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return orch_errf(reterr, ORCH_EIO, "%s: %s", tmp, strerror(errno));
	bool ok = write(fd, line, n) == (ssize_t)n;
	int err = errno;
	if (close(fd) != 0 && ok) {
		ok = false;
		err = errno;
	}
	if (ok && rename(tmp, cpath) != 0) {
		ok = false;
		err = errno;
	}
	if (!ok) {
		unlink(tmp);
		return orch_errf(reterr, ORCH_EIO, "%s: %s", cpath, strerror(err));
	}
	return ORCH_OK;
}

orch_err
filehash_store(const char *path, const char *dir, bool beside, const struct filehash_stamp *stamp,
               const char hex[SHA256_HEX], enum filehash_where *ret_where,
               struct orch_errinfo *reterr)
{
	char line[CACHE_LINE], cpath[PATH_MAX + 64];
	orch_err rv = orch_errf(reterr, ORCH_EIO, "%s: no place to cache its digest", path);

	*ret_where = FILEHASH_NOWHERE;
	snprintf(line, sizeof(line),
	         "size=%" PRIu64 " mtime_ns=%" PRId64 " ino=%" PRIu64 " sha256=%s\n", stamp->size,
	         stamp->mtime_ns, stamp->ino, hex);
	if (beside && cache_path(path, NULL, cpath, sizeof(cpath)) &&
	    (rv = write_cache(cpath, line, reterr)) == ORCH_OK) {
		*ret_where = FILEHASH_BESIDE;
		return ORCH_OK;
	}
	if (dir != NULL && cache_path(path, dir, cpath, sizeof(cpath)) &&
	    (rv = write_cache(cpath, line, reterr)) == ORCH_OK) {
		*ret_where = FILEHASH_DIR;
		return ORCH_OK;
	}
	return rv;
}
