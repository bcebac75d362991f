package noc

import (
	"fmt"

	"github.com/trnsim/trnsim/clock"
)

// Topology kinds (configs.TopologyKinds).
const (
	None     = "none"
	Ring     = "ring"
	Torus2D  = "2d_torus"
	Torus3D  = "3d_torus"
	Switched = "switched"
	Custom   = "custom"
)

// Link is one bidirectional link of a custom topology.
type Link struct {
	A, B int
	// GBps per direction; 0: Config.LinkGBps.
	GBps float64
}

// Config describes a system's fabric: typed values, built from the
// hardware config by the system builder.
type Config struct {
	// Chips in the system; ChipsPerNode of them share a node's links.
	Chips, ChipsPerNode int
	// Kind, Dims and AxisGBps arrange a node's chips (Dims empty: derived,
	// as square as possible); Custom lists a custom topology's links.
	Kind     string
	Dims     []int
	AxisGBps []float64
	Custom   []Link
	// LinkGBps is a link's bandwidth per direction; LinkLatency what one
	// hop adds. A switched topology's chips reach the switch through a
	// port of SwitchPortGBps (0: LinkGBps).
	LinkGBps       float64
	LinkLatency    clock.Time
	SwitchPortGBps float64
	// NoCLatency is the on-chip fabric's latency between a chip's cores
	// (and from a core to an HBM stack that is not its own).
	NoCLatency clock.Time
	// EFAGBps is one chip's network bandwidth per direction between
	// nodes, EFALatency a transfer's or update's latency between nodes.
	EFAGBps    float64
	EFALatency clock.Time
}

// Route is the path from one chip to another.
type Route struct {
	// Links are the directed links crossed, in order.
	Links []int32
	// Hops counts link hops (an EFA crossing counts one).
	Hops int
	// Latency is what the path adds to a transfer or an update.
	Latency clock.Time
}

// LinkStats are one directed link's counters.
type LinkStats struct {
	// Name says what the link joins ("chip 0 -> chip 1 (x+)").
	Name string
	// From and To are chips (-1: the switch, for a switched topology).
	From, To int
	GBps     float64
	// Bytes moved over the link; Shares the engine shares that crossed
	// it; Busy the time its reservations held it.
	Bytes  int64
	Shares int64
	Busy   clock.Time
}

// Fabric is a system's links and routes.
type Fabric struct {
	cfg   Config
	dims  []int
	links []link
	// routes caches Route by src*Chips+dst (nil: not yet computed).
	routes []*Route
	// adj is a custom topology's adjacency: per chip, (neighbour, link).
	adj [][][2]int
	// pending are the bookings deferred at pendAt (Defer).
	pending []deferred
	pendAt  clock.Time
}

type link struct {
	stats LinkStats
	// busyUntil is when the link's last reservation ends.
	busyUntil clock.Time
	// pendBytes are the bytes of the deferred bookings crossing the link;
	// pendStart and pendEnd their start and the last one's end (Flush).
	pendBytes          int64
	pendStart, pendEnd clock.Time
}

// deferred is a booking made at one time and resolved with the others of
// that time (Defer, Flush).
type deferred struct {
	links []int32
	bytes int64
	done  func(end clock.Time)
}

// New builds a fabric, checking the configuration.
func New(cfg Config) (*Fabric, error) {
	if cfg.Chips < 1 || cfg.ChipsPerNode < 1 || cfg.Chips%cfg.ChipsPerNode != 0 {
		return nil, fmt.Errorf("%d chips in nodes of %d", cfg.Chips, cfg.ChipsPerNode)
	}
	f := &Fabric{cfg: cfg, routes: make([]*Route, cfg.Chips*cfg.Chips)}
	n := cfg.ChipsPerNode
	switch cfg.Kind {
	case None:
	case Ring, Torus2D, Torus3D:
		axes := map[string]int{Ring: 1, Torus2D: 2, Torus3D: 3}[cfg.Kind]
		f.dims = cfg.Dims
		if len(f.dims) == 0 {
			f.dims = SquareDims(n, axes)
		}
		if len(f.dims) != axes || product(f.dims) != n {
			return nil, fmt.Errorf("%s dims %v do not make the %d chips of a node", cfg.Kind, f.dims, n)
		}
		if len(cfg.AxisGBps) != 0 && len(cfg.AxisGBps) != axes {
			return nil, fmt.Errorf("%s has %d axes, got %d axis bandwidths", cfg.Kind, axes, len(cfg.AxisGBps))
		}
		// Links of every chip of every node: axis a, direction + then -.
		for c := 0; c < cfg.Chips; c++ {
			for a := 0; a < axes; a++ {
				gbps := cfg.LinkGBps
				if len(cfg.AxisGBps) > 0 {
					gbps = cfg.AxisGBps[a]
				}
				for dir, step := range []int{1, -1} {
					to := f.neighbour(c, a, step)
					name := fmt.Sprintf("chip %d -> chip %d (%s%s)", c, to, axisName(a), "+-"[dir:dir+1])
					f.links = append(f.links, link{stats: LinkStats{Name: name, From: c, To: to, GBps: gbps}})
				}
			}
		}
	case Switched:
		port := cfg.SwitchPortGBps
		if port <= 0 {
			port = cfg.LinkGBps
		}
		for c := 0; c < cfg.Chips; c++ {
			f.links = append(f.links,
				link{stats: LinkStats{Name: fmt.Sprintf("chip %d -> switch", c), From: c, To: -1, GBps: port}},
				link{stats: LinkStats{Name: fmt.Sprintf("switch -> chip %d", c), From: -1, To: c, GBps: port}})
		}
	case Custom:
		f.adj = make([][][2]int, cfg.Chips)
		for node := 0; node < cfg.Chips/n; node++ {
			for _, l := range cfg.Custom {
				if l.A < 0 || l.B < 0 || l.A >= n || l.B >= n || l.A == l.B {
					return nil, fmt.Errorf("custom link %d-%d outside the node's chips 0..%d", l.A, l.B, n-1)
				}
				gbps := l.GBps
				if gbps <= 0 {
					gbps = cfg.LinkGBps
				}
				a, b := node*n+l.A, node*n+l.B
				f.adj[a] = append(f.adj[a], [2]int{b, len(f.links)})
				f.links = append(f.links, link{stats: LinkStats{Name: fmt.Sprintf("chip %d -> chip %d", a, b), From: a, To: b, GBps: gbps}})
				f.adj[b] = append(f.adj[b], [2]int{a, len(f.links)})
				f.links = append(f.links, link{stats: LinkStats{Name: fmt.Sprintf("chip %d -> chip %d", b, a), From: b, To: a, GBps: gbps}})
			}
		}
	default:
		return nil, fmt.Errorf("unknown topology %q", cfg.Kind)
	}
	for _, l := range f.links {
		if l.stats.GBps <= 0 {
			return nil, fmt.Errorf("link %s has no bandwidth", l.stats.Name)
		}
	}
	if cfg.Chips > n {
		if cfg.EFAGBps <= 0 {
			return nil, fmt.Errorf("%d nodes need an EFA bandwidth", cfg.Chips/n)
		}
		for c := 0; c < cfg.Chips; c++ {
			f.links = append(f.links,
				link{stats: LinkStats{Name: fmt.Sprintf("chip %d -> EFA", c), From: c, To: -1, GBps: cfg.EFAGBps}},
				link{stats: LinkStats{Name: fmt.Sprintf("EFA -> chip %d", c), From: -1, To: c, GBps: cfg.EFAGBps}})
		}
	}
	return f, nil
}

// efaBase is the index of chip 0's EFA uplink.
func (f *Fabric) efaBase() int { return len(f.links) - 2*f.cfg.Chips }

// Dims returns the torus or ring dims in use (nil otherwise).
func (f *Fabric) Dims() []int { return f.dims }

// NoCLatency returns the on-chip fabric's latency.
func (f *Fabric) NoCLatency() clock.Time { return f.cfg.NoCLatency }

// SquareDims factors n into axes sizes, as equal as possible, largest
// first (16 in 2 axes: [4, 4]; 8: [4, 2]; 64 in 3: [4, 4, 4]).
func SquareDims(n, axes int) []int {
	if axes == 1 {
		return []int{n}
	}
	best := []int(nil)
	for a := 1; a <= n; a++ {
		if n%a != 0 {
			continue
		}
		rest := SquareDims(n/a, axes-1)
		cand := append([]int{a}, rest...)
		if rest[0] > a {
			continue // keep the sizes non-increasing
		}
		if best == nil || spread(cand) < spread(best) {
			best = cand
		}
	}
	return best
}

func spread(d []int) int {
	lo, hi := d[0], d[0]
	for _, x := range d {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}

func product(d []int) int {
	p := 1
	for _, x := range d {
		p *= x
	}
	return p
}

func axisName(a int) string { return string("xyz"[a]) }

// coords returns a chip's position in its node (first axis fastest).
func (f *Fabric) coords(local int) []int {
	c := make([]int, len(f.dims))
	for a, d := range f.dims {
		c[a] = local % d
		local /= d
	}
	return c
}

// neighbour returns the chip one step along axis a from chip c.
func (f *Fabric) neighbour(c, a, step int) int {
	n := f.cfg.ChipsPerNode
	node, local := c/n, c%n
	stride := 1
	for i := 0; i < a; i++ {
		stride *= f.dims[i]
	}
	d := f.dims[a]
	pos := (local / stride) % d
	np := ((pos+step)%d + d) % d
	return node*n + local + (np-pos)*stride
}

// linkOf returns the directed link from chip c along axis a (step +1 or
// -1).
func (f *Fabric) linkOf(c, a, step int) int32 {
	dir := 0
	if step < 0 {
		dir = 1
	}
	return int32((c*len(f.dims)+a)*2 + dir)
}

// Route returns the path from chip src to chip dst (nil for the same chip).
func (f *Fabric) Route(src, dst int) (*Route, error) {
	if src == dst {
		return nil, nil
	}
	if src < 0 || dst < 0 || src >= f.cfg.Chips || dst >= f.cfg.Chips {
		return nil, fmt.Errorf("no chip %d or %d (the system has %d)", src, dst, f.cfg.Chips)
	}
	key := src*f.cfg.Chips + dst
	if r := f.routes[key]; r != nil {
		return r, nil
	}
	r, err := f.route(src, dst)
	if err != nil {
		return nil, err
	}
	f.routes[key] = r
	return r, nil
}

func (f *Fabric) route(src, dst int) (*Route, error) {
	n := f.cfg.ChipsPerNode
	if src/n != dst/n {
		// Between nodes: the source chip's EFA interface to the
		// destination chip's.
		b := f.efaBase()
		return &Route{Links: []int32{int32(b + 2*src), int32(b + 2*dst + 1)}, Hops: 1, Latency: f.cfg.EFALatency}, nil
	}
	r := &Route{}
	switch f.cfg.Kind {
	case None:
		return nil, fmt.Errorf("chips %d and %d are not linked (hardware.topology.kind is none)", src, dst)
	case Ring, Torus2D, Torus3D:
		// Dimension-order routing: each axis in turn, the shorter way
		// round; where both are as short, + from an even coordinate and -
		// from an odd one, so that on an axis of four the routes map onto
		// each other under XOR of the coordinates, as they do under
		// translation elsewhere (symmetric-core reuse relies on it:
		// workloads/sched/symmetric.go).
		cur := src
		cs, cd := f.coords(src%n), f.coords(dst%n)
		for a, d := range f.dims {
			fwd := ((cd[a]-cs[a])%d + d) % d
			step, count := 1, fwd
			if d-fwd < fwd || (d-fwd == fwd && cs[a]%2 == 1) {
				step, count = -1, d-fwd
			}
			for i := 0; i < count; i++ {
				r.Links = append(r.Links, f.linkOf(cur, a, step))
				cur = f.neighbour(cur, a, step)
			}
		}
	case Switched:
		r.Links = []int32{int32(2 * src), int32(2*dst + 1)}
	case Custom:
		path := f.shortest(src, dst)
		if path == nil {
			return nil, fmt.Errorf("chips %d and %d are not connected by the custom topology's links", src, dst)
		}
		r.Links = path
	}
	r.Hops = len(r.Links)
	r.Latency = clock.Time(r.Hops) * f.cfg.LinkLatency
	return r, nil
}

// shortest returns the links of a shortest path by breadth-first search
// (neighbours in the order of the links list: deterministic).
func (f *Fabric) shortest(src, dst int) []int32 {
	prev := make([][2]int, len(f.adj))
	for i := range prev {
		prev[i] = [2]int{-1, -1}
	}
	prev[src] = [2]int{src, -1}
	queue := []int{src}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == dst {
			break
		}
		for _, nb := range f.adj[c] {
			if prev[nb[0]][0] < 0 {
				prev[nb[0]] = [2]int{c, nb[1]}
				queue = append(queue, nb[0])
			}
		}
	}
	if prev[dst][0] < 0 {
		return nil
	}
	var rev []int32
	for c := dst; c != src; c = prev[c][0] {
		rev = append(rev, int32(prev[c][1]))
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// PostLatency is what a semaphore update (or a transfer's data) takes from
// core fromCore of chip fromChip to core toCore of chip toChip. fromCore
// -1 stands for the chip's HBM: reaching any core from it crosses the
// on-chip fabric.
func (f *Fabric) PostLatency(fromChip, fromCore, toChip, toCore int32) (clock.Time, error) {
	if fromChip != toChip {
		r, err := f.Route(int(fromChip), int(toChip))
		if err != nil {
			return 0, err
		}
		// The update lands in the far chip's fabric and crosses it to the
		// core.
		return r.Latency + f.cfg.NoCLatency, nil
	}
	if fromCore != toCore {
		return f.cfg.NoCLatency, nil
	}
	return 0, nil
}

// Reserve books bytes on every link of route r for a transfer share that
// is ready at now, and returns when the share's last byte can have
// crossed: the links serve their reservations in order, each at its
// rate, and a share streams through every link of its route at once (cut
// through), so it holds each of them for bytes / the slowest link's rate,
// from when the busiest of them frees. A link therefore never carries
// more than its bandwidth. (A share that finishes later than its
// reservation, because its engine serves other queues too, leaves the
// link idle meanwhile: the model errs slow, never fast.)
func (f *Fabric) Reserve(r *Route, now clock.Time, bytes int64) clock.Time {
	if r == nil || bytes <= 0 {
		return now
	}
	start := now
	gbps := 0.0
	for i, li := range r.Links {
		l := &f.links[li]
		start = clock.Max(start, l.busyUntil)
		if i == 0 || l.stats.GBps < gbps {
			gbps = l.stats.GBps
		}
	}
	end := start + clock.FromNanoseconds(float64(bytes)/gbps)
	for _, li := range r.Links {
		l := &f.links[li]
		l.busyUntil = end
		l.stats.Bytes += bytes
		l.stats.Shares++
		l.stats.Busy += end - start
	}
	return end
}

// Defer books bytes on route r for a share ready at now, as Reserve does,
// but together with every other booking made at now: Flush resolves them
// at once, when nothing else happens at now, and calls done with the
// share's end. Bookings of one time share their links whatever order the
// simulation makes them in: each starts when the busiest of its links is
// free and ends when every link it crosses has carried the bookings of
// that time that cross it (its links serve them side by side). It reports
// whether the booking is the first of its time, whose caller schedules
// the Flush.
func (f *Fabric) Defer(r *Route, now clock.Time, bytes int64, done func(end clock.Time)) bool {
	if r == nil || bytes <= 0 {
		if done != nil {
			done(now)
		}
		return false
	}
	first := len(f.pending) == 0
	if !first && f.pendAt != now {
		f.Flush()
		first = true
	}
	f.pendAt = now
	f.pending = append(f.pending, deferred{links: r.Links, bytes: bytes, done: done})
	return first
}

// Flush resolves the deferred bookings (Defer).
func (f *Fabric) Flush() {
	if len(f.pending) == 0 {
		return
	}
	now := f.pendAt
	for _, p := range f.pending {
		for _, li := range p.links {
			l := &f.links[li]
			if l.pendBytes == 0 {
				l.pendStart, l.pendEnd = clock.Max(now, l.busyUntil), 0
			}
			l.pendBytes += p.bytes
		}
	}
	ends := make([]clock.Time, len(f.pending))
	for i, p := range f.pending {
		start := now
		for _, li := range p.links {
			start = clock.Max(start, f.links[li].pendStart)
		}
		end := start
		for _, li := range p.links {
			l := &f.links[li]
			end = clock.Max(end, start+clock.FromNanoseconds(float64(l.pendBytes)/l.stats.GBps))
		}
		ends[i] = end
		for _, li := range p.links {
			l := &f.links[li]
			l.pendEnd = clock.Max(l.pendEnd, end)
			l.stats.Bytes += p.bytes
			l.stats.Shares++
		}
	}
	for _, p := range f.pending {
		for _, li := range p.links {
			l := &f.links[li]
			if l.pendBytes > 0 {
				l.stats.Busy += l.pendEnd - l.pendStart
				l.busyUntil = l.pendEnd
				l.pendBytes = 0
			}
		}
	}
	pending := f.pending
	f.pending = nil
	for i, p := range pending {
		if p.done != nil {
			p.done(ends[i])
		}
	}
}

// Stats returns every directed link's counters, in link order.
func (f *Fabric) Stats() []LinkStats {
	out := make([]LinkStats, len(f.links))
	for i, l := range f.links {
		out[i] = l.stats
	}
	return out
}
