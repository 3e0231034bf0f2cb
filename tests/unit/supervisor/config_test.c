/* config_test.c - orchd's configuration: the file, keys, bad input with exact codes. */
#include <stdio.h>
#include <unistd.h>

#include "config.h"
#include "t.h"

static char path[64];

static orch_err
load_text(struct orchd_config *c, const char *text, struct orch_errinfo *e)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/orchd-config-test-%d.conf", (int)getpid());
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	cfg_defaults(c);
	orch_err rv = cfg_load(c, path, e);
	unlink(path);
	return rv;
}

static void
test_good(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	T_OK(load_text(&c,
	               "[server]\nlisten = 127.0.0.1:9000\nmax_queue = 7\n"
	               "[model \"tiny\"]\npath = /m.gguf\nslots = 3\n",
	               &e));
	T_STREQ(c.listen, "127.0.0.1:9000");
	T_EQ(c.max_queue, 7);
	T_EQ(c.n_models, 1);
	T_STREQ(c.models[0].name, "tiny");
	T_EQ(c.models[0].slots, 3);
	T_TRUE(cfg_model_find(&c, "tiny") == &c.models[0]);
	T_TRUE(cfg_model_find(&c, "nope") == NULL);
	T_OK(cfg_check(&c, &e));
	cfg_free(&c);
}

static void
test_bad(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	T_ERR(load_text(&c, "[server]\nno_such_key = 1\n", &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, ":2") != NULL); /* names the line */
	cfg_free(&c);
	T_ERR(load_text(&c, "[nonsense]\nx = 1\n", &e), ORCH_EINVAL);
	cfg_free(&c);
	T_ERR(load_text(&c, "[server]\nmax_queue = lots\n", &e), ORCH_EINVAL);
	cfg_free(&c);
	cfg_defaults(&c);
	T_ERR(cfg_load(&c, "/nonexistent/orchd.conf", &e), ORCH_EIO);
	T_ERR(cfg_set(&c, "server", "listen", "no-port", &e), ORCH_EINVAL);
	T_OK(cfg_set(&c, "server", "listen", "0.0.0.0:80", &e));
	T_STREQ(c.listen, "0.0.0.0:80");
	cfg_free(&c);
}

/* The health keys (issue 15): defaults, good values, each bad value naming its key. */
static void
test_health_keys(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	cfg_defaults(&c);
	T_EQ(c.residency_check_s, 60);
	T_EQ(c.unhealthy_drain_s, 30);
	T_TRUE(!c.hash_cache_beside); /* a model's folder is left as found (issue 62) */
	T_OK(load_text(&c,
	               "[server]\nresidency_check_s = 1\nunhealthy_drain_s = 5\n"
	               "hash_cache_beside = yes\n",
	               &e));
	T_EQ(c.residency_check_s, 1);
	T_EQ(c.unhealthy_drain_s, 5);
	T_TRUE(c.hash_cache_beside);
	cfg_free(&c);
	static const char *const bad[][2] = {
	        {"[server]\nresidency_check_s = 0\n", "residency_check_s"},
	        {"[server]\nresidency_check_s = 86401\n", "residency_check_s"},
	        {"[server]\nunhealthy_drain_s = 0\n", "unhealthy_drain_s"},
	        {"[server]\nunhealthy_drain_s = soon\n", "unhealthy_drain_s"},
	        {"[server]\nhash_cache_beside = maybe\n", "hash_cache_beside"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_ERR(load_text(&c, bad[i][0], &e), ORCH_EINVAL);
		T_TRUE(strstr(e.msg, bad[i][1]) != NULL && strstr(e.msg, ":2") != NULL);
		cfg_free(&c);
	}
}

/* Retention of finished jobs (issue 16): defaults 1000 jobs / 64 MiB, 0 allowed, bad values named.
 */
static void
test_retention_keys(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	cfg_defaults(&c);
	T_EQ(c.events_keep_jobs, 1000);
	T_EQ(c.events_keep_bytes, 64ull << 20);
	T_OK(load_text(&c, "[server]\nevents_keep_jobs = 3\nevents_keep_mib = 2\n", &e));
	T_EQ(c.events_keep_jobs, 3);
	T_EQ(c.events_keep_bytes, 2ull << 20);
	cfg_free(&c);
	T_OK(load_text(&c, "[server]\nevents_keep_jobs = 0\nevents_keep_mib = 0\n", &e));
	T_EQ(c.events_keep_jobs, 0);
	T_EQ(c.events_keep_bytes, 0);
	cfg_free(&c);
	static const char *const bad[][2] = {
	        {"[server]\nevents_keep_jobs = -1\n", "events_keep_jobs"},
	        {"[server]\nevents_keep_jobs = 1000001\n", "events_keep_jobs"},
	        {"[server]\nevents_keep_mib = lots\n", "events_keep_mib"},
	        {"[server]\nevents_keep_mib = 1048577\n", "events_keep_mib"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_ERR(load_text(&c, bad[i][0], &e), ORCH_EINVAL);
		T_TRUE(strstr(e.msg, bad[i][1]) != NULL && strstr(e.msg, ":2") != NULL);
		cfg_free(&c);
	}
}

static void
test_models(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};
	struct cfg_model *m;

	cfg_defaults(&c);
	T_OK(cfg_model_add(&c, "a", &m, &e));
	T_ERR(cfg_model_add(&c, "a", &m, &e), ORCH_EINVAL); /* duplicate */
	T_ERR(cfg_model_add(&c, "", &m, &e), ORCH_EINVAL);
	T_ERR(cfg_check(&c, &e), ORCH_EINVAL); /* a model without a path */
	cfg_free(&c);
}

/* connection limits and HTTP strictness (issue 16): defaults, values, refusals */
static void
test_edge(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	cfg_defaults(&c);
	T_EQ(c.max_connections, 4096);
	T_EQ(c.max_connections_per_client, 1024);
	T_EQ(c.header_timeout_s, 10);
	T_EQ(c.body_timeout_s, 60);
	T_EQ(c.keepalive_timeout_s, 15);
	T_STREQ(c.allowed_hosts, "");
	T_OK(load_text(&c,
	               "[server]\nmax_connections_per_client = 8\nheader_timeout_s = 2\n"
	               "body_timeout_s = 3\nkeepalive_timeout_s = 4\n"
	               "allowed_hosts = api.internal, 10.0.0.5:8080 [::1]\n",
	               &e));
	T_EQ(c.max_connections_per_client, 8);
	T_EQ(c.header_timeout_s, 2);
	T_EQ(c.body_timeout_s, 3);
	T_EQ(c.keepalive_timeout_s, 4);
	T_STREQ(c.allowed_hosts, "api.internal, 10.0.0.5:8080 [::1]");
	cfg_free(&c);
	T_ERR(load_text(&c, "[server]\nheader_timeout_s = 0\n", &e), ORCH_EINVAL);
	cfg_free(&c);
	T_ERR(load_text(&c, "[server]\nmax_connections_per_client = 0\n", &e), ORCH_EINVAL);
	cfg_free(&c);
	T_ERR(load_text(&c, "[server]\nallowed_hosts = a/b\n", &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, ":2") != NULL && strstr(e.msg, "'a/b'") != NULL);
	cfg_free(&c);
	T_OK(load_text(&c, "[server]\nallowed_hosts = *\n", &e));
	cfg_free(&c);
}

/* cors_origins and access_log (issue 18): CORS off and the log on by default */
static void
test_cors(void)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	cfg_defaults(&c);
	T_STREQ(c.cors_origins, "");
	T_TRUE(c.access_log);
	T_OK(load_text(&c, "[server]\naccess_log = no\n", &e));
	T_TRUE(!c.access_log);
	cfg_free(&c);
	T_OK(load_text(&c, "[server]\ncors_origins = http://localhost:5173, https://ui.internal\n",
	               &e));
	T_STREQ(c.cors_origins, "http://localhost:5173, https://ui.internal");
	cfg_free(&c);
	T_ERR(load_text(&c, "[server]\ncors_origins = https://ui.internal/app\n", &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, ":2") != NULL && strstr(e.msg, "'https://ui.internal/app'") != NULL);
	cfg_free(&c);
	T_OK(load_text(&c, "[server]\ncors_origins = *\n", &e));
	cfg_free(&c);
}

int
main(void)
{
	T_RUN(test_good);
	T_RUN(test_bad);
	T_RUN(test_health_keys);
	T_RUN(test_retention_keys);
	T_RUN(test_models);
	T_RUN(test_edge);
	T_RUN(test_cors);
	return t_done();
}
