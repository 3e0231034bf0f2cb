/*
 * json_schema_test.c - JSON Schema to GBNF (json_schema.h): for each schema,
 * texts its grammar must accept and texts it must refuse (through
 * gram_compile and gram_accepts); integer and number bounds checked against
 * every value near them; each refusal's code, keyword and pointer; the
 * limits; the json_object grammar; and allocation failures.
 */
#include <cjson/cJSON.h>

#include "base/rng.h"
#include "base/sbuf.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "js_check.h"
#include "t.h"

static void
test_types(void)
{
	check("{\"type\":\"null\"}", L("null"), L("", "nul", "0", " null"));
	check("{\"type\":\"boolean\"}", L("true", "false"), L("null", "1"));
	check("{\"type\":\"integer\"}", L("0", "-7", "123456789012345", "-0"),
	      L("01", "1.5", "1e3", "1234567890123456", "+1", "-"));
	check("{\"type\":\"number\"}", L("0", "-0.5", "1e10", "2.5E-3", "123456789012345.5"),
	      L(".5", "1.", "01", "1e", "NaN", "1e100", "Infinity"));
	check("{\"type\":\"string\"}",
	      L("\"\"", "\"a b\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u00e9\\ud83d\\ude00\"",
	        "\"\xc3\xa9\xf0\x9f\x98\x80\""),
	      L("\"", "\"a\nb\"", "\"\\x\"", "\"\\ud800\"", "\"\\u12\"", "'a'", "\"\x7f\""));
	check("{\"type\":[\"string\",\"null\"]}", L("null", "\"x\""), L("1", "true"));
	check("{\"type\":[\"integer\",\"number\"],\"title\":\"t\",\"description\":\"d\"}",
	      L("1", "1.5"), L("\"1\""));
	check("{}", L("1", "\"x\"", "[1,{\"a\":null}]", "{ \"a\" : [ ] }", "true"),
	      L("", "[1,]", "{\"a\"}", "nul"));
	check("true", L("null", "{}"), L("{]"));
}

static void
test_objects(void)
{
	static const char s[] = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
	                        "\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"null\"}},"
	                        "\"required\":[\"b\"]}";

	check(s,
	      L("{\"b\":\"x\"}", "{\"a\":1,\"b\":\"x\"}", "{\"a\":1,\"b\":\"x\",\"c\":null}",
	        "{\"b\":\"x\",\"c\":null}", "{ \"b\" : \"x\" ,\n  \"c\": null\n}"),
	      L("{}", "{\"a\":1}", "{\"b\":\"x\",\"a\":1}", "{\"b\":\"x\",\"d\":1}",
	        "{\"b\":\"x\",}", "{,\"b\":\"x\"}", "{\"b\":\"x\"   }"));
	/* no properties and no others: only {} (the rule "ws" was once left out) */
	check("{\"type\":\"object\",\"properties\":{}}", L("{}", "{ }"), L("{\"a\":1}", "[]"));
	/* all optional: any subset in order, or nothing */
	check("{\"properties\":{\"a\":{\"const\":1},\"b\":{\"const\":2}},\"additionalProperties\":"
	      "false}",
	      L("{}", "{\"a\":1}", "{\"b\":2}", "{\"a\":1,\"b\":2}"),
	      L("{\"b\":2,\"a\":1}", "{\"a\":1,}", "{,}", "1"));
	/* a bare object type is any object; required-only names take any value */
	check("{\"type\":\"object\"}", L("{}", "{\"x\":[1]}"), L("[]"));
	check("{\"type\":\"object\",\"required\":[\"k\"]}", L("{\"k\":[1,2]}"),
	      L("{}", "{\"k\":1,\"j\":2}"));
	/* extra keys after the declared ones, never one of their names */
	check("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"ab\":{\"type\":"
	      "\"integer\"},\"\":{\"type\":\"null\"}},\"required\":[\"a\"],"
	      "\"additionalProperties\":{\"type\":\"boolean\"}}",
	      L("{\"a\":1}", "{\"a\":1,\"x\":true}", "{\"a\":1,\"\":null,\"abc\":false,\"b\":true}",
	        "{\"a\":1,\"A\":true,\"aa\":false}"),
	      L("{\"a\":1,\"a\":true}", "{\"a\":1,\"ab\":true}", "{\"a\":1,\"\":true}",
	        "{\"a\":1,\"x\":1}", "{\"x\":true,\"a\":1}", "{\"a\":1,\"\\u0061\":true}"));
	check("{\"properties\":{\"x\":{\"type\":\"integer\"}},\"additionalProperties\":true}",
	      L("{}", "{\"y\":[null]}", "{\"x\":1,\"y\":{}}"),
	      L("{\"x\":\"s\"}", "{\"x\":1,\"x\":2}"));
	/* names that need escaping */
	check("{\"properties\":{\"q\\\"\\\\\\n\xc3\xa9\":{\"const\":0}},\"required\":[\"q\\\"\\\\"
	      "\\n\xc3\xa9\"]}",
	      L("{\"q\\\"\\\\\\n\xc3\xa9\":0}"), L("{\"q\":0}"));
}

static void
test_arrays(void)
{
	check("{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"items\":{\"type\":\"array\","
	      "\"minItems\":2,\"maxItems\":2,\"items\":{\"type\":\"integer\"}}}",
	      L("[[1,2]]", "[[1,2],[3,4],[5,6]]", "[ [1, 2] ,\n [3,4] ]"),
	      L("[]", "[[1]]", "[[1,2,3]]", "[[1,2],[3,4],[5,6],[7,8]]", "[[1,\"a\"]]"));
	check("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"},"
	      "{\"type\":\"boolean\"}],\"items\":false,\"minItems\":2}",
	      L("[1,\"a\"]", "[1,\"a\",true]"), L("[1]", "[]", "[1,\"a\",true,1]", "[\"a\",1]"));
	check("{\"prefixItems\":[{\"const\":\"h\"}],\"items\":{\"type\":\"integer\"},\"maxItems\":3}",
	      L("[]", "[\"h\"]", "[\"h\",1,2]"), L("[1]", "[\"h\",1,2,3]", "[\"h\",\"h\"]"));
	check("{\"items\":[{\"type\":\"null\"}]}", L("[]", "[null]", "[null,1,\"x\"]"), L("[1]"));
	check("{\"type\":\"array\"}", L("[]", "[1,[2],{}]"), L("{}"));
	check("{\"type\":\"array\",\"items\":false}", L("[]"), L("[1]"));
	check("{\"type\":\"array\",\"uniqueItems\":true,\"maxItems\":1}", L("[]", "[3]"),
	      L("[3,3]"));
	/* contains: at least minContains items (1 by default) of both schemas, anywhere */
	check("{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"contains\":{\"minimum\":5}}",
	      L("[5]", "[1,2,7]", "[9,1]", "[1,6,2]"), L("[]", "[1,2]", "[\"a\",6]"));
	check("{\"contains\":{\"const\":\"x\"},\"minContains\":2}",
	      L("[\"x\",\"x\"]", "[1,\"x\",{},\"x\"]"), L("[\"x\"]", "[1,2]"));
	check("{\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":0}",
	      L("[]", "[1]"), NONE);
	refused("{\"type\":\"array\",\"contains\":{},\"maxContains\":2}", "'maxContains'", "root");
	refused("{\"type\":\"array\",\"contains\":{},\"minItems\":2}",
	        "'contains' beside item counts", "root");
	/* uniqueItems over a few values, exactly: each at most once, in any order */
	check("{\"type\":\"array\",\"uniqueItems\":true,\"items\":{\"enum\":[\"a\",\"b\",\"c\"]}}",
	      L("[]", "[\"a\"]", "[\"c\",\"a\"]", "[\"b\",\"c\",\"a\"]", "[ \"a\" , \"b\" ]"),
	      L("[\"a\",\"a\"]", "[\"a\",\"b\",\"a\"]", "[\"d\"]", "[\"a\",\"b\",\"c\",\"a\"]"));
	check("{\"uniqueItems\":true,\"minItems\":2,\"items\":{\"type\":\"boolean\"}}",
	      L("[true,false]", "[false,true]"), L("[true]", "[true,true]", "[]"));
	check("{\"uniqueItems\":true,\"maxItems\":2,\"items\":{\"enum\":[1,1.0,2,3],"
	      "\"maximum\":2}}",
	      L("[1]", "[2,1]", "[]"), L("[1,1]", "[3]", "[1,2,1]"));
	refused("{\"uniqueItems\":true,\"minItems\":3,\"items\":{\"const\":5}}",
	        "'minItems' 3 cannot be met: 'uniqueItems' over 1 distinct values", "root");
}

static void
test_enum_const(void)
{
	check("{\"enum\":[\"a\",\"b\\\"c\",1,2.5,true,null,{\"x\":[1,2]},[],\"\xc3\xa9\\n\"]}",
	      L("\"a\"", "\"b\\\"c\"", "1", "2.5", "true", "null", "{\"x\":[1,2]}", "[]",
	        "\"\xc3\xa9\\n\""),
	      L("\"b\"", "2", "false", "{\"x\":[1]}", "{}", "\"b\"c\""));
	check("{\"const\":{\"k\":\"v\",\"n\":[1,{\"z\":null}],\"s\":\"a\\\\b\\u0001\"}}",
	      L("{\"k\":\"v\",\"n\":[1,{\"z\":null}],\"s\":\"a\\\\b\\u0001\"}"),
	      L("{\"k\":\"v\"}", "{}"));
	/* siblings filter the values */
	check("{\"type\":\"string\",\"enum\":[\"a\",1,\"bbb\",null],\"maxLength\":2}", L("\"a\""),
	      L("1", "\"bbb\"", "null"));
	check("{\"type\":\"integer\",\"enum\":[1,2.5,7],\"minimum\":2}", L("7"), L("1", "2.5"));
}

/* Every integer in -3000..3000 and near the 15-digit edge: accepted iff in [lo, hi]. */
static void
int_sweep(const char *schema, long long lo, long long hi)
{
	struct gram *g = compile(schema);
	char buf[32];
	static const long long far[] = {999999999999999LL, -999999999999999LL, 100000000000000LL,
	                                1000000000000000LL};

	T_TRUE(g != NULL);
	for (long long x = -3000; x <= 3000 + 4; x++) {
		long long v = x <= 3000 ? x : far[x - 3001];
		bool in = v >= lo && v <= hi && v >= -999999999999999LL && v <= 999999999999999LL;
		snprintf(buf, sizeof(buf), "%lld", v);
		if (gram_accepts(g, buf, strlen(buf)) != in)
			fprintf(stderr, "%s: %s %s\n", schema, buf, in ? "refused" : "accepted");
		T_TRUE(gram_accepts(g, buf, strlen(buf)) == in || (gram_free(g), false));
	}
	T_TRUE(!gram_accepts(g, "-0", 2) || (gram_free(g), false));
	T_TRUE(!gram_accepts(g, "01", 2) || (gram_free(g), false));
	gram_free(g);
}

static void
test_integer_ranges(void)
{
	char s[256];
	struct rng r;
	uint64_t seed = getenv("ORCH_TEST_SEED") ? strtoull(getenv("ORCH_TEST_SEED"), NULL, 0) : 7;

	int_sweep("{\"type\":\"integer\",\"minimum\":-15,\"maximum\":1234}", -15, 1234);
	int_sweep("{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":100}", 1, 99);
	int_sweep("{\"type\":\"integer\",\"minimum\":7}", 7, 999999999999999LL);
	int_sweep("{\"type\":\"integer\",\"exclusiveMaximum\":-3}", -999999999999999LL, -4);
	int_sweep("{\"type\":\"integer\",\"minimum\":-2.5,\"exclusiveMaximum\":2.5}", -2, 2);
	int_sweep("{\"type\":\"integer\",\"minimum\":-1e300,\"maximum\":1e300}", -999999999999999LL,
	          999999999999999LL);
	int_sweep("{\"type\":\"integer\",\"minimum\":100,\"maximum\":100}", 100, 100);
	/* random bounds; ORCH_TEST_SEED replays */
	rng_seed(&r, seed);
	for (int i = 0; i < 40; i++) {
		long long a = (long long)(rng_next(&r) % 5001) - 2500;
		long long z = a + (long long)(rng_next(&r) % 3000);
		bool ax = rng_next(&r) & 1, zx = rng_next(&r) & 1;
		if (ax + zx + a > z)
			continue;
		snprintf(s, sizeof(s), "{\"type\":\"integer\",\"%s\":%lld,\"%s\":%lld}",
		         ax ? "exclusiveMinimum" : "minimum", a,
		         zx ? "exclusiveMaximum" : "maximum", z);
		int_sweep(s, a + ax, z - zx);
		if (t_failed_checks)
			fprintf(stderr, "seed %" PRIu64 "\n", seed);
	}
}

/* Each of a grid of decimals: accepted only if within the bounds; @yes accepted. */
static void
num_sweep(const char *schema, double lo, bool lox, double hi, bool hix, const char *const *yes)
{
	static const char *const fracs[] = {"", ".5", ".25", ".000001", ".999999", ".1", ".0"};
	struct gram *g = compile(schema);
	char buf[64];

	T_TRUE(g != NULL);
	for (int n = -30; n <= 30; n++) {
		for (size_t f = 0; f < sizeof(fracs) / sizeof(fracs[0]); f++) {
			snprintf(buf, sizeof(buf), "%s%d%s", n < 0 ? "-" : "", n < 0 ? -n : n,
			         fracs[f]);
			double v = strtod(buf, NULL);
			bool in = (lox ? v > lo : v >= lo) && (hix ? v < hi : v <= hi);
			if (gram_accepts(g, buf, strlen(buf)) && !in)
				fprintf(stderr, "%s: accepts %s\n", schema, buf);
			T_TRUE(in || !gram_accepts(g, buf, strlen(buf)) || (gram_free(g), false));
		}
	}
	for (; *yes; yes++) {
		if (!gram_accepts(g, *yes, strlen(*yes)))
			fprintf(stderr, "%s: refuses %s\n", schema, *yes);
		T_TRUE(gram_accepts(g, *yes, strlen(*yes)) || (gram_free(g), false));
	}
	gram_free(g);
}

static void
test_number_ranges(void)
{
	num_sweep("{\"type\":\"number\",\"minimum\":-2,\"maximum\":3}", -2, false, 3, false,
	          L("-2", "-1.5", "-0.000001", "0", "0.5", "2.999999", "3"));
	num_sweep("{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}", 0, true, 1,
	          true, L("0.5", "0.000001", "0.999999"));
	num_sweep("{\"type\":\"number\",\"minimum\":-10,\"exclusiveMaximum\":-2}", -10, false, -2,
	          true, L("-10", "-9.5", "-2.1", "-3"));
	num_sweep("{\"type\":\"number\",\"exclusiveMinimum\":-1,\"maximum\":0}", -1, true, 0, false,
	          L("-0.5", "0"));
	/* non-integer bounds are rounded inward: stricter, never looser */
	num_sweep("{\"type\":\"number\",\"minimum\":-2.5,\"maximum\":3.7}", -2.5, false, 3.7, false,
	          L("-2", "-1.5", "3"));
	num_sweep("{\"type\":\"number\",\"minimum\":0}", 0, false, 1e300, false,
	          L("0", "12.5", "999999999.999999", "999999999999999"));
	check("{\"type\":\"number\",\"minimum\":0}", NONE, L("-0.5", "1e3", "0.", "1.50"));
}

static void
test_strings(void)
{
	check("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
	      L("\"ab\"", "\"abc\"", "\"\\n\\u00e9\"", "\"\xf0\x9f\x98\x80\xc3\xa9\""),
	      L("\"a\"", "\"abcd\"", "\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\""));
	check("{\"type\":\"string\",\"maxLength\":0}", L("\"\""), L("\"a\""));
	check("{\"type\":\"string\",\"format\":\"date\"}",
	      L("\"2024-02-28\"", "\"1999-12-31\"", "\"2023-04-30\""),
	      L("\"2024-02-30\"", "\"2023-04-31\"", "\"2024-13-01\"", "\"24-01-01\""));
	check("{\"type\":\"string\",\"format\":\"time\"}",
	      L("\"23:59:59Z\"", "\"00:00:00.123+05:30\"", "\"12:30:00-08:00\""),
	      L("\"24:00:00Z\"", "\"12:60:00Z\"", "\"12:00:00\""));
	check("{\"type\":\"string\",\"format\":\"date-time\"}", L("\"2024-01-31T10:20:30Z\""),
	      L("\"2024-01-31 10:20:30Z\"", "\"2024-01-31\""));
	check("{\"type\":\"string\",\"format\":\"uuid\"}",
	      L("\"123e4567-e89b-12d3-a456-426614174000\""),
	      L("\"123e4567e89b12d3a456426614174000\"", "\"123E4567-e89b-12d3-a456-42661417400\""));
	check("{\"type\":\"string\",\"format\":\"email\"}",
	      L("\"a.b+c@example.com\"", "\"x@y-z.co\""),
	      L("\"a@b\"", "\".a@b.com\"", "\"a@-b.com\"", "\"a b@c.com\""));
}

static void
test_refs(void)
{
	static const char tree[] =
	        "{\"$ref\":\"#/$defs/node\",\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":"
	        "{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":"
	        "\"#/$defs/node\"}}},\"required\":[\"v\"],\"additionalProperties\":false}}}";

	check(tree, L("{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]},{\"v\":3}]}"),
	      L("{\"kids\":[]}", "{\"v\":1,\"kids\":[{}]}"));
	check("{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"string\"},\"next\":{\"anyOf\":["
	      "{\"$ref\":\"#\"},{\"type\":\"null\"}]}},\"required\":[\"v\",\"next\"]}",
	      L("{\"v\":\"a\",\"next\":{\"v\":\"b\",\"next\":null}}"),
	      L("{\"v\":\"a\",\"next\":1}"));
	check("{\"definitions\":{\"a/b~c\":{\"const\":5}},\"$ref\":\"#/definitions/a~1b~0c\"}",
	      L("5"), L("6"));
}

static void
test_composition(void)
{
	check("{\"anyOf\":[{\"type\":\"string\",\"maxLength\":1},{\"type\":\"integer\",\"minimum\":0,"
	      "\"maximum\":9},{\"type\":\"null\"}]}",
	      L("\"a\"", "7", "null"), L("\"ab\"", "10", "true"));
	check("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"c\"},\"r\":{"
	      "\"type\":\"number\"}},\"required\":[\"kind\",\"r\"]},{\"type\":\"object\","
	      "\"properties\":{\"kind\":{\"enum\":[\"s\",\"q\"]},\"w\":{\"type\":\"integer\"}},"
	      "\"required\":[\"kind\",\"w\"]},{\"type\":\"string\"}]}",
	      L("{\"kind\":\"c\",\"r\":1.5}", "{\"kind\":\"q\",\"w\":2}", "\"x\""),
	      L("{\"kind\":\"c\",\"w\":2}", "1"));
	check("{\"oneOf\":[{\"const\":1},{\"enum\":[2,\"x\"]}]}", L("1", "2", "\"x\""), L("3"));
	check("{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\","
	      "\"minimum\":0}},\"required\":[\"a\"]},{\"properties\":{\"a\":{\"maximum\":5},\"b\":{"
	      "\"type\":\"string\"}},\"required\":[\"b\"]}]}",
	      L("{\"a\":0,\"b\":\"\"}", "{\"a\":5,\"b\":\"x\"}"),
	      L("{\"a\":6,\"b\":\"x\"}", "{\"a\":-1,\"b\":\"x\"}", "{\"a\":1}", "{\"b\":\"x\"}"));
	check("{\"allOf\":[{\"type\":[\"integer\",\"string\"]},{\"type\":[\"number\",\"null\"]}],"
	      "\"maximum\":3}",
	      L("3", "-1"), L("1.5", "\"a\"", "null", "4"));
	/* anyOf with siblings: each branch merged with them */
	check("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":"
	      "\"string\"}},\"additionalProperties\":false,\"anyOf\":[{\"required\":[\"a\"]},{"
	      "\"required\":[\"b\"]}]}",
	      L("{\"a\":1}", "{\"b\":\"x\"}", "{\"a\":1,\"b\":\"x\"}"), L("{}", "{\"c\":1}"));
}

/* Issue 56: what validators ignore is ignored; keywords taken by rewriting; drafts. */
static void
test_validator_semantics(void)
{
	check("{\"type\":\"string\",\"x-foo\":1,\"example\":\"a\",\"nullable\":true,"
	      "\"minLenght\":3,\"readonly\":true,\"version\":2,\"links\":[]}",
	      L("\"\"", "\"ab\""), L("1", "null"));
	check("{\"type\":\"integer\",\"format\":\"int32\"}", L("2147483647", "-2147483648", "0"),
	      L("2147483648", "500000000000000", "1.5"));
	check("{\"type\":\"integer\",\"format\":\"uint8\",\"minimum\":-5}", L("0", "255"),
	      L("-1", "256"));
	check("{\"type\":\"number\",\"format\":\"double\"}", L("1.5"), L("\"x\""));
	check("{\"type\":\"string\",\"format\":\"int64\"}", L("\"x\""), L("1"));
	check("{\"type\":\"string\",\"format\":\"no-such-format\"}", L("\"x\""), L("1"));
	check("{\"not\":{\"type\":\"string\"}}", L("1", "null", "{}"), L("\"x\""));
	/* complements (json_schema_not.c): not integer makes no number at all */
	check("{\"not\":{\"type\":\"integer\"}}", L("null", "\"x\""), L("5", "1.5"));
	check("{\"type\":\"object\",\"not\":{\"required\":[\"a\"]}}", L("{}", "{\"b\":1}"),
	      L("{\"a\":1}"));
	check("{\"type\":\"string\",\"not\":{\"enum\":[\"bearer\",\"be\"]}}",
	      L("\"\"", "\"b\"", "\"bea\"", "\"bearers\"", "\"x\"", "\"bE\""),
	      L("\"bearer\"", "\"be\"", "1"));
	check("{\"not\":{\"const\":true}}", L("false", "null", "\"x\"", "1"), L("true"));
	check("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\"}},"
	      "\"required\":[\"s\"],\"not\":{\"properties\":{\"s\":{\"const\":\"x\"}}}}",
	      L("{\"s\":\"y\"}"), L("{\"s\":\"x\"}"));
	/* if/then of merged parts: the if branch where it merges, else the else branch */
	check("{\"type\":\"object\",\"properties\":{\"f\":{\"type\":\"string\"},\"p\":{}},"
	      "\"additionalProperties\":false,\"allOf\":["
	      "{\"if\":{\"not\":{\"required\":[\"f\"]}},\"then\":{\"properties\":{\"p\":"
	      "{\"type\":\"integer\"}}}},"
	      "{\"if\":{\"required\":[\"f\"]},\"then\":{\"properties\":{\"p\":"
	      "{\"type\":\"string\"}}}}]}",
	      L("{}", "{\"p\":1}"), L("{\"f\":\"a\"}", "{\"p\":\"x\"}"));
	check("{\"if\":{\"type\":\"string\"},\"then\":{\"maxLength\":2}}", L("\"ab\""),
	      L("\"abc\""));
	check("{\"type\":\"array\",\"uniqueItems\":true}", L("[]", "[1]"), L("[1,1]", "[1,2]"));
	check("{\"properties\":{\"a\":{}},\"maxProperties\":1,\"additionalProperties\":true}",
	      L("{}", "{\"a\":1}"), L("{\"a\":1,\"b\":2}", "{\"b\":2}"));
	check("{\"properties\":{\"a\":{},\"b\":{}},\"minProperties\":1}", L("{\"a\":1}"), L("{}"));
	check("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"dependentRequired\":{"
	      "\"a\":[\"b\"]}}",
	      L("{\"b\":1}", "{\"a\":1,\"b\":2}", "{}"), L("{\"a\":1}"));
	check("{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"id\":\"http://e.com/s\","
	      "\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true,\"dependencies\":{"
	      "\"a\":[\"b\"]}}",
	      L("1"), L("0"));
	/* up to draft 7 '$ref' hides its siblings; from 2019-09 on they apply too */
	check("{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"definitions\":{\"s\":{"
	      "\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/definitions/s\",\"type\":"
	      "\"integer\"}}}",
	      L("{\"a\":\"x\"}"), L("{\"a\":1}"));
	check("{\"$defs\":{\"s\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/"
	      "s\",\"maxLength\":2}}}",
	      L("{\"a\":\"xy\"}"), L("{\"a\":\"xyz\"}", "{\"a\":1}"));
	check("{\"$ref\":\"#\",\"type\":\"string\"}", L("\"x\""), L("1"));
	/* an $id below the root: '#' refs inside resolve in it */
	check("{\"$defs\":{\"t\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$id\":\"http://"
	      "e.com/a\",\"$defs\":{\"t\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/t\"}}}",
	      L("{\"a\":1}"), L("{\"a\":\"x\"}"));
	check("{\"$defs\":{\"t\":{\"$id\":\"t.json\",\"type\":\"boolean\"}},\"properties\":{\"a\":"
	      "{\"$ref\":\"t.json\"}}}",
	      L("{\"a\":true}"), L("{\"a\":1}"));
}

/* Issue 56: patternProperties, propertyNames, formats as grammars. */
static void
test_keys_and_formats(void)
{
	check("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
	      "\"patternProperties\":{\"^x-\":{\"type\":\"string\"}},\"additionalProperties\":false}",
	      L("{\"a\":1}", "{\"a\":1,\"x-k\":\"v\"}", "{\"x-\":\"v\"}"),
	      L("{\"a\":1,\"b\":2}", "{\"x-k\":1}"));
	/* a declared name a pattern finds takes both schemas */
	check("{\"type\":\"object\",\"properties\":{\"ab\":{\"type\":\"string\"}},"
	      "\"patternProperties\":{\"b\":{\"maxLength\":1}}}",
	      L("{\"ab\":\"x\"}"), L("{\"ab\":\"xy\"}"));
	/* extra keys: valued by additionalProperties and every pattern schema */
	check("{\"type\":\"object\",\"patternProperties\":{\"^n\":{\"type\":\"integer\"}},"
	      "\"additionalProperties\":{\"type\":\"number\"}}",
	      L("{\"n1\":1}", "{\"z\":2}"), L("{\"z\":1.5}", "{\"n\":\"x\"}"));
	check("{\"type\":\"object\",\"propertyNames\":{\"pattern\":\"^[a-z]+$\"},"
	      "\"additionalProperties\":{\"type\":\"integer\"}}",
	      L("{}", "{\"ab\":1}"), L("{\"A\":1}", "{\"\":1}"));
	check("{\"properties\":{\"Ab\":{},\"c\":{}},\"propertyNames\":{\"maxLength\":1}}",
	      L("{\"c\":1}"), L("{\"Ab\":1}"));
	check("{\"properties\":{\"a\":false,\"b\":{}}}", L("{\"b\":1}"), L("{\"a\":1}"));
	check("{\"type\":\"string\",\"format\":\"uri\"}",
	      L("\"https://example.com/a/b?q=1#f\"", "\"http://a\""), L("\"x\"", "\"https://\""));
	check("{\"type\":\"string\",\"format\":\"uri-reference\"}", L("\"/a/b\"", "\"#x\""),
	      L("\"\""));
	check("{\"type\":\"string\",\"format\":\"hostname\"}", L("\"a.example\""),
	      L("\"-a\"", "\"a..b\""));
	check("{\"type\":\"string\",\"format\":\"ipv4\"}", L("\"192.168.0.255\""),
	      L("\"256.1.1.1\"", "\"01.1.1.1\""));
	check("{\"type\":\"string\",\"format\":\"ipv6\"}", L("\"fe80:0:0:0:0:0:0:1\""),
	      L("\"fe80::1:\""));
	check("{\"type\":\"string\",\"format\":\"byte\"}", L("\"\"", "\"QUJD\"", "\"QQ==\""),
	      L("\"QUJ\"", "\"Q===\""));
}

static void
test_refused(void)
{
	refused("{\"not\":{}}", "'not' refuses every type", "the root");
	refused("{\"not\":{\"minLength\":2}}", "unsupported keyword 'not'", "the root");
	refused("{\"uniqueItems\":true,\"minItems\":2}", "'uniqueItems'", "root");
	refused("{\"type\":\"number\",\"multipleOf\":0.5}", "'multipleOf'", "root");
	refused("{\"contains\":{},\"maxContains\":1}", "'maxContains'", "root");
	refused("{\"minProperties\":1}", "'minProperties'", "root");
	refused("{\"properties\":{\"x\":{\"$ref\":\"https://e.com/s.json\"}}}", "'$ref'",
	        "/properties/x");
	refused("{\"$ref\":\"#/$defs/none\"}", "points at nothing", "root");
	refused("{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"null\"}]}},"
	        "\"$ref\":\"#/$defs/a\"}",
	        "recurses", "/$defs/a/anyOf/0");
	refused("false", "schema false", "root");
	refused("{\"type\":\"strnig\"}", "unknown type 'strnig'", "root");
	refused("{\"oneOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", "'oneOf'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "'pattern'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"a(?=b)\"}", "'pattern'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"\\\\bx\"}", "'pattern'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"(a*)*\"}", "'pattern'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"a(^+b)\"}", "a quantifier on '^' or '$'",
	        "root");
	refused("{\"type\":\"string\",\"pattern\":\"[z-a]\"}", "'pattern'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"^a+b$\",\"minLength\":3,\"maxLength\":1}",
	        "'minLength' is over 'maxLength'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"^ab?$\",\"minLength\":3}",
	        "no string matches the 'pattern'", "root");
	refused("{\"type\":\"string\",\"pattern\":\"^[a-z0-9]*x[a-z0-9]{40}$\",\"maxLength\":300}",
	        "limit: pattern and lengths", "root");
	refused("{\"type\":\"string\",\"format\":\"uri\",\"pattern\":\"a\"}", "beside 'format'",
	        "root");
	refused("{\"allOf\":[{\"pattern\":\"a\"},{\"pattern\":\"b\"}]}", "'pattern'", "root");
	refused("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "no type", "root");
	refused("{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{"
	        "\"properties\":{\"b\":{}},\"required\":[\"b\"]}]}",
	        "'additionalProperties'", "root");
	refused("{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}",
	        "no integer", "root");
	refused("{\"type\":\"integer\",\"minimum\":1e16}", "15 digits", "root");
	refused("{\"enum\":[1,2],\"type\":\"string\"}", "no value of 'enum'", "root");
	refused("{\"enum\":[\"a\"],\"pattern\":\"x\"}", "'pattern' beside 'enum'", "root");
	/* every place that cannot be enforced, at once */
	refused("{\"properties\":{\"a\":{\"contains\":{},\"maxContains\":1},\"b\":{\"type\":"
	        "\"string\",\"pattern\":"
	        "\"(?=x)\"}}}",
	        "'maxContains' at /properties/a",
	        "'pattern': lookarounds and other (?...) groups cannot be "
	        "expressed at /properties/b");
	refused("{\"properties\":{\"a\":{\"type\":\"string\",\"minLength\":-1}}}", "'minLength'",
	        "/properties/a");
	refused("{\"required\":[\"x\"],\"additionalProperties\":false}", "'x'", "root");
	refused("{\"minItems\":3,\"prefixItems\":[{}],\"items\":false}", "'minItems'", "root");
}

static void
test_limits(void)
{
	struct sbuf b = {0};
	cJSON *s;
	char *text = NULL, msg[128];

	for (int i = 0; i < 70; i++)
		sbuf_puts(&b, "{\"items\":");
	sbuf_puts(&b, "{}");
	for (int i = 0; i < 70; i++)
		sbuf_puts(&b, "}");
	refused(b.p, "deeper than 64", "/items/items");
	sbuf_clear(&b);
	sbuf_puts(&b, "{\"enum\":[");
	for (int i = 0; i < 20000; i++)
		sbuf_printf(&b, "%s\"%064d\"", i ? "," : "", i);
	sbuf_puts(&b, "]}");
	refused(b.p, "over 1 MiB", "root");
	sbuf_fini(&b);
	T_ERR(json_schema_gbnf(NULL, &text, msg, sizeof(msg)), ORCH_EINVAL);
	/* a message cut to fit its buffer */
	s = cJSON_Parse("{\"properties\":{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":{\"not\":{}}}}");
	T_ERR(json_schema_gbnf(s, &text, msg, 8), ORCH_EINVAL);
	T_EQ(strlen(msg), 7);
	cJSON_Delete(s);
}

static void
test_json_object(void)
{
	const char *t = json_object_gbnf();
	struct gram *g;
	struct gram_err e;
	static const char *const yes[] = {"{}", "{\"a\":[1,{\"b\":null}],\"c\":\"\\u00e9\"}",
	                                  "{ \"a\" : -1.5e3 }"};
	static const char *const no[] = {"[]", "1", "{\"a\":}", "{\"a\":1,}", "\"{}\""};

	T_OK(gram_compile(t, strlen(t), NULL, &g, &e));
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		T_TRUE(gram_accepts(g, yes[i], strlen(yes[i])) || (gram_free(g), false));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		T_TRUE(!gram_accepts(g, no[i], strlen(no[i])) || (gram_free(g), false));
	gram_free(g);
}

static orch_err
oom_once(void *ctx)
{
	char *text = NULL, msg[128];
	orch_err rv = json_schema_gbnf(ctx, &text, msg, sizeof(msg));

	free(text);
	return rv;
}

static void
test_oom(void)
{
	cJSON *s = cJSON_Parse(
	        "{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"array\","
	        "\"items\":{\"$ref\":\"#/$defs/n\"}}},\"additionalProperties\":{\"type\":\"string\","
	        "\"pattern\":\"^[a-z\\\\d]{2,}$\"}}},\"allOf\":[{\"properties\":{\"n\":{\"$ref\":"
	        "\"#/$defs/n\"}}},{\"properties\":{\"x\":{\"type\":\"integer\",\"minimum\":-5,"
	        "\"maximum\":50}}}],\"anyOf\":[{\"required\":[\"x\"]},{\"required\":[\"n\"]}]}");

	T_TRUE(s != NULL);
	T_TRUE(t_oom_loop(oom_once, s, 100000) > 0 || (cJSON_Delete(s), false));
	cJSON_Delete(s);
}

static void
test_expansion(void)
{
	char *text = NULL, msg[256];
	uint64_t others = max_expansion; /* the other tests' largest, printed at the end */
	char others_schema[sizeof(max_expansion_schema)];

	memcpy(others_schema, max_expansion_schema, sizeof(others_schema));

	refused("{\"type\":\"string\",\"pattern\":\"^((a{0,100}){0,100}){0,100}$\"}",
	        "unsupported 'pattern': its repeats expand to 1000000 parse positions, at most "
	        "100000",
	        "the root");
	refused("{\"items\":{\"type\":\"string\",\"pattern\":\"x((a|){0,100}){0,1001}\"}}",
	        "expand to 100100 parse positions", "/items");
	T_ERR(json_regex_gbnf("((a{0,100}){0,100}){0,100}", &text, msg, sizeof(msg)), ORCH_EINVAL);
	T_TRUE(strstr(msg, "its repeats expand to 1000000 parse positions, at most 100000") !=
	       NULL);
	T_TRUE(text == NULL);
	T_ERR(json_regex_gbnf("(a{0,10}(b?){0,100}){0,10000}", &text, msg, sizeof(msg)),
	      ORCH_EINVAL);
	T_TRUE(strstr(msg, "expand to 1000000 parse") != NULL);
	check("{\"type\":\"string\",\"pattern\":\"^(a{0,100}){0,1000}$\"}", L("\"\"", "\"aaa\""),
	      L("\"b\""));
	T_EQ(max_expansion, 100000);
	max_expansion = 0;
	regex_check("x(a{0,100}|b{0,10}){0,1000}", L("x", "xaab"), L("", "xc"));
	T_EQ(max_expansion, 100000);
	max_expansion = 0;
	check("{\"type\":\"array\",\"maxItems\":10000,\"items\":{\"type\":\"string\","
	      "\"maxLength\":10000}}",
	      L("[]", "[\"ab\",\"\"]"), L("[1]"));
	T_EQ(max_expansion, 10000);
	max_expansion = others;
	memcpy(max_expansion_schema, others_schema, sizeof(others_schema));
}

/* Issue 56: enum/const values that fail the keywords beside them, and what rests on it. */
static void
test_enum_beside(void)
{
	/* an object enum beside object keywords keeps the values that pass them */
	check("{\"enum\":[{\"a\":1},{\"b\":2},{\"a\":\"x\"}],\"properties\":{\"a\":{\"type\":"
	      "\"integer\"}},\"required\":[\"a\"]}",
	      L("{\"a\":1}"), L("{\"b\":2}", "{\"a\":\"x\"}"));
	check("{\"enum\":[{\"a\":1},{\"a\":1,\"c\":2}],\"properties\":{\"a\":{}},"
	      "\"additionalProperties\":false}",
	      L("{\"a\":1}"), L("{\"a\":1,\"c\":2}"));
	check("{\"enum\":[[1,2],[1,\"x\"]],\"items\":{\"type\":\"integer\"}}", L("[1,2]"),
	      L("[1,\"x\"]"));
	check("{\"enum\":[{\"a\":1},{\"a\":1,\"b\":2}],\"dependentRequired\":{\"a\":[\"b\"]}}",
	      L("{\"a\":1,\"b\":2}"), L("{\"a\":1}"));
	refused("{\"enum\":[{\"a\":1}],\"propertyNames\":{\"maxLength\":1}}",
	        "'propertyNames' beside 'enum'", "root");
	/* a oneOf enum branch whose values fail every other branch is apart from them */
	check("{\"type\":\"object\",\"oneOf\":[{\"required\":[\"r\"],\"properties\":{\"r\":{\"type\":"
	      "\"string\"}},\"additionalProperties\":false},{\"enum\":[{\"t\":\"v\"}]},{\"required\":"
	      "[\"t\"],\"properties\":{\"t\":{\"enum\":[\"a\",\"b\"]}},\"additionalProperties\":false}]}",
	      L("{\"r\":\"x\"}", "{\"t\":\"v\"}", "{\"t\":\"a\"}"), L("{\"t\":\"c\"}", "{}"));
	/* ... and left out, quietly, when forbidding the others' keys leaves it no value; the
	 * branch that shares its value is left out too */
	check("{\"type\":\"object\",\"oneOf\":[{\"required\":[\"r\"],\"properties\":{\"r\":{\"type\":"
	      "\"string\"}},\"additionalProperties\":false},{\"enum\":[{\"t\":\"v\"}]},{\"required\":"
	      "[\"t\"],\"properties\":{\"t\":{\"type\":\"string\"}},\"additionalProperties\":false}]}",
	      L("{\"r\":\"x\"}"), L("{\"t\":\"v\"}", "{\"t\":\"a\"}"));
	/* oneOf branches apart on objects only are made objects; an allOf branch is merged */
	check("{\"oneOf\":[{\"required\":[\"r\"],\"properties\":{\"r\":{}},\"additionalProperties\":"
	      "false},{\"allOf\":[{\"required\":[\"t\"],\"properties\":{\"t\":{\"type\":\"integer\"}}},{"
	      "\"additionalProperties\":false,\"properties\":{\"t\":{}}}]}]}",
	      L("{\"r\":1}", "{\"t\":1}"), L("\"x\"", "1", "{\"r\":1,\"t\":1}", "{}"));
	/* additionalProperties false in one merged part: another's optional property absent */
	check("{\"allOf\":[{\"properties\":{\"a\":{}},\"additionalProperties\":false},{"
	      "\"properties\":{\"b\":{}}}]}",
	      L("{\"a\":1}", "{}"), L("{\"b\":1}", "{\"a\":1,\"b\":1}"));
	/* a schema dependency, exactly: the name absent, or present with the schema */
	check("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{\"type\":\"integer\"}},"
	      "\"dependentSchemas\":{\"a\":{\"properties\":{\"b\":{\"minimum\":5}}}}}",
	      L("{\"b\":1}", "{}", "{\"a\":1}", "{\"a\":1,\"b\":6}"), L("{\"a\":1,\"b\":1}"));
	check("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{},\"c\":{}},\"dependentRequired\":{"
	      "\"a\":[\"b\"]},\"dependentSchemas\":{\"c\":false},\"additionalProperties\":false}",
	      L("{}", "{\"b\":1}", "{\"a\":1,\"b\":2}"), L("{\"a\":1}", "{\"c\":1}", "{\"x\":1}"));
	/* five dependencies on optional names: the stricter way (32 branches would be made) */
	check("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{},\"c\":{},\"d\":{},\"e\":{},"
	      "\"z\":{}},\"dependentRequired\":{\"a\":[\"z\"],\"b\":[\"z\"],\"c\":[\"z\"],"
	      "\"d\":[\"z\"],\"e\":[\"z\"]}}",
	      L("{\"z\":1}", "{\"a\":1,\"z\":1}"), L("{}", "{\"a\":1}"));
	check("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{\"type\":\"integer\"}},"
	      "\"required\":[\"a\"],\"dependentSchemas\":{\"a\":{\"properties\":{\"b\":{\"minimum\":"
	      "5}}}}}",
	      L("{\"a\":1,\"b\":6}", "{\"a\":1}"), L("{\"a\":1,\"b\":1}"));
}

/*
 * Schemas whose checks branch without end (a review's: 7 s, and 52 s with 12 GB, before):
 * each ends within the compile bound (JS_TIME_MAX_MS of CPU), compiled or refused.
 */
static void
test_bounded_helpers(void)
{
	static const char *const heavy[] = {
	        /* oneOf apartness through a self-referencing anyOf: 6^9 visits */
	        "{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"$ref\":\"#/$defs/a\"},"
	        "{\"$ref\":\"#/$defs/a\"},{\"$ref\":\"#/$defs/a\"},{\"$ref\":\"#/$defs/a\"},"
	        "{\"$ref\":\"#/$defs/a\"},{\"type\":\"string\"}]}},"
	        "\"oneOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"null\"}]}",
	        /* the complement of a schema of three self-references: 3^16 complements */
	        "{\"$defs\":{\"a\":{\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"},"
	        "\"y\":{\"$ref\":\"#/$defs/a\"},\"z\":{\"$ref\":\"#/$defs/a\"}}}},"
	        "\"not\":{\"$ref\":\"#/$defs/a\"}}",
	};
	for (size_t i = 0; i < sizeof(heavy) / sizeof(heavy[0]); i++) {
		cJSON *s = cJSON_Parse(heavy[i]);
		char *text = NULL, msg[512];
		orch_err rv = json_schema_gbnf(s, &text, msg, sizeof(msg));
		T_TRUE(s != NULL);
		/* compiled or refused, with a message (the bound's, or what cannot be enforced) */
		T_TRUE(rv == ORCH_OK || (rv == ORCH_EINVAL && msg[0] != '\0'));
		orch_free(text);
		cJSON_Delete(s);
	}
}

/* A review's: oneOf branches the apartness checks must not misread. */
static void
test_one_of_reads(void)
{
	/* draft-04 has no 'const': the branches overlap ("y" matches both), not apart */
	refused("{\"$schema\":\"http://json-schema.org/draft-04/schema#\","
	        "\"oneOf\":[{\"const\":\"x\",\"type\":\"string\"},{\"enum\":[\"y\"]}]}",
	        "no branch can be told apart", "the root");
	/* a branch behind 41 $refs in a row is not followed: refused, not counted apart */
	refused("{\"$defs\":{\"d0\":{\"$ref\":\"#/$defs/d1\"},\"d1\":{\"$ref\":\"#/$defs/d2\"},\"d2\":{\"$ref\":\"#/$defs/d3\"},\"d3\":{\"$ref\":\"#/$defs/d4\"},\"d4\":{\"$ref\":\"#/$defs/d5\"},\"d5\":{\"$ref\":\"#/$defs/d6\"},\"d6\":{\"$ref\":\"#/$defs/d7\"},\"d7\":{\"$ref\":\"#/$defs/d8\"},\"d8\":{\"$ref\":\"#/$defs/d9\"},\"d9\":{\"$ref\":\"#/$defs/d10\"},\"d10\":{\"$ref\":\"#/$defs/d11\"},\"d11\":{\"$ref\":\"#/$defs/d12\"},\"d12\":{\"$ref\":\"#/$defs/d13\"},\"d13\":{\"$ref\":\"#/$defs/d14\"},\"d14\":{\"$ref\":\"#/$defs/d15\"},\"d15\":{\"$ref\":\"#/$defs/d16\"},\"d16\":{\"$ref\":\"#/$defs/d17\"},\"d17\":{\"$ref\":\"#/$defs/d18\"},\"d18\":{\"$ref\":\"#/$defs/d19\"},\"d19\":{\"$ref\":\"#/$defs/d20\"},\"d20\":{\"$ref\":\"#/$defs/d21\"},\"d21\":{\"$ref\":\"#/$defs/d22\"},\"d22\":{\"$ref\":\"#/$defs/d23\"},\"d23\":{\"$ref\":\"#/$defs/d24\"},\"d24\":{\"$ref\":\"#/$defs/d25\"},\"d25\":{\"$ref\":\"#/$defs/d26\"},\"d26\":{\"$ref\":\"#/$defs/d27\"},\"d27\":{\"$ref\":\"#/$defs/d28\"},\"d28\":{\"$ref\":\"#/$defs/d29\"},\"d29\":{\"$ref\":\"#/$defs/d30\"},\"d30\":{\"$ref\":\"#/$defs/d31\"},\"d31\":{\"$ref\":\"#/$defs/d32\"},\"d32\":{\"$ref\":\"#/$defs/d33\"},\"d33\":{\"$ref\":\"#/$defs/d34\"},\"d34\":{\"$ref\":\"#/$defs/d35\"},\"d35\":{\"$ref\":\"#/$defs/d36\"},\"d36\":{\"$ref\":\"#/$defs/d37\"},\"d37\":{\"$ref\":\"#/$defs/d38\"},\"d38\":{\"$ref\":\"#/$defs/d39\"},\"d39\":{\"$ref\":\"#/$defs/d40\"},\"d40\":{\"type\":\"string\"}},\"oneOf\":[{\"type\":\"string\"},{\"$ref\":\"#/$defs/d0\"}]}",
	        "cannot be followed", "");
}

int
main(void)
{
	T_RUN(test_bounded_helpers);
	T_RUN(test_one_of_reads);
	T_RUN(test_types);
	T_RUN(test_objects);
	T_RUN(test_arrays);
	T_RUN(test_enum_const);
	T_RUN(test_integer_ranges);
	T_RUN(test_number_ranges);
	T_RUN(test_strings);
	T_RUN(test_refs);
	T_RUN(test_composition);
	T_RUN(test_refused);
	T_RUN(test_enum_beside);
	T_RUN(test_limits);
	T_RUN(test_json_object);
	T_RUN(test_expansion);
	T_RUN(test_validator_semantics);
	T_RUN(test_keys_and_formats);
	T_RUN(test_oom);
	/* real grammars stay far below GRAM_EXPANSION_MAX: their longest string or array */
	printf("largest expansion of the other grammars: %" PRIu64 " (at most %d), of %s\n",
	       max_expansion, GRAM_EXPANSION_MAX, max_expansion_schema);
	return t_done();
}
