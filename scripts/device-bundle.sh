#!/bin/sh
# What a GPU lease's machine needs to run `ragen bench gpu --check` (docs/gpu.md): it has PyTorch but no Node and no
# network, and takes a working tree of at most 64 MiB. Writes, in the ignored folder .device/:
#   node.xz        this machine's Node binary
#   bundle.tar.xz  dist/ and build/ as built here, and the production node_modules (npm ci --omit=dev, source maps
#                  left out: 150 MB on disk, most of it the Qwen tokenizer package's maps)
# then checks that they and the files git would send fit the 64 MiB, and prints the command that unpacks them there.
# Usage: sh scripts/device-bundle.sh        (after changing the sources: it runs `npm run build` itself)
set -eu
cd "$(dirname "$0")/.."
LIMIT=$((64 * 1024 * 1024))

npm run build >&2
rm -rf .device
mkdir -p .device/stage
cp package.json package-lock.json .device/stage/
(cd .device/stage && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
find .device/stage/node_modules -name '*.map' -delete
cp -r dist build .device/stage/
echo "device bundle: compressing dist/, build/ and $(du -sh .device/stage/node_modules | cut -f1) of node_modules (xz, ~1 min)" >&2
tar -C .device/stage -cf - dist build node_modules | xz -T0 -6 > .device/bundle.tar.xz
xz -T0 -9 -c "$(command -v node)" > .device/node.xz
rm -rf .device/stage

# What travels: tracked files, untracked files git does not ignore, and the carried .device/.
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
device=$(du -cb .device/node.xz .device/bundle.tar.xz | tail -1 | cut -f1)
total=$((tree + device))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "device bundle: node.xz + bundle.tar.xz $(mib "$device"), working tree $(mib "$tree"): $(mib "$total") of the 64 MiB" >&2
if [ "$total" -gt "$LIMIT" ]; then
  echo "device bundle: over the device's 64 MiB working-tree limit; leave out more of node_modules or the tree" >&2
  exit 1
fi
cat <<'EOF'
# carry: [".device"]; begin each device command with:
tar -xJf .device/bundle.tar.xz && xz -dc .device/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node bin/ragen.js bench gpu --check ...
EOF
