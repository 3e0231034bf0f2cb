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

static void
test_parse_double(void)
{
	double v = 42;

	T_OK(orch_parse_double("0.9", 0, 1, &v));
	T_TRUE(v == 0.9);
	T_OK(orch_parse_double(".5", 0, 1, &v));
	T_TRUE(v == 0.5);
	T_OK(orch_parse_double("1", 0, 1, &v));
	T_TRUE(v == 1.0);
	T_OK(orch_parse_double("5e-1", 0, 1, &v));
	T_TRUE(v == 0.5);
	v = 42;
	T_ERR(orch_parse_double("", 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("-0.5", -1, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("0x1p-1", 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("nan", 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("inf", 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("1e999", 0, 1e300, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("0.5 ", 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("0.5%", 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double(NULL, 0, 1, &v), ORCH_EINVAL);
	T_ERR(orch_parse_double("1.5", 0, 1, &v), ORCH_ERANGE);
	T_EQ((int)v, 42);
}

int
main(void)
{
	T_RUN(test_parse_u64);
	T_RUN(test_parse_double);
	return t_done();
}
