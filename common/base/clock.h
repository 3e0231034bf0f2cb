#pragma once
/*
 * clock.h - the two clocks orch reads: CLOCK_MONOTONIC for durations and
 * deadlines, CLOCK_REALTIME for timestamps others see (Unix time).
 */
#include <stdint.h>

/* orch_mono_ns, orch_mono_ms - CLOCK_MONOTONIC in nanoseconds, milliseconds. */
uint64_t orch_mono_ns(void);

/* orch_thread_cpu_ns - the CPU time the calling thread has used, in nanoseconds. */
uint64_t orch_thread_cpu_ns(void);
uint64_t orch_mono_ms(void);

/* orch_unix_ms - CLOCK_REALTIME: milliseconds since the Unix epoch. */
uint64_t orch_unix_ms(void);
