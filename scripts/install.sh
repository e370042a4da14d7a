#!/usr/bin/env bash
# Idempotent set-up: a virtualenv in .venv with pinned torch (CPU wheel), transformers, llama-cpp-python,
# llguidance (grammar-constrained generation) and the test tools.
# Re-running is a no-op once everything is in place (a stamp records what was installed).
#   scripts/install.sh            # Python packages
#   scripts/install.sh --browser  # also Debian's chromium for the browser tests (needs root + apt)
# Both run npm ci (from package-lock.json) once per lock: the live page's engine and the site's test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
LLAMA_VERSION=0.3.36
# llama.cpp builds natively (-march=native: AVX-512 where the CPU has it), so a built wheel is only reused
# on a CPU with the same instruction-set flags: the wheelhouse is keyed on them.
cpu_key=$(uname -m)-$( (grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null || uname -m) | sha256sum | cut -c1-12)
WHEELHOUSE=${SEMIF_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/semif/wheelhouse/$cpu_key}
want_browser=0
[ "${1:-}" = "--browser" ] && want_browser=1

log() { echo "[install] $*" >&2; }

if [ "$want_browser" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    log "installing Debian chromium (browser tests)"
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  else
    log "WARNING: /usr/bin/chromium missing and apt-get as root is unavailable; browser tests will fail"
  fi
fi

# The site's npm packages, pinned by package-lock.json: npm ci, once per lock. The live page's in-browser engine
# (@wllama/wllama, which build.py copies into site/assets/wllama/) is needed by every site build, so this runs with
# or without --browser; the browser-test tools (Lighthouse, axe-core) come with it.
npm_stamp=node_modules/.semif-npm-stamp
lock_value=$(sha256sum package-lock.json | cut -c1-32)
if [ -f "$npm_stamp" ] && [ "$(cat "$npm_stamp")" = "$lock_value" ]; then
  :
elif command -v npm >/dev/null; then
  log "installing the site's npm packages (npm ci: @wllama/wllama, lighthouse, axe-core)"
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  echo "$lock_value" > "$npm_stamp"
elif [ "$want_browser" = 1 ]; then
  log "WARNING: npm missing; the live page's engine and the Lighthouse and axe-core tests need it (install Node.js 20 and npm)"
else
  log "WARNING: npm missing; the site's live page will say it has no in-browser engine (install Node.js 20 and npm)"
fi

stamp_value=$(cat pyproject.toml scripts/install.sh | sha256sum | cut -c1-32)
stamp=$VENV/.semif-install-stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_value" ] && "$VENV/bin/python" -c "import scorer, torch, llama_cpp, llguidance, starlette, uvicorn, httpx, ray, mcp" 2>/dev/null; then
  exit 0
fi

[ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PY" -m venv "$VENV"; }
PIP=("$VENV/bin/python" -m pip -q --disable-pip-version-check)

# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
"${PIP[@]}" install "torch==2.13.0"

# llama-cpp-python builds from source (~9 min on 2 cores): build once into a wheelhouse, reuse after.
if ! "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_VERSION')" 2>/dev/null; then
  wheel=$(ls "$WHEELHOUSE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$wheel" ]; then
    log "building llama-cpp-python $LLAMA_VERSION from source (several minutes; cached in $WHEELHOUSE)"
    mkdir -p "$WHEELHOUSE"
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
      "${PIP[@]}" wheel --no-deps -w "$WHEELHOUSE" "llama-cpp-python==$LLAMA_VERSION"
    wheel=$(ls "$WHEELHOUSE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl | head -n1)
  else
    log "reusing built wheel $wheel"
  fi
  "${PIP[@]}" install "$wheel"
fi

"${PIP[@]}" install -e ".[torch,llamacpp,grammar,serve,ray,mcp,dev]"
echo "$stamp_value" > "$stamp"
log "ready: $VENV"
