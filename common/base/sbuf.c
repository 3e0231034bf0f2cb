#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"

static bool
reserve(struct sbuf *b, size_t extra)
{
	size_t need, cap;

	if (b->oom)
		return false;
	if (__builtin_add_overflow(b->n, extra + 1, &need)) {
		b->oom = true;
		return false;
	}
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap * 2 > cap ? cap * 2 : need;
	char *p = orch_reallocarray(b->p, cap, 1);
	if (p == NULL) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void
sbuf_put(struct sbuf *b, const void *data, size_t n)
{
	if (!reserve(b, n))
		return;
	if (n > 0)
		memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void
sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, strlen(s));
}

void
sbuf_putc(struct sbuf *b, char c)
{
	sbuf_put(b, &c, 1);
}

void
sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)n;
}

orch_err
sbuf_err(const struct sbuf *b)
{
	return b->oom ? ORCH_ENOMEM : ORCH_OK;
}

void
sbuf_clear(struct sbuf *b)
{
	b->n = 0;
	b->oom = false;
	if (b->p != NULL)
		b->p[0] = '\0';
}

void
sbuf_fini(struct sbuf *b)
{
	orch_free(b->p);
	*b = (struct sbuf){0};
}

char *
sbuf_take(struct sbuf *b, size_t *ret_len)
{
	char *p;

	if (b->oom) {
		sbuf_fini(b);
		return NULL;
	}
	if (b->p == NULL) {
		if (!reserve(b, 0)) {
			sbuf_fini(b);
			return NULL;
		}
		b->p[0] = '\0';
	}
	p = b->p;
	if (ret_len != NULL)
		*ret_len = b->n;
	*b = (struct sbuf){0};
	return p;
}
