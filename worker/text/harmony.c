/*
 * harmony.c - which harmony message and channel each generated token
 * belongs to (harmony.h).
 */
#include "harmony.h"

#include <string.h>

enum { H_BETWEEN, H_HEADER, H_CONTENT };
enum { P_ROLE, P_CHANNEL, P_CONSTRAIN };

/* The id of control token @s, or -1 when @t has none (or it is ordinary text). */
static int32_t
control(const struct tok *t, const char *s)
{
	int32_t id = tok_find(t, s, strlen(s));
	char buf[16];

	/* a control token decodes to nothing unless rendered; ordinary text never does */
	if (id < 0 || tok_piece(t, id, 0, buf, sizeof(buf)) != 0)
		return -1;
	return id;
}

bool
harmony_vocab_find(const struct tok *t, struct harmony_vocab *ret)
{
	ret->start = control(t, "<|start|>");
	ret->end = control(t, "<|end|>");
	ret->message = control(t, "<|message|>");
	ret->channel = control(t, "<|channel|>");
	ret->constrain = control(t, "<|constrain|>");
	ret->ret = control(t, "<|return|>");
	ret->call = control(t, "<|call|>");
	return ret->start >= 0 && ret->end >= 0 && ret->message >= 0 && ret->channel >= 0;
}

void
harmony_init(struct harmony *h, const struct tok *t, const struct harmony_vocab *v)
{
	memset(h, 0, sizeof(*h));
	h->t = t;
	h->v = *v;
	h->state = H_BETWEEN;
	h->cur.message = HARMONY_NO_MESSAGE;
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The first word of @s (@n bytes) into @out (@cap bytes; truncated at a character). */
static void
first_word(const char *s, size_t n, char *out, size_t cap)
{
	size_t i = 0, k = 0;

	while (i < n && is_space(s[i]))
		i++;
	while (i < n && !is_space(s[i]) && k + 1 < cap)
		out[k++] = s[i++];
	if (i < n && !is_space(s[i])) { /* cut short: drop an incomplete last character */
		size_t lead = k;
		while (lead > 0 && ((unsigned char)out[lead - 1] & 0xC0u) == 0x80u)
			lead--;
		if (lead > 0) {
			unsigned char c = (unsigned char)out[lead - 1];
			size_t want = c >= 0xF0u ? 4 : c >= 0xE0u ? 3 : c >= 0xC0u ? 2 : 1;
			if (k - (lead - 1) < want)
				k = lead - 1;
		}
	}
	out[k] = '\0';
}

/* The word after "to=" at a word start in @s (@n bytes), into @out; false when none. */
static bool
recipient(const char *s, size_t n, char *out, size_t cap)
{
	for (size_t i = 0; i + 3 <= n; i++) {
		if (memcmp(s + i, "to=", 3) == 0 && (i == 0 || is_space(s[i - 1]))) {
			first_word(s + i + 3, n - i - 3, out, cap);
			return out[0] != '\0';
		}
	}
	return false;
}

static void
header_begin(struct harmony *h)
{
	h->state = H_HEADER;
	h->part = P_ROLE;
	memset(h->hdr_n, 0, sizeof(h->hdr_n));
}

/* <|message|>: the header is complete; what follows is the content of a new message. */
static void
message_begin(struct harmony *h)
{
	struct harmony_tag *c = &h->cur;

	h->seq++;
	c->message = h->seq - h->base - 1;
	c->channel[0] = c->recipient[0] = '\0';
	if (h->state == H_HEADER) {
		first_word(h->hdr[P_CHANNEL], h->hdr_n[P_CHANNEL], c->channel, sizeof(c->channel));
		if (!recipient(h->hdr[P_ROLE], h->hdr_n[P_ROLE], c->recipient,
		               sizeof(c->recipient)))
			recipient(h->hdr[P_CHANNEL], h->hdr_n[P_CHANNEL], c->recipient,
			          sizeof(c->recipient));
	}
	h->state = H_CONTENT;
}

/* Header text: the piece of @id appended to the current part (bounded). */
static void
header_text(struct harmony *h, int32_t id)
{
	char *dst = h->hdr[h->part];
	size_t *n = &h->hdr_n[h->part], room = HARMONY_HDR_MAX - *n;
	size_t len = tok_piece(h->t, id, 0, dst + *n, room);

	*n += len < room ? len : room;
}

static enum harmony_part
step(struct harmony *h, int32_t id)
{
	const struct harmony_vocab *v = &h->v;

	if (id == v->start) {
		header_begin(h);
		return HARMONY_HEADER;
	}
	if (id == v->message) {
		message_begin(h);
		return HARMONY_HEADER;
	}
	if (id == v->end || id == v->ret || id == v->call) {
		h->state = H_BETWEEN;
		return HARMONY_HEADER;
	}
	if (h->state == H_HEADER) {
		if (id == v->channel)
			h->part = P_CHANNEL;
		else if (id == v->constrain)
			h->part = P_CONSTRAIN;
		else
			header_text(h, id);
		return HARMONY_HEADER;
	}
	if (h->state == H_BETWEEN && h->cur.message != HARMONY_NO_MESSAGE) {
		/* text after a message ended and before the next began: none of it is a message's
		 */
		h->cur.message = HARMONY_NO_MESSAGE;
		h->cur.channel[0] = h->cur.recipient[0] = '\0';
	}
	return HARMONY_CONTENT;
}

void
harmony_prime(struct harmony *h, const int32_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		step(h, ids[i]);
	h->base = h->seq - (h->state == H_CONTENT ? 1 : 0);
	if (h->state == H_CONTENT)
		h->cur.message = 0;
	else {
		h->cur.message = HARMONY_NO_MESSAGE;
		h->cur.channel[0] = h->cur.recipient[0] = '\0';
	}
}

enum harmony_at
harmony_where(const struct harmony *h)
{
	char role[HARMONY_NAME_MAX];

	if (h->state == H_BETWEEN)
		return HARMONY_AT_BETWEEN;
	if (h->state == H_CONTENT)
		return strcmp(h->cur.channel, "final") == 0 ? HARMONY_AT_FINAL : HARMONY_AT_OTHER;
	first_word(h->hdr[P_ROLE], h->hdr_n[P_ROLE], role, sizeof(role));
	if (h->part == P_ROLE && strcmp(role, "assistant") == 0 &&
	    h->hdr_n[P_ROLE] == strlen("assistant"))
		return HARMONY_AT_ASSISTANT;
	return HARMONY_AT_OTHER;
}

enum harmony_part
harmony_feed(struct harmony *h, int32_t id)
{
	return step(h, id);
}

const struct harmony_tag *
harmony_tag(const struct harmony *h)
{
	return &h->cur;
}
