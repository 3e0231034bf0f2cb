/*
 * json_add.c - members that are null until known (json_add.h).
 */
#include "json_add.h"

#include <cjson/cJSON.h>

#include "base/sbuf.h"
#include "base/utf8.h"

void
json_add_str(cJSON *o, const char *key, const char *v)
{
	if (v != NULL && v[0])
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

void
json_add_count(cJSON *o, const char *key, uint64_t v)
{
	if (v)
		cJSON_AddNumberToObject(o, key, (double)v);
	else
		cJSON_AddNullToObject(o, key);
}

cJSON *
json_text(const void *p, size_t n)
{
	const uint8_t *s = p;
	struct sbuf b = {0};
	cJSON *v;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len;
		if (utf8_next(s + i, n - i, &cp, &len) == UTF8_OK && cp != 0) {
			sbuf_put(&b, s + i, len);
			i += len;
		} else {
			sbuf_puts(&b, UTF8_REPLACEMENT);
			i += len > 0 ? len : 1;
		}
	}
	sbuf_putc(&b, '\0');
	v = b.oom ? NULL : cJSON_CreateString(b.p);
	sbuf_fini(&b);
	return v;
}

cJSON *
json_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a != NULL && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(s[i]));
	return a;
}

void
json_add_token(cJSON *o, const char *key, bool known, int32_t id)
{
	if (known && id >= 0)
		cJSON_AddNumberToObject(o, key, id);
	else
		cJSON_AddNullToObject(o, key);
}
