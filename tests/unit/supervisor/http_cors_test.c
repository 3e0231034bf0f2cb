/* http_cors_test.c - the CORS origin list: off, "*", lists, the forms an origin takes. */
#include <string.h>

#include "http_cors.h"
#include "t.h"

/* Off: no origin is let in, whatever it is. */
static void
test_off(void)
{
	struct http_cors c;

	T_OK(http_cors_init(&c, "", NULL));
	T_TRUE(!c.on);
	T_TRUE(http_cors_allow(&c, "http://localhost:5173") == NULL);
	T_TRUE(http_cors_allow(&c, NULL) == NULL);
	T_OK(http_cors_init(&c, " , ", NULL));
	T_TRUE(!c.on);
}

/* "*": any Origin gets "*"; a request without one gets nothing. */
static void
test_any(void)
{
	struct http_cors c;

	T_OK(http_cors_init(&c, "*", NULL));
	T_TRUE(c.on && c.any);
	T_STREQ(http_cors_allow(&c, "https://anything.invalid"), "*");
	T_STREQ(http_cors_allow(&c, "null"), "*");
	T_TRUE(http_cors_allow(&c, NULL) == NULL);
}

/* A list: the listed origins, echoed as sent; case and default ports do not matter. */
static void
test_list(void)
{
	static const char *const ok[] = {"http://localhost:5173", "HTTP://LocalHost:5173",
	                                 "https://ui.internal",   "https://ui.internal:443",
	                                 "http://[::1]:8000",     "http://10.0.0.5"};
	static const char *const no[] = {"http://localhost:5174",
	                                 "https://localhost:5173",
	                                 "http://ui.internal",
	                                 "https://ui.internal.evil.invalid",
	                                 "null",
	                                 "http://localhost:5173/",
	                                 "",
	                                 "http://10.0.0.5:8080"};
	struct http_cors c;

	T_OK(http_cors_init(&c,
	                    "http://localhost:5173, https://UI.internal:443 http://[::1]:8000,"
	                    "http://10.0.0.5:80",
	                    NULL));
	T_EQ(c.n, 4);
	T_STREQ(c.origin[1], "https://ui.internal");
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (http_cors_allow(&c, ok[i]) != ok[i])
			T_FAIL_("'%s' not let in", ok[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (http_cors_allow(&c, no[i]) != NULL)
			T_FAIL_("'%s' let in", no[i]);
}

/* What is not an origin is refused, naming it. */
static void
test_bad(void)
{
	static const char *const bad[] = {
	        "localhost:5173",
	        "ftp://files.invalid",
	        "https://ui.internal/",
	        "https://ui.internal/x",
	        "http://",
	        "http://a:0",
	        "http://a:65536",
	        "http://a:1x",
	        "http://[::1",
	        "http://a b",
	        "*, http://a",
	        "http://user@a",
	};
	struct http_cors c;
	struct orch_errinfo e = {0};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (http_cors_init(&c, bad[i], &e) != ORCH_EINVAL)
			T_FAIL_("'%s' taken", bad[i]);
	T_ERR(http_cors_init(&c, "https://ui.internal/x", &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "'https://ui.internal/x'") != NULL);
	T_ERR(http_cors_init(
	              &c,
	              "http://a1 http://a2 http://a3 http://a4 http://a5 http://a6 http://a7 "
	              "http://a8 http://a9 http://b1 http://b2 http://b3 http://b4 http://b5 "
	              "http://b6 http://b7 http://b8",
	              &e),
	      ORCH_EINVAL);
}

int
main(void)
{
	T_RUN(test_off);
	T_RUN(test_any);
	T_RUN(test_list);
	T_RUN(test_bad);
	return t_done();
}
