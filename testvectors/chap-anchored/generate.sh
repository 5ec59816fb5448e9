#!/usr/bin/env bash
# Runs both CHAP reference Coordinators (0.2.10) wired to Evident through the adapters of
# integrations/ under an evidentd outage and a Coordinator crash, and rewrites ts/ and py/.
# Usage: ./generate.sh <path-to-a-chap-checkout> [chap-commit]
# Not reproducible byte for byte: live clocks, random ids, a live evidentd's keys.
# ANCHORED_ARGS (environment): extra options for anchored.py drive (--rounds, --rate, --outage …).
# Files over 1 MiB are stored as <name>.gz (gzip -n -9: no name, no timestamp).
# Needs: go, node >= 20 with npm (tsx into a temporary directory; the TypeScript adapter's
#        dependencies with npm ci in integrations/chap-ts), /usr/bin/python3 >= 3.10 with
#        cryptography and cbor2, gzip.
set -euo pipefail

TSX_VERSION=4.23.1
PYTHON=${PYTHON:-/usr/bin/python3}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 <path-to-a-chap-checkout> [chap-commit]" >&2
  exit 2
fi
chap=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ -f "$chap/packages/coordinator/src/coordinator.ts" ] || { echo "no packages/coordinator/src in $chap" >&2; exit 1; }
if commit=$(git -C "$chap" rev-parse HEAD 2>/dev/null); then :; else commit=${2:-unknown}; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$repo" && timeout 600 go build -o "$tmp/bin/" ./cmd/... )
timeout 300 npm install --silent --no-audit --no-fund --prefix "$tmp/npm" "tsx@$TSX_VERSION" >/dev/null
( cd "$repo/integrations/chap-ts" && timeout 300 npm ci --silent --no-audit --no-fund >/dev/null )

for c in ts py; do
  rm -rf "${here:?}/$c"
  timeout 1200 "$PYTHON" "$here/anchored.py" drive --coordinator "$c" --chap "$chap" \
    --bin "$tmp/bin" --work "$tmp/work-$c" --out "$here/$c" \
    --tsx-loader "$tmp/npm/node_modules/tsx/dist/loader.mjs" ${ANCHORED_ARGS:-} > "$tmp/drive-$c.out"
  find "$here/$c" -type f -size +1048576c -exec gzip -n -9 {} +
done

ts_version=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version)' "$chap/packages/coordinator/package.json")
py_version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$chap/packages/coordinator-py/pyproject.toml" | head -1)
"$PYTHON" - "$here/versions.json" "$commit" "$ts_version" "$py_version" "$(node --version)" \
  "$("$tmp/bin/evidentd" -version 2>&1 | head -1)" "$(git -C "$repo" rev-parse HEAD)" <<'PY'
import json, sys, platform
import cryptography
out, commit, ts_v, py_v, node_v, evidentd_v, repo_commit = sys.argv[1:]
doc = {
    "chap_repository": "https://github.com/BrightbeamAI/chap",
    "chap_commit": commit,
    "coordinator_ts": {"package": "@brightbeamai/chap-coordinator", "version": ts_v},
    "coordinator_py": {"package": "chap-coordinator", "version": py_v},
    "evident_commit": repo_commit,
    "evidentd": evidentd_v,
    "node": node_v,
    "tsx": "4.23.1",
    "python": platform.python_version(),
    "cryptography": cryptography.__version__,
}
with open(out, "w", encoding="utf-8", newline="\n") as f:
    f.write(json.dumps(doc, indent=2) + "\n")
PY
echo "wrote $here/ts, $here/py and versions.json (chap $commit)"
