#pragma once
/*
 * arena.h - bump allocation freed all at once: for structures built
 * together and dropped together (a parsed GGUF, a compiled template, one
 * render). Chunks come from orch_malloc, so fault injection reaches them.
 */
#include <stddef.h>

struct arena {
	struct arena_chunk *head;
	size_t bytes; /* total handed out, for limits */
};

/* arena_alloc - @n bytes aligned for any type, zeroed; NULL when out of memory. */
void *arena_alloc(struct arena *a, size_t n);

/* arena_strndup - a NUL-terminated copy of @n bytes; NULL when out of memory. */
char *arena_strndup(struct arena *a, const char *s, size_t n);

/* arena_free - free every chunk; the arena is empty and reusable. */
void arena_free(struct arena *a);
