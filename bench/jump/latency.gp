# latency.gp - jump delivery latency distributions per path (CDF, log x).
# Called by bench/jump/report.py as:
#   gnuplot -e "out='FILE.png'; paths='GENERATED.gp'; stamp='TEXT'" bench/jump/latency.gp
# where GENERATED.gp (written by report.py) holds the `plot` command over the
# per-path CDF files (two columns: latency in us, fraction of samples <= it),
# one colour, dash type and point type per path so the curves stay apart in
# grey scale, and TEXT says what was measured: commit, date, mode, machine
# (lines separated by \n).
# The legend sits below the plot area in a band of its own (fixed margins:
# gnuplot's automatic "outside below" layout puts it over the x label).
if (!exists("out")) out = 'jump.png'
if (!exists("stamp")) stamp = 'commit, date and mode unknown'
set terminal pngcairo size 1200,900 font ",10" noenhanced
set output out
set title "Jump delivery latency: last contribution sent -> next layer's input received\n".stamp
set xlabel "latency (us, log scale)"
set ylabel "fraction of seeds delivered within"
set logscale x 10
set format x "%g"
set yrange [0:1.02]
set grid xtics ytics mxtics
set lmargin at screen 0.08
set rmargin at screen 0.97
set tmargin at screen 0.89
set bmargin at screen 0.20
set key at screen 0.5, screen 0.015 center bottom vertical maxrows 4 Left reverse box samplen 5 spacing 1.3 width 1
set arrow from graph 0, first 0.5 to graph 1, first 0.5 nohead dt 3 lc rgb "#888888"
set arrow from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 3 lc rgb "#888888"
load paths
