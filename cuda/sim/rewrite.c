/*
 * rewrite.c - cusim-rewrite IN OUT: a CUDA source made plain C++ for the
 * simulated device (ORCH_CUDA=SIM, cuda/sim/README.md). Two constructs of
 * the CUDA language cannot be macros, so they are rewritten in place:
 *
 *   K<<<grid, block[, smem[, stream]]>>>(args)
 *       ::cusim::launch<K>(grid, block[, smem[, stream]])(args)
 *   __shared__ T a[N][M], b;
 *       static char cusim_tag_a; auto &a = ::cusim::shared_var<T[N][M]>(&cusim_tag_a, 0, "a"); ...
 *   extern __shared__ __align__(16) T s[];
 *       T *const s = static_cast<T *>(::cusim::shared_dyn(16));
 *
 * Nothing else changes: comments, strings and character literals are
 * copied untouched, no line is added or removed (a rewritten declaration
 * keeps its newlines after it), and the output starts with a #line
 * directive naming the input, so compiler messages, __FILE__ and __LINE__
 * point at the real source. Anything it cannot parse is an error naming
 * the line, never a silent pass-through.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t n, cap;
};

static const char *in_path;

static void
die(const char *src, size_t at, const char *fmt, ...)
{
	va_list ap;
	int line = 1;

	for (size_t i = 0; src != NULL && i < at; i++)
		line += src[i] == '\n';
	fprintf(stderr, "%s:%d: cusim-rewrite: ", in_path, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void
put(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL) {
			fprintf(stderr, "cusim-rewrite: out of memory\n");
			exit(1);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void
puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static bool
ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Length of the comment, string or character literal at @s[i], 0 if none. */
static size_t
skip_lexical(const char *s, size_t n, size_t i)
{
	size_t j;

	if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
		for (j = i; j < n && s[j] != '\n'; j++)
			;
		return j - i;
	}
	if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
		const char *e = strstr(s + i + 2, "*/");
		if (e == NULL)
			die(s, i, "unterminated comment");
		return (size_t)(e + 2 - (s + i));
	}
	if (s[i] == '"' || (s[i] == '\'' && !(i > 0 && isxdigit((unsigned char)s[i - 1])))) {
		char q = s[i];
		for (j = i + 1; j < n && s[j] != q; j++)
			if (s[j] == '\\')
				j++;
		if (j >= n)
			die(s, i, "unterminated literal");
		return j + 1 - i;
	}
	return 0;
}

/* The start of the kernel expression that ends before @i (a name, maybe qualified, maybe with
 * template arguments). */
static size_t
kernel_start(const char *s, size_t i)
{
	size_t j = i;

	while (j > 0 && isspace((unsigned char)s[j - 1]))
		j--;
	if (j > 0 && s[j - 1] == '>') {
		int depth = 0;
		do {
			j--;
			if (s[j] == '>')
				depth++;
			else if (s[j] == '<')
				depth--;
		} while (j > 0 && depth > 0);
		if (depth != 0)
			die(s, i, "unbalanced template arguments before <<<");
		while (j > 0 && isspace((unsigned char)s[j - 1]))
			j--;
	}
	size_t end = j;
	while (j > 0 && (ident_char(s[j - 1]) || (s[j - 1] == ':' && j > 1 && s[j - 2] == ':'))) {
		if (s[j - 1] == ':')
			j--;
		j--;
	}
	if (j == end)
		die(s, i, "no kernel name before <<<");
	return j;
}

/* The index of the ">>>" closing the launch configuration that starts at @i. */
static size_t
config_end(const char *s, size_t n, size_t i)
{
	int depth = 0;

	for (size_t j = i; j < n; j++) {
		size_t k = skip_lexical(s, n, j);
		if (k > 0) {
			j += k - 1;
			continue;
		}
		if (s[j] == '(' || s[j] == '[' || s[j] == '{')
			depth++;
		else if (s[j] == ')' || s[j] == ']' || s[j] == '}')
			depth--;
		else if (depth == 0 && strncmp(s + j, ">>>", 3) == 0)
			return j;
		if (depth < 0)
			break;
	}
	die(s, i, "no >>> closes this launch configuration");
	return 0;
}

/* Trim @s[*a, *b) of white space. */
static void
trim(const char *s, size_t *a, size_t *b)
{
	while (*a < *b && isspace((unsigned char)s[*a]))
		(*a)++;
	while (*b > *a && isspace((unsigned char)s[*b - 1]))
		(*b)--;
}

/* Append @s[a, b) with runs of white space (newlines included) made one space. */
static void
put_flat(struct buf *o, const char *s, size_t a, size_t b)
{
	bool sp = false;

	for (size_t i = a; i < b; i++) {
		if (isspace((unsigned char)s[i])) {
			sp = true;
			continue;
		}
		if (sp && o->n > 0 && o->p[o->n - 1] != ' ')
			put(o, " ", 1);
		sp = false;
		put(o, s + i, 1);
	}
}

/*
 * One declarator of a __shared__ declaration, @s[a, b) (e.g. "wsum[8][256]"),
 * of base type @s[ta, tb): the reference (or, @dyn, the pointer) it becomes.
 */
static void
shared_declarator(struct buf *o, const char *s, size_t ta, size_t tb, size_t a, size_t b,
                  const char *align, bool dyn)
{
	trim(s, &a, &b);
	size_t name0 = a, name1 = a;
	while (name1 < b && ident_char(s[name1]))
		name1++;
	if (name1 == name0)
		die(s, a, "a __shared__ declarator without a name");
	size_t dims = name1;
	while (dims < b && isspace((unsigned char)s[dims]))
		dims++;
	if (dims < b && s[dims] != '[')
		die(s, a, "a __shared__ declarator the rewriter does not know (initializer?)");
	if (dyn) {
		put_flat(o, s, ta, tb);
		puts_(o, " *const ");
		put(o, s + name0, name1 - name0);
		puts_(o, " = static_cast<");
		put_flat(o, s, ta, tb);
		puts_(o, " *>(::cusim::shared_dyn(");
		puts_(o, align);
		puts_(o, "));");
		return;
	}
	puts_(o, "static char cusim_tag_");
	put(o, s + name0, name1 - name0);
	puts_(o, "; auto &");
	put(o, s + name0, name1 - name0);
	puts_(o, " = ::cusim::shared_var<");
	put_flat(o, s, ta, tb);
	put_flat(o, s, dims, b);
	puts_(o, ">(&cusim_tag_");
	put(o, s + name0, name1 - name0);
	puts_(o, ", ");
	puts_(o, align);
	puts_(o, ", \"");
	put(o, s + name0, name1 - name0);
	puts_(o, "\");");
}

/*
 * The declaration "[extern] __shared__ ... ;" whose __shared__ is at @i
 * (its text from @start): its replacement into @o; returns the index after ';'.
 */
static size_t
shared_decl(struct buf *o, const char *s, size_t n, size_t start, size_t i, bool dyn)
{
	size_t semi = i;
	int depth = 0;
	char align[64] = "0";

	for (; semi < n; semi++) {
		if (s[semi] == '(' || s[semi] == '[')
			depth++;
		else if (s[semi] == ')' || s[semi] == ']')
			depth--;
		else if (s[semi] == ';' && depth == 0)
			break;
		else if (s[semi] == '{' || s[semi] == '}' || s[semi] == '=')
			die(s, i, "a __shared__ declaration the rewriter does not know");
	}
	if (semi >= n)
		die(s, i, "no ';' ends this __shared__ declaration");
	/* the type: after __shared__ and any __align__(N) / alignas(N), up to the first
	 * declarator's name (the last identifier before '[', ',' or ';') */
	size_t ta = i + strlen("__shared__");
	for (;;) {
		while (ta < semi && isspace((unsigned char)s[ta]))
			ta++;
		size_t kw = 0;
		if (strncmp(s + ta, "__align__", 9) == 0)
			kw = 9;
		else if (strncmp(s + ta, "alignas", 7) == 0)
			kw = 7;
		if (kw == 0)
			break;
		size_t p = ta + kw;
		while (p < semi && isspace((unsigned char)s[p]))
			p++;
		size_t q = p < semi && s[p] == '(' ? p + 1 : semi;
		while (q < semi && s[q] != ')')
			q++;
		if (p >= semi || s[p] != '(' || q >= semi || q - p - 1 >= sizeof(align))
			die(s, i, "__align__ / alignas without (N)");
		memcpy(align, s + p + 1, q - p - 1);
		align[q - p - 1] = '\0';
		ta = q + 1;
	}
	size_t first_end = ta; /* end of the first declarator: ',' at depth 0 or ';' */
	depth = 0;
	while (first_end < semi && !(s[first_end] == ',' && depth == 0)) {
		depth += s[first_end] == '[' || s[first_end] == '(';
		depth -= s[first_end] == ']' || s[first_end] == ')';
		first_end++;
	}
	size_t nm = first_end;
	while (nm > ta && s[nm - 1] != ']' && !ident_char(s[nm - 1]))
		nm--;
	while (nm > ta && s[nm - 1] == ']') { /* back over the dimensions */
		int d = 0;
		do {
			nm--;
			d += s[nm] == ']';
			d -= s[nm] == '[';
		} while (nm > ta && d > 0);
		while (nm > ta && isspace((unsigned char)s[nm - 1]))
			nm--;
	}
	while (nm > ta && ident_char(s[nm - 1]))
		nm--;
	size_t tb = nm;
	trim(s, &ta, &tb);
	if (tb == ta)
		die(s, i, "a __shared__ declaration without a type");
	size_t lines = 0;
	for (size_t k = start; k <= semi; k++)
		lines += s[k] == '\n';
	/* each declarator */
	size_t a = nm;
	while (a < semi) {
		size_t b = a;
		depth = 0;
		while (b < semi && !(s[b] == ',' && depth == 0)) {
			depth += s[b] == '[' || s[b] == '(';
			depth -= s[b] == ']' || s[b] == ')';
			b++;
		}
		shared_declarator(o, s, ta, tb, a, b, align, dyn);
		if (b < semi)
			puts_(o, " ");
		a = b + 1;
	}
	for (size_t k = 0; k < lines; k++)
		puts_(o, "\n");
	return semi + 1;
}

/* Whether the identifier @w occurs as a whole token at @s[i]. */
static bool
token_at(const char *s, size_t n, size_t i, const char *w)
{
	size_t l = strlen(w);

	return i + l <= n && strncmp(s + i, w, l) == 0 && (i == 0 || !ident_char(s[i - 1])) &&
	       (i + l == n || !ident_char(s[i + l]));
}

/* The rewritten text of @s (@n bytes). Launches are patched in a second pass over @o. */
static void
rewrite(const char *s, size_t n, struct buf *o)
{
	size_t i = 0;

	while (i < n) {
		size_t k = skip_lexical(s, n, i);
		if (k > 0) {
			put(o, s + i, k);
			i += k;
			continue;
		}
		if (strncmp(s + i, "<<<", 3) == 0) {
			/* the kernel name is already in @o: find its start there */
			size_t ks = kernel_start(o->p, o->n);
			size_t ce = config_end(s, n, i + 3);
			size_t after = ce + 3;
			while (after < n && isspace((unsigned char)s[after]))
				after++;
			if (after >= n || s[after] != '(')
				die(s, i, "no argument list after >>>");
			struct buf tail = {0};
			put(&tail, o->p + ks, o->n - ks);
			o->n = ks;
			puts_(o, "::cusim::launch<");
			put(o, tail.p, tail.n);
			free(tail.p);
			puts_(o, ">(");
			put(o, s + i + 3, ce - (i + 3));
			puts_(o, ")");
			i = ce + 3;
			continue;
		}
		if (token_at(s, n, i, "__shared__")) {
			/* an "extern" just before it (in @o) makes it dynamic */
			size_t e = o->n;
			while (e > 0 && isspace((unsigned char)o->p[e - 1]))
				e--;
			bool dyn = e >= 6 && strncmp(o->p + e - 6, "extern", 6) == 0 &&
			           (e == 6 || !ident_char(o->p[e - 7]));
			if (dyn)
				o->n = e - 6;
			i = shared_decl(o, s, n, i, i, dyn);
			continue;
		}
		put(o, s + i, 1);
		i++;
	}
}

int
main(int argc, char **argv)
{
	struct buf in = {0}, out = {0};
	char chunk[65536];
	size_t got;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: cusim-rewrite IN.cu OUT.cc\n");
		return 2;
	}
	in_path = argv[1];
	if ((f = fopen(argv[1], "rb")) == NULL) {
		fprintf(stderr, "cusim-rewrite: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		put(&in, chunk, got);
	fclose(f);
	puts_(&out, "#line 1 \"");
	puts_(&out, argv[1]);
	puts_(&out, "\"\n");
	if (in.n > 0)
		rewrite(in.p, in.n, &out);
	if ((f = fopen(argv[2], "wb")) == NULL) {
		fprintf(stderr, "cusim-rewrite: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (fwrite(out.p, 1, out.n, f) != out.n || fclose(f) != 0) {
		fprintf(stderr, "cusim-rewrite: writing %s failed\n", argv[2]);
		return 1;
	}
	free(in.p);
	free(out.p);
	return 0;
}
