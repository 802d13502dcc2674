#!/bin/sh
# it_hosts.sh - fsprism run --hosts: a profile run by fio on many hosts
# through fio's client/server. Each host is a `fio --server` in a network
# namespace this script makes (its own loopback, a veth pair to the root
# namespace, both ends in a private /30 made here; traffic goes only to
# those addresses), each with its own loop device as its target. Checks: a
# two- and a three-host run (the fleet's merged histograms are the union of
# the hosts', its percentiles and straggler those of that union, each host
# drove its own device), a host killed mid-run (named, the others kept),
# and the probe before anything runs (nothing listening, a listener that is
# not fio, a fio server of another protocol version: one line, no database).
. "$TESTS_SRCDIR/lib.sh"

command -v fio >/dev/null || fsp_skip "fio not installed"
command -v ip >/dev/null || fsp_skip "ip (iproute2) not installed"
command -v sqlite3 >/dev/null || fsp_skip "sqlite3 not installed"
ip netns list >/dev/null 2>&1 || fsp_skip "no network namespaces here"

# Names and a 10.x.y.0/24 of this run's own: several passes may share the machine.
ID=$$
NET=10.$((100 + ID % 100)).$(((ID / 100) % 256))
hosts_made=""
pids_extra=""

hosts_cleanup() {
	for pid in $pids_extra; do kill "$pid" 2>/dev/null; done
	for ns in $hosts_made; do
		# every process in the namespace is a server this script started
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null # its veth end goes, and with it the pair
	done
	fsp_cleanup
}
trap hosts_cleanup EXIT

# in_ns NS CMD...: CMD in NS's network namespace only. Not `ip netns exec`:
# it also makes a new mount namespace, and a server left in it holds a copy
# of every mount there was (this machine's mounts are private), so a FUSE
# mount of another test that is unmounted meanwhile never ends its daemon.
in_ns() {
	_ns=$1; shift
	nsenter --net="/run/netns/$_ns" -- "$@"
}

# host_new I: namespace fsph-ID-I with 10.x.y.(4I+2), the root end 10.x.y.(4I+1);
# the host's address in $addr (not a subshell: hosts_made must see the namespace).
host_new() {
	ns=fsph-$ID-$1 a=fh${ID}a$1 b=fh${ID}b$1
	ip netns add "$ns" || return 1
	hosts_made="$hosts_made $ns"
	ip link add "$a" type veth peer name "$b" &&
		ip link set "$b" netns "$ns" &&
		ip addr add "$NET.$((4 * $1 + 1))/30" dev "$a" &&
		ip link set "$a" up &&
		ip -n "$ns" addr add "$NET.$((4 * $1 + 2))/30" dev "$b" &&
		ip -n "$ns" link set "$b" up &&
		ip -n "$ns" link set lo up || return 1
	addr=$NET.$((4 * $1 + 2))
}

# listening NS PORT: wait (5 s at most) until something listens on PORT in NS
listening() {
	for _ in $(seq 50); do
		[ -n "$(in_ns "$1" ss -Hltn "sport = :$2" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

# server_start I: fio --server in host I's namespace, on its address
server_start() {
	in_ns "fsph-$ID-$1" fio --server="ip:$NET.$((4 * $1 + 2)),8765" \
		--daemonize="$T/server$1.pid" >/dev/null 2>&1 9>&- &&
		listening "fsph-$ID-$1" 8765
}

loop_reads() { awk '{print $1}' "/sys/block/$(basename "$1")/stat"; }

mkdir "$T/tmp"
TMPDIR=$T/tmp
export TMPDIR

for i in 1 2 3; do
	host_new $i || { not_ok "host $i: namespace and veth"; fsp_done; exit 1; }
	eval "A$i=$addr"
	server_start $i || { not_ok "host $i: fio --server listens"; fsp_done; exit 1; }
	dev=$(fsp_loop_new 64M) || { not_ok "host $i: loop device"; fsp_done; exit 1; }
	fsp_track_loop "$dev"
	eval "L$i=$dev"
done
ok "three fio servers, each in its own namespace"

# The fleet's merged histograms, checked against the hosts' (run PARENT in DB).
check_fleet() { # NAME DB PARENT NHOSTS
	n=$(sqlite3 "$2" "select count(*) from runs where parent=$3 and kind='run'")
	expect_eq "$1: a run per host under the parent" "$4" "$n"
	# every bucket of the parent's histograms is the sum of the hosts'
	diff=$(sqlite3 "$2" "
		with kids as (select step, op, lo_ns, sum(count) c from hist_bins
			where run in (select id from runs where parent=$3) and layer=0
			group by step, op, lo_ns),
		fleet as (select step, op, lo_ns, count c from hist_bins where run=$3 and layer=0)
		select count(*) from kids k left join fleet f using (step, op, lo_ns)
			where f.c is null or f.c != k.c
		union all
		select count(*) from fleet f left join kids k using (step, op, lo_ns)
			where k.c is null")
	expect_eq "$1: the fleet's buckets are the union of the hosts'" "0
0" "$diff"
	kids=$(sqlite3 "$2" "select coalesce(sum(count),0) from hist where layer=0 and run in (select id from runs where parent=$3)")
	fleet=$(sqlite3 "$2" "select value from run_attrs where run=$3 and key='fleet.ios'")
	expect_eq "$1: fleet.ios is every host's IOs" "$kids" "$fleet"
	[ "$kids" -gt 0 ] || not_ok "$1: no IO measured"
	# the percentiles of the union (nearest rank, the bucket's middle
	# clamped to min and max, as src/base/hist.c reads them), computed here
	# from the hosts' bins alone, and the straggler: the worst host p99
	sqlite3 -separator ' ' "$2" "select r.label, b.lo_ns, b.hi_ns, b.count from hist_bins b
		join runs r on r.id=b.run where r.parent=$3 and b.layer=0
		and coalesce((select value from run_attrs where run=r.id and key='host.status'),'')='ok'" >"$T/bins"
	sqlite3 -separator ' ' "$2" "select r.label, h.min_ns, h.max_ns from hist h join runs r on r.id=h.run
		where r.parent=$3 and h.layer=0 and h.count>0" >"$T/minmax"
	python3 - "$T/bins" "$T/minmax" >"$T/expect" <<'PY'
import sys, math, collections
bins = collections.defaultdict(lambda: collections.Counter())
for l in open(sys.argv[1]):
    host, lo, hi, c = l.split(); bins[host][(int(lo), int(hi))] += int(c)
mm = {}
for l in open(sys.argv[2]):
    host, mn, mx = l.split(); a, b = mm.get(host, (1 << 63, 0))
    mm[host] = (min(a, int(mn)), max(b, int(mx)))
def q(counter, mn, mx, p):
    n = sum(counter.values()); rank = max(1, math.ceil(p * n - 1e-9))
    if rank == 1: return mn
    if rank == n: return mx
    seen = 0
    for (lo, hi) in sorted(counter):
        seen += counter[(lo, hi)]
        if seen >= rank: return min(max(lo + (hi - lo) // 2, mn), mx)
union = collections.Counter()
for h in bins: union.update(bins[h])
mn = min(mm[h][0] for h in bins); mx = max(mm[h][1] for h in bins)
print(q(union, mn, mx, 0.5), q(union, mn, mx, 0.99), q(union, mn, mx, 0.999))
worst = max(bins, key=lambda h: (q(bins[h], *mm[h], 0.99), sum(k[0] * c for k, c in bins[h].items())))
print(worst)
PY
	got=$(for k in p50 p99 p999; do
		sqlite3 "$2" "select value from run_attrs where run=$3 and key='fleet.${k}_ns'"
	done | tr '\n' ' ')
	got=${got% }
	want=$(head -1 "$T/expect" | awk '{print $1, $2, $3}')
	expect_eq "$1: fleet p50, p99, p99.9 are the union's" "$want" "$got"
	strag=$(sqlite3 "$2" "select value from run_attrs where run=$3 and key='hosts.straggler'")
	expect_eq "$1: the straggler is the host with the worst p99" "$(sed -n 2p "$T/expect")" "$strag"
	grep -q "^straggler: $strag " "$T/$1.out" || not_ok "$1: the straggler is printed"
}

# ---- bad host files and the probe: one line, nothing ran, no database ----

printf 'a\n%s:70000\n' "$A1" >"$T/h.bad"
"$FSPRISM" run sustained-randread /dev/loop0 --hosts "$T/h.bad" --db "$T/bad.db" \
	--span=32M >"$T/bad.out" 2>"$T/bad.err"
expect_eq "bad host file: exit 2" 2 $?
expect_eq "bad host file: the line" "fsprism run: --hosts: $T/h.bad:2: '70000' is not a port (1..65535)" "$(cat "$T/bad.err")"

printf '%s %s\n' "$A1" "$L1" >"$T/h.one"
# usage_error NAME WHAT ARGS...: exit 2, one line saying WHAT, no database
usage_error() {
	ue_name=$1 ue_what=$2
	shift 2
	"$FSPRISM" run "$@" --hosts "$T/h.one" --db "$T/bad.db" >"$T/$ue_name.out" 2>"$T/$ue_name.err"
	expect_eq "$ue_name: exit 2" 2 $?
	expect_eq "$ue_name: one line" 1 "$(wc -l <"$T/$ue_name.err")"
	grep -q -- "$ue_what" "$T/$ue_name.err" || not_ok "$ue_name: says '$ue_what': $(cat "$T/$ue_name.err")"
	[ ! -e "$T/bad.db" ] || not_ok "$ue_name: a database was made"
}
usage_error record "--record does not go with --hosts" sustained-randread "$L1" --record=full
usage_error relative "TARGET 'loop0' must be an absolute path" sustained-randread loop0
usage_error writes "give --destroy-data to write them" burst-randwrite "$L1"
usage_error fio-cannot "fsprism run: burst" burst-randread "$L1" --time=0

# probe NAME HOSTFILE WHAT: one line saying WHAT, exit 1, no database, nothing in TMPDIR
probe_fails() {
	t0=$(date +%s)
	"$FSPRISM" run sustained-randread /dev/loop0 --hosts "$2" --db "$T/bad.db" \
		--span=32M >"$T/$1.out" 2>"$T/$1.err"
	rc=$?
	expect_eq "$1: exit 1" 1 "$rc"
	expect_eq "$1: one line" 1 "$(wc -l <"$T/$1.err")"
	grep -q "$3" "$T/$1.err" || not_ok "$1: says '$3': $(cat "$T/$1.err")"
	grep -q "; nothing ran$" "$T/$1.err" || not_ok "$1: says nothing ran"
	[ ! -e "$T/bad.db" ] || not_ok "$1: a database was made"
	[ -z "$(ls -A "$T/tmp")" ] || not_ok "$1: left in TMPDIR: $(ls -A "$T/tmp")"
	[ $(($(date +%s) - t0)) -lt 15 ] || not_ok "$1: took $(($(date +%s) - t0)) s"
	ok "$1: refused before anything ran"
}

printf '%s\n%s:8799 %s\n' "$A1" "$A2" "$L2" >"$T/h.none"
probe_fails nothing-listens "$T/h.none" "host $A2:8799 ($T/h.none:2): no fio server answers: fio: connect: Connection refused"

# a listener that is not fio, in host 3's namespace
in_ns "fsph-$ID-3" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 8780)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n" * 4); c.close()
' "$A3" >/dev/null 2>&1 9>&- &
pids_extra="$pids_extra $!"
listening "fsph-$ID-3" 8780 || not_ok "the listener that is not fio listens"
printf '%s:8780\n' "$A3" >"$T/h.http"
probe_fails not-fio "$T/h.http" "host $A3:8780 ($T/h.http:1): not a fio server of this fio's version"

# a fio server of another protocol version
in_ns "fsph-$ID-3" python3 "$TESTS_SRCDIR/fake_fio_server.py" "$A3" 8781 >/dev/null 2>&1 9>&- &
pids_extra="$pids_extra $!"
listening "fsph-$ID-3" 8781 || not_ok "the fake fio server listens"
printf '%s\n%s:8781\n' "$A1" "$A3" >"$T/h.version"
probe_fails version "$T/h.version" "host $A3:8781 ($T/h.version:2): its fio server is not of this fio's version (fio-[0-9.]*): fio: client/server version mismatch (99 != [0-9]*)"

# ---- two hosts: the command's TARGET for one, its own for the other ----

DB=$T/hosts.db
printf '# two hosts\n%s\n%s:8765 %s\n' "$A1" "$A2" "$L2" >"$T/h.two"
r1=$(loop_reads "$L1") r2=$(loop_reads "$L2") r3=$(loop_reads "$L3")
"$FSPRISM" run sustained-randread "$L1" --hosts "$T/h.two" --db "$DB" --qd=1,4 --time=1s \
	--span=32M >"$T/two.out" 2>"$T/two.err"
expect_eq "two hosts: exit 0" 0 $?
[ -s "$T/two.err" ] && grep -v '^running ' "$T/two.err" | sed 's/^/# /'
P=$(sqlite3 "$DB" "select max(id) from runs where kind='hosts'")
check_fleet two "$DB" "$P" 2
steps=$(sqlite3 "$DB" "select group_concat(n) from (select count(*) n from steps s join runs r on r.id=s.run where r.parent=$P group by r.id)")
expect_eq "two hosts: both steps of each host" "2,2" "$steps"
[ "$(loop_reads "$L1")" -gt "$r1" ] || not_ok "two hosts: host 1 read its device (the command's TARGET)"
[ "$(loop_reads "$L2")" -gt "$r2" ] || not_ok "two hosts: host 2 read its own device"
expect_eq "two hosts: host 3 was not asked" "$r3" "$(loop_reads "$L3")"
host_attr() { # PARENT HOST KEY
	sqlite3 "$DB" "select value from run_attrs a join runs r on r.id=a.run where r.parent=$1 and r.label='$2' and key='$3'"
}
expect_eq "two hosts: each host's target stored" "$L1 $L2" "$(host_attr "$P" "$A1:8765" host.target) $(host_attr "$P" "$A2:8765" host.target)"
# stats of the parent: the hosts side by side and the fleet (src/cli/stats_hosts.c)
"$FSPRISM" stats "$DB" --run "$P" --format csv >"$T/two.stats" 2>&1
expect_eq "two hosts: stats of the parent exits 0" 0 $?
grep -q "$A1:8765" "$T/two.stats" && grep -q "$A2:8765" "$T/two.stats" ||
	{ not_ok "two hosts: stats names both hosts"; sed "s/^/# /" "$T/two.stats"; }
[ -z "$(ls -A "$T/tmp")" ] || not_ok "two hosts: left in TMPDIR: $(ls -A "$T/tmp")"

# ---- three hosts, each its own target ----

printf '%s %s\n%s %s\n%s %s\n' "$A1" "$L1" "$A2" "$L2" "$A3" "$L3" >"$T/h.three"
r3=$(loop_reads "$L3")
"$FSPRISM" run burst-randread /dev/nonexistent --hosts "$T/h.three" --db "$DB" --time=1s \
	--burst=0 --span=32M >"$T/three.out" 2>"$T/three.err"
expect_eq "three hosts: exit 0" 0 $?
P=$(sqlite3 "$DB" "select max(id) from runs where kind='hosts'")
check_fleet three "$DB" "$P" 3
[ "$(loop_reads "$L3")" -gt "$r3" ] || not_ok "three hosts: host 3 read its own device"
expect_eq "three hosts: none failed" 3 "$(sqlite3 "$DB" "select value from run_attrs where run=$P and key='hosts.ok'")"

# ---- a host killed mid-run: named, the others kept ----

"$FSPRISM" run sustained-randread "$L1" --hosts "$T/h.three" --db "$DB" --qd=1 --time=4s \
	--span=32M >"$T/kill.out" 2>"$T/kill.err" &
run_pid=$!
sleep 2.5
for pid in $(ip netns pids "fsph-$ID-2"); do kill -9 "$pid"; done
wait $run_pid
expect_eq "host killed: exit 1" 1 $?
P=$(sqlite3 "$DB" "select max(id) from runs where kind='hosts'")
grep -q "^failed: $A2:8765: .*returned 0 of 1 steps" "$T/kill.out" ||
	not_ok "host killed: named as failed: $(cat "$T/kill.out" "$T/kill.err")"
expect_eq "host killed: the parent names it" "$A2:8765" \
	"$(sqlite3 "$DB" "select value from run_attrs where run=$P and key='hosts.failed'")"
expect_eq "host killed: its run says failed" "failed" \
	"$(sqlite3 "$DB" "select value from run_attrs a join runs r on r.id=a.run where r.parent=$P and r.label='$A2:8765' and key='host.status'")"
kept=$(sqlite3 "$DB" "select group_concat(label, ' ') from (select r.label from runs r where r.parent=$P and exists (select 1 from steps s where s.run=r.id and s.read_ios > 0) order by r.label)")
expect_eq "host killed: the other hosts' results kept" "$(printf '%s\n' "$A1:8765" "$A3:8765" | sort | tr '\n' ' ' | sed 's/ $//')" "$kept"
check_fleet kill "$DB" "$P" 3
[ -z "$(ls -A "$T/tmp")" ] || not_ok "host killed: left in TMPDIR: $(ls -A "$T/tmp")"

# ---- a host whose target fio cannot open: named with fio's line, the other kept ----
# (last: a server whose job failed may refuse the next connection for a moment)

printf '%s %s\n%s /proc/nonexistent/x\n' "$A1" "$L1" "$A3" >"$T/h.notarget"
"$FSPRISM" run sustained-randread "$L1" --hosts "$T/h.notarget" --db "$DB" --qd=1 --time=1s \
	--span=32M >"$T/notarget.out" 2>"$T/notarget.err"
expect_eq "no target: exit 1" 1 $?
P=$(sqlite3 "$DB" "select max(id) from runs where kind='hosts'")
grep -q "^failed: $A3:8765: returned 1 of 1 steps, with no IO (fio: client <$A3>: exited with error" "$T/notarget.out" ||
	not_ok "no target: the host named with fio's line: $(cat "$T/notarget.out")"
expect_eq "no target: the other host's results kept" "ok" "$(host_attr "$P" "$A1:8765" host.status)"
expect_eq "no target: the fleet is the other host" \
	"$(sqlite3 "$DB" "select sum(read_ios) from steps s join runs r on r.id=s.run where r.parent=$P and r.label='$A1:8765'")" \
	"$(sqlite3 "$DB" "select value from run_attrs where run=$P and key='fleet.ios'")"

fsp_done
