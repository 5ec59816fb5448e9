#!/usr/bin/env bash
# Builds Evident's release: evidentd, evident and evident-witness for linux and darwin on
# amd64 and arm64, static (CGO_ENABLED=0) and reproducible (-trimpath, the build's VCS stamp,
# archives with fixed order, owners and times), each archive with the LICENSE, README and
# CHANGELOG, and a SHA256SUMS file over the archives. The version is stamped into every binary:
# `evident version` prints it.
#
# Usage:
#   scripts/release.sh [--out DIR] [--platforms "linux/amd64 darwin/arm64 ..."] VERSION
#   scripts/release.sh --check [--platforms ...] VERSION
#
# --check builds the release twice, the second time with an empty Go build cache, and fails
# unless both builds are the same bytes. Releases are built from a clean work tree: a
# modified one would be recorded in the binaries (vcs.modified) and could not be rebuilt by
# anyone else. GNU tar and gzip are needed (a Linux release host).
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist
platforms="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
check=
allow_dirty=
version=
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --platforms) platforms="$2"; shift 2 ;;
    --check) check=1; shift ;;
    --allow-dirty) allow_dirty=1; shift ;; # for testing this script on a work tree
    -h|--help) usage; exit 0 ;;
    -*) echo "release: unknown flag $1" >&2; usage >&2; exit 64 ;;
    *) [ -z "$version" ] || { echo "release: one VERSION only" >&2; exit 64; }; version="$1"; shift ;;
  esac
done
if ! [[ "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: VERSION must be a semantic version such as v0.1.0 or v0.1.0-rc.1, not '${version}'" >&2
  exit 64
fi
if [ -z "$allow_dirty" ] && [ -n "$(git status --porcelain)" ]; then
  echo "release: the work tree has uncommitted changes; commit them (or stash) first" >&2
  exit 1
fi

# Every time inside the archives is the commit's, so the same commit gives the same bytes.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH CGO_ENABLED=0 GOFLAGS="-mod=readonly"

# build DIR: the whole release into DIR.
build() {
  local dir="$1" p goos goarch name stage
  mkdir -p "$dir"
  for p in $platforms; do
    goos=${p%/*} goarch=${p#*/}
    name="evident_${version}_${goos}_${goarch}"
    stage="$dir/$name"
    mkdir -p "$stage"
    echo "release: building $name" >&2
    GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=true \
      -ldflags "-s -w -buildid= -X github.com/evident-log/evident/internal/buildinfo.stamped=${version}" \
      -o "$stage/" ./cmd/evidentd ./cmd/evident ./cmd/evident-witness
    cp LICENSE README.md CHANGELOG.md "$stage/"
    chmod 0755 "$stage"/evident*
    chmod 0644 "$stage"/LICENSE "$stage"/README.md "$stage"/CHANGELOG.md
    tar --sort=name --mtime="@${SOURCE_DATE_EPOCH}" --owner=0 --group=0 --numeric-owner \
      --format=gnu -C "$dir" -cf - "$name" | gzip -n -9 >"$dir/$name.tar.gz"
    rm -rf "$stage"
  done
  (cd "$dir" && sha256sum -- *.tar.gz >SHA256SUMS)
}

if [ -z "$check" ]; then
  rm -rf "${out:?}/$version"
  build "$out/$version"
  cat "$out/$version/SHA256SUMS"
  echo "release: $out/$version" >&2
  exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/evident-release.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
build "$tmp/first"
GOCACHE="$tmp/gocache" build "$tmp/second"
if ! diff "$tmp/first/SHA256SUMS" "$tmp/second/SHA256SUMS"; then
  echo "release: NOT reproducible: two builds of the same commit differ" >&2
  exit 1
fi
# The host's own binary says the stamped version.
host="$(go env GOOS)/$(go env GOARCH)"
for p in $platforms; do
  if [ "$p" = "$host" ]; then
    name="evident_${version}_${p%/*}_${p#*/}"
    tar -C "$tmp" -xzf "$tmp/first/$name.tar.gz"
    got=$("$tmp/$name/evident" version)
    case "$got" in
      "evident $version "*) ;;
      *) echo "release: the binary says '$got', not version $version" >&2; exit 1 ;;
    esac
    echo "release: $got" >&2
  fi
done
echo "release: reproducible: $(wc -l <"$tmp/first/SHA256SUMS") archive(s), the same bytes from two builds" >&2
cat "$tmp/first/SHA256SUMS"
