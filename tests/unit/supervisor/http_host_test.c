/* http_host_test.c - the Host allow-list: defaults per listen address, lists, syntax. */
#include <string.h>

#include "http_host.h"
#include "t.h"

static orch_err
chk(const struct http_hosts *h, const char *v)
{
	return http_hosts_check(h, v, strlen(v));
}

/* On loopback: the loopback names and the listen address, any port; nothing else. */
static void
test_loopback_default(void)
{
	static const char *const ok[] = {"127.0.0.1",   "127.0.0.1:8080", "localhost",
	                                 "LocalHost:9", "[::1]",          "[::1]:8080"};
	static const char *const no[] = {"rebind.invalid", "rebind.invalid:8080", "10.0.0.1",
	                                 "127.0.0.2",      "localhost.",          "[::2]"};
	struct http_hosts h;

	T_OK(http_hosts_init(&h, "", "127.0.0.1:8080", NULL));
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (chk(&h, ok[i]) != ORCH_OK)
			T_FAIL_("'%s' refused", ok[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (chk(&h, no[i]) != ORCH_EMISDIRECTED)
			T_FAIL_("'%s' not refused", no[i]);
	T_OK(http_hosts_init(&h, "", "127.0.0.2:80", NULL)); /* the listen host joins */
	T_OK(chk(&h, "127.0.0.2"));
	T_OK(http_hosts_init(&h, "  ", "localhost:80", NULL));
	T_ERR(chk(&h, "10.1.2.3"), ORCH_EMISDIRECTED);
}

/* Elsewhere: any IP literal, localhost and the listen host; names refused. */
static void
test_other_default(void)
{
	struct http_hosts h;

	T_OK(http_hosts_init(&h, "", "0.0.0.0:8080", NULL));
	T_OK(chk(&h, "10.1.2.3:8080"));
	T_OK(chk(&h, "[fe80::1]"));
	T_OK(chk(&h, "localhost"));
	T_ERR(chk(&h, "rebind.invalid"), ORCH_EMISDIRECTED);
	T_OK(http_hosts_init(&h, "", "gpu-box.lan:8080", NULL));
	T_OK(chk(&h, "GPU-box.lan:8080"));
	T_ERR(chk(&h, "other.lan"), ORCH_EMISDIRECTED);
}

static void
test_lists(void)
{
	struct http_hosts h;
	struct orch_errinfo e = {0};

	T_OK(http_hosts_init(&h, "api.internal, 10.0.0.5:8080 [::1]", "0.0.0.0:8080", NULL));
	T_EQ(h.n, 3);
	T_OK(chk(&h, "API.internal:443"));
	T_OK(chk(&h, "10.0.0.5:8080"));
	T_ERR(chk(&h, "10.0.0.5:8081"), ORCH_EMISDIRECTED);
	T_ERR(chk(&h, "10.0.0.6"), ORCH_EMISDIRECTED); /* a list: no literals by default */
	T_ERR(chk(&h, "localhost"), ORCH_EMISDIRECTED);
	T_OK(http_hosts_init(&h, "*", "127.0.0.1:1", NULL));
	T_OK(chk(&h, "anything.invalid"));
	T_ERR(chk(&h, "bad host"), ORCH_EINVAL);
	T_ERR(http_hosts_init(&h, "a,b/c", "127.0.0.1:1", &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "'b/c'") != NULL);
	T_ERR(http_hosts_init(&h, "[zz]", "127.0.0.1:1", &e), ORCH_EINVAL);
	T_ERR(http_hosts_init(&h, "a:99999", "127.0.0.1:1", &e), ORCH_EINVAL);
	T_ERR(http_hosts_init(&h, "a b c d e f g h i j k l m n o p q", "127.0.0.1:1", &e),
	      ORCH_EINVAL);
}

/* Host values that are not host[:port]. */
static void
test_syntax(void)
{
	static const char *const bad[] = {"",        ":80",    "a:",      "a:8x",  "[::1",
	                                  "[::1]x",  "[::1]:", "a b",     "a/b",   "a@b",
	                                  "[1.2.3]", "a:1:2",  "a:65536", "[::1]]"};
	struct http_hosts h;

	T_OK(http_hosts_init(&h, "*", "127.0.0.1:1", NULL));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (chk(&h, bad[i]) != ORCH_EINVAL)
			T_FAIL_("'%s' taken as a host", bad[i]);
	T_TRUE(http_hosts_loopback("127.9.9.9"));
	T_TRUE(http_hosts_loopback("[::1]"));
	T_TRUE(!http_hosts_loopback("0.0.0.0"));
	T_TRUE(!http_hosts_loopback("[::]"));
}

int
main(void)
{
	T_RUN(test_loopback_default);
	T_RUN(test_other_default);
	T_RUN(test_lists);
	T_RUN(test_syntax);
	return t_done();
}
