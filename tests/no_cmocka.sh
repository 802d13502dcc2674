#!/bin/sh
# Stands in for the unit tests when configure did not find cmocka.
echo "cmocka (libcmocka-dev) is not installed: unit tests cannot run" >&2
exit 1
