#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Log settings are the one mutable global STYLE.md rule 6 allows. */
static enum orch_log_level log_level = ORCH_LOG_INFO;
static orch_log_sink log_sink;
static void *log_sink_ctx;

void
orch_log_set_sink(orch_log_sink fn, void *ctx)
{
	log_sink = fn;
	log_sink_ctx = ctx;
}

void
orch_log_set_level(enum orch_log_level level)
{
	log_level = level;
}

bool
orch_log_enabled(enum orch_log_level level)
{
	return level <= log_level;
}

static void log_emit(enum orch_log_level level, const char *event, const char *extra,
                     const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

static void
log_emit(enum orch_log_level level, const char *event, const char *extra, const char *fmt,
         va_list ap)
{
	char line[2048];
	size_t n;
	int rv;

	rv = snprintf(line, sizeof(line), "<%d>event=%s%s%s", (int)level, event, extra ? " " : "",
	              extra ? extra : "");
	n = rv < 0 ? 0 : (size_t)rv;
	if (fmt != NULL && fmt[0] != '\0' && n + 1 < sizeof(line)) {
		line[n++] = ' ';
		rv = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		n += rv < 0 ? 0 : (size_t)rv;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line; a short write to stderr is not worth a retry loop. */
	ssize_t wr = write(STDERR_FILENO, line, n);
	(void)wr;
	if (log_sink != NULL) {
		const char *gt = memchr(line, '>', n); /* the end of the "<N>" prefix */
		size_t skip = gt != NULL ? (size_t)(gt - line) + 1 : 0;
		if (n - 1 > skip)
			log_sink(log_sink_ctx, level, line + skip, n - 1 - skip);
	}
}

void
orch_log(enum orch_log_level level, const char *event, const char *fmt, ...)
{
	va_list ap;

	if (!orch_log_enabled(level))
		return;
	va_start(ap, fmt);
	log_emit(level, event, NULL, fmt, ap);
	va_end(ap);
}

orch_err
orch_log_err(orch_err code, const struct orch_errinfo *info, const char *event, const char *fmt,
             ...)
{
	char extra[768];
	va_list ap;

	if (!orch_log_enabled(ORCH_LOG_ERR))
		return code;
	snprintf(extra, sizeof(extra), "err=%s code=%s%s%s%s", orch_err_wire(code),
	         orch_err_name(code), info ? " msg=\"" : "", info ? info->msg : "",
	         info ? "\"" : "");
	va_start(ap, fmt);
	log_emit(ORCH_LOG_ERR, event, extra, fmt, ap);
	va_end(ap);
	return code;
}
