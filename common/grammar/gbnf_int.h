#pragma once
/*
 * gbnf_int.h - the compiler's working state, shared by the parser (gbnf.c)
 * and the lowering to bytes and the checks (gbnf_lower.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "gram_int.h"

struct gbnf_elems {
	struct gram_elem *v;
	uint32_t n, cap;
};

struct gbnf_rule {
	const char *name; /* into the text; NULL for a rule the compiler made */
	uint32_t name_len;
	bool defined;
	uint32_t line, col; /* where it was first named */
	struct gbnf_elems body;
	uint32_t chain_len; /* a bounded repetition's rules start here: this and the next chain_len
	                       - 1 */
};

/*
 * A repetition x{m,n} counting 2 or more (n, or m when unbounded), for the
 * expansion check (gbnf_finish): in rule @rule, whose elements from @at on
 * it became. When x{m,n} is itself repeated, it moves with its elements into
 * the rule that holds them (gbnf_repeat).
 */
struct gbnf_rep {
	struct gram_elem x;
	uint32_t rule, at;
	uint32_t min, max, count;
	uint32_t line, col; /* where it ends in the text */
};

struct gbnf {
	const char *s, *end, *line_start;
	uint32_t line;
	uint32_t depth; /* parentheses open */
	struct gbnf_rule *rules;
	uint32_t n_rules, cap_rules;
	uint32_t *names; /* open addressing over named rules: a rule or GRAM_NONE */
	uint32_t names_mask;
	struct gram_set *sets;
	uint32_t n_sets, cap_sets;
	uint32_t *set_ix; /* open addressing over sets: a set or GRAM_NONE */
	uint32_t set_mask;
	struct gram_tok *toks; /* the token terminals, each once */
	uint32_t n_toks, cap_toks;
	uint64_t n_el; /* elements in every body */
	struct gbnf_rep *reps;
	uint32_t n_reps, cap_reps;
	struct gram_err *err;
	bool failed;
};

/* gbnf_fail - record the first failure (at the parser's position) and return false. */
bool gbnf_fail(struct gbnf *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* gbnf_oom - record an allocation failure and return false. */
bool gbnf_oom(struct gbnf *p);

/* gbnf_add_rule - a new rule (named @name, @len bytes, or NULL) first named at @at in
 * the text, into *@ret. */
bool gbnf_add_rule(struct gbnf *p, const char *name, uint32_t len, const char *at, uint32_t *ret);

/* gbnf_new_rule - a rule the compiler makes (no name) into *@ret. */
bool gbnf_new_rule(struct gbnf *p, uint32_t *ret);

/* gbnf_push - append element (@kind, @arg) to rule @r. */
bool gbnf_push(struct gbnf *p, uint32_t r, uint32_t kind, uint32_t arg);

/* gbnf_set - the index of a set equal to @set, added when new. */
bool gbnf_set(struct gbnf *p, const struct gram_set *set, uint32_t *ret);

/*
 * gbnf_class - append to rule @r what matches one code point in the sorted,
 * disjoint ranges @lo[i]..@hi[i] (@n of them): one GE_SET when all are
 * ASCII, else a GE_REF to a new rule with an alternative per UTF-8 byte
 * sequence shape. Surrogates never match.
 */
bool gbnf_class(struct gbnf *p, uint32_t r, const uint32_t *lo, const uint32_t *hi, uint32_t n);

/*
 * gbnf_repeat - replace rule @r's elements from @start on (one item) by
 * @min to @max (UINT32_MAX: no limit) of it, and note it for the expansion
 * check.
 */
bool gbnf_repeat(struct gbnf *p, uint32_t r, uint32_t start, uint32_t min, uint32_t max);

/*
 * gbnf_token - the token terminal at the parser (<[ID]> or <TEXT>) as a
 * GE_TOK element of rule @r (gram_tok.c).
 */
bool gbnf_token(struct gbnf *p, uint32_t r);

/* gram_toks_free - free the @n terminals @t and their texts. */
void gram_toks_free(struct gram_tok *t, uint32_t n);

/*
 * gbnf_expansion - what @p's repetitions expand to from rule @root
 * (GRAM_EXPANSION_MAX says how it is counted), with @nullable the rules that
 * match the empty string, into *@ret (gbnf_expansion.c). ORCH_EINVAL past
 * GRAM_EXPANSION_MAX, with where and why in p->err; ORCH_ENOMEM.
 */
orch_err gbnf_expansion(struct gbnf *p, const bool *nullable, uint32_t root, uint64_t *ret);

/*
 * gbnf_finish - check the rules (all defined, no left recursion, repetitions
 * that expand to GRAM_EXPANSION_MAX at most) and build *@ret.
 */
orch_err gbnf_finish(struct gbnf *p, uint32_t root, struct gram **ret);
