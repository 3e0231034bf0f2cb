#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

void *
arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->head;
	size_t cap;

	if (n > SIZE_MAX / 2)
		return NULL;
	n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	if (c == NULL || c->cap - c->used < n) {
		cap = n > 65536 ? n : 65536;
		c = orch_malloc(sizeof(*c) + cap);
		if (c == NULL)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	a->bytes += n;
	memset(p, 0, n);
	return p;
}

char *
arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);

	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

void
arena_free(struct arena *a)
{
	struct arena_chunk *c = a->head;

	while (c != NULL) {
		struct arena_chunk *next = c->next;
		orch_free(c);
		c = next;
	}
	a->head = NULL;
	a->bytes = 0;
}
