#!/usr/bin/env bash
# Runs the README's test command (.ci/run) on a machine where nothing was installed by hand: a
# Debian 12 chroot made by debootstrap, holding only a base system, the packages a Swift toolchain
# needs, and whatever the project's own scripts install. It proves that install-deps.sh lists every
# package the tests use: a test that fails here but passes elsewhere leans on something installed by hand.
#
#   sudo scripts/fresh-machine.sh [--packages FILE] [--python-prefix DIR] [--keep] [FOLDER]
#
# FOLDER      where the chroot lives (default /var/tmp/sensorkit-fresh); made once, reused after
#             (the base system and toolchain packages), but the clone and its build are new each run.
# --packages  a file of Debian package names, one a line, to preinstall instead of the toolchain's
#             list below: to mirror a particular machine image's package set.
# --python-prefix  a Python installation (e.g. /root/.pyenv/versions/3.11.7) bind-mounted at the same
#             path, its bin/ first on PATH inside the chroot: images whose first python3 is not
#             Debian's. The tests must not depend on it.
# --keep      leave the chroot's mounts in place at the end.
#
# The Swift toolchain is bind-mounted read-only from /opt/swift; the clone is of this checkout's
# HEAD (commit first).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
folder=/var/tmp/sensorkit-fresh
packages=""
python=""
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --packages) packages=$(realpath "$2"); shift 2 ;;
    --python-prefix) python=$(realpath "$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fresh-machine: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) folder=$1; shift ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
[ -x /opt/swift/usr/bin/swift ] || { echo "fresh-machine: no Swift toolchain at /opt/swift" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null

# What swift.org lists for Debian 12 besides the toolchain itself, plus git and make to clone and run.
toolchain_packages=(binutils-gold ca-certificates git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev
  libpython3-dev libsqlite3-0 libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev make pkg-config tzdata unzip zlib1g-dev)

if [ ! -x "$folder/usr/bin/apt-get" ]; then
  echo "fresh-machine: debootstrap bookworm into $folder"
  debootstrap --variant=minbase bookworm "$folder" http://deb.debian.org/debian >"$folder.debootstrap.log" 2>&1 ||
    { cat "$folder.debootstrap.log" >&2; exit 1; }
  printf 'deb http://deb.debian.org/debian bookworm main\ndeb http://deb.debian.org/debian bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
    >"$folder/etc/apt/sources.list"
fi

mounts=()
bind() { # bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mountpoint -q "$2" || { mount --bind "$1" "$2"; mounts=("$2" "${mounts[@]}"); [ "${3:-}" != ro ] || mount -o remount,bind,ro "$2"; }
}
cleanup() { [ "$keep" -eq 1 ] || for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
for d in proc sys dev dev/pts; do bind "/$d" "$folder/$d"; done
for d in run dev/shm; do mkdir -p "$folder/$d"; mountpoint -q "$folder/$d" || { mount -t tmpfs tmpfs "$folder/$d"; mounts=("$folder/$d" "${mounts[@]}"); }; done
bind /opt/swift "$folder/opt/swift" ro
cp /etc/resolv.conf "$folder/etc/resolv.conf"

in_chroot() { chroot "$folder" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI=true PATH="$path" "$@"; }
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
echo "fresh-machine: the toolchain's packages"
if [ -n "$packages" ]; then mapfile -t wanted < <(grep -v '^#' "$packages" | awk 'NF { print $1 }'); else wanted=("${toolchain_packages[@]}"); fi
in_chroot apt-get update -q >/dev/null
in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${wanted[@]}" </dev/null >"$folder.packages.log" 2>&1 ||
  { tail -30 "$folder.packages.log" >&2; exit 1; }

if [ -n "$python" ]; then
  bind "$python" "$folder$python" ro
  path=$python/bin:$path
fi

rm -rf "$folder/root/work" && mkdir -p "$folder/root/work"
git clone -q "$top" "$folder/root/work/p"
echo "fresh-machine: bash .ci/run in $folder/root/work/p (first python3 on PATH: $(in_chroot sh -c 'command -v python3' || echo none))"
in_chroot bash -c 'cd /root/work/p && bash .ci/run </dev/null'
