/*
 * envelope_fuzz.c - libFuzzer target for envelope decoding (ipc_decode):
 * any bytes give ORCH_OK or ORCH_EPROTO, never a crash, a leak or an
 * out-of-bounds read. A decoded envelope passed ipc_check; it is re-encoded
 * and decoded again, which must keep its body. (Unknown fields are kept and
 * re-encoded as read, and protobuf-c accepts some it then writes in a form
 * it refuses — a field number 0 — so the second decode may fail; it must
 * not crash.)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ipc/ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Orch__Envelope *env = NULL, *again = NULL;

	if (ipc_decode(data, size, &env, NULL) != ORCH_OK)
		return 0;
	size_t n = orch__envelope__get_packed_size(env);
	uint8_t *buf = malloc(n ? n : 1);
	if (buf == NULL)
		abort();
	orch__envelope__pack(env, buf);
	if (ipc_decode(buf, n, &again, NULL) == ORCH_OK && again->body_case != env->body_case)
		abort();
	ipc_envelope_free(again);
	ipc_envelope_free(env);
	free(buf);
	return 0;
}
