#!/bin/sh
echo "it_fio: not written yet" >&2
exit 1
