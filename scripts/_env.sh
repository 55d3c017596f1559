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
