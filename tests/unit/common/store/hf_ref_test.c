/*
 * hf_ref_test.c - Hugging Face references (hf_ref_parse: canonical forms and
 * every refusal) and the files a reference names in a repository listing
 * (hf_pick: a quant kind's one file or split set, never a projector, the
 * refusals that name what the repository has).
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "store/hf.h"
#include "t.h"

static void
test_parse(void)
{
	static const struct {
		const char *in, *canon, *repo, *quant, *path, *rev;
	} ok[] = {
	        {"hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF", "hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M",
	         "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "Q4_K_M", "", "main"},
	        {"hf:ggml-org/gpt-oss-20b-GGUF:mxfp4", "hf:ggml-org/gpt-oss-20b-GGUF:MXFP4",
	         "ggml-org/gpt-oss-20b-GGUF", "MXFP4", "", "main"},
	        {"hf:a/b:q8_0@v1.2", "hf:a/b:Q8_0@v1.2", "a/b", "Q8_0", "", "v1.2"},
	        {"hf:a/b/sub/m-Q4_0.gguf@main", "hf:a/b/sub/m-Q4_0.gguf", "a/b", "",
	         "sub/m-Q4_0.gguf", "main"},
	};
	static const char *const bad[] = {"a/b",
	                                  "hf:",
	                                  "hf:a",
	                                  "hf:/b",
	                                  "hf:a/",
	                                  "hf:.a/b",
	                                  "hf:a/b:",
	                                  "hf:a/b:Q4-K",
	                                  "hf:a/b/x.bin",
	                                  "hf:a/b/../c.gguf",
	                                  "hf:a/b/./c.gguf",
	                                  "hf:a/b@",
	                                  "hf:a/b@x/y",
	                                  "hf:a b/c",
	                                  "hf:a/b//c.gguf",
	                                  "hf:a/b.",
	                                  "hf:a/b-",
	                                  "hf:a/b--c"};
	struct hf_ref r;
	struct orch_errinfo e = {0};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		T_OK(hf_ref_parse(ok[i].in, &r, &e));
		T_STREQ(r.canon, ok[i].canon);
		T_STREQ(r.repo, ok[i].repo);
		T_STREQ(r.quant, ok[i].quant);
		T_STREQ(r.path, ok[i].path);
		T_STREQ(r.rev, ok[i].rev);
		char canon[sizeof(r.canon)];
		memcpy(canon, r.canon, sizeof(canon));
		T_OK(hf_ref_parse(canon, &r, &e)); /* the canonical form is its own */
		T_STREQ(r.canon, ok[i].canon);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		if (hf_ref_parse(bad[i], &r, &e) != ORCH_EINVAL || !e.msg[0])
			T_FAIL_("%s was not refused with a message", bad[i]);
	}
}

/* A listing of @paths (LFS files, sizes 1.., oids "aa..") plus a README. */
static cJSON *
listing(const char *const *paths, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	char oid[65];

	for (size_t i = 0; i < n; i++) {
		cJSON *f = cJSON_CreateObject(), *lfs = cJSON_AddObjectToObject(f, "lfs");
		cJSON_AddStringToObject(f, "type", "file");
		cJSON_AddStringToObject(f, "path", paths[i]);
		memset(oid, "0123456789abcdef"[i % 16], 64);
		oid[64] = '\0';
		cJSON_AddStringToObject(lfs, "oid", oid);
		cJSON_AddNumberToObject(lfs, "size", (double)(i + 1));
		cJSON_AddItemToArray(a, f);
	}
	cJSON *readme = cJSON_CreateObject();
	cJSON_AddStringToObject(readme, "type", "file");
	cJSON_AddStringToObject(readme, "path", "README.md");
	cJSON_AddItemToArray(a, readme);
	return a;
}

/* What @ref picks from @paths: "" and the message in @err when it fails. */
static void
pick(const char *ref, const char *const *paths, size_t n, char *out, size_t cap, char *err)
{
	struct hf_ref r;
	struct hf_file f[8];
	uint32_t k = 0;
	struct orch_errinfo e = {0};
	cJSON *l = listing(paths, n);

	out[0] = err[0] = '\0';
	if (hf_ref_parse(ref, &r, &e) == ORCH_OK && hf_pick(&r, l, f, 8, &k, &e) == ORCH_OK)
		for (uint32_t i = 0; i < k; i++)
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "",
			         f[i].path);
	else
		snprintf(err, 512, "%s", e.msg);
	cJSON_Delete(l);
}

static void
test_pick(void)
{
	static const char *const repo[] = {"qwen2.5-0.5b-instruct-q4_k_m.gguf",
	                                   "qwen2.5-0.5b-instruct-q4_k_s.gguf",
	                                   "qwen2.5-0.5b-instruct-q8_0.gguf",
	                                   "mmproj-qwen2.5-q8_0.gguf",
	                                   "big/m-Q6_K-00002-of-00002.gguf",
	                                   "big/m-Q6_K-00001-of-00002.gguf",
	                                   "m-Q5_K_M-00001-of-00003.gguf",
	                                   "m-Q5_K_M-00003-of-00003.gguf",
	                                   "x-Q4_0.gguf",
	                                   "y-Q4_0.gguf",
	                                   "nolfs-Q3_K_M.gguf"};
	char out[1024], err[512];
	size_t n = sizeof(repo) / sizeof(repo[0]);

	pick("hf:a/b", repo, n, out, sizeof(out), err); /* Q4_K_M by default, not Q4_K_S */
	T_STREQ(out, "qwen2.5-0.5b-instruct-q4_k_m.gguf");
	pick("hf:a/b:K_M", repo, n, out, sizeof(out), err); /* the whole label, not its end */
	T_STREQ(out, "");
	pick("hf:a/b:Q4_K", repo, n, out, sizeof(out), err);
	T_STREQ(out, "");
	pick("hf:a/b:Q8_0", repo, n, out, sizeof(out), err); /* never the projector */
	T_STREQ(out, "qwen2.5-0.5b-instruct-q8_0.gguf");
	pick("hf:a/b:q6_k", repo, n, out, sizeof(out), err); /* part 1 first */
	T_STREQ(out, "big/m-Q6_K-00001-of-00002.gguf big/m-Q6_K-00002-of-00002.gguf");
	pick("hf:a/b:Q5_K_M", repo, n, out, sizeof(out), err);
	T_STREQ(out, "");
	T_TRUE(strstr(err, "lacks part 2 of 3") != NULL);
	pick("hf:a/b:Q4_0", repo, n, out, sizeof(out), err);
	T_TRUE(strstr(err, "more than one Q4_0") != NULL && strstr(err, "x-Q4_0.gguf") != NULL);
	pick("hf:a/b:IQ2_XS", repo, n, out, sizeof(out), err);
	printf("missing quant: %s\n", err);
	T_TRUE(strstr(err, "no IQ2_XS GGUF") != NULL && strstr(err, "q4_k_m") != NULL &&
	       strstr(err, "Q6_K") != NULL && strstr(err, "mmproj") == NULL);
	pick("hf:a/b/x-Q4_0.gguf", repo, n, out, sizeof(out), err);
	T_STREQ(out, "x-Q4_0.gguf");
	pick("hf:a/b/none.gguf", repo, n, out, sizeof(out), err);
	T_TRUE(strstr(err, "has no file none.gguf") != NULL);
	/* a GGUF without an LFS SHA-256 cannot be checked: refused */
	cJSON *l = listing(repo, n);
	cJSON_DeleteItemFromObject(cJSON_GetArrayItem(l, 10), "lfs");
	struct hf_ref r;
	struct hf_file f[8];
	uint32_t k;
	struct orch_errinfo e = {0};
	T_OK(hf_ref_parse("hf:a/b:Q3_K_M", &r, NULL));
	T_ERR(hf_pick(&r, l, f, 8, &k, &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "not an LFS file") != NULL);
	cJSON_Delete(l);
}

int
main(void)
{
	T_RUN(test_parse);
	T_RUN(test_pick);
	return t_done();
}
