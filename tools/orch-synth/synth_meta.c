/*
 * synth_meta.c - --metadata-from: give a synthesized model the key set of a
 * real (converter-written) GGUF.
 *
 * The result has exactly the real file's keys, in its order and with its
 * value types. general.file_type and every "{arch}." key the synthesized
 * model also has take the synthesized value (the tensors must match them);
 * every other key, tokenizer.* included, keeps the real file's value. Keys
 * only the synthesized model has (orch.synth.*, {arch}.vocab_size and
 * {arch}.rope.dimension_count where the converter writes none) are dropped,
 * so a loader sees what a converter writes, not what orch-synth writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "synth.h"

static bool
is_int(enum gguf_vtype t)
{
	return t <= GGUF_VTYPE_INT32 || t == GGUF_VTYPE_UINT64 || t == GGUF_VTYPE_INT64;
}

static bool
is_signed(enum gguf_vtype t)
{
	return t == GGUF_VTYPE_INT8 || t == GGUF_VTYPE_INT16 || t == GGUF_VTYPE_INT32 ||
	       t == GGUF_VTYPE_INT64;
}

/* @v as type @to (numbers only; other types must already match). */
static orch_err
retype(const struct gguf_value *v, enum gguf_vtype to, struct gguf_value *out)
{
	*out = *v;
	if (v->type == to)
		return ORCH_OK;
	out->type = to;
	if (is_int(v->type) && is_int(to)) {
		if (is_signed(v->type) != is_signed(to) && v->v.i < 0)
			return ORCH_EINVAL;
		return ORCH_OK; /* the union's u and i share their bits */
	}
	if ((to == GGUF_VTYPE_FLOAT32 || to == GGUF_VTYPE_FLOAT64) &&
	    (v->type == GGUF_VTYPE_FLOAT32 || v->type == GGUF_VTYPE_FLOAT64))
		return ORCH_OK;
	return ORCH_EINVAL;
}

static orch_err
rekey(struct gguf_writer *out, const struct gguf_file *real, const struct gguf_file *syn,
      const char *arch, struct orch_errinfo *reterr)
{
	size_t alen = strlen(arch);

	for (size_t i = 0; i < gguf_kv_count(real); i++) {
		const struct gguf_kv *kv = gguf_kv_at(real, i);
		const struct gguf_kv *sk = NULL;
		struct gguf_value v = kv->value;
		orch_err rv;

		if (strcmp(kv->key, "general.file_type") == 0 ||
		    (strncmp(kv->key, arch, alen) == 0 && kv->key[alen] == '.'))
			sk = gguf_find_kv(syn, kv->key);
		if (sk != NULL && retype(&sk->value, kv->value.type, &v) != ORCH_OK)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "%s: key %s is %s there, but the preset's value is %s",
			                 gguf_name(real), kv->key, gguf_vtype_name(kv->value.type),
			                 gguf_vtype_name(sk->value.type));
		if ((rv = gguf_writer_set_value(out, kv->key, &v)) != ORCH_OK)
			return orch_errf(reterr, rv, "%s: copying key %s failed", gguf_name(real),
			                 kv->key);
	}
	return ORCH_OK;
}

orch_err
synth_meta_from(struct gguf_writer **w, const char *arch, const char *path,
                struct orch_errinfo *reterr)
{
	struct gguf_file *real = NULL, *syn = NULL;
	struct gguf_writer *out = NULL;
	struct gguf_str a = {0};
	void *buf = NULL;
	size_t size = 0;
	orch_err rv;

	if ((rv = gguf_open(path, &real, reterr)) != ORCH_OK)
		return rv;
	if (gguf_get_str(real, "general.architecture", &a) != ORCH_OK || a.len != strlen(arch) ||
	    memcmp(a.ptr, arch, a.len) != 0) {
		rv = orch_errf(
		        reterr, ORCH_EINVAL,
		        "--metadata-from %s: its general.architecture is '%.*s', the preset's is '%s'",
		        path, (int)(a.len > 40 ? 40 : a.len), a.len ? a.ptr : "", arch);
		goto out;
	}
	if ((rv = gguf_writer_write_mem(*w, NULL, NULL, &buf, &size, reterr)) != ORCH_OK ||
	    (rv = gguf_open_mem(buf, size, "synthesized metadata", &syn, reterr)) != ORCH_OK)
		goto out;
	if ((rv = gguf_writer_new(&out)) != ORCH_OK) {
		orch_errf(reterr, rv, "out of memory");
		goto out;
	}
	if ((rv = rekey(out, real, syn, arch, reterr)) != ORCH_OK)
		goto out;
	gguf_writer_free(*w);
	*w = out;
	out = NULL;
out:
	gguf_writer_free(out);
	gguf_close(syn);
	free(buf);
	gguf_close(real);
	return rv;
}
