/*
 * finish.c - the finish-reason table (finish.h).
 */
#include "finish.h"

struct finish_row {
	const char *name, *openai;
	bool on_wire; /* travels in an End message */
};

static const struct finish_row table[ORCH_FINISH_COUNT] = {
        [ORCH_FINISH_STOP] = {"stop", "stop", true},
        [ORCH_FINISH_LENGTH] = {"length", "length", true},
        [ORCH_FINISH_EOS] = {"eos", "stop", true},
        [ORCH_FINISH_TOOL_CALLS] = {"tool_calls", "tool_calls", true},
        [ORCH_FINISH_CANCELLED] = {"cancelled", "stop", false},
        [ORCH_FINISH_ERROR] = {"error", "stop", false},
};

const char *
orch_finish_name(enum orch_finish f)
{
	return (unsigned)f < ORCH_FINISH_COUNT ? table[f].name : "?";
}

const char *
orch_finish_openai(enum orch_finish f)
{
	return (unsigned)f < ORCH_FINISH_COUNT ? table[f].openai : "stop";
}

uint32_t
orch_finish_proto(enum orch_finish f)
{
	return (unsigned)f < ORCH_FINISH_COUNT && table[f].on_wire ? (uint32_t)f + 1 : 0;
}

bool
orch_finish_from_proto(uint32_t v, enum orch_finish *ret)
{
	if (v == 0 || v > ORCH_FINISH_COUNT || !table[v - 1].on_wire)
		return false;
	*ret = (enum orch_finish)(v - 1);
	return true;
}
