/*
 * sched_policy_test.c - the scheduler's policies (scheduler.h) on the real
 * stories260K model: how a step is filled, and that it never changes tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "eng_util.h"
#include "t.h"
#include "text/tokenizer.h"

/*
 * The scheduler's policies (issue 62, item 8): a job decoding when a long
 * prompt arrives (chunk 4, 2 slots). Decodes first: every step while the
 * prompt is fed also carries the decoding job's token, and at most 4 prompt
 * tokens. Prefill first: those steps feed the prompt alone, up to 4 + 2
 * tokens, the decoding job waiting. Either way the tokens are those of each
 * job alone.
 */
static void
test_policies(void)
{
	static const char *prompts[] = {
	        "Once", "Lily and Ben went to the park to play with the big red ball"};
	struct out *alone = calloc(2, sizeof(*alone)), *both = calloc(2, sizeof(*both));
	struct tok_ids ids[2] = {{0}};
	struct eng e1;

	T_TRUE(alone && both);
	T_TRUE(eng_open(&e1, t_path("models/stories260K-Q8_0.gguf"), 1, 128, 4, false));
	for (int k = 0; k < 2; k++) {
		T_OK(tok_encode(e1.t, prompts[k], strlen(prompts[k]), TOK_ADD_SPECIAL, &ids[k]));
		struct sched_job j = job((uint64_t)k, &ids[k], 24, &alone[k]);
		T_OK(sched_submit(e1.s, &j, NULL));
		run_all(&e1);
	}
	eng_close(&e1);
	T_TRUE(ids[1].n > 12);
	for (int policy = 0; policy < 2; policy++) {
		struct eng e;
		struct sched_job jobs[2];
		struct sched_step_info si;
		uint32_t mixed = 0, prompt_only = 0, most = 0;
		T_TRUE(eng_open_policy(&e, t_path("models/stories260K-Q8_0.gguf"), 2, 128, 4, false,
		                       (struct kv_geom){0},
		                       policy ? SCHED_PREFILL_FIRST : SCHED_DECODE_FIRST));
		jobs[0] = job(0, &ids[0], 24, &both[0]);
		T_OK(sched_submit(e.s, &jobs[0], NULL));
		for (int i = 0; i < 4; i++) /* job 0 fed and decoding */
			sched_step(e.s);
		jobs[1] = job(1, &ids[1], 24, &both[1]);
		T_OK(sched_submit(e.s, &jobs[1], NULL));
		while (!sched_idle(e.s)) {
			sched_step(e.s);
			sched_last_step(e.s, &si);
			if (si.prefill_tokens == 0)
				continue;
			mixed += si.decode_seqs > 0;
			prompt_only += si.decode_seqs == 0;
			most = si.prefill_tokens > most ? si.prefill_tokens : most;
		}
		if (policy == 0) {
			T_TRUE(mixed > 0 && most <= 4);
		} else {
			T_EQ(mixed, 0);
			T_TRUE(prompt_only > 0 && most == 6);
		}
		for (int k = 0; k < 2; k++) {
			T_EQ(both[k].n, alone[k].n);
			T_TRUE(memcmp(both[k].ids, alone[k].ids, alone[k].n * sizeof(int32_t)) ==
			       0);
		}
		eng_close(&e);
	}
	for (int k = 0; k < 2; k++)
		tok_ids_fini(&ids[k]);
	free(alone);
	free(both);
}

int
main(void)
{
	T_RUN(test_policies);
	return t_done();
}
