package dl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// finder walks the places of one search and records every attempt.
type finder struct {
	spec     Spec
	seen     map[string]bool // folders already tried
	attempts []Attempt
}

func (f *finder) unset(place, why string) {
	f.attempts = append(f.attempts, Attempt{Place: place, Result: why})
}

func (f *finder) tried(place, target, why string) {
	why = strings.TrimPrefix(why, target+": ") // dlerror repeats the soname
	f.attempts = append(f.attempts, Attempt{Place: place, Target: target, Result: why})
}

func (f *finder) dirs(place string, dirs []string) *Library {
	some := false
	for _, d := range dirs {
		if d == "" {
			continue
		}
		some = true
		if lib := f.dir(place, d); lib != nil {
			return lib
		}
	}
	if !some {
		f.unset(place, "not set")
	}
	return nil
}

// dir tries every soname in folder d.
func (f *finder) dir(place, d string) *Library {
	d = filepath.Clean(d)
	if f.seen[d] {
		f.tried(place, d, "already searched")
		return nil
	}
	f.seen[d] = true
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		f.tried(place, d, "no such folder")
		return nil
	}
	var why []string
	for _, so := range f.spec.Sonames {
		p := filepath.Join(d, so)
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				why = append(why, "no "+so)
			} else {
				why = append(why, err.Error())
			}
			continue
		}
		lib, err := Open(p, Now|Local)
		if err == nil {
			return lib
		}
		why = append(why, unwrapOpen(err))
	}
	f.tried(place, d, strings.Join(why, "; "))
	return nil
}

func (f *finder) wheels(sites []string) *Library {
	if len(f.spec.WheelDirs) == 0 {
		f.unset("python site-packages", "no wheel ships "+f.spec.Name)
		return nil
	}
	if len(sites) == 0 {
		f.unset("python site-packages", "no python3 or python on PATH answered")
		return nil
	}
	for _, site := range sites {
		for _, w := range f.spec.WheelDirs {
			if lib := f.dir("python site-packages", filepath.Join(site, w)); lib != nil {
				return lib
			}
		}
	}
	return nil
}
