#pragma once
/*
 * think.h - the reasoning of a model that thinks between <think> and </think>
 * (Qwen3, QwQ, the DeepSeek-R1 distills): its tokens, and whether its chat
 * template has it think. The scheduler tags what lies between the two as an
 * "analysis" message and what follows as a "final" one, as harmony's channels
 * are tagged, so that orchd splits reasoning_content from content the same way.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer.h"

struct think_vocab {
	int32_t open, close; /* "<think>", "</think>" */
};

/*
 * think_vocab_find - @t's think tokens when the chat template @src (@n bytes; NULL:
 * none) closes a think block and @t has "<think>" and "</think>" each as one token;
 * false otherwise (the model's output is left as it is).
 */
bool think_vocab_find(const struct tok *t, const char *src, size_t n, struct think_vocab *ret);

/*
 * think_prompt_open - whether the prompt @ids (@n) leaves the model inside a think
 * block: its last <think> comes after its last </think> within the prompt's last 8
 * tokens (a template that opens the block for the model, as the R1 distills').
 */
bool think_prompt_open(const struct think_vocab *v, const int32_t *ids, size_t n);
