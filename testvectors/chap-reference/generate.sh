#!/usr/bin/env bash
# Regenerates the CHAP reference-coordinator test vectors in this directory.
# Usage: ./generate.sh [--live] <path-to-a-chap-checkout> [chap-commit]
#   The second argument names the commit when the first is not a git checkout.
#   Without --live: rewrites ts/ and py/ (deterministic, byte-for-byte reproducible).
#   With --live: rewrites live-ts/ and live-py/ (the journeys marked "live" in the
#   plan, run with the coordinators' real clock and random ids and random keys:
#   not reproducible; recorded once).
#   Files over 1 MiB are stored gzip-compressed as <name>.gz (gzip -n: no name or
#   timestamp in the header).
# Needs: node >= 20 with npm (installs tsx into a temporary directory),
#        python3 >= 3.10 with the `cryptography` package, gzip.
set -euo pipefail

TSX_VERSION=4.23.1

live=
if [ "${1:-}" = "--live" ]; then live=--live; shift; fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 [--live] <path-to-a-chap-checkout> [chap-commit]" >&2
  exit 2
fi
chap=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -f "$chap/packages/coordinator/src/coordinator.ts" ] || { echo "no packages/coordinator/src in $chap" >&2; exit 1; }
[ -f "$chap/packages/coordinator-py/chap_coordinator/coordinator.py" ] || { echo "no packages/coordinator-py in $chap" >&2; exit 1; }

if commit=$(git -C "$chap" rev-parse HEAD 2>/dev/null); then :; else commit=${2:-unknown}; fi
if [ -n "$(git -C "$chap" status --porcelain 2>/dev/null || true)" ]; then
  echo "warning: $chap has local changes" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npm install --silent --no-audit --no-fund --prefix "$tmp" "tsx@$TSX_VERSION" >/dev/null
tsx="$tmp/node_modules/.bin/tsx"

if [ -n "$live" ]; then out_ts=live-ts out_py=live-py; else out_ts=ts out_py=py; fi
rm -rf "${here:?}/$out_ts" "${here:?}/$out_py"
( cd "$here" && "$tsx" journeys.ts $live "$chap" journeys.plan.json "$out_ts" )
( cd "$here" && python3 journeys.py $live "$chap" journeys.plan.json "$out_py" )
# Over 1 MiB: stored as <name>.gz, deterministic (-n: no file name, no timestamp).
find "$here/$out_ts" "$here/$out_py" -type f -size +1048576c -exec gzip -n -9 {} +

ts_version=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version)' "$chap/packages/coordinator/package.json")
py_version=$(python3 - "$chap/packages/coordinator-py/pyproject.toml" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'^\[project\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
print(m.group(1) if m else "unknown")
PY
)
tsx_actual=$("$tsx" --version | sed -n 's/^tsx v//p')
gzip_version=$(gzip --version | sed -n '1s/^gzip //p')
python3 - "$here/versions.json" "$commit" "$ts_version" "$py_version" "$(node --version)" "$tsx_actual" "$gzip_version" <<'PY'
import json, sys, platform
import cryptography
out, commit, ts_v, py_v, node_v, tsx_v, gzip_v = sys.argv[1:]
doc = {
    "chap_repository": "https://github.com/BrightbeamAI/chap",
    "chap_commit": commit,
    "coordinator_ts": {"package": "@brightbeamai/chap-coordinator", "version": ts_v},
    "coordinator_py": {"package": "chap-coordinator", "version": py_v},
    "node": node_v,
    "tsx": tsx_v,
    "python": platform.python_version(),
    "cryptography": cryptography.__version__,
    "gzip": gzip_v,
}
with open(out, "w", encoding="utf-8", newline="\n") as f:
    f.write(json.dumps(doc, indent=2) + "\n")
PY
echo "wrote $here/$out_ts, $here/$out_py and versions.json (chap $commit)"
