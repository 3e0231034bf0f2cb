#pragma once
/*
 * json_schema.h - a JSON Schema as a GBNF grammar (grammar.h) whose
 * sentences are exactly the JSON texts that validate against it, for
 * response_format's json_schema and json_object (docs/json-schema.md lists the
 * keywords taken). A keyword orch cannot honour is refused naming it, never
 * ignored: a grammar that allowed more than the schema would break the
 * promise that every output validates.
 */
#include <stddef.h>

#include "base/err.h"

struct cJSON;

/*
 * json_schema_gbnf - @schema as GBNF text with start rule "root" into *@ret
 * (NUL-terminated, free()d by the caller). ORCH_EINVAL with the message in
 * @msg (@msg_n bytes), naming the keyword and its JSON pointer
 * ("unsupported keyword 'patternProperties' at /properties/a"), ORCH_ENOMEM.
 */
orch_err json_schema_gbnf(const struct cJSON *schema, char **ret, char *msg, size_t msg_n);

/*
 * json_regex_gbnf - a GBNF grammar whose language is the strings @pattern matches
 * whole (the output itself, not a JSON string; '^' and '$' optional): the subset
 * of ECMA-262 that 'pattern' takes (literals, escapes, '.', classes with \d \w \s,
 * groups, '|', * + ? {m,n}); anything else refused by name in @msg (ORCH_EINVAL).
 */
orch_err json_regex_gbnf(const char *pattern, char **ret, char *msg, size_t msg_n);

/*
 * json_schema_gbnf_set - @n schemas as one grammar: @top (GBNF text that
 * defines "root" and uses the others) first, then rule "schema-I" for
 * schema I (0-based) and what they need; each schema's $refs resolve within
 * it. Errors as json_schema_gbnf's, the pointer within the schema that
 * failed, whose index goes to *@ret_failed (when not NULL). Tool calling
 * makes one grammar of several functions' parameters.
 */
orch_err json_schema_gbnf_set(const struct cJSON *const *schemas, size_t n, const char *top,
                              char **ret, size_t *ret_failed, char *msg, size_t msg_n);

/* json_object_gbnf - the grammar of any JSON object (response_format json_object). */
const char *json_object_gbnf(void);
