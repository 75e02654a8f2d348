package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/partbench/partbench/partition"
)

// MaxTimelineOps bounds the ops one discrete-event timeline simulates: the
// simulated ranks' prefill ops plus decode steps × their decode ops. Where
// a stage's TP ranks are alike (the usual case) one rank per stage is
// simulated, so the count is independent of TP: ops per stage × stages,
// which grows with layers × micro-batches. The timeline keeps a slice per
// op (≈ 0.5–1 KB with its bookkeeping): at this bound an estimate stays
// under ≈ 1.2 GB on a 2-core VM (docs/measurements/limits.md).
const MaxTimelineOps = 1_000_000

// checkOpsFromShape refuses a plan whose timeline would exceed
// MaxTimelineOps before any Program is built: the ops of each stage's
// simulated rank come from partition.OpCount (the shape: layers per stage ×
// micro-batches × prefill chunks and decode steps × ops per layer), summed
// stage by stage (saturating, so no count overflows) and checked after each.
// Building even one stage's Programs of such a plan took seconds and
// gigabytes (docs/measurements/limits.md). A stage's count is its kind's
// (partition.StageKind: first, last, its number of layers; the simulated
// rank is TP index 0 of every stage), counted once per kind: a deep
// pipeline's 1,000 stages are three kinds (TestOpsFromShapeByKind).
func checkOpsFromShape(plan *partition.Plan, opts Options, perStage bool) error {
	ops := 0
	var kinds []stageOps // a handful: a scan, no map
	for st := 0; st < plan.PP; st++ {
		k := plan.StageKindOf(st)
		n := -1
		for i := range kinds {
			if kinds[i].kind == k {
				n = kinds[i].ops
				break
			}
		}
		if n < 0 {
			r := plan.RankOf(st, 0)
			n = partition.SatAdd(plan.OpCount(r, partition.Prefill), partition.SatMul(opts.DecodeSteps, plan.OpCount(r, partition.Decode)))
			if len(kinds) < 16 {
				kinds = append(kinds, stageOps{k, n})
			}
		}
		ops = partition.SatAdd(ops, n)
		if err := checkOps(plan, opts, ops, perStage); err != nil {
			return err
		}
	}
	return nil
}

// stageOps is the simulated ops of one stage kind's rank (checkOpsFromShape).
type stageOps struct {
	kind partition.StageKind
	ops  int
}

// TooLargeError says a plan's timeline would simulate more than
// MaxTimelineOps ops. Ranks is the simulated ranks (one per stage, or
// every rank when EveryRank), AllRanks the replica's.
type TooLargeError struct {
	Name         string
	Ops          int
	Ranks        int
	AllRanks     int
	DecodeSteps  int
	Microbatches int
	Layers       int
	EveryRank    bool
}

func (e *TooLargeError) Error() string {
	who := fmt.Sprintf("%d simulated ranks, one per pipeline stage, of %d", e.Ranks, e.AllRanks)
	if e.EveryRank {
		who = fmt.Sprintf("every one of %d ranks", e.AllRanks)
	}
	return fmt.Sprintf("estimate %s: the timeline would simulate at least %d ops (%s; prefill and %d decode steps of %d micro-batch(es) over %d layers), more than the %d allowed; "+
		"reduce parallel.microbatches (the ops grow with micro-batches × layers), or use `partbench search`, whose closed form has no such bound",
		e.Name, e.Ops, who, e.DecodeSteps, e.Microbatches, e.Layers, MaxTimelineOps)
}

// NonFiniteError says an estimate would have held a NaN or an infinity:
// an input outside what validation allows reached the model. Field is the
// metric's JSON path.
type NonFiniteError struct {
	Field string
	Value float64
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("estimate: %s is %v, not a finite number (an input out of its physical range reached the model)", e.Field, e.Value)
}

// checkFinite returns a NonFiniteError for the first float in v (walked
// through structs, pointers, slices and maps, named by JSON path) that is
// NaN or infinite. Fields the JSON omits (json:"-") are not walked.
func checkFinite(v any) error {
	if allFinite(reflect.ValueOf(v)) { // the common case, without building paths
		return nil
	}
	return walkFinite(reflect.ValueOf(v), "")
}

func walkFinite(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return &NonFiniteError{Field: strings.TrimPrefix(path, "."), Value: f}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return walkFinite(v.Elem(), path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			p := path
			if !f.Anonymous || name != "" {
				if name == "" {
					name = f.Name
				}
				p = path + "." + name
			}
			if err := walkFinite(v.Field(i), p); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if err := walkFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := walkFinite(it.Value(), fmt.Sprintf("%s.%v", path, it.Key())); err != nil {
				return err
			}
		}
	}
	return nil
}
