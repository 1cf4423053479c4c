#!/usr/bin/env bash
# Lays out an installation of sensorkitd under DESTDIR (docs/configuration.md, "Installing"):
#   install.sh BUILD_DIR DESTDIR PREFIX
# BUILD_DIR holds the built executables (.build/release for `make install`/`make deb`; tests use
# the debug build). The executables shipped are Package.swift's executable products except the
# benchmark and fuzz drivers, so a new product is installed without editing this script.
set -euo pipefail
build=${1:?build folder}
destdir=${2:-}
prefix=${3:-/usr/local}
top=$(cd "$(dirname "$0")/.." && pwd)
# The configuration is always under /etc (the daemon's built-in --config and --apps-dir); units and
# rules go to PREFIX/lib, which systemd and udev also search for /usr/local.
sysconf=/etc
libdir=$prefix/lib
root=$destdir

executables=$(sed -n 's/^ *\.executable(name: "\([^"]*\)".*/\1/p' "$top/Package.swift" | grep -v -e '-bench$' -e '-fuzz$')
[ -n "$executables" ] || { echo "install.sh: no executable products in Package.swift" >&2; exit 1; }

install -d "$root$prefix/bin" "$root$libdir/systemd/system" "$root$libdir/systemd/user" "$root$libdir/udev/rules.d" \
  "$root$prefix/libexec/sensorkitd" "$root$prefix/share/doc/sensorkitd" \
  "$root$sysconf/sensorkit/apps.d/.example"
for name in $executables; do
  [ -x "$build/$name" ] || { echo "install.sh: $build/$name is missing (build it first)" >&2; exit 1; }
  install -m 0755 "$build/$name" "$root$prefix/bin/$name"
done
for unit in "$top"/systemd/*.service "$top"/systemd/*.socket "$top"/systemd/*.timer; do
  [ -f "$unit" ] || continue
  sed "s#/usr/bin/#$prefix/bin/#g; s#/usr/share/doc/#$prefix/share/doc/#g" "$unit" > "$root$libdir/systemd/system/$(basename "$unit")"
  chmod 0644 "$root$libdir/systemd/system/$(basename "$unit")"
done
# The session agent runs in each person's graphical session (a user unit).
for unit in "$top"/systemd/user/*.service; do
  [ -f "$unit" ] || continue
  sed "s#/usr/bin/#$prefix/bin/#g; s#/usr/share/doc/#$prefix/share/doc/#g" "$unit" > "$root$libdir/systemd/user/$(basename "$unit")"
  chmod 0644 "$root$libdir/systemd/user/$(basename "$unit")"
done
# The participant's application (docs/participant.md): the Python package with the wire client it
# imports, its app-grid entry, and the user unit that raises the authorization sheet. Both run
# Debian's python3 with PYTHONPATH at this prefix's copy: under /usr/local it is not on python3's
# path, and under /usr it goes before a copy a user installed with pip.
pydir=$prefix/lib/python3/dist-packages
install -d "$root$pydir" "$root$prefix/share/applications"
install -m 0644 "$top/clients/python/sensorkit_client.py" "$root$pydir/sensorkit_client.py"
( cd "$top/clients/python" && find sensorkit -name __pycache__ -prune -o -type f \( -name '*.py' -o -path '*/data/*' \) -print ) |
  sort | while read -r file; do
    install -D -m 0644 "$top/clients/python/$file" "$root$pydir/$file"
  done
participant=$top/clients/python/sensorkit/participant/data
sed "s#^\[Service\]\$#[Service]\nEnvironment=PYTHONPATH=$pydir#" "$participant/sensorkit-participant.service" \
  > "$root$libdir/systemd/user/sensorkit-participant.service"
sed "s#^Exec=python3 #Exec=env PYTHONPATH=$pydir /usr/bin/python3 #" "$participant/org.sensorkit.Participant.desktop" \
  > "$root$prefix/share/applications/org.sensorkit.Participant.desktop"
chmod 0644 "$root$libdir/systemd/user/sensorkit-participant.service" "$root$prefix/share/applications/org.sensorkit.Participant.desktop"
# bluetoothd's bus name for the sensorkit user ([ble] transport = bluez), and the drop-in that
# gives `transport = hci` its capabilities (docs/configuration.md, "Bluetooth permissions").
install -d "$root$prefix/share/dbus-1/system.d"
install -m 0644 "$top/packaging/dbus/sensorkitd.conf" "$root$prefix/share/dbus-1/system.d/sensorkitd.conf"
install -m 0644 "$top/packaging/systemd/hci-transport.conf" "$root$prefix/share/doc/sensorkitd/hci-transport.conf"
# GeoClue's permission for the session agent's desktop id (docs/visits.md, "GeoClue's permission").
install -d "$root$sysconf/geoclue/conf.d"
install -m 0644 "$top/packaging/geoclue/sensorkit-session.conf" "$root$sysconf/geoclue/conf.d/90-sensorkit-session.conf"
sed "s#/usr/libexec/#$prefix/libexec/#g" "$top/udev-rules/70-sensorkitd.rules" > "$root$libdir/udev/rules.d/70-sensorkitd.rules"
chmod 0644 "$root$libdir/udev/rules.d/70-sensorkitd.rules"
install -m 0755 "$top/udev-rules/iio-access" "$root$prefix/libexec/sensorkitd/iio-access"

# The default configuration: the ini blocks of docs/configuration.md, every line commented out, so
# the installed file and the documentation cannot drift and the daemon runs on its defaults.
conf="$root$sysconf/sensorkit/sensorkitd.conf"
{
  echo "# sensorkitd.conf — every setting, commented out: as installed, the daemon runs on its"
  echo "# defaults (SensorKit's 24 h hold, 7-day window). Lines starting '#' without a space are"
  echo "# settings with an example value: remove the '#' and edit the line to change one;"
  echo "# 'systemctl reload sensorkitd' applies [grant] sections, a restart the rest."
  echo "# Generated from $prefix/share/doc/sensorkitd/configuration.md, which explains every key."
  echo "#"
  awk '/^```ini$/ { inside = 1; next } /^```$/ { if (inside) print ""; inside = 0; next } inside { print ($0 == "" ? "" : "#" $0) }' \
    "$top/docs/configuration.md"
} > "$conf"
chmod 0644 "$conf"
install -m 0644 "$top"/packaging/example-app/README "$root$sysconf/sensorkit/apps.d/.example/README"
install -d "$root$sysconf/sensorkit/apps.d/.example/com.example.study"
install -m 0644 "$top"/packaging/example-app/com.example.study/* "$root$sysconf/sensorkit/apps.d/.example/com.example.study/"

# The man-page-like text: each shipped executable's --help, and the documents it points to.
for name in $executables; do
  "$build/$name" --help > "$root$prefix/share/doc/sensorkitd/$name.help.txt"
done
for doc in README.md docs/configuration.md docs/protocol.md docs/reliability.md docs/device-usage.md; do
  install -m 0644 "$top/$doc" "$root$prefix/share/doc/sensorkitd/$(basename "$doc")"
done
echo "install.sh: installed $(echo $executables) under ${destdir}${prefix}"
