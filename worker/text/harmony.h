#pragma once
/*
 * harmony.h - the output side of the harmony format (gpt-oss): which message
 * and channel each generated token belongs to.
 *
 * A harmony conversation is a run of messages, each
 *
 *     <|start|>ROLE[ to=RECIPIENT]<|channel|>CHANNEL[
 * to=RECIPIENT][<|constrain|>TYPE]<|message|>CONTENT<|end|>
 *
 * where the last one of a turn ends in <|return|> (the answer) or <|call|>
 * (a tool call) instead of <|end|>. The parser is fed token ids: the prompt
 * first (harmony_prime), so that it knows whether generation begins inside a
 * header ("<|start|>assistant", what the chat template ends with), inside a
 * message's content, or between messages; then each generated token. It
 * says of each token whether it is content (and of which message) or part
 * of a header or a control token. Header text is kept, bounded; content is
 * not looked at.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The harmony control tokens of a vocabulary (-1: absent). */
struct harmony_vocab {
	int32_t start, end, message, channel, constrain, ret, call;
};

/*
 * harmony_vocab_find - the harmony tokens of @t; true when it has the four
 * a harmony stream cannot do without (<|start|>, <|end|>, <|message|> and
 * <|channel|>, all control tokens): a model that speaks harmony.
 */
bool harmony_vocab_find(const struct tok *t, struct harmony_vocab *ret);

#define HARMONY_NAME_MAX 64  /* a channel name, as kept */
#define HARMONY_RCPT_MAX 128 /* a recipient ("functions.get_weather"), as kept */
#define HARMONY_HDR_MAX  256 /* header text kept per part */

/* No message: content outside any message (a model that broke the format). */
#define HARMONY_NO_MESSAGE UINT32_MAX

/* What a token was: content of the current message, or header/control. */
enum harmony_part { HARMONY_CONTENT, HARMONY_HEADER };

/* The message a piece of content belongs to. */
struct harmony_tag {
	uint32_t message; /* index among the messages begun since priming; HARMONY_NO_MESSAGE */
	char channel[HARMONY_NAME_MAX];   /* "analysis", "commentary", "final"; "" for none */
	char recipient[HARMONY_RCPT_MAX]; /* "functions.NAME" of a tool call; "" for none */
};

struct harmony {
	const struct tok *t;
	struct harmony_vocab v;
	int state; /* between messages, in a header, in content */
	int part;  /* in a header: role, channel or constrain text */
	char hdr[3][HARMONY_HDR_MAX];
	size_t hdr_n[3];
	uint32_t seq, base;     /* <|message|> tokens seen; seq at the end of priming */
	struct harmony_tag cur; /* the message whose content comes next */
};

/* harmony_init - a parser over @t with vocabulary @v, between messages. */
void harmony_init(struct harmony *h, const struct tok *t, const struct harmony_vocab *v);

/*
 * harmony_prime - feed the prompt's @n ids; message indexes count from the
 * first message whose content is generated (a prompt that ends inside a
 * message's content makes that message index 0).
 */
void harmony_prime(struct harmony *h, const int32_t *ids, size_t n);

/* Where a primed parser stands, for a grammar that must shape what comes next. */
enum harmony_at {
	HARMONY_AT_BETWEEN,   /* between messages */
	HARMONY_AT_ASSISTANT, /* "<|start|>assistant" and nothing after: a chat's turn */
	HARMONY_AT_FINAL,     /* in the content of a final-channel message */
	HARMONY_AT_OTHER,     /* anywhere else (another header, another channel's content) */
};

/* harmony_where - where @h stands (after harmony_prime, before any feed). */
enum harmony_at harmony_where(const struct harmony *h);

/* harmony_feed - advance over generated token @id; what it was. */
enum harmony_part harmony_feed(struct harmony *h, int32_t id);

/* harmony_tag - the message content now belongs to (valid after a HARMONY_CONTENT feed). */
const struct harmony_tag *harmony_tag(const struct harmony *h);

#ifdef __cplusplus
}
#endif
