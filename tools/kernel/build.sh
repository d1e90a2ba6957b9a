#!/usr/bin/env bash
# Builds a guest kernel (bzImage) for `schedlab vm`: Debian's kernel source
# of a series, one scheduler patch, guest.config (serial console, initramfs
# root, no modules; SMP with SMT/MC domains, HZ=250, voluntary preemption,
# NO_HZ idle, cgroup cpu controller with bandwidth, sched tracepoints) and
# the scheduler's own Kconfig switch.
#
#   tools/kernel/build.sh NAME [PATCH]
#     NAME   SCHED-SERIES: cfs-6.1, eevdf-6.12, bore-6.12, bmq-6.12, pds-6.12,
#            tt-6.1, cacule-6.1, ... (SERIES picks Debian's linux-source-SERIES)
#     PATCH  the scheduler's patch (none for cfs and eevdf: vanilla); for
#            bmq and pds the Project C patch (prjc)
#   OUT=dir JOBS=n WORK=dir tools/kernel/build.sh NAME PATCH
#
# Writes $OUT/NAME.bzImage and $OUT/NAME.config (OUT defaults to .).
# Needs root's apt for the source and: gcc make flex bison bc libelf-dev
# libssl-dev xz-utils. About 10-18 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?usage: build.sh SCHED-SERIES [PATCH]}
patch_file=${2:-}
sched=${name%-*}
series=${name##*-}
out=$(mkdir -p "${OUT:-.}" && cd "${OUT:-.}" && pwd)
work=${WORK:-/tmp/schedlab-kernels}
jobs=${JOBS:-$(nproc)}
case "$sched" in
  cfs|eevdf) [ -z "$patch_file" ] || { echo "build.sh: $sched is vanilla Linux: give no patch" >&2; exit 2; } ;;
  *) [ -f "$patch_file" ] || { echo "build.sh: $sched needs its patch file as the second argument" >&2; exit 2; }
     patch_file=$(cd "$(dirname "$patch_file")" && pwd)/$(basename "$patch_file") ;;
esac
mkdir -p "$work"

src="$work/linux-source-$series"
if [ ! -d "$src" ]; then
  (cd "$work" && apt-get download "linux-source-$series" >/dev/null)
  deb=$(ls "$work"/linux-source-"$series"_*.deb | head -1)
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards '*/linux-source-*.tar.xz'
  tar -xf "$work"/usr/src/linux-source-"$series".tar.xz -C "$work"
fi

tree="$work/$name"
rm -rf "$tree"
cp -a "$src" "$tree"
cd "$tree"
if [ -n "$patch_file" ]; then
  # -F3: the patches were made for the series' first release; Debian's
  # source carries stable updates that move some context lines.
  patch -p1 -s -F3 < "$patch_file"
fi

make -s tinyconfig
./scripts/kconfig/merge_config.sh -m .config "$here/guest.config" >/dev/null
switch=
case "$sched" in
  bmq) switch='CONFIG_SCHED_ALT=y CONFIG_SCHED_BMQ=y' ;;
  pds) switch='CONFIG_SCHED_ALT=y CONFIG_SCHED_PDS=y' ;;
  bore) switch='CONFIG_SCHED_BORE=y' ;;
  tt) switch='CONFIG_TT_SCHED=y' ;;
  cacule) switch='CONFIG_CACULE_SCHED=y CONFIG_CACULE_RDB=y' ;;
esac
for opt in $switch; do echo "$opt" >> .config; done
make -s olddefconfig
for opt in $switch; do
  grep -q "^$opt\$" .config || { echo "build.sh: $opt did not survive olddefconfig: does the patch add it?" >&2; exit 1; }
done
make -s -j"$jobs" bzImage
cp arch/x86/boot/bzImage "$out/$name.bzImage"
cp .config "$out/$name.config"
echo "$out/$name.bzImage"
