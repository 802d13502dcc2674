#!/bin/sh
# it_install.sh - what `make install` gives a user: the program, a man page
# per command that documents every option its --help names (and no option
# it does not take), bash completion of commands, options, profile names and
# fixed values, and the docs. Needs no root: installs into a DESTDIR.
FSP_ROOT_LATER=1
. "${TESTS_SRCDIR:-$(dirname "$0")}/lib.sh"

top=$(dirname "$TESTS_BUILDDIR")
D=$T/dest
if ! make -s -C "$top" install DESTDIR="$D" prefix=/usr >"$T/install.log" 2>&1; then
	not_ok "make install DESTDIR=... fails"
	sed 's/^/# /' "$T/install.log"
	fsp_done
	exit $?
fi
ok "make install DESTDIR=... succeeds"
check "the program is installed and runs" test -x "$D/usr/bin/fsprism"
check "installed program prints its version" sh -c "'$D/usr/bin/fsprism' --version | grep -q '^fsprism '"
man1=$D/usr/share/man/man1

# every command the program lists has a page, and each page renders cleanly
cmds=$("$FSPRISM" --help | sed -n 's/^  \([a-z][a-z]*\)[ ,].*/\1/p' | grep -v -x -e help -e version)
check "the top-level page fsprism(1) is installed" test -f "$man1/fsprism.1"
for c in $cmds; do
	page=$man1/fsprism-$c.1
	if [ ! -f "$page" ]; then
		not_ok "fsprism-$c(1) is installed"
		continue
	fi
	ok "fsprism-$c(1) is installed"
	warn=$(LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l "$page" 2>&1 >/dev/null)
	expect_eq "fsprism-$c(1) renders without warnings" "" "$warn"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES "EXIT STATUS" "SEE ALSO"; do
		grep -q "^\.SH \"*$s" "$page" || not_ok "fsprism-$c(1) has no $s section"
	done
	# the options of --help (its usage lines and the lines that start with an
	# option) and of the page (SYNOPSIS, OPTIONS, PARAMETERS) are one set
	"$FSPRISM" "$c" --help | awk '/^usage:/ { u = 1 } /^$/ { u = 0 } u || /^ *-/' |
		grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$T/help.$c"
	LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$page" 2>/dev/null | sed 's/\xe2\x80\x90/-/g' |
		awk '/^[A-Z][A-Z ]*$/ { keep = ($0 == "SYNOPSIS" || $0 == "OPTIONS" || $0 == "PARAMETERS") } keep' |
		grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$T/man.$c"
	missing=$(comm -23 "$T/help.$c" "$T/man.$c" | tr '\n' ' ')
	extra=$(comm -13 "$T/help.$c" "$T/man.$c" | grep -v -x -e --help -e --version | tr '\n' ' ')
	expect_eq "fsprism-$c(1) documents every option of '$c --help'" "" "$missing"
	expect_eq "fsprism-$c(1) documents no option '$c --help' does not name" "" "$extra"
done
n_pages=$(ls "$man1" | wc -l)
n_cmds=$(echo $cmds | wc -w)
expect_eq "one page per command and the top-level one" "$((n_cmds + 1))" "$n_pages"
check "man finds the installed page" sh -c "MANPATH='$D/usr/share/man' man -w fsprism-run >/dev/null"

# bash completion, driven the way bash drives it
comp=$D/usr/share/bash-completion/completions/fsprism
check "bash completion is installed" test -f "$comp"
complete_words() { # complete_words WORD... -> what <Tab> after the last word offers
	PATH=$(dirname "$FSPRISM"):$PATH bash -c '
		. "$0"
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
		_fsprism; echo "${COMPREPLY[*]}"' "$comp" "$@"
}
expect_eq "completes a command" "compare" "$(complete_words fsprism comp)"
expect_eq "completes a command's option" "--cow" "$(complete_words fsprism compare --co)"
expect_eq "completes --cow's values" "off shared always" "$(complete_words fsprism compare --cow '')"
expect_eq "completes --journal=VALUE" "--journal=ordered" "$(complete_words fsprism mount --journal=or)"
expect_eq "completes profile names for run" "mixed-random mixed-seq" "$(complete_words fsprism run mixed)"
expect_eq "completes --profile's names" "sustained-randread sustained-randwrite" "$(complete_words fsprism compare --profile sustained-rand)"
expect_eq "completes stats --format" "table csv json" "$(complete_words fsprism stats db --format '')"
expect_eq "completes help's command" "mount" "$(complete_words fsprism help mou)"

# the docs
check "README is installed" test -f "$D/usr/share/doc/fsprism/README.md"
check "the reference pages are installed" test -f "$D/usr/share/doc/fsprism/architecture.md"
check "the results pages are installed" sh -c "ls '$D/usr/share/doc/fsprism/results/'*.md >/dev/null"

# and uninstall takes it all away again
make -s -C "$top" uninstall DESTDIR="$D" prefix=/usr >"$T/uninstall.log" 2>&1
left=$(find "$D" -type f | sed "s|^$D||" | tr '\n' ' ')
expect_eq "make uninstall leaves no file behind" "" "$left"
fsp_done
