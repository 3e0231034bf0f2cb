#!/bin/sh
# Rebuild the mistral3-tiny test models and goldens: sh make.sh OUTDIR
# needs: llama.cpp de3ff81 source in $LLSRC (node-llama-cpp@3.22.1's bundle), cmake, g++, python3-numpy
set -eu
LLSRC=${LLSRC:-/tmp/llsrc/llama.cpp}; BUILD=${BUILD:-/tmp/q3/llama-build}; OUT=$1; HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
if [ ! -f "$BUILD/bin/libllama.so" ]; then
  cmake -S "$LLSRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CPU_REPACK=OFF -DLLAMA_CURL=OFF \
        -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
  cmake --build "$BUILD" -j2 --target llama llama-simple
fi
# gen-gemma3's golden.cpp with Mistral's chat prompt as the third
g++ -std=c++17 -O2 -o "$OUT/golden" "$HERE/../gen-gemma3/golden.cpp" -I"$LLSRC/include" -I"$LLSRC/ggml/include" \
    -DCHAT_PROMPT='"[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT][INST]Hello, how are you?[/INST]"' \
    -L"$BUILD/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$BUILD/bin"
export PYTHONPATH="$LLSRC/gguf-py"
PY=${PY:-/usr/bin/python3}
# F32: as Ministral 3 (YaRN by 4 over 16 positions, log multiplier 1, temperature scale 0.1;
# tied); Q8_0: as Mistral Small 3.x (no RoPE scaling, RoPE base 1e9, untied output)
$PY "$HERE/make_mistral3_tiny.py" "$OUT/mistral3-tiny-f32.gguf" --seed 1 --ministral
$PY "$HERE/make_mistral3_tiny.py" "$OUT/mistral3-tiny-q8_0.gguf" --seed 1 --rope-base 1e9 --untied 4 --q8_0
for m in mistral3-tiny-f32 mistral3-tiny-q8_0; do
  "$OUT/golden" "$OUT/$m.gguf" "$OUT/golden-$m.json"   # exits 2 if a greedy step is too close to call
done
