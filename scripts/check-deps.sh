#!/usr/bin/env bash
# Checks that this machine offers everything `make test` and `make demo` use, after
# install-deps.sh installed it: each tool the tests start, and each Python module the tests import,
# in the interpreter they run (Debian's /usr/bin/python3, or $SENSORKIT_PYTHON). A missing one
# fails here, at set-up, naming the package that brings it — never later as a skip deep in a suite.
set -uo pipefail
python=${SENSORKIT_PYTHON:-/usr/bin/python3}
missing=()

# path  package
tools=(
  /usr/bin/timeout coreutils            /usr/bin/setpriv util-linux          /usr/bin/prlimit util-linux
  /usr/sbin/runuser util-linux          /bin/mount mount                     /usr/bin/umockdev-run umockdev
  /usr/bin/umockdev-wrapper umockdev    /usr/bin/iio_readdev libiio-utils    /usr/sbin/iiod iiod
  /usr/bin/systemd-analyze systemd      /usr/bin/dpkg-deb dpkg               /usr/bin/objdump binutils
  /usr/bin/psql postgresql-client       /usr/lib/postgresql/15/bin/initdb postgresql
  /usr/bin/sqlite3 sqlite3              /usr/bin/rsvg-convert librsvg2-bin   /usr/bin/pngtopam netpbm
  /usr/bin/pkg-config pkg-config        "$python" python3
  /usr/bin/dbus-daemon dbus-daemon      /usr/bin/dbus-monitor dbus-bin     /usr/bin/notify-send libnotify-bin
  /usr/bin/sway sway                    /usr/bin/swaymsg sway                /usr/bin/foot foot
  /usr/bin/wayland-scanner libwayland-bin
  /usr/bin/xvfb-run xvfb                /usr/bin/dbus-run-session dbus-bin   /usr/libexec/at-spi-bus-launcher at-spi2-core
  /usr/bin/xwdtopnm netpbm
)
for ((i = 0; i < ${#tools[@]}; i += 2)); do
  [ -x "${tools[i]}" ] || missing+=("${tools[i]} (Debian package ${tools[i + 1]})")
done

# module  package — what the Python tests and the umockdev controllers import.
modules=(numpy python3-numpy pandas python3-pandas gi python3-gi dbus python3-dbus dbusmock python3-dbusmock)
for ((i = 0; i < ${#modules[@]}; i += 2)); do
  "$python" -c "import ${modules[i]}" 2>/dev/null || missing+=("Python module ${modules[i]} in $python (Debian package ${modules[i + 1]})")
done
for gir in "Gtk 4.0 gir1.2-gtk-4.0" "Adw 1 gir1.2-adw-1" "Atspi 2.0 gir1.2-atspi-2.0"; do
  set -- $gir
  "$python" -c "import gi; gi.require_version('$1', '$2'); from gi.repository import $1" 2>/dev/null ||
    missing+=("$1 $2 through GObject introspection in $python (Debian package $3)")
done
"$python" -c "import gi, cairo; gi.require_foreign('cairo')" 2>/dev/null ||
  missing+=("cairo for PyGObject in $python (Debian package python3-gi-cairo)")
"$python" -c "import gi; gi.require_version('UMockdev', '1.0'); from gi.repository import UMockdev" 2>/dev/null ||
  missing+=("UMockdev through GObject introspection in $python (Debian package gir1.2-umockdev-1.0)")

lsl_python=${SENSORKIT_LSL_VENV:-/opt/sensorkit-lsl-venv}/bin/python
"$lsl_python" -c "import pylsl" 2>/dev/null ||
  missing+=("pylsl in $lsl_python (the LSL venv install-deps.sh builds from PyPI)")

if [ ${#missing[@]} -gt 0 ]; then
  echo "check-deps: this machine lacks what the tests need:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  echo "check-deps: scripts/install-deps.sh installs all of it (run it as root or with sudo)" >&2
  exit 1
fi
echo "check-deps: every tool and Python module the tests use is present ($python)"
