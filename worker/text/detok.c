#include "detok.h"

#include <string.h>

#include "base/alloc.h"
#include "base/utf8.h"

void
detok_init(struct detok *d, const struct tok *t, unsigned flags)
{
	*d = (struct detok){.t = t, .flags = flags};
}

/* Emit the complete sequences of @n bytes at @s; keep an incomplete tail. */
static void
drain(struct detok *d, const uint8_t *s, size_t n, struct sbuf *out)
{
	size_t i = 0, len;
	uint32_t cp;

	while (i < n) {
		enum utf8_status st = utf8_next(s + i, n - i, &cp, &len);
		if (st == UTF8_INCOMPLETE) {
			memcpy(d->hold, s + i, n - i);
			d->n_hold = n - i;
			return;
		}
		if (st == UTF8_OK)
			sbuf_put(out, s + i, len);
		else
			sbuf_puts(out, UTF8_REPLACEMENT);
		i += len;
	}
	d->n_hold = 0;
}

orch_err
detok_push(struct detok *d, int32_t id, struct sbuf *out)
{
	uint8_t small[260], *buf = small;
	size_t n = tok_piece(d->t, id, d->flags, NULL, 0), skip = 0;

	if (n == 0)
		return sbuf_err(out);
	if (n + d->n_hold > sizeof(small) && (buf = orch_malloc(n + d->n_hold)) == NULL)
		return ORCH_ENOMEM;
	memcpy(buf, d->hold, d->n_hold);
	tok_piece(d->t, id, d->flags, (char *)buf + d->n_hold, n);
	if (!d->started && (d->flags & TOK_STRIP_PREFIX) && tok_adds_space_prefix(d->t) &&
	    buf[d->n_hold] == ' ')
		skip = 1; /* the dummy prefix, at the start of the stream only */
	d->started = true;
	if (skip) {
		memmove(buf + d->n_hold, buf + d->n_hold + 1, n - 1);
		n--;
	}
	drain(d, buf, d->n_hold + n, out);
	if (buf != small)
		orch_free(buf);
	return sbuf_err(out);
}

orch_err
detok_finish(struct detok *d, struct sbuf *out)
{
	if (d->n_hold > 0)
		sbuf_puts(out, UTF8_REPLACEMENT);
	d->n_hold = 0;
	return sbuf_err(out);
}
