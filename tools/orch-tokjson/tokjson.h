#pragma once
/*
 * tokjson.h - write a Hugging Face tokenizer.json for the byte-level BPE
 * vocabulary of a GGUF file (orch-tokjson). Used to check that the hf-json
 * tokenizer backend and the GGUF one agree.
 */
#include "base/err.h"

struct gguf_file;

/*
 * tokjson_write - @f's tokenizer.* metadata as tokenizer.json at @path:
 * model BPE (vocab, merges as "a b" strings, or as pairs with @pairs),
 * pre_tokenizer (ByteLevel with the GPT-2 regex for gpt-2/default, else a
 * Split with the GGUF pre-tokenizer's regex and a ByteLevel without regex),
 * ByteLevel decoder, control and user-defined tokens as added_tokens.
 * ORCH_EUNSUPPORTED for a non-BPE vocabulary or unknown pre-tokenizer, ORCH_EIO.
 */
orch_err tokjson_write(const struct gguf_file *f, const char *path, bool pairs,
                       struct orch_errinfo *reterr);
