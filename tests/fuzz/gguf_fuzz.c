/*
 * gguf_fuzz.c - libFuzzer target for the GGUF reader. Any input must give
 * ORCH_OK or an error code, never a crash, a read out of bounds or a leak.
 * On success every key and tensor is walked and the first and last byte of
 * each tensor's data read, so a bad range check shows up under ASan.
 */
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void
walk_value(const struct gguf_value *v)
{
	if (v->type == GGUF_VTYPE_STRING && v->v.s.len > 0)
		sink += (uint8_t)v->v.s.ptr[v->v.s.len - 1];
	if (v->type != GGUF_VTYPE_ARRAY)
		return;
	for (uint64_t i = 0; i < v->v.a.n; i++) {
		if (v->v.a.strs && v->v.a.strs[i].len)
			sink += (uint8_t)v->v.a.strs[i].ptr[v->v.a.strs[i].len - 1];
		else if (v->v.a.elems)
			walk_value(&v->v.a.elems[i]);
		else if (v->v.a.raw)
			sink += (uint64_t)gguf_arr_int(&v->v.a, i);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gguf_file *f = NULL;

	if (gguf_open_mem(data, size, "fuzz", &f, NULL) != ORCH_OK)
		return 0;
	for (size_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		walk_value(&kv->value);
		sink += gguf_find_kv(f, kv->key) == kv;
	}
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		const uint8_t *p = t->data;
		sink += p[0] + p[t->nbytes - 1];
		sink += gguf_find_tensor(f, t->name) == t;
	}
	gguf_close(f);
	return 0;
}
