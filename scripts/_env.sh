# Shared by scripts/demo and scripts/test: create or reuse .venv and install the project with the
# extras given as arguments. Reinstalls only when pyproject.toml or the extras change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

vta_setup_env() {
    local extras="$1"
    if [ ! -x "$PY" ]; then
        echo "[setup] creating $VENV"
        python3 -m venv "$VENV"
        "$PY" -m pip install -q --upgrade pip
    fi
    local stamp="$VENV/.vta-installed-${extras//,/-}"
    local want
    want="$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "[setup] installing vta-codesign[$extras] into .venv"
        "$PY" -m pip install -q -e "$ROOT[$extras]" 2>&1 | grep -v -e '^WARNING: Location' >&2 || true
        "$PY" -c "import vta, numpy, llvmlite, xgboost" || { echo "[setup] install failed" >&2; exit 1; }
        echo "$want" > "$stamp"
    fi
    export PATH="$VENV/bin:$PATH"
}
