/*
 * think_test.c - where a prompt leaves a thinking model (think.h): inside a block its
 * template opened (the R1 distills' "<think>\n" after the assistant's header), or not
 * (no tag near the end, or a block already closed: Qwen3 with enable_thinking false).
 */
#include "t.h"

#include "text/think.h"

static void
test_prompt_open(void)
{
	const struct think_vocab v = {.open = 7, .close = 8};
	const int32_t opened[] = {1, 2, 3, 7, 10}, closed[] = {1, 7, 10, 8, 10, 10},
	              none[] = {1, 2, 3}, far[] = {7, 1, 1, 1, 1, 1, 1, 1, 1, 1};

	T_TRUE(think_prompt_open(&v, opened, 5));
	T_TRUE(!think_prompt_open(&v, closed, 6));
	T_TRUE(!think_prompt_open(&v, none, 3));
	T_TRUE(!think_prompt_open(&v, far, 10)); /* a <think> the user wrote long before */
	T_TRUE(!think_prompt_open(&v, NULL, 0));
}

int
main(void)
{
	T_RUN(test_prompt_open);
	return t_done();
}
