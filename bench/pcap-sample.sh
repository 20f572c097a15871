#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Writes to stdout a small pcap file (Ethernet) whose every packet has a
# known fate in conntab-bench's pcap workload; bench/smoke.sh checks the
# counts. Flows (5, 8 packets used):
#   F1 tcp 10.0.0.2:40000 -> 10.0.0.1:80     SYN, SYN-ACK, ACK
#   F2 tcp 10.0.0.3:1000  -> 10.0.0.1:8080   SYN (server port above client's)
#   F3 udp 10.0.0.3:5353  -> 10.0.0.1:53     in a VLAN tag
#   F4 udp 10.0.0.3:5353  -> 10.0.0.4:53
#   F5 tcp [2001:db8::2]:40001 -> [2001:db8::1]:443  SYN behind a
#      hop-by-hop header, and the SYN-ACK
# Skipped (9): ARP (not-ip); a TCP header cut short and a record cut at
# the end of the file (truncated); IHL 3 and a total length shorter than
# its headers (malformed); an IPv4 and an IPv6 non-first fragment
# (fragment); ICMP and IPv6 ESP (not-tcp-udp).
# Local endpoints: 5 with no --local or --local 10.0.0.0/8 (both ends
# inside: the SYN's target, else the lower port); 4 with --local 10.0.0.3
# (F2, F3 and F4 turn to 10.0.0.3's side, F3 and F4 share it).
set -eu

words=
put() { words="$words $*"; }

# Little-endian 32-bit word as hex bytes.
le32() {
	printf '%02x %02x %02x %02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
		$(($1 >> 16 & 255)) $(($1 >> 24 & 255))
}

# One record: $1 = captured length claimed (default: the bytes given).
record() {
	local len=$1
	shift
	local n
	n=$(echo "$*" | wc -w)
	[ "$len" = - ] && len=$n
	put "$(le32 0) $(le32 0) $(le32 "$len") $(le32 "$len") $*"
}

eth() { echo "02 00 00 00 00 01 02 00 00 00 00 02 $*"; }
# IPv4 header: proto, source, destination (hex bytes), total length.
ip4() { echo "45 00 $(printf '%02x %02x' $(($4 >> 8)) $(($4 & 255))) 00 01" \
	"00 00 40 $1 00 00 $2 $3"; }
tcp() { echo "$1 $2 00 00 00 01 00 00 00 00 50 $3 20 00 00 00 00 00"; }
udp() { echo "$1 $2 00 08 00 00"; }

a1="0a 00 00 01" a2="0a 00 00 02" a3="0a 00 00 03" a4="0a 00 00 04"
v6a="20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01"
v6b="20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02"
p80="00 50" p8080="1f 90" p40000="9c 40" p1000="03 e8" p5353="14 e9"
p53="00 35" p443="01 bb" p40001="9c 41"

# Global header: magic, version 2.4, zone, sigfigs, snaplen, Ethernet.
put "d4 c3 b2 a1 02 00 04 00 $(le32 0) $(le32 0) $(le32 262144) $(le32 1)"

# F1
record - "$(eth 08 00) $(ip4 06 "$a2" "$a1" 40) $(tcp "$p40000" "$p80" 02)"
record - "$(eth 08 00) $(ip4 06 "$a1" "$a2" 40) $(tcp "$p80" "$p40000" 12)"
record - "$(eth 08 00) $(ip4 06 "$a2" "$a1" 40) $(tcp "$p40000" "$p80" 10)"
# F2
record - "$(eth 08 00) $(ip4 06 "$a3" "$a1" 40) $(tcp "$p1000" "$p8080" 02)"
# F3, VLAN 5
record - "$(eth 81 00 00 05 08 00) $(ip4 11 "$a3" "$a1" 28)" \
	"$(udp "$p5353" "$p53")"
# F4
record - "$(eth 08 00) $(ip4 11 "$a3" "$a4" 28) $(udp "$p5353" "$p53")"
# F5: hop-by-hop (next TCP, PadN), then TCP; the reply without it.
record - "$(eth 86 dd) 60 00 00 00 00 1c 00 40 $v6b $v6a" \
	"06 00 01 04 00 00 00 00 $(tcp "$p40001" "$p443" 02)"
record - "$(eth 86 dd) 60 00 00 00 00 14 06 40 $v6a $v6b" \
	"$(tcp "$p443" "$p40001" 12)"

# not-ip: ARP
record - "$(eth 08 06) 00 01 08 00 06 04 00 01"
# truncated: the TCP header cut after 4 bytes
record - "$(eth 08 00) $(ip4 06 "$a2" "$a1" 40) $p40000 $p80"
# malformed: IHL 3
record - "$(eth 08 00) 43 00 00 28 $(ip4 06 "$a2" "$a1" 40 | cut -c 13-)" \
	"$(tcp "$p40000" "$p80" 10)"
# malformed: total length 24 cannot hold IPv4 + TCP headers
record - "$(eth 08 00) $(ip4 06 "$a2" "$a1" 24) $(tcp "$p40000" "$p80" 10)"
# fragment: IPv4, offset 800 bytes, UDP
record - "$(eth 08 00) 45 00 00 24 00 02 00 64 40 11 00 00 $a3 $a1" \
	"00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
# not-tcp-udp: ICMP echo
record - "$(eth 08 00) $(ip4 01 "$a2" "$a1" 28) 08 00 00 00 00 01 00 01"
# fragment: IPv6 fragment header, offset 8, next UDP
record - "$(eth 86 dd) 60 00 00 00 00 10 2c 40 $v6b $v6a" \
	"11 00 00 41 00 00 00 07 00 00 00 00 00 00 00 00"
# not-tcp-udp: IPv6 ESP
record - "$(eth 86 dd) 60 00 00 00 00 08 32 40 $v6b $v6a" \
	"00 00 01 00 00 00 00 01"
# truncated: the file ends inside a record that claims 60 bytes
record 60 "$(eth 08 00)"

# Bytes from hex, through printf's \x escapes.
words=${words// /}
escaped=
while [ -n "$words" ]; do
	escaped="$escaped\\x${words:0:2}"
	words=${words:2}
done
# shellcheck disable=SC2059 # the format is the data
printf "$escaped"
