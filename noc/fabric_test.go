package noc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/noc"
)

func TestSquareDims(t *testing.T) {
	for _, c := range []struct {
		n, axes int
		want    []int
	}{
		{16, 2, []int{4, 4}}, {8, 2, []int{4, 2}}, {2, 2, []int{2, 1}}, {64, 3, []int{4, 4, 4}},
		{12, 1, []int{12}}, {6, 2, []int{3, 2}}, {7, 2, []int{7, 1}}, {32, 3, []int{4, 4, 2}},
	} {
		assert.Equal(t, c.want, noc.SquareDims(c.n, c.axes), "%d in %d axes", c.n, c.axes)
	}
}

func TestRoutes(t *testing.T) {
	lat := clock.FromNanoseconds(300)
	for _, c := range []struct {
		name     string
		cfg      noc.Config
		src, dst int
		hops     int
		latency  clock.Time
		err      string
	}{
		{"same chip", noc.Config{Chips: 4, ChipsPerNode: 4, Kind: noc.Ring, LinkGBps: 100}, 2, 2, 0, 0, ""},
		{"ring the short way", noc.Config{Chips: 8, ChipsPerNode: 8, Kind: noc.Ring, LinkGBps: 100, LinkLatency: lat}, 0, 7, 1, lat, ""},
		{"ring opposite", noc.Config{Chips: 8, ChipsPerNode: 8, Kind: noc.Ring, LinkGBps: 100, LinkLatency: lat}, 1, 5, 4, 4 * lat, ""},
		{"4x4 torus corner to corner", noc.Config{Chips: 16, ChipsPerNode: 16, Kind: noc.Torus2D, LinkGBps: 256, LinkLatency: lat}, 0, 15, 2, 2 * lat, ""},
		{"4x4 torus farthest", noc.Config{Chips: 16, ChipsPerNode: 16, Kind: noc.Torus2D, LinkGBps: 256, LinkLatency: lat}, 0, 10, 4, 4 * lat, ""},
		{"3d torus z ring", noc.Config{Chips: 64, ChipsPerNode: 64, Kind: noc.Torus3D, LinkGBps: 256, AxisGBps: []float64{256, 256, 128}, LinkLatency: lat}, 0, 32, 2, 2 * lat, ""},
		{"switched", noc.Config{Chips: 64, ChipsPerNode: 64, Kind: noc.Switched, LinkGBps: 640, LinkLatency: lat}, 3, 60, 2, 2 * lat, ""},
		{"custom line", noc.Config{Chips: 4, ChipsPerNode: 4, Kind: noc.Custom, LinkGBps: 50, LinkLatency: lat, Custom: []noc.Link{{A: 0, B: 1}, {A: 1, B: 2}, {A: 2, B: 3}}}, 0, 3, 3, 3 * lat, ""},
		{"custom disconnected", noc.Config{Chips: 4, ChipsPerNode: 4, Kind: noc.Custom, LinkGBps: 50, Custom: []noc.Link{{A: 0, B: 1}}}, 0, 3, 0, 0, "chips 0 and 3 are not connected by the custom topology's links"},
		{"between nodes", noc.Config{Chips: 32, ChipsPerNode: 16, Kind: noc.Torus2D, LinkGBps: 256, EFAGBps: 25, EFALatency: 10 * clock.Microsecond}, 1, 17, 1, 10 * clock.Microsecond, ""},
		{"unlinked", noc.Config{Chips: 2, ChipsPerNode: 2, Kind: noc.None}, 0, 1, 0, 0, "chips 0 and 1 are not linked (hardware.topology.kind is none)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := noc.New(c.cfg)
			require.NoError(t, err)
			r, err := f.Route(c.src, c.dst)
			if c.err != "" {
				require.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			if c.hops == 0 {
				assert.Nil(t, r)
				return
			}
			assert.Equal(t, c.hops, r.Hops)
			assert.Len(t, r.Links, max(c.hops, 2*min(1, c.src/c.cfg.ChipsPerNode^c.dst/c.cfg.ChipsPerNode)))
			assert.Equal(t, c.latency, r.Latency)
			// Every link of the route starts where the last one ended.
			st := f.Stats()
			at := c.src
			for _, li := range r.Links {
				l := st[li]
				if l.From >= 0 {
					assert.Equal(t, at, l.From, l.Name)
				}
				if l.To >= 0 {
					at = l.To
				}
			}
			assert.Equal(t, c.dst, at)
		})
	}
}

func TestEveryTorusRouteArrives(t *testing.T) {
	for _, dims := range [][]int{{4, 4}, {4, 2}, {2, 1}, {4, 4, 4}, {3, 5}} {
		n := 1
		for _, d := range dims {
			n *= d
		}
		kind := map[int]string{1: noc.Ring, 2: noc.Torus2D, 3: noc.Torus3D}[len(dims)]
		f, err := noc.New(noc.Config{Chips: n, ChipsPerNode: n, Kind: kind, Dims: dims, LinkGBps: 1})
		require.NoError(t, err)
		st := f.Stats()
		maxHops := 0
		for _, d := range dims {
			maxHops += d / 2
		}
		for s := 0; s < n; s++ {
			for d := 0; d < n; d++ {
				r, err := f.Route(s, d)
				require.NoError(t, err)
				at := s
				if r != nil {
					for _, li := range r.Links {
						require.Equal(t, at, st[li].From)
						at = st[li].To
					}
					assert.LessOrEqual(t, r.Hops, maxHops, "%v %d->%d", dims, s, d)
				}
				require.Equal(t, d, at, "%v %d->%d", dims, s, d)
			}
		}
	}
}

func TestLinkReservations(t *testing.T) {
	f, err := noc.New(noc.Config{Chips: 4, ChipsPerNode: 4, Kind: noc.Ring, LinkGBps: 50})
	require.NoError(t, err)
	r, err := f.Route(0, 1)
	require.NoError(t, err)
	us := clock.Microsecond
	// 50 KB at 50 GB/s is 1 us; a second share queues behind the first.
	assert.Equal(t, us, f.Reserve(r, 0, 50000))
	assert.Equal(t, 2*us, f.Reserve(r, 0, 50000))
	// A share ready after the link freed starts when it is ready.
	assert.Equal(t, 6*us, f.Reserve(r, 5*us, 50000))
	// Two hops: the slowest link's rate, from when the busiest frees.
	f2, err := noc.New(noc.Config{Chips: 4, ChipsPerNode: 4, Kind: noc.Custom, LinkGBps: 50,
		Custom: []noc.Link{{A: 0, B: 1}, {A: 1, B: 2, GBps: 25}}})
	require.NoError(t, err)
	r02, err := f2.Route(0, 2)
	require.NoError(t, err)
	r12, err := f2.Route(1, 2)
	require.NoError(t, err)
	assert.Equal(t, 2*us, f2.Reserve(r12, 0, 50000))
	assert.Equal(t, 4*us, f2.Reserve(r02, 0, 50000), "waits for 1 -> 2, then 2 us at 25 GB/s")
	st := f2.Stats()
	assert.Equal(t, int64(50000), st[r02.Links[0]].Bytes)
	assert.Equal(t, int64(100000), st[r02.Links[1]].Bytes)
	assert.Equal(t, 4*us, st[r02.Links[1]].Busy, "never more than its rate")
}

func TestPostLatency(t *testing.T) {
	f, err := noc.New(noc.Config{Chips: 4, ChipsPerNode: 4, Kind: noc.Ring, LinkGBps: 50, LinkLatency: 300 * clock.Nanosecond, NoCLatency: 200 * clock.Nanosecond})
	require.NoError(t, err)
	for _, c := range []struct {
		fc, fk, tc, tk int32
		want           clock.Time
	}{
		{0, 0, 0, 0, 0},
		{0, 0, 0, 1, 200 * clock.Nanosecond},
		{0, -1, 0, 0, 200 * clock.Nanosecond},
		{0, 0, 2, 0, 800 * clock.Nanosecond},
		{0, 1, 1, 1, 500 * clock.Nanosecond},
	} {
		got, err := f.PostLatency(c.fc, c.fk, c.tc, c.tk)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%v", c)
	}
}
