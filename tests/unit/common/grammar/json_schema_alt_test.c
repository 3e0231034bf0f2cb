/*
 * json_schema_alt_test.c - JSON Schema to GBNF, issue 56's second part: anyOf and
 * oneOf branches (left out when they cannot match, oneOf branches told apart or
 * made apart), and the keywords taken since (format beside enum, propertyNames
 * with a format, allOf of differing anyOf, anchors inside patterns...). Each
 * schema with texts its grammar must and must not accept.
 */
#include <cjson/cJSON.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "js_check.h"
#include "t.h"

/* A branch no value can match beside the keywords next to it is left out. */
static void
test_empty_branch(void)
{
	check("{\"type\":\"null\",\"oneOf\":[{\"type\":\"object\"},{\"type\":\"null\"}]}",
	      L("null"), L("{}"));
	check("{\"allOf\":[{\"anyOf\":[{\"type\":\"object\"},{\"type\":\"null\"}]},{\"type\":"
	      "\"null\"}]}",
	      L("null"), L("{}"));
	refused("{\"type\":\"string\",\"oneOf\":[{\"type\":\"object\"},{\"type\":\"null\"}]}",
	        "no branch", "root");
}

/* oneOf branches apart by lengths, items, or a required key the other forbids. */
static void
test_oneof_apart(void)
{
	check("{\"type\":\"string\",\"oneOf\":[{\"maxLength\":0},{\"minLength\":1,\"format\":"
	      "\"html-selector\"}]}",
	      L("\"\"", "\"ab\""), L("1"));
	check("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"src\":{\"type\":\"string\"}},"
	      "\"required\":[\"src\"],\"additionalProperties\":false},{\"type\":\"object\","
	      "\"properties\":{\"with\":{\"type\":\"string\"}},\"required\":[\"with\"],"
	      "\"additionalProperties\":false}]}",
	      L("{\"src\":\"a\"}", "{\"with\":\"b\"}"), L("{\"src\":\"a\",\"with\":\"b\"}", "{}"));
	check("{\"oneOf\":[{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]}},{\"type\":"
	      "\"array\",\"items\":{\"const\":\"*\"},\"minItems\":1,\"maxItems\":1}]}",
	      L("[]", "[\"a\"]", "[\"*\"]"), L("[\"a\",\"*\"]"));
	/* "" is no uri, and the uri grammar never makes "" */
	check("{\"oneOf\":[{\"type\":\"string\",\"format\":\"uri\"},{\"type\":\"string\",\"enum\":"
	      "[\"\"]}]}",
	      L("\"http://a.io\""), L("\"\""));
}

/* oneOf branches made apart: a key another requires forbidden, or a branch left out. */
static void
test_oneof_made_apart(void)
{
	/* each branch forbids the keys the others require */
	check("{\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"integer\"},\"s\":{\"type\":"
	      "\"integer\"}},\"additionalProperties\":false,\"oneOf\":[{\"required\":[\"t\"]},{"
	      "\"required\":[\"s\"]}]}",
	      L("{\"t\":1}", "{\"s\":2}"), L("{\"t\":1,\"s\":2}", "{}"));
	/* a reference beside an open schema: the reference is left out, the schema never has $ref
	 */
	check("{\"oneOf\":[{\"type\":\"object\",\"required\":[\"$ref\"],\"properties\":{\"$ref\":{"
	      "\"type\":\"string\"}}},{\"type\":\"object\",\"properties\":{\"title\":{\"type\":"
	      "\"string\"}},\"additionalProperties\":true}]}",
	      L("{\"title\":\"x\"}", "{}"),
	      L("{\"$ref\":\"x\"}", "{\"$ref\":\"x\",\"title\":\"y\"}"));
	/* a property both declare with other values: made required */
	check("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"k\":{\"const\":1}}},{\"type\":"
	      "\"object\",\"properties\":{\"k\":{\"const\":2}}}]}",
	      L("{\"k\":1}", "{\"k\":2}"), L("{}", "{\"k\":3}"));
	refused("{\"oneOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", "told apart", "root");
}

/* format beside enum/const: the values of the format kept; propertyNames with a format. */
static void
test_formats(void)
{
	check("{\"type\":\"string\",\"format\":\"uri\",\"enum\":[\"https://x.io/a?v=4\","
	      "\"not a uri\"]}",
	      L("\"https://x.io/a?v=4\""), L("\"not a uri\""));
	check("{\"type\":\"string\",\"format\":\"uri-template\",\"const\":"
	      "\"https://x.io/u{/who}\"}",
	      L("\"https://x.io/u{/who}\""), NONE);
	check("{\"type\":\"integer\",\"format\":\"int32\",\"enum\":[1,5000000000]}", L("1"),
	      L("5000000000"));
	refused("{\"format\":\"date\",\"const\":\"2024-13-01\"}", "no value", "root");
	check("{\"type\":\"object\",\"propertyNames\":{\"format\":\"ipv4\"},"
	      "\"additionalProperties\":{\"type\":\"null\"}}",
	      L("{\"1.2.3.4\":null}", "{}"), L("{\"x\":null}"));
}

/* allOf of parts with differing anyOf; a merge met again inside itself; extra-key schemas. */
static void
test_merges(void)
{
	check("{\"allOf\":[{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]},{"
	      "\"anyOf\":[{\"type\":\"number\",\"minimum\":3},{\"type\":\"string\","
	      "\"maxLength\":1}]}]}",
	      L("3", "\"a\""), L("2", "\"ab\"", "null"));
	check("{\"$defs\":{\"a\":{\"type\":\"object\",\"properties\":{\"k\":{\"$ref\":"
	      "\"#/$defs/n\"}}},\"b\":{\"properties\":{\"k\":{\"$ref\":\"#/$defs/n\"},"
	      "\"v\":{\"type\":\"integer\"}}},\"n\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"},{"
	      "\"$ref\":\"#/$defs/b\"}]}},\"$ref\":\"#/$defs/n\"}",
	      L("{}", "{\"k\":{\"k\":{\"v\":1}}}"), L("{\"k\":{\"v\":\"x\"}}"));
	check("{\"allOf\":[{\"type\":\"object\",\"additionalProperties\":{\"type\":"
	      "\"integer\"}},{\"additionalProperties\":{\"minimum\":0}}]}",
	      L("{\"a\":1}", "{}"), L("{\"a\":-1}", "{\"a\":\"x\"}"));
}

int
main(void)
{
	T_RUN(test_empty_branch);
	T_RUN(test_oneof_apart);
	T_RUN(test_oneof_made_apart);
	T_RUN(test_formats);
	T_RUN(test_merges);
	return t_done();
}
