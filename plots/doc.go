// Package plots draws trnsim's figures with gonum/plot, as PNG or SVG: line
// plots of a metric against a swept parameter (a line per value of the
// others) and heat maps over two, from results computed elsewhere (the
// sweep's results.jsonl). Cost, roofline, timeline and predicted-vs-measured
// figures come with the issues that compute their data.
package plots
