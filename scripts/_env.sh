# Shared by scripts/demo, scripts/test and scripts/bench: create or reuse a virtual environment
# and install the project with the extras given. Reinstalls only when pyproject.toml or the
# extras change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
# pynq 4 needs numpy < 2, so the pynq-backed devices' tests (tests/pynq) get their own
# environment; everything else runs in .venv with the current numpy (docs/pynq.md).
PYNQ_VENV="$ROOT/.venv-pynq"

# A PYNQ-Z1/Z2 image's Python (PYNQ v3: Python 3.10, numpy 1.21, pynq 3.x) with this repository
# installed as on a board (pip install --no-deps): tests/deploy/test_board_runtime.py runs the
# board runtime in it (docs/pynq.md).
BOARD_VENV="$ROOT/.venv-board"
BOARD_PACKAGES=("numpy==1.21.*" "pynq==3.*")

# vta_setup_venv DIR EXTRAS: create DIR if needed and install the project's EXTRAS into it.
vta_setup_venv() {
    local venv="$1" extras="$2"
    local py="$venv/bin/python"
    if [ ! -x "$py" ]; then
        echo "[setup] creating $venv"
        python3 -m venv "$venv"
        "$py" -m pip install -q --upgrade pip
    fi
    local stamp="$venv/.vta-installed-${extras//,/-}"
    local want
    want="$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "[setup] installing vta-codesign[$extras] into $(basename "$venv")"
        "$py" -m pip install -q -e "$ROOT[$extras]" 2>&1 | grep -v -e '^WARNING: Location' >&2 || true
        "$py" -c "import vta, numpy, llvmlite, xgboost" || { echo "[setup] install failed" >&2; exit 1; }
        echo "$want" > "$stamp"
    fi
}

# vta_setup_env EXTRAS: .venv with EXTRAS, first on PATH.
vta_setup_env() {
    vta_setup_venv "$VENV" "$1"
    export PATH="$VENV/bin:$PATH"
}

# vta_setup_board_env: .venv-board with a Python 3.10 (python3.10 on PATH, else pyenv's), the
# board image's numpy and pynq, and this repository without its dependencies; best effort
# (without a Python 3.10 the board runtime's test skips, saying so).
vta_setup_board_env() {
    local py="$BOARD_VENV/bin/python"
    local want
    want="$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16) ${BOARD_PACKAGES[*]}"
    if [ -f "$BOARD_VENV/.vta-installed" ] && [ "$(cat "$BOARD_VENV/.vta-installed")" = "$want" ]; then
        return 0
    fi
    local base="" candidate
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10.*/bin/python "$(command -v python3.10 || true)"; do
        if [ -x "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 10)' 2>/dev/null; then
            base="$candidate"
        fi
    done
    if [ -z "$base" ]; then
        echo "[setup] no Python 3.10 (python3.10 or pyenv's): .venv-board not made"
        return 0
    fi
    echo "[setup] creating $BOARD_VENV (Python 3.10, ${BOARD_PACKAGES[*]}, the board runtime)"
    rm -rf "$BOARD_VENV"
    { "$base" -m venv "$BOARD_VENV" \
        && "$py" -m pip install -q "${BOARD_PACKAGES[@]}" \
        && "$py" -m pip install -q --no-deps -e "$ROOT"; } 2>&1 | grep -v -e '^WARNING: Location' -e DEPRECATION >&2 || true
    if "$py" -c "import numpy, pynq, vta" 2>/dev/null; then
        echo "$want" > "$BOARD_VENV/.vta-installed"
    else
        echo "[setup] .venv-board: the install failed"
    fi
}
