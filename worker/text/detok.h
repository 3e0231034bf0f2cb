#pragma once
/*
 * detok.h - streaming detokenizer: token ids in, text deltas out, every
 * delta valid UTF-8.
 *
 * Bytes of a code point split across tokens (byte-fallback tokens, BPE
 * pieces ending mid-character) are held back until the code point
 * completes, so U+FFFD is never emitted for a sequence that later
 * completes. An ill-formed sequence (one that no later byte can complete)
 * becomes U+FFFD at once, one per maximal subpart; at the end of the stream
 * an incomplete tail becomes one U+FFFD. With TOK_STRIP_PREFIX the dummy
 * prefix space of an SPM model is dropped at the very start only.
 */
#include "base/sbuf.h"
#include "tokenizer.h"

struct detok {
	const struct tok *t;
	unsigned flags;
	bool started; /* some text has been seen */
	uint8_t hold[4];
	size_t n_hold; /* bytes of an incomplete code point */
};

/* detok_init - start a stream over @t with tok_piece() @flags. */
void detok_init(struct detok *d, const struct tok *t, unsigned flags);

/* detok_push - decode @id and append the text now complete to @out. ORCH_ENOMEM. */
orch_err detok_push(struct detok *d, int32_t id, struct sbuf *out);

/* detok_finish - end of stream: an incomplete tail becomes U+FFFD. */
orch_err detok_finish(struct detok *d, struct sbuf *out);
