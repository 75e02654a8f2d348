package calib

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Merge pools several calibrations of one host into one profile: every
// measured figure the median of the profiles' figures (spreadOf's median,
// the lower middle one, so always a figure one of them measured), its
// extremes the least and greatest any of them measured, its sample count
// their sum; the figures derived from measured ones (a GEMM's and a
// collective's model time, the op check's model side) computed again from
// the pooled profile.
//
// One calibration's figures describe the state the host was in while it
// ran: on the project's 2-core VM the 4-rank core wait after a decode's
// burst read a median of 1.8–5.8 µs over six calibrations, and one
// calibration priced tp2pp2-tiny's TPOT anywhere in −25 … +22 % of its
// runs, where the same profiles with their core_wait entries at the
// median of all six's repeats priced it within −6 … +7 %
// (docs/measurements/cpu-calibration.md, (twenty-eighth)). Several
// calibrations merged narrow that noise ((twenty-ninth)); they do not move
// a state of the host that lasts through all of them.
//
// The profiles must come from one host and one setting (backend, CPU,
// cores, device, ranks, quick, op-time dtype and placement); names are
// used in errors and notes (the files' base names where they are files).
// The op-time table is merged group by group (kind, shape and ranks) at
// common points, each calibration's curve read there (poolOpTimes); a
// group present in only some profiles is kept from those, and noted.
func Merge(cals []*configs.Calibration, names []string) (*configs.Calibration, error) {
	if len(cals) < 2 {
		return nil, fmt.Errorf("merge: needs at least two calibrations (got %d)", len(cals))
	}
	if len(names) != len(cals) {
		return nil, fmt.Errorf("merge: %d names for %d calibrations", len(names), len(cals))
	}
	if err := sameSetting(cals, names); err != nil {
		return nil, err
	}
	first := cals[0]
	out := &configs.Calibration{Info: first.Info, Spread: map[string]configs.Spread{}}
	out.Info.Notes, out.Info.Warnings, out.Info.LoadAverage = nil, nil, nil

	// Info: the newest date, every repeat, the highest load at the start
	// and at the end, each profile's notes and warnings under its name.
	versions := map[string]bool{}
	var dates, starts, ends []string
	var startLoad, endLoad []float64
	for i, c := range cals {
		out.Info.Date = max(out.Info.Date, c.Info.Date)
		if i > 0 {
			out.Info.Repeats += c.Info.Repeats
		}
		versions[c.Info.Version] = true
		dates = append(dates, fmt.Sprintf("%s (%s)", names[i], c.Info.Date))
		if la := c.Info.LoadAverage; len(la) == 2 {
			startLoad, endLoad = append(startLoad, la[0]), append(endLoad, la[1])
			starts = append(starts, fmt.Sprintf("%.2f", la[0]))
			ends = append(ends, fmt.Sprintf("%.2f", la[1]))
		}
	}
	if len(startLoad) == len(cals) {
		out.Info.LoadAverage = []float64{slices.Max(startLoad), slices.Max(endLoad)}
	}
	note(out, "merged from %d calibrations of this host: %s; every figure the median of theirs, its extremes theirs, op check and model times computed again (partbench calibrate merge)",
		len(cals), strings.Join(dates, ", "))
	if len(starts) == len(cals) {
		note(out, "1-minute load average at each calibration's start: %s; at its end: %s", strings.Join(starts, ", "), strings.Join(ends, ", "))
	}
	if len(versions) > 1 {
		out.Info.Version = strings.Join(slices.Sorted(maps.Keys(versions)), " + ")
		note(out, "the calibrations were taken by different partbench versions: %s", out.Info.Version)
	}
	var err error
	if out.Hardware, err = medianStruct(cals, names, "hardware", func(c *configs.Calibration) topology.GPU { return c.Hardware }); err != nil {
		return nil, err
	}
	if out.Topology, err = medianStruct(cals, names, "topology", func(c *configs.Calibration) topology.Topology { return c.Topology }); err != nil {
		return nil, err
	}
	mergeSpreads(out, cals)
	if out.OpTimes, err = poolOpTimes(out, cals, names); err != nil {
		return nil, err
	}
	mergeGEMM(out, cals)
	mergeCache(out, cals)
	if err := mergeComm(out, cals); err != nil {
		return nil, err
	}
	if err := mergeRemote(out, cals, names); err != nil {
		return nil, err
	}
	if err := mergeEngine(out, cals, names); err != nil {
		return nil, err
	}

	for i, c := range cals {
		for _, n := range c.Info.Notes {
			note(out, "%s: %s", names[i], n)
		}
		for _, w := range c.Info.Warnings {
			out.Info.Warnings = append(out.Info.Warnings, names[i]+": "+w)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("merge: the pooled figures are not a valid profile: %w", err)
	}
	// The op check: each kind's measured time the median of the profiles',
	// its model side sim's with the pooled profile.
	if out.Ops, err = mergeOps(out, cals, names); err != nil {
		return nil, err
	}
	if w, ok := opCheckWarning(out); ok {
		out.Info.Warnings = append(out.Info.Warnings, w)
	}
	return out, nil
}

// MergeNames are the names Merge gives calibrations loaded from paths:
// each base name, or the path where two inputs share a base name.
func MergeNames(paths []string) []string {
	names := make([]string, len(paths))
	seen := map[string]int{}
	for i, p := range paths {
		names[i] = filepath.Base(p)
		seen[names[i]]++
	}
	for i, p := range paths {
		if seen[names[i]] > 1 {
			names[i] = p
		}
	}
	return names
}

// sameSetting refuses calibrations of different hosts or settings, naming
// the field, the first calibration's value and the other's.
func sameSetting(cals []*configs.Calibration, names []string) error {
	type field struct {
		name string
		of   func(*configs.Calibration) any
	}
	fields := []field{
		{"calibration.backend", func(c *configs.Calibration) any { return c.Info.Backend }},
		{"calibration.host", func(c *configs.Calibration) any { return c.Info.Host }},
		{"calibration.cpu", func(c *configs.Calibration) any { return c.Info.CPU }},
		{"calibration.cores", func(c *configs.Calibration) any { return c.Info.Cores }},
		{"calibration.device", func(c *configs.Calibration) any { return c.Info.Device }},
		{"calibration.ranks", func(c *configs.Calibration) any { return c.Info.Ranks }},
		{"calibration.quick", func(c *configs.Calibration) any { return c.Info.Quick }},
		{"calibration.op_time_dtype", func(c *configs.Calibration) any { return c.Info.OpTimeDType }},
		{"calibration.op_time_processes", func(c *configs.Calibration) any { return c.Info.OpTimeProcesses }},
	}
	for i := 1; i < len(cals); i++ {
		for _, f := range fields {
			if a, b := f.of(cals[0]), f.of(cals[i]); a != b {
				return fmt.Errorf("merge: %s: %s has %v, %s has %v; only calibrations of one host with the same flags merge", f.name, names[0], a, names[i], b)
			}
		}
	}
	return nil
}

// medianStruct is of(cals[0]) with every numeric field (float64, int,
// int64, nested in structs) the median of the calibrations' values; every
// other field (names, classes, flags, ranges) must be the same in all.
func medianStruct[T any](cals []*configs.Calibration, names []string, key string, of func(*configs.Calibration) T) (T, error) {
	vs := make([]reflect.Value, len(cals))
	for i, c := range cals {
		v := of(c)
		vs[i] = reflect.ValueOf(&v).Elem()
	}
	out := of(cals[0])
	err := medianFields(reflect.ValueOf(&out).Elem(), vs, names, key)
	return out, err
}

func medianFields(out reflect.Value, vs []reflect.Value, names []string, path string) error {
	switch out.Kind() {
	case reflect.Struct:
		t := out.Type()
		for i := range t.NumField() {
			name := tomlName(t.Field(i))
			sub := make([]reflect.Value, len(vs))
			for j, v := range vs {
				sub[j] = v.Field(i)
			}
			if err := medianFields(out.Field(i), sub, names, path+"."+name); err != nil {
				return err
			}
		}
	case reflect.Float64:
		xs := make([]float64, len(vs))
		for i, v := range vs {
			xs[i] = v.Float()
		}
		out.SetFloat(medianOf(xs))
	case reflect.Int, reflect.Int64:
		xs := make([]int64, len(vs))
		for i, v := range vs {
			xs[i] = v.Int()
		}
		out.SetInt(lowerMedianInt(xs))
	default:
		for i := 1; i < len(vs); i++ {
			if !reflect.DeepEqual(vs[0].Interface(), vs[i].Interface()) {
				return fmt.Errorf("merge: %s: %s has %v, %s has %v; the calibrations describe different machines", path, names[0], vs[0].Interface(), names[i], vs[i].Interface())
			}
		}
	}
	return nil
}

// tomlName is a struct field's TOML key, or its Go name where it has none.
func tomlName(f reflect.StructField) string {
	if name := strings.Split(f.Tag.Get("toml"), ",")[0]; name != "" && name != "-" {
		return name
	}
	return f.Name
}

// pooled is the merged spread of figures measured by several
// calibrations, each given by its median, extremes and sample count.
func pooled(meds, mins, maxs []float64, ns []int) configs.Spread {
	s := configs.Spread{Median: medianOf(meds), Min: slices.Min(mins), Max: slices.Max(maxs)}
	for _, n := range ns {
		s.N += n
	}
	s.Min, s.Max = min(s.Min, s.Median), max(s.Max, s.Median)
	return s
}

func mergeSpreads(out *configs.Calibration, cals []*configs.Calibration) {
	keys := map[string]bool{}
	for _, c := range cals {
		for k := range c.Spread {
			keys[k] = true
		}
	}
	for k := range keys {
		var meds, mins, maxs []float64
		var ns []int
		for _, c := range cals {
			if s, ok := c.Spread[k]; ok {
				meds, mins, maxs, ns = append(meds, s.Median), append(mins, s.Min), append(maxs, s.Max), append(ns, s.N)
			}
		}
		out.Spread[k] = pooled(meds, mins, maxs, ns)
	}
}

// opGroup is an op_time entry's key less its size and context.
type opGroup struct {
	kind, shape string
	ranks       int
}

// opLayout is one calibration's entries of an op group: by context, in
// increasing order, each context's entries by size.
type opLayout [][]configs.OpTime

func layoutOf(es []configs.OpTime) opLayout {
	slices.SortFunc(es, func(a, b configs.OpTime) int {
		return cmp.Or(cmp.Compare(a.Context, b.Context), cmp.Compare(a.Size, b.Size))
	})
	var l opLayout
	for i, e := range es {
		if i == 0 || e.Context != es[i-1].Context {
			l = append(l, nil)
		}
		l[len(l)-1] = append(l[len(l)-1], e)
	}
	return l
}

func (l opLayout) counts() []int {
	n := make([]int, len(l))
	for i, es := range l {
		n[i] = len(es)
	}
	return n
}

// poolOpTimes merges the op-time tables, group by group (kind, shape and
// ranks). Several kinds key their entries by a measured time — core_wait
// its size by the burst's wall time in ns, core_exit_lag its context alike,
// turn_off its size by the turn's time on the core, some of whose bins a
// calibration may not fill — so the calibrations' entries of a group need
// not sit at the same points. The merged group's points: where every
// calibration has as many entries per context, the medians of theirs
// matched by position (contexts in increasing order, sizes within each;
// each still strictly increasing, the median of larger values being
// larger), else the points of the calibration with the most entries. At
// each point every calibration's own curve is read as sim reads it
// (sim.OpTable.Lookup, clamped to the calibration's measured range) and the
// merged time is the median of those.
func poolOpTimes(out *configs.Calibration, cals []*configs.Calibration, names []string) ([]configs.OpTime, error) {
	var order []opGroup
	entries := map[opGroup][][]configs.OpTime{} // group → per calibration → its entries
	for i, c := range cals {
		for _, t := range c.OpTimes {
			g := opGroup{t.Kind, t.Shape, t.Ranks}
			if entries[g] == nil {
				entries[g] = make([][]configs.OpTime, len(cals))
				order = append(order, g)
			}
			entries[g][i] = append(entries[g][i], t)
		}
	}
	var ts []configs.OpTime
	for _, g := range order {
		var have []int
		var in []string
		layouts := make([]opLayout, len(cals))
		matched, fullest := true, -1
		for i, es := range entries[g] {
			if len(es) == 0 {
				continue
			}
			layouts[i] = layoutOf(es)
			if len(have) > 0 && !slices.Equal(layouts[i].counts(), layouts[have[0]].counts()) {
				matched = false
			}
			if fullest < 0 || len(es) > len(entries[g][fullest]) {
				fullest = i
			}
			have, in = append(have, i), append(in, names[i])
		}
		if len(have) < len(cals) {
			note(out, "op_time %s (shape %q, ranks %d) from %s only: the others did not measure it", g.kind, g.shape, g.ranks, strings.Join(in, ", "))
		}
		curves := make([]func(size, context int64) (configs.OpTime, float64), len(cals))
		for _, i := range have {
			curves[i] = curveOf(entries[g][i])
		}
		if !matched {
			var counts []string
			for _, i := range have {
				counts = append(counts, fmt.Sprintf("%s %d", names[i], len(entries[g][i])))
			}
			note(out, "op_time %s (shape %q, ranks %d) measured at different points (%s entries): merged at %s's, each calibration's curve read there", g.kind, g.shape, g.ranks, strings.Join(counts, ", "), names[fullest])
		}
		for c, es := range layouts[fullest] {
			for j, ref := range es {
				e := ref
				var on []configs.OpTime // the calibrations' entries at this point (matched only)
				if matched {
					var sizes, contexts []int64
					for _, i := range have {
						a := layouts[i][c][j]
						on = append(on, a)
						sizes, contexts = append(sizes, a.Size), append(contexts, a.Context)
					}
					e.Size, e.Context = lowerMedianInt(sizes), lowerMedianInt(contexts)
				}
				var vals, mins, maxs []float64
				var ns []int
				for k, i := range have {
					near, v := curves[i](e.Size, e.Context)
					vals = append(vals, v)
					if matched {
						near = on[k]
					}
					mins, maxs, ns = append(mins, min(near.TimeMinS, v)), append(maxs, max(near.TimeMaxS, v)), append(ns, near.Samples)
				}
				sp := pooled(vals, mins, maxs, ns)
				e.TimeS, e.TimeMinS, e.TimeMaxS, e.Samples = sp.Median, sp.Min, sp.Max, sp.N
				ts = append(ts, e)
			}
		}
	}
	return ts, nil
}

// curveOf reads one calibration's entries of an op group at any point as
// sim does (the size and context clamped to the measured range): the
// time there, and the entry nearest the point (the same context, else the
// nearest, then the nearest size) — the time itself where sim's table has
// no value there (a grid whose contexts hold different sizes).
func curveOf(es []configs.OpTime) func(size, context int64) (configs.OpTime, float64) {
	tab := sim.NewOpTable(es)
	kind, shape := es[0].Kind, es[0].Shape
	lo, hi := es[0], es[0]
	for _, e := range es {
		lo.Size, hi.Size = min(lo.Size, e.Size), max(hi.Size, e.Size)
		lo.Context, hi.Context = min(lo.Context, e.Context), max(hi.Context, e.Context)
	}
	dist := func(a, b int64) int64 { return max(a-b, b-a) }
	return func(size, context int64) (configs.OpTime, float64) {
		size, context = min(max(size, lo.Size), hi.Size), min(max(context, lo.Context), hi.Context)
		near := es[0]
		for _, e := range es[1:] {
			dc, dn := dist(e.Context, context), dist(near.Context, context)
			if dc < dn || dc == dn && dist(e.Size, size) < dist(near.Size, size) {
				near = e
			}
		}
		if near.Size == size && near.Context == context {
			return near, near.TimeS
		}
		if v, ok := tab.Lookup(kind, shape, size, context); ok {
			return near, v
		}
		return near, near.TimeS
	}
}

// memOf is the memory figures of a profile's hardware, as rooflineS
// takes them.
func memOf(h topology.GPU) memFigures {
	return memFigures{streamBytesPerS: h.HBMBytesPerS, l2Bytes: float64(h.L2Bytes) * h.L2UsableFraction, l2BytesPerS: h.L2BytesPerS}
}

// poolSamples is cals[0]'s samples (list) with each one's median and
// extremes (spread: pointers to the three fields) pooled over every
// calibration's sample of the same key, its other fields cals[0]'s.
func poolSamples[S any, K comparable](cals []*configs.Calibration, list func(*configs.Calibration) []S, key func(S) K,
	spread func(*S) (median, lo, hi *float64)) []S {
	at := map[K][]S{}
	for _, c := range cals {
		for _, s := range list(c) {
			at[key(s)] = append(at[key(s)], s)
		}
	}
	out := slices.Clone(list(cals[0]))
	for i := range out {
		var meds, mins, maxs []float64
		for _, a := range at[key(out[i])] {
			m, lo, hi := spread(&a)
			meds, mins, maxs = append(meds, *m), append(mins, *lo), append(maxs, *hi)
		}
		sp := pooled(meds, mins, maxs, nil)
		m, lo, hi := spread(&out[i])
		*m, *lo, *hi = sp.Median, sp.Min, sp.Max
	}
	return out
}

func mergeGEMM(out *configs.Calibration, cals []*configs.Calibration) {
	type key struct {
		source, dtype   string
		m, n, k, mm, mn int
	}
	out.GEMM = poolSamples(cals, func(c *configs.Calibration) []configs.GEMMSample { return c.GEMM },
		func(s configs.GEMMSample) key { return key{s.Source, s.DType, s.M, s.N, s.K, s.MeasuredM, s.MeasuredN} },
		func(s *configs.GEMMSample) (*float64, *float64, *float64) {
			return &s.TimeMedianS, &s.TimeMinS, &s.TimeMaxS
		})
	for i := range out.GEMM {
		s := &out.GEMM[i]
		s.FLOPsPerS = float64(s.FLOPs) / s.TimeMedianS
		flops := out.Hardware.PeakFLOPsPerS(cmp.Or(s.DType, "fp32"))
		s.ModelTimeS = rooflineS(gemmShape{source: s.Source, m: s.M, n: s.N, k: s.K, mm: s.MeasuredM, mn: s.MeasuredN, elem: elemBytes[s.DType]}, flops, memOf(out.Hardware))
	}
}

func mergeCache(out *configs.Calibration, cals []*configs.Calibration) {
	out.Cache = poolSamples(cals, func(c *configs.Calibration) []configs.CacheSample { return c.Cache },
		func(s configs.CacheSample) int64 { return s.Bytes },
		func(s *configs.CacheSample) (*float64, *float64, *float64) {
			return &s.BytesPerSMedian, &s.BytesPerSMin, &s.BytesPerSMax
		})
	for i := range out.Cache {
		if out.Hardware.HBMBytesPerS > 0 {
			out.Cache[i].ReuseOverStream = out.Cache[i].BytesPerSMedian / out.Hardware.HBMBytesPerS
		}
	}
}

func mergeComm(out *configs.Calibration, cals []*configs.Calibration) error {
	type key struct {
		op    string
		ranks int
		bytes int64
	}
	out.Comm = poolSamples(cals, func(c *configs.Calibration) []configs.CommSample { return c.Comm },
		func(s configs.CommSample) key { return key{s.Op, s.Ranks, s.Bytes} },
		func(s *configs.CommSample) (*float64, *float64, *float64) {
			return &s.TimeMedianS, &s.TimeMinS, &s.TimeMaxS
		})
	for i := range out.Comm {
		s := &out.Comm[i]
		e, err := modelComm(commPoint{s.Op, s.Ranks, s.Bytes, s.TimeMedianS}, out.Topology.Intra)
		if err != nil {
			return fmt.Errorf("merge: comm %s over %d ranks, %d B: %w", s.Op, s.Ranks, s.Bytes, err)
		}
		s.ModelTimeS, s.Algo, s.Proto = e.TimeS, e.Algo, e.Proto
	}
	return nil
}

// pooledSection merges an optional section (the remote overhead, the
// engine's launch cost) of the calibrations that have one: the first's,
// with the figure value points at the median of theirs; key names what was
// measured, which must be the same in all. have are the sections merged.
func pooledSection[T any](cals []*configs.Calibration, names []string, what string, get func(*configs.Calibration) *T,
	key func(*T) string, value func(*T) *float64) (merged *T, have []*T, err error) {
	var xs []float64
	first := -1
	for i, c := range cals {
		s := get(c)
		if s == nil {
			continue
		}
		if first < 0 {
			first = i
		} else if key(s) != key(get(cals[first])) {
			return nil, nil, fmt.Errorf("merge: %s: %s measured %s, %s measured %s", what, names[first], key(get(cals[first])), names[i], key(s))
		}
		have, xs = append(have, s), append(xs, *value(s))
	}
	if first < 0 {
		return nil, nil, nil
	}
	out := *get(cals[first])
	*value(&out) = medianOf(xs)
	return &out, have, nil
}

func mergeRemote(out *configs.Calibration, cals []*configs.Calibration, names []string) error {
	r, have, err := pooledSection(cals, names, "remote", func(c *configs.Calibration) *configs.RemoteCalibration { return c.Remote },
		func(r *configs.RemoteCalibration) string { return r.Config + " over " + r.Transport },
		func(r *configs.RemoteCalibration) *float64 { return &r.RequestOverheadS })
	if r != nil {
		r.Samples = 0
		for _, h := range have {
			r.Samples += h.Samples
		}
	}
	out.Remote = r
	return err
}

func mergeEngine(out *configs.Calibration, cals []*configs.Calibration, names []string) error {
	e, _, err := pooledSection(cals, names, "engine", func(c *configs.Calibration) *configs.EngineCalibration { return c.Engine },
		func(e *configs.EngineCalibration) string { return fmt.Sprintf("%s at %d sequences", e.Config, e.Seqs) },
		func(e *configs.EngineCalibration) *float64 { return &e.LaunchHostS })
	out.Engine = e
	return err
}

// mergeOps is the op check of the pooled profile: per phase and kind the
// median of the profiles' measured times, the model side priced again.
func mergeOps(out *configs.Calibration, cals []*configs.Calibration, names []string) ([]configs.OpSample, error) {
	if len(cals[0].Ops) == 0 {
		return nil, nil
	}
	cfg, _, model, err := opCheckModelPlan(out, OpsConfig)
	if err != nil {
		return nil, fmt.Errorf("merge: op check: %w", err)
	}
	config := cfg.Name
	var ops []configs.OpSample
	for _, s := range cals[0].Ops {
		if s.Config != config {
			return nil, fmt.Errorf("merge: op check: %s checked %s; this partbench checks %s", names[0], s.Config, config)
		}
		var xs []float64
		for i, c := range cals {
			for _, a := range c.Ops {
				if a.Config != s.Config || a.Phase != s.Phase || a.Kind != s.Kind {
					continue
				}
				if a.Calls != s.Calls {
					return nil, fmt.Errorf("merge: op check %s %s: %d calls in %s, %d in %s; the calibrations checked different Programs", s.Phase, s.Kind, s.Calls, names[0], a.Calls, names[i])
				}
				xs = append(xs, a.MeasuredS)
			}
		}
		s.MeasuredS = medianOf(xs)
		s.ModelS = model[opCheckKey{s.Phase, s.Kind}]
		ops = append(ops, s)
	}
	return ops, nil
}
