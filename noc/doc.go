// Package noc will model the on-chip fabric between cores, DMA engines and
// HBM, the NeuronLink links between chips (2D/3D torus, switched) and the
// collective algorithms over them (ring, recursive halving/doubling, mesh).
//
// It is empty in this version: the simulator runs one NeuronCore (or several
// cores of one chip sharing HBM, synchronised by semaphores), and the
// multi-chip work that needs this package has not been built. The link
// figures already sit in every preset (hardware.chip.links) so configs are
// ready for it.
package noc
