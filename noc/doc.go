// Package noc models what joins the cores and chips of a simulated system:
// the on-chip fabric between a chip's cores, DMA engines and HBM stacks, the
// NeuronLink links between the chips of a node (ring, 2D and 3D torus,
// switched, or custom), and EFA between nodes (reference §1, §5, §5.1).
//
// A Fabric answers two questions for the DMA engines and the sequencers:
// which links a transfer from one chip to another crosses (Route, by
// dimension-order routing on a torus, shortest paths on a custom graph) and
// what a semaphore update or a transfer's data takes to travel (the hops'
// latency). Each direction of a link serves reservations in order at its
// rate: a DMA engine share that starts on a route books its bytes on every
// link of it (cut through, at the slowest link's rate, from when the
// busiest frees) and ends no sooner than that, so no link ever carries
// more than its bandwidth. One calculation per share, never per byte or
// packet.
//
// What is not modelled (named so its influence can be judged): packet
// switching and credit flow inside a link, the on-chip fabric's bandwidth
// (only its latency: nothing public gives its bandwidth, and an HBM stack
// binds first), routers' buffering, and EFA's protocol stack beyond one
// latency and one bandwidth per chip.
package noc
