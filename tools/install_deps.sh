#!/usr/bin/env bash
# Installs what this project needs on a fresh machine, and nothing that is already there:
# torch (CPU build 2.13.0 when no torch is installed; an installed CUDA torch is kept), the
# Python packages in requirements.txt, and Debian's nix-bin for `nix-instantiate --parse`
# (tools/check.py). Safe to re-run; on a machine without network it installs nothing and says
# what is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# pip, quietly: this workplace's pip config lists local indexes that do not exist everywhere,
# and pip warns about each of them once per package.
pip_install() {
  $PY -m pip install -q "$@" 2>&1 | grep -v "is ignored: it is neither a file nor a directory"
  return "${PIPESTATUS[0]}"
}

if ! $PY -c "import torch" 2>/dev/null; then
  echo "install_deps: installing torch==2.13.0 (CPU build)"
  pip_install torch==2.13.0 || { echo "install_deps: torch install failed" >&2; exit 1; }
fi

missing=$($PY - <<'PYEOF'
import importlib.metadata as md
need = []
for line in open("requirements.txt"):
    req = line.split("#")[0].strip()
    if not req:
        continue
    name, _, ver = req.partition("==")
    try:
        have = md.version(name.strip())
        if ver and have != ver.strip():
            need.append(req)
    except md.PackageNotFoundError:
        need.append(req)
print(" ".join(need))
PYEOF
)
if [[ -n "$missing" ]]; then
  echo "install_deps: installing $missing"
  pip_install $missing || { echo "install_deps: pip install failed for: $missing" >&2; exit 1; }
fi

if ! command -v nix-instantiate >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "install_deps: installing nix-bin (for nix-instantiate --parse)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nix-bin; } \
      >/tmp/install_deps_apt.log 2>&1 || echo "install_deps: nix-bin not installed (see /tmp/install_deps_apt.log)" >&2
  else
    echo "install_deps: no apt-get; install Nix's nix-instantiate for the flake check" >&2
  fi
fi
exit 0
