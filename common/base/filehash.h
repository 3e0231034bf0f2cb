#pragma once
/*
 * filehash.h - a file's SHA-256, computed once and cached by the file's size
 * and modification time, so a multi-GB model is hashed on its first start
 * only.
 *
 * The cache of FILE is one line, "size=N mtime_ns=N ino=N sha256=HEX", in
 * FILE.sha256 beside it (when the caller allows), or in DIR/NAME.KEY.sha256
 * of a cache directory the caller names (NAME: the file's base name, KEY: 16
 * hex digits of the SHA-256 of its absolute path). A cache whose size, mtime
 * or inode differs from the file's is stale and ignored; a malformed one (or
 * an older orch's, without the inode) too. Library code: nothing here logs.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "sha256.h"

/* Where a digest came from or went. */
enum filehash_where {
	FILEHASH_NOWHERE, /* not cached */
	FILEHASH_BESIDE,  /* FILE.sha256 */
	FILEHASH_DIR,     /* in the cache directory */
};

/* What identifies a version of a file: its size, modification time and inode. */
struct filehash_stamp {
	uint64_t size;
	int64_t mtime_ns;
	uint64_t ino;
};

/* filehash_where_name - "nowhere", "beside", "dir". */
const char *filehash_where_name(enum filehash_where w);

/* filehash_stat - @path's stamp into *@ret. ORCH_EIO (errno text) when it cannot be stat'ed. */
orch_err filehash_stat(const char *path, struct filehash_stamp *ret, struct orch_errinfo *reterr);

/*
 * filehash_cached - @path's digest from a cache that matches the file now:
 * FILE.sha256 first, then the one in @dir (NULL: none). ORCH_OK with @hex
 * and *@ret_where set; ORCH_ENOTFOUND when no cache matches; ORCH_EIO when
 * @path cannot be stat'ed. Reads a few bytes; never hashes.
 */
orch_err filehash_cached(const char *path, const char *dir, char hex[SHA256_HEX],
                         enum filehash_where *ret_where, struct orch_errinfo *reterr);

/*
 * filehash_compute - the SHA-256 of all of @path into @hex, and the stamp
 * it had (*@ret_stamp). ORCH_EIO when it cannot be read, or when its size
 * or mtime changed while it was read; ORCH_ECANCELLED when *@stop (NULL:
 * never) turned true, checked between 1 MiB reads. Blocks for as long as
 * reading the file takes. Thread: any.
 */
orch_err filehash_compute(const char *path, char hex[SHA256_HEX], struct filehash_stamp *ret_stamp,
                          const atomic_bool *stop, struct orch_errinfo *reterr);

/*
 * filehash_store - cache @hex as @path's digest at @stamp: beside the file
 * unless @beside is false, else (or when that fails) in @dir (NULL: none).
 * Written to a temporary file and renamed, so a reader never sees half a
 * line. ORCH_OK with *@ret_where; ORCH_EIO (the last failure's reason) when
 * it went nowhere, *@ret_where then FILEHASH_NOWHERE.
 */
orch_err filehash_store(const char *path, const char *dir, bool beside,
                        const struct filehash_stamp *stamp, const char hex[SHA256_HEX],
                        enum filehash_where *ret_where, struct orch_errinfo *reterr);
