# SPDX-License-Identifier: LGPL-2.1-or-later
#
# awk -f demo-summary.awk DEMO.out TRAFFIC.out: the last step of
# scripts/demo.sh. The last lines of both conntab-bench runs (it prints
# conntab against each peer last), joined: one line per peer, the
# figures of make demo and the zipf one of the traffic run.
# scripts/check-facts.sh runs it on small runs and holds README.md's
# sample of it to what it prints.
FNR == 1 { run++ }
run == 1 && /^# conntab against each peer/ { head = substr($0, 3) }
/^# [^ ]+ vs [^ ]+ / {
	peer = $2 " vs " $4
	sub(/^# [^ ]+ vs [^ ]+ +/, "")
	if (run == 1) {
		order[++n] = peer
		figs[peer] = $0
	} else if (peer in figs) {
		figs[peer] = figs[peer] ", " $0
	}
}
END {
	print head
	for (i = 1; i <= n; i++)
		printf "%-22s %s\n", order[i] ":", figs[order[i]]
}
