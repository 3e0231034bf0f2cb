/* err_test.c - every error code has a name, a wire code, an HTTP status and a proto value. */
#include "t.h"

static void
test_table_complete(void)
{
	for (int c = 0; c < ORCH_ERR_COUNT; c++) {
		if (strcmp(orch_err_name((orch_err)c), "ORCH_E?") == 0)
			T_FAIL_("code %d has no name in common/base/err.c", c);
		if (c > 0 && strcmp(orch_err_wire((orch_err)c), "OK") == 0)
			T_FAIL_("code %d maps to wire OK", c);
		if (c > 0 && orch_err_http((orch_err)c) < 400)
			T_FAIL_("code %d has HTTP status %d", c, orch_err_http((orch_err)c));
	}
	T_STREQ(orch_err_name(ORCH_ERR_COUNT), "ORCH_E?");
	T_STREQ(orch_err_wire(ORCH_EVRAM), "VRAM_OOM");
	T_STREQ(orch_err_wire(ORCH_ETEMPLATE_RAISE), "INVALID_REQUEST");
	T_EQ(orch_err_http(ORCH_EQUEUE_FULL), 429);
	T_TRUE(orch_err_retriable(ORCH_EWORKER_LOST));
	T_TRUE(!orch_err_retriable(ORCH_EINVAL));
	T_EQ(orch_err_proto(ORCH_OK), 0);
	T_EQ(orch_err_http(ORCH_ELENGTH_REQUIRED), 411);
	T_EQ(orch_err_http(ORCH_ETOO_LARGE), 413);
	T_EQ(orch_err_http(ORCH_EMEDIA_TYPE), 415);
	T_EQ(orch_err_http(ORCH_EMISDIRECTED), 421);
	T_EQ(orch_err_http(ORCH_EHEADERS_TOO_LARGE), 431);
	T_STREQ(orch_err_wire(ORCH_EMEDIA_TYPE), "UNSUPPORTED_MEDIA_TYPE");
	T_EQ(orch_err_proto(ORCH_EHEADERS_TOO_LARGE), 21);
	T_EQ(orch_err_of_proto(21), ORCH_EHEADERS_TOO_LARGE);
	T_EQ(orch_err_of_proto(orch_err_proto(ORCH_EWORKER_LOST)), ORCH_EWORKER_LOST);
	T_EQ(orch_err_of_proto(-1), ORCH_EINTERNAL);
	T_EQ(orch_err_http(ORCH_EMETHOD), 405);
	T_EQ(orch_err_http(ORCH_ENOT_IMPLEMENTED), 501);
	T_EQ(orch_err_http(ORCH_EEXPECTATION), 417);
	T_STREQ(orch_err_wire(ORCH_EMETHOD), "METHOD_NOT_ALLOWED");
	T_STREQ(orch_err_wire(ORCH_ENOT_IMPLEMENTED), "NOT_IMPLEMENTED");
	T_STREQ(orch_err_wire(ORCH_EEXPECTATION), "EXPECTATION_FAILED");
	T_EQ(orch_err_proto(ORCH_EEXPECTATION), 24);
	T_TRUE(orch_err_proto(ORCH_EGGUF_MAGIC) == orch_err_proto(ORCH_EMODEL_LOAD));
}

static void
test_errf(void)
{
	struct orch_errinfo e = {0};

	T_ERR(orch_errf(&e, ORCH_EIO, "x=%d", 5), ORCH_EIO);
	T_STREQ(e.msg, "x=5");
	T_EQ(e.code, ORCH_EIO);
	T_ERR(orch_errf(NULL, ORCH_EINVAL, "ignored"), ORCH_EINVAL);
}

int
main(void)
{
	T_RUN(test_table_complete);
	T_RUN(test_errf);
	return t_done();
}
