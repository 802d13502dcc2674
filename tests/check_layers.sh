#!/bin/sh
# check_layers.sh - the dependency rule of docs/architecture.md, checked on the
# source tree: every include names its folder, a layer includes only the
# layers it may, and only the results database (src/db/) calls sqlite3 or
# sees the inside of its handle (src/db/handle.h).
# Needs no root and no build.
#
# KNOWN lists the crossings the code still has, each with what removes it.
# A crossing not in KNOWN fails; so does a KNOWN entry that no longer occurs,
# so that the list only ever shrinks.
set -u
top=$(cd "${TESTS_SRCDIR:-$(dirname "$0")}/.." && pwd)
cd "$top" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $*"; }

# layer -> the layers it may include (besides itself)
allowed() {
	case $1 in
	src/base) echo "" ;;
	src/sys) echo "src/base fs/emu" ;;
	src/db) echo "src/base src/sys" ;;
	src/trace) echo "src/base src/sys src/db" ;;
	fs/emu) echo "src/base" ;;
	fs/model) echo "src/base" ;;
	fs/fuse) echo "src/base src/sys src/db src/trace fs/emu fs/model" ;;
	bench/engine) echo "src/base src/sys src/db src/trace" ;;
	src/prism) echo "src/base src/sys src/db" ;;
	src/cli) echo "src/base src/sys src/db src/trace src/prism fs/emu fs/model fs/fuse bench/engine" ;;
	*) echo "?" ;;
	esac
}

KNOWN="
"

found=$(mktemp)
trap 'rm -f "$found"' EXIT
layer_of() { # path -> its layer folder, or nothing
	case $1 in
	src/base/* | src/sys/* | src/db/* | src/trace/* | src/prism/* | src/cli/* | fs/emu/* | fs/model/* | fs/fuse/* | bench/engine/*)
		echo "${1%/*}" ;;
	esac
}

files=$(find src fs bench -name '*.[ch]' ! -path bench/microbench.c | sort)
nfiles=0
for f in $files; do
	nfiles=$((nfiles + 1))
	from=$(layer_of "$f")
	if [ -z "$from" ]; then
		not_ok "$f is in no layer folder (docs/architecture.md lists them)"
		continue
	fi
	may=$(allowed "$from")
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		[ "$inc" = config.h ] && continue
		case $inc in
		*/*) ;;
		*)
			not_ok "$f includes \"$inc\" without its folder"
			continue ;;
		esac
		# generated in the build tree from a source beside it (Makefile.am)
		case $inc in
		*.skel.h) [ -f "${inc%.skel.h}.bpf.c" ] && continue ;;
		esac
		if [ ! -f "$inc" ]; then
			not_ok "$f includes \"$inc\", which is not in the tree"
			continue
		fi
		to=$(layer_of "$inc")
		if [ "$inc" = src/db/handle.h ] && [ "$from" != src/db ]; then
			echo "$f -> $inc" >>"$found"
			continue
		fi
		[ "$to" = "$from" ] && continue
		case " $may " in
		*" $to "*) ;;
		*) echo "$f -> $inc" >>"$found" ;;
		esac
	done
	if [ "$from" != src/db ] && grep -q 'sqlite3_[a-z_]*[[:space:]]*(' "$f"; then
		echo "$f calls sqlite3" >>"$found"
	fi
done
[ "$nfiles" -gt 20 ] && ok "read $nfiles source files" || not_ok "found only $nfiles source files under $top"

# every crossing found must be known
while IFS= read -r c; do
	if printf '%s\n' "$KNOWN" | grep -qF "$c|"; then
		ok "known crossing: $c"
	else
		not_ok "forbidden: $c (docs/architecture.md: the layers and what each may include)"
	fi
done <"$found"
# every known crossing must still be there
printf '%s\n' "$KNOWN" | while IFS='|' read -r c why; do
	[ -n "$c" ] || continue
	grep -qxF "$c" "$found" || echo "$c"
done >"$found.gone"
while IFS= read -r c; do
	not_ok "KNOWN lists '$c', which the code no longer has: drop it from tests/check_layers.sh"
done <"$found.gone"
rm -f "$found.gone"

echo "1..$((pass + fail))"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
