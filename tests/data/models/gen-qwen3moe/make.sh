#!/bin/sh
# Rebuild the qwen3moe-tiny test models and goldens: sh make.sh OUTDIR
# needs: llama.cpp de3ff81 source in $LLSRC (node-llama-cpp@3.22.1's bundle), cmake, g++, python3-numpy
# golden.cpp is gen-qwen3's (the same prompts, settings and layout).
set -eu
LLSRC=${LLSRC:-/tmp/llsrc/llama.cpp}; BUILD=${BUILD:-/tmp/q3/llama-build}; OUT=$1; HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
if [ ! -f "$BUILD/bin/libllama.so" ]; then
  cmake -S "$LLSRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CPU_REPACK=OFF -DLLAMA_CURL=OFF \
        -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
  cmake --build "$BUILD" -j2 --target llama llama-simple
fi
g++ -std=c++17 -O2 -o "$OUT/golden" "$HERE/../gen-qwen3/golden.cpp" -I"$LLSRC/include" -I"$LLSRC/ggml/include" \
    -L"$BUILD/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$BUILD/bin"
export PYTHONPATH="$LLSRC/gguf-py"
PY=${PY:-/usr/bin/python3}
$PY "$HERE/make_qwen3moe_tiny.py" "$OUT/qwen3moe-tiny-f32.gguf" --seed 1
$PY "$HERE/make_qwen3moe_tiny.py" "$OUT/qwen3moe-tiny-q8_0.gguf" --seed 1 --q8_0
for m in qwen3moe-tiny-f32 qwen3moe-tiny-q8_0; do
  "$OUT/golden" "$OUT/$m.gguf" "$OUT/golden-$m.json"   # exits 2 if a greedy step is too close to call
done
# checks only (not shipped): an independent numpy forward pass reproduces the goldens and
# prints the routing's smallest margin; without renormalization or with another expert count
# it does not
for m in qwen3moe-tiny-f32 qwen3moe-tiny-q8_0; do
  $PY "$HERE/ref_forward.py" "$OUT/$m.gguf" "$OUT/golden-$m.json" > "$OUT/ref-$m.txt"
done
$PY "$HERE/ref_forward.py" "$OUT/qwen3moe-tiny-f32.gguf" "$OUT/golden-qwen3moe-tiny-f32.json" --no-norm > "$OUT/ref-no-norm.txt"
$PY "$HERE/ref_forward.py" "$OUT/qwen3moe-tiny-f32.gguf" "$OUT/golden-qwen3moe-tiny-f32.json" --top-k 3 > "$OUT/ref-top3.txt"
