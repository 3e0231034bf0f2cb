#pragma once
/*
 * log.h - one event per line, key=value, to stderr (STYLE.md rule 9).
 *
 * A line is "<N>event=NAME key=value..." with the sd-daemon level prefix, so
 * journald files it at the right priority. Library code logs only at debug
 * level; its first caller logs a failure once, with orch_log_err().
 */
#include <stdbool.h>

#include "err.h"

#ifdef __cplusplus
extern "C" {
#endif

enum orch_log_level {
	ORCH_LOG_ERR = 3,
	ORCH_LOG_WARNING = 4,
	ORCH_LOG_NOTICE = 5,
	ORCH_LOG_INFO = 6,
	ORCH_LOG_DEBUG = 7,
};

/* orch_log_set_level - lines above @level are dropped (default INFO). Thread: before threads start.
 */
void orch_log_set_level(enum orch_log_level level);

/* orch_log_enabled - whether a line at @level would be written. */
bool orch_log_enabled(enum orch_log_level level);

/*
 * orch_log - write "<level>event=@event " followed by the formatted key=value
 * pairs and a newline, as one write(2) so lines from threads never interleave.
 * Thread: any.
 */
void orch_log(enum orch_log_level level, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/*
 * orch_log_err - log @event at error level with err=<WIRE> code=<NAME> and the
 * message of @info (may be NULL), then return @code: log and return in one line.
 */
orch_err orch_log_err(orch_err code, const struct orch_errinfo *info, const char *event,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
