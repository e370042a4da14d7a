#!/usr/bin/env bash
# An AVX2-only build of llama-cpp-python (the kernels a CPU without AVX-512 runs), for measuring llama.cpp's
# numerics of the other CPU kind on an AVX-512 machine: llama.cpp picks its CPU kernels when it is compiled
# (GGML_NATIVE), so this build runs the AVX2 code paths wherever it runs (its records' system_info says
# "AVX512 = 0"). Its timings are not an AVX2 machine's; its logits are.
#   benchmarks/llamacpp_avx2.sh            # build once (~9 min on 2 cores), print the PYTHONPATH to use
#   PYTHONPATH=$(benchmarks/llamacpp_avx2.sh):. .venv/bin/python benchmarks/llamacpp_batch_probe.py ...
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMA_VERSION=$(sed -n 's/^LLAMA_VERSION=//p' scripts/install.sh)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/semif
WHEELHOUSE=$CACHE/wheelhouse/avx2-only-$(uname -m)
TARGET=$CACHE/llama-cpp-avx2-$LLAMA_VERSION
log() { echo "[llamacpp-avx2] $*" >&2; }
if [ ! -f "$TARGET/llama_cpp/__init__.py" ]; then
  wheel=$(ls "$WHEELHOUSE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$wheel" ]; then
    log "building llama-cpp-python $LLAMA_VERSION for AVX2 without AVX-512 (cached in $WHEELHOUSE)"
    mkdir -p "$WHEELHOUSE"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      .venv/bin/python -m pip -q --disable-pip-version-check wheel --no-deps --no-cache-dir -w "$WHEELHOUSE" \
      "llama-cpp-python==$LLAMA_VERSION"
    wheel=$(ls "$WHEELHOUSE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)
  fi
  .venv/bin/python -m pip -q --disable-pip-version-check install --no-deps --target "$TARGET" "$wheel"
fi
info=$(PYTHONPATH=$TARGET .venv/bin/python -c "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())")
case "$info" in
  *"AVX512 = 1"*) log "error: $TARGET was built with AVX-512 ($info)"; exit 1 ;;
esac
log "$info"
echo "$TARGET"
