/*
 * synth_presets.c - the presets: the exact shapes and hyper-parameters of
 * the real models (from their published configs), and tiny variants of the
 * same architectures for fast tests. The tiny ones are 256 wide so every
 * K-quant (256-element super-blocks) applies to every matrix; tiny-gpt-oss
 * keeps gpt-oss's head size (64, not n_embd / n_head) and its window.
 */
#include <string.h>

#include "synth.h"

static const struct synth_preset presets[] = {
        {.name = "qwen2.5-0.5b",
         .arch = "qwen2",
         .n_layer = 24,
         .n_embd = 896,
         .n_head = 14,
         .n_head_kv = 2,
         .n_ff = 4864,
         .n_vocab = 151936,
         .n_ctx = 32768,
         .n_rot = 64,
         .rope_base = 1000000.0f,
         .rms_eps = 1e-6f,
         .qkv_bias = true,
         .tied = true},
        {.name = "phi3-mini-4k",
         .arch = "phi3",
         .n_layer = 32,
         .n_embd = 3072,
         .n_head = 32,
         .n_head_kv = 32,
         .n_ff = 8192,
         .n_vocab = 32064,
         .n_ctx = 4096,
         .n_rot = 96,
         .rope_base = 10000.0f,
         .rms_eps = 1e-5f,
         .fused = true,
         .n_ctx_orig = 4096},
        {.name = "llama-3.2-1b",
         .arch = "llama",
         .n_layer = 16,
         .n_embd = 2048,
         .n_head = 32,
         .n_head_kv = 8,
         .n_ff = 8192,
         .n_vocab = 128256,
         .n_ctx = 131072,
         .n_rot = 64,
         .rope_base = 500000.0f,
         .rms_eps = 1e-5f,
         .tied = true,
         .llama3_rope = true},
        {.name = "tiny-llama",
         .arch = "llama",
         .n_layer = 2,
         .n_embd = 256,
         .n_head = 4,
         .n_head_kv = 2,
         .n_ff = 256,
         .n_vocab = 512,
         .n_ctx = 2048,
         .n_rot = 64,
         .rope_base = 10000.0f,
         .rms_eps = 1e-5f},
        {.name = "tiny-qwen2",
         .arch = "qwen2",
         .n_layer = 2,
         .n_embd = 256,
         .n_head = 4,
         .n_head_kv = 2,
         .n_ff = 256,
         .n_vocab = 512,
         .n_ctx = 2048,
         .n_rot = 64,
         .rope_base = 1000000.0f,
         .rms_eps = 1e-6f,
         .qkv_bias = true,
         .tied = true},
        {.name = "gpt-oss-20b",
         .arch = "gpt-oss",
         .n_layer = 24,
         .n_embd = 2880,
         .n_head = 64,
         .n_head_kv = 8,
         .n_ff = 2880,
         .n_vocab = 201088,
         .n_ctx = 131072,
         .n_rot = 64,
         .rope_base = 150000.0f,
         .rms_eps = 1e-5f,
         .gpt_oss = true,
         .head_dim = 64,
         .n_expert = 32,
         .n_expert_used = 4,
         .n_swa = 128,
         .yarn_factor = 32.0f,
         .yarn_orig_ctx = 4096},
        {.name = "tiny-gpt-oss",
         .arch = "gpt-oss",
         .n_layer = 2,
         .n_embd = 256,
         .n_head = 8,
         .n_head_kv = 2,
         .n_ff = 256,
         .n_vocab = 512,
         .n_ctx = 4096,
         .n_rot = 64,
         .rope_base = 150000.0f,
         .rms_eps = 1e-5f,
         .gpt_oss = true,
         .head_dim = 64,
         .n_expert = 8,
         .n_expert_used = 4,
         .n_swa = 128,
         .yarn_factor = 32.0f,
         .yarn_orig_ctx = 4096},
        /* the shared data's gpt-oss-tiny shape: 32 wide, so gpt-oss's 201,088-token
           vocabulary (--vocab) makes a ~50 MB file, not 430 MB */
        {.name = "tiny-gpt-oss-narrow",
         .arch = "gpt-oss",
         .n_layer = 2,
         .n_embd = 32,
         .n_head = 8,
         .n_head_kv = 2,
         .n_ff = 96,
         .n_vocab = 512,
         .n_ctx = 4096,
         .n_rot = 64,
         .rope_base = 150000.0f,
         .rms_eps = 1e-5f,
         .gpt_oss = true,
         .head_dim = 64,
         .n_expert = 8,
         .n_expert_used = 4,
         .n_swa = 128,
         .yarn_factor = 32.0f,
         .yarn_orig_ctx = 4096},
        {.name = "tiny-phi3",
         .arch = "phi3",
         .n_layer = 2,
         .n_embd = 256,
         .n_head = 4,
         .n_head_kv = 4,
         .n_ff = 256,
         .n_vocab = 512,
         .n_ctx = 2048,
         .n_rot = 64,
         .rope_base = 10000.0f,
         .rms_eps = 1e-5f,
         .fused = true,
         .n_ctx_orig = 2048},
};

const struct synth_preset *
synth_preset_find(const char *name)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strcmp(presets[i].name, name) == 0)
			return &presets[i];
	return NULL;
}

const struct synth_preset *
synth_preset_at(size_t i)
{
	return i < synth_preset_count() ? &presets[i] : NULL;
}

size_t
synth_preset_count(void)
{
	return sizeof(presets) / sizeof(presets[0]);
}
