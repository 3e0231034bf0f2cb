/*
 * keys_test.c - the public API's keys (issue 16): a keys file without a key
 * is an error (keys fail closed), bad lines name their line and never the
 * key, "Bearer" in any case, allow-lists, and SIGHUP's reload: a revoked key
 * stops working, a bad or empty file keeps the keys in force.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "t.h"

#define K1 "k1-0123456789abcdef"
#define K2 "k2-0123456789abcdef"
#define K3 "k3-0123456789abcdef"

static orch_err
parse(const char *text, struct api_keys *ks, struct orch_errinfo *e)
{
	return keys_parse("keys", text, strlen(text), ks, e);
}

static void
test_parse(void)
{
	struct api_keys ks;
	struct orch_errinfo e = {0};

	T_ERR(parse("", &ks, &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "no key") != NULL);
	T_ERR(parse("# only a comment\n\n   \n\t# another\n", &ks, &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "no key") != NULL);
	T_EQ(ks.n, 0);
	T_OK(parse("# keys\n" K1 "\r\n  " K2 "   models=a,b-1.q:8  \n\n" K3 "\tmodels=c\n", &ks,
	           &e));
	T_EQ(ks.n, 3);
	T_TRUE(ks.v[0].models == NULL);
	T_EQ(ks.v[1].n_models, 2);
	T_STREQ(ks.v[1].models[1], "b-1.q:8");
	T_EQ(ks.v[2].line, 5);
	keys_free(&ks);
	T_EQ(ks.n, 0);
	/* bad lines: the line's number and why, never the key */
	static const struct {
		const char *text, *why;
	} bad[] = {
	        {K1 "\nshort\n", "keys:2: a key is 16-512"},
	        {K1 "\n" K2 " name=x\n", "keys:2: after the key, only models="},
	        {K1 " models=\n", "keys:1: models= wants"},
	        {K1 " models=a,,b\n", "keys:1: models= wants"},
	        {K1 " models=a/b\n", "keys:1: models= wants"},
	        {K1 " models=a models=b\n", "keys:1: models= is given twice"},
	        {K1 "\n#\n" K1 " models=a\n", "keys:3: the key of line 1 again"},
	        {"k1-0123456789abc\xc3\xa9\n", "keys:1: a key is visible ASCII"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_ERR(parse(bad[i].text, &ks, &e), ORCH_EINVAL);
		if (strncmp(e.msg, bad[i].why, strlen(bad[i].why)) != 0)
			T_STREQ(e.msg, bad[i].why);
		T_TRUE(strstr(e.msg, "0123456789") == NULL);
		T_EQ(ks.n, 0);
	}
}

static void
test_bearer(void)
{
	static const char *const good[] = {"Bearer " K1, "bearer " K1, "BEARER\t" K1,
	                                   "  Bearer   " K1 "  ", "bEaReR " K1};
	static const char *const bad[] = {NULL,        "",          "Bearer",          "Bearer ",
	                                  "Bearer" K1, "Basic " K1, "Bearer " K1 " x", K1,
	                                  "Bearer " K2};
	struct api_keys ks;
	struct orch_errinfo e = {0};
	const char *tok;
	size_t n;

	T_OK(parse(K1 "\n" K3 " models=a\n", &ks, &e));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		T_TRUE(keys_bearer(good[i], &tok, &n));
		T_EQ(n, strlen(K1));
		T_TRUE(keys_check(&ks, good[i]) == &ks.v[0]);
		T_TRUE(keys_token_equal(good[i], K1));
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_TRUE(keys_check(&ks, bad[i]) == NULL);
		T_TRUE(!keys_token_equal(bad[i], K1));
	}
	T_TRUE(!keys_token_equal("Bearer " K1, ""));
	const struct api_key *k3 = keys_check(&ks, "Bearer " K3);
	T_TRUE(k3 == &ks.v[1]);
	T_TRUE(keys_model_ok(k3, "a") && !keys_model_ok(k3, "b") && !keys_model_ok(k3, "aa"));
	T_TRUE(keys_model_ok(&ks.v[0], "anything") && keys_model_ok(NULL, "anything"));
	keys_free(&ks);
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* The file at start and on SIGHUP. */
static void
test_reload(void)
{
	char path[] = "/tmp/keys_test.XXXXXX";
	int fd = mkstemp(path);
	struct api_keys ks;
	struct orch_errinfo e = {0};

	T_TRUE(fd >= 0);
	close(fd);
	T_ERR(keys_load(path, &ks, &e), ORCH_EINVAL); /* empty */
	T_ERR(keys_load("/nonexistent/keys", &ks, &e), ORCH_EIO);
	write_file(path, K1 "\n" K2 "\n");
	T_OK(keys_load(path, &ks, &e));
	T_TRUE(keys_check(&ks, "Bearer " K2) != NULL);
	write_file(path, K1 "\n"); /* K2 revoked */
	T_OK(keys_reload(&ks, path));
	T_EQ(ks.n, 1);
	T_TRUE(keys_check(&ks, "Bearer " K2) == NULL);
	T_TRUE(keys_check(&ks, "Bearer " K1) != NULL);
	write_file(path, "# every key gone\n"); /* would leave no key: the old set stays */
	T_ERR(keys_reload(&ks, path), ORCH_EINVAL);
	T_EQ(ks.n, 1);
	T_TRUE(keys_check(&ks, "Bearer " K1) != NULL);
	write_file(path, K3 " models=\n"); /* a bad line: the same */
	T_ERR(keys_reload(&ks, path), ORCH_EINVAL);
	T_TRUE(keys_check(&ks, "Bearer " K1) != NULL);
	unlink(path); /* unreadable: the same */
	T_ERR(keys_reload(&ks, path), ORCH_EIO);
	T_TRUE(keys_check(&ks, "Bearer " K1) != NULL);
	keys_free(&ks);
}

int
main(void)
{
	T_RUN(test_parse);
	T_RUN(test_bearer);
	T_RUN(test_reload);
	return t_done();
}
