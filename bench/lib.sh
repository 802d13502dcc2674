# bench/lib.sh - what the benchmark scripts share (sourced, not run; POSIX sh,
# for bench-engine.sh runs under sh): their options, their checks before they
# start, and the RAM-backed ext4 of the FUSE-mount ones.
# shellcheck shell=sh

# bench_options NAME SPEC ARGS...: reads the options at the front of ARGS as
# SPEC says; the script then drops them with `shift "$BENCH_SHIFT"`. SPEC is
# a list of words:
#   --opt=VAR        --opt takes a value, which goes into VAR
#   --opt=VAR=VALUE  --opt takes none; VAR is set to VALUE
#   --               `--` ends the options (read); what follows is the script's
#   WORD             the first argument that is not an option ends them (unread)
#   ANY              the first argument not in SPEC ends them, option or not
# Every script also takes -h and --help: its opening comment on stdout, exit
# 0. Refused, with one line and exit 2: an option that takes a value given
# none ("NAME: --opt needs a value") and, unless WORD or ANY lets it end the
# options, an argument not in SPEC ("NAME: unknown option 'ARG' (--help lists
# them)").
bench_options() {
	_bo_name=$1 _bo_spec=$2
	shift 2
	_bo_dashes='' _bo_word='' _bo_any=''
	for _bo_e in $_bo_spec; do
		case $_bo_e in
		--) _bo_dashes=1 ;;
		WORD) _bo_word=1 ;;
		ANY) _bo_any=1 ;;
		esac
	done
	BENCH_SHIFT=0
	while [ $# -gt 0 ]; do
		case $1 in -h | --help) bench_usage ;; esac
		_bo_to=
		for _bo_e in $_bo_spec; do
			case $_bo_e in *=*)
				[ "${_bo_e%%=*}" != "$1" ] || { _bo_to=${_bo_e#*=}; break; } ;;
			esac
		done
		case $_bo_to in
		'')
			if [ "$1" = -- ] && [ -n "$_bo_dashes" ]; then
				BENCH_SHIFT=$((BENCH_SHIFT + 1))
				return 0
			fi
			[ -z "$_bo_any" ] || return 0
			case $1 in -*) ;; *) [ -z "$_bo_word" ] || return 0 ;; esac
			echo "$_bo_name: unknown option '$1' (--help lists them)" >&2
			exit 2 ;;
		*=*) eval "${_bo_to%%=*}=\${_bo_to#*=}"
			_bo_n=1 ;;
		*) [ $# -ge 2 ] || { echo "$_bo_name: $1 needs a value" >&2; exit 2; }
			eval "$_bo_to=\$2"
			_bo_n=2 ;;
		esac
		shift "$_bo_n"
		BENCH_SHIFT=$((BENCH_SHIFT + _bo_n))
	done
}

# bench_usage: the running script's opening comment (its lines after the
# first, up to the first that is not a comment), without the "# ", and exit 0.
bench_usage() {
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 0
}

# bench_need NAME [TOOL...]: what a script checks before it starts, each
# failure one line and exit 1: that it runs as root ("NAME: needs root"), that
# FSPRISM (default ./build/fsprism, made absolute) is executable, and that
# each TOOL is installed.
bench_need() {
	_bn_name=$1
	shift
	[ "$(id -u)" = 0 ] || { echo "$_bn_name: needs root" >&2; exit 1; }
	FSPRISM=${FSPRISM:-$(pwd)/build/fsprism}
	[ -x "$FSPRISM" ] || { echo "$_bn_name: no fsprism binary at $FSPRISM" >&2; exit 1; }
	for _bn_tool; do
		command -v "$_bn_tool" >/dev/null || { echo "$_bn_name: $_bn_tool is not installed" >&2; exit 1; }
	done
}

# bench_ram_ext4 NAME CLEANUP: a temp dir $T (/tmp/fsprism-NAME.*), ext4 on a
# loop device ($LOOP) over a 1400 MiB file in /dev/shm ($IMG), so that no
# disk's stalls enter the numbers, mounted at $T/ext4, with $T/ext4/data/f a
# 1 GiB file of random data, fully written (not sparse). CLEANUP is the
# script's own clean-up, run on every exit; it undoes the script's mounts and
# then calls bench_ram_ext4_cleanup.
bench_ram_ext4() {
	T=$(mktemp -d "/tmp/fsprism-$1.XXXXXX")
	IMG=$(mktemp "/dev/shm/fsprism-$1.XXXXXX")
	LOOP=
	# shellcheck disable=SC2064 # the clean-up's name, now
	trap "$2" EXIT
	trap 'exit 130' INT TERM
	truncate -s 1400M "$IMG"
	LOOP=$(losetup --find --show "$IMG")
	mkfs.ext4 -q "$LOOP"
	mkdir "$T/ext4"
	mount "$LOOP" "$T/ext4"
	mkdir "$T/ext4/data"
	dd if=/dev/urandom of="$T/ext4/data/f" bs=1M count=1024 status=none conv=fsync
}

# Unmounts the ext4, detaches the loop device, removes the image and $T.
bench_ram_ext4_cleanup() {
	mountpoint -q "$T/ext4" && umount "$T/ext4"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	rm -f "$IMG"
	rm -rf "$T"
}
