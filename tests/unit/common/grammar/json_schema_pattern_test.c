/*
 * json_schema_pattern_test.c - string patterns to GBNF (json_schema.h): the
 * ECMAScript subset as a grammar, a pattern with minLength/maxLength as their
 * exact intersection, anchors anywhere (json_schema_rxlen.c), and
 * json_regex_gbnf's whole-output regexes. Texts each grammar must accept and
 * refuse; pattern_oracle_test checks random patterns against Python's re.
 */
#include <cjson/cJSON.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "js_check.h"
#include "t.h"

static void
test_patterns(void)
{
	check("{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-\\\\d{3,5}$\"}",
	      L("\"AB-123\"", "\"ZZ-12345\""), L("\"AB-12\"", "\"xAB-123\"", "\"AB-123 \""));
	/* unanchored: the match anywhere (up to 32 characters before it) */
	check("{\"type\":\"string\",\"pattern\":\"ab+c\"}",
	      L("\"abc\"", "\"xxabbbcyy\"", "\"\\nabc\\\"\""), L("\"ac\"", "\"abbd\"", "\"\""));
	check("{\"type\":\"string\",\"pattern\":\"^x|y$\"}", L("\"x\"", "\"xa\"", "\"ay\""),
	      L("\"ax\"", "\"ya\""));
	/* a quote, a backslash and controls the pattern allows are written escaped */
	check("{\"type\":\"string\",\"pattern\":\"^say \\\"(hi|yo)\\\"\\\\\\\\$\"}",
	      L("\"say \\\"hi\\\"\\\\\""), L("\"say \"hi\"\\\"", "\"say \\\"ho\\\"\\\\\""));
	check("{\"type\":\"string\",\"pattern\":\"^[\\\\t\\\\n\\\"]\\\\s?.$\"}",
	      L("\"\\t\\u0001\"", "\"\\n x\"", "\"\\\"\\\"\""), L("\"\\ta\\n\"", "\"a\""));
	check("{\"type\":\"string\",\"pattern\":\"^(?:[0-9a-f]{2}){1,3}$\"}",
	      L("\"0a\"", "\"0a1b2c\""), L("\"0\"", "\"0a1b2c3d\"", "\"0A\""));
	check("{\"type\":\"string\",\"pattern\":\"^\\\\w+(\\\\s\\\\w+)?$\"}",
	      L("\"a_1\"", "\"a b\""), L("\"a  b\"", "\"\"", "\"\xc3\xa9\""));
	check("{\"type\":\"string\",\"pattern\":\"^\\\\u00e9\\\\u{1F600}[^a-z\\\\d]\\\\.$\"}",
	      L("\"\xc3\xa9\xf0\x9f\x98\x80!.\"", "\"\xc3\xa9\xf0\x9f\x98\x80\\\\.\""),
	      L("\"\xc3\xa9\xf0\x9f\x98\x80"
	        "a.\"",
	        "\"\xc3\xa9\xf0\x9f\x98\x80"
	        "1.\""));
	/* lengths: cut into a single repeated class, or implied by the pattern */
	check("{\"type\":\"string\",\"pattern\":\"^[a-z]+$\",\"minLength\":2,\"maxLength\":3}",
	      L("\"ab\"", "\"abc\""), L("\"a\"", "\"abcd\"", "\"AB\""));
	check("{\"type\":\"string\",\"pattern\":\"^[0-9]{5}$\",\"maxLength\":5}", L("\"12345\""),
	      L("\"1234\""));
	/* anchors inside the pattern: the start and the end of the string, wherever they stand */
	check("{\"type\":\"string\",\"pattern\":\"(?:^@[a-z]+\\\\/[a-z]+|^[a-zA-Z][^:]*)$\"}",
	      L("\"@scope/name\"", "\"abc\"", "\"a-b c\""),
	      L("\"1abc\"", "\"@scope\"", "\"ab:c\"", "\"1@scope/name\""));
	refused("{\"type\":\"string\",\"pattern\":\"a^b\"}", "no string matches the 'pattern'",
	        "root");
	check("{\"type\":\"string\",\"pattern\":\"(x|^y)z\",\"maxLength\":4}",
	      L("\"yz\"", "\"xz\"", "\"axz\"", "\"xzab\""), L("\"ayz\"", "\"axzab\"", "\"z\""));
	/* lengths the pattern does not imply: the exact intersection, in code points */
	check("{\"type\":\"string\",\"pattern\":\"^a+b$\",\"maxLength\":4}",
	      L("\"ab\"", "\"aab\"", "\"aaab\""), L("\"aaaab\"", "\"b\"", "\"a\""));
	check("{\"type\":\"string\",\"pattern\":\"^(ab|c)+$\",\"minLength\":3,\"maxLength\":5}",
	      L("\"abc\"", "\"ccc\"", "\"abab\"", "\"ababc\"", "\"cabab\""),
	      L("\"ab\"", "\"cc\"", "\"ababab\"", "\"aba\""));
	check("{\"type\":\"string\",\"pattern\":\"^[a-z]+(-[a-z]+)*$\",\"minLength\":4}",
	      L("\"abcd\"", "\"a-bc\"", "\"ab-cd-ef\""),
	      L("\"abc\"", "\"a-b\"", "\"-abc\"", "\"abc-\""));
	check("{\"type\":\"string\",\"pattern\":\"x\\\\d\",\"maxLength\":3}", /* unanchored */
	      L("\"x1\"", "\"ax1\"", "\"x1a\""), L("\"abx1\"", "\"x\"", "\"ax1b\""));
	check("{\"type\":\"string\",\"pattern\":\"^\\\"?\\u00e9.$\",\"minLength\":3}", /* escapes */
	      L("\"\\\"\xc3\xa9\xf0\x9f\x98\x80\"", "\"\\\"\xc3\xa9\\t\""),
	      L("\"\xc3\xa9"
	        "a\"",
	        "\"\\\"\xc3\xa9\"", "\"\\\"\xc3\xa9\\n\""));
}

static void
test_regex(void)
{
	/* matched whole, anchors or not; the characters as they are (a quote, a backslash) */
	regex_check("[0-9]{3}-[0-9]{4}", (const char *[]){"555-1234", NULL},
	            (const char *[]){"\"555-1234\"", "x555-1234", "555-12345", "55-1234", NULL});
	regex_check("^(cat|dog)s?$|^bird$", (const char *[]){"cat", "dogs", "bird", NULL},
	            (const char *[]){"birds", "cow", "", NULL});
	regex_check("say \"hi\"\\n", (const char *[]){"say \"hi\"\n", NULL},
	            (const char *[]){"say hi", "say \"hi\"\\n", NULL});
	regex_check("\\d+(\\.\\d{1,2})?", (const char *[]){"3", "3.14", NULL},
	            (const char *[]){"3.", "3.141", "a", NULL});
	regex_check("[^a-z]+", (const char *[]){"ABC 123!", "XY", NULL},
	            (const char *[]){"abc", NULL});
	regex_check("a.c", (const char *[]){"abc", "a\"c", "a\u00e9c", NULL},
	            (const char *[]){"a\nc", "ac", NULL});
	/* outside the subset: refused by name */
	char *text = NULL, msg[256];
	T_ERR(json_regex_gbnf("(a)\\1", &text, msg, sizeof(msg)), ORCH_EINVAL);
	T_TRUE(strstr(msg, "backreference") != NULL);
	T_ERR(json_regex_gbnf("(?=a)b", &text, msg, sizeof(msg)), ORCH_EINVAL);
	T_ERR(json_regex_gbnf("a(b", &text, msg, sizeof(msg)), ORCH_EINVAL);
	T_ERR(json_regex_gbnf(NULL, &text, msg, sizeof(msg)), ORCH_EINVAL);
	/* a refused pattern of patternProperties is named in the pointer */
	cJSON *pp = cJSON_Parse("{\"type\":\"object\",\"patternProperties\":{\"(?=a)b\":{}}}");
	T_ERR(json_schema_gbnf(pp, &text, msg, sizeof(msg)), ORCH_EINVAL);
	T_TRUE(strstr(msg, "/patternProperties/(?=a)b") != NULL);
	cJSON_Delete(pp);
}

/*
 * A pattern whose repeats nest in repeats of what can match nothing,
 * ((a{0,100}){0,100}){0,100}: refused by the schema (orch's grammar would
 * not compile: a 500) and by a regex response_format, as the compiler
 * counts it (GRAM_EXPANSION_MAX); 10^5 exactly is taken and compiles. A
 * string's length inside an array's does not multiply.
 */
int
main(void)
{
	T_RUN(test_patterns);
	T_RUN(test_regex);
	return t_done();
}
