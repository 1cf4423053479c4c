#!/usr/bin/env bash
# Installs the Debian packages sensorkitd builds, tests and demos with. Idempotent: does nothing
# when everything is present. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  pkg-config
  libsqlite3-dev libzstd-dev libudev-dev libiio-dev libbluetooth-dev   # linked C libraries
  libevdev-dev                                                        # keyboards counted through libevdev (KeyboardBridge)
  libsystemd-dev dbus-daemon dbus-bin python3-dbus python3-dbusmock  # sd-bus (SystemBus); a private broker, dbus-monitor, a Python service and dbusmock's templates in its tests
  libnotify-bin                                                       # notify-send: a real notification client in the device-usage tests
  umockdev libumockdev-dev gir1.2-umockdev-1.0 python3-gi            # fake IIO hardware for tests (testbed.py drives umockdev through GObject introspection)
  libiio-utils iiod                                                   # iio_readdev anchor, remote contexts
  util-linux procps                                                   # setpriv/runuser for cross-user tests
  systemd dpkg-dev passwd binutils                                    # systemd-analyze verify, systemctl --root, make deb (objdump)
  libpq-dev postgresql                                                # sensorkit-export's libpq; a scratch server in its tests and bench
  python3 python3-numpy python3-pandas                                # Debian's interpreter, which every test runs, and the package's numpy/pandas extras
  python3-venv python3-pip                                            # the LSL venv below (pylsl is not packaged by Debian)
  sqlite3                                                             # a WAL checkpoint from another process in the reader-limit tests
  libwayland-dev libwayland-bin                                       # libwayland-client (WaylandBridge); wayland-scanner checks the committed wlr protocol glue
  sway foot fonts-dejavu-core                                         # a real headless compositor and a real client (with a font) for the watcher's tests
  librsvg2-bin netpbm                                                 # sensorkitctl report's SVG rendered to pixels in its test (rsvg-convert, pngtopam)
  gir1.2-gtk-4.0 gir1.2-adw-1 python3-gi-cairo                       # the participant's GTK 4 + libadwaita application (sensorkit.participant)
  xvfb at-spi2-core gir1.2-atspi-2.0 python3-pyatspi                  # its tests: a headless X server, the accessibility bus, AT-SPI from Python
)

# One dpkg-query for all of them (it fails when one is unknown; that one is simply not listed).
installed=" $(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null | awk '$2 == "ii" { printf "%s ", $1 }' || true) "
missing=()
for p in "${packages[@]}"; do
  [[ "$installed" == *" $p "* ]] || missing+=("$p")
done
here=$(dirname "$0")

# The LSL outlet (python -m sensorkit.lsl, docs/live.md) needs pylsl, which Debian does not
# package: PyPI's wheel carries liblsl. A venv over Debian's interpreter (its python3-* packages
# stay visible) holds it; its tests run that venv's python and fail without it.
lsl_venv=${SENSORKIT_LSL_VENV:-/opt/sensorkit-lsl-venv}
lsl_venv() {
  if "$lsl_venv/bin/python" -c "import pylsl" 2>/dev/null; then return 0; fi
  echo "install-deps: building the LSL venv in $lsl_venv (pylsl from PyPI)"
  /usr/bin/python3 -m venv --system-site-packages "$lsl_venv" &&
    "$lsl_venv/bin/pip" install -q --disable-pip-version-check "pylsl==1.18.6"
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all Debian packages present"
  lsl_venv
  exec "$here/check-deps.sh"
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# apt's output goes to a log, shown only when a step fails.
log=$(mktemp /tmp/sensorkit-install-deps-XXXXXX.log)
if $sudo apt-get update -q >"$log" 2>&1 &&
   $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null >>"$log" 2>&1; then
  rm -f "$log"
  echo "install-deps: done"
  lsl_venv
  exec "$here/check-deps.sh"
else
  status=$?
  cat "$log" >&2
  echo "install-deps: apt-get failed (exit $status); its output is above and in $log" >&2
  exit "$status"
fi
