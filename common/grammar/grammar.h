#pragma once
/*
 * grammar.h - GBNF grammars (llama.cpp's format, docs/grammar.md) compiled
 * for matching bytes, and a matcher that advances through them.
 *
 * The compiled form is byte-level: a character class over code points
 * becomes the UTF-8 byte sequences of its ranges, so a matcher takes any
 * byte string (a token's bytes, which may split a character) and a
 * character is accepted only whole and well formed. Left recursion is
 * refused at compile time; ambiguity is allowed (the matcher keeps every
 * parse alive).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Why a grammar was refused: the line and column (1-based) and what is wrong. */
struct gram_err {
	uint32_t line, col;
	char msg[256];
};

/* A compiled grammar: immutable once made, shared by any number of matchers. */
struct gram;

/*
 * gram_compile - the GBNF @text (@n bytes) with start rule @root (NULL:
 * "root") into *@ret. ORCH_EINVAL with where and why in @err (a syntax
 * error, an undefined or twice-defined rule, left recursion, a repetition
 * count over GRAM_REPEAT_MAX, more than GRAM_ELEMS_MAX elements,
 * repetitions that expand past GRAM_EXPANSION_MAX), ORCH_ENOMEM.
 */
orch_err gram_compile(const char *text, size_t n, const char *root, struct gram **ret,
                      struct gram_err *err);

/* The largest {m,n} bound, and the most elements a compiled grammar may have. */
#define GRAM_REPEAT_MAX 10000
#define GRAM_ELEMS_MAX  (1u << 20)

/*
 * The most a grammar's repetitions may expand to (gram_expansion). A
 * repetition x{m,n} counts n (m when unbounded); when x can match the empty
 * string, times what x's own repetitions expand to, since a matcher then
 * enters every copy of x and every copy of their copies at once, without a
 * byte between them: ("a"{0,100}){0,100} is 10^4 parse positions each
 * step, and the same once more inside {0,100}, 10^6, is refused. Other
 * repetitions inside x (a string's maxLength inside an array's maxItems) do
 * not multiply: a byte separates their copies, so a matcher is in one at a
 * time. Real grammars stay far below: a JSON schema's expand to
 * GRAM_REPEAT_MAX at most (its longest string or array).
 */
#define GRAM_EXPANSION_MAX 100000

/*
 * gram_expansion - what @g's repetitions expand to, as GRAM_EXPANSION_MAX
 * counts it, from its start rule: the largest product of the counts along a
 * nesting of repetitions each of which (but the innermost) repeats what can
 * match the empty string; 1 when it has none.
 */
uint64_t gram_expansion(const struct gram *g);

/* The most parses a matcher keeps alive at once (ORCH_ERANGE beyond: too ambiguous). */
#define GRAM_STACKS_MAX 65536

/*
 * The most work one step of a matcher may do (ORCH_ERANGE beyond, as too
 * ambiguous): the positions it expands to advance by one byte (or to start,
 * or to take a token), and the stack nodes it holds. A safety net under
 * GRAM_EXPANSION_MAX: however a grammar is made, a step ends, in bounded
 * memory (about 150 MB at most).
 */
#define GRAM_WORK_MAX  (1u << 21)
#define GRAM_NODES_MAX (1u << 21)

/*
 * The most work one mask may take (ORCH_ERANGE beyond, as too ambiguous): the
 * walk over the vocabulary's trie advances the matcher once a node, so its cost
 * is the positions each advance looks at and the work it pushes, summed. The
 * JSON schemas of bench/grammar_bench cost at most 7.1 million over Qwen2's
 * 151,936 tokens and 8.9 million over gpt-oss's 201,088; this is 7.5 times that
 * (about 1 s of one core). A step's own bound alone let one mask spin for
 * minutes, past the worker's heartbeat (issue 52's attack: (.{0,10000}){0,10}
 * on Qwen2's vocabulary; now refused after 0.8 s on a loaded 2-core VM, and at once
 * after that: gram_masks_over_budget).
 */
#define GRAM_MASK_WORK_MAX (1ull << 26)

/*
 * Token terminals: as in llama.cpp's GBNF, <[ID]> matches the one token
 * with id ID and <TEXT> the one token whose text is TEXT, angle brackets
 * included (<|channel|>, <think>): how a grammar names control tokens, which
 * no string matches. A compiled grammar knows no vocabulary: a <TEXT>
 * terminal matches nothing until it is bound to its token's id.
 */

/*
 * The most distinct token terminals a client's grammar may have (orchd
 * checks), and how many more a compiled one may: the harmony wrapper's.
 */
#define GRAM_TOKENS_MAX   1024
#define GRAM_TOKENS_SPARE 16

/* gram_n_tokens - how many distinct token terminals @g has. */
uint32_t gram_n_tokens(const struct gram *g);

/*
 * gram_token - terminal @i of @g: its token id, or -1 while unbound, and
 * its text (NULL for <[ID]>) in *@text, *@len bytes.
 */
int32_t gram_token(const struct gram *g, uint32_t i, const char **text, uint32_t *len);

/* gram_bind_token - terminal @i is token @id; before any matcher of @g exists. */
void gram_bind_token(struct gram *g, uint32_t i, int32_t id);

/* gram_free - free @g (NULL is ignored); no matcher of it may be left. */
void gram_free(struct gram *g);

/* gram_accepts - whether the @n bytes at @s are a whole sentence of @g. */
bool gram_accepts(const struct gram *g, const void *s, size_t n);

/* A matcher: where a parse of the bytes fed so far stands (every parse alive). */
struct gram_match;

/*
 * gram_match_new - a matcher at the start of @g (kept alive by the caller);
 * ORCH_ENOMEM, ORCH_ERANGE (too ambiguous, as gram_match_feed).
 */
orch_err gram_match_new(const struct gram *g, struct gram_match **ret);

/* gram_match_free - free @m (NULL is ignored). */
void gram_match_free(struct gram_match *m);

/*
 * gram_match_feed - advance @m by the @n bytes at @s. False when it could
 * not, and then @m is left as it was; *@why (when @why is not NULL) says
 * why: ORCH_EINVAL, some prefix of the bytes is no prefix of a sentence;
 * ORCH_ERANGE, the grammar is too ambiguous (more than GRAM_STACKS_MAX
 * parses alive at once, or a byte's step past GRAM_WORK_MAX or
 * GRAM_NODES_MAX); ORCH_ENOMEM. ORCH_OK when it could.
 */
bool gram_match_feed(struct gram_match *m, const void *s, size_t n, orch_err *why);

/*
 * gram_match_feed_token - advance @m by token @id, whose text is the @n
 * bytes at @s: the parses that expect those bytes take them, as
 * gram_match_feed, and those at a terminal bound to @id take the token
 * whole. @n 0: a token without text (a control token), which only a
 * terminal takes. False, and @m as it was, when no parse takes it; *@why as
 * gram_match_feed.
 */
bool gram_match_feed_token(struct gram_match *m, int32_t id, const void *s, size_t n,
                           orch_err *why);

/* gram_match_accepting - the bytes fed so far are a whole sentence. */
bool gram_match_accepting(const struct gram_match *m);

/* gram_match_done - accepting, and no byte or token can follow: the sentence is complete. */
bool gram_match_done(const struct gram_match *m);

/*
 * gram_match_next_token - the token every parse of @m expects next, when
 * the bytes so far are no sentence and each parse is at a terminal bound to
 * that one token; -1 otherwise (bytes may follow, or several tokens).
 */
int32_t gram_match_next_token(const struct gram_match *m);
