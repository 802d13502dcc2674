#!/bin/sh
echo "it_badinput: not written yet" >&2
exit 1
