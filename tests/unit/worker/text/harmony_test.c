/*
 * harmony_test.c - the harmony output parser (harmony.h) on gpt-oss's real
 * o200k vocabulary: the tokens found, <|end|> no longer an end of
 * generation, priming from a chat prompt and from raw prompts, channels,
 * recipients in either header part, <|constrain|>, text outside messages,
 * long headers, where a prompt leaves the parser; and that other
 * vocabularies are not harmony.
 */
#include "gguf/gguf.h"
#include "t.h"
#include "text/harmony.h"
#include "text/tokenizer.h"
#include "unit/worker/text/tok_load.h"

static struct tok *oss;
static struct harmony_vocab hv;

/* Encode @s with special tokens parsed, no BOS. */
static void
ids_of(const char *s, struct tok_ids *ids)
{
	ids->n = 0;
	T_OK(tok_encode(oss, s, strlen(s), TOK_PARSE_SPECIAL, ids));
}

/*
 * Feed the tokens of @gen after priming with @prompt; the content, as
 * "[message:channel>recipient]text" runs, into @out.
 */
static void
run(const char *prompt, const char *gen, char *out, size_t n)
{
	struct tok_ids p = {0}, g = {0};
	struct harmony h;
	uint32_t last = HARMONY_NO_MESSAGE - 1;
	size_t at = 0;

	ids_of(prompt, &p);
	ids_of(gen, &g);
	harmony_init(&h, oss, &hv);
	harmony_prime(&h, p.v, p.n);
	out[0] = '\0';
	for (size_t i = 0; i < g.n; i++) {
		if (harmony_feed(&h, g.v[i]) != HARMONY_CONTENT)
			continue;
		const struct harmony_tag *tag = harmony_tag(&h);
		if (tag->message != last) {
			at += (size_t)snprintf(
			        out + at, n - at, "[%d:%s>%s]",
			        tag->message == HARMONY_NO_MESSAGE ? -1 : (int)tag->message,
			        tag->channel, tag->recipient);
			last = tag->message;
		}
		char piece[64];
		size_t k = tok_piece(oss, g.v[i], 0, piece, sizeof(piece));
		at += (size_t)snprintf(out + at, n - at, "%.*s", (int)k, piece);
	}
	tok_ids_fini(&p);
	tok_ids_fini(&g);
}

static const char chat_prompt[] = "<|start|>system<|message|>You are ChatGPT.<|end|>"
                                  "<|start|>user<|message|>Hi<|end|><|start|>assistant";

static void
test_vocab(void)
{
	size_t n;

	T_TRUE(hv.start >= 0 && hv.end >= 0 && hv.message >= 0 && hv.channel >= 0);
	T_TRUE(hv.constrain >= 0 && hv.ret >= 0 && hv.call >= 0);
	T_TRUE(memcmp(tok_text(oss, hv.call, &n), "<|call|>", 8) == 0);
	/* the turn ends at <|return|> or <|call|>; <|end|> only closes a message */
	T_TRUE(tok_is_eog(oss, hv.ret));
	T_TRUE(tok_is_eog(oss, hv.call));
	T_TRUE(!tok_is_eog(oss, hv.end));

	struct harmony_vocab other;
	const char *const plain[] = {"vocab/ggml-vocab-qwen2.gguf", "vocab/ggml-vocab-phi-3.gguf",
	                             "vocab/ggml-vocab-llama-spm.gguf"};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		struct tok *t = t_tok(plain[i]);
		T_TRUE(t != NULL && !harmony_vocab_find(t, &other));
		tok_free(t);
	}
	/* phi-3 keeps <|end|> as its end of turn */
	struct tok *phi = t_tok("vocab/ggml-vocab-phi-3.gguf");
	T_TRUE(phi != NULL);
	int32_t end = tok_find(phi, "<|end|>", 7);
	T_TRUE(end >= 0 && tok_is_eog(phi, end));
	tok_free(phi);
}

static void
test_channels(void)
{
	char out[512];

	run(chat_prompt,
	    "<|channel|>analysis<|message|>User says hi.<|end|>"
	    "<|start|>assistant<|channel|>final<|message|>Hello!",
	    out, sizeof(out));
	T_STREQ(out, "[0:analysis>]User says hi.[1:final>]Hello!");

	/* an answer straight away, no analysis */
	run(chat_prompt, "<|channel|>final<|message|>Hi there", out, sizeof(out));
	T_STREQ(out, "[0:final>]Hi there");
}

static void
test_tool_calls(void)
{
	char out[512];

	/* the recipient in the channel part, a constrained content type */
	run(chat_prompt,
	    "<|channel|>analysis<|message|>Need weather.<|end|>"
	    "<|start|>assistant<|channel|>commentary to=functions.get_weather "
	    "<|constrain|>json<|message|>{\"city\":\"Paris\"}",
	    out, sizeof(out));
	T_STREQ(out, "[0:analysis>]Need weather.[1:commentary>functions.get_weather]"
	             "{\"city\":\"Paris\"}");

	/* the recipient in the role part, as the template writes past calls */
	run(chat_prompt, " to=functions.lookup<|channel|>commentary json<|message|>{}", out,
	    sizeof(out));
	T_STREQ(out, "[0:commentary>functions.lookup]{}");

	/* a preamble on commentary without a recipient is plain commentary */
	run(chat_prompt, "<|channel|>commentary<|message|>Checking.", out, sizeof(out));
	T_STREQ(out, "[0:commentary>]Checking.");
}

static void
test_raw_prompts(void)
{
	char out[512];

	/* a prompt that ends inside a message: its content is message 0 */
	run("<|start|>assistant<|channel|>final<|message|>The", " answer<|end|>", out, sizeof(out));
	T_STREQ(out, "[0:final>] answer");

	/* no harmony at all: content outside any message */
	run("Once upon a time", " there was", out, sizeof(out));
	T_STREQ(out, "[-1:>] there was");

	/* text between messages belongs to none; the next message counts on */
	run(chat_prompt,
	    "<|channel|>final<|message|>A<|end|>stray<|start|>assistant<|channel|>final<|message|>B",
	    out, sizeof(out));
	T_STREQ(out, "[0:final>]A[-1:>]stray[1:final>]B");
}

static void
test_bounds(void)
{
	char out[4096], gen[3000];
	size_t k = (size_t)snprintf(gen, sizeof(gen), "<|channel|>");

	/* a channel name far past the kept length: truncated, no overrun */
	for (int i = 0; i < 400; i++)
		k += (size_t)snprintf(gen + k, sizeof(gen) - k, "é");
	snprintf(gen + k, sizeof(gen) - k, "<|message|>x");
	run(chat_prompt, gen, out, sizeof(out));
	T_TRUE(strncmp(out, "[0:", 3) == 0);
	size_t chan = strlen(out) - strlen("[0:>]x");
	T_TRUE(chan > 0 && chan < HARMONY_NAME_MAX && chan % 2 == 0); /* whole characters */
}

/* Where @prompt leaves a parser (harmony_where). */
static enum harmony_at
where(const char *prompt)
{
	struct tok_ids p = {0};
	struct harmony h;

	if (tok_encode(oss, prompt, strlen(prompt), TOK_PARSE_SPECIAL, &p) != ORCH_OK)
		return (enum harmony_at) - 1;
	harmony_init(&h, oss, &hv);
	harmony_prime(&h, p.v, p.n);
	tok_ids_fini(&p);
	return harmony_where(&h);
}

static void
test_where(void)
{
	T_EQ(where(chat_prompt), HARMONY_AT_ASSISTANT);
	T_EQ(where("<|start|>user<|message|>hi<|end|>"), HARMONY_AT_BETWEEN);
	T_EQ(where(""), HARMONY_AT_BETWEEN);
	T_EQ(where("<|start|>assistant<|channel|>final<|message|>The"), HARMONY_AT_FINAL);
	T_EQ(where("<|start|>assistant<|channel|>analysis<|message|>Hm"), HARMONY_AT_OTHER);
	T_EQ(where("<|start|>assistant<|channel|>"), HARMONY_AT_OTHER);
	T_EQ(where("<|start|>assistant to=functions.f"), HARMONY_AT_OTHER);
	T_EQ(where("<|start|>user"), HARMONY_AT_OTHER);
}

int
main(void)
{
	oss = t_tok("vocab/ggml-vocab-gpt-oss.gguf");
	if (oss == NULL || !harmony_vocab_find(oss, &hv)) {
		fprintf(stderr, "gpt-oss vocabulary without harmony tokens\n");
		return 1;
	}
	T_RUN(test_vocab);
	T_RUN(test_channels);
	T_RUN(test_tool_calls);
	T_RUN(test_raw_prompts);
	T_RUN(test_bounds);
	T_RUN(test_where);
	tok_free(oss);
	return t_done();
}
