#!/bin/sh
# Debian trixie's python3-torch (2.6, CPU) in a chroot beside the project, for running the torch worker's torch >= 2
# paths without a GPU: scaled_dot_product_attention, torch.compile (inductor's C++ backend), meta-device loading,
# torchrun on a torch built without libuv, and FSDP2 on CPU ranks. `npm test`'s torch 2 lane (scripts/test-torch2.mjs)
# runs those tests with it where RAGEN_TORCH2_PYTHON names its python3 (.ci/run sets it up), and scripts/test-python.mjs
# the worker's pytest tier (python/tests) too; by hand:
#
#   sudo sh scripts/torch2-chroot.sh /opt/trixie        # ~3 minutes, ~1.5 GB; Debian's mirror only
#   RAGEN_PYTHON=/opt/trixie/python3 npx vitest run src/engine/torch-dp.test.ts src/engine/torch-compile.test.ts
#
# FSDP2 on CPU ranks needs torch >= 2.7. torch 2.6 lacks two things 2.7 added for it: no-op event calls on CPU streams,
# and all-gathers that keep the gathered parameters' autograd version counters. Both are patched into the chroot's
# copy of torch here (the chroot's only), so that src/engine/torch-dp.test.ts's FSDP2 tests run; without the patches
# they are skipped and the refusal of RAGEN_TORCH_FSDP=all is tested instead. Run as root (debootstrap, chroot,
# bind mounts); the bind mounts of /proc, /dev, /tmp and the project's folder do not survive a reboot: run the
# script again to restore them (it skips what is done, and binds again a folder whose bind shows one since deleted:
# a clone removed and made again at the same path).
set -eu
root=${1:?usage: sh scripts/torch2-chroot.sh <folder for the chroot>}
project=$(cd "$(dirname "$0")/.." && pwd -P)
# The project, /tmp and $TMPDIR are bound at the same paths inside, so that paths in requests mean the same thing.

command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
[ -x "$root/usr/bin/python3" ] || debootstrap --variant=minbase trixie "$root" http://deb.debian.org/debian
# A folder is in place when the chroot's path shows the same inode. A bind made before the folder was deleted and made
# again (a fresh clone at the same path) still counts as a mount point but shows the old, empty folder: unmount it.
same() { [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2" 2>/dev/null)" ]; }
for d in /proc /dev /sys /tmp "${TMPDIR:-/tmp}" "$project"; do
  mkdir -p "$root$d"
  if mountpoint -q "$root$d" && ! same "$d" "$root$d"; then umount -l "$root$d"; fi
  same "$d" "$root$d" || mount --bind "$d" "$root$d"
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
chroot "$root" sh -c 'python3 -c "import torch, pytest" 2>/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch libopenblas0-pthread python3-numpy python3-setuptools libtorch-dev g++ python3-pytest; }'

chroot "$root" python3 - /usr/lib/python3/dist-packages/torch <<'EOF'
import re, sys
t = sys.argv[1]
major, minor = map(int, re.search(r"__version__ = '(\d+)\.(\d+)", open(t + "/version.py").read()).groups())
if (major, minor) >= (2, 7):
    sys.exit(0)  # the fixes are torch's own
def patch(path, old, new):
    s = open(path).read()
    if new in s:
        return
    if old not in s:
        sys.exit(f"{path}: the text to patch is not there (not torch 2.6?)")
    open(path, "w").write(s.replace(old, new, 1))
patch(t + "/cpu/__init__.py",
      "    def wait_stream(self, stream) -> None:\n        pass\n",
      "    def wait_stream(self, stream) -> None:\n        pass\n\n"
      "    def record_event(self) -> None:  # ragen-ts torch2-chroot.sh: torch 2.7's no-op\n        pass\n\n"
      "    def wait_event(self, event) -> None:  # ragen-ts torch2-chroot.sh: torch 2.7's no-op\n        pass\n")
patch(t + "/distributed/fsdp/_fully_shard/_fsdp_collectives.py",
      "    torch.ops.fsdp.split_with_sizes_copy(\n        all_gather_output, all_gather_input_split_sizes, dim=1, out=out\n    )\n",
      "    import contextlib  # ragen-ts torch2-chroot.sh: keep the gathered parameters' version counters (CPU)\n"
      "    with contextlib.ExitStack() as _keep:\n"
      "        for _t in split_with_sizes_out:\n"
      "            _keep.enter_context(torch.autograd._unsafe_preserve_version_counter(_t))\n"
      "        torch.ops.fsdp.split_with_sizes_copy(\n            all_gather_output, all_gather_input_split_sizes, dim=1, out=out\n        )\n")
EOF

cat > "$root/python3" <<EOF
#!/bin/sh
# The chroot's python3, run in the caller's folder with the caller's environment (RAGEN_PYTHON points here).
exec chroot "$root" /usr/bin/env -C "\$(pwd -P)" python3 "\$@"
EOF
chmod +x "$root/python3"
"$root/python3" -c 'import torch, torch.distributed.fsdp as f; print("torch", torch.__version__, "with FSDP2:", hasattr(f, "fully_shard"))'
(cd "$project" && "$root/python3" -c 'import os, sys; os.path.isfile("python/ragen_torch/__init__.py") or sys.exit("the chroot does not show the project folder '"$project"'")')
echo "ready: RAGEN_PYTHON=$root/python3"
