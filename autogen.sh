#!/bin/sh
# Regenerate the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --force --install --warnings=all
# The TAP driver for the shell integration tests ships with automake but is not installed by
# autoreconf.
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/tap-driver.sh
