/*
 * json_schema_scalar.c - strings (lengths, formats) and numbers for
 * json_schema.c, which #includes this file; it is not built on its own.
 *
 * Each grammar "character" of a length-bound string decodes to exactly one
 * code point (char1: no surrogate-pair escapes), so lengths count as JSON
 * Schema counts them.
 *
 * Numbers with bounds have no exponent; integers at most 15 digits; a
 * fraction at most 6 digits, ending in 1-9, after an integer part of at
 * most 9 digits, so every sentence is the double it names to well within
 * one part in 1e15 and the bounds hold after JSON parsing too.
 */

#define NUM_MAX      999999999999999LL /* 15 digits */
#define FRAC_INT_MAX 999999999LL       /* the integer part of a bounded number with a fraction */

#define G_DATE                                                                                       \
	"[0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" "  \
	"[01] ) | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | \"02-\" ( " \
	"\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )"
#define G_TIME                                                                                      \
	"( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? ( " \
	"\"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"
#define G_LABEL "[a-zA-Z0-9] ( [a-zA-Z0-9\\-]{0,14} [a-zA-Z0-9] )?"
/* hostname labels start with a letter (some checkers refuse an all-digit last label) */
#define G_HOST \
	"[a-z] ( [a-z0-9\\-]{0,14} [a-z0-9] )? ( \".\" [a-z] ( [a-z0-9\\-]{0,14} [a-z0-9] )? ){0,3}"
#define G_SEG "[A-Za-z0-9._~\\-]{1,16}"
#define G_URI                                                                           \
	"( \"https\" | \"http\" ) \"://\" " G_HOST " ( \"/\" " G_SEG " ){0,4} ( \"?\" " \
	"[A-Za-z0-9._~=&\\-]{1,24} )? ( \"#\" " G_SEG " )?"
#define G_OCTET "( \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9]? [0-9] )"
#define G_JPTR  "( \"/\" ( [A-Za-z0-9_.\\-] | \"~0\" | \"~1\" ){0,16} ){0,8}"

/*
 * The formats taken: each a conservative grammar that ajv-formats (full mode) and
 * python-jsonschema accept, and its lengths in code points.
 */
static const struct {
	const char *name, *gbnf;
	uint64_t lo, hi;
} formats[] = {
        {"date", G_DATE, 10, 10},
        {"time", G_TIME, 9, 21},
        {"iso-time", G_TIME, 9, 21},
        {"date-time", G_DATE " \"T\" " G_TIME, 20, 32},
        {"iso-date-time", G_DATE " \"T\" " G_TIME, 20, 32},
        {"uuid",
         "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}", 36,
         36},
        {"email",
         "[a-zA-Z0-9_+\\-]{1,16} ( \".\" [a-zA-Z0-9_+\\-]{1,16} )? \"@\" " G_LABEL
         " ( \".\" " G_LABEL " )? \".\" [a-z]{2,6}",
         6, 74},
        {"idn-email",
         "[a-zA-Z0-9_+\\-]{1,16} ( \".\" [a-zA-Z0-9_+\\-]{1,16} )? \"@\" " G_LABEL
         " ( \".\" " G_LABEL " )? \".\" [a-z]{2,6}",
         6, 74},
        {"hostname", G_HOST, 1, 67},
        {"idn-hostname", G_HOST, 1, 67},
        {"uri", G_URI, 9, 185},
        {"url", G_URI, 9, 185},
        {"iri", G_URI, 9, 185},
        {"uri-template", G_URI, 9, 185},
        {"uri-reference", G_URI " | ( \"/\" " G_SEG " ){1,4} | \"#\" " G_SEG, 2, 185},
        {"iri-reference", G_URI " | ( \"/\" " G_SEG " ){1,4} | \"#\" " G_SEG, 2, 185},
        {"ipv4", G_OCTET " \".\" " G_OCTET " \".\" " G_OCTET " \".\" " G_OCTET, 7, 15},
        {"ipv6", "[0-9a-f]{1,4} ( \":\" [0-9a-f]{1,4} ){7}", 15, 39},
        {"byte", "( [A-Za-z0-9+/]{4} ){0,64} ( [A-Za-z0-9+/]{2} \"==\" | [A-Za-z0-9+/]{3} \"=\" )?",
         0, 260},
        {"regex", "[a-zA-Z0-9_ \\-]{0,32}", 0, 32},
        {"json-pointer", G_JPTR, 0, 264},
        {"relative-json-pointer", "( \"0\" | [1-9] [0-9]{0,3} ) ( \"#\" | " G_JPTR " )", 1, 268},
        {"json-pointer-uri-fragment", "\"#\" ( \"/\" [A-Za-z0-9_.\\-]{0,16} ){0,8}", 1, 137},
        {"duration",
         "\"P\" ( [0-9]{1,4} \"D\" ( \"T\" [0-9]{1,2} \"H\" )? | \"T\" [0-9]{1,2} \"H\" )", 3, 13},
        {"color", "\"#\" [0-9a-f]{6}", 7, 7},
};

/* Formats of numbers: each an integer range (float and double allow any number). */
static const struct {
	const char *name;
	double lo, hi;
} int_formats[] = {
        {"int8", -128.0, 127.0},
        {"int16", -32768.0, 32767.0},
        {"int32", -2147483648.0, 2147483647.0},
        {"int64", -9223372036854775808.0, 9223372036854775807.0},
        {"uint8", 0.0, 255.0},
        {"uint16", 0.0, 65535.0},
        {"uint32", 0.0, 4294967295.0},
        {"uint64", 0.0, 18446744073709551615.0},
};

/* int_format - the index of integer format @fmt in int_formats, or -1. */
static int
int_format(const cJSON *fmt)
{
	for (size_t i = 0; cJSON_IsString(fmt) && i < sizeof(int_formats) / sizeof(int_formats[0]);
	     i++)
		if (strcmp(int_formats[i].name, fmt->valuestring) == 0)
			return (int)i;
	return -1;
}

/* gen_format - a string of a known format (lengths only if the format implies them). */
static orch_err
gen_format(struct js *js, const cJSON *fmt, bool pattern, uint64_t lo, uint64_t hi, struct sbuf *b)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i].name, fmt->valuestring) == 0)
			break;
	if (pattern)
		return js_fail(js, "'pattern' beside 'format' is not supported");
	if (lo > formats[i].lo || hi < formats[i].hi)
		return js_fail(js,
		               "'minLength'/'maxLength' beside format '%s' are taken only when "
		               "they allow %" PRIu64 " to %" PRIu64 " code points",
		               fmt->valuestring, formats[i].lo, formats[i].hi);
	sbuf_printf(b, "\"\\\"\" ( %s ) \"\\\"\"", formats[i].gbnf);
	return ORCH_OK;
}

/*
 * str_format - a format gen_format takes. Any other is ignored on strings: those
 * about numbers (int32, float...) constrain no string, and one no validator checks
 * is an annotation.
 */
static bool
str_format(const cJSON *fmt)
{
	for (size_t i = 0; cJSON_IsString(fmt) && i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i].name, fmt->valuestring) == 0)
			return true;
	return false;
}

static orch_err
gen_str(struct js *js, const cJSON *s, struct sbuf *b)
{
	const cJSON *pat = kw(s, "pattern"), *fmt = kw(s, "format");
	uint64_t lo = 0, hi = JS_INF;
	orch_err rv;

	if ((rv = get_count(js, s, "minLength", &lo)) != ORCH_OK ||
	    (rv = get_count(js, s, "maxLength", &hi)) != ORCH_OK)
		return rv;
	if (lo > hi)
		return js_fail(js, "'minLength' is over 'maxLength': no string can match");
	if (pat && !cJSON_IsString(pat))
		return js_fail(js, "'pattern' must be a string");
	if (fmt && !cJSON_IsString(fmt))
		return js_fail(js, "'format' must be a string");
	if (str_format(fmt))
		return gen_format(js, fmt, pat != NULL, lo, hi, b);
	if (pat)
		return gen_pattern(js, pat->valuestring, lo, hi, b);
	if (lo == 0 && hi == JS_INF) {
		js->used |= U_STRING;
		sbuf_puts(b, "string");
		return ORCH_OK;
	}
	if (lo > JS_REPEAT_MAX)
		return js_fail(js, "'minLength' over %d is not supported", JS_REPEAT_MAX);
	js->used |= U_CHAR1;
	if (hi == JS_INF)
		sbuf_printf(b, "\"\\\"\" char1{%" PRIu64 ",} \"\\\"\"", lo);
	else
		sbuf_printf(b, "\"\\\"\" char1{%" PRIu64 ",%" PRIu64 "} \"\\\"\"", lo,
		            hi < JS_REPEAT_MAX ? hi : JS_REPEAT_MAX);
	return ORCH_OK;
}

/* put_same_len - decimal strings from @a to @z, both @n digits (a <= z). */
static void
put_same_len(struct sbuf *b, const char *a, const char *z, size_t n)
{
	static const char zeros[] = "000000000000000", nines[] = "999999999999999";
	bool a0, z9;
	char lo, hi;
	int alts = 0;

	if (n == 0)
		return;
	if (a[0] == z[0]) {
		size_t k = 1;
		while (k < n && a[k] == z[k])
			k++;
		sbuf_printf(b, "\"%.*s\" ", (int)k, a);
		put_same_len(b, a + k, z + k, n - k);
		return;
	}
	a0 = strspn(a + 1, "0") == n - 1;
	z9 = strspn(z + 1, "9") == n - 1;
	lo = a0 ? a[0] : (char)(a[0] + 1);
	hi = z9 ? z[0] : (char)(z[0] - 1);
	sbuf_puts(b, "( ");
	if (!a0) {
		sbuf_printf(b, "\"%c\" ", a[0]);
		put_same_len(b, a + 1, nines + 15 - (n - 1), n - 1);
		alts++;
	}
	if (lo <= hi) {
		sbuf_printf(b, "%s[%c-%c] ", alts++ ? "| " : "", lo, hi);
		if (n > 1)
			sbuf_printf(b, "[0-9]{%zu} ", n - 1);
	}
	if (!z9) {
		sbuf_printf(b, "%s\"%c\" ", alts ? "| " : "", z[0]);
		put_same_len(b, zeros + 15 - (n - 1), z + 1, n - 1);
	}
	sbuf_puts(b, ") ");
}

/* put_range - the decimal integers lo..hi (0 <= lo <= hi <= NUM_MAX), no leading zeros. */
static void
put_range(struct sbuf *b, long long lo, long long hi)
{
	char a[24], z[24];
	long long p = 1;
	bool first = true;

	sbuf_puts(b, "( ");
	for (size_t len = 1; len <= 15 && (len == 1 || p <= hi); len++, p *= 10) {
		long long x = len == 1 || lo > p ? lo : p;
		long long y = hi < p * 10 - 1 ? hi : p * 10 - 1;
		if (x > y)
			continue;
		snprintf(a, sizeof(a), "%lld", x);
		snprintf(z, sizeof(z), "%lld", y);
		sbuf_puts(b, first ? "" : "| ");
		put_same_len(b, a, z, len);
		first = false;
	}
	sbuf_puts(b, ") ");
}

/* One numeric bound: value, exclusive, present. */
struct bound {
	double v;
	bool x, set;
};

/* num_bound - the tighter of keyword @k (inclusive) and @xk (exclusive) into *@bd. */
static orch_err
num_bound(struct js *js, const cJSON *s, const char *k, const char *xk, bool upper,
          struct bound *bd)
{
	const cJSON *a = kw(s, k), *x = kw(s, xk);

	*bd = (struct bound){0, false, false};
	if (a && !cJSON_IsNumber(a))
		return js_fail(js, "'%s' must be a number", k);
	if (x && !cJSON_IsNumber(x) && !cJSON_IsBool(x))
		return js_fail(js, "'%s' must be a number", xk);
	if (a)
		*bd = (struct bound){a->valuedouble, cJSON_IsTrue(x), true}; /* draft 4: a flag */
	if (cJSON_IsNumber(x) &&
	    (!bd->set || (upper ? x->valuedouble <= bd->v : x->valuedouble >= bd->v)))
		*bd = (struct bound){x->valuedouble, true, true};
	return ORCH_OK;
}

/*
 * int_bounds - the bounds as integers [*lo, *hi] within ±NUM_MAX, with
 * *@lox and *@hix whether a fraction above *lo / below *hi is still allowed:
 * integer-valued bounds are exact, others are rounded inward (stricter).
 */
static orch_err
int_bounds(struct js *js, struct bound l, struct bound h, bool integer, long long *lo,
           long long *hi, bool *lox, bool *hix)
{
	double a = -(double)NUM_MAX, z = (double)NUM_MAX;

	*lox = *hix = false;
	if (l.set && l.v > a) {
		a = floor(l.v) == l.v ? l.v : ceil(l.v);
		*lox = l.x && floor(l.v) == l.v;
		if (integer && *lox)
			a += 1, *lox = false;
	}
	if (h.set && h.v < z) {
		z = floor(h.v) == h.v ? h.v : floor(h.v);
		*hix = h.x && floor(h.v) == h.v;
		if (integer && *hix)
			z -= 1, *hix = false;
	}
	if (a > (double)NUM_MAX || z < -(double)NUM_MAX)
		return js_fail(js, "a bound beyond the %d digits orch generates", 15);
	*lo = (long long)a;
	*hi = (long long)z;
	return ORCH_OK;
}

/* put_num_side - one sign's alternatives: integers ilo..ihi, fractions on flo..fhi. */
static int
put_num_side(struct sbuf *b, long long ilo, long long ihi, long long flo, long long fhi)
{
	int alts = 0;

	if (ilo <= ihi) {
		put_range(b, ilo, ihi);
		alts++;
	}
	fhi = fhi < FRAC_INT_MAX ? fhi : FRAC_INT_MAX;
	if (flo <= fhi) {
		sbuf_puts(b, alts++ ? "| " : "");
		put_range(b, flo, fhi);
		sbuf_puts(b, "\".\" [0-9]{0,5} [1-9] ");
	}
	return alts;
}

/*
 * gen_num - a number (or @integer) within the bounds of @s. For x >= 0 with
 * bounds a, z: integers a(+1 if exclusive) .. z(-1), and n.f (f not zero)
 * for n in max(a, 0) .. z-1; for x < 0 the same on -x with -z, -a.
 */
static orch_err
gen_num(struct js *js, const cJSON *s, struct sbuf *b, bool integer)
{
	const cJSON *mul = kw(s, "multipleOf");
	struct bound l, h;
	long long a = 0, z = 0;
	bool ax, zx;
	size_t at, neg;
	orch_err rv;
	int n, f;

	if (mul && (!cJSON_IsNumber(mul) || mul->valuedouble != 1))
		return js_fail(js, "unsupported keyword 'multipleOf' (only 1 is taken)");
	integer = integer || mul;
	if ((rv = num_bound(js, s, "minimum", "exclusiveMinimum", false, &l)) != ORCH_OK ||
	    (rv = num_bound(js, s, "maximum", "exclusiveMaximum", true, &h)) != ORCH_OK)
		return rv;
	if ((f = int_format(kw(s, "format"))) >= 0) { /* int32...: an integer in its range */
		integer = true;
		if (!l.set || l.v < int_formats[f].lo)
			l = (struct bound){int_formats[f].lo, false, true};
		if (!h.set || h.v > int_formats[f].hi)
			h = (struct bound){int_formats[f].hi, false, true};
	}
	if (!l.set && !h.set) {
		js->used |= integer ? U_INTEGER : U_NUMBER;
		sbuf_puts(b, integer ? "integer" : "number");
		return ORCH_OK;
	}
	if ((rv = int_bounds(js, l, h, integer, &a, &z, &ax, &zx)) != ORCH_OK)
		return rv;
	at = b->n;
	sbuf_puts(b, "( ");
	n = put_num_side(b, a + ax > 0 ? a + ax : 0, z - zx, integer ? 1 : (a > 0 ? a : 0),
	                 integer ? 0 : z - 1);
	neg = b->n;
	sbuf_puts(b, n ? "| \"-\" ( " : "\"-\" ( ");
	if (put_num_side(b, -z + zx > 1 ? -z + zx : 1, -a - ax, integer ? 1 : (-z > 0 ? -z : 0),
	                 integer ? 0 : -a - 1) > 0) {
		sbuf_puts(b, ") ");
		n++;
	} else {
		cut(b, neg); /* no negative side */
	}
	if (n == 0) {
		cut(b, at);
		return js_fail(js,
		               "no %s lies within 'minimum'..'maximum' (as orch generates them)",
		               integer ? "integer" : "number");
	}
	sbuf_puts(b, ")");
	return ORCH_OK;
}
