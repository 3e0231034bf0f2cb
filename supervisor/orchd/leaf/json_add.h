#pragma once
/*
 * json_add.h - cJSON members for facts that may not be known yet: null
 * rather than a made-up "" or 0 (/health, /v1/models); bytes as a JSON
 * string or array (logprobs, /tokenize).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* json_add_str - @key: @v, or null when @v is NULL or "". */
void json_add_str(struct cJSON *o, const char *key, const char *v);

/* json_add_count - @key: @v, or null when 0 (not known yet). */
void json_add_count(struct cJSON *o, const char *key, uint64_t v);

/* json_add_token - @key: token id @id, or null when not @known or -1 (the tokenizer has none). */
void json_add_token(struct cJSON *o, const char *key, bool known, int32_t id);

/*
 * json_text - @n bytes at @s as a JSON string, each ill-formed sequence and
 * NUL byte (a cJSON string cannot hold one) as U+FFFD; NULL when out of memory.
 */
struct cJSON *json_text(const void *s, size_t n);

/* json_bytes - @n bytes at @s as an array of numbers (OpenAI's and llama.cpp's "bytes"). */
struct cJSON *json_bytes(const void *s, size_t n);
