#pragma once
/*
 * log.h - one event per line, key=value, to stderr (STYLE.md rule 9).
 *
 * A line is "<N>event=NAME key=value..." with the sd-daemon level prefix, so
 * journald files it at the right priority; on a terminal (stderr a tty) it is
 * for people: no "<N>", "error: " or "warning: " before those levels' lines.
 * Library code logs only at debug level; its first caller logs a failure
 * once, with orch_log_err().
 */
#include <stdbool.h>
#include <stddef.h>

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

/*
 * orch_log_sink - called with every line written (level, then the line
 * without its "<N>" prefix and newline), after the write to stderr.
 */
typedef void (*orch_log_sink)(void *ctx, enum orch_log_level level, const char *line, size_t n);

/*
 * orch_log_set_sink - also hand every line to @fn (NULL: none). The sink may
 * run on any thread that logs and must not log itself. Thread: set and clear
 * it while no other thread logs (the worker: before and after its loop).
 */
void orch_log_set_sink(orch_log_sink fn, void *ctx);

/* orch_log_enabled - whether a line at @level would be written. */
bool orch_log_enabled(enum orch_log_level level);

/*
 * orch_log - write "<level>event=@event " followed by the formatted key=value
 * pairs and a newline, as one write(2) so lines from threads never interleave.
 * @fmt is fields separated by spaces, "key=VALUE" or "key=\"VALUE\"" (VALUE
 * any mix of text and conversions); each value is written by logfmt's rules:
 * bare when it is valid UTF-8 without spaces, '=', '"', '\' or control
 * characters, else quoted with those escaped (\" \\ \n \r \t \uXXXX) and
 * ill-formed bytes as \xNN. A value can never end the line or add a field.
 * Lines are cut at 2048 bytes (a quoted value stays closed). Thread: any.
 */
void orch_log(enum orch_log_level level, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/*
 * orch_log_err - log @event at error level with err=<WIRE> code=<NAME> and the
 * message of @info (may be NULL), then return @code: log and return in one line.
 */
orch_err orch_log_err(orch_err code, const struct orch_errinfo *info, const char *event,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * orch_log_fail - orch_log_err for a failure no client is answered with (a file of
 * the server's own: the keys, the config, the state): code=<NAME> and the message,
 * without the wire code a client would have seen (ORCH_EIO's is MODEL_LOAD_FAILED).
 */
orch_err orch_log_fail(orch_err code, const struct orch_errinfo *info, const char *event,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
