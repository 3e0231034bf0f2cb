#pragma once
/*
 * json_add.h - cJSON members for facts that may not be known yet: null
 * rather than a made-up "" or 0 (/health, /v1/models).
 */
#include <stdint.h>

struct cJSON;

/* json_add_str - @key: @v, or null when @v is NULL or "". */
void json_add_str(struct cJSON *o, const char *key, const char *v);

/* json_add_count - @key: @v, or null when 0 (not known yet). */
void json_add_count(struct cJSON *o, const char *key, uint64_t v);
