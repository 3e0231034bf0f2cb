#pragma once
/*
 * gram_int.h - the compiled form of a grammar, shared by the compiler
 * (gbnf.c), the matcher (gram_match.c) and the token masks (gram_mask.c).
 *
 * A grammar is rules of alternatives of elements, all in one array: each
 * alternative is a run of GE_SET, GE_TOK and GE_REF elements ended by GE_ALT
 * (another alternative follows) or GE_END (the rule's last). A GE_SET matches
 * one byte of a 256-bit set; a GE_TOK matches one whole token (a token
 * terminal, <[id]> or <text>: bound to a vocabulary's id, grammar.h); a
 * GE_REF enters a rule. Character classes, strings and repetitions are all
 * lowered to these (gbnf.c says how), so the matcher sees bytes and, where a
 * grammar names them, tokens.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar.h"

enum gram_kind { GE_END, GE_ALT, GE_REF, GE_SET, GE_TOK };

struct gram_elem {
	uint32_t kind; /* enum gram_kind */
	uint32_t arg;  /* GE_REF: the rule; GE_SET: the set; GE_TOK: the token terminal */
};

/* A token terminal: <[id]> (text NULL) or <text> (its bytes, the brackets included). */
struct gram_tok {
	char *text;
	uint32_t len;
	int32_t id; /* the vocabulary's token; -1 while <text> is unbound: matches nothing */
};

struct gram_set {
	uint64_t w[4]; /* bit b: byte b matches */
};

struct gram {
	struct gram_elem *el;
	uint32_t n_el;
	struct gram_set *sets;
	uint32_t n_sets;
	uint32_t n_rules;
	struct gram_tok *toks;
	uint32_t n_toks;
	uint32_t *alt;       /* every rule's alternatives' first elements, rule by rule */
	uint32_t *alt_first; /* [n_rules + 1]: rule r's are alt[alt_first[r] .. alt_first[r + 1]) */
	uint32_t root;
	/* bounded repetitions whose masks one walk serves for every count (gram_chain.c) */
	struct gram_chain *chains;
	uint32_t n_chains;
	uint32_t *rule_chain; /* [n_rules]: the chain rule r is a copy of x in, or GRAM_NONE */
	uint32_t *el_rule;    /* [n_el]: the rule element i is in */
	uint64_t expansion;   /* what its repetitions expand to (gram_expansion) */
};

/*
 * A chain: x{m,n}'s n - m optional copies, rules first .. first + len - 1,
 * copy j (from 1) being rule first + j - 1 ::= x copy(j - 1) | (empty), so
 * a parse at copy j may take j - 1 more x after the one it is in. Only
 * chains whose x matches no empty string and cannot reach the chain are
 * kept: then a state's count is all that tells its copies apart.
 */
struct gram_chain {
	uint32_t first, len;
};

static inline bool
gram_set_has(const struct gram_set *s, uint8_t b)
{
	return (s->w[b >> 6] >> (b & 63)) & 1;
}

/* No node: the bottom of every stack. */
#define GRAM_NONE UINT32_MAX

/*
 * A stack of the matcher is a top (struct gram_top: the GE_SET the next
 * byte, or the GE_TOK the next token, must match) over a chain of nodes, each the element to go on
 * at when the rule above it ends. Nodes are hash-consed while they are made, so equal chains made
 * in one step are usually the same node; h hashes the whole chain, to compare stacks across steps.
 * Tops are not nodes: most die at the next byte, and making them costs the walk most.
 */
struct gram_node {
	uint32_t pos, parent;
	uint64_t h;
};

/* A work item gram_expand has done in this step: (position, parent) as key, with an ann. */
struct gram_seen {
	uint64_t key;
	uint32_t ann, gen; /* current when gen is gram_stacks.gen */
};

/* The nodes every stack of a matcher is made of, and a cache to hash-cons them. */
struct gram_stacks {
	struct gram_node *v;
	uint32_t n, cap;
	/* [cons_mask + 1]: a node index or GRAM_NONE (direct-mapped, lossy: a miss only makes
	 * a duplicate node); grown to twice the nodes, so that few are missed */
	uint32_t *cons;
	uint32_t cons_mask;
	uint32_t (*work)[3]; /* gram_expand's: positions to expand, under a parent, with an ann */
	uint32_t n_work, cap_work;
	/* gram_expand's: the work items this step has done, [seen_mask + 1] (direct-mapped,
	 * lossy: a miss only repeats work; an empty match reached two ways is expanded once);
	 * grown to twice the items a step does, so that few are missed */
	struct gram_seen *seen;
	uint32_t seen_mask;
	uint32_t seen_n, seen_peak; /* items done this step; the most in a step since compaction */
	uint32_t gen;
	uint32_t chain; /* the chain whose copies tops' ann count; GRAM_NONE: none (ann stays 0) */
	uint32_t work_left; /* the step's work items left to push (gram_step_begin) */
};

/*
 * A stack's top: the GE_SET (or GE_TOK) next to match, over the node of the
 * rest. ann is 0 but in a walk counting a chain's copies (gram_stacks.chain):
 * then the copies of x the stack's parse started past the one it began in,
 * and GRAM_ANN_OUT once the parse left the chain. Tops differing only in
 * the count are one top with the smaller count (their futures are the same);
 * in and out of the chain they are two.
 */
struct gram_top {
	uint32_t pos, parent, ann;
};

#define GRAM_ANN_OUT (1u << 31)

/*
 * Where a parse stands: the tops of its stacks, and whether one of them
 * ended. Past GRAM_INDEX_FROM tops, an open-addressing index over the tops
 * (by position and the stack's hash) finds a duplicate without a scan:
 * slot k holds top ix[k] when ix_gen[k] == gen, and tops [0, ix_n) are in it.
 */
struct gram_state {
	struct gram_top *tops;
	uint32_t n, cap;
	bool accept;
	uint32_t accept_ann; /* counting a chain: the least copies an accepting parse started */
	uint32_t *ix, *ix_gen;
	uint32_t ix_mask, ix_n, gen;
};

/* The matcher (grammar.h): its stacks and where the parse stands. */
struct gram_match {
	const struct gram *g;
	struct gram_stacks s;
	struct gram_state cur, tmp, saved; /* tmp: a feed's next; saved: before the feed */
	struct gram_state tok;             /* a token feed's: the stacks a terminal took */
	uint32_t *map;                     /* compaction's: old node to new */
	uint32_t cap_map;
};

/*
 * gram_grow - make room for element @n of the array *@v of @elem-byte
 * elements holding *@cap: doubled (@first the first time); false when out
 * of memory (*@v untouched).
 */
bool gram_grow(void **v, uint32_t *cap, uint32_t n, size_t elem, uint32_t first);

orch_err gram_stacks_init(struct gram_stacks *s);
void gram_stacks_fini(struct gram_stacks *s);

/*
 * gram_step_begin - start a step of @s: one byte's advance, a matcher's start
 * or a token's take, whose expansions all go into one state. The step's
 * expansions share a budget of GRAM_WORK_MAX work items, and expand each
 * (position, parent) once between them (the same continuation adds the same
 * stacks to the same state).
 */
void gram_step_begin(struct gram_stacks *s);

/*
 * gram_expand - every stack that starts at element @pos under @parent (a
 * rule's alternative, or where one goes on), with GE_SET or GE_TOK tops, added to @out
 * (once each); @out->accept set when one ends. Within a step (gram_step_begin),
 * every call's @out is the same state. ORCH_ENOMEM; ORCH_ERANGE past
 * GRAM_STACKS_MAX stacks, the step's GRAM_WORK_MAX work items, or GRAM_NODES_MAX nodes.
 */
orch_err gram_expand(const struct gram *g, struct gram_stacks *s, uint32_t pos, uint32_t parent,
                     uint32_t ann, struct gram_state *out);

/* gram_node - the node (@pos, @parent), made unless it exists; GRAM_NONE when out of memory. */
uint32_t gram_node(struct gram_stacks *s, uint32_t pos, uint32_t parent);

/*
 * gram_add_top - the stack (@pos, @parent, @ann) added to @out unless there
 * (then its count lowered to @ann's if that is fewer); as gram_expand.
 */
orch_err gram_add_top(const struct gram_stacks *s, struct gram_state *out, uint32_t pos,
                      uint32_t parent, uint32_t ann);

/*
 * gram_chains_init - @g's chains from the compiler's (@chain_len[r]: a
 * chain of that many rules starts at rule r; 0: none), those kept as
 * struct gram_chain says, with @nullable the rules matching the empty
 * string. ORCH_ENOMEM.
 */
orch_err gram_chains_init(struct gram *g, const uint32_t *chain_len, const bool *nullable);

/*
 * gram_chain_canon - @in with one chain's count taken out, into @out (its
 * nodes made in @s): every stack inside a copy of the longest chain any is
 * in is moved to the chain's last-made copy (the most x left), its tops'
 * ann 0, and the other stacks' GRAM_ANN_OUT. *@chain is the
 * chain, *@left the copies of x @in's stacks may still start (j - 1).
 * False, with @out untouched, when no stack is in a chain or two are at
 * different counts of it (or *@rv is set: ORCH_ENOMEM, ORCH_ERANGE).
 */
bool gram_chain_canon(const struct gram *g, struct gram_stacks *s, const struct gram_state *in,
                      struct gram_state *out, uint32_t *chain, uint32_t *left, orch_err *rv);

/*
 * gram_advance - @in advanced by byte @b into @out (cleared first): one
 * step (gram_step_begin); as gram_expand. A GE_TOK top takes no byte.
 */
orch_err gram_advance(const struct gram *g, struct gram_stacks *s, const struct gram_state *in,
                      uint8_t b, struct gram_state *out);

/* gram_state_copy - @src's tops and accept into @dst (grown as needed); ORCH_ENOMEM. */
orch_err gram_state_copy(struct gram_state *dst, const struct gram_state *src);

/* gram_state_reset - @st empty, not accepting. */
void gram_state_reset(struct gram_state *st);

/* gram_state_fini - free @st's tops and index. */
void gram_state_fini(struct gram_state *st);
