/*
 * json_schema_fmtval.c - whether a given string is of a format, for enum/const
 * values beside 'format' and property names beside a propertyNames 'format';
 * json_schema.c #includes this file (after json_schema_scalar.c); it is not
 * built on its own.
 *
 * The check is a grammar too, compiled and run over the JSON-quoted string: for
 * the URI formats a wider one than the grammars that make strings (any scheme,
 * host and path characters of RFC 3986, RFC 6570 expressions), still within what
 * ajv-formats (full) and python-jsonschema accept; for the other formats the
 * making grammar itself. A string the check refuses is treated as not of the
 * format (stricter: a value valid under the format may be dropped, never an
 * invalid one kept).
 */

#define W_PCT   "\"%\" [0-9A-Fa-f] [0-9A-Fa-f]"
#define W_PCHAR "( [A-Za-z0-9._~!$&'()*+,;=:@\\-] | " W_PCT " )"
#define W_TAIL  "( \"?\" ( " W_PCHAR " | [/?] )* )? ( \"#\" ( " W_PCHAR " | [/?] )* )?"
#define W_URI                                                                                          \
	"[A-Za-z] [A-Za-z0-9+.\\-]* \"://\" [A-Za-z0-9._~\\-]+ ( \":\" [0-9]{1,5} )? ( \"/\" " W_PCHAR \
	"* )* " W_TAIL
#define W_URIREF W_URI " | ( \"/\" " W_PCHAR "* )+ " W_TAIL " | \"#\" ( " W_PCHAR " | [/?] )*"
#define W_VAR    "[A-Za-z0-9_]+ ( \":\" [1-9] [0-9]{0,3} | \"*\" )?"
#define W_URITPL                                                                              \
	"( [A-Za-z0-9._~!$&()*+,;=:@/?#\\-] | " W_PCT " | \"{\" [+#./;?&=,!@|]? " W_VAR " ( " \
	"\",\" " W_VAR " )* \"}\" )*"

static const struct {
	const char *name, *gbnf;
} wide_formats[] = {
        {"uri", W_URI},
        {"url", W_URI},
        {"uri-reference", W_URIREF},
        {"uri-template", W_URITPL},
};

/*
 * fmt_value_ok - whether string @v is of format @fmt (one str_format() takes) into
 * *@ok, by the check grammar above; ORCH_ENOMEM.
 */
static orch_err
fmt_value_ok(const char *fmt, const char *v, bool *ok)
{
	const char *g = NULL;
	struct sbuf t = {0}, q = {0};
	struct gram *gr = NULL;
	struct gram_err ge;
	orch_err rv;

	*ok = false;
	for (size_t i = 0; i < sizeof(wide_formats) / sizeof(wide_formats[0]); i++)
		if (strcmp(wide_formats[i].name, fmt) == 0)
			g = wide_formats[i].gbnf;
	for (size_t i = 0; g == NULL && i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i].name, fmt) == 0)
			g = formats[i].gbnf;
	if (g == NULL)
		return ORCH_OK;
	sbuf_printf(&t, "root ::= \"\\\"\" ( %s ) \"\\\"\"\n", g);
	json_quote(&q, v);
	if ((rv = sbuf_err(&t)) == ORCH_OK && (rv = sbuf_err(&q)) == ORCH_OK &&
	    (rv = gram_compile(t.p, t.n, NULL, &gr, &ge)) == ORCH_OK)
		*ok = gram_accepts(gr, q.p, q.n);
	if (rv == ORCH_EINVAL)
		rv = ORCH_OK; /* a check grammar that does not compile: nothing is of it */
	gram_free(gr);
	sbuf_fini(&t);
	sbuf_fini(&q);
	return rv;
}

/*
 * value_format_ok - whether enum/const value @v satisfies the 'format' beside it
 * in @s (*@ok): a string format checked as above, an integer format as bounds;
 * a format about another type, or one no validator checks, holds.
 */
static orch_err
value_format_ok(const cJSON *s, const cJSON *v, bool *ok)
{
	const cJSON *fmt = kw(s, "format");
	int i;

	*ok = true;
	if (!cJSON_IsString(fmt))
		return ORCH_OK;
	if (cJSON_IsString(v) && str_format(fmt))
		return fmt_value_ok(fmt->valuestring, v->valuestring, ok);
	if (cJSON_IsNumber(v) && (i = int_format(fmt)) >= 0)
		*ok = floor(v->valuedouble) == v->valuedouble &&
		      v->valuedouble >= int_formats[i].lo && v->valuedouble <= int_formats[i].hi;
	return ORCH_OK;
}
