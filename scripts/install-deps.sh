#!/usr/bin/env bash
# Installs the Debian packages sensorkitd builds, tests and demos with. Idempotent: does nothing
# when everything is present. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  pkg-config
  libsqlite3-dev libzstd-dev libudev-dev libiio-dev libbluetooth-dev   # linked C libraries
  umockdev libumockdev-dev gir1.2-umockdev-1.0 python3-gi            # fake IIO hardware for tests (testbed.py drives umockdev through GObject introspection)
  libiio-utils iiod                                                   # iio_readdev anchor, remote contexts
  util-linux procps                                                   # setpriv/runuser for cross-user tests
  systemd dpkg-dev passwd binutils                                    # systemd-analyze verify, systemctl --root, make deb (objdump)
  libpq-dev postgresql                                                # sensorkit-export's libpq; a scratch server in its tests and bench
  python3-numpy python3-pandas                                        # the Python package's numpy/pandas extras, tested by make test
  librsvg2-bin netpbm                                                 # sensorkitctl report's SVG rendered to pixels in its test (rsvg-convert, pngtopam)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all Debian packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
