#!/bin/sh
# What a GPU lease's machine needs to run `ragen bench gpu --check` (docs/gpu.md): it has PyTorch but no Node and no
# network, and takes a working tree of at most 64 MiB. Writes, in the ignored folder .device/ (or --out):
#   node.xz        this machine's Node binary
#   bundle.tar.xz  dist/ and build/ as built here, and the production node_modules (npm ci --omit=dev, source maps
#                  left out: 150 MB on disk, most of it the Qwen tokenizer package's maps)
# then checks that they and the files git would send fit the 64 MiB, and prints the command that unpacks them there.
# Usage: sh scripts/device-bundle.sh [--no-build] [--out DIR]
#   --no-build  bundle dist/ and build/ as they are (after an `npm run build` of the current sources)
#   --out DIR   write the two files into DIR instead of .device/ (the folder the device call carries)
set -eu
cd "$(dirname "$0")/.."
LIMIT=$((64 * 1024 * 1024))
build=1
out=.device
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --out) out="${2:?--out needs a folder}"; shift ;;
    *) echo "device bundle: unknown argument \`$1\`; usage: sh scripts/device-bundle.sh [--no-build] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done

[ "$build" = 1 ] && npm run build >&2
stage="$out/stage"
rm -rf "$stage" "$out/node.xz" "$out/bundle.tar.xz"
mkdir -p "$stage"
cp package.json package-lock.json "$stage/"
(cd "$stage" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error >&2)
find "$stage/node_modules" -name '*.map' -delete
cp -r dist build "$stage/"
echo "device bundle: compressing dist/, build/ and $(du -sh "$stage/node_modules" | cut -f1) of node_modules (xz, ~1 min)" >&2
tar -C "$stage" -cf - dist build node_modules | xz -T0 -6 > "$out/bundle.tar.xz"
xz -T0 -9 -c "$(command -v node)" > "$out/node.xz"
rm -rf "$stage"

# What travels: tracked files, untracked files git does not ignore, and the carried folder.
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
device=$(du -cb "$out/node.xz" "$out/bundle.tar.xz" | tail -1 | cut -f1)
total=$((tree + device))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "device bundle: node.xz + bundle.tar.xz $(mib "$device"), working tree $(mib "$tree"): $(mib "$total") of the 64 MiB" >&2
if [ "$total" -gt "$LIMIT" ]; then
  echo "device bundle: over the device's 64 MiB working-tree limit; leave out more of node_modules or the tree" >&2
  exit 1
fi
echo "# carry: [\"$out\"]; begin each device command with:"
echo "tar -xJf $out/bundle.tar.xz && xz -dc $out/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node bin/ragen.js bench gpu --check ..."
