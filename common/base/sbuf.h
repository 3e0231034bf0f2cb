#pragma once
/*
 * sbuf.h - a growable byte string. Appends never fail loudly: the first
 * allocation failure sets ->oom and later appends do nothing, so a builder
 * checks once at the end (sbuf_err()). The text is kept NUL-terminated.
 */
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct sbuf {
	char *p; /* NUL-terminated when non-NULL */
	size_t n, cap;
	bool oom;
};

void sbuf_put(struct sbuf *b, const void *data, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_putc(struct sbuf *b, char c);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* sbuf_err - ORCH_ENOMEM if any append failed, else ORCH_OK. */
orch_err sbuf_err(const struct sbuf *b);

/* sbuf_clear - empty the string and forget a failure, keeping the memory for reuse. */
void sbuf_clear(struct sbuf *b);

/* sbuf_fini - free and reset; the struct may be reused. */
void sbuf_fini(struct sbuf *b);

/* sbuf_take - hand over the string (never NULL unless OOM); the sbuf is reset. */
char *sbuf_take(struct sbuf *b, size_t *ret_len);
