// Package plots will draw trnsim's figures with gonum/plot: cost
// comparisons, throughput, rooflines, engine timelines, sweep curves and
// predicted-vs-measured charts, from results computed elsewhere.
//
// It is empty in this version; until it exists, results.json, the CSV rows
// and the Chrome trace (open it in Perfetto) carry every figure.
package plots
