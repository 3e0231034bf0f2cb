/* tok_heap.c - the binary heap of bigram candidates both merge loops use. */
#include "base/alloc.h"
#include "tok_internal.h"

static int
before(const struct tok_bigram *a, const struct tok_bigram *b)
{
	return a->prio < b->prio || (a->prio == b->prio && a->left < b->left);
}

orch_err
tok_heap_push(struct tok_heap *h, const struct tok_bigram *b)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct tok_bigram *v = orch_reallocarray(h->v, cap, sizeof(*v));
		if (v == NULL)
			return ORCH_ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	size_t i = h->n++;
	while (i > 0 && before(b, &h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = *b;
	return ORCH_OK;
}

void
tok_heap_pop(struct tok_heap *h, struct tok_bigram *out)
{
	struct tok_bigram last = h->v[--h->n];
	size_t i = 0;

	*out = h->v[0];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n > 0)
		h->v[i] = last;
}

void
tok_heap_fini(struct tok_heap *h)
{
	orch_free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
