# latency.gp - jump delivery latency distributions per path (CDF, log x).
# Called by bench/jump/report.py as:
#   gnuplot -e "out='FILE.png'; paths='GENERATED.gp'" bench/jump/latency.gp
# where GENERATED.gp (written by report.py) holds the `plot` command over the
# per-path CDF files (two columns: latency in us, fraction of samples <= it).
if (!exists("out")) out = 'jump-latency.png'
set terminal pngcairo size 1100,760 font ",10"
set output out
set title "Jump delivery latency: last contribution sent -> next layer's input received"
set xlabel "latency (us, log scale)"
set ylabel "fraction of seeds delivered within"
set logscale x 10
set format x "%g"
set yrange [0:1.02]
set grid xtics ytics mxtics
set key outside below center vertical maxrows 4 box
set arrow from graph 0, first 0.5 to graph 1, first 0.5 nohead dt 3 lc rgb "#888888"
set arrow from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 3 lc rgb "#888888"
load paths
