#pragma once
/*
 * limits.h - the limits on a job that more than one process checks, each
 * defined once: orchd's API refuses a request past them with a 400, the
 * protocol check (ipc_check) refuses a Submit past them, and the worker and
 * `orch-worker run` size their arrays by them.
 */

/*
 * Chat messages in one Submit (the protocol check, the worker's prompt), and
 * the highest max_chat_messages orchd's config takes (its API's limit).
 */
#define ORCH_MAX_MESSAGES 4096u

/* Stop strings one job carries (Submit, the worker, `orch-worker run --stop`). */
#define ORCH_MAX_STOPS 16u

/* Of those, what the HTTP API accepts: OpenAI's limit, so clients see the same rule. */
#define ORCH_API_MAX_STOPS 4u

/* Bytes in one stop string. */
#define ORCH_MAX_STOP_BYTES 256u

_Static_assert(ORCH_API_MAX_STOPS <= ORCH_MAX_STOPS, "the API must fit the protocol");

/* logit_bias entries in one job (the API, the protocol check, the worker). */
#define ORCH_MAX_LOGIT_BIAS 1024u

/* Alternatives one token's logprobs carry (top_logprobs: OpenAI's limit). */
#define ORCH_MAX_TOP_LOGPROBS 20u
