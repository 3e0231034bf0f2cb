/*
 * json_add.c - members that are null until known (json_add.h).
 */
#include "json_add.h"

#include <cjson/cJSON.h>

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
