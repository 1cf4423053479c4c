#!/usr/bin/env bash
# Builds the Debian package from built executables (docs/configuration.md, "Installing"):
#   deb.sh BUILD_DIR OUTPUT_FOLDER      → OUTPUT_FOLDER/sensorkitd_<version>_<arch>.deb
# The tree is scripts/install.sh's with PREFIX=/usr. Depends lists the Debian package of every
# shared library the executables need (objdump's NEEDED, resolved with ldd, owned per dpkg -S);
# a library no Debian package owns (a toolchain's dynamic Swift runtime) stops the build, unless
# SENSORKIT_DEB_UNPACKAGED=skip (tests packaging a debug build) leaves it out.
# SENSORKIT_DEB_COMPRESSION (default xz; tests use none) is dpkg-deb's -Z.
set -euo pipefail
build=${1:?build folder}
out=${2:?output folder}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d "$out/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
"$top/scripts/install.sh" "$build" "$stage" /usr >/dev/null

# Debian ships stripped executables: a third smaller, same code.
strip --strip-unneeded "$stage"/usr/bin/*
version=$("$stage/usr/bin/sensorkitd" --version | awk '{ print $2 }')
arch=$(dpkg --print-architecture)
depends=()
declare -A seen=()
for binary in "$stage"/usr/bin/*; do
  for library in $(objdump -p "$binary" | awk '$1 == "NEEDED" { print $2 }'); do
    # "lib => /path (addr)", or "/path (addr)" for the dynamic loader.
    path=$(ldd "$binary" | awk -v lib="$library" '
      $2 == "=>" && $1 == lib && $3 ~ /^\// { print $3; exit }
      $2 != "=>" && $1 ~ /^\// { n = split($1, part, "/"); if (part[n] == lib) { print $1; exit } }')
    [ -n "$path" ] || { echo "deb.sh: $library (needed by $(basename "$binary")) not found" >&2; exit 1; }
    package=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)
    package=${package%%:*}
    if [ -z "$package" ]; then
      if [ "${SENSORKIT_DEB_UNPACKAGED:-}" = skip ]; then continue; fi
      echo "deb.sh: $path (needed by $(basename "$binary")) belongs to no Debian package; build with --static-swift-stdlib" >&2
      exit 1
    fi
    [ -n "${seen[$package]:-}" ] && continue
    seen[$package]=1
    upstream=$(dpkg-query -W -f='${Version}' "$package" | sed 's/^[0-9]*://; s/-[^-]*$//')
    depends+=("$package (>= $upstream)")
  done
done
adduser=passwd   # useradd/groupadd
depends+=("$adduser")
IFS=$'\n' sorted=($(printf '%s\n' "${depends[@]}" | sort -u)); unset IFS

install -d "$stage/DEBIAN"
install -m 0755 "$top"/packaging/debian/postinst "$top"/packaging/debian/prerm "$top"/packaging/debian/postrm "$stage/DEBIAN/"
( cd "$stage" && find etc -type f | sed 's#^#/#' | sort ) > "$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | awk '{ print $1 }')
{
  echo "Package: sensorkitd"
  echo "Version: $version"
  echo "Architecture: $arch"
  echo "Maintainer: sensorkitd maintainers <sensorkitd@localhost>"
  echo "Installed-Size: $size"
  echo "Depends: $(IFS=,; echo "${sorted[*]}" | sed 's/,/, /g')"
  # The participant's application (GTK 4, libadwaita, cairo for its day bars): recommended, as the
  # daemon records and serves without it; its user unit only starts with a graphical session.
  echo "Recommends: systemd, udev, python3, python3-gi, python3-gi-cairo, gir1.2-gtk-4.0, gir1.2-adw-1"
  echo "Section: science"
  echo "Priority: optional"
  echo "Description: SensorKit for Linux: records IIO and BLE sensors for study apps"
  echo " sensorkitd records IIO accelerometers, gyroscopes, light, pressure and step"
  echo " sensors and Bluetooth LE wearables with Apple SensorKit's rules (24-hour hold,"
  echo " 7-day window, per-app per-sensor consent) and serves them over a Unix socket."
  echo " The participant's application (Research Sensor & Usage Data, the authorization"
  echo " sheet) lets a study participant consent, review and delete without a terminal."
} > "$stage/DEBIAN/control"
deb="$out/sensorkitd_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Z"${SENSORKIT_DEB_COMPRESSION:-xz}" --build "$stage" "$deb" >/dev/null
echo "$deb"
