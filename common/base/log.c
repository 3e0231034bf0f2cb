/*
 * log.c - one event per line, key=value, to stderr (log.h).
 *
 * Design notes: the caller's printf format is read field by field (a field
 * is what lies between unquoted spaces: "key=VALUE" or a bare word), and
 * each field's value is put together from the format's literal text and its
 * conversions, then written by logfmt's rules: as it is when it is valid
 * UTF-8 without spaces, '=', '"', '\' or control characters; otherwise in
 * double quotes with '"', '\' and control characters escaped and each byte
 * of ill-formed UTF-8 written as \xNN. A value the format quotes itself
 * (key=\"%s\") is always quoted, never doubled. So no value, whatever its
 * bytes, can end its line, start another field or fake a level prefix:
 * every caller is covered here, once. The format's own text is trusted.
 */
#include "log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "utf8.h"

#define LOG_LINE_MAX 2048

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

/* Bytes being put together; what does not fit is dropped, whole units at a time. */
struct buf {
	char p[LOG_LINE_MAX];
	size_t n;
	size_t reserve; /* kept free for a closing quote and the newline */
	bool full;      /* something did not fit: nothing more goes in */
};

static void
put(struct buf *b, const void *s, size_t k)
{
	if (b->full || b->n + k + b->reserve > sizeof(b->p)) {
		b->full = true;
		return;
	}
	memcpy(b->p + b->n, s, k);
	b->n += k;
}

/* Whether a code point is written escaped: C0, DEL, C1 and the Unicode line separators. */
static bool
control(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 ||
	       cp == 0x2029;
}

/* Whether @n bytes at @s may stand unquoted. */
static bool
plain(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f)
			return false;
	}
	for (size_t i = 0, len; i < n; i += len) {
		uint32_t cp = 0;
		if (utf8_next((const uint8_t *)s + i, n - i, &cp, &len) != UTF8_OK || control(cp))
			return false;
	}
	return true;
}

/* @n bytes at @s, quoted and escaped, onto @b. */
static void
put_quoted(struct buf *b, const char *s, size_t n)
{
	char esc[16];
	size_t open = b->n;

	put(b, "\"", 1);
	if (b->n == open)
		return;
	b->reserve += 1; /* the closing quote always fits */
	for (size_t i = 0, len; i < n; i += len) {
		uint32_t cp = 0;
		const char *c = s + i;
		if (utf8_next((const uint8_t *)c, n - i, &cp, &len) != UTF8_OK) {
			for (size_t k = 0; k < len; k++) {
				snprintf(esc, sizeof(esc), "\\x%02x",
				         (unsigned)(unsigned char)c[k]);
				put(b, esc, 4);
			}
		} else if (cp == '"' || cp == '\\') {
			esc[0] = '\\';
			esc[1] = (char)cp;
			put(b, esc, 2);
		} else if (cp == '\n' || cp == '\r' || cp == '\t') {
			put(b, cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t", 2);
		} else if (control(cp)) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
			put(b, esc, 6);
		} else {
			put(b, c, len);
		}
	}
	b->reserve -= 1;
	b->p[b->n++] = '"';
}

/* Each conversion is re-run alone with a format built here from the caller's, which
 * orch_log()'s format attribute has checked against its arguments. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

enum spec_len { L_INT, L_LONG, L_LLONG, L_SIZE, L_MAX, L_PTRDIFF };

/* One conversion of the caller's format, parsed. */
struct spec {
	char s[48]; /* '%', flags, width and precision; the type is added per argument */
	size_t k;
	enum spec_len len;
	bool longd; /* L */
	char conv;
};

/* The length modifiers at @s into @sp; returns what follows them. */
static const char *
spec_length(struct spec *sp, const char *s)
{
	for (; *s && strchr("hlqjztL", *s); s++) {
		if (*s == 'l')
			sp->len = sp->len == L_LONG ? L_LLONG : L_LONG;
		else if (*s == 'q')
			sp->len = L_LLONG;
		else if (*s == 'z')
			sp->len = L_SIZE;
		else if (*s == 'j')
			sp->len = L_MAX;
		else if (*s == 't')
			sp->len = L_PTRDIFF;
		else if (*s == 'L')
			sp->longd = true;
	}
	return s;
}

/* The conversion after '%' at @s into @sp ('*' widths and precisions written in). */
static const char *
spec_parse(struct spec *sp, const char *s, va_list *ap)
{
	sp->s[sp->k++] = '%';
	while (*s && strchr("-+ #0", *s) && sp->k < 8)
		sp->s[sp->k++] = *s++;
	if (*s == '*') {
		sp->k += (size_t)snprintf(sp->s + sp->k, 12, "%d", va_arg(*ap, int));
		s++;
	}
	while (*s >= '0' && *s <= '9' && sp->k < 20)
		sp->s[sp->k++] = *s++;
	if (*s == '.' && s[1] == '*') {
		int prec = va_arg(*ap, int);
		if (prec >= 0) /* a negative one is no precision */
			sp->k += (size_t)snprintf(sp->s + sp->k, 13, ".%d", prec);
		s += 2;
	} else if (*s == '.') {
		sp->s[sp->k++] = *s++;
		while (*s >= '0' && *s <= '9' && sp->k < 32)
			sp->s[sp->k++] = *s++;
	}
	s = spec_length(sp, s);
	sp->conv = *s ? *s++ : '%';
	return s;
}

/* An integer conversion, widened to long long. */
static int
spec_int(struct spec *sp, char *out, size_t n, va_list *ap)
{
	enum spec_len l = sp->len;

	memcpy(sp->s + sp->k, "ll", 2);
	sp->s[sp->k + 2] = sp->conv;
	sp->s[sp->k + 3] = '\0';
	if (sp->conv == 'd' || sp->conv == 'i') {
		long long x = l == L_LONG      ? va_arg(*ap, long)
		              : l == L_LLONG   ? va_arg(*ap, long long)
		              : l == L_SIZE    ? (long long)va_arg(*ap, size_t)
		              : l == L_MAX     ? (long long)va_arg(*ap, intmax_t)
		              : l == L_PTRDIFF ? (long long)va_arg(*ap, ptrdiff_t)
		                               : va_arg(*ap, int);
		return snprintf(out, n, sp->s, x);
	}
	unsigned long long x = l == L_LONG      ? va_arg(*ap, unsigned long)
	                       : l == L_LLONG   ? va_arg(*ap, unsigned long long)
	                       : l == L_SIZE    ? va_arg(*ap, size_t)
	                       : l == L_MAX     ? (unsigned long long)va_arg(*ap, uintmax_t)
	                       : l == L_PTRDIFF ? (unsigned long long)va_arg(*ap, ptrdiff_t)
	                                        : va_arg(*ap, unsigned);
	return snprintf(out, n, sp->s, x);
}

/* Any other conversion: characters, strings, pointers, floating point, "%%". */
static int
spec_other(struct spec *sp, char *out, size_t n, va_list *ap)
{
	char c = sp->conv;

	if (strchr("fFeEgGaA", c) && sp->longd)
		sp->s[sp->k++] = 'L';
	sp->s[sp->k++] = c;
	sp->s[sp->k] = '\0';
	if (c == 'c')
		return snprintf(out, n, sp->s, va_arg(*ap, int));
	if (c == 'p')
		return snprintf(out, n, sp->s, va_arg(*ap, void *));
	if (c == 's') {
		const char *str = va_arg(*ap, const char *);
		return snprintf(out, n, sp->s, str ? str : "(null)");
	}
	if (strchr("fFeEgGaA", c))
		return sp->longd ? snprintf(out, n, sp->s, va_arg(*ap, long double))
		                 : snprintf(out, n, sp->s, va_arg(*ap, double));
	out[0] = '%'; /* "%%", or a conversion the format attribute would have refused */
	return 1;
}

/* One conversion at @f ('%'), its argument taken from @ap, appended to @v; returns what follows. */
static const char *
conversion(struct buf *v, const char *f, va_list *ap)
{
	struct spec sp = {.len = L_INT};
	char out[LOG_LINE_MAX];
	int rv;

	f = spec_parse(&sp, f + 1, ap);
	if (sp.conv != '\0' && strchr("diuxXo", sp.conv))
		rv = spec_int(&sp, out, sizeof(out), ap);
	else
		rv = spec_other(&sp, out, sizeof(out), ap);
	if (rv > 0)
		put(v, out, (size_t)rv < sizeof(out) ? (size_t)rv : sizeof(out) - 1);
	return f;
}

#pragma GCC diagnostic pop

/* One field of the format at @f onto @b; returns the format after it. */
static const char *
field(struct buf *b, const char *f, va_list *ap)
{
	struct buf v = {.reserve = 0};
	size_t key = strcspn(f, " =%\"");
	bool quoted;

	if (f[key] == '=') {
		put(b, f, key + 1);
		f += key + 1;
	}
	quoted = *f == '"';
	f += quoted;
	while (*f && *f != (quoted ? '"' : ' ')) {
		if (*f == '%') {
			f = conversion(&v, f, ap);
			continue;
		}
		put(&v, f++, 1);
	}
	f += quoted && *f == '"';
	if (quoted || !plain(v.p, v.n))
		put_quoted(b, v.p, v.n);
	else
		put(b, v.p, v.n);
	return f;
}

/* The formatted fields of @fmt onto @b. */
static void
fields(struct buf *b, const char *fmt, va_list *ap)
{
	while (*fmt) {
		if (*fmt == ' ') {
			put(b, " ", 1);
			fmt++;
			continue;
		}
		fmt = field(b, fmt, ap);
	}
}

/* fields() with its own arguments. */
static void fieldsf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
fieldsf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fields(b, fmt, &ap);
	va_end(ap);
}

/* What orch_log_err() adds after the event name. */
struct log_err {
	orch_err code;
	const struct orch_errinfo *info;
	bool wire; /* err=<the wire code> too */
};

static void log_emit(enum orch_log_level level, const char *event, const struct log_err *le,
                     const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

static void
log_emit(enum orch_log_level level, const char *event, const struct log_err *le, const char *fmt,
         va_list ap)
{
	struct buf line = {.reserve = 1};
	char head[16];
	va_list aq;
	/* a terminal is for people, anything else (journald, a file, a pipe) for programs; asked
	 * per line, as stderr may be moved (one ioctl beside the line's write) */
	bool tty = isatty(STDERR_FILENO);
	const char *word = level <= ORCH_LOG_ERR       ? "error: "
	                   : level == ORCH_LOG_WARNING ? "warning: "
	                                               : "";
	size_t skip = tty ? (size_t)snprintf(head, sizeof(head), "%s", word)
	                  : (size_t)snprintf(head, sizeof(head), "<%d>", (int)level);
	put(&line, head, skip);
	fieldsf(&line, "event=%s", event);
	if (le != NULL) {
		if (le->wire)
			fieldsf(&line, " err=%s", orch_err_wire(le->code));
		fieldsf(&line, " code=%s", orch_err_name(le->code));
		if (le->info != NULL)
			fieldsf(&line, " msg=\"%s\"", le->info->msg);
	}
	if (fmt != NULL && fmt[0] != '\0') {
		put(&line, " ", 1);
		va_copy(aq, ap);
		fields(&line, fmt, &aq);
		va_end(aq);
	}
	line.p[line.n++] = '\n'; /* the reserve */
	/* One write per line; a short write to stderr is not worth a retry loop. */
	ssize_t wr = write(STDERR_FILENO, line.p, line.n);
	(void)wr;
	if (log_sink != NULL) { /* the line less its prefix */
		if (line.n - 1 > skip)
			log_sink(log_sink_ctx, level, line.p + skip, line.n - 1 - skip);
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

static orch_err log_failure(const struct log_err *le, const char *event, const char *fmt,
                            va_list ap) __attribute__((format(printf, 3, 0)));

/* orch_log_err and orch_log_fail: @event at error level with @le's code and message. */
static orch_err
log_failure(const struct log_err *le, const char *event, const char *fmt, va_list ap)
{
	if (orch_log_enabled(ORCH_LOG_ERR))
		log_emit(ORCH_LOG_ERR, event, le, fmt, ap);
	return le->code;
}

orch_err
orch_log_err(orch_err code, const struct orch_errinfo *info, const char *event, const char *fmt,
             ...)
{
	struct log_err le = {code, info, true};
	va_list ap;

	va_start(ap, fmt);
	log_failure(&le, event, fmt, ap);
	va_end(ap);
	return code;
}

orch_err
orch_log_fail(orch_err code, const struct orch_errinfo *info, const char *event, const char *fmt,
              ...)
{
	struct log_err le = {code, info, false};
	va_list ap;

	va_start(ap, fmt);
	log_failure(&le, event, fmt, ap);
	va_end(ap);
	return code;
}
