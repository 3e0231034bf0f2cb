/*
 * filehash_test.c - a file's digest cached by size and mtime: computed,
 * stored beside the file, found again; stale after a change; a malformed
 * cache ignored; the cache directory used when beside fails (a directory in
 * the way of FILE.sha256, which fails even for root); nowhere to store; a
 * missing file; a hash stopped by its flag; and an OOM loop over the compute.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/filehash.h"
#include "t.h"

static char dir[64], cdir[96], file[128], beside[160];

static void
write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	T_TRUE(fp != NULL);
	fputs(text, fp);
	fclose(fp);
}

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/orch-filehash-%d", (int)getpid());
	snprintf(cdir, sizeof(cdir), "%s/cache", dir);
	snprintf(file, sizeof(file), "%s/m.gguf", dir);
	snprintf(beside, sizeof(beside), "%s.sha256", file);
	T_EQ(mkdir(dir, 0755), 0);
	T_EQ(mkdir(cdir, 0755), 0);
	write_text(file, "abc");
}

static void
test_compute_store_lookup(void)
{
	char hex[SHA256_HEX], got[SHA256_HEX];
	struct filehash_stamp st;
	enum filehash_where where;
	struct orch_errinfo e = {0};

	T_ERR(filehash_cached(file, NULL, got, &where, &e), ORCH_ENOTFOUND);
	T_OK(filehash_compute(file, hex, &st, NULL, &e));
	T_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	T_EQ(st.size, 3);
	T_OK(filehash_store(file, cdir, true, &st, hex, &where, &e));
	T_EQ(where, FILEHASH_BESIDE);
	T_EQ(access(beside, R_OK), 0);
	T_OK(filehash_cached(file, cdir, got, &where, &e));
	T_EQ(where, FILEHASH_BESIDE);
	T_STREQ(got, hex);
	/* another size: stale */
	write_text(file, "abcd");
	T_ERR(filehash_cached(file, cdir, got, &where, &e), ORCH_ENOTFOUND);
	write_text(file, "abc");
}

#define GOOD "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

/* Lines with the file's own size and mtime, so only their format can fail them. */
static void
test_malformed_cache(void)
{
	static const char *const bad[] = {
	        " sha256=ba78\n",
	        " sha256=BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD\n",
	        " sha256=" GOOD,
	        " sha256=" GOOD " x\n",
	        " sha256=" GOOD "00\n",
	        " sha=" GOOD "\n",
	};
	char hex[SHA256_HEX], stamp[96], line[256];
	struct filehash_stamp st;
	enum filehash_where where;

	T_OK(filehash_stat(file, &st, NULL));
	snprintf(stamp, sizeof(stamp), "size=%llu mtime_ns=%lld ino=%llu",
	         (unsigned long long)st.size, (long long)st.mtime_ns, (unsigned long long)st.ino);
	snprintf(line, sizeof(line), "%s sha256=" GOOD "\n", stamp);
	write_text(beside, line);
	T_OK(filehash_cached(file, NULL, hex, &where, NULL)); /* the control */
	/* an older orch's line (no inode), and another inode: stale */
	snprintf(line, sizeof(line), "size=%llu mtime_ns=%lld sha256=" GOOD "\n",
	         (unsigned long long)st.size, (long long)st.mtime_ns);
	write_text(beside, line);
	T_ERR(filehash_cached(file, NULL, hex, &where, NULL), ORCH_ENOTFOUND);
	snprintf(line, sizeof(line), "size=%llu mtime_ns=%lld ino=%llu sha256=" GOOD "\n",
	         (unsigned long long)st.size, (long long)st.mtime_ns,
	         (unsigned long long)st.ino + 1);
	write_text(beside, line);
	T_ERR(filehash_cached(file, NULL, hex, &where, NULL), ORCH_ENOTFOUND);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s%s", stamp, bad[i]);
		write_text(beside, line);
		T_ERR(filehash_cached(file, NULL, hex, &where, NULL), ORCH_ENOTFOUND);
	}
	write_text(beside, "garbage\n");
	T_ERR(filehash_cached(file, NULL, hex, &where, NULL), ORCH_ENOTFOUND);
	write_text(beside, "");
	T_ERR(filehash_cached(file, NULL, hex, &where, NULL), ORCH_ENOTFOUND);
	unlink(beside);
}

static void
test_fallback_dir(void)
{
	char hex[SHA256_HEX], got[SHA256_HEX];
	struct filehash_stamp st;
	enum filehash_where where;
	struct orch_errinfo e = {0};

	T_EQ(mkdir(beside, 0755), 0); /* FILE.sha256 cannot be written, even by root */
	T_OK(filehash_compute(file, hex, &st, NULL, &e));
	T_OK(filehash_store(file, cdir, true, &st, hex, &where, &e));
	T_EQ(where, FILEHASH_DIR);
	T_OK(filehash_cached(file, cdir, got, &where, &e));
	T_EQ(where, FILEHASH_DIR);
	T_STREQ(got, hex);
	T_ERR(filehash_cached(file, NULL, got, &where, &e), ORCH_ENOTFOUND);
	/* nowhere to go: the reason comes back */
	T_ERR(filehash_store(file, NULL, true, &st, hex, &where, &e), ORCH_EIO);
	T_EQ(where, FILEHASH_NOWHERE);
	T_TRUE(strstr(e.msg, "m.gguf.sha256") != NULL);
	T_ERR(filehash_store(file, "/nonexistent-dir", true, &st, hex, &where, &e), ORCH_EIO);
	T_TRUE(strstr(e.msg, "/nonexistent-dir/m.gguf.") != NULL);
	/* beside not wanted: the directory only */
	T_EQ(rmdir(beside), 0);
	T_OK(filehash_store(file, cdir, false, &st, hex, &where, &e));
	T_EQ(where, FILEHASH_DIR);
	T_EQ(access(beside, F_OK), -1);
}

static void
test_missing_file(void)
{
	char hex[SHA256_HEX];
	struct filehash_stamp st;
	enum filehash_where where;
	struct orch_errinfo e = {0};

	T_ERR(filehash_compute("/nonexistent/m.gguf", hex, &st, NULL, &e), ORCH_EIO);
	T_TRUE(strstr(e.msg, "/nonexistent/m.gguf") != NULL);
	T_ERR(filehash_cached("/nonexistent/m.gguf", NULL, hex, &where, &e), ORCH_EIO);
}

static void
test_stop(void)
{
	char hex[SHA256_HEX];
	struct filehash_stamp st;
	atomic_bool stop = true;

	T_ERR(filehash_compute(file, hex, &st, &stop, NULL), ORCH_ECANCELLED);
	atomic_store(&stop, false);
	T_OK(filehash_compute(file, hex, &st, &stop, NULL));
}

static void
test_oom(void)
{
	char hex[SHA256_HEX];
	struct filehash_stamp st;
	orch_err rv = ORCH_ENOMEM;

	for (long n = 0; rv == ORCH_ENOMEM && n < 10; n++) {
		alloc_fail_after(n, 1);
		rv = filehash_compute(file, hex, &st, NULL, NULL);
		alloc_fail_after(-1, 0);
	}
	T_OK(rv);
}

static void
cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	T_EQ(system(cmd), 0);
}

int
main(void)
{
	setup();
	T_RUN(test_compute_store_lookup);
	T_RUN(test_malformed_cache);
	T_RUN(test_fallback_dir);
	T_RUN(test_missing_file);
	T_RUN(test_stop);
	T_RUN(test_oom);
	cleanup();
	return t_done();
}
