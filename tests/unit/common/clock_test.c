/* clock_test.c - orch_mono_ns/ms never go back and agree; orch_unix_ms is Unix time. */
#include <time.h>

#include "clock.h"
#include "t.h"

static void
test_monotonic(void)
{
	uint64_t a = orch_mono_ns(), ms = orch_mono_ms(), b = orch_mono_ns();

	T_TRUE(b >= a);
	T_TRUE(ms >= a / 1000000u && ms <= b / 1000000u);
}

static void
test_unix(void)
{
	time_t before = time(NULL);
	uint64_t ms = orch_unix_ms();
	time_t after = time(NULL);

	T_TRUE(ms / 1000u >= (uint64_t)before && ms / 1000u <= (uint64_t)after);
}

int
main(void)
{
	T_RUN(test_monotonic);
	T_RUN(test_unix);
	return t_done();
}
