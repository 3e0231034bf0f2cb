/* clock_test.c - orch_mono_ns/ms never go back and agree; orch_unix_ms is Unix time;
 * orch_thread_cpu_ns counts this thread's work. */
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

/* A thread's CPU time grows with its work, never past the wall clock's. */
static void
test_thread_cpu(void)
{
	uint64_t c0 = orch_thread_cpu_ns(), w0 = orch_mono_ns();
	volatile uint64_t x = 0;

	while (orch_thread_cpu_ns() - c0 < 2000000u) /* 2 ms of work */
		x += 1;
	uint64_t c1 = orch_thread_cpu_ns(), w1 = orch_mono_ns();
	T_TRUE(x > 0);
	T_TRUE(c1 - c0 >= 2000000u && c1 - c0 <= w1 - w0 + 1000000u);
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
	T_RUN(test_thread_cpu);
	return t_done();
}
