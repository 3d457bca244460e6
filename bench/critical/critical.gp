# critical.gp - per-token wall time of the critical path, the canonical chain
# against Pair X jumps through fanogate with the fleet's gate (a jump curve
# above its chain curve is a cost: the hop was skipped and the seed came
# late), by loss, one curve pair per network delay. Called by bench/critical/report.py as:
#   gnuplot -e "out='FILE.png'; data='FILE.dat'; delays='D1 D2'; xmax=21; stamp='TEXT'" bench/critical/critical.gp
# FILE.dat: blocks (two blank lines apart), one per delay in the order of
# `delays`: loss %, jump p50 ms, jump p10 ms, jump p90 ms, canonical p50 ms,
# canonical p10 ms, canonical p90 ms, share of layers in time %, share of
# layers whose gate passed % (the last two are in table.txt, not drawn).
# Jump curves are solid with filled markers, canonical ones dashed with open
# markers; each delay has its own marker shape, so the curves stay apart in
# grey scale. The legend sits below the plot area in a band of its own.
if (!exists("out")) out = 'critical.png'
if (!exists("stamp")) stamp = 'commit, date and mode unknown'
if (!exists("delays")) delays = ''
set terminal pngcairo size 1200,900 font ",10" noenhanced
set output out
set title "Critical path per token: the canonical chain through the coordinator vs Pair X jumps with the fleet's gate (p50, bars p10-p90)\n".stamp
set xlabel "injected loss per UDP fragment (%)"
set ylabel "wall time per token (ms, log scale)"
# log: a run with loss can be 50x its chain, and both must stay readable
set logscale y
set grid xtics ytics
if (!exists("xmax")) xmax = 21
set xrange [-1:xmax]
set lmargin at screen 0.08
set rmargin at screen 0.97
set tmargin at screen 0.87
set bmargin at screen 0.20
set key at screen 0.5, screen 0.015 center bottom vertical maxrows 3 Left reverse box samplen 5 spacing 1.3 width 1
n = words(delays)
filled(i) = 5 + 2 * ((i - 1) % 3)
open(i) = 4 + 2 * ((i - 1) % 3)
plot for [i=1:n] data index (i - 1) using 1:2:3:4 with yerrorlines lw 2 lc rgb "#000000" dt 1 pt filled(i) ps 1.5 \
        title sprintf("jump with the gate, net delay %s us a hop", word(delays, i)), \
     for [i=1:n] data index (i - 1) using 1:5:6:7 with yerrorlines lw 2 lc rgb "#777777" dt 2 pt open(i) ps 1.5 \
        title sprintf("canonical chain, net delay %s us a hop", word(delays, i))
