/*
 * synth_mix.c - which tensor gets which type, as llama.cpp's quantizer
 * (llama_tensor_get_type) decides for the types and mixes orch-synth offers.
 *
 * Pure types: every matrix gets the type; 1-D tensors (norms, biases,
 * rope_freqs) stay F32. Q4_K_M: Q4_K, except
 *   - output.weight (or the tied token_embd.weight): Q6_K, or Q8_0 when
 *     its rows are not whole 256-blocks;
 *   - attn_v.weight and ffn_down.weight (and the experts' ffn_down_exps, which
 *     llama.cpp's name match takes too): Q6_K in the layers use_more_bits()
 *     picks (the first and last eighth, and every third between);
 *   - attn_qkv.weight (fused, phi3): Q5_K.
 * A type whose block does not divide a row falls back as llama.cpp does:
 * Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, Q2_K/Q3_K → Q4_0 (llama.cpp picks
 * IQ4_NL, which orch does not write; see docs/DECISIONS.md), and anything
 * still not dividing the row → F16.
 */
#include <string.h>
#include <strings.h>

#include "gguf/ggml_type.h"
#include "synth.h"

static const struct {
	const char *name;
	uint32_t type;
	uint32_t ftype; /* llama_ftype */
} specs[] = {
        {"F32", GGML_TYPE_F32, 0},    {"F16", GGML_TYPE_F16, 1},      {"BF16", GGML_TYPE_BF16, 32},
        {"Q4_0", GGML_TYPE_Q4_0, 2},  {"Q4_1", GGML_TYPE_Q4_1, 3},    {"Q8_0", GGML_TYPE_Q8_0, 7},
        {"Q5_0", GGML_TYPE_Q5_0, 8},  {"Q5_1", GGML_TYPE_Q5_1, 9},    {"Q2_K", GGML_TYPE_Q2_K, 10},
        {"Q3_K", GGML_TYPE_Q3_K, 11}, {"Q4_K", GGML_TYPE_Q4_K, 14},   {"Q5_K", GGML_TYPE_Q5_K, 16},
        {"Q6_K", GGML_TYPE_Q6_K, 18}, {"Q4_K_M", GGML_TYPE_Q4_K, 15},
};

orch_err
synth_mix_parse(const char *spec, struct synth_mix *m)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		if (strcasecmp(spec, specs[i].name) == 0) {
			m->name = specs[i].name;
			m->base = specs[i].type;
			m->ftype = specs[i].ftype;
			m->k_m = strcmp(specs[i].name, "Q4_K_M") == 0;
			return ORCH_OK;
		}
	}
	return ORCH_EINVAL;
}

static bool
use_more_bits(uint32_t i, uint32_t n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i >= n / 8 && (i - n / 8) % 3 == 2);
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool
fits(uint32_t type, uint64_t ne0)
{
	return ne0 % ggml_type_get(type)->block_size == 0;
}

static uint32_t
fallback(uint32_t type, uint64_t ne0)
{
	if (fits(type, ne0))
		return type;
	switch (type) {
	case GGML_TYPE_Q4_K:
		type = GGML_TYPE_Q5_0;
		break;
	case GGML_TYPE_Q5_K:
		type = GGML_TYPE_Q5_1;
		break;
	case GGML_TYPE_Q6_K:
		type = GGML_TYPE_Q8_0;
		break;
	case GGML_TYPE_Q2_K:
	case GGML_TYPE_Q3_K:
		type = GGML_TYPE_Q4_0;
		break;
	default:
		break;
	}
	return fits(type, ne0) ? type : GGML_TYPE_F16;
}

uint32_t
synth_mix_type(const struct synth_mix *m, const char *name, uint64_t ne0, uint32_t layer,
               uint32_t n_layer, bool has_output)
{
	bool is_output = strcmp(name, "output.weight") == 0 ||
	                 (!has_output && strcmp(name, "token_embd.weight") == 0);
	uint32_t type = m->base;

	if (!m->k_m)
		return fallback(type, ne0);
	if (is_output)
		return ne0 % QK_K != 0 ? GGML_TYPE_Q8_0 : GGML_TYPE_Q6_K;
	if ((ends_with(name, "attn_v.weight") || ends_with(name, "ffn_down.weight") ||
	     ends_with(name, "ffn_down_exps.weight")) &&
	    use_more_bits(layer, n_layer))
		type = GGML_TYPE_Q6_K;
	else if (ends_with(name, "attn_qkv.weight"))
		type = GGML_TYPE_Q5_K;
	return fallback(type, ne0);
}
