#pragma once
/*
 * finish.h - why a job ended: the one table of finish reasons. Each reason
 * has its name (the native API, `orch-worker run --format jsonl`, logs and
 * the outcome label of orch_requests_total), its OpenAI finish_reason and
 * its protobuf value (proto/orch.proto's FinishReason follows this table:
 * the value of a reason that travels in an End message is its position
 * plus one; CANCELLED and ERROR end a job without an End message).
 */
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum orch_finish {
	ORCH_FINISH_STOP,       /* a stop string matched */
	ORCH_FINISH_LENGTH,     /* max_tokens or the end of the context */
	ORCH_FINISH_EOS,        /* an end-of-generation token */
	ORCH_FINISH_TOOL_CALLS, /* harmony's <|call|>: the turn ends in a tool call */
	ORCH_FINISH_CANCELLED,  /* the client or orchd cancelled it */
	ORCH_FINISH_ERROR,      /* it failed (the error code says why) */
};

#define ORCH_FINISH_COUNT 6

/* orch_finish_name - "stop", "length", "eos", "tool_calls", "cancelled", "error". */
const char *orch_finish_name(enum orch_finish f);

/* orch_finish_openai - OpenAI's finish_reason: "length", "tool_calls", else "stop". */
const char *orch_finish_openai(enum orch_finish f);

/* orch_finish_proto - the FinishReason value in an End message; 0 for CANCELLED and ERROR. */
uint32_t orch_finish_proto(enum orch_finish f);

/*
 * orch_finish_from_proto - the reason an End message's @v carries; false
 * for 0 and values past the table (ipc_check refuses those).
 */
bool orch_finish_from_proto(uint32_t v, enum orch_finish *ret);

#ifdef __cplusplus
}
#endif
