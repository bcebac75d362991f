// Package plots draws trnsim's figures with gonum/plot, as PNG or SVG, from
// numbers computed elsewhere: a sweep's line plots, heat maps and Pareto
// fronts; grouped bars (throughput, cost, ops against the GPUs); a device's
// roofline with ops placed on it; a Gantt-style engine timeline; stacked
// shares (the stall breakdown); and predicted against measured on log axes
// with target bands (docs/plots.md). Each figure is written whole or not at
// all.
package plots
