/* clock_test.c - orch_mono_ns/ms never go back and agree; orch_unix_ms is Unix time. */
#include <time.h>

#include "base/clock.h"
#include "t.h"

static void
test_monotonic(void)
{
	uint64_t a = orch_mono_ns(), ms = orch_mono_ms(), b = orch_mono_ns();

	T_TRUE(b >= a);
	T_TRUE(ms >= a / 1000000u && ms <= b / 1000000u);
}

/* Unix seconds from the precise clock: time() reads a coarse one that can lag it by a tick. */
static uint64_t
unix_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

static void
test_unix(void)
{
	uint64_t before = unix_s();
	uint64_t ms = orch_unix_ms();
	uint64_t after = unix_s();

	T_TRUE(ms / 1000u >= before && ms / 1000u <= after);
}

int
main(void)
{
	T_RUN(test_monotonic);
	T_RUN(test_unix);
	return t_done();
}
