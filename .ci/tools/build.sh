#!/usr/bin/env bash
# Builds the CI tools pinned in .ci/tools/go.mod (a module of its own, so the
# main go.mod stays free of them) once into a cache directory keyed by that
# go.sum, and prints the directory. Tools: staticcheck, helm.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/groundcrew/tools-${key}"
mkdir -p "$dir"
build() { # name package
	if [[ ! -x "$dir/$1" ]]; then
		echo "== building $1 into $dir (once)" >&2
		(cd "$here" && GOWORK=off GOFLAGS=-mod=mod go build -o "$dir/$1.tmp" "$2")
		mv "$dir/$1.tmp" "$dir/$1"
	fi
}
build staticcheck honnef.co/go/tools/cmd/staticcheck
build helm helm.sh/helm/v3/cmd/helm
echo "$dir"
