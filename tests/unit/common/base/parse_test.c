/* parse_test.c - orch_parse_u64: accepted forms, refusals, bounds, untouched output. */
#include "base/parse.h"
#include "t.h"

static void
test_parse_u64(void)
{
	uint64_t v = 42;

	T_OK(orch_parse_u64("0", 0, 10, &v));
	T_EQ(v, 0);
	T_OK(orch_parse_u64("18446744073709551615", 0, UINT64_MAX, &v));
	T_TRUE(v == UINT64_MAX);
	T_OK(orch_parse_u64("0x10", 0, 100, &v));
	T_EQ(v, 16);
	v = 42;
	T_ERR(orch_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), ORCH_EINVAL);
	T_ERR(orch_parse_u64("", 0, 10, &v), ORCH_EINVAL);
	T_ERR(orch_parse_u64("-1", 0, 10, &v), ORCH_EINVAL);
	T_ERR(orch_parse_u64(" 1", 0, 10, &v), ORCH_EINVAL);
	T_ERR(orch_parse_u64("1x", 0, 10, &v), ORCH_EINVAL);
	T_ERR(orch_parse_u64(NULL, 0, 10, &v), ORCH_EINVAL);
	T_ERR(orch_parse_u64("0", 1, 10, &v), ORCH_ERANGE);
	T_ERR(orch_parse_u64("11", 1, 10, &v), ORCH_ERANGE);
	T_EQ(v, 42);
}

int
main(void)
{
	T_RUN(test_parse_u64);
	return t_done();
}
