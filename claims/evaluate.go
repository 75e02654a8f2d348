package claims

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Load reads a claims file from disk or, when no such file exists, the
// embedded configs/claims of that name ("seed-004", "claims/seed-004.toml").
func Load(name string) (*File, error) {
	data, err := configs.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		short := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(name, "configs/"), "claims/"), ".toml")
		data, err = fs.ReadFile(configs.Files, "claims/"+short+".toml")
		if err != nil {
			return nil, fmt.Errorf("claims %q: no such file, and no embedded claims file of that name (embedded: %s)", name, strings.Join(configs.Presets("claims"), ", "))
		}
	} else if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(data), name)
}

// EstimateResume is sim's modeled resume of f's baseline strategy at the
// layers f's resume claims name, over the loopback link (nil when f has no
// resume claim).
func EstimateResume(f *File, simOpts sim.Options) (*sim.ResumeEstimate, error) {
	has := false
	for _, c := range f.Claims {
		has = has || IsResumeMetric(c.Metric)
	}
	if !has {
		return nil, nil
	}
	plan, err := partition.LoadPlan(f.Strategies["baseline"])
	if err != nil {
		return nil, err
	}
	link, err := topology.ParseClientLink("link", "loopback")
	if err != nil {
		return nil, err
	}
	return sim.EstimateResume(plan, sim.ResumeOptions{Layers: ResumeLayers(f), Client: link}, simOpts)
}

// JudgeAll estimates every strategy of f (named name on the command line)
// with sim and judges all of f's claims: the model's, the resume claims
// (JudgeResume) and the remote ones (JudgeRemote), in that order.
func JudgeAll(name string, f *File, simOpts sim.Options) ([]Judgement, error) {
	est := map[string]*sim.Estimate{}
	for role, strategy := range f.Strategies {
		cfg, err := configs.Load(strategy)
		if err != nil {
			return nil, fmt.Errorf("claims %s: strategies.%s: %w", name, role, err)
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return nil, err
		}
		if est[role], err = sim.EstimatePlan(plan, simOpts); err != nil {
			return nil, err
		}
	}
	js, err := Judge(f, est)
	if err != nil {
		return nil, err
	}
	re, err := EstimateResume(f, simOpts)
	if err != nil {
		return nil, err
	}
	if re != nil {
		rj, err := JudgeResume(f, re)
		if err != nil {
			return nil, err
		}
		js = append(js, rj...)
	}
	in, err := EstimateRemote(f, simOpts)
	if err != nil {
		return nil, fmt.Errorf("claims %s: %w", name, err)
	}
	rj, err := JudgeRemote(f, in)
	if err != nil {
		return nil, err
	}
	return append(js, rj...), nil
}

// FirstInconsistent is the first judgement whose verdict is not
// Consistent, or nil.
func FirstInconsistent(js []Judgement) *Judgement {
	for i := range js {
		if js[i].Verdict != Consistent {
			return &js[i]
		}
	}
	return nil
}
